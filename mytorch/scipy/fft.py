"""`mytorch.scipy.fft`: discrete cosine transforms of types 2 and 3 (`jax.scipy.fft`'s
dct, idct, dctn, idctn, with scipy.fft's normalisations), over the `lax.fft` primitive.

Both types are computed with one complex FFT of the signal's length (Makhoul, "A fast
cosine transform in one and two dimensions", 1980): DCT-II reorders the input as
v = (x0, x2, x4, ..., x5, x3, x1), so that y_k = 2 re(e^(-i pi k / 2N) FFT(v)_k); DCT-III,
its inverse up to the factor 2N, runs the same steps backwards with an inverse FFT. Every
step is a lax operation, so the transforms differentiate, batch and compile like any
other. The n-dimensional transforms apply the one-axis transform along each axis in turn.
"""

import math
import operator

import numpy as np

from mytorch import lax
from mytorch.core import dtypes
from mytorch.core.array import Array
from mytorch.core.source_info import user_error
from mytorch.numpy import fft as _fft
from mytorch.numpy._manip_util import _axes, _axis, _s
from mytorch.numpy._promote import asarray_any

__all__ = ["dct", "idct", "dctn", "idctn"]

_NORMS = (None, "backward", "ortho", "forward")
_INVERSE_TYPE = {2: 3, 3: 2}  # idct of type t is a dct of the other type


# ---- arguments ----------------------------------------------------------------------------
def _real_input(x):
    """`x` as float32 or float64 (integers and bools: the default float; float16 and
    bfloat16: float32); complex `x` stays complex (its parts are transformed apart)."""
    d = x.dtype
    if dtypes.is_complex(d) or d in (np.float32, np.float64):
        return x
    target = np.dtype(np.float32) if dtypes.is_float(d) else dtypes.default_float()
    return lax.convert_element_type(x, target, weak_type=False)


def _check(op, type, norm):
    if type not in (2, 3):
        raise user_error(ValueError, f"{op}: DCT type {type!r} is not supported; types 2 "
                                     "and 3 are")
    if norm not in _NORMS:
        raise user_error(ValueError, f'{op}: invalid norm value {norm!r}; should be '
                                     '"backward", "ortho" or "forward"')


def _resize(op, x, axis, n):
    """`x` zero-padded or cut to `n` along `axis`."""
    try:
        n = operator.index(n)
    except TypeError:
        raise user_error(TypeError, f"{op}: the length must be an int, got {n!r}") from None
    if n < 1:
        raise user_error(ValueError, f"{op}: invalid number of data points ({n}) specified")
    m = x.shape[axis]
    if n == m:
        return x
    config = [(0, n - m, 0) if a == axis else (0, 0, 0) for a in range(x.ndim)]
    return lax.pad(x, lax.full((), 0, x.dtype), config)


# ---- one axis, the last -------------------------------------------------------------------
def _along_last(shape, values, dtype):
    """The vector `values` (NumPy) as an array of `shape`, varying along the last axis."""
    return lax.broadcast_in_dim(np.asarray(values, dtype), shape, (len(shape) - 1,))


def _twiddle(n, sign, real_dtype, shape):
    """e^(sign i pi k / 2n) for k = 0..n-1, along the last axis of `shape`."""
    k = np.arange(n)
    return _along_last(shape, np.exp(sign * 1j * np.pi * k / (2 * n)),
                       dtypes.complex_dtype(real_dtype))


def _dct2_last(x):
    """Unnormalised DCT-II along the last axis: y_k = 2 sum_n x_n cos(pi k (2n + 1) / 2N)."""
    n, last = x.shape[-1], x.ndim - 1
    even = lax.slice_in_dim(x, 0, n, 2, last)
    odd = lax.rev(lax.slice_in_dim(x, 1, n, 2, last), (last,))
    v = lax.concatenate([even, odd], last)
    spectrum = _fft.fft(v, axis=-1)
    turned = lax.mul(spectrum, _twiddle(n, -1, x.dtype, x.shape))
    return lax.mul(lax.real(turned), lax.full((), 2, x.dtype))


def _dct3_last(x):
    """Unnormalised DCT-III along the last axis: y_k = x_0 + 2 sum_(n>0) x_n
    cos(pi (2k + 1) n / 2N); the inverse of `_dct2_last` times 2N."""
    n, last = x.shape[-1], x.ndim - 1
    # x_(N-k) for k = 0..N-1, with x_N = 0
    mirrored = lax.pad(lax.rev(lax.slice_in_dim(x, 1, n, 1, last), (last,)),
                       lax.full((), 0, x.dtype), [(0, 0, 0)] * last + [(1, 0, 0)])
    spectrum = lax.mul(lax.complex(x, lax.neg(mirrored)), _twiddle(n, 1, x.dtype, x.shape))
    # the inverse FFT's 1/N and the 1/2 of Makhoul's inverse against the 2N of DCT-III
    v = lax.real(_fft.ifft(spectrum, axis=-1, norm="forward"))
    half = (n + 1) // 2
    even = lax.slice_in_dim(v, 0, half, 1, last)
    odd = lax.rev(lax.slice_in_dim(v, half, n, 1, last), (last,))
    # interleave: y_(2m) = even_m, y_(2m+1) = odd_m
    if n % 2:
        odd = lax.pad(odd, lax.full((), 0, v.dtype), [(0, 0, 0)] * last + [(0, 1, 0)])
    pairs = lax.concatenate([lax.expand_dims(even, (last + 1,)),
                             lax.expand_dims(odd, (last + 1,))], last + 1)
    out = lax.reshape(pairs, (*x.shape[:-1], 2 * half))
    return lax.slice_in_dim(out, 0, n, 1, last) if n % 2 else out


