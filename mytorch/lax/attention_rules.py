"""Derivative and batching rules of the attention primitives (defined in attention.py).

Reverse mode is linearize + transpose, which gives a flash-attention backward pass:

- the JVP of `dot_product_attention` is `dot_product_attention_tangent` (linear in the
  tangents of q, k, v and bias; the lse output is a residual with a zero tangent);
- the transpose of the tangent primitive is `dot_product_attention_bwd` (the blockwise
  backward pass, linear in the output cotangent), and the transpose of that is the
  tangent primitive again.

Second derivatives: the tangent and backward primitives are linear in their tangent /
cotangent operand, and their derivative with respect to the other operands is the JVP of a
reference composite written with lax operations (`reference_attention` and
`reference_attention_bwd`; they hold the whole score matrix, so only higher-order
derivatives pay O(T·S) memory). The composites recompute the softmax from q, k, v and bias
instead of reading the residuals out and lse, so their JVP is the total derivative.

Batching folds the vmapped axis into the batch dim B (the operands all lead with B, or with
1 or B for bias and mask).
"""

import numpy as np

from mytorch.core.ad_util import Zero, is_undefined
from mytorch.core.trace import aval_of
from mytorch.lax import attention as at
from mytorch.lax import elementwise as ew
from mytorch.lax import reductions as red
from mytorch.lax import structural as st
from mytorch.lax._batching import moveaxis, not_mapped
from mytorch.lax.dot import dot_general
from mytorch.transforms.jvp import jvp_flat

__all__ = ["reference_attention", "reference_attention_bwd"]

MASKED = -0.7 * float(np.finfo(np.float32).max)


# ---- reference composites (lax operations, O(T·S) memory) --------------------------------
def _acc(x, dtype):
    return x if aval_of(x).dtype == dtype else ew.convert_element_type(x, dtype)


def _keep(ops, shape, is_causal, local_window):
    """The attended positions as bool [B, K, G, T, S], or None when nothing is masked."""
    rows = st.broadcasted_iota(np.int32, shape, 3)
    cols = st.broadcasted_iota(np.int32, shape, 4)
    keep = []
    if "mask" in ops:
        keep.append(_grouped(ops["mask"], shape))
    if is_causal:
        keep.append(ew.le(cols, rows))
    if local_window is not None:
        left, right = local_window
        keep.append(ew.le(rows, ew.add(cols, st.full(shape, left, np.int32))))
        keep.append(ew.ge(rows, ew.sub(cols, st.full(shape, right, np.int32))))
    for name, pos in (("kv_lens", cols), ("q_lens", rows)):
        if name in ops:
            lens = st.broadcast_in_dim(_acc(ops[name], np.int32), shape, (0,))
            keep.append(ew.lt(pos, lens))
    if not keep:
        return None
    out = keep[0]
    for k in keep[1:]:
        out = ew.bitwise_and(out, k)
    return out


def _grouped(x, shape):
    """bias/mask [b, n, t, s] broadcast to [B, K, G, T, S]."""
    _, K, G, _, _ = shape
    b, n, t, s = aval_of(x).shape
    if n == K * G and n > 1:
        x = st.reshape(x, (b, K, G, t, s))
        dims = (0, 1, 2, 3, 4)
    else:
        x = st.reshape(x, (b, t, s))
        dims = (0, 3, 4)
    return st.broadcast_in_dim(x, shape, dims)


