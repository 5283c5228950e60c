"""NumPy kernels of conv_general_dilated and reduce_window_{sum,max,min}.

Convolution is im2col + one batched matmul: the operands are viewed as (N, C, spatial...)
and (O, I, spatial...); input dilation and padding are applied in one strided assignment
into a zero buffer (negative padding crops); `sliding_window_view`, sliced by the strides and
the kernel dilation, gives every patch without a copy; the patches of all feature or batch
groups are gathered into one (groups, N * out_positions, I * taps) array and contracted with
the kernel by one `np.matmul` (BLAS for float32/float64; see dot.matmul for the other dtypes).
The kernels are written for any array module (`xp=`, NumPy by default); the GPU backend
registers them with CuPy's and its own matmul (backends/cupy/kernels_convolution.py).

reduce_window pads (and base-dilates) with the reduction's identity, then combines the
window taps: for windows of up to _MAX_TAPS taps, one strided view per tap accumulated in
place (much faster than reducing a sliding-window view over non-contiguous axes); for larger
windows, one ufunc reduction over the sliding-window view.
"""

import importlib
import itertools
import math

import ml_dtypes
import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from mytorch.backends.numpy import numpy_backend
from mytorch.backends.numpy.dot import matmul
from mytorch.lax.convolution import (
    conv_general_dilated_p,
    reduce_window_max_p,
    reduce_window_min_p,
    reduce_window_sum_p,
)

_BF16 = np.dtype(ml_dtypes.bfloat16)
_F16, _F32 = np.dtype(np.float16), np.dtype(np.float32)
_MAX_TAPS = 64


def _dilate(n, r):
    return 0 if n == 0 else (n - 1) * r + 1


