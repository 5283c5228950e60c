"""Scaled dot-product attention as primitives.

    dot_product_attention(q f32[B,T,N,H], k f32[B,S,K,H], v f32[B,S,K,H],
                          [bias f?[b,n,t,s]], [mask bool[b,n,t,s]],
                          [q_lens i32[B]], [kv_lens i32[B]])
        -> (out f32[B,T,N,H], lse f32[B,N,T])

Three primitives share one operand layout (JAX's `[batch, seq, heads, head_dim]`):

- `dot_product_attention_p`: the forward pass. It returns the output and the row
  log-sum-exp of the masked logits (a residual; its tangent is zero).
- `dot_product_attention_tangent_p`: the output tangent, linear in the tangents of q, k, v
  and bias given the primal operands and the forward results (out, lse).
- `dot_product_attention_bwd_p`: the cotangents of q, k, v and bias from the output
  cotangent (the flash backward pass), linear in that cotangent. It is the transpose of the
  tangent primitive, and the tangent primitive is its transpose.

The optional operands (bias, mask, sequence lengths) are present when named in the static
`optional` tuple; `is_causal` and `local_window` are masks the kernels build block by block.
Masked logits are replaced by `-0.7 * finfo(float32).max` (as JAX does), so a fully masked
row averages every value. The rules live in attention_rules.py, the NumPy kernels (online
softmax over key blocks) in mytorch/backends/numpy/attention.py.
"""

import numpy as np

from mytorch.core import dtypes
from mytorch.core.aval import ShapedArray
from mytorch.core.primitive import Primitive
from mytorch.lax._utils import asarray, short

__all__ = [
    "DIFFERENTIABLE_OPERANDS",
    "OPTIONAL_OPERANDS",
    "dot_product_attention",
    "dot_product_attention_bwd_p",
    "dot_product_attention_p",
    "dot_product_attention_tangent_p",
]

OPTIONAL_OPERANDS = ("bias", "mask", "q_lens", "kv_lens")
DIFFERENTIABLE_OPERANDS = ("q", "k", "v", "bias")

dot_product_attention_p = Primitive("dot_product_attention", multiple_results=True,
                                    kind="attention")
dot_product_attention_tangent_p = Primitive("dot_product_attention_tangent",
                                            multiple_results=False, kind="attention")
dot_product_attention_bwd_p = Primitive("dot_product_attention_bwd", multiple_results=True,
                                        kind="attention")


def split_operands(args, optional):
    """{name: operand} for q, k, v and the `optional` operands at the front of `args`,
    and the remaining operands."""
    names = ("q", "k", "v", *optional)
    return dict(zip(names, args[: len(names)], strict=True)), list(args[len(names):])


def _logits_dtype(dtype):
    return np.dtype(np.float64) if np.dtype(dtype) == np.float64 else np.dtype(np.float32)


def _check_broadcastable(name, aval, target):
    if aval.ndim != 4:
        raise ValueError(f"{name} must have rank 4 (broadcastable to [B, N, T, S] = "
                         f"{list(target)}), got {short(aval)}")
    if any(d not in (1, t) for d, t in zip(aval.shape, target, strict=True)):
        raise ValueError(f"{name} {short(aval)} is not broadcastable to [B, N, T, S] = "
                         f"{list(target)}: each dim must be 1 or equal to the target's")


def _check_operands(ops, scale, is_causal, local_window):
    q, k, v = ops["q"], ops["k"], ops["v"]
    for name, a in (("query", q), ("key", k), ("value", v)):
        if a.ndim != 4:
            raise ValueError(f"{name} must have rank 4 [batch, seq, heads, head_dim], got "
                             f"{short(a)}")
        if not dtypes.is_float(a.dtype):
            raise TypeError(f"{name} must have a floating dtype, got {short(a)}")
    if not (k.dtype == v.dtype == q.dtype):
        raise TypeError(f"query, key and value must have one dtype, got {short(q)}, "
                        f"{short(k)} and {short(v)}")
    if k.shape != v.shape:
        raise ValueError(f"key and value must have one shape [B, S, K, H], got {short(k)} "
                         f"and {short(v)}")
    B, T, N, H = q.shape
    _, S, K, Hk = k.shape
    if k.shape[0] != B or Hk != H:
        raise ValueError(f"query {short(q)} and key {short(k)} must agree on the batch and "
                         f"head_dim (the first and last dims)")
    if K == 0 or N % K != 0:
        raise ValueError(f"the number of query heads ({N}) must be a multiple of the number "
                         f"of key/value heads ({K}): query {short(q)}, key {short(k)}")
    target = (B, N, T, S)
    if "bias" in ops:
        _check_broadcastable("bias", ops["bias"], target)
        if not dtypes.is_float(ops["bias"].dtype):
            raise TypeError(f"bias must have a floating dtype, got {short(ops['bias'])}")
    if "mask" in ops:
        _check_broadcastable("mask", ops["mask"], target)
        if ops["mask"].dtype != np.bool_:
            raise TypeError(f"mask must be boolean (True = attend), got {short(ops['mask'])}; "
                            "pass an additive mask as bias")
    for name in ("q_lens", "kv_lens"):
        if name in ops:
            a = ops[name]
            if a.shape != (B,) or a.dtype.kind not in "iu":
                raise ValueError(f"{name} must be an integer array of shape [B] = [{B}], "
                                 f"got {short(a)}")
    if not isinstance(scale, float):
        raise TypeError(f"scale must be a Python float, got {scale!r}")
    if not isinstance(is_causal, bool):
        raise TypeError(f"is_causal must be a bool, got {is_causal!r}")
    if local_window is not None and (
        not isinstance(local_window, tuple) or len(local_window) != 2
        or not all(isinstance(w, int) for w in local_window)
    ):
        raise TypeError(f"local_window must be None or a pair of ints, got {local_window!r}")


