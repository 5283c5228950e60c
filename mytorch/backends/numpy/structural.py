"""NumPy kernels of the structural primitives (mytorch/lax/structural.py).

Every kernel returns a fresh buffer, never a view of an input: buffers may later be
updated in place when they are dead or donated, which must not change another array.

All but reshape's are written for any array module (`xp`, NumPy by default): the GPU backend
registers them with CuPy's (backends/cupy/kernels_structural.py).
"""

import numpy as np

from mytorch.backends.numpy import numpy_backend
from mytorch.lax import structural as s


@numpy_backend.register(s.broadcast_in_dim_p)
def _broadcast_in_dim(x, *, shape, broadcast_dimensions, xp=np):
    expanded = [1] * len(shape)
    for i, d in enumerate(broadcast_dimensions):
        expanded[d] = x.shape[i]
    return xp.broadcast_to(x.reshape(expanded), shape).copy()


@numpy_backend.register(s.reshape_p)
def _reshape(x, *, new_sizes, dimensions):
    if dimensions is not None:
        x = np.transpose(x, dimensions)
    return np.array(np.reshape(x, new_sizes), copy=True)


@numpy_backend.register(s.squeeze_p)
def _squeeze(x, *, dimensions, xp=np):
    return xp.squeeze(x, axis=dimensions).copy()


@numpy_backend.register(s.transpose_p)
def _transpose(x, *, permutation, xp=np):
    return xp.transpose(x, permutation).copy()  # C order (ascontiguousarray makes 0-d 1-d)


@numpy_backend.register(s.rev_p)
def _rev(x, *, dimensions, xp=np):
    return xp.flip(x, axis=dimensions).copy() if dimensions else x.copy()


@numpy_backend.register(s.pad_p)
def _pad(x, padding_value, *, padding_config, xp=np):
    # interior padding and non-negative edges first, then crop the negative edges
    full_shape, place, crop = [], [], []
    for n, (lo, hi, interior) in zip(x.shape, padding_config, strict=True):
        lo_p, hi_p = max(lo, 0), max(hi, 0)
        inner = n + max(n - 1, 0) * interior
        full_shape.append(lo_p + inner + hi_p)
        place.append(slice(lo_p, lo_p + inner, interior + 1))
        crop.append(slice(max(-lo, 0), lo_p + inner + hi_p - max(-hi, 0)))
    out = xp.empty(full_shape, dtype=x.dtype)
    out[...] = padding_value  # (np.full's unsafe cast; a 0-d device buffer stays there)
    out[tuple(place)] = x
    return out[tuple(crop)].copy()


@numpy_backend.register(s.concatenate_p)
def _concatenate(*xs, dimension, xp=np):
    return xp.concatenate(xs, axis=dimension)


@numpy_backend.register(s.slice_p)
def _slice(x, *, start_indices, limit_indices, strides):
    strides = strides or (1,) * x.ndim
    index = tuple(slice(a, b, c) for a, b, c in zip(start_indices, limit_indices, strides,
                                                    strict=True))
    return x[index].copy()


@numpy_backend.register(s.iota_p)
def _iota(*, dtype, shape, dimension, xp=np):
    expanded = [1] * len(shape)
    expanded[dimension] = shape[dimension]
    values = xp.arange(shape[dimension], dtype=np.int64).astype(dtype).reshape(expanded)
    return xp.broadcast_to(values, shape).copy()
