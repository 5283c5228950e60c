"""Derivative and batching rules of the structural primitives (defined in structural.py).

Every structural primitive but iota is linear, so its JVP applies it to the tangents and its
transpose moves a cotangent back to the operand's layout:

    broadcast_in_dim  sum over the new dims and the expanded size-1 dims, reshape back
    reshape           reshape back (undoing `dimensions` with a transpose)
    squeeze           reshape back
    transpose         transpose by the inverse permutation
    rev               rev along the same dims
    pad               unpad: pad with the negated low/high (so crops come back as zeros),
                      then slice with stride interior + 1; padding_value gets
                      sum(ct) - sum(operand ct)
    concatenate       a slice for each linear operand
    slice             pad with zeros (interior stride - 1)

Cotangents keep each operand's dtype and weak type. iota has no operands and a zero JVP.
The batching rules (vmap) are at the end, with a table of how each works.
"""

import numpy as np

from mytorch.core.ad_util import zeros_p
from mytorch.core.array import scalar_array
from mytorch.core.jaxpr import JaxprEqn, Literal
from mytorch.core.trace import aval_of
from mytorch.lax import structural as st
from mytorch.lax._ad import defjvp_zero, deflinear, is_undefined
from mytorch.lax._batching import bdim_to, broadcast_batched, not_mapped, shift_dims
from mytorch.lax._utils import weak_scalar
from mytorch.lax.elementwise import convert_element_type_p, select, sub
from mytorch.lax.reductions import reduce_sum
from mytorch.lax.structural import pad, reshape, rev, slice, transpose
from mytorch.transforms.batching import unbatched_aval
from mytorch.transforms.simplify import SplatRule, is_identity, producer, same


def _fit(ct, aval):
    """`ct` with the dtype and weak type of the operand `aval` (its shape already)."""
    a = aval_of(ct)
    if a.dtype == aval.dtype and a.weak_type == aval.weak_type:
        return ct
    return convert_element_type_p.bind(ct, new_dtype=aval.dtype, weak_type=aval.weak_type)


def _total(x):
    """The sum of all the elements of `x` (0-d)."""
    ndim = aval_of(x).ndim
    return reduce_sum(x, tuple(range(ndim))) if ndim else x


# ---- broadcast_in_dim ---------------------------------------------------------------------
def _broadcast_in_dim_transpose(ct, x, *, shape, broadcast_dimensions):
    in_shape = x.aval.shape
    # size-1 operand dims stretched to a larger target dim are summed like the new dims
    kept = {d for n, d in zip(in_shape, broadcast_dimensions, strict=True)
            if n == shape[d]}
    axes = tuple(d for d in range(len(shape)) if d not in kept)
    out = reduce_sum(ct, axes) if axes else ct
    return [_fit(reshape(out, in_shape), x.aval)]


deflinear(st.broadcast_in_dim_p, _broadcast_in_dim_transpose)


# ---- reshape, squeeze ---------------------------------------------------------------------
def _reshape_transpose(ct, x, *, new_sizes, dimensions):
    if dimensions is None:
        return [reshape(ct, x.aval.shape)]
    # reshape(x, sizes, dims) reads transpose(x, dims): undo the reshape, then the transpose
    permuted = reshape(ct, tuple(x.aval.shape[d] for d in dimensions))
    return [transpose(permuted, tuple(int(i) for i in np.argsort(dimensions)))]


deflinear(st.reshape_p, _reshape_transpose)
deflinear(st.squeeze_p, lambda ct, x, *, dimensions: [reshape(ct, x.aval.shape)])


# ---- transpose, rev -----------------------------------------------------------------------
def _transpose_transpose(ct, x, *, permutation):
    return [transpose(ct, tuple(int(i) for i in np.argsort(permutation)))]


deflinear(st.transpose_p, _transpose_transpose)
deflinear(st.rev_p, lambda ct, x, *, dimensions: [rev(ct, dimensions)])


