"""lax.scan / fori_loop / map against their Python-loop definitions, under jvp/grad
(float64 finite differences), vmap (loop over examples), jit (un-jitted) and reverse mode
(stacked residuals, jaxpr size independent of the length)."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import mytorch as mt
import mytorch.backends.numpy.control_flow_scan  # noqa: F401  (registers the jit emitter)
import mytorch.numpy as mnp
from mytorch.lax.loops import fori_loop, map as lax_map, scan
from tests.autodiff.fd import check_grads

def loop_scan(f, init, xs, length=None, reverse=False):
    """The definition: a Python loop, ys stacked in xs order."""
    leaves = mt.tree_util.tree_leaves(xs)
    n = length if length is not None else leaves[0].shape[0]
    carry, ys = init, [None] * n
    for i in (range(n - 1, -1, -1) if reverse else range(n)):
        x = mt.tree_util.tree_map(lambda a: a[i], xs)
        carry, ys[i] = f(carry, x)
    return carry, ys


def assert_tree_close(got, want, rtol=1e-5, atol=1e-6):
    g, w = mt.tree_util.tree_leaves(got), mt.tree_util.tree_leaves(want)
    assert len(g) == len(w)
    for a, b in zip(g, w):
        assert np.shape(a) == np.shape(b)
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)


def stack_ys(ys, like):
    """Stack the loop's per-step ys (a list of pytrees) like scan does."""
    if not ys:
        return mt.tree_util.tree_map(lambda a: np.zeros((0, *np.shape(a)), np.asarray(a).dtype),
                                     like)
    return mt.tree_util.tree_map(lambda *a: np.stack([np.asarray(v) for v in a]), *ys)


def make_step(w):
    def step(carry, x):
        h, n = carry["h"], carry["n"]
        h = mnp.tanh(h * w + x[0]) + mnp.sum(x[1])
        return {"h": h, "n": n + 1}, (h * 2.0, mnp.sum(h))
    return step


@settings(max_examples=15, deadline=None)
@given(length=st.integers(0, 4), reverse=st.booleans(), seed=st.integers(0, 99))
def test_scan_matches_loop(length, reverse, seed):
    rng = np.random.default_rng(seed)
    w = mnp.asarray(rng.standard_normal(3).astype(np.float32))  # closed over
    init = {"h": mnp.asarray(rng.standard_normal(3).astype(np.float32)),
            "n": mnp.asarray(np.int32(0))}
    xs = (mnp.asarray(rng.standard_normal((length, 3)).astype(np.float32)),
          mnp.asarray(rng.standard_normal((length, 2, 2)).astype(np.float32)))
    step = make_step(w)
    carry, ys = scan(step, init, xs, reverse=reverse)
    want_c, want_ys = loop_scan(step, init, xs, reverse=reverse)
    assert_tree_close(carry, want_c)
    like = (mnp.zeros(3), mnp.zeros(()))
    assert_tree_close(ys, stack_ys(want_ys, like))
    jc, jys = mt.jit(lambda i, x: scan(step, i, x, reverse=reverse))(init, xs)
    assert_tree_close((jc, jys), (carry, ys))


def test_scan_length_without_xs_and_none_ys():
    carry, ys = scan(lambda c, _: (c * 2.0, None), mnp.asarray(1.0), None, length=5)
    assert float(carry) == 32.0 and ys is None
    c2, _ = mt.jit(lambda c: scan(lambda c, _: (c * 2.0, None), c, None, length=5))(1.0)
    assert float(c2) == 32.0


def test_carry_mismatch_error_shows_both_sides():
    with pytest.raises(TypeError) as e:
        scan(lambda c, x: ((c, c), x), mnp.zeros(2), mnp.zeros((3, 2)))
    msg = str(e.value)
    assert "carry input" in msg and "carry output" in msg and "f32[2]" in msg
    assert "test_scan.py" in msg
    with pytest.raises(TypeError, match=r"i32\[\]"):
        scan(lambda c, x: (c + x, x), mnp.asarray(np.int32(0)), mnp.zeros(3))
    with pytest.raises(ValueError, match="leading"):
        scan(lambda c, x: (c, x), 0.0, (mnp.zeros(3), mnp.zeros(4)))


@settings(max_examples=10, deadline=None)
@given(lo=st.integers(-2, 3), n=st.integers(0, 4))
def test_fori_loop_matches_for(lo, n):
    def body(i, v):
        return v * 0.5 + mnp.sin(i * 1.0 + v)
    v = mnp.asarray(np.array([0.3, -1.0], np.float32))
    want = v
    for i in range(lo, lo + n):
        want = body(mnp.asarray(np.int32(i)), want)
    assert_tree_close(fori_loop(lo, lo + n, body, v), want)
    assert_tree_close(mt.jit(lambda v: fori_loop(lo, lo + n, body, v))(v), want)