@dot_product_attention_p.def_abstract_eval
def _attention_abstract_eval(*args, scale, is_causal, local_window, optional):
    ops, rest = split_operands(args, optional)
    assert not rest
    _check_operands(ops, scale, is_causal, local_window)
    q = ops["q"]
    B, T, N, _ = q.shape
    return [ShapedArray(q.shape, q.dtype, q.weak_type),
            ShapedArray((B, N, T), _logits_dtype(q.dtype))]


def _check_like(what, aval, like):
    if aval.shape != like.shape or aval.dtype != like.dtype:
        raise TypeError(f"{what} must be {short(like)}, got {short(aval)}")


def _check_residuals(ops, out, lse):
    q = ops["q"]
    B, T, N, _ = q.shape
    _check_like("out", out, q)
    _check_like("lse", lse, ShapedArray((B, N, T), _logits_dtype(q.dtype)))


@dot_product_attention_tangent_p.def_abstract_eval
def _tangent_abstract_eval(*args, scale, is_causal, local_window, optional, tangents):
    ops, rest = split_operands(args, optional)
    _check_operands(ops, scale, is_causal, local_window)
    out, lse, *dots = rest
    _check_residuals(ops, out, lse)
    for name, dot in zip(tangents, dots, strict=True):
        _check_like(f"the tangent of {name}", dot, ops[name])
    return ShapedArray(ops["q"].shape, ops["q"].dtype)


@dot_product_attention_bwd_p.def_abstract_eval
def _bwd_abstract_eval(*args, scale, is_causal, local_window, optional, wrt):
    ops, rest = split_operands(args, optional)
    _check_operands(ops, scale, is_causal, local_window)
    out, lse, ct = rest
    _check_residuals(ops, out, lse)
    _check_like("the output cotangent", ct, ops["q"])
    return [ShapedArray(ops[name].shape, ops[name].dtype) for name in wrt]


def dot_product_attention(query, key, value, bias=None, mask=None, q_lens=None,
                          kv_lens=None, *, scale, is_causal=False, local_window=None):
    """Scaled dot-product attention over JAX's `[batch, seq, heads, head_dim]` layout.

    softmax(scale * q kᵀ + bias, masked) v for each head; query head n reads key/value head
    n // (N // K) (grouped-query attention).

    Args:
      query: `[B, T, N, H]` float.
      key, value: `[B, S, K, H]` of query's dtype, with N a multiple of K.
      bias: optional float `[b, n, t, s]` broadcastable to `[B, N, T, S]`, added to the
        scaled logits.
      mask: optional bool `[b, n, t, s]` broadcastable to `[B, N, T, S]`; True = attend.
      q_lens, kv_lens: optional int `[B]`: valid query / key lengths; padded query rows of
        the output are zero.
      scale: the logits' scale (a Python float).
      is_causal: query t attends keys s <= t (JAX's top-left alignment).
      local_window: None or (left, right): query t attends keys in [t - left, t + right].

    Returns:
      (out `[B, T, N, H]` of query's dtype, lse `[B, N, T]` float32 (float64 for float64
      inputs): the log-sum-exp of each row's masked logits).

    >>> from mytorch import lax
    >>> q = np.ones((1, 2, 1, 4), np.float32)
    >>> lax.dot_product_attention(q, q, q, scale=0.5)[0].shape
    (1, 2, 1, 4)
    """
    given = {"bias": bias, "mask": mask, "q_lens": q_lens, "kv_lens": kv_lens}
    optional = tuple(n for n in OPTIONAL_OPERANDS if given[n] is not None)
    window = None if local_window is None else tuple(int(w) for w in local_window)
    args = [asarray(query), asarray(key), asarray(value), *(asarray(given[n]) for n in optional)]
    return tuple(dot_product_attention_p.bind(*args, scale=float(scale),
                                              is_causal=bool(is_causal),
                                              local_window=window, optional=optional))

