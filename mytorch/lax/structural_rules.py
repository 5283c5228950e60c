"""Derivative rules of the structural primitives (defined in structural.py).

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
"""

import numpy as np

from mytorch.core.trace import aval_of
from mytorch.lax import structural as st
from mytorch.lax._ad import defjvp_zero, deflinear, is_undefined
from mytorch.lax.elementwise import convert_element_type_p, sub
from mytorch.lax.reductions import reduce_sum
from mytorch.lax.structural import pad, reshape, rev, slice, transpose


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
