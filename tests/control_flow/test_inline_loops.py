"""The NumPy backend's inlined loops (control_flow_inline.py, control_flow_loops.py): scans,
while loops and the while loop's reverse mode compiled into one generated loop each, with
accumulators summed after the loop (control_flow_sink.py) and tapes kept as stacked rows.
Checked against loops written in NumPy, and against the same jit with sinking off."""

import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch import lax
from mytorch.backends.numpy import control_flow_loops, fusion, native
from mytorch.backends.numpy.tape import Tape, tape_segments, box


def rnn_reference(wx, wh, b, xs, h0):
    """(loss, dWx, dWh, db) of sum_t sum(h_t^2), h_t = tanh(x_t Wx + h_{t-1} Wh + b), in
    float64 NumPy with a hand-written backward pass."""
    wx, wh, b, xs, h0 = (np.asarray(a, np.float64) for a in (wx, wh, b, xs, h0))
    hs = [h0]
    for x in xs:
        hs.append(np.tanh(x @ wx + hs[-1] @ wh + b))
    dwx, dwh, db, dh = np.zeros_like(wx), np.zeros_like(wh), np.zeros_like(b), 0 * h0
    for t in range(len(xs) - 1, -1, -1):
        h = hs[t + 1]
        dz = (dh + 2 * h) * (1 - h * h)
        dwx += xs[t].T @ dz
        dwh += hs[t].T @ dz
        db += dz.sum(axis=0)
        dh = dz @ wh.T
    return sum(float((h * h).sum()) for h in hs[1:]), dwx, dwh, db


def rnn_loss(wx, wh, b, xs, h0, reverse=False):
    def cell(h, x):
        h = mnp.tanh(x @ wx + h @ wh + b)
        return h, mnp.sum(h * h)

    _, per_step = lax.scan(cell, h0, xs, reverse=reverse)
    return mnp.sum(per_step)


def _rnn_args(seed, steps, batch, n_in, hidden):
    rng = np.random.default_rng(seed)
    return (rng.normal(0, 0.4, (n_in, hidden)), rng.normal(0, 0.4, (hidden, hidden)),
            rng.normal(0, 0.1, (hidden,)), rng.normal(0, 1, (steps, batch, n_in)),
            rng.normal(0, 0.5, (batch, hidden)))


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 99), steps=st.integers(0, 6), batch=st.integers(1, 3),
       n_in=st.integers(1, 4), hidden=st.integers(1, 4))
def test_rnn_scan_jit_grad_matches_numpy_backward(x64, seed, steps, batch, n_in, hidden):
    args = _rnn_args(seed, steps, batch, n_in, hidden)
    _, *want = rnn_reference(*args)
    got = mt.jit(mt.grad(rnn_loss, argnums=(0, 1, 2)))(*map(mnp.asarray, args))
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("reverse", [False, True])
def test_sunk_accumulators_match_the_loop_that_keeps_them(monkeypatch, reverse):
    """The transposed scan's weight gradients summed after the loop equal the per-step
    accumulation (sinking switched off), to float32 rounding; the loop really sank them."""
    args = [mnp.asarray(a.astype(np.float32)) for a in _rnn_args(3, 50, 4, 5, 6)]
    loss = mt.grad(lambda *a: rnn_loss(*a, reverse=reverse), argnums=(0, 1, 2))
    sunk_fn = mt.jit(loss)
    text = sunk_fn.lower(*args).as_text()
    assert "np.tensordot" in text and "np.add.reduce(_ys" in text
    sunk = sunk_fn(*args)
    monkeypatch.setattr(control_flow_loops, "SINK", False)
    kept_fn = mt.jit(lambda *a: loss(*a))
    assert "np.tensordot" not in kept_fn.lower(*args).as_text()
    kept = kept_fn(*args)
    for s, k in zip(sunk, kept, strict=True):
        np.testing.assert_allclose(np.asarray(s), np.asarray(k), rtol=2e-5, atol=2e-6)


