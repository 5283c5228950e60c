"""Derivatives through control flow that vmap turns into "run everything, then select".

With a batched predicate, `cond`/`switch` run every branch for every example and
`while_loop` keeps running the body for examples that have finished. Where a branch's
derivative is infinite for an example that did not take it (log(0), sqrt(0), 1/0,
arcsin(1), a where hiding sqrt(-1)), its zero cotangent times that derivative must not
turn the gradient of an unbatched weight into NaN.

References: float64 central differences of a NumPy loop over the examples with Python
`if`/`while` (so nothing of mytorch is in the reference), closed forms for the loops,
`vmap(grad)` summed for `grad(vmap)`, and the un-jitted function for jit. The predicate
patterns of the batch (all true, all false, mixed) are drawn by hypothesis.
"""

import math

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch import lax

W = 1.5  # the weight every example shares (an unbatched operand of the branches)


class Case:
    """A per-example function `fn(w, x)` whose branches are traps for the examples that
    skip them, its NumPy reference, and the x values that take each branch (a pattern of
    branch numbers picks one x per example)."""

    def __init__(self, name, fn, ref, xs_by_branch):
        self.name, self.fn, self.ref, self.xs_by_branch = name, fn, ref, xs_by_branch

    def __repr__(self):
        return self.name

    def xs(self, pattern, picks):
        return np.array([self.xs_by_branch[b][p % len(self.xs_by_branch[b])]
                         for b, p in zip(pattern, picks)], np.float32)


def _np_switch(x):
    return 0 if x <= 0 else (1 if x <= 1 else 2)


# each: (false branch xs, true branch xs[, third branch xs])
CASES = [
    Case("log", lambda w, x: lax.cond(x > 0, lambda: mnp.log(w * x), lambda: w * x),
         lambda w, x: math.log(w * x) if x > 0 else w * x, ([0.0, -1.0, -2.5], [0.5, 2.0, 3.0])),
    Case("sqrt", lambda w, x: lax.cond(x > 0, lambda: mnp.sqrt(w * x), lambda: w * x * x),
         lambda w, x: math.sqrt(w * x) if x > 0 else w * x * x, ([0.0, -1.0], [0.5, 2.0])),
    Case("division", lambda w, x: lax.cond(x != 0, lambda: w / x, lambda: w * w),
         lambda w, x: w / x if x != 0 else w * w, ([0.0], [-2.0, 0.5, 3.0])),
    Case("pow", lambda w, x: lax.cond(x > 0, lambda: (w * x) ** 0.3, lambda: w * x),
         lambda w, x: (w * x) ** 0.3 if x > 0 else w * x, ([0.0, -1.0], [0.5, 2.0])),
    # w*x/2 == 1 at x = 4/3 (an infinite derivative) and > 1 at x = 2 (NaN)
    Case("arcsin", lambda w, x: lax.cond(mnp.abs(x) < 1, lambda: mnp.arcsin(w * x / 2),
                                         lambda: w * x),
         lambda w, x: math.asin(w * x / 2) if abs(x) < 1 else w * x,
         ([4.0 / 3.0, 2.0], [0.5, -0.5, 0.0])),
    Case("where", lambda w, x: lax.cond(
        x > 0, lambda: mnp.where(w * x > 0, mnp.sqrt(w * x), 0.0),
        lambda: -w * x),
         lambda w, x: math.sqrt(w * x) if x > 0 else -w * x, ([0.0, -1.0], [0.5, 2.0])),
    # three branches, each a trap for the others' examples
    Case("switch3", lambda w, x: lax.switch(
        (x > 0).astype(np.int32) + (x > 1).astype(np.int32),
        [lambda: w * x, lambda: mnp.log(w * x), lambda: mnp.sqrt(w * (x - 1))]),
         lambda w, x: [w * x, math.log(w * x) if x > 0 else 0.0,
                       math.sqrt(w * (x - 1)) if x > 1 else 0.0][_np_switch(x)],
         ([0.0, -1.0], [0.5, 1.0], [2.0, 3.0])),
    # cond inside a scan inside vmap: the carry feeds the trap too
    Case("scan", lambda w, x: lax.scan(
        lambda c, _: (c + lax.cond(x > 0, lambda: mnp.log(w * x * (1 + c * c)),
                                   lambda: w * x), None), 0.0, None, length=3)[0],
         lambda w, x: _np_scan(w, x), ([0.0, -1.0], [0.5, 2.0])),
    # cond inside a while body: the loop's predicate is batched as well
    Case("while_cond", lambda w, x: lax.while_loop(
        lambda s: s[0] < mnp.abs(x) + 1,
        lambda s: (s[0] + 1, s[1] + lax.cond(x > 0, lambda: mnp.log(w * x * s[0]),
                                             lambda: w * x)), (1.0, 0.0))[1],
         lambda w, x: _np_while_cond(w, x), ([0.0, -1.0], [0.5, 2.0])),
]


