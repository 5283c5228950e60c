"""The attention primitives: kernels against a NumPy reference at block boundaries, the
JVP/transpose/batching rules against finite differences and loops, second derivatives, jit,
abstract-evaluation errors, and the O(T·block) memory bound of the blocked kernels."""

import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch import lax
from mytorch.backends.numpy import attention as kernels
from tests.autodiff.fd import check_grads

MASKED = -0.7 * float(np.finfo(np.float32).max)


def reference(q, k, v, bias=None, mask=None, q_lens=None, kv_lens=None, *, scale,
              is_causal=False, local_window=None):
    """softmax(scale·q kᵀ + bias, masked) v in float64 NumPy, and the row log-sum-exp."""
    q, k, v = (np.asarray(x, np.float64) for x in (q, k, v))
    B, T, N, _ = q.shape
    S, K = k.shape[1], k.shape[2]
    k, v = np.repeat(k, N // K, axis=2), np.repeat(v, N // K, axis=2)
    s = np.einsum("btnh,bsnh->bnts", q, k) * scale
    if bias is not None:
        s = s + bias
    keep = np.ones((B, N, T, S), bool)
    rows, cols = np.arange(T)[:, None], np.arange(S)[None, :]
    if mask is not None:
        keep &= mask
    if is_causal:
        keep &= cols <= rows
    if local_window is not None:
        keep &= (rows <= cols + local_window[0]) & (rows >= cols - local_window[1])
    if kv_lens is not None:
        keep &= (cols[None] < np.asarray(kv_lens)[:, None, None])[:, None]
    if q_lens is not None:
        keep &= (rows[None] < np.asarray(q_lens)[:, None, None])[:, None]
    s = np.where(keep, s, MASKED)
    top = s.max(-1, keepdims=True) if S else 0.0
    with np.errstate(all="ignore"):
        e = np.exp(s - top)
        total = e.sum(-1, keepdims=True)
        out = np.einsum("bnts,bsnh->btnh", e / total if S else e, v)
        lse = np.log(total[..., 0]) + (top[..., 0] if S else 0.0)
    if q_lens is not None:
        out = out * (np.arange(T)[None, :] < np.asarray(q_lens)[:, None])[:, :, None, None]
    return out, lse


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of 3 keys, so small shapes cross block boundaries."""
    monkeypatch.setattr(kernels, "BLOCK", 3)


def _operands(rng, B, T, S, N, K, H, dtype=np.float32):
    q = rng.standard_normal((B, T, N, H)).astype(dtype)
    k = rng.standard_normal((B, S, K, H)).astype(dtype)
    v = rng.standard_normal((B, S, K, H)).astype(dtype)
    return q, k, v


@settings(max_examples=25, deadline=None)
@given(B=st.integers(1, 2), T=st.integers(0, 8), S=st.integers(0, 8),
       K=st.integers(1, 2), G=st.integers(1, 2), H=st.integers(1, 4),
       causal=st.booleans(), with_bias=st.booleans(), with_mask=st.booleans(),
       block=st.sampled_from([1, 3, 4, 256]), seed=st.integers(0, 2**16))
def test_forward_matches_numpy(B, T, S, K, G, H, causal, with_bias, with_mask, block, seed):
    rng = np.random.default_rng(seed)
    q, k, v = _operands(rng, B, T, S, K * G, K, H)
    bias = rng.standard_normal((1, K * G, T, S)).astype(np.float32) if with_bias else None
    mask = rng.random((B, 1, T, S)) < 0.7 if with_mask else None
    old, kernels.BLOCK = kernels.BLOCK, block
    try:
        out, lse = lax.dot_product_attention(q, k, v, bias, mask, scale=0.7, is_causal=causal)
    finally:
        kernels.BLOCK = old
    want, want_lse = reference(q, k, v, bias, mask, scale=0.7, is_causal=causal)
    np.testing.assert_allclose(np.asarray(out), want, rtol=2e-5, atol=2e-5)
    if S:
        np.testing.assert_allclose(np.asarray(lse), want_lse, rtol=2e-5, atol=2e-4)
    assert out.dtype == np.float32 and lse.dtype == np.float32


def test_lengths_and_window_match_numpy(small_blocks):
    rng = np.random.default_rng(1)
    q, k, v = _operands(rng, 3, 7, 8, 2, 1, 3)
    q_lens, kv_lens = np.array([7, 3, 0], np.int32), np.array([8, 0, 5], np.int32)
    out, _ = lax.dot_product_attention(q, k, v, None, None, q_lens, kv_lens, scale=0.5,
                                       local_window=(2, 1))
    want, _ = reference(q, k, v, q_lens=q_lens, kv_lens=kv_lens, scale=0.5,
                        local_window=(2, 1))
    np.testing.assert_allclose(np.asarray(out), want, rtol=2e-5, atol=2e-5)


def test_fully_masked_rows_average_the_values(small_blocks):
    rng = np.random.default_rng(2)
    q, k, v = _operands(rng, 1, 4, 7, 1, 1, 2)
    mask = np.ones((1, 1, 4, 7), bool)
    mask[..., 1, :] = False
    out, _ = lax.dot_product_attention(q, k, v, None, mask, scale=1.0)
    np.testing.assert_allclose(np.asarray(out)[0, 1, 0], v[0, :, 0].mean(0), rtol=1e-5)
    grads = mt.grad(lambda v: lax.dot_product_attention(q, k, v, None, mask, scale=1.0)[0]
                    [0, 1].sum())(v)
    np.testing.assert_allclose(np.asarray(grads)[0, :, 0], np.full((7, 2), 1 / 7), rtol=1e-5)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_accumulates_in_float32(dtype):
    rng = np.random.default_rng(3)
    q, k, v = (mnp.asarray(x).astype(dtype) for x in _operands(rng, 1, 300, 300, 2, 2, 8))
    out, lse = lax.dot_product_attention(q, k, v, scale=0.35, is_causal=True)
    assert out.dtype == np.dtype(mnp.asarray(q).dtype) and lse.dtype == np.float32
    want, _ = reference(*(np.asarray(x.astype("float32")) for x in (q, k, v)), scale=0.35,
                        is_causal=True)
    tol = 1e-2 if dtype == "bfloat16" else 2e-3
    np.testing.assert_allclose(np.asarray(out.astype("float32")), want, atol=tol)


# ---- derivatives ------------------------------------------------------------------------
CASES = {
    "plain": {},
    "causal_gqa": {"is_causal": True, "K": 1},
    "mask_bias": {"mask": True, "bias": True},
    "window_lengths": {"local_window": (1, 2), "lengths": True, "bias": True},
    # every row of the first example is masked: the skipped blocks' closed forms count
    "causal_masked_rows": {"is_causal": True, "kv_lens": (0, 6), "bias": True},
}


def _case(name, rng, dtype=np.float64):
    c = dict(CASES[name])
    K = c.pop("K", 2)
    q, k, v = _operands(rng, 2, 5, 7, 2, K, 3, dtype)
    fixed = {"scale": 0.6, "is_causal": c.get("is_causal", False),
             "local_window": c.get("local_window")}
    extra = {}
    if c.get("mask"):
        extra["mask"] = rng.random((2, 1, 5, 7)) < 0.7
    if c.get("lengths"):
        extra["q_lens"] = np.array([5, 3], np.int32)
        extra["kv_lens"] = np.array([4, 7], np.int32)
    if "kv_lens" in c:
        extra["kv_lens"] = np.array(c["kv_lens"], np.int32)
    bias = rng.standard_normal((1, 2, 5, 1)) if c.get("bias") else None
    return (q, k, v, bias), extra, fixed


def _fn(extra, fixed, with_bias):
    def f(q, k, v, *bias):
        out, _ = lax.dot_product_attention(q, k, v, *(bias or [None]), extra.get("mask"),
                                           extra.get("q_lens"), extra.get("kv_lens"), **fixed)
        return out

    return f


@pytest.mark.parametrize("name", sorted(CASES))
def test_first_and_second_derivatives_match_finite_differences(x64, small_blocks, name):
    (q, k, v, bias), extra, fixed = _case(name, np.random.default_rng(4))
    args = (q, k, v) if bias is None else (q, k, v, bias)
    check_grads(_fn(extra, fixed, bias is not None), args, order=2, rtol=1e-4, atol=1e-5)


@settings(max_examples=12, deadline=None)
@given(data=st.data(), T=st.integers(1, 6), S=st.integers(1, 6), K=st.integers(1, 2),
       G=st.integers(1, 2), causal=st.booleans(), block=st.sampled_from([1, 2, 4]),
       seed=st.integers(0, 2**16))
def test_gradients_over_drawn_shapes_match_finite_differences(data, T, S, K, G, causal, block,
                                                               seed):
    rng = np.random.default_rng(seed)
    B, N = 2, K * G
    q, k, v = _operands(rng, B, T, S, N, K, 2, np.float64)
    bias_shape = tuple(d if data.draw(st.booleans()) else 1 for d in (B, N, T, S))
    mask_shape = tuple(d if data.draw(st.booleans()) else 1 for d in (B, N, T, S))
    bias = rng.standard_normal(bias_shape)
    mask = rng.random(mask_shape) < 0.7
    window = data.draw(st.sampled_from([None, (1, 0), (0, 2)]))

    def f(q, k, v, bias):
        return lax.dot_product_attention(q, k, v, bias, mask, scale=0.8, is_causal=causal,
                                         local_window=window)[0]

    old, kernels.BLOCK = kernels.BLOCK, block
    mt.config.update("enable_x64", True)
    try:
        check_grads(f, (q, k, v, bias), order=1, rtol=1e-5, atol=1e-6, seed=seed)
    finally:
        mt.config.update("enable_x64", False)
        kernels.BLOCK = old


def test_hessian_vector_products_match_finite_differences(x64, small_blocks):
    (q, k, v, bias), extra, fixed = _case("mask_bias", np.random.default_rng(5))
    f = _fn(extra, fixed, True)
    w = np.random.default_rng(6).standard_normal(q.shape)

    def loss(q, k, v, bias):
        return mnp.sum(mnp.tanh(f(q, k, v, bias)) * w)

    grad = mt.grad(loss, argnums=(0, 1, 2, 3))
    args = (q, k, v, bias)
    dirs = tuple(np.random.default_rng(7).standard_normal(a.shape) for a in args)
    eps = 1e-5
    plus = grad(*(a + eps * d for a, d in zip(args, dirs, strict=True)))
    minus = grad(*(a - eps * d for a, d in zip(args, dirs, strict=True)))
    fd = [(np.asarray(p) - np.asarray(m)) / (2 * eps) for p, m in zip(plus, minus, strict=True)]
    _, fwd_rev = mt.jvp(grad, args, dirs)  # forward over reverse
    rev_rev = mt.grad(lambda *xs: sum(mnp.vdot(g, d) for g, d in
                                      zip(grad(*xs), dirs, strict=True)),
                      argnums=(0, 1, 2, 3))(*args)  # reverse over reverse
    for got in (fwd_rev, rev_rev):
        for g, want in zip(got, fd, strict=True):
            np.testing.assert_allclose(np.asarray(g), want, rtol=1e-5, atol=1e-6)


def test_tangent_and_backward_primitives_are_adjoint(x64, small_blocks):
    (q, k, v, bias), extra, fixed = _case("window_lengths", np.random.default_rng(8))
    f = _fn(extra, fixed, True)
    args = (q, k, v, bias)
    rng = np.random.default_rng(9)
    dirs = tuple(rng.standard_normal(a.shape) for a in args)
    out, tangent = mt.jvp(f, args, dirs)
    ct = rng.standard_normal(out.shape)
    _, vjp_fn = mt.vjp(f, *args)
    cts = vjp_fn(mnp.asarray(ct))
    lhs = float(np.sum(np.asarray(tangent) * ct))
    rhs = sum(float(np.sum(np.asarray(c) * d)) for c, d in zip(cts, dirs, strict=True))
    assert abs(lhs - rhs) <= 1e-9 * max(1.0, abs(lhs))
    jaxpr = str(mt.make_jaxpr(lambda *a: vjp_fn(a[0]))(mnp.asarray(ct)))
    assert "dot_product_attention_bwd" in jaxpr


def test_gradient_uses_the_blocked_primitives():
    rng = np.random.default_rng(10)
    q, k, v = _operands(rng, 1, 4, 4, 1, 1, 2)
    jaxpr = str(mt.make_jaxpr(mt.grad(lambda q: lax.dot_product_attention(
        q, k, v, scale=1.0)[0].sum()))(q))
    assert "dot_product_attention_bwd" in jaxpr and "exp" not in jaxpr


# ---- batching and jit ---------------------------------------------------------------------
def _stack_loop(f, args, axes):
    n = next(np.shape(a)[ax] for a, ax in zip(args, axes, strict=True) if ax is not None)
    outs = [f(*[a if ax is None else np.take(a, i, axis=ax) for a, ax in
                zip(args, axes, strict=True)]) for i in range(n)]
    return [np.stack([np.asarray(o[j]) for o in outs]) for j in range(len(outs[0]))]


@pytest.mark.parametrize("axes", [(0, 0, 0, 0, 0), (None, 1, 1, None, None),
                                  (2, None, None, None, None), (None, None, None, 0, None),
                                  (None, None, None, None, 3), (1, 0, 2, 4, 0)])
def test_vmap_over_any_operand_matches_a_loop(small_blocks, axes):
    rng = np.random.default_rng(11)
    V = 3
    shapes = [(2, 4, 2, 3), (2, 5, 1, 3), (2, 5, 1, 3), (1, 2, 4, 5), (2, 1, 1, 5)]
    args = []
    for i, (shape, ax) in enumerate(zip(shapes, axes, strict=True)):
        full = shape if ax is None else shape[:ax] + (V,) + shape[ax:]
        args.append(rng.random(full) < 0.8 if i == 4 else rng.standard_normal(full)
                    .astype(np.float32))

    def f(q, k, v, bias, mask):
        return lax.dot_product_attention(q, k, v, bias, mask, scale=0.5, is_causal=True)

    got = mt.vmap(f, in_axes=axes)(*args)
    want = _stack_loop(f, args, axes)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-5, atol=1e-6)
    # the backward and tangent primitives batch too: per-example gradients
    def loss(*a):
        return mnp.sum(f(*a)[0] ** 2)

    g_args = mt.vmap(mt.grad(loss, argnums=(0, 1, 2, 3)), in_axes=axes)(*args)
    want = _stack_loop(mt.grad(loss, argnums=(0, 1, 2, 3)), args, axes)
    for g, w in zip(g_args, want, strict=True):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-4, atol=1e-5)
    t = mt.vmap(lambda *a: mt.jvp(lambda *x: f(*x, a[4])[0], a[:4], a[:4])[1],
                in_axes=axes)(*args)
    want = _stack_loop(lambda *a: [mt.jvp(lambda *x: f(*x, a[4])[0], a[:4], a[:4])[1]],
                       args, axes)[0]
    np.testing.assert_allclose(np.asarray(t), want, rtol=1e-4, atol=1e-5)


def test_vmap_of_sequence_lengths(small_blocks):
    rng = np.random.default_rng(12)
    q, k, v = _operands(rng, 2, 4, 5, 1, 1, 2)
    lens = np.array([[4, 1], [0, 5], [3, 3]], np.int32)

    def f(kv_lens):
        return lax.dot_product_attention(q, k, v, None, None, kv_lens, kv_lens, scale=1.0)[0]

    got = mt.vmap(f)(lens)
    want = np.stack([np.asarray(f(x)) for x in lens])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)


def test_jit_matches_eager(small_blocks):
    rng = np.random.default_rng(13)
    q, k, v = _operands(rng, 2, 5, 7, 2, 1, 3)
    bias = rng.standard_normal((2, 2, 5, 7)).astype(np.float32)

    def loss(q, k, v, bias):
        out, _ = lax.dot_product_attention(q, k, v, bias, scale=0.4, is_causal=True)
        return mnp.sum(mnp.sin(out))

    f = mt.value_and_grad(loss, argnums=(0, 1, 2, 3))
    eager, jitted = f(q, k, v, bias), mt.jit(f)(q, k, v, bias)
    for e, j in zip(mt.tree_util.tree_leaves(eager), mt.tree_util.tree_leaves(jitted),
                    strict=True):
        np.testing.assert_allclose(np.asarray(j), np.asarray(e), rtol=1e-6, atol=1e-7)


# ---- errors -----------------------------------------------------------------------------
def test_abstract_evaluation_errors():
    q = np.zeros((1, 4, 2, 3), np.float32)
    kv = np.zeros((1, 5, 2, 3), np.float32)
    att = lax.dot_product_attention
    with pytest.raises(ValueError,
                       match=r"(?s)query must have rank 4.*f32\[4,2,3\].*test_attention.py"):
        att(q[0], kv, kv, scale=1.0)
    with pytest.raises(TypeError, match=r"one dtype.*f16\[1,5,2,3\]"):
        att(q, kv.astype(np.float16), kv, scale=1.0)
    with pytest.raises(ValueError, match=r"query heads \(2\) must be a multiple.*\(3\)"):
        att(q, np.zeros((1, 5, 3, 3), np.float32), np.zeros((1, 5, 3, 3), np.float32),
            scale=1.0)
    with pytest.raises(ValueError, match=r"head_dim"):
        att(q, kv[..., :2], kv[..., :2], scale=1.0)
    with pytest.raises(TypeError, match=r"mask must be boolean.*i32\[1,1,4,5\]"):
        att(q, kv, kv, None, np.ones((1, 1, 4, 5), np.int32), scale=1.0)
    with pytest.raises(ValueError, match=r"bias f32\[1,1,3,5\] is not broadcastable to "
                                         r"\[B, N, T, S\] = \[1, 2, 4, 5\]"):
        att(q, kv, kv, np.zeros((1, 1, 3, 5), np.float32), scale=1.0)
    with pytest.raises(ValueError, match=r"mask must have rank 4"):
        att(q, kv, kv, None, np.ones((4, 5), bool), scale=1.0)
    with pytest.raises(ValueError, match=r"kv_lens must be an integer array of shape \[B\]"):
        att(q, kv, kv, None, None, None, np.ones((2,), np.int32), scale=1.0)


# ---- memory ------------------------------------------------------------------------------
def test_memory_stays_within_a_few_blocks_of_scores():
    """T = S = 4096: the naive score matrix alone is 4096² float32 = 64 MiB per head; the
    blocked forward and backward hold one block of scores (T·BLOCK) at a time."""
    T, H = 4096, 16
    rng = np.random.default_rng(14)
    q, k, v = (mnp.asarray(x) for x in _operands(rng, 1, T, T, 1, 1, H))
    ct = mnp.asarray(rng.standard_normal((1, T, 1, H)).astype(np.float32))
    naive = T * T * 4
    out, lse = lax.dot_product_attention(q, k, v, scale=0.25, is_causal=True)
    bwd = lax.dot_product_attention_bwd_p
    for run in (
        lambda: lax.dot_product_attention(q, k, v, scale=0.25, is_causal=True),
        lambda: bwd.bind(q, k, v, out, lse, ct, scale=0.25, is_causal=True,
                         local_window=None, optional=(), wrt=("q", "k", "v")),
    ):
        tracemalloc.start()
        run()
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        blocks = peak / (T * kernels.BLOCK * 4)
        assert peak < naive / 3, (peak, naive)
        assert blocks < 6, blocks