def test_accumulator_read_elsewhere_stays_in_the_loop():
    """A carry `acc + x @ w` that the body also reads (or whose sum it outputs per step)
    is not sunk: the results follow the loop definition."""
    rng = np.random.default_rng(0)
    xs, w = rng.normal(size=(7, 3, 2)), rng.normal(size=(2, 2))

    def body(acc, x):
        new = acc + x.T @ (x @ w)
        return new, mnp.sum(new) + mnp.sum(acc)

    f = mt.jit(lambda xs, w: lax.scan(body, mnp.zeros((2, 2)), xs))
    got_acc, got_ys = f(mnp.asarray(xs), mnp.asarray(w))
    acc, ys = np.zeros((2, 2)), []
    for x in xs:
        new = acc + x.T @ (x @ w)
        ys.append(new.sum() + acc.sum())
        acc = new
    np.testing.assert_allclose(np.asarray(got_acc), acc, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(got_ys), ys, rtol=1e-5, atol=1e-5)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 99), steps=st.integers(0, 5), reverse=st.booleans())
def test_transposed_xs_views_hoisted_out_of_the_loop(seed, steps, reverse):
    """Bodies reading transposes of a step's xs and of consts (taken once of the stacks and
    before the loop) give the loop's values."""
    rng = np.random.default_rng(seed)
    # float32 throughout, the reference too: five steps of products and tanh in float32
    # are up to ~1e-5 from float64's
    xs = rng.normal(size=(steps, 3, 4)).astype(np.float32)
    a = rng.normal(size=(4, 3)).astype(np.float32)

    def body(c, x):
        c = mnp.tanh(a.T @ (x.T @ c) + 0.5)
        return c, mnp.transpose(c)

    f = mt.jit(lambda c, xs, a: lax.scan(body, c, xs, reverse=reverse))
    got_c, got_ys = f(mnp.asarray(np.eye(3, dtype=np.float32)), mnp.asarray(xs), mnp.asarray(a))
    c, ys = np.eye(3, dtype=np.float32), [None] * steps
    for t in (range(steps - 1, -1, -1) if reverse else range(steps)):
        c = np.tanh(a.T @ (xs[t].T @ c) + np.float32(0.5))
        ys[t] = c.T
    np.testing.assert_allclose(np.asarray(got_c), c, rtol=1e-5, atol=1e-6)
    if steps:
        np.testing.assert_allclose(np.asarray(got_ys), np.stack(ys), rtol=1e-5, atol=1e-6)


def fixed_point_reference(wh, u, tol, max_steps):
    """(dWh, du) of sum(h_final^2) of h <- tanh(u + h Wh) until max|h_new - h| < tol, by a
    NumPy loop and a hand-written backward pass (float64)."""
    hs = [np.zeros_like(u)]
    while len(hs) <= max_steps:
        h = np.tanh(u + hs[-1] @ wh)
        done = np.abs(h - hs[-1]).max() < tol
        hs.append(h)
        if done:
            break
    dh, du, dwh = 2 * hs[-1], np.zeros_like(u), np.zeros_like(wh)
    for t in range(len(hs) - 1, 0, -1):
        dz = dh * (1 - hs[t] ** 2)
        du += dz
        dwh += hs[t - 1].T @ dz
        dh = dz @ wh.T
    return dwh, du, len(hs) - 1


def fixed_point_loss(wh, u, tol, max_steps, every):
    def cond(c):
        i, _, delta = c
        return (delta >= tol) & (i < max_steps)

    def body(c):
        i, h, _ = c
        new = mnp.tanh(u + h @ wh)
        return i + 1, new, mnp.max(mnp.abs(new - h))

    init = (0, mnp.zeros(u.shape, u.dtype), mnp.asarray(np.inf, u.dtype))
    _, h, _ = lax.while_loop(cond, body, init, checkpoint_every=every)
    return mnp.sum(h * h)


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 99), max_steps=st.sampled_from([0, 1, 15, 16, 17, 40]),
       every=st.sampled_from([None, 1, 3, 16]))
