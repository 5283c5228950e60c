"""GPU eager kernels of the structural primitives (mytorch/lax/structural.py) and of the
interpreters' own `zeros`, `add_any` and `name`.

They mirror backends/numpy/structural.py: every kernel returns a fresh C-ordered buffer,
never a view of an operand (compiled code may later update a dead or donated buffer in
place). Written for any array module: CuPy on a GPU, NumPy in the tests.
"""

import numpy as np

from mytorch.backends.cupy.kernels import register, xp_of
from mytorch.backends.cupy.kernels_common import BF16, F32, creation_module
from mytorch.checkpoint import name_p
from mytorch.core.ad_util import add_any_p, zeros_p
from mytorch.lax import elementwise as ew
from mytorch.lax import structural as s


@register(s.broadcast_in_dim_p)
def _broadcast_in_dim(x, *, shape, broadcast_dimensions):
    xp = xp_of(x)
    expanded = [1] * len(shape)
    for i, d in enumerate(broadcast_dimensions):
        expanded[d] = x.shape[i]
    return xp.broadcast_to(x.reshape(expanded), shape).copy()


@register(s.reshape_p)
def _reshape(x, *, new_sizes, dimensions):
    xp = xp_of(x)
    if dimensions is not None:
        x = xp.transpose(x, dimensions)
    return xp.reshape(x, new_sizes).copy()


@register(s.squeeze_p)
def _squeeze(x, *, dimensions):
    return xp_of(x).squeeze(x, axis=dimensions).copy()


@register(s.transpose_p)
def _transpose(x, *, permutation):
    return xp_of(x).transpose(x, permutation).copy()


@register(s.rev_p)
def _rev(x, *, dimensions):
    return xp_of(x).flip(x, axis=dimensions).copy() if dimensions else x.copy()


@register(s.pad_p)
def _pad(x, padding_value, *, padding_config):
    xp = xp_of(x, padding_value)
    # interior padding and non-negative edges first, then crop the negative edges
    full_shape, place, crop = [], [], []
    for n, (lo, hi, interior) in zip(x.shape, padding_config, strict=True):
        lo_p, hi_p = max(lo, 0), max(hi, 0)
        inner = n + max(n - 1, 0) * interior
        full_shape.append(lo_p + inner + hi_p)
        place.append(slice(lo_p, lo_p + inner, interior + 1))
        crop.append(slice(max(-lo, 0), lo_p + inner + hi_p - max(-hi, 0)))
    out = xp.empty(full_shape, dtype=x.dtype)
    out[...] = padding_value  # a 0-d buffer: stays on the device
    out[tuple(place)] = x
    return out[tuple(crop)].copy()


@register(s.concatenate_p)
def _concatenate(*xs, dimension):
    return xp_of(*xs).concatenate(xs, axis=dimension)


@register(s.slice_p)
def _slice(x, *, start_indices, limit_indices, strides):
    strides = strides or (1,) * x.ndim
    index = tuple(slice(a, b, c) for a, b, c in zip(start_indices, limit_indices, strides,
                                                    strict=True))
    return x[index].copy()


@register(s.iota_p)
def _iota(*, dtype, shape, dimension):
    xp = creation_module()
    expanded = [1] * len(shape)
    expanded[dimension] = shape[dimension]
    values = xp.arange(shape[dimension], dtype=np.int64).astype(dtype).reshape(expanded)
    return xp.broadcast_to(values, shape).copy()


@register(zeros_p)
def _zeros(*, shape, dtype, weak_type):
    return creation_module().zeros(shape, dtype)


@register(add_any_p)
def _add_any(x, y):
    xp = xp_of(x, y)
    with np.errstate(all="ignore"):  # (NumPy's flag; CuPy never warns)
        if x.dtype == BF16:  # ml_dtypes adds in float32 and rounds once: the same here
            return (x.astype(F32) + y.astype(F32)).astype(BF16)
        return xp.add(x, y)


@register(name_p)
def _name(x, *, name):
    return x.copy()  # a copy, as on the CPU: compiled code may recycle the operand


@register(ew.bitcast_convert_type_p)
def _bitcast(x, *, new_dtype):
    """The bits of `x` as `new_dtype`: a copy of the contiguous buffer viewed as
    `new_dtype` (results never share an operand's buffer), with a trailing axis of the
    width ratio added (narrower dtype) or removed (wider), as the NumPy kernel. Every width
    change and dtype works, complex128 included."""
    xp = xp_of(x)
    new_dtype = np.dtype(new_dtype)
    view = xp.array(x, order="C", copy=True).view(new_dtype)
    if new_dtype.itemsize < x.dtype.itemsize:
        return view.reshape(*x.shape, x.dtype.itemsize // new_dtype.itemsize)
    if new_dtype.itemsize > x.dtype.itemsize:
        return view.reshape(x.shape[:-1])
    return view.reshape(x.shape)
