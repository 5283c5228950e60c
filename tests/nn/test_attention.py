"""mt.nn.dot_product_attention: values against a NumPy reference and JAX 0.10's numbers,
gradients against finite differences, jit == eager, vmap == loop, dtypes and errors."""

import contextlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch.backends.numpy import attention as kernels
from tests.autodiff.fd import check_grads

attention = mt.nn.dot_product_attention
MASKED = -0.7 * float(np.finfo(np.float32).max)


def naive(q, k, v, bias=None, mask=None, *, scale=None, is_causal=False, q_lens=None,
          kv_lens=None, window=None):
    """softmax(QKᵀ·scale + bias, masked)·V in float64 NumPy, [B, T, N, H] layout."""
    q, k, v = (np.asarray(x, np.float64) for x in (q, k, v))
    unbatched = q.ndim == 3
    if unbatched:
        q, k, v = q[None], k[None], v[None]
    _, T, N, H = q.shape
    S, K = k.shape[1], k.shape[2]
    scale = 1 / np.sqrt(H) if scale is None else scale
    k, v = np.repeat(k, N // K, axis=2), np.repeat(v, N // K, axis=2)
    logits = np.einsum("btnh,bsnh->bnts", q, k) * scale
    if bias is not None:
        logits = logits + bias
    keep = np.ones(logits.shape, bool)
    t, s = np.arange(T)[:, None], np.arange(S)[None, :]
    if mask is not None:
        keep &= mask
    if is_causal:
        keep &= s <= t
    if window is not None:
        keep &= (t <= s + window[0]) & (t >= s - window[1])
    if kv_lens is not None:
        keep &= (s < np.asarray(kv_lens)[:, None, None, None])
    if q_lens is not None:
        keep &= (t < np.asarray(q_lens)[:, None, None, None])
    logits = np.where(keep, logits, MASKED)
    with np.errstate(all="ignore"):
        e = np.exp(logits - (logits.max(-1, keepdims=True) if S else 0))
        p = e / e.sum(-1, keepdims=True) if S else e
    out = np.einsum("bnts,bsnh->btnh", p, v)
    if q_lens is not None:
        out = out * (np.arange(T)[None, :] < np.asarray(q_lens)[:, None])[:, :, None, None]
    return out[0] if unbatched else out


@contextlib.contextmanager
def block(size):
    old, kernels.BLOCK = kernels.BLOCK, size
    try:
        yield
    finally:
        kernels.BLOCK = old


def _qkv(rng, lead, T, S, N, K, H, dtype=np.float32):
    return (rng.standard_normal((*lead, T, N, H)).astype(dtype),
            rng.standard_normal((*lead, S, K, H)).astype(dtype),
            rng.standard_normal((*lead, S, K, H)).astype(dtype))


def _broadcast_shape(draw, full):
    return tuple(d if draw(st.booleans()) else 1 for d in full)


@settings(max_examples=40, deadline=None)
@given(data=st.data(), batched=st.booleans(), T=st.integers(1, 9), S=st.integers(1, 9),
       K=st.integers(1, 2), G=st.integers(1, 3), H=st.integers(1, 5),
       causal=st.booleans(), with_bias=st.booleans(), with_mask=st.booleans(),
       size=st.sampled_from([1, 2, 4, 256]), seed=st.integers(0, 2**16))
def test_matches_numpy(data, batched, T, S, K, G, H, causal, with_bias, with_mask, size,
                       seed):
    rng = np.random.default_rng(seed)
    B, N = 2, K * G
    q, k, v = _qkv(rng, (B,) if batched else (), T, S, N, K, H)
    full = (B, N, T, S) if batched else (N, T, S)
    bias = (rng.standard_normal(_broadcast_shape(data.draw, full)).astype(np.float32)
            if with_bias else None)
    mask = rng.random(_broadcast_shape(data.draw, full)) < 0.75 if with_mask else None
    scale = data.draw(st.sampled_from([None, 0.3]))
    with block(size):
        got = attention(q, k, v, bias, mask, scale=scale, is_causal=causal)
    assert got.shape == q.shape and got.dtype == np.float32
    want = naive(q, k, v, bias, mask, scale=scale, is_causal=causal)
    np.testing.assert_allclose(np.asarray(got), want, rtol=3e-5, atol=3e-5)


@pytest.mark.parametrize("T,S", [(1, 1), (5, 3), (3, 7), (0, 4)])
def test_lengths_windows_and_masked_rows_match_numpy(T, S):
    rng = np.random.default_rng(T * 10 + S)
    q, k, v = _qkv(rng, (3,), T, S, 2, 2, 3)
    q_lens = np.array([T, max(T - 2, 0), 0], np.int32)
    kv_lens = np.array([0, S, 1], np.int32)
    for window in [None, 1, (0, 2)]:
        w = (window, window) if isinstance(window, int) else window
        with block(2):
            got = attention(q, k, v, query_seq_lengths=q_lens, key_value_seq_lengths=kv_lens,
                            local_window_size=window, is_causal=True)
        want = naive(q, k, v, is_causal=True, q_lens=q_lens, kv_lens=kv_lens, window=w)
        np.testing.assert_allclose(np.asarray(got), want, rtol=3e-5, atol=3e-5)


def test_fully_masked_rows_are_the_mean_of_the_values_as_in_jax():
    rng = np.random.default_rng(0)
    q, k, v = _qkv(rng, (1,), 2, 5, 1, 1, 3)
    got = attention(q, k, v, mask=np.zeros((1, 1, 2, 5), bool))
    np.testing.assert_allclose(np.asarray(got)[0, :, 0], np.broadcast_to(v[0, :, 0].mean(0),
                                                                         (2, 3)), rtol=1e-6)


# ---- JAX 0.10's numbers -------------------------------------------------------------------
def _fixed(B, T, S, N, K, H):
    q = np.sin(np.arange(B * T * N * H) * 0.37).reshape(B, T, N, H).astype(np.float32)
    k = np.cos(np.arange(B * S * K * H) * 0.23).reshape(B, S, K, H).astype(np.float32)
    v = np.sin(np.arange(B * S * K * H) * 0.71 + 1).reshape(B, S, K, H).astype(np.float32)
    return q, k, v


def test_matches_jax_without_a_mask():
    got = attention(*_fixed(1, 3, 4, 2, 2, 2))
    want = [[[0.15629911, 0.10016409], [0.18887332, -0.0736988]],
            [[0.32382098, 0.32762724], [0.14537019, -0.08021251]],
            [[0.11908822, 0.04183167], [-0.17098752, -0.18297881]]]
    np.testing.assert_allclose(np.asarray(got)[0], want, rtol=2e-6, atol=1e-7)


def test_matches_jax_with_is_causal_when_t_differs_from_s():
    got = attention(*_fixed(1, 4, 3, 2, 1, 2), is_causal=True)  # T > S, grouped query
    want = [[[0.84147096, 0.9903268], [0.84147096, 0.9903268]],
            [[0.7605233, 0.55234617], [0.75705683, 0.5335903]],
            [[0.28043884, -0.0030466], [0.15557149, -0.15188143]],
            [[0.09732819, -0.21902764], [0.14029199, -0.16872776]]]
    np.testing.assert_allclose(np.asarray(got)[0], want, rtol=2e-6, atol=1e-6)
    got = attention(*_fixed(1, 3, 5, 1, 1, 2), is_causal=True)  # T < S
    want = [[0.84147096, 0.9903268], [0.75904393, 0.5443416], [0.44918185, 0.21090962]]
    np.testing.assert_allclose(np.asarray(got)[0, :, 0], want, rtol=2e-6, atol=1e-6)


def test_gradients_match_jax_with_is_causal():
    weights = mnp.arange(8.0).reshape(1, 4, 2, 1)

    def loss(q, k, v):
        return mnp.sum(attention(q, k, v, is_causal=True) * weights)

    dq, dk, dv = mt.grad(loss, argnums=(0, 1, 2))(*_fixed(1, 4, 3, 2, 1, 2))
    want_dq = [[[0, 0], [0, 0]], [[0.04214729, 0.08207493], [0.06364168, 0.12393159]],
               [[0.6784768, 0.952923], [0.8897699, 1.2366625]],
               [[1.0698643, 1.4808047], [1.2496413, 1.735259]]]
    want_dk = [[-3.7994037, -4.5073066], [-3.1164498, -3.0665455], [6.915854, 7.573852]]
    want_dv = [[9.602112, 9.602112], [9.089764, 9.089764], [9.308125, 9.308125]]
    np.testing.assert_allclose(np.asarray(dq)[0], want_dq, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(dk)[0, :, 0], want_dk, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(dv)[0, :, 0], want_dv, rtol=1e-5, atol=1e-6)


def test_matches_jax_with_bias_mask_lengths_and_window():
    q, k, v = _fixed(2, 3, 4, 1, 1, 2)
    bias = np.cos(np.arange(12)).reshape(1, 1, 3, 4).astype(np.float32)
    mask = np.array([[1, 0, 1, 1], [0, 0, 0, 0], [1, 1, 0, 1]], bool).reshape(1, 1, 3, 4)
    got = attention(q, k, v, bias, mask, scale=0.9,
                    query_seq_lengths=np.array([3, 2], np.int32),
                    key_value_seq_lengths=np.array([4, 3], np.int32), local_window_size=(1, 2))
    want = [[[0.5921253, 0.6582224], [0.00132063, -0.0732538], [0.05966065, -0.11526323]],
            [[0.33539125, 0.7229063], [0.0657095, -0.0108318], [0.0, 0.0]]]
    np.testing.assert_allclose(np.asarray(got)[:, :, 0], want, rtol=2e-6, atol=1e-7)


# ---- derivatives, jit, vmap -----------------------------------------------------------------
@pytest.mark.parametrize("causal", [False, True])
def test_gradients_match_finite_differences(x64, causal):
    rng = np.random.default_rng(1)
    q, k, v = _qkv(rng, (2,), 5, 4, 2, 1, 3, np.float64)
    bias = rng.standard_normal((2, 1, 5, 4))
    mask = rng.random((1, 2, 5, 4)) < 0.8

    def f(q, k, v, bias):
        return attention(q, k, v, bias, mask, is_causal=causal)

    with block(3):
        check_grads(f, (q, k, v, bias), order=2, rtol=1e-4, atol=1e-5)


def test_jit_equals_eager():
    rng = np.random.default_rng(2)
    q, k, v = _qkv(rng, (2,), 6, 5, 4, 2, 3)
    mask = rng.random((2, 1, 6, 5)) < 0.8

    def loss(q, k, v):
        return mnp.sum(attention(q, k, v, mask=mask, is_causal=True) ** 2)

    f = mt.value_and_grad(loss, argnums=(0, 1, 2))
    for e, j in zip(mt.tree_util.tree_leaves(f(q, k, v)),
                    mt.tree_util.tree_leaves(mt.jit(f)(q, k, v)), strict=True):
        np.testing.assert_allclose(np.asarray(j), np.asarray(e), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("which", ["q", "kv", "bias", "mask", "all"])
def test_vmap_equals_loop(which):
    rng = np.random.default_rng(3)
    q, k, v = _qkv(rng, (2,), 4, 5, 2, 2, 3)
    bias = rng.standard_normal((1, 2, 4, 5)).astype(np.float32)
    mask = rng.random((2, 1, 4, 5)) < 0.8
    args = {"q": q, "k": k, "v": v, "bias": bias, "mask": mask}
    mapped = {"q": ["q"], "kv": ["k", "v"], "bias": ["bias"], "mask": ["mask"],
              "all": list(args)}[which]
    for name in mapped:
        x = args[name]
        args[name] = np.stack([x, x[::-1] * 0.5 if x.dtype != bool else ~x, x])
    names = list(args)
    axes = tuple(0 if n in mapped else None for n in names)

    def f(q, k, v, bias, mask):
        return attention(q, k, v, bias, mask, is_causal=True)

    got = mt.vmap(f, in_axes=axes)(*args.values())
    want = np.stack([np.asarray(f(*[args[n][i] if n in mapped else args[n] for n in names]))
                     for i in range(3)])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6, atol=1e-6)


# ---- dtypes and errors --------------------------------------------------------------------
@pytest.mark.parametrize("dtype,tol", [("float16", 2e-3), ("bfloat16", 2e-2)])
def test_half_precision_keeps_the_dtype(dtype, tol):
    rng = np.random.default_rng(4)
    q, k, v = (mnp.asarray(x).astype(dtype) for x in _qkv(rng, (1,), 7, 9, 2, 1, 4))
    with block(4):
        out = attention(q, k, v, is_causal=True)
        grads = mt.grad(lambda q: mnp.sum(attention(q, k, v).astype("float32")))(q)
    assert out.dtype == q.dtype and grads.dtype == q.dtype
    want = naive(*(np.asarray(x.astype("float32")) for x in (q, k, v)), is_causal=True)
    np.testing.assert_allclose(np.asarray(out.astype("float32")), want, atol=tol)


def test_errors_name_the_problem_and_the_line():
    q = np.zeros((2, 4, 2, 3), np.float32)
    kv = np.zeros((2, 5, 2, 3), np.float32)
    with pytest.raises(ValueError, match=r"value shape should be \[2, 5, 2, 3\], but got "
                                         r"float32\[2, 6, 2, 3\] at test_attention.py"):
        attention(q, kv, np.zeros((2, 6, 2, 3), np.float32))
    with pytest.raises(ValueError, match=r"query dtype should be float16, but got float32"):
        attention(q, kv.astype(np.float16), kv.astype(np.float16))
    with pytest.raises(ValueError, match=r"mask dtype should be bool, but got float32"):
        attention(q, kv, kv, mask=np.ones((4, 5), np.float32))
    with pytest.raises(ValueError, match=r"bias ndim should be 4, but got 5"):
        attention(q, kv, kv, bias=np.ones((1, 1, 1, 4, 5), np.float32))
    with pytest.raises(ValueError, match=r"multiple of key/value heads, but got 3 vs 2"):
        attention(np.zeros((2, 4, 3, 3), np.float32), kv, kv)
    with pytest.raises(ValueError, match=r"query_seq_lengths dtype should be int32"):
        attention(q, kv, kv, query_seq_lengths=np.array([1, 2], np.int16))
    with pytest.raises(ValueError, match=r"(?s)bias f32\[1,1,3,5\] is not broadcastable.*"
                                         r"test_attention.py"):
        attention(q, kv, kv, bias=np.ones((3, 5), np.float32))
    with pytest.raises(ValueError, match=r"unsupported implementation 'cudnn'"):
        attention(q, kv, kv, implementation="cudnn")


@pytest.mark.parametrize("causal", [False, True])
def test_benchmark_contenders_agree(causal, capsys):
    """benchmarks/attention.py times what it claims: its naive NumPy forward and backward
    equal the blocked primitive's results."""
    from benchmarks import attention as bench

    rng = np.random.default_rng(5)
    q, k, v, g = (rng.standard_normal((1, 6, 2, 4)).astype(np.float32) for _ in range(4))
    for naive_fn, blocked_fn in bench.contenders(q, k, v, g, causal).values():
        want, got = naive_fn(), blocked_fn()
        want = [want[0]] if isinstance(got, np.ndarray) else [np.sum(want[0] * g), *want[1:]]
        got = [got] if isinstance(got, np.ndarray) else got
        for a, b in zip(got, want, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    bench.main(["--seq", "5", "--heads", "1", "--dim", "4", "--repeat", "1", "--blocks", "2"])
    assert "| 5 | forward+backward |" in capsys.readouterr().out