def test_while_grad_tape_matches_numpy_backward(x64, seed, max_steps, every):
    """Trip counts on both sides of the tape's first capacity (16 rows) and of checkpoint
    segment ends."""
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.normal(size=(5, 5)))
    u = rng.normal(0, 0.5, (3, 5))
    want_wh, want_u, steps = fixed_point_reference(q, u, 1e-9, max_steps)
    f = mt.jit(mt.grad(lambda wh, u: fixed_point_loss(wh, u, 1e-9, max_steps, every),
                       argnums=(0, 1)))
    got_wh, got_u = f(mnp.asarray(q), mnp.asarray(u))
    np.testing.assert_allclose(np.asarray(got_wh), want_wh, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(np.asarray(got_u), want_u, rtol=1e-9, atol=1e-12)


def test_stacked_tape_reads_back_its_rows_in_both_directions():
    rows = [np.arange(40.0).reshape(20, 2), np.arange(20)]
    tape = Tape.stacked(rows, 13)  # arrays longer than the steps recorded
    fwd = [[r.tolist() for r in step] for step in tape.steps(False)]
    assert fwd == [[[2.0 * t, 2.0 * t + 1], t] for t in range(13)]
    assert [s[1] for s in tape.steps(True)] == list(range(12, -1, -1))
    (seg, n), = tape_segments(box(tape), True)
    assert n == 13 and [len(r) for r in seg] == [13, 13]
    assert list(tape_segments(np.zeros((), object), False)) == []  # a zero tape is empty


def test_checkpointed_stacked_tape_replays_each_segment():
    calls = []

    def replay(start, n):
        calls.append((start, n))
        return [np.arange(start, start + n)]

    tape = Tape.stacked(None, 7, every=3, snapshots=[0, 3, 6], replay=replay)
    assert [int(s[0]) for s in tape.steps(False)] == list(range(7))
    assert [int(s[0]) for s in tape.steps(True)] == list(range(6, -1, -1))
    assert calls[-3:] == [(6, 1), (3, 3), (0, 3)]


def test_profiled_code_runs_the_loop_runners_with_the_same_results():
    """Profiled code keeps loop bodies as functions (each equation timed where it runs)."""
    args = [mnp.asarray(a.astype(np.float32)) for a in _rnn_args(1, 4, 2, 3, 3)]
    f = mt.jit(mt.grad(rnn_loss, argnums=(0, 1, 2)))
    want = f(*args)
    profiled = mt.profiler.profile(f, print_table=False)
    got = profiled(*args)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5, atol=1e-6)
    rows = profiled.last.rows()
    assert any("tanh" in r.name for r in rows)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 99), steps=st.integers(0, 5), reverse=st.booleans())
def test_products_of_xs_with_consts_computed_before_the_loop(seed, steps, reverse):
    """`x_t @ w` and `w2 @ x_t` (x_t a step's xs, w and w2 consts) are computed for every step
    at once before the loop; the carries and ys follow the loop definition."""
    rng = np.random.default_rng(seed)
    xs, w, w2 = rng.normal(size=(steps, 3, 4)), rng.normal(size=(4, 3)), rng.normal(size=(2, 3))

    def body(c, x):
        c = mnp.tanh(x @ w + c) * 0.5
        return c, w2 @ x

    f = mt.jit(lambda c, xs, w, w2: lax.scan(body, c, xs, reverse=reverse))
    args = [mnp.asarray(a) for a in (np.eye(3), xs, w, w2)]
    assert "_pre_" in f.lower(*args).as_text()
    got_c, got_ys = f(*args)
    c, ys = np.eye(3), [None] * steps
    for t in (range(steps - 1, -1, -1) if reverse else range(steps)):
        c = np.tanh(xs[t] @ w + c) * 0.5
        ys[t] = w2 @ xs[t]
    np.testing.assert_allclose(np.asarray(got_c), c, rtol=1e-5, atol=1e-6)
    assert np.asarray(got_ys).shape == (steps, 2, 4)
    if steps:
        np.testing.assert_allclose(np.asarray(got_ys), np.stack(ys), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.float32])