def test_map_matches_stack():
    xs = mnp.asarray(np.arange(12.0, dtype=np.float32).reshape(4, 3))
    got = lax_map(lambda x: (mnp.cumsum(x), x.sum()), xs)
    assert_tree_close(got, (np.cumsum(np.asarray(xs), 1), np.asarray(xs).sum(1)))


# ---- derivatives ------------------------------------------------------------------------
def rnn_loss(w, h0, xs, reverse=False):
    def cell(h, x):
        h = mnp.tanh(h @ w + x)
        return h, mnp.sin(h)
    h, ys = scan(cell, h0, xs, reverse=reverse)
    return mnp.sum(h * h) + mnp.sum(ys * xs)


@pytest.mark.parametrize("reverse", [False, True])
def test_grads_wrt_init_xs_and_consts(x64, reverse):
    rng = np.random.default_rng(0)
    w, h0, xs = rng.standard_normal((3, 3)) * 0.5, rng.standard_normal(3), rng.standard_normal(
        (4, 3))
    check_grads(lambda w, h0, xs: rnn_loss(w, h0, xs, reverse), (w, h0, xs), order=2)


def test_grad_carry_tangent_becomes_nonzero(x64):
    # the carry starts constant (zero tangent) and picks up a tangent from the closure
    def f(a, xs):
        c, ys = scan(lambda c, x: ((c[0] + a * x, c[1] * 2.0), c[0] * x), (0.0, 1.0), xs)
        return c[0] + mnp.sum(ys) + c[1]
    check_grads(f, (np.array(0.7), np.array([1.0, -2.0, 0.5])), order=2)
    check_grads(lambda a: fori_loop(0, 3, lambda i, v: v * a + i, a), (np.array(1.3),),
                order=2)


def test_reverse_mode_stacks_residuals():
    w = mnp.asarray(np.eye(3, dtype=np.float32) * 0.5)

    def n_eqns(length):
        xs = mnp.ones((length, 3))
        jaxpr = mt.make_jaxpr(mt.grad(rnn_loss, argnums=(0, 1, 2)))(w, mnp.ones(3), xs)
        names = [e.primitive.name for e in jaxpr.jaxpr.eqns]
        return len(jaxpr.jaxpr.eqns), names.count("scan")

    (n3, s3), (n50, s50) = n_eqns(3), n_eqns(50)
    assert n3 == n50 and s3 == s50 == 2  # forward scan (stacking residuals) + transposed
    jaxpr = mt.make_jaxpr(mt.grad(rnn_loss))(w, mnp.ones(3), mnp.ones((5, 3)))
    fwd, bwd = [e for e in jaxpr.jaxpr.eqns if e.primitive.name == "scan"]
    assert fwd.params["reverse"] is False and bwd.params["reverse"] is True
    assert len(fwd.outvars) > 2  # carry, ys and the stacked residuals
    assert "tanh" not in [e.primitive.name for e in bwd.params["jaxpr"].eqns]  # not recomputed


def test_grad_of_jit_and_jit_of_grad_match_unjitted():
    rng = np.random.default_rng(1)
    args = [mnp.asarray(a.astype(np.float32)) for a in
            (rng.standard_normal((3, 3)) * 0.5, rng.standard_normal(3),
             rng.standard_normal((6, 3)))]
    g = mt.grad(rnn_loss, argnums=(0, 1, 2))
    want = g(*args)
    assert_tree_close(mt.jit(g)(*args), want, rtol=1e-4, atol=1e-5)
    assert_tree_close(mt.grad(mt.jit(rnn_loss), argnums=(0, 1, 2))(*args), want, rtol=1e-4,
                      atol=1e-5)


# ---- vmap -------------------------------------------------------------------------------
@settings(max_examples=8, deadline=None)
@given(carry_b=st.booleans(), xs_axis=st.sampled_from([None, 0, 1]),
       w_b=st.booleans(), seed=st.integers(0, 50))