def _np_scan(w, x):
    c = 0.0
    for _ in range(3):
        c = c + (math.log(w * x * (1 + c * c)) if x > 0 else w * x)
    return c


def _np_while_cond(w, x):
    k, s = 1.0, 0.0
    while k < abs(x) + 1:
        k, s = k + 1, s + (math.log(w * x * k) if x > 0 else w * x)
    return s


def _np_mean(case, w, xs):
    return sum(case.ref(w, float(x)) for x in xs) / len(xs)


def _fd(fun, w, eps=1e-5):
    return (fun(w + eps) - fun(w - eps)) / (2 * eps)


def _fd2(fun, w, eps=1e-4):
    return (fun(w + eps) - 2 * fun(w) + fun(w - eps)) / eps**2


def _loss(case):
    return lambda w, xs: mnp.mean(mt.vmap(case.fn, (None, 0))(w, xs))


patterns = st.integers(1, 6).flatmap(lambda n: st.tuples(
    st.lists(st.integers(0, 2), min_size=n, max_size=n),
    st.lists(st.integers(0, 5), min_size=n, max_size=n)))


def _draw(case, drawn):
    """The batch of x values for a drawn (branch per example, pick) pattern."""
    branches, picks = drawn
    n = len(case.xs_by_branch)
    return case.xs([b % n for b in branches], picks)