def test_scalar_carries_follow_numpy_arithmetic(dtype):
    """0-d carries go through Python operators on NumPy scalars inside the loop: the same
    dtypes and the same wrapping on overflow as array arithmetic."""
    def cond(c):
        return c[0] < 25

    def body(c):
        i, a, b = c
        return i + 1, a * 3 + 1, (a > b) | (i == 3)

    f = mt.jit(lambda a: lax.while_loop(cond, body, (0, a, mnp.asarray(False))))
    i, a, b = f(mnp.asarray(np.asarray(1, dtype)))
    want_a, want_b = np.asarray(1, dtype), np.asarray(False)
    with np.errstate(all="ignore"):
        for k in range(25):
            want_a, want_b = want_a * np.asarray(3, dtype) + np.asarray(1, dtype), \
                (want_a > want_b) | (k == 3)
    assert int(i) == 25 and np.asarray(a).dtype == np.dtype(dtype)
    assert type(np.asarray(a)) is np.ndarray and np.asarray(a).shape == ()
    np.testing.assert_array_equal(np.asarray(a), want_a)
    np.testing.assert_array_equal(np.asarray(b), want_b)


def test_nested_loops_and_their_gradient_match_eager_evaluation():
    def f(x, xs):
        def outer(c, x):
            def inner(d, y):
                return d * 0.9 + y, mnp.sum(d)

            d, ys = lax.scan(inner, c, xs)
            _, d = lax.while_loop(lambda s: s[0] < 3, lambda s: (s[0] + 1, s[1] * 1.1), (0, d))
            return d + x, ys

        c, ys = lax.scan(outer, x, xs)
        return mnp.sum(c) + mnp.sum(ys)

    x = mnp.asarray(np.linspace(-1, 1, 3, dtype=np.float32))
    xs = mnp.asarray(np.arange(12, dtype=np.float32).reshape(4, 3) / 10)
    with mt.disable_jit():
        want, want_g = f(x, xs), mt.grad(f)(x, xs)
    np.testing.assert_allclose(np.asarray(mt.jit(f)(x, xs)), np.asarray(want), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(mt.jit(mt.grad(f))(x, xs)), np.asarray(want_g),
                               rtol=1e-5)