# ---- pad ----------------------------------------------------------------------------------
def _unpad(ct, padding_config):
    """The operand-shaped part of a pad's cotangent: negated low/high padding crops the
    edges (and fills what a negative padding cropped with zeros); a strided slice skips the
    interior padding."""
    unpad_config = tuple((-lo, -hi, 0) for lo, hi, _ in padding_config)
    unpadded = pad(ct, 0, unpad_config)
    shape = aval_of(unpadded).shape
    return slice(unpadded, (0,) * len(shape), shape,
                 tuple(interior + 1 for _, _, interior in padding_config))


def _pad_transpose(ct, x, padding_value, *, padding_config):
    x_aval = x.aval if is_undefined(x) else aval_of(x)
    t_x = _fit(_unpad(ct, padding_config), x_aval)
    t_v = None
    if is_undefined(padding_value):
        # every element of ct that is not the operand's is the padding value's
        t_v = _fit(sub(_total(ct), _total(t_x)), padding_value.aval)
    return [t_x if is_undefined(x) else None, t_v]


deflinear(st.pad_p, _pad_transpose)


# ---- concatenate --------------------------------------------------------------------------
def _concatenate_transpose(ct, *xs, dimension):
    shape = aval_of(ct).shape
    out, start = [], 0
    for x in xs:
        aval = x.aval if is_undefined(x) else aval_of(x)
        size = aval.shape[dimension]
        if is_undefined(x):
            starts = [0] * len(shape)
            limits = list(shape)
            starts[dimension], limits[dimension] = start, start + size
            out.append(_fit(slice(ct, starts, limits), aval))
        else:
            out.append(None)
        start += size
    return out


deflinear(st.concatenate_p, _concatenate_transpose)


# ---- slice --------------------------------------------------------------------------------
def _slice_transpose(ct, x, *, start_indices, limit_indices, strides):
    in_shape = x.aval.shape
    out_shape = aval_of(ct).shape
    strides = (1,) * len(in_shape) if strides is None else strides
    config = []
    for n, s, m, step in zip(in_shape, start_indices, out_shape, strides, strict=True):
        # the last element read sits at s + (m - 1) * step; pad the rest of the dim after it
        end = s + (m - 1) * step + 1 if m else s
        config.append((s, n - end, step - 1))
    return [pad(ct, 0, tuple(config))]


deflinear(st.slice_p, _slice_transpose)


# ---- iota ---------------------------------------------------------------------------------
defjvp_zero(st.iota_p)


# ---- batching -----------------------------------------------------------------------------
# Each rule keeps the operand's batch dimension where it is when the primitive allows it
# (renumbering the dims it names around it), so batching adds no transposes:
#
#     broadcast_in_dim  the batch dim maps to a new target dim placed just after the target
#                       of the operand dim before it
#     reshape           the batch dim read first (folded into `dimensions`), result dim 0
#     squeeze, rev      dims renumbered past the batch dim
#     transpose         the batch dim stays at its position in the permutation
#     slice, pad        a full slice / no padding along the batch dim; a batched
#                       padding_value selects between the zero-padded operand and itself
#     concatenate       every operand batched at the first batched operand's dim
#     iota              has no operands, so it is never batched
def _broadcast_in_dim_batching(axis, args, dims, *, shape, broadcast_dimensions):
    (x,), (d,) = args, dims
    bd = broadcast_dimensions
    out_dim = bd[d - 1] + 1 if d > 0 else 0  # strictly between the neighbours' targets
    new_bd = (*bd[:d], out_dim, *(b + 1 for b in bd[d:]))
    out_shape = (*shape[:out_dim], axis.size, *shape[out_dim:])
    return st.broadcast_in_dim_p.bind(x, shape=out_shape, broadcast_dimensions=new_bd), out_dim