def _split_heads(ops, dtype):
    """q as [B, K, G, T, H]; k and v as [B, K, S, H]; all in `dtype`."""
    B, T, N, H = aval_of(ops["q"]).shape
    K = aval_of(ops["k"]).shape[2]
    q = st.transpose(st.reshape(_acc(ops["q"], dtype), (B, T, K, N // K, H)), (0, 2, 3, 1, 4))
    k = st.transpose(_acc(ops["k"], dtype), (0, 2, 1, 3))
    v = st.transpose(_acc(ops["v"], dtype), (0, 2, 1, 3))
    return q, k, v


def _probs(ops, q, k, scale, is_causal, local_window):
    """(softmax probabilities [B, K, G, T, S], keep mask or None)."""
    s = dot_general(q, k, (((4,), (3,)), ((0, 1), (0, 1))))
    shape = aval_of(s).shape
    dtype = aval_of(s).dtype
    s = ew.mul(s, st.full(shape, scale, dtype))
    if "bias" in ops:
        s = ew.add(s, _grouped(_acc(ops["bias"], dtype), shape))
    keep = _keep(ops, shape, is_causal, local_window)
    if keep is not None:
        s = ew.select_n(keep, st.full(shape, MASKED, dtype), s)
    top = st.broadcast_in_dim(red.reduce_max(s, (4,)), shape, (0, 1, 2, 3))
    e = ew.exp(ew.sub(s, ew.stop_gradient(top)))
    total = st.broadcast_in_dim(red.reduce_sum(e, (4,)), shape, (0, 1, 2, 3))
    return ew.div(e, total), keep


def _q_layout(x, ops, dtype):
    """[B, K, G, T, H] -> [B, T, N, H] of `dtype`, padded query rows zeroed."""
    B, K, G, T, H = aval_of(x).shape
    x = st.reshape(st.transpose(x, (0, 3, 1, 2, 4)), (B, T, K * G, H))
    if "q_lens" in ops:
        valid = ew.lt(st.broadcasted_iota(np.int32, (B, T, K * G, H), 1),
                      st.broadcast_in_dim(_acc(ops["q_lens"], np.int32), (B, T, K * G, H),
                                          (0,)))
        x = ew.select_n(valid, st.full(aval_of(x).shape, 0, aval_of(x).dtype), x)
    return _acc(x, dtype)


def reference_attention(ops, *, scale, is_causal, local_window):
    """The attention output [B, T, N, H] from the operands {name: array}, as lax ops."""
    dtype = aval_of(ops["q"]).dtype
    acc = np.float64 if dtype == np.float64 else np.float32
    q, k, v = _split_heads(ops, acc)
    p, _ = _probs(ops, q, k, scale, is_causal, local_window)
    out = dot_general(p, v, (((4,), (2,)), ((0, 1), (0, 1))))
    return _q_layout(out, ops, dtype)


def reference_attention_bwd(ops, ct, wrt, *, scale, is_causal, local_window):
    """The cotangents of the operands named in `wrt` from the output cotangent `ct`."""
    dtype = aval_of(ops["q"]).dtype
    acc = np.float64 if dtype == np.float64 else np.float32
    q, k, v = _split_heads(ops, acc)
    p, keep = _probs(ops, q, k, scale, is_causal, local_window)
    shape = aval_of(p).shape
    B, K, G, T, _ = shape
    H = aval_of(ct).shape[-1]
    c = st.transpose(st.reshape(_q_layout_in(ct, ops, acc), (B, T, K, G, H)), (0, 2, 3, 1, 4))
    dp = dot_general(c, v, (((4,), (3,)), ((0, 1), (0, 1))))
    mean = st.broadcast_in_dim(red.reduce_sum(ew.mul(p, dp), (4,)), shape, (0, 1, 2, 3))
    ds = ew.mul(p, ew.sub(dp, mean))
    if keep is not None:
        ds = ew.select_n(keep, st.full(shape, 0, acc), ds)
    grads = {}
    if "q" in wrt:
        dq = dot_general(ds, k, (((4,), (2,)), ((0, 1), (0, 1))))
        grads["q"] = _q_layout(ew.mul(dq, st.full(aval_of(dq).shape, scale, acc)), {}, dtype)
    if "k" in wrt:  # [B, K, S, H], summed over the group
        dk = dot_general(ds, q, (((2, 3), (2, 3)), ((0, 1), (0, 1))))
        dk = ew.mul(dk, st.full(aval_of(dk).shape, scale, acc))
        grads["k"] = _acc(st.transpose(dk, (0, 2, 1, 3)), dtype)
    if "v" in wrt:
        dv = dot_general(p, c, (((2, 3), (2, 3)), ((0, 1), (0, 1))))
        grads["v"] = _acc(st.transpose(dv, (0, 2, 1, 3)), dtype)
    if "bias" in wrt:
        grads["bias"] = _sum_to_bias(ds, aval_of(ops["bias"]))
    return [grads[name] for name in wrt]


def _q_layout_in(ct, ops, acc):
    """The output cotangent [B, T, N, H] in `acc`, padded query rows zeroed."""
    B, T, N, H = aval_of(ct).shape
    if "q_lens" in ops:
        valid = ew.lt(st.broadcasted_iota(np.int32, (B, T, N, H), 1),
                      st.broadcast_in_dim(_acc(ops["q_lens"], np.int32), (B, T, N, H), (0,)))
        ct = ew.select_n(valid, st.full((B, T, N, H), 0, aval_of(ct).dtype), ct)
    return _acc(ct, acc)


def _sum_to_bias(ds, bias):
    b, n, t, s = bias.shape
    axes = tuple(i for i, kept in enumerate((b > 1, n > 1, n > 1, t > 1, s > 1)) if not kept)
    out = red.reduce_sum(ds, axes) if axes else ds
    return _acc(st.reshape(out, bias.shape), bias.dtype)


# ---- JVP and transpose ---------------------------------------------------------------------
def _static(params):
    return {k: params[k] for k in ("scale", "is_causal", "local_window")}


def _attention_jvp(primals, tangents, **params):
    out, lse = at.dot_product_attention_p.bind(*primals, **params)
    dots, _ = at.split_operands(tangents, params["optional"])
    names = tuple(n for n in at.DIFFERENTIABLE_OPERANDS
                  if n in dots and type(dots[n]) is not Zero)
    if not names:
        return [out, lse], [Zero(aval_of(out)), Zero(aval_of(lse))]
    dout = at.dot_product_attention_tangent_p.bind(*primals, out, lse,
                                                   *(dots[n] for n in names), tangents=names,
                                                   **params)
    return [out, lse], [dout, Zero(aval_of(lse))]


def _tangent_jvp_rule(primals, dots_in, **params):
    names = params["tangents"]
    static = {k: v for k, v in params.items() if k != "tangents"}
    y = at.dot_product_attention_tangent_p.bind(*primals, **params)
    n_primal = len(primals) - len(names)
    if all(type(t) is Zero for t in dots_in[:n_primal]):  # linear in the tangent operands
        live = [(n, t) for n, t in zip(names, dots_in[n_primal:], strict=True)
                if type(t) is not Zero]
        if not live:
            return y, Zero(aval_of(y))
        y_dot = at.dot_product_attention_tangent_p.bind(
            *primals[:n_primal], *(t for _, t in live), tangents=tuple(n for n, _ in live),
            **static)
        return y, y_dot

    def composite(*args):
        ops, _ = at.split_operands(args[:n_primal], static["optional"])
        dots = dict(zip(names, args[n_primal:], strict=True))
        keys = list(ops)
        _, (out_dot,) = jvp_flat(
            lambda *xs: [reference_attention(dict(zip(keys, xs, strict=True)),
                                             **_static(static))],
            [ops[n] for n in keys], [dots.get(n, Zero(aval_of(ops[n]))) for n in keys])
        return [out_dot]

    _, (y_dot,) = jvp_flat(composite, list(primals), list(dots_in))
    return y, y_dot


def _bwd_jvp_rule(primals, dots_in, **params):
    wrt = params["wrt"]
    static = {k: v for k, v in params.items() if k != "wrt"}
    ys = at.dot_product_attention_bwd_p.bind(*primals, **params)
    if all(type(t) is Zero for t in dots_in[:-1]):  # linear in the cotangent
        if type(dots_in[-1]) is Zero:
            return ys, [Zero(aval_of(y)) for y in ys]
        return ys, at.dot_product_attention_bwd_p.bind(*primals[:-1], dots_in[-1], **params)

    def composite(*args):
        ops, (_, _, ct) = at.split_operands(args, static["optional"])
        return reference_attention_bwd(ops, ct, wrt, **_static(static))

    _, y_dots = jvp_flat(composite, list(primals), list(dots_in))
    return ys, y_dots


def _tangent_transpose(ct, *args, tangents, **params):
    n_primal = len(args) - len(tangents)
    lin = args[n_primal:]
    if isinstance(ct, Zero):
        return [None] * n_primal + [Zero(x.aval) for x in lin]
    wrt = tuple(n for n, x in zip(tangents, lin, strict=True) if is_undefined(x))
    grads = iter(at.dot_product_attention_bwd_p.bind(*args[:n_primal], ct, wrt=wrt, **params)
                 if wrt else [])
    return [None] * n_primal + [next(grads) if is_undefined(x) else None for x in lin]


def _bwd_transpose(cts, *args, wrt, **params):
    *primal, ct_in = args
    live = [(n, c) for n, c in zip(wrt, cts, strict=True) if type(c) is not Zero]
    if not live:
        return [None] * len(primal) + [Zero(ct_in.aval)]
    y = at.dot_product_attention_tangent_p.bind(*primal, *(c for _, c in live),
                                                tangents=tuple(n for n, _ in live), **params)
    return [None] * len(primal) + [y]


at.dot_product_attention_p.def_jvp(_attention_jvp)
at.dot_product_attention_tangent_p.def_jvp(_tangent_jvp_rule)
at.dot_product_attention_bwd_p.def_jvp(_bwd_jvp_rule)
at.dot_product_attention_tangent_p.def_transpose(_tangent_transpose)
at.dot_product_attention_bwd_p.def_transpose(_bwd_transpose)


# ---- batching ------------------------------------------------------------------------------
# every operand leads with the batch dim B ("batch"), or with 1 or B ("bias": bias, mask and
# the bias tangent, which broadcast over B)
def _roles(optional, tail):
    head = ["batch"] * 3 + ["bias" if n in ("bias", "mask") else "batch" for n in optional]
    return head + list(tail)


def _example_shape(x, dim):
    shape = aval_of(x).shape
    return shape if dim is not_mapped else shape[:dim] + shape[dim + 1:]


def _fold(x, dim, role, size, batch, keep_unmapped):
    """`x` with the vmapped axis (of `size`) folded into its leading dim (-> size·B)."""
    aval = aval_of(x)
    if dim is not_mapped:
        if role == "bias" and aval.shape[0] == 1 and keep_unmapped:
            return x  # broadcasts over the folded batch as it did over B
        x = st.broadcast_in_dim(x, (size, *aval.shape), tuple(range(1, aval.ndim + 1)))
    else:
        x = moveaxis(x, dim, 0)
    shape = aval_of(x).shape
    if role == "bias" and shape[1] == 1 and batch > 1:
        x = st.broadcast_in_dim(x, (size, batch, *shape[2:]), tuple(range(len(shape))))
        shape = aval_of(x).shape
    return st.reshape(x, (size * shape[1], *shape[2:]))


def _unfold(y, size):
    shape = aval_of(y).shape
    return st.reshape(y, (size, shape[0] // size, *shape[1:]))


def _batch_args(axis, args, dims, roles, keep_unmapped=True):
    batch = _example_shape(args[0], dims[0])[0]
    return [_fold(x, d, role, axis.size, batch, keep_unmapped)
            for x, d, role in zip(args, dims, roles, strict=True)]


def _attention_batching(axis, args, dims, **params):
    roles = _roles(params["optional"], ())
    out, lse = at.dot_product_attention_p.bind(*_batch_args(axis, args, dims, roles), **params)
    return [_unfold(out, axis.size), _unfold(lse, axis.size)], [0, 0]


def _tangent_batching(axis, args, dims, **params):
    tail = ["batch", "batch"] + ["bias" if n == "bias" else "batch" for n in params["tangents"]]
    roles = _roles(params["optional"], tail)
    y = at.dot_product_attention_tangent_p.bind(*_batch_args(axis, args, dims, roles), **params)
    return _unfold(y, axis.size), 0


def _bwd_batching(axis, args, dims, **params):
    """A bias cotangent is per example: the bias is folded like the other operands (never
    left to broadcast over the folded batch), and summed back when it broadcast over B."""
    wrt = params["wrt"]
    roles = _roles(params["optional"], ["batch"] * 3)
    folded = _batch_args(axis, args, dims, roles, keep_unmapped="bias" not in wrt)
    ys = at.dot_product_attention_bwd_p.bind(*folded, **params)
    outs = [_unfold(y, axis.size) for y in ys]
    if "bias" in wrt:
        i = wrt.index("bias")
        if _example_shape(args[3], dims[3])[0] == 1 and aval_of(outs[i]).shape[1] != 1:
            outs[i] = st.expand_dims(red.reduce_sum(outs[i], (1,)), (1,))
    return outs, [0] * len(outs)


at.dot_product_attention_p.def_batching(_attention_batching)
at.dot_product_attention_tangent_p.def_batching(_tangent_batching)
at.dot_product_attention_bwd_p.def_batching(_bwd_batching)
