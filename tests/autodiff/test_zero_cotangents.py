"""Transpose rules of multiple-result primitives receive symbolic `Zero` cotangents for
their unused results (backward_pass never instantiates them), and still give the right
gradients (closed forms below)."""

import numpy as np
import pytest

import mytorch as mt
import mytorch.numpy as mnp
from mytorch import lax
from mytorch.core.ad_util import Zero
from mytorch.core.primitive import registry

X = np.array([0.3, -1.2, 2.0], np.float32)


@pytest.fixture
def zero_cts(monkeypatch):
    """Records, per primitive name, whether some call of its transpose rule received a
    symbolic Zero among its cotangents."""
    seen = {}
    for name, prim in registry().items():
        if prim.multiple_results and "transpose" in prim.rules:
            rule = prim.rules["transpose"]

            def spy(cts, *args, _rule=rule, _name=name, **params):
                seen[_name] = seen.get(_name, False) or any(type(c) is Zero for c in cts)
                return _rule(cts, *args, **params)

            monkeypatch.setitem(prim.rules, "transpose", spy)
    return seen


def _scan(x):
    def body(c, xi):
        return (c[0] * xi, c[1] + xi), xi * 3.0
    (prod, total), ys = lax.scan(body, (1.0, 0.0), x)
    return prod  # `total` and `ys` are unused


def _cond(x):
    a, b = lax.cond(x[0] > 0.0, lambda v: (mnp.sin(v), v * 2.0),
                    lambda v: (mnp.cos(v), v * 3.0), x)
    return a.sum()  # `b` is unused


def _jit(x):
    a, b = mt.jit(lambda v: (mnp.sin(v), mnp.exp(v)))(x)
    return a.sum()


def _checkpoint(x):
    a, b = mt.checkpoint(lambda v: (mnp.sin(v), mnp.exp(v)))(x)
    return a.sum()


def _while(x):
    def body(c):
        i, s, p = c
        return i + 1, s + p * 0.5, p * 2.0
    i, s, p = lax.while_loop(lambda c: c[0] < 3, body, (0, x.sum(), x.sum()))
    return s  # `p` is unused afterwards (its value still feeds `s`)


def _sin_sum_grad(x):
    return np.cos(x)


CASES = {
    "scan": (_scan, lambda x: np.prod(x) / x, "scan"),
    "cond": (_cond, _sin_sum_grad, "cond"),
    "jit": (_jit, _sin_sum_grad, "jit"),
    "checkpoint": (_checkpoint, _sin_sum_grad, "checkpoint"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_unused_results_reach_the_rule_as_zero(case, zero_cts):
    f, expected, prim = CASES[case]
    g = mt.grad(f)(mnp.asarray(X))
    np.testing.assert_allclose(np.asarray(g), expected(X.astype(np.float64)), rtol=1e-5)
    assert zero_cts.get(prim), f"{prim}'s transpose got no symbolic Zero"


@pytest.mark.parametrize("wrap", [lambda f: f, mt.jit], ids=["eager", "jit"])
def test_while_loop_tape_transpose_with_an_unused_carry(wrap, zero_cts):
    # s = x.sum() * (1 + 0.5 * (1 + 2 + 4)) = 4.5 * x.sum()
    g = wrap(mt.grad(_while))(mnp.asarray(X))
    np.testing.assert_allclose(np.asarray(g), np.full(3, 4.5), rtol=1e-6)
    assert zero_cts.get("scan")  # the tape-sourced scan's (the loop's linear half)


def test_custom_vjp_bwd_gets_arrays_for_unused_outputs(zero_cts):
    got = []

    @mt.custom_vjp
    def f(x):
        return mnp.sin(x), mnp.cos(x)

    def fwd(x):
        return f(x), x

    def bwd(x, cts):
        got.append([type(c) for c in cts])
        ct_s, ct_c = cts
        return (ct_s * mnp.cos(x) - ct_c * mnp.sin(x),)

    f.defvjp(fwd, bwd)
    g = mt.grad(lambda x: f(x)[0].sum())(mnp.asarray(X))
    np.testing.assert_allclose(np.asarray(g), np.cos(X), rtol=1e-6)
    assert all(t is not Zero for ts in got for t in ts)  # the user's bwd sees arrays