def _reshape_batching(axis, args, dims, *, new_sizes, dimensions):
    (x,), (d,) = args, dims
    order = range(aval_of(x).ndim - 1) if dimensions is None else dimensions
    # read the batch dim first, then the operand's dims in `dimensions` order
    read = (d, *(i + (i >= d) for i in order))
    return reshape(x, (axis.size, *new_sizes), read), 0


def _squeeze_batching(axis, args, dims, *, dimensions):
    (x,), (d,) = args, dims
    out_dim = d - sum(i < d for i in dimensions)
    return st.squeeze_p.bind(x, dimensions=shift_dims(dimensions, d)), out_dim


def _transpose_batching(axis, args, dims, *, permutation):
    (x,), (d,) = args, dims
    perm = [p + (p >= d) for p in permutation]
    perm.insert(d, d)
    return st.transpose_p.bind(x, permutation=tuple(perm)), d


def _rev_batching(axis, args, dims, *, dimensions):
    (x,), (d,) = args, dims
    return st.rev_p.bind(x, dimensions=shift_dims(dimensions, d)), d


def _insert(params, dim, value):
    """Per-dim `params` with `value` for a batch dim inserted at `dim`."""
    return (*params[:dim], value, *params[dim:])


def _slice_batching(axis, args, dims, *, start_indices, limit_indices, strides):
    (x,), (d,) = args, dims
    strides = None if strides is None else _insert(strides, d, 1)
    out = st.slice_p.bind(x, start_indices=_insert(start_indices, d, 0),
                          limit_indices=_insert(limit_indices, d, axis.size), strides=strides)
    return out, d


def _pad_batching(axis, args, dims, *, padding_config):
    (x, value), (x_dim, value_dim) = args, dims
    if value_dim is not_mapped:
        config = _insert(padding_config, x_dim, (0, 0, 0))
        return st.pad_p.bind(x, value, padding_config=config), x_dim
    # a per-example padding value: pad with zeros, then put each example's value wherever
    # the padding (not the operand) lands, found by padding a mask of the operand's shape
    x_aval = unbatched_aval(x, x_dim)
    inside = pad(st.full(x_aval.shape, True, np.bool_), False, padding_config)
    out_dim = 0 if x_dim is not_mapped else x_dim
    zero = weak_scalar(0, x_aval.dtype)  # weak: the result is weak when x and value are
    if x_dim is not_mapped:
        padded = broadcast_batched(pad(x, zero, padding_config), axis.size)
    else:
        padded = st.pad_p.bind(x, zero, padding_config=_insert(padding_config, x_dim, (0, 0, 0)))
    shape = aval_of(padded).shape
    values = st.broadcast_in_dim(value, shape, (out_dim,))
    return select(broadcast_batched(inside, axis.size, out_dim), padded, values), out_dim


def _concatenate_batching(axis, args, dims, *, dimension):
    target = next(d for d in dims if d is not not_mapped)
    xs = [bdim_to(x, d, target, axis.size) for x, d in zip(args, dims, strict=True)]
    return st.concatenate_p.bind(*xs, dimension=dimension + (dimension >= target)), target


def _iota_batching(axis, args, dims, **params):
    return st.iota_p.bind(**params), not_mapped


st.broadcast_in_dim_p.def_batching(_broadcast_in_dim_batching)
st.reshape_p.def_batching(_reshape_batching)
st.squeeze_p.def_batching(_squeeze_batching)
st.transpose_p.def_batching(_transpose_batching)
st.rev_p.def_batching(_rev_batching)
st.slice_p.def_batching(_slice_batching)
st.pad_p.def_batching(_pad_batching)
st.concatenate_p.def_batching(_concatenate_batching)
st.iota_p.def_batching(_iota_batching)