@pytest.mark.parametrize("case", CASES, ids=repr)
@settings(max_examples=12)
@given(drawn=patterns)
@example(drawn=([1, 1, 1], [0, 1, 2]))  # every example takes the trap's branch
@example(drawn=([0, 0, 0], [0, 1, 2]))  # no example does
@example(drawn=([0, 1, 0, 1], [0, 0, 1, 1]))
def test_grad_of_vmap_is_finite_and_matches_finite_differences(case, drawn):
    xs = _draw(case, drawn)
    want = _fd(lambda w: _np_mean(case, w, xs), W)
    g = mt.grad(_loss(case))(W, xs)
    np.testing.assert_allclose(float(g), want, rtol=2e-3, atol=1e-4)
    # the same as the mean of the per-example gradients
    per = mt.vmap(mt.grad(case.fn), (None, 0))(W, xs)
    np.testing.assert_allclose(float(g), float(np.mean(np.asarray(per))), rtol=1e-5,
                               atol=1e-6)
    # and as the value: vmap equals the loop
    np.testing.assert_allclose(np.asarray(mt.vmap(case.fn, (None, 0))(W, xs)),
                               [case.ref(W, float(x)) for x in xs], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", CASES, ids=repr)
@settings(max_examples=6)
@given(drawn=patterns)
@example(drawn=([0, 1, 0, 1], [0, 0, 1, 1]))
def test_jit_of_grad_of_vmap_and_grad_of_jit_match_the_eager_gradient(case, drawn):
    xs = _draw(case, drawn)
    loss = _loss(case)
    want = float(mt.grad(loss)(W, xs))
    assert np.isfinite(want)
    np.testing.assert_allclose(float(mt.jit(mt.grad(loss))(W, xs)), want, rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(float(mt.grad(mt.jit(loss))(W, xs)), want, rtol=1e-5,
                               atol=1e-6)


@pytest.mark.parametrize("case", CASES, ids=repr)
@settings(max_examples=3)
@given(drawn=patterns)
@example(drawn=([0, 1, 2, 1], [0, 0, 1, 1]))
def test_second_derivatives_of_vmap_match_finite_differences(case, drawn):
    xs = _draw(case, drawn)
    want = _fd2(lambda w: _np_mean(case, w, xs), W)
    loss = _loss(case)
    for h in (mt.grad(mt.grad(loss))(W, xs), mt.hessian(loss)(W, xs),
              mt.hessian(mt.jit(loss))(W, xs)):
        np.testing.assert_allclose(float(h), want, rtol=5e-3, atol=2e-3)
    per = mt.vmap(mt.grad(mt.grad(case.fn)), (None, 0))(W, xs)
    np.testing.assert_allclose(float(np.mean(np.asarray(per))), want, rtol=5e-3, atol=2e-3)


def test_the_issue_example_matches_jax():
    xs = np.array([0.0, 2.0, -1.0, 3.0], np.float32)

    def f(w, x):
        return lax.cond(x > 0, lambda: mnp.log(w * x), lambda: w * x)

    def loss(w):
        return mnp.mean(mt.vmap(f, (None, 0))(w, xs))

    for g in (mt.grad(loss), mt.jit(mt.grad(loss))):
        np.testing.assert_allclose(float(g(1.5)), 0.0833333358168602, rtol=1e-6)  # JAX


def test_an_unbatched_array_weight_and_a_batched_weight():
    # w: an array shared by every example; v: one weight per example
    xs = np.array([0.0, 2.0, -1.0, 3.0], np.float32)
    w = np.array([1.5, 0.5], np.float32)
    vs = np.array([1.0, 2.0, 0.5, 3.0], np.float32)

    def f(w, v, x):
        return lax.cond(x > 0, lambda: mnp.sum(mnp.log(w * x * v)), lambda: mnp.sum(w * x))

    gw, gv = mt.grad(lambda w, vs: mt.vmap(f, (None, 0, 0))(w, vs, xs).sum(), (0, 1))(w, vs)
    # d/dw: sum over x > 0 of 1/w, plus sum over x <= 0 of x; d/dv: 2/v where x > 0
    np.testing.assert_allclose(np.asarray(gw), 2 / w + (0.0 - 1.0), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(gv), np.where(xs > 0, 2 / vs, 0.0), rtol=1e-6)


def test_every_example_taking_one_branch_runs_that_branch_alone():
    xs = np.array([2.0, 3.0], np.float32)
    case = CASES[6]
    got = mt.grad(_loss(case))(W, xs)
    want = np.mean([0.5 * (x - 1) / math.sqrt(W * (x - 1)) for x in xs])
    np.testing.assert_allclose(float(got), want, rtol=1e-5)


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_an_empty_batch(case):
    xs = np.zeros((0,), np.float32)

    def loss(w):
        return mt.vmap(case.fn, (None, 0))(w, xs).sum()

    assert mt.vmap(case.fn, (None, 0))(W, xs).shape == (0,)
    for g in (mt.grad(loss), mt.jit(mt.grad(loss))):
        assert float(g(W)) == 0.0


# ---- while_loop: finished examples keep running the body -----------------------------
def _sqrt_loop(every=None):
    """sum_{k < n} sqrt(w (n - k)): sqrt(0) once an example's k reaches its n."""
    def f(w, n):
        def body(s):
            return s[0] + 1, s[1] + mnp.sqrt(w * (n - s[0]))
        return lax.while_loop(lambda s: s[0] < n, body, (0.0, 0.0),
                              checkpoint_every=every)[1]
    return f


def _sqrt_sums(ns):
    return sum(float(np.sqrt(np.arange(1, int(n) + 1)).sum()) for n in ns)


trip_counts = st.lists(st.integers(0, 4), min_size=1, max_size=5)
EVERY = [None, 1, 2, 3]


@pytest.mark.parametrize("every", EVERY)
@settings(max_examples=8)
@given(ns=trip_counts)
@example(ns=[1, 3, 2])  # the issue's example
@example(ns=[2, 2, 2])  # every example finishes at once
@example(ns=[0, 0])  # none runs
@example(ns=[])  # an empty batch
def test_grad_of_vmapped_while_matches_the_closed_form(every, ns):
    # f(w) = sqrt(w) * S, S = sum over examples of sum_{j=1..n} sqrt(j)
    ns = np.array(ns, np.float32)
    f = _sqrt_loop(every)

    def loss(w):
        return mt.vmap(f, (None, 0))(w, ns).sum()

    w = 2.0
    want = _sqrt_sums(ns) / (2 * math.sqrt(w))
    for g in (mt.grad(loss), mt.jit(mt.grad(loss)), mt.grad(mt.jit(loss))):
        np.testing.assert_allclose(float(g(w)), want, rtol=1e-5, atol=1e-6)
    per = mt.vmap(mt.grad(f), (None, 0))(w, ns)
    np.testing.assert_allclose(float(np.sum(np.asarray(per))), want, rtol=1e-5, atol=1e-6)
    per = mt.jit(mt.vmap(mt.grad(f), (None, 0)))(w, ns)
    np.testing.assert_allclose(float(np.sum(np.asarray(per))), want, rtol=1e-5, atol=1e-6)


def test_the_while_issue_example():
    def loss(w):
        return mt.vmap(_sqrt_loop(), (None, 0))(w, np.array([1.0, 3.0, 2.0], np.float32)).sum()

    np.testing.assert_allclose(float(mt.grad(loss)(2.0)), 2.6730326, rtol=1e-6)
    np.testing.assert_allclose(float(mt.jvp(loss, (2.0,), (1.0,))[1]), 2.6730326, rtol=1e-6)


@settings(max_examples=8)
@given(ns=trip_counts)
@example(ns=[1, 3, 2])
def test_second_derivatives_of_vmapped_while_match_the_closed_form(ns):
    # d2/dw2 sqrt(w) S = -S / (4 w^1.5)
    ns = np.array(ns, np.float32)
    f = _sqrt_loop()

    def loss(w):
        return mt.vmap(f, (None, 0))(w, ns).sum()

    w = 2.0
    want = -_sqrt_sums(ns) / (4 * w**1.5)
    for h in (mt.grad(mt.grad(loss))(w), mt.hessian(loss)(w), mt.hessian(mt.jit(loss))(w)):
        np.testing.assert_allclose(float(h), want, rtol=1e-5, atol=1e-6)
    per = mt.vmap(mt.grad(mt.grad(f)), (None, 0))(w, ns)
    np.testing.assert_allclose(float(np.sum(np.asarray(per))), want, rtol=1e-5, atol=1e-6)


def _trap_loop(trap, every=None):
    """A carry vector and a weight vector; the body's derivative is infinite (or the value
    NaN) at the first step after an example finishes."""
    def f(w, n):
        def body(s):
            k, v = s
            gap = n - k  # 0 once finished
            return k + 1, v + trap(w * gap) * v
        return lax.while_loop(lambda s: s[0] < n, body, (0.0, mnp.ones(2) * w),
                              checkpoint_every=every)[1].sum()
    return f


def _np_trap_loop(trap, w, n):
    k, v = 0.0, np.ones(2) * w
    while k < n:
        k, v = k + 1, v + trap(w * (n - k)) * v
    return float(v.sum())


TRAPS = {
    "log": (mnp.log, np.log),
    "reciprocal": (lambda z: 1.0 / z, lambda z: 1.0 / z),
    "sqrt_of_minus": (lambda z: mnp.sqrt(z - 1.0), lambda z: np.sqrt(z - 1.0)),
}


@pytest.mark.parametrize("every", [None, 2])
@pytest.mark.parametrize("trap", sorted(TRAPS))
@settings(max_examples=6)
@given(ns=st.lists(st.integers(1, 4), min_size=1, max_size=4))
@example(ns=[1, 3])
def test_a_finished_example_never_reaches_the_gradient(trap, every, ns):
    mt_trap, np_trap = TRAPS[trap]
    ns = np.array(ns, np.float64)
    w = np.array([1.25, 1.75], np.float32)
    f = _trap_loop(mt_trap, every)

    def loss(w):
        return mt.vmap(f, (None, 0))(w, ns.astype(np.float32)).sum()

    def ref(w):
        return sum(_np_trap_loop(np_trap, w, n) for n in ns)

    want = np.array([_fd(lambda t: ref(np.where(np.arange(2) == i, t, w)), w[i])
                     for i in range(2)])
    for g in (mt.grad(loss), mt.jit(mt.grad(loss))):
        np.testing.assert_allclose(np.asarray(g(w)), want, rtol=2e-3, atol=1e-3)


# ---- values: an example never computes what it skipped ---------------------------------
@pytest.mark.parametrize("case", CASES, ids=repr)
def test_debug_nans_sees_no_value_of_a_branch_an_example_skipped(debug_nans, case):
    # an example that skips a branch feeds it the operands of one that takes it, so
    # log(-1.5) or arcsin(1.5) is never computed (JAX computes them, and its debug_nans
    # raises here); a branch no example takes (switch3's third) is not run at all
    xs = case.xs([1, 0, 1, 0], [0, 1, 1, 0])
    want_value = [case.ref(W, float(x)) for x in xs]
    want_grad = _fd(lambda w: _np_mean(case, w, xs), W)
    np.testing.assert_allclose(np.asarray(mt.vmap(case.fn, (None, 0))(W, xs)), want_value,
                               rtol=1e-5, atol=1e-6)
    for g in (mt.grad(_loss(case)), mt.jit(mt.grad(_loss(case)))):
        np.testing.assert_allclose(float(g(W, xs)), want_grad, rtol=2e-3, atol=1e-4)


@pytest.mark.parametrize("every", [None, 2])
def test_debug_nans_sees_no_step_of_a_finished_example(debug_nans, every):
    # sqrt(w (n - k - 1/2)) is sqrt of a negative number one step after an example finishes
    def f(w, n):
        def body(s):
            return s[0] + 1, s[1] + mnp.sqrt(w * (n - s[0] - 0.5))
        return lax.while_loop(lambda s: s[0] < n, body, (0.0, 0.0),
                              checkpoint_every=every)[1]

    ns = np.array([1.0, 3.0, 2.0, 4.0], np.float32)

    def loss(w):
        return mt.vmap(f, (None, 0))(w, ns).sum()

    w = 2.0
    s = sum(float(np.sqrt(np.arange(int(n)) + 0.5).sum()) for n in ns)  # sum sqrt(j + 1/2)
    np.testing.assert_allclose(float(loss(w)), s * math.sqrt(w), rtol=1e-5)
    for g in (mt.grad(loss), mt.jit(mt.grad(loss))):
        np.testing.assert_allclose(float(g(w)), s / (2 * math.sqrt(w)), rtol=1e-5)
    per = mt.vmap(mt.grad(f), (None, 0))(w, ns)
    np.testing.assert_allclose(float(np.sum(np.asarray(per))), s / (2 * math.sqrt(w)),
                               rtol=1e-5)


def test_a_while_loop_in_the_branch_an_example_skips():
    # x <= 0 skips the loop branch, whose sqrt(w (x - k)) is sqrt(0) at its last step for
    # an integer x and sqrt of a negative number for x < 0
    def inner(w, n):
        def body(s):
            return s[0] + 1, s[1] + mnp.sqrt(w * (n - s[0]))
        return lax.while_loop(lambda s: s[0] < n, body, (0.0, 0.0))[1]

    def f(w, x):
        return lax.cond(x > 0, lambda: inner(w, x), lambda: w * x)

    xs = np.array([0.0, 2.0, -1.0, 3.0], np.float32)

    def loss(w):
        return mt.vmap(f, (None, 0))(w, xs).sum()

    w = 2.0
    want = _sqrt_sums([2, 3]) / (2 * math.sqrt(w)) - 1.0  # d/dw of w*x summed: -1
    for g in (mt.grad(loss), mt.jit(mt.grad(loss))):
        np.testing.assert_allclose(float(g(w)), want, rtol=1e-5)
    for per in (mt.vmap(mt.grad(f), (None, 0))(w, xs),
                mt.jit(mt.vmap(mt.grad(f), (None, 0)))(w, xs)):
        np.testing.assert_allclose(float(np.sum(np.asarray(per))), want, rtol=1e-5)


def test_a_branch_no_example_takes_returns_an_empty_tape():
    # vmap(grad): the linearized switch returns the tape of its loop branch as a residual;
    # the branch no example takes is not run and gives zeros (an empty tape) in its place
    def inner(w, n):
        def body(s):
            return s[0] + 1, s[1] + mnp.sqrt(w * (n - s[0]))
        return lax.while_loop(lambda s: s[0] < n, body, (0.0, 0.0))[1]

    def f(w, x):
        return lax.switch(mnp.clip(x, 0, 2).astype(np.int32),
                          [lambda: w * x, lambda: inner(w, x), lambda: mnp.sin(w) * x])

    xs = np.array([1.0, 1.0, 0.0, 1.0], np.float32)  # branch 2 is never taken
    w = 2.0
    want = 3 / (2 * math.sqrt(w))
    for per in (mt.vmap(mt.grad(f), (None, 0))(w, xs),
                mt.jit(mt.vmap(mt.grad(f), (None, 0)))(w, xs)):
        np.testing.assert_allclose(float(np.sum(np.asarray(per))), want, rtol=1e-5)

    def loss(w):
        return mt.vmap(f, (None, 0))(w, xs).sum()

    for g in (mt.grad(loss), mt.jit(mt.grad(loss))):
        np.testing.assert_allclose(float(g(w)), want, rtol=1e-5)