def test_body_with_a_fused_elementwise_run():
    """A body whose steps are large enough for fused (or compiled) elementwise runs."""
    rng = np.random.default_rng(0)
    c0, xs = rng.random((64, 128), np.float32), rng.random((3, 64, 128), np.float32)

    def body(c, x):
        c = mnp.tanh(c) * 0.5 + x * mnp.exp(-c * c) - 0.1 * c
        return c, c * 2.0 + 1.0

    f = mt.jit(lambda c, xs: lax.scan(body, c, xs))
    for _ in range(2):  # the first call may build compiled loops
        got_c, got_ys = f(mnp.asarray(c0), mnp.asarray(xs))
    c, ys = c0, []
    for x in xs:
        c = np.tanh(c) * 0.5 + x * np.exp(-c * c) - 0.1 * c
        ys.append(c * 2 + 1)
    np.testing.assert_allclose(np.asarray(got_c), c, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(got_ys), np.stack(ys), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("compiled_runs", [False, True])
def test_checkpointed_while_with_fused_blocks_in_both_bodies(monkeypatch, compiled_runs):
    """The forward and replay bodies of a checkpointed tape are two sections of one
    generated module: their fused blocks (runs of 2^18 elements, evaluated block by block
    when compiled loops are off) must not share a name."""
    from mytorch.backends.numpy import native

    if not compiled_runs:
        monkeypatch.setattr(native, "available", lambda: False)
    rng = np.random.default_rng(0)
    x0 = rng.random((512, 512), np.float32)

    def loss(x):
        def body(c):
            i, h = c
            return i + 1, mnp.tanh(h) * 0.5 + mnp.exp(-h * h) * 0.25 - 0.1 * h

        _, h = lax.while_loop(lambda c: c[0] < 3, body, (0, x), checkpoint_every=2)
        return mnp.sum(h * h)

    f = mt.jit(mt.grad(loss))
    got = np.asarray(f(mnp.asarray(x0)))
    hs = [x0.astype(np.float64)]
    for _ in range(3):
        h = hs[-1]
        hs.append(np.tanh(h) * 0.5 + np.exp(-h * h) * 0.25 - 0.1 * h)
    dh = 2 * hs[-1]
    for h in reversed(hs[:-1]):
        dh = dh * ((1 - np.tanh(h) ** 2) * 0.5 - 2 * h * np.exp(-h * h) * 0.25 - 0.1)
    np.testing.assert_allclose(got, dh, rtol=2e-4, atol=2e-5)


def test_half_precision_products_stay_in_the_loop():
    """float16 products compute in float32 in their kernels: neither moved out of the loop
    nor summed after it, so the results are the eager ones."""
    rng = np.random.default_rng(1)
    xs, w = rng.normal(size=(6, 2, 3)).astype(np.float16), rng.normal(size=(3, 3))

    def body(acc, x):
        return acc + x.T @ (x @ w.astype(np.float16)), ()

    f = lambda xs: lax.scan(body, mnp.zeros((3, 3), np.float16), xs)[0]  # noqa: E731
    text = mt.jit(f).lower(mnp.asarray(xs)).as_text()
    assert "tensordot" not in text
    with mt.disable_jit():
        want = f(mnp.asarray(xs))
    np.testing.assert_array_equal(np.asarray(mt.jit(f)(mnp.asarray(xs))), np.asarray(want))


@pytest.mark.parametrize("shape", [(3, 4), (256, 128)])
def test_broadcast_const_read_in_full_where_small(shape):
    """`c + b` with b a const broadcast along a step's rows: small ones are made in full once
    before the loop (the ufunc then broadcasts nothing), large ones stay broadcasts."""
    rng = np.random.default_rng(2)
    c0, b = rng.normal(size=shape), rng.normal(size=shape[1:])
    f = mt.jit(lambda c, b: lax.fori_loop(0, 4, lambda i, c: mnp.tanh(c + b) * 0.5, c))
    args = mnp.asarray(c0), mnp.asarray(b)
    assert ("_lp_full" in f.lower(*args).as_text()) == (shape == (3, 4))
    c = c0
    for _ in range(4):
        c = np.tanh(c + b) * 0.5
    np.testing.assert_allclose(np.asarray(f(*args)), c, rtol=1e-5, atol=1e-6)


@settings(max_examples=8, deadline=None)
@given(steps=st.integers(0, 6), seed=st.integers(0, 99))
def test_plain_sum_of_xs_is_one_reduction(steps, seed):
    """`acc + x_t` (x_t a step's xs, stacked already) is one sum over the stack."""
    xs = np.random.default_rng(seed).normal(size=(steps, 2, 3)).astype(np.float32)
    f = mt.jit(lambda a, xs: lax.scan(lambda acc, x: (acc + x, mnp.sum(acc)), a, xs))
    a = mnp.asarray(np.ones((2, 3), np.float32))
    assert "np.add.reduce(_xs" not in f.lower(a, mnp.asarray(xs)).as_text()  # acc is read
    g = mt.jit(lambda a, xs: lax.scan(lambda acc, x: (acc + x, ()), a, xs)[0])
    assert "np.add.reduce(_xs" in g.lower(a, mnp.asarray(xs)).as_text()
    np.testing.assert_allclose(np.asarray(g(a, mnp.asarray(xs))), 1 + xs.sum(0), rtol=1e-6,
                               atol=1e-6)


@pytest.mark.parametrize("reverse", [False, True])
def test_results_written_into_the_stacks_leave_the_carry_its_own(reverse):
    """A step's result that is both a carry and a y is computed straight into the stacked
    ys; the final carry is still a buffer of its own, with the last step's value."""
    xs = np.linspace(-1, 1, 10, dtype=np.float32).reshape(5, 2)
    f = mt.jit(lambda c, xs: lax.scan(lambda c, x: (mnp.tanh(c + x),) * 2, c, xs,
                                      reverse=reverse))
    c, ys = f(mnp.asarray(np.zeros(2, np.float32)), mnp.asarray(xs))
    assert "out=_ys_" in f.lower(mnp.zeros(2), mnp.asarray(xs)).as_text()
    c, ys = np.asarray(c), np.asarray(ys)
    assert not np.shares_memory(c, ys)
    np.testing.assert_array_equal(c, ys[0] if reverse else ys[-1])
    want, h = [None] * 5, np.zeros(2, np.float32)
    for t in (range(4, -1, -1) if reverse else range(5)):
        h = np.tanh(h + xs[t])
        want[t] = h
    np.testing.assert_allclose(ys, np.stack(want), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("steps", [0, 3, 20])
def test_linearized_while_reads_row_products_per_stretch(steps):
    """jit(linearize) of a while loop: the tangent loop reads the tape, and a row times a
    const (`h_t @ dW`) is computed for each stretch of rows before its steps."""
    rng = np.random.default_rng(3)
    w = mnp.asarray((rng.normal(size=(3, 3)) * 0.5).astype(np.float32))
    x = mnp.asarray(rng.normal(size=(2, 3)).astype(np.float32))

    def f(w):
        _, h = lax.while_loop(lambda c: c[0] < steps,
                              lambda c: (c[0] + 1, mnp.tanh(c[1] @ w) + x), (0, x))
        return mnp.sum(h * h)

    def apply(w, dw):
        return mt.linearize(f, w)[1](dw)

    assert "np.tensordot(_rows" in mt.jit(apply).lower(w, w).as_text()
    h, dh = np.asarray(x, np.float64), np.zeros((2, 3))
    wn = np.asarray(w, np.float64)
    for _ in range(steps):
        t = np.tanh(h @ wn)
        h, dh = t + np.asarray(x), (1 - t * t) * (dh @ wn + h @ wn)
    np.testing.assert_allclose(float(mt.jit(apply)(w, w)), float((2 * h * dh).sum()),
                               rtol=1e-4, atol=1e-5)


def test_y_from_a_reshaped_product_is_copied_not_misparsed():
    """A y computed by a product the code generator may write as `np.matmul(...).reshape(...)`
    (a vector times a matrix's second axis: no plain call, so copied into its stack rather
    than given an `out=`)."""
    rng = np.random.default_rng(4)
    xs, w = rng.normal(size=(4, 6)), rng.normal(size=(3, 6))
    dims = (((0,), (1,)), ((), ()))

    def body(c, x):
        c = mnp.tanh(c + x)
        return c, lax.dot_general(c, w, dims)

    f = mt.jit(lambda xs: lax.scan(body, mnp.zeros(6), xs)[1])
    c, want = np.zeros(6), []
    for x in xs:
        c = np.tanh(c + x)
        want.append(w @ c)
    np.testing.assert_allclose(np.asarray(f(mnp.asarray(xs))), np.stack(want), rtol=1e-6)


@settings(max_examples=6, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 99), steps=st.integers(0, 5), reverse=st.booleans())
def test_compiled_loops_in_a_loop_body_write_their_ys_in_place(x64, seed, steps, reverse):
    """An RNN of width 8x32 (W7's): the body's elementwise runs are compiled loops from
    LOOP_NATIVE_MIN_SIZE elements, their results written straight into the stacked ys, the
    bias broadcast made once before the loop; loss and gradients match the float64 NumPy
    loop and backward pass."""
    if not native.available():
        pytest.skip(f"no compiled loops here: {native.unavailable_reason()}")
    assert 8 * 32 >= fusion.LOOP_NATIVE_MIN_SIZE
    args = _rnn_args(seed, steps, 8, 16, 32)
    f = mt.jit(mt.value_and_grad(rnn_loss, argnums=(0, 1, 2)), static_argnames="reverse")
    text = f.lower(*map(mnp.asarray, args), reverse=reverse).as_text()
    code = [line.strip() for line in text.splitlines() if not line.startswith("#")]
    steps_code = code[next(i for i, c in enumerate(code) if c.startswith("for _lp_i")):]
    assert any(c.startswith("_nat") for c in steps_code), text
    # a fused loop's output buffer is the stack's slice, not a copy made after the call
    assert any(re.fullmatch(r"v\d+ = _ys_\d+\[_lp_i\]", c) for c in steps_code), text
    assert not any("_broadcast(" in c for c in steps_code), text
    rev_args = [a[::-1] if i == 3 else a for i, a in enumerate(args)] if reverse else args
    loss, want = rnn_reference(*rev_args)[0], rnn_reference(*rev_args)[1:]
    got_loss, got = f(*map(mnp.asarray, args), reverse=reverse)
    np.testing.assert_allclose(float(got_loss), loss, rtol=1e-10)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-8, atol=1e-10)