# ---- simplification and splats (read by mytorch.transforms.simplify and .fold) -------------
def _transpose_simplify(eqn, defs):
    """transpose(transpose(x, p), q) -> transpose(x, p o q); the identity -> x."""
    (x,), perm = eqn.invars, eqn.params["permutation"]
    inner = producer(x, defs, st.transpose_p)
    if inner is not None:
        first = inner.params["permutation"]
        x, perm = inner.invars[0], tuple(first[p] for p in perm)
    if is_identity(perm):
        return same(eqn, x)
    if inner is not None:
        return eqn.replace(invars=[x], params=dict(eqn.params, permutation=perm))
    return None


def _reshape_simplify(eqn, defs):
    """reshape(reshape(x, s), t) -> reshape(x, t); to x's own shape -> x."""
    (x,), dims = eqn.invars, eqn.params["dimensions"]
    if dims is not None and is_identity(dims):
        return eqn.replace(params=dict(eqn.params, dimensions=None))
    inner = producer(x, defs, st.reshape_p) if dims is None else None
    if inner is not None:
        x, dims = inner.invars[0], inner.params["dimensions"]
    if dims is None and x.aval.shape == eqn.params["new_sizes"]:
        return same(eqn, x)
    if inner is not None:
        return eqn.replace(invars=[x], params=dict(eqn.params, dimensions=dims))
    return None


def _broadcast_in_dim_simplify(eqn, defs):
    """A broadcast of a broadcast -> one broadcast; to x's own shape -> x."""
    (x,), shape = eqn.invars, eqn.params["shape"]
    if x.aval.shape == shape:  # increasing dims of an equal rank: the identity
        return same(eqn, x)
    inner = producer(x, defs, st.broadcast_in_dim_p)
    if inner is None:
        return None
    outer_dims = eqn.params["broadcast_dimensions"]
    dims = tuple(outer_dims[d] for d in inner.params["broadcast_dimensions"])
    return eqn.replace(invars=inner.invars, params=dict(eqn.params, broadcast_dimensions=dims))


def _unchanged_if(test):
    """A "simplify" rule replacing the result by the first operand when `test(eqn)`."""
    return lambda eqn, defs: same(eqn, eqn.invars[0]) if test(eqn) else None


def _whole_slice(eqn):
    p, x = eqn.params, eqn.invars[0]
    return (not any(p["start_indices"]) and p["limit_indices"] == x.aval.shape
            and (p["strides"] is None or all(s == 1 for s in p["strides"])))


st.transpose_p.def_rule("simplify", _transpose_simplify)
st.reshape_p.def_rule("simplify", _reshape_simplify)
st.broadcast_in_dim_p.def_rule("simplify", _broadcast_in_dim_simplify)
st.squeeze_p.def_rule("simplify", _unchanged_if(lambda eqn: not eqn.params["dimensions"]))
st.rev_p.def_rule("simplify", _unchanged_if(lambda eqn: not eqn.params["dimensions"]))
st.slice_p.def_rule("simplify", _unchanged_if(_whole_slice))
st.pad_p.def_rule("simplify", _unchanged_if(
    lambda eqn: not any(any(c) for c in eqn.params["padding_config"])))
st.concatenate_p.def_rule("simplify", _unchanged_if(lambda eqn: len(eqn.invars) == 1))


def _make_splat(lit, out, source_info):
    """`out` = `lit` broadcast to out's shape."""
    params = {"shape": out.aval.shape, "broadcast_dimensions": ()}
    return JaxprEqn(st.broadcast_in_dim_p, [lit], params, [out], source_info)


def _broadcast_scalar(eqn):
    x = eqn.invars[0]
    return x if type(x) is Literal else None


def _zeros_scalar(eqn):
    aval = eqn.outvars[0].aval.update(shape=())
    make = weak_scalar if aval.weak_type else scalar_array
    try:
        return Literal(make(0, aval.dtype), aval)
    except (TypeError, ValueError):  # a dtype without a 0-d zero
        return None


st.broadcast_in_dim_p.def_rule("splat", SplatRule(_broadcast_scalar, _make_splat))
zeros_p.def_rule("splat", SplatRule(_zeros_scalar, _make_splat))
