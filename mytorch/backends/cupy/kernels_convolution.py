"""GPU eager kernels of conv_general_dilated and reduce_window_{sum,max,min}.

Convolution is backends/numpy/convolution.py's im2col + GEMM, for any array module: input
dilation and padding in one strided assignment into a zero buffer, every patch as a
`sliding_window_view` (CuPy's `as_strided` view: no copy), sliced by the strides and the
kernel dilation; the patches of all groups copied once into a (groups, N * positions,
I * taps) matrix and contracted with the kernel by one batched `matmul` (cuBLAS on a GPU;
kernels_dot.matmul's accumulation rules). Half-precision operands stay half on a GPU when
cuBLAS accumulates them in float32 (the products are the same; the CPU casts to float32
first). cuDNN is not used: `cupyx.cudnn` needs cuDNN's library, which the `gpu` extra does
not install, and its algorithms would change the accumulation order per shape.

reduce_window pads (and base-dilates) with the reduction's identity, then combines the
taps: up to `_MAX_TAPS` taps as one strided view per tap combined in place, larger windows
as one reduction over the sliding-window view.
"""

import importlib
import itertools
import math

import numpy as np

from mytorch.backends.cupy.kernels import register, xp_of
from mytorch.backends.cupy.kernels_common import BF16, F16, F32, F64
from mytorch.backends.cupy.kernels_dot import half_accumulates_in_f32, matmul
from mytorch.backends.numpy.convolution import _dilate, _layout_shape, _out_sizes
from mytorch.lax.convolution import (
    conv_general_dilated_p,
    reduce_window_max_p,
    reduce_window_min_p,
    reduce_window_sum_p,
)

_MAX_TAPS = 64


def pad_dilate(xp, x, axes, padding, dilation, fill):
    """`x` with `dilation - 1` holes between elements along `axes`, padded by (low, high)
    pairs (negative crops); holes and padding hold `fill`. One allocation at most."""
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


def windows(xp, x, axes, window, strides, window_dilation):
    """A view of `x` with each of `axes` indexing window positions (moved by `strides`) and
    one trailing axis per window dim (taps `window_dilation` apart)."""
    tricks = importlib.import_module(xp.__name__ + ".lib.stride_tricks")
    dilated = [_dilate(w, r) for w, r in zip(window, window_dilation, strict=True)]
    view = tricks.sliding_window_view(x, dilated, axis=axes)
    index = [slice(None)] * x.ndim
    for ax, s in zip(axes, strides, strict=True):
        index[ax] = slice(None, None, s)
    index += [slice(None, None, r) for r in window_dilation]
    return view[tuple(index)]


# ---- convolution -------------------------------------------------------------------------
def _compute_dtype(xp, x, out_dtype):
    """Half-precision floats are convolved in float32 (on a GPU: by cuBLAS's float32
    accumulation when operand and result are the same half type); integers and bools with
    a float result in that float type."""
    if x.dtype in (F16, BF16):
        if xp is not np and x.dtype == out_dtype and half_accumulates_in_f32(out_dtype):
            return x
        return x.astype(F32 if out_dtype != F64 else out_dtype)
    if out_dtype.kind == "f" and x.dtype.kind in "iub":
        return x.astype(F32 if out_dtype != F64 else out_dtype)
    return x


@register(conv_general_dilated_p)
def conv_general_dilated(lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
                         dimension_numbers, feature_group_count, batch_group_count, precision,
                         preferred_element_type):
    xp = xp_of(lhs, rhs)
    out_dtype = np.dtype(lhs.dtype if preferred_element_type is None else preferred_element_type)
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    x = _compute_dtype(xp, lhs.transpose(lhs_spec), out_dtype)  # (N, C, spatial...)
    w = _compute_dtype(xp, rhs.transpose(rhs_spec), out_dtype)  # (O, I, taps...)
    nsp = x.ndim - 2
    axes = tuple(range(2, 2 + nsp))
    g, b = feature_group_count, batch_group_count
    groups = g * b  # at most one of them exceeds 1
    n, (o, i), kernel = x.shape[0], w.shape[:2], w.shape[2:]
    nb, og = n // b, o // groups
    x = pad_dilate(xp, x, axes, padding, lhs_dilation, 0)
    out_sp = _out_sizes(x, axes, kernel, window_strides, rhs_dilation)
    out_shape = _layout_shape((nb, o, *out_sp), out_spec)
    if math.prod(out_shape) == 0 or i == 0 or 0 in kernel:
        return xp.zeros(out_shape, out_dtype)
    taps, positions = math.prod(kernel), math.prod(out_sp)
    patches = windows(xp, x, axes, kernel, window_strides, rhs_dilation)
    patches = patches.reshape(b, nb, g, i, *out_sp, *kernel)
    # (groups, N/b, out positions..., I, taps...): the im2col copy
    perm = (0, 2, 1, *range(4, 4 + nsp), 3, *range(4 + nsp, 4 + 2 * nsp))
    a = patches.transpose(perm).reshape(groups, nb * positions, i * taps)
    k = w.reshape(groups, og, i * taps).transpose(0, 2, 1)  # (groups, I * taps, O/groups)
    with np.errstate(all="ignore"):
        res = matmul(a, k, out_dtype)  # (groups, N/b * positions, O/groups)
    res = res.reshape(groups, nb, *out_sp, og)
    # output features are group-major: feature = group * O/groups + j. Order the axes of
    # res as the out layout, with (group, j) in place of the feature dim; copy at most once.
    split = [[1], [0, 2 + nsp]] + [[2 + s] for s in range(nsp)]  # res axes of N, O, spatial
    inv = sorted(range(len(out_spec)), key=out_spec.__getitem__)
    perm = [a for d in range(len(out_spec)) for a in split[inv[d]]]
    return xp.ascontiguousarray(res.transpose(perm)).reshape(out_shape)


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
    def kernel(x, *, window_dimensions, window_strides, padding, base_dilation,
               window_dilation):
        xp = xp_of(x)
        dt = x.dtype
        if dt == BF16 or (dt == F16 and kind == "sum"):
            x = x.astype(F32)  # bfloat16 everywhere and float16 sums work in float32
        axes = tuple(range(x.ndim))
        x = pad_dilate(xp, x, axes, padding, base_dilation, _identity(dt, kind))
        out_shape = _out_sizes(x, axes, window_dimensions, window_strides, window_dilation)
        if 0 in out_shape:
            return xp.empty(out_shape, dt)
        ufunc = getattr(xp, _UFUNCS[kind])
        with np.errstate(all="ignore"):
            if math.prod(window_dimensions) > _MAX_TAPS:
                view = windows(xp, x, axes, window_dimensions, window_strides, window_dilation)
                tap_axes = tuple(range(x.ndim, 2 * x.ndim))
                if kind == "sum":
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


register(reduce_window_sum_p)(_reduce_window("sum"))
register(reduce_window_max_p)(_reduce_window("max"))
register(reduce_window_min_p)(_reduce_window("min"))