def test_vmap_matches_loop(carry_b, xs_axis, w_b, seed):
    rng = np.random.default_rng(seed)
    B, T = 3, 4
    w = rng.standard_normal((B, 2) if w_b else (2,)).astype(np.float32)
    h0 = rng.standard_normal((B, 2) if carry_b else (2,)).astype(np.float32)
    xs = rng.standard_normal((T, 2)).astype(np.float32)
    if xs_axis is not None:
        xs = np.stack([xs * (k + 1) for k in range(B)], axis=xs_axis)

    def run(w, h0, xs):
        def cell(c, x):
            h, k = c
            h = mnp.tanh(h * w + x)
            return (h, k + mnp.sum(w)), (h, mnp.sum(x))
        return scan(cell, (h0, mnp.asarray(0.0)), xs)

    axes = (0 if w_b else None, 0 if carry_b else None, xs_axis)
    if axes == (None, None, None):
        axes = (None, None, None)
        w = np.stack([w] * B)
        axes = (0, None, None)
    args = [mnp.asarray(a) for a in (w, h0, xs)]
    got = mt.vmap(run, in_axes=axes)(*args)
    outs = []
    for b in range(B):
        sl = [a if ax is None else np.take(np.asarray(a), b, axis=ax) for a, ax in zip(args, axes)]
        outs.append(run(*[mnp.asarray(s) for s in sl]))
    want = mt.tree_util.tree_map(lambda *a: np.stack([np.asarray(v) for v in a]), *outs)
    assert_tree_close(got, want)
    assert_tree_close(mt.jit(mt.vmap(run, in_axes=axes))(*args), want)


def test_grad_of_scan_inside_vmap_inside_jit():
    rng = np.random.default_rng(2)
    w = mnp.asarray((rng.standard_normal((3, 3)) * 0.5).astype(np.float32))
    h0 = mnp.asarray(rng.standard_normal((4, 3)).astype(np.float32))
    xs = mnp.asarray(rng.standard_normal((5, 3)).astype(np.float32))
    f = mt.jit(mt.vmap(mt.grad(rnn_loss), in_axes=(None, 0, None)))
    want = np.stack([np.asarray(mt.grad(rnn_loss)(w, h0[b], xs)) for b in range(4)])
    assert_tree_close(f(w, h0, xs), want, rtol=1e-4, atol=1e-5)


# ---- jit --------------------------------------------------------------------------------
def test_jit_traces_body_once_and_compiles_a_loop():
    calls = []

    def cell(c, x):
        calls.append(1)
        return c * 0.5 + x, c

    f = mt.jit(lambda c, xs: scan(cell, c, xs))
    xs = mnp.ones((100, 2))
    got = f(mnp.zeros(2), xs)
    assert len(calls) == 1
    f(mnp.ones(2), xs)
    assert len(calls) == 1
    assert_tree_close(got, scan(cell, mnp.zeros(2), xs))
    text = f.lower(mnp.zeros(2), xs).as_text()
    assert "scan_body" in text and text.count("np_multiply") < 5  # not unrolled


# ---- an RNN under jit(grad) against a hand-written backward pass -------------------------
def manual_rnn(wh, wx, h0, xs):
    """loss = sum_t sum(h_t**2), h_t = tanh(h_{t-1} @ wh + x_t @ wx); NumPy backward."""
    T, H = xs.shape[0], h0.shape[0]
    hs, h = np.empty((T, H)), h0
    for t in range(T):
        h = np.tanh(h @ wh + xs[t] @ wx)
        hs[t] = h
    dwh, dwx, dh = np.zeros_like(wh), np.zeros_like(wx), np.zeros(H)
    for t in range(T - 1, -1, -1):
        da = (dh + 2 * hs[t]) * (1 - hs[t] ** 2)
        dwh += np.outer(hs[t - 1] if t else h0, da)
        dwx += np.outer(xs[t], da)
        dh = da @ wh.T
    return np.sum(hs ** 2), (dwh, dwx, dh)


def rnn_seq_loss(wh, wx, h0, xs):
    def cell(h, x):
        h = mnp.tanh(h @ wh + x @ wx)
        return h, h
    _, hs = scan(cell, h0, xs)
    return mnp.sum(hs ** 2)


def test_rnn_100_steps_jit_grad_vs_manual_backward():
    rng = np.random.default_rng(3)
    H, D, T = 4, 3, 100
    wh, wx = rng.standard_normal((H, H)) * 0.4, rng.standard_normal((D, H)) * 0.4
    h0, xs = rng.standard_normal(H), rng.standard_normal((T, D))
    args = [mnp.asarray(a.astype(np.float32)) for a in (wh, wx, h0, xs)]
    loss, grads = mt.jit(mt.value_and_grad(rnn_seq_loss, argnums=(0, 1, 2)))(*args)
    want_loss, want = manual_rnn(wh, wx, h0, xs)
    np.testing.assert_allclose(float(loss), want_loss, rtol=1e-4)
    assert_tree_close(grads, want, rtol=1e-3, atol=1e-4)


