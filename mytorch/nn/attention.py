"""mt.nn: attention (`dot_product_attention`, with `jax.nn.dot_product_attention`'s semantics).

One primitive (`lax.dot_product_attention`) computes it: its NumPy kernel walks the keys in
blocks with an online softmax, and its backward pass is the flash backward (docs/attention.md).
"""

import numpy as np

import mytorch.numpy as mnp
from mytorch import lax
from mytorch.core.source_info import user_error

__all__ = ["dot_product_attention"]


def _short(x):
    return f"{np.dtype(x.dtype).name}{list(x.shape)}"


def _ensure_4d(x):
    x = mnp.asarray(x)
    if x.ndim < 4:
        x = lax.reshape(x, (1,) * (4 - x.ndim) + tuple(x.shape))
    return x


def _check(name, x, shape, dtype):
    """JAX's shape/dtype check: `shape` with -1 for any size."""
    if x is None:
        return
    if x.ndim != len(shape):
        raise user_error(ValueError, f"dot_product_attention: {name} ndim should be "
                         f"{len(shape)}, but got {x.ndim} ({_short(x)})")
    if dtype is not None and x.dtype != dtype:
        raise user_error(ValueError, f"dot_product_attention: {name} dtype should be "
                         f"{np.dtype(dtype).name}, but got {_short(x)}")
    if any(s != -1 and d != s for d, s in zip(x.shape, shape, strict=True)):
        want = "[" + ", ".join("*" if s == -1 else str(s) for s in shape) + "]"
        raise user_error(ValueError, f"dot_product_attention: {name} shape should be {want}, "
                         f"but got {_short(x)}")


def _window(local_window_size):
    if local_window_size is None:
        return None
    if isinstance(local_window_size, (int, np.integer)):
        return (int(local_window_size), int(local_window_size))
    try:
        left, right = local_window_size
        return (int(left), int(right))
    except (TypeError, ValueError):
        raise user_error(TypeError, "dot_product_attention: local_window_size must be an int "
                         f"or a (left, right) pair of ints, got {local_window_size!r}") from None


def dot_product_attention(query, key, value, bias=None, mask=None, *, scale=None,
                          is_causal=False, query_seq_lengths=None, key_value_seq_lengths=None,
                          local_window_size=None, implementation=None):
    """Scaled dot-product attention, as `jax.nn.dot_product_attention`.

    For each head, softmax(scale · Q Kᵀ + bias, masked) V, with the softmax in float32.

    Args:
      query: `[B, T, N, H]` (or unbatched `[T, N, H]`).
      key, value: `[B, S, K, H]` (or `[S, K, H]`) of query's dtype. K == N is multi-head
        attention; N a multiple of K is grouped-query attention (query head n reads
        key/value head n // (N // K)); K == 1 is multi-query attention.
      bias: optional additive logits bias, broadcastable to `[B, N, T, S]`.
      mask: optional bool, broadcastable to `[B, N, T, S]`; True = attend.
      scale: the logits' scale; default `1 / sqrt(H)`.
      is_causal: query t attends keys s <= t (aligned at the top left, as JAX does when
        T != S).
      query_seq_lengths: optional int32 `[B]`; output rows past the length are zero.
      key_value_seq_lengths: optional int32 `[B]`; keys past the length are masked.
      local_window_size: an int w or a pair (left, right): query t attends keys in
        [t - left, t + right].
      implementation: None or "xla" (both use the blocked primitive).

    Returns:
      `[B, T, N, H]` (the query's shape and dtype). A fully masked row is the mean of the
      values (the masked logits are one large negative number, as in JAX).

    Raises:
      ValueError: shapes or dtypes that do not fit (named with the user's line).

    >>> import mytorch as mt
    >>> q = mt.numpy.ones((2, 4, 1, 8))
    >>> mt.nn.dot_product_attention(q, q, q, is_causal=True).shape
    (2, 4, 1, 8)
    """
    if implementation not in (None, "xla"):
        raise user_error(ValueError, "dot_product_attention: unsupported implementation "
                         f"{implementation!r}; use None or 'xla' (the blocked kernel)")
    output_shape = tuple(mnp.shape(query))
    q, k, v = _ensure_4d(query), _ensure_4d(key), _ensure_4d(value)
    bias = None if bias is None else _ensure_4d(bias)
    mask = None if mask is None else _ensure_4d(mask)
    q_lens = None if query_seq_lengths is None else mnp.asarray(query_seq_lengths)
    kv_lens = None if key_value_seq_lengths is None else mnp.asarray(key_value_seq_lengths)
    B, S, K, H = k.shape
    _check("value", v, (B, S, K, H), k.dtype)
    _check("query", q, (B, -1, -1, H), k.dtype)
    _check("mask", mask, (-1,) * 4, np.bool_)
    _check("bias", bias, (-1,) * 4, None)
    _check("query_seq_lengths", q_lens, (B,), np.int32)
    _check("key_value_seq_lengths", kv_lens, (B,), np.int32)
    if K == 0 or q.shape[2] % K != 0:
        raise user_error(ValueError, "dot_product_attention: the number of query heads must "
                         f"be a multiple of key/value heads, but got {q.shape[2]} vs {K} "
                         f"(query {_short(q)}, key {_short(k)})")
    if not mnp.issubdtype(q.dtype, mnp.floating):
        raise user_error(TypeError, "dot_product_attention: query, key and value must be "
                         f"floating point, got {_short(q)}")
    if bias is not None and not mnp.issubdtype(bias.dtype, mnp.floating):
        bias = bias.astype(np.float64 if q.dtype == np.float64 else np.float32)
    scale = float(1.0 / np.sqrt(np.float64(H))) if scale is None else float(scale)
    out, _ = lax.dot_product_attention(q, k, v, bias, mask, q_lens, kv_lens, scale=scale,
                                       is_causal=bool(is_causal),
                                       local_window=_window(local_window_size))
    return lax.reshape(out, output_shape)