def _dct_last(x, type, norm):
    """DCT of `type` along the last axis of the real `x`, scaled for scipy's `norm`."""
    n = x.shape[-1]
    if norm == "ortho":
        # scipy's orthonormal transforms: DCT-II scales its output by 1/sqrt(4N) (first)
        # and 1/sqrt(2N) (rest), DCT-III its input by the transposed factors
        weights = np.full(n, 1 / math.sqrt(2 * n))
        weights[0] = 1 / math.sqrt(4 * n) if type == 2 else 1 / math.sqrt(n)
        scale = _along_last(x.shape, weights, x.dtype)
        if type == 2:
            return lax.mul(_dct2_last(x), scale)
        return _dct3_last(lax.mul(x, scale))
    y = _dct2_last(x) if type == 2 else _dct3_last(x)
    if norm == "forward":
        return lax.mul(y, lax.full((), 1 / (2 * n), y.dtype))
    return y


def _dct_axis(x, type, axis, norm):
    """`_dct_last` along `axis`; complex `x` has its real and imaginary parts transformed
    apart (the transform is real)."""
    if dtypes.is_complex(x.dtype):
        return lax.complex(_dct_axis(lax.real(x), type, axis, norm),
                           _dct_axis(lax.imag(x), type, axis, norm))
    last = x.ndim - 1
    if axis == last:
        return _dct_last(x, type, norm)
    perm = [a for a in range(x.ndim) if a != axis] + [axis]
    y = _dct_last(lax.transpose(x, tuple(perm)), type, norm)
    return lax.transpose(y, tuple(np.argsort(perm).tolist()))


_INVERSE_NORM = {None: "forward", "backward": "forward", "ortho": "ortho",
                 "forward": "backward"}


def _transform(op, x, type, s, axes, norm, inverse):
    _check(op, type, norm)
    x = x if isinstance(x, Array) else asarray_any(x)
    if s is not None and isinstance(s, (int, np.integer)):
        s = (s,)
    if axes is None:
        axes = tuple(range(x.ndim)) if s is None else tuple(range(x.ndim - len(s), x.ndim))
    else:
        axes = _axes(op, axes, x)
    if s is not None and len(s) != len(axes):
        raise user_error(ValueError, f"{op}: shape and axes have different lengths: "
                                     f"s={tuple(s)}, axes={tuple(axes)} for {_s(x)}")
    x = _real_input(x)
    if inverse:
        # the inverse of DCT-II is DCT-III with the inverse normalisation, and vice versa
        type, norm = _INVERSE_TYPE[type], _INVERSE_NORM[norm]
    for i, axis in enumerate(axes):
        if s is not None:
            x = _resize(op, x, axis, s[i])
        elif x.shape[axis] < 1:
            raise user_error(ValueError, f"{op}: invalid number of data points (0) specified")
        x = _dct_axis(x, type, axis, norm)
    return x


# ---- the API ------------------------------------------------------------------------------
def dct(x, type=2, n=None, axis=-1, norm=None):
    """The discrete cosine transform of `x` along `axis` (scipy.fft.dct).

    Args:
      x: array-like; integers and bools are converted to the default float, complex input
        has its real and imaginary parts transformed apart.
      type: 2 or 3.
      n: the transform length: `x` is zero-padded or cut to it along `axis`.
      axis: the axis to transform.
      norm: None or "backward" (type 2: y_k = 2 sum_n x_n cos(pi k (2n + 1) / 2N)),
        "ortho" (orthonormal) or "forward" (divided by 2N).

    Returns:
      `x`'s shape with `n` along `axis`; float32 for float32 (and smaller) input.
    """
    x = x if isinstance(x, Array) else asarray_any(x)
    axis = _axis("dct", axis, x)
    return _transform("dct", x, type, None if n is None else (n,), (axis,), norm, False)


def idct(x, type=2, n=None, axis=-1, norm=None):
    """The inverse of `dct` of the same `type` and `norm` (scipy.fft.idct): idct of type 2
    is a DCT-III, of type 3 a DCT-II, scaled so that idct(dct(x)) == x."""
    x = x if isinstance(x, Array) else asarray_any(x)
    axis = _axis("idct", axis, x)
    return _transform("idct", x, type, None if n is None else (n,), (axis,), norm, True)


def dctn(x, type=2, s=None, axes=None, norm=None):
    """The n-dimensional discrete cosine transform (scipy.fft.dctn): `dct` along each of
    `axes` (None: the last len(s) axes, or all of them), each first padded or cut to its
    length in `s`; `type` and `norm` as in `dct`."""
    return _transform("dctn", x, type, s, axes, norm, False)


def idctn(x, type=2, s=None, axes=None, norm=None):
    """The inverse of `dctn` (scipy.fft.idctn): `idct` along each of `axes`."""
    return _transform("idctn", x, type, s, axes, norm, True)