def test_nested_scans_and_checkpoint_grads_match_loop(x64):
    xs = np.random.default_rng(4).standard_normal((3, 4))

    def f(a, xs):
        def inner(c, row):
            return scan(lambda h, x: (mnp.sin(h * c + x), h * x), c, row)

        def outer(c, row):
            h, ys = inner(c, row)
            return h + c, ys
        c, ys = scan(outer, a, xs)
        return c + mnp.sum(ys)

    def f_loop(a, xs):
        c, tot = a, 0.0
        for r in range(xs.shape[0]):
            h = c
            for k in range(xs.shape[1]):
                tot = tot + h * xs[r, k]
                h = mnp.sin(h * c + xs[r, k])
            c = h + c
        return c + tot

    a = np.array(0.3)
    want = mt.grad(f_loop, argnums=(0, 1))(a, xs)
    np.testing.assert_allclose(float(f(a, xs)), float(f_loop(a, xs)), rtol=1e-10)
    check_grads(f, (a, xs), order=2)
    assert_tree_close(mt.grad(f, argnums=(0, 1))(a, xs), want, rtol=1e-10, atol=1e-12)
    for g in (mt.grad(f, argnums=(0, 1)), mt.jit(mt.grad(f, argnums=(0, 1))),
              mt.grad(mt.checkpoint(f), argnums=(0, 1)), mt.grad(mt.jit(f), argnums=(0, 1))):
        assert_tree_close(g(a, xs), want, rtol=1e-10, atol=1e-12)


def _stacked_residuals(f, *args):
    """The avals the known scan of grad(f) stacks beyond its own carry and ys."""
    jaxpr = mt.make_jaxpr(mt.grad(f))(*args).jaxpr
    (known,) = [e for e in jaxpr.eqns if e.primitive.name == "scan"][:1]
    n_own = known.params["num_carry"] + 1  # the body below has one y
    return [v.aval.shape for v in known.outvars[n_own:]]


@pytest.mark.parametrize("policy", [None, mt.checkpoint_policies.dots_saveable])
def test_checkpointed_scan_body_stacks_only_what_its_policy_saves(x64, policy):
    rng = np.random.default_rng(5)
    w, h0, xs = rng.standard_normal((4, 4)) * 0.5, rng.standard_normal(4), rng.standard_normal(
        (6, 4))

    def make(step):
        def f(w, h0, xs):
            h, ys = scan(lambda h, x: step(w, h, x), h0, xs)
            return mnp.sum(h) + mnp.sum(ys)
        return f

    def step(w, h, x):
        a = mnp.tanh(h @ w + x)
        b = mnp.sin(a) * mnp.cos(a) + a * a
        return b, mnp.sum(b * x)

    plain, ckpt = make(step), make(mt.checkpoint(step, policy=policy))
    args = [mnp.asarray(a) for a in (w, h0, xs)]
    # no per-step copy of the loop constant w, and fewer stacked values than without it
    assert all(s != (6, 4, 4) for s in _stacked_residuals(ckpt, *args))
    want = _stacked_residuals(plain, *args)
    got = _stacked_residuals(ckpt, *args)
    # nothing saveable: the carry (x is read from xs); dots: the carry and h @ w
    assert len(got) == (1 if policy is None else 2) < len(want), (got, want)
    for g in (mt.grad(ckpt, argnums=(0, 1, 2)), mt.jit(mt.grad(ckpt, argnums=(0, 1, 2)))):
        assert_tree_close(g(*args), mt.grad(plain, argnums=(0, 1, 2))(*args), rtol=1e-12,
                          atol=1e-12)
    check_grads(ckpt, (w, h0, xs), modes=("rev",))


@pytest.mark.parametrize("which", ["b", "a", "ys0", "ys1", "all"])
def test_jit_prunes_unused_scan_outputs(which):
    def f(c0, xs):
        (a, b), ys = scan(lambda c, x: ((c[0] + x, c[1] * c[0] + 1.0), (c[1], x * 3.0)),
                          (c0, c0), xs)
        outs = {"a": a, "b": b, "ys0": ys[0], "ys1": ys[1], "all": (a, b, ys)}
        return outs[which]

    c0, xs = mnp.asarray(np.float32(0.5)), mnp.asarray(np.linspace(-1, 1, 7, dtype=np.float32))
    jf = mt.jit(f)
    assert_tree_close(jf(c0, xs), f(c0, xs))
    text = jf.lower(c0, xs).as_text()
    assert ("3.0" in text) == (which in ("ys1", "all"))  # the unused y is not computed