def pad_dilate(x, axes, padding, dilation, fill, xp=np):
    """`x` with `dilation - 1` holes between elements along `axes`, padded by (low, high)
    pairs (negative crops); holes and padding hold `fill`. One allocation at most (of the
    array module `xp`)."""
    if all(lo == hi == 0 for lo, hi in padding) and all(r == 1 for r in dilation):
        return x
    shape, src, dst = list(x.shape), [slice(None)] * x.ndim, [slice(None)] * x.ndim
    for ax, (lo, hi), r in zip(axes, padding, dilation, strict=True):
        n = x.shape[ax]
        size = _dilate(n, r) + lo + hi
        shape[ax] = size
        # element j of x lands at j * r + lo; keep those inside [0, size)
        j0, j1 = max(0, -(lo // r)), min(n, -((lo - size) // r))
        if j1 <= j0:
            src[ax] = dst[ax] = slice(0, 0)
        else:
            src[ax] = slice(j0, j1)
            dst[ax] = slice(j0 * r + lo, (j1 - 1) * r + lo + 1, r)
    out = xp.full(shape, fill, dtype=x.dtype)
    out[tuple(dst)] = x[tuple(src)]
    return out


def _out_sizes(x, axes, window, strides, window_dilation):
    return [max(0, (x.shape[ax] - _dilate(w, r)) // s + 1)
            for ax, w, s, r in zip(axes, window, strides, window_dilation, strict=True)]


def windows(x, axes, window, strides, window_dilation, xp=np):
    """A view of `x` with each of `axes` indexing window positions (moved by `strides`) and
    one trailing axis per window dim (taps `window_dilation` apart); `xp` is `x`'s array
    module (CuPy's `sliding_window_view` is an `as_strided` view too)."""
    dilated = [_dilate(w, r) for w, r in zip(window, window_dilation, strict=True)]
    sliding = sliding_window_view if xp is np else importlib.import_module(
        xp.__name__ + ".lib.stride_tricks").sliding_window_view
    view = sliding(x, dilated, axis=axes)
    index = [slice(None)] * x.ndim
    for ax, s in zip(axes, strides, strict=True):
        index[ax] = slice(None, None, s)
    index += [slice(None, None, r) for r in window_dilation]
    return view[tuple(index)]


# ---- convolution -------------------------------------------------------------------------
def _compute_dtype(xp, x, out_dtype, keeps_half):
    """Half-precision floats are convolved in float32 (cast once, before im2col), unless
    `keeps_half(xp, dtype)` says the matmul accumulates half operands of the result's dtype
    in float32 itself; integers and bools with a float result in that float type."""
    if x.dtype in (_F16, _BF16) and not (keeps_half is not None and x.dtype == out_dtype
                                         and keeps_half(xp, out_dtype)):
        return x.astype(_F32 if out_dtype != np.float64 else out_dtype)
    if out_dtype.kind == "f" and x.dtype.kind in "iub":
        return x.astype(_F32 if out_dtype != np.float64 else out_dtype)
    return x


def _layout_shape(canonical_shape, out_spec):
    shape = [0] * len(out_spec)
    for d, size in zip(out_spec, canonical_shape, strict=True):
        shape[d] = size
    return tuple(shape)


def conv_general_dilated_with(matmul, keeps_half=None):
    """The conv_general_dilated kernel (for any array module: `xp=`, NumPy by default) whose
    GEMM is `matmul(a, b, out_dtype)` of (groups, M, K) and (groups, K, N) operands: dot.py's
    on the CPU, backends/cupy/kernels_dot.py's on a GPU. `keeps_half(xp, dtype)`: whether
    that matmul takes float16/bfloat16 operands of the result's dtype as they are (it
    accumulates in float32); None: they are cast to float32 first."""

    def conv_general_dilated(lhs, rhs, *, window_strides, padding, lhs_dilation,
                             rhs_dilation, dimension_numbers, feature_group_count,
                             batch_group_count, precision, preferred_element_type, xp=np):
        out_dtype = np.dtype(lhs.dtype if preferred_element_type is None
                             else preferred_element_type)
        lhs_spec, rhs_spec, out_spec = dimension_numbers
        x = _compute_dtype(xp, lhs.transpose(lhs_spec), out_dtype, keeps_half)  # (N, C, ..)
        w = _compute_dtype(xp, rhs.transpose(rhs_spec), out_dtype, keeps_half)  # (O, I, ..)
        nsp = x.ndim - 2
        axes = tuple(range(2, 2 + nsp))
        g, b = feature_group_count, batch_group_count
        groups = g * b  # at most one of them exceeds 1
        n, (o, i), kernel = x.shape[0], w.shape[:2], w.shape[2:]
        nb, og = n // b, o // groups
        x = pad_dilate(x, axes, padding, lhs_dilation, 0, xp)
        out_sp = _out_sizes(x, axes, kernel, window_strides, rhs_dilation)
        out_shape = _layout_shape((nb, o, *out_sp), out_spec)
        if math.prod(out_shape) == 0 or i == 0 or 0 in kernel:
            return xp.zeros(out_shape, out_dtype)
        taps, positions = math.prod(kernel), math.prod(out_sp)
        # (N, C, out positions..., taps...)
        patches = windows(x, axes, kernel, window_strides, rhs_dilation, xp)
        patches = patches.reshape(b, nb, g, i, *out_sp, *kernel)
        # (groups, N/b, out positions..., I, taps...): the im2col copy
        perm = (0, 2, 1, *range(4, 4 + nsp), 3, *range(4 + nsp, 4 + 2 * nsp))
        a = patches.transpose(perm).reshape(groups, nb * positions, i * taps)
        k = w.reshape(groups, og, i * taps).transpose(0, 2, 1)  # (groups, I * taps, O/groups)
        with np.errstate(all="ignore"):
            res = matmul(a, k, out_dtype)  # (groups, N/b * positions, O/groups)
        res = res.reshape(groups, nb, *out_sp, og)
        # output features are group-major: feature = group * O/groups + j. Order the axes
        # of res as the out layout, with (group, j) in place of the feature dim; copy at
        # most once. split: the res axes of N, O and each spatial dim
        split = [[1], [0, 2 + nsp]] + [[2 + s] for s in range(nsp)]
        inv = sorted(range(len(out_spec)), key=out_spec.__getitem__)
        perm = [a for d in range(len(out_spec)) for a in split[inv[d]]]
        return xp.ascontiguousarray(res.transpose(perm)).reshape(out_shape)

    return conv_general_dilated


conv_general_dilated = numpy_backend.register(conv_general_dilated_p)(
    conv_general_dilated_with(matmul))


# ---- reduce_window -----------------------------------------------------------------------
def _identity(dt, kind):
    if kind == "sum":
        return 0
    largest = kind == "min"
    if dt == np.bool_:
        return largest
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return int(info.max if largest else info.min)
    return np.inf if largest else -np.inf


_UFUNCS = {"sum": "add", "max": "maximum", "min": "minimum"}


def _reduce_window(kind):
    """The reduce_window_<kind> kernel ("sum", "max" or "min"), for any array module (`xp=`,
    NumPy by default)."""

    def kernel(x, *, window_dimensions, window_strides, padding, base_dilation,
               window_dilation, xp=np):
        dt = x.dtype
        if dt == _BF16 or (dt == _F16 and kind == "sum"):
            x = x.astype(_F32)  # bfloat16 everywhere and float16 sums work in float32
        axes = tuple(range(x.ndim))
        x = pad_dilate(x, axes, padding, base_dilation, _identity(dt, kind), xp)
        out_shape = _out_sizes(x, axes, window_dimensions, window_strides, window_dilation)
        if 0 in out_shape:
            return xp.empty(out_shape, dt)
        ufunc = getattr(xp, _UFUNCS[kind])
        with np.errstate(all="ignore"):
            if math.prod(window_dimensions) > _MAX_TAPS:
                view = windows(x, axes, window_dimensions, window_strides, window_dilation,
                               xp)
                tap_axes = tuple(range(x.ndim, 2 * x.ndim))
                if kind == "sum":  # (CuPy's ufuncs have no `reduce`)
                    out = xp.sum(view, axis=tap_axes, dtype=x.dtype)
                else:
                    out = getattr(xp, kind)(view, axis=tap_axes)
            else:
                out = _combine_taps(ufunc, x, out_shape, window_dimensions, window_strides,
                                    window_dilation)
        return out.astype(dt, copy=False)

    kernel.__name__ = f"reduce_window_{kind}"
    return kernel


def _combine_taps(ufunc, x, out_shape, window, strides, window_dilation):
    """ufunc-combine one strided view of `x` per window tap, in place."""
    out = None
    for tap in itertools.product(*(range(w) for w in window)):
        index = tuple(
            slice(t * r, t * r + (n - 1) * s + 1, s)
            for t, r, n, s in zip(tap, window_dilation, out_shape, strides, strict=True)
        )
        if out is None:
            out = x[index].copy()
        else:
            ufunc(out, x[index], out=out)
    return out


numpy_backend.register(reduce_window_sum_p)(_reduce_window("sum"))
numpy_backend.register(reduce_window_max_p)(_reduce_window("max"))
numpy_backend.register(reduce_window_min_p)(_reduce_window("min"))
