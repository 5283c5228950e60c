"""lax.cond / lax.switch: values against Python if/else, derivatives against float64 finite
differences, vmap against the loop, jit against the un-jitted function, and the errors."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.backends.numpy.control_flow_cond  # noqa: F401  (registers the jit emitter)
import mytorch.numpy as mnp
from mytorch.backends.numpy.emitters import EMITTERS
from mytorch.lax.cond import cond, cond_p, switch
from tests.autodiff.fd import check_grads
from tests.batching.vmap_check import assert_tree_close, check_vmap, loop_reference
from tests.strategies import shapes

BRANCHES = [lambda x: mnp.sin(x) * 2.0, lambda x: x * x - 1.0, lambda x: mnp.exp(-x),
            lambda x: -x]
NP_BRANCHES = [lambda x: np.sin(x) * 2.0, lambda x: x * x - 1.0, lambda x: np.exp(-x),
               lambda x: -x]


def _rand(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


# ---- values ------------------------------------------------------------------------------
@given(shape=shapes(max_dims=3, max_side=4), pred=st.booleans(), seed=st.integers(0, 99))
def test_cond_values_match_if_else(shape, pred, seed):
    x = _rand(shape, seed)
    got = cond(pred, BRANCHES[0], BRANCHES[1], mnp.asarray(x))
    want = NP_BRANCHES[0](x) if pred else NP_BRANCHES[1](x)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-6)


@given(index=st.integers(-3, 7), shape=shapes(max_dims=2, max_side=4))
def test_switch_clamps_index(index, shape):
    x = _rand(shape)
    got = switch(index, BRANCHES, mnp.asarray(x))
    want = NP_BRANCHES[min(max(index, 0), len(BRANCHES) - 1)](x)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("pred", [0.0, 2.5, -1, 0])
def test_numeric_predicate_nonzero_is_true(pred):
    got = cond(mnp.asarray(pred), lambda: 1.0, lambda: 0.0)
    assert float(got) == (1.0 if pred != 0 else 0.0)


@given(pred=st.booleans(), seed=st.integers(0, 99))
def test_pytree_operands_and_closures(pred, seed):
    a, b, w = _rand((3,), seed), _rand((2, 3), seed + 1), _rand((3,), seed + 2)
    wj = mnp.asarray(w)

    def t(ops):
        x, (y, s) = ops["x"], ops["ys"]
        return {"out": (x * wj, y + x), "n": s}

    def f(ops):
        x, (y, s) = ops["x"], ops["ys"]
        return {"out": (x - wj, y * 2.0), "n": s + 1}

    ops = {"x": mnp.asarray(a), "ys": (mnp.asarray(b), mnp.asarray(np.int32(4)))}
    got = cond(pred, t, f, ops)
    want = ({"out": (a * w, b + a), "n": 4} if pred else
            {"out": (a - w, b * 2.0), "n": 5})
    assert_tree_close(got, want, check_dtype=False)
    assert np.asarray(got["n"]).dtype == np.int32


def test_traced_cond_is_one_equation_with_both_branches():
    x = mnp.asarray(_rand((3,)))
    closed = mt.make_jaxpr(lambda x: cond(x.sum() > 0, BRANCHES[0], BRANCHES[1], x))(x)
    eqns = [e for e in closed.jaxpr.eqns if e.primitive is cond_p]
    assert len(eqns) == 1 and len(eqns[0].params["branches"]) == 2
    for p in (True, False):
        xs = mnp.asarray(np.abs(np.asarray(x)) * (1 if p else -1))
        got = mt.eval_jaxpr(closed.jaxpr, closed.consts, xs)[0]
        want = NP_BRANCHES[0 if p else 1](np.asarray(xs))
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5)


# ---- derivatives -------------------------------------------------------------------------
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_cond_grads_fd(x64, sign):
    w = mnp.asarray(np.array([0.3, -1.2, 0.7]))

    def f(x, y):
        return cond(x.sum() * sign > 0,
                    lambda a, b: mnp.sin(a) * b * w,   # closes over w
                    lambda a, b: a * a + mnp.exp(b), x, y)

    x = np.array([0.5, 1.0, 0.25]) * sign
    check_grads(f, (x, np.array([0.1, -0.4, 2.0])), order=2)


@pytest.mark.parametrize("index", [0, 1, 2, 5])
def test_switch_grads_fd(x64, index):
    def f(x):
        return switch(index, BRANCHES[:3], x)

    check_grads(f, (np.array([0.5, -1.0, 0.25]),), order=2)


def test_grad_wrt_closed_over_value(x64):
    def outer(w, x):
        return cond(x[0] > 0, lambda v: (v * w).sum(), lambda v: (mnp.cos(w) + v).sum(), x)

    for x0 in (1.0, -1.0):
        check_grads(outer, (np.array([0.4, -0.3]), np.array([x0, 2.0])), order=1)


def test_branch_outputs_known_in_one_branch_only(x64):
    # the true branch's output does not depend on x: its tangent is zero there only
    def f(x, c):
        return cond(c.sum() > 0, lambda a: (mnp.zeros(2) + 3.0, a * 2.0),
                    lambda a: (mnp.sin(a), mnp.broadcast_to(c, (2,)) * 1.0), x)

    for c in (np.array([1.0]), np.array([-1.0])):
        check_grads(lambda x: f(x, mnp.asarray(c)), (np.array([0.3, 0.9]),), order=1)


def test_grad_under_jit_and_jit_under_grad(x64):
    def f(x):
        return cond(x.sum() > 0, lambda a: (mnp.sin(a) * a).sum(), lambda a: (a ** 3).sum(), x)

    for x in (np.array([0.5, 1.5]), np.array([-0.5, -1.5])):
        xj = mnp.asarray(x)
        want = np.cos(x) * x + np.sin(x) if x.sum() > 0 else 3 * x ** 2
        for g in (mt.grad(f), mt.jit(mt.grad(f)), mt.grad(mt.jit(f))):
            np.testing.assert_allclose(np.asarray(g(xj)), want, rtol=1e-10)


def test_grad_of_jit_splits_cond_with_nonlinear_use_of_its_outputs(x64):
    # inside jit the cond equation is split by its partial_eval_jaxpr rule: its primal
    # outputs stay known, so sin() of them is not staged as linear
    def f(x, c):
        y, z = cond(c.sum() > 0, lambda a: (mnp.zeros(2) + 3.0, a * 2.0),
                    lambda a: (mnp.sin(a), mnp.broadcast_to(c, (2,)) * 1.0), x)
        return mnp.sin(y) * z + mnp.cos(z * y)

    for c in (np.array([1.0]), np.array([-1.0])):
        cj = mnp.asarray(c)
        check_grads(mt.jit(lambda x: f(x, cj)), (np.array([0.3, 0.9]),), order=1)
        check_grads(lambda x: mt.jit(f)(x, cj), (np.array([0.3, 0.9]),), order=2)


# ---- vmap ----------------------------------------------------------------------------------
@settings(max_examples=10)
@given(seed=st.integers(0, 99), n=st.integers(1, 4))
def test_vmap_batched_predicate(seed, n):
    x = _rand((n, 3), seed)

    def f(x):
        return cond(x.sum() > 0, BRANCHES[0], BRANCHES[1], x)

    check_vmap(f, (mnp.asarray(x),))


@settings(max_examples=10)
@given(seed=st.integers(0, 99), n=st.integers(1, 4))
def test_vmap_batched_switch_index(seed, n):
    idx = np.random.default_rng(seed).integers(-1, 6, size=n).astype(np.int32)
    x = _rand((n, 2), seed)
    check_vmap(lambda i, x: switch(i, BRANCHES, x), (mnp.asarray(idx), mnp.asarray(x)))


@pytest.mark.parametrize("pred", [True, False])
def test_vmap_unbatched_predicate(pred):
    x = _rand((4, 3))
    check_vmap(lambda p, x: cond(p, BRANCHES[2], BRANCHES[3], x),
               (mnp.asarray(pred), mnp.asarray(x)), in_axes=(None, 0))


def test_vmap_batched_predicate_unbatched_operand_and_axis1():
    x, ps = _rand((3,)), np.array([[True, False, True]])
    check_vmap(lambda p, x: cond(p[0], BRANCHES[0], BRANCHES[2], x),
               (mnp.asarray(ps), mnp.asarray(x)), in_axes=(1, None))
    xs = _rand((3, 5))
    check_vmap(lambda x: cond(x[0] > 0, BRANCHES[0], BRANCHES[2], x), (mnp.asarray(xs),),
               in_axes=1)


def test_batched_predicate_all_same_and_mixed():
    x = _rand((4, 3))
    f = mt.vmap(lambda p, x: cond(p, BRANCHES[0], BRANCHES[1], x))
    same = f(mnp.asarray(np.array([True] * 4)), mnp.asarray(x))
    np.testing.assert_allclose(np.asarray(same), NP_BRANCHES[0](x), rtol=1e-5)
    mixed = f(mnp.asarray(np.array([True, False, True, False])), mnp.asarray(x))
    want = np.where(np.array([True, False, True, False])[:, None], NP_BRANCHES[0](x),
                    NP_BRANCHES[1](x))
    np.testing.assert_allclose(np.asarray(mixed), want, rtol=1e-5)


def test_batched_predicate_skips_other_branches_at_run_time(monkeypatch):
    """With every example on one branch only that branch runs: the outer cond's index
    (seen by the eagerly run cond) picks it rather than the evaluate-all-and-select branch."""
    from mytorch.backends.numpy import numpy_backend

    seen = []
    call_kernel = numpy_backend.call_kernel

    def counting_call_kernel(prim, in_avals, params, device):
        fn = call_kernel(prim, in_avals, params, device)
        if prim is not cond_p:
            return fn

        def run(index, *args):
            seen.append((int(index), len(params["branches"])))
            return fn(index, *args)

        return run

    monkeypatch.setattr(numpy_backend, "call_kernel", counting_call_kernel)
    f = mt.vmap(lambda p, x: cond(p, BRANCHES[0], BRANCHES[1], x))
    f(mnp.asarray(np.array([True, True])), mnp.asarray(_rand((2, 3))))
    f(mnp.asarray(np.array([True, False])), mnp.asarray(_rand((2, 3))))
    # outer cond over (branch0, branch1, select-all): all-true picks branch 1 alone
    assert seen == [(1, 3), (2, 3)]


def test_vmap_of_grad_with_batched_predicate():
    xs = _rand((5, 3), 3)

    def g(x):
        return mt.grad(lambda a: cond(a.sum() > 0, lambda b: (mnp.sin(b) * 2.0).sum(),
                                      lambda b: (b * b).sum(), a))(x)

    check_vmap(g, (mnp.asarray(xs),), rtol=1e-5)


# ---- jit -----------------------------------------------------------------------------------
def test_emitter_is_registered():
    assert EMITTERS.get(cond_p) is not None


@settings(max_examples=10)
@given(index=st.integers(-2, 5), seed=st.integers(0, 99))
def test_jit_matches_eager(index, seed):
    x = mnp.asarray(_rand((2, 3), seed))

    def f(i, x):
        y = switch(i, BRANCHES, x)
        return cond(y.sum() > 0, lambda a: (a, a.sum()), lambda a: (a * 3.0, a.max()), y)

    assert_tree_close(mt.jit(f)(index, x), f(index, x), rtol=1e-5)


def test_grad_of_cond_inside_vmap_inside_jit():
    xs = _rand((6, 3), 7)

    def loss(a):
        return cond(a.sum() > 0, lambda b: (mnp.sin(b) * b).sum(), lambda b: (b ** 3).sum(), a)

    got = mt.jit(mt.vmap(mt.grad(loss)))(mnp.asarray(xs))
    want = loop_reference(lambda x: mt.grad(loss)(x), (mnp.asarray(xs),), 0, 0)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-6)
    same = np.abs(xs)  # every example on one branch: the fast path under jit
    got = mt.jit(mt.vmap(mt.grad(loss)))(mnp.asarray(same))
    np.testing.assert_allclose(np.asarray(got), np.cos(same) * same + np.sin(same),
                               rtol=1e-5, atol=1e-6)


# ---- errors --------------------------------------------------------------------------------
def test_mismatched_structure_error_shows_both_sides():
    x = mnp.ones(3)
    with pytest.raises(TypeError) as e:
        cond(True, lambda a: (a, a), lambda a: a, x)
    msg = str(e.value)
    assert "true_fun" in msg and "false_fun" in msg and "tree structure" in msg
    assert "test_cond.py" in msg


def test_mismatched_shape_and_dtype_errors():
    x = mnp.ones(3)
    with pytest.raises(TypeError, match=r"f32\[3\] vs f32\[\]|f32\[\] vs f32\[3\]"):
        cond(True, lambda a: a, lambda a: a.sum(), x)
    with pytest.raises(TypeError, match=r"i32\[3\]"):
        switch(0, [lambda a: a, lambda a: a.astype(np.int32)], x)


def test_non_scalar_predicate_and_bad_index():
    x = mnp.ones(3)
    with pytest.raises(TypeError, match="predicate must be a 0-d"):
        cond(mnp.ones(2) > 0, lambda a: a, lambda a: a, x)
    with pytest.raises(TypeError, match="index must be an integer"):
        switch(mnp.asarray(1.0), [lambda a: a], x)
    with pytest.raises(ValueError, match="at least one"):
        switch(0, [], x)


def test_partial_eval_jaxpr_with_unknown_index_stages_whole_cond():
    from mytorch.core.jaxpr import eval_jaxpr
    from mytorch.transforms.partial_eval import partial_eval_jaxpr

    closed = mt.make_jaxpr(lambda i, x: switch(i, BRANCHES[:2], x))(1, mnp.ones(2))
    known, staged, out_unknowns, _ = partial_eval_jaxpr(closed.jaxpr, [True, False],
                                                        lambda *a, **k: True)
    assert out_unknowns == [True]
    x = _rand((2,))
    res = eval_jaxpr(known, [], mnp.asarray(x))
    for i in (0, 1):
        got = eval_jaxpr(staged, [], *res, mnp.asarray(np.int32(i)))[0]
        np.testing.assert_allclose(np.asarray(got), NP_BRANCHES[i](x), rtol=1e-5)


@pytest.mark.parametrize("signs", [(1.0, 1.0, 1.0), (1.0, -1.0, 1.0)])
def test_grad_of_vmap_with_batched_predicate_fd(x64, signs):
    def f(x, w):
        per = mt.vmap(lambda a: cond(a.sum() > 0, lambda b: mnp.sin(b) * w,
                                     lambda b: b * b + w, a))
        return per(x)

    x = np.array([[0.5, 0.2], [0.3, 0.1], [0.9, 0.4]]) * np.array(signs)[:, None]
    check_grads(f, (x, np.array([0.7, -0.2])), order=2)


def test_nested_vmap_with_batched_indices():
    idx = np.array([[0, 1, 2], [2, 2, 2]], np.int32)
    x = _rand((2, 3, 4))
    f = mt.vmap(mt.vmap(lambda i, a: switch(i, BRANCHES[:3], a)))
    got = f(mnp.asarray(idx), mnp.asarray(x))
    want = np.stack([np.stack([NP_BRANCHES[i](a) for i, a in zip(ii, aa)])
                     for ii, aa in zip(idx, x)])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(mt.jit(f)(mnp.asarray(idx), mnp.asarray(x))),
                               want, rtol=1e-5, atol=1e-6)


def test_integer_outputs_under_grad_jit_and_vmap():
    def f(x):
        y, n = cond(x.sum() > 0, lambda a: (mnp.sin(a), mnp.asarray(np.int32(3))),
                    lambda a: (a * a, (a > 0).sum().astype(np.int32)), x)
        return (y * n).sum()

    x = np.array([0.5, -0.2], np.float32)
    want = {1: 3 * np.cos(x), -1: 2 * (-x) * ((-x) > 0).sum()}
    for s in (1, -1):
        for g in (mt.grad(f), mt.jit(mt.grad(f))):
            np.testing.assert_allclose(np.asarray(g(mnp.asarray(s * x))), want[s], rtol=1e-5)
    got = mt.vmap(mt.grad(f))(mnp.asarray(np.stack([x, -x])))
    np.testing.assert_allclose(np.asarray(got), np.stack([want[1], want[-1]]), rtol=1e-5)


def test_jit_keeps_a_branch_print_whose_outputs_are_unused(capsys):
    """A branch with a side effect is an effect of the whole cond: jit must not drop it."""
    def f(x):
        cond(x[0] > 0, lambda v: (mt.debug.print("pos {v}", v=v), v)[1], lambda v: v, x)
        return x * 2.0

    mt.jit(f)(mnp.ones(2))
    assert "pos [1. 1.]" in capsys.readouterr().out
