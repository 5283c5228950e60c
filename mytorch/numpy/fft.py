"""`mytorch.numpy.fft`: NumPy's discrete Fourier transforms over the `lax.fft` primitive.

Every transform is `lax.fft` over at most three trailing axes: the requested axes are
moved to the back (and back again afterwards), each zero-padded or truncated to its length
from `n`/`s` first, and the result scaled for `norm`. More than three axes are transformed
in groups of three (the transforms are separable): for rfftn the group holding the last
axis goes first, as a real transform, for irfftn last.

Dtypes follow JAX: float32 (and float16, bfloat16) transforms to complex64, float64 to
complex128; integers and bools are first converted to the default float. irfft and hfft
return the real dtype of the same precision. rfft, rfftn and ihfft reject complex input.

Where NumPy and JAX differ, JAX's behaviour is kept where it only accepts more (an empty
axis of unspecified length gives an empty result, no axes give the converted input) or
where JAX code relies on its error: repeated axes, a sequence as the `axis` of a one-axis
transform and fft2-style transforms over other than two axes raise ValueError.
"""

import math
import operator

import numpy as np

from mytorch import lax
from mytorch.core import dtypes
from mytorch.core.array import Array
from mytorch.core.source_info import user_error
from mytorch.numpy._manip_util import _axes, _s
from mytorch.numpy._promote import asarray_any
from mytorch.numpy.manipulation import roll

__all__ = [
    "fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2",
    "fftn", "ifftn", "rfftn", "irfftn", "fftfreq", "rfftfreq", "fftshift", "ifftshift",
]

_FFT, _IFFT, _RFFT, _IRFFT = lax.FftType.FFT, lax.FftType.IFFT, lax.FftType.RFFT, \
    lax.FftType.IRFFT
_NORMS = (None, "backward", "ortho", "forward")
# norm for hfft/ihfft, which are the inverse real transforms run the other way round
_SWAPPED_NORM = {None: "forward", "backward": "forward", "ortho": "ortho",
                 "forward": "backward"}
_MAX_AXES = 3  # lax.fft transforms at most this many axes at once


# ---- arguments ----------------------------------------------------------------------------
def _array(a):
    return a if isinstance(a, Array) else asarray_any(a)


def _input(op, x, fft_type):
    """The array `x` in the dtype the transform reads: real for RFFT, complex else."""
    d = x.dtype
    if fft_type == _RFFT:
        if dtypes.is_complex(d):
            hint = f"; use {op.replace('rfft', 'fft')} for complex input" if "rfft" in op else ""
            raise user_error(TypeError, f"{op} needs real input, got {_s(x)}{hint}")
        # float16 and bfloat16 are transformed in float32, as their complex64 spectrum is
        target = d if d in (np.float32, np.float64) else \
            np.dtype(np.float32) if dtypes.is_float(d) else dtypes.default_float()
    elif dtypes.is_complex(d):
        target = d
    else:
        target = dtypes.complex_dtype(d if dtypes.is_float(d) else dtypes.default_float())
    if d != target or x.weak_type:
        x = lax.convert_element_type(x, target, weak_type=False)
    return x


def _check_norm(op, norm):
    if norm not in _NORMS:
        raise user_error(ValueError, f'{op}: invalid norm value {norm!r}; should be '
                                     '"backward", "ortho" or "forward"')


def _length(op, name, n):
    try:
        return operator.index(n)
    except TypeError:
        raise user_error(TypeError, f"{op}: {name} must be an int, got {n!r}") from None


def _check_lengths(op, lengths):
    for n in lengths:
        if n < 1:
            raise user_error(ValueError,
                             f"{op}: invalid number of FFT data points ({n}) specified")


# ---- the transform ------------------------------------------------------------------------
def _over(x, fft_type, axes, lengths):
    """`lax.fft` over `axes` (at most three, any positions) with `lengths`: the axes are
    moved to the back, padded or cut to the lengths the transform reads, and put back."""
    nd, k = x.ndim, len(axes)
    perm = [i for i in range(nd) if i not in axes] + list(axes)
    if perm != list(range(nd)):
        x = lax.transpose(x, tuple(perm))
    sizes = list(lengths)
    if fft_type == _IRFFT:
        sizes[-1] = lengths[-1] // 2 + 1
    have = x.shape[nd - k:]
    if tuple(sizes) != have:
        config = [(0, 0, 0)] * (nd - k) + [(0, n - m, 0) for n, m in zip(sizes, have,
                                                                         strict=True)]
        x = lax.pad(x, lax.full((), 0, x.dtype), config)
    x = lax.fft(x, fft_type, tuple(lengths))
    if perm != list(range(nd)):
        x = lax.transpose(x, tuple(np.argsort(perm).tolist()))
    return x


def _transform(op, fft_type, a, s, axes, norm):
    """NumPy's n-dimensional transform `op` of `a` over `axes` with lengths `s`."""
    x = _array(a)
    _check_norm(op, norm)
    if s is not None:
        s = [None if n is None else _length(op, "s", n)
             for n in ((s,) if isinstance(s, (int, np.integer)) else s)]
    if axes is None:
        if s is not None and len(s) > x.ndim:
            raise user_error(ValueError, f"{op}: s={tuple(s)} has more entries than the "
                                         f"dims of {_s(x)}")
        axes = tuple(range(x.ndim - len(s), x.ndim)) if s is not None else tuple(range(x.ndim))
    else:
        axes = _axes(op, axes, x)
    if s is not None and len(s) != len(axes):
        raise user_error(ValueError, f"{op}: shape and axes have different lengths: "
                                     f"s={tuple(s)}, axes={tuple(axes)}")
    x = _input(op, x, fft_type)
    if not axes:  # nothing to transform: the converted input, as JAX's lax.fft gives
        return x
    inferred = [x.shape[ax] for ax in axes]
    if fft_type == _IRFFT:
        inferred[-1] = 2 * (inferred[-1] - 1)
    given = [None] * len(axes) if s is None else s
    lengths = [m if n is None else n for n, m in zip(given, inferred, strict=True)]
    if any(x.shape[ax] == 0 and n is None for ax, n in zip(axes, given, strict=True)):
        return _empty(x, fft_type, axes, lengths)
    _check_lengths(op, lengths)
    groups = [(axes[max(i - _MAX_AXES, 0):i], lengths[max(i - _MAX_AXES, 0):i])
              for i in range(len(axes), 0, -_MAX_AXES)]
    last, rest = groups[0], groups[1:]
    if fft_type == _RFFT:  # the real transform first, then complex ones on its result
        x = _over(x, _RFFT, *last)
        for group in rest:
            x = _over(x, _FFT, *group)
    elif fft_type == _IRFFT:  # complex inverse transforms first, the real one last
        for group in rest:
            x = _over(x, _IFFT, *group)
        x = _over(x, _IRFFT, *last)
    else:
        for group in groups:
            x = _over(x, fft_type, *group)
    return _normalize(x, fft_type, math.prod(lengths), norm)


def _empty(x, fft_type, axes, lengths):
    """The transform of `x` over an empty axis of unspecified length: an empty array of
    the result's shape and dtype (as JAX; NumPy raises)."""
    shape = list(x.shape)
    for ax, n in zip(axes, lengths, strict=True):
        shape[ax] = max(n, 0)
    if fft_type == _RFFT and shape[axes[-1]]:
        shape[axes[-1]] = shape[axes[-1]] // 2 + 1
    dtype = {_RFFT: dtypes.complex_dtype, _IRFFT: dtypes.real_dtype}.get(
        fft_type, lambda d: d)(x.dtype)
    return lax.full(tuple(shape), 0, dtype)


def _normalize(x, fft_type, size, norm):
    """Scale for `norm`: lax's forward transforms do not scale, its inverse ones divide by
    the size (NumPy's "backward")."""
    inverse = fft_type in (_IFFT, _IRFFT)
    if norm == "ortho":
        factor = math.sqrt(size) if inverse else 1 / math.sqrt(size)
    elif norm == "forward":
        factor = size if inverse else 1 / size
    else:
        return x
    return lax.mul(x, lax.full((), factor, x.dtype))


def _one_axis(op, n, axis):
    """The `s` and `axes` of a one-axis transform."""
    if isinstance(axis, (list, tuple)):
        raise user_error(ValueError, f"{op} does not support multiple axes; use {op}n for "
                                     f"them. Got axis = {axis!r}")
    return None if n is None else (_length(op, "n", n),), (axis,)


def _two_axes(op, axes):
    """The `axes` of a two-dimensional transform: exactly two of them (as JAX)."""
    if axes is None or len(axes) != 2:
        raise user_error(ValueError, f"{op} transforms exactly two axes (use {op[:-1]}n "
                                     f"for other counts). Got axes = {axes!r}")
    return axes


# ---- one axis -----------------------------------------------------------------------------
def fft(a, n=None, axis=-1, norm=None):
    """The discrete Fourier transform of `a` along `axis` (numpy.fft.fft).

    Args:
      a: array-like; real input is converted to complex.
      n: the length of the transform: `a` is cut or zero-padded to it along `axis`
        (None: `a.shape[axis]`).
      axis: the axis to transform.
      norm: None or "backward" (no scaling), "ortho" (1/sqrt(n)) or "forward" (1/n).

    Returns:
      complex, `a`'s shape with `n` along `axis`.
    """
    return _transform("fft", _FFT, a, *_one_axis("fft", n, axis), norm)


def ifft(a, n=None, axis=-1, norm=None):
    """The inverse discrete Fourier transform along `axis` (numpy.fft.ifft); `n`, `axis`
    and `norm` as in `fft` ("backward" divides by n here). Returns complex, `n` along
    `axis`."""
    return _transform("ifft", _IFFT, a, *_one_axis("ifft", n, axis), norm)


def rfft(a, n=None, axis=-1, norm=None):
    """The transform of real `a` along `axis`, non-negative frequencies only
    (numpy.fft.rfft): `n // 2 + 1` of them along `axis`, `n` the (cut or zero-padded)
    input length. Complex input raises TypeError."""
    return _transform("rfft", _RFFT, a, *_one_axis("rfft", n, axis), norm)


def irfft(a, n=None, axis=-1, norm=None):
    """The real inverse of `rfft` along `axis` (numpy.fft.irfft).

    Args:
      a: the half spectrum; only its first `n // 2 + 1` entries along `axis` are read
        (zero-padded if shorter).
      n: the length of the output (None: 2 * (a.shape[axis] - 1)).
      axis, norm: as in `fft`.

    Returns:
      real, `n` along `axis`.
    """
    return _transform("irfft", _IRFFT, a, *_one_axis("irfft", n, axis), norm)


def hfft(a, n=None, axis=-1, norm=None):
    """The transform of a signal with Hermitian symmetry, given by its first half `a`
    (numpy.fft.hfft): real, `n` along `axis` (None: 2 * (a.shape[axis] - 1))."""
    _check_norm("hfft", norm)
    x = _input("hfft", _array(a), _IRFFT)
    return _transform("hfft", _IRFFT, lax.conj(x), *_one_axis("hfft", n, axis),
                      _SWAPPED_NORM[norm])


def ihfft(a, n=None, axis=-1, norm=None):
    """The inverse of `hfft` for real `a` (numpy.fft.ihfft): complex, `n // 2 + 1` along
    `axis`."""
    _check_norm("ihfft", norm)
    return lax.conj(_transform("ihfft", _RFFT, a, *_one_axis("ihfft", n, axis),
                               _SWAPPED_NORM[norm]))


# ---- several axes -------------------------------------------------------------------------
def fftn(a, s=None, axes=None, norm=None):
    """The n-dimensional transform over `axes` (numpy.fft.fftn).

    Args:
      a: array-like; real input is converted to complex.
      s: the lengths along `axes` (each cut or zero-padded to; a None entry keeps the
        axis's size); None: the sizes of `a`.
      axes: the axes to transform (None: the last len(s) axes, or all of them); repeated
        axes raise ValueError.
      norm: None or "backward" (no scaling), "ortho" (1/sqrt(prod(s))) or "forward"
        (1/prod(s)).

    Returns:
      complex, `a`'s shape with `s` along `axes`.
    """
    return _transform("fftn", _FFT, a, s, axes, norm)


def ifftn(a, s=None, axes=None, norm=None):
    """The n-dimensional inverse transform (numpy.fft.ifftn); arguments as in `fftn`."""
    return _transform("ifftn", _IFFT, a, s, axes, norm)


def rfftn(a, s=None, axes=None, norm=None):
    """The n-dimensional transform of real `a` (numpy.fft.rfftn): the last of `axes`
    keeps its `s[-1] // 2 + 1` non-negative frequencies; arguments as in `fftn`."""
    return _transform("rfftn", _RFFT, a, s, axes, norm)


def irfftn(a, s=None, axes=None, norm=None):
    """The real inverse of `rfftn` (numpy.fft.irfftn): `s` gives the output lengths (None:
    `a`'s sizes, 2 * (m - 1) on the last axis); arguments as in `fftn`."""
    return _transform("irfftn", _IRFFT, a, s, axes, norm)


def fft2(a, s=None, axes=(-2, -1), norm=None):
    """`fftn` over the last two axes by default (numpy.fft.fft2)."""
    return _transform("fft2", _FFT, a, s, _two_axes("fft2", axes), norm)


def ifft2(a, s=None, axes=(-2, -1), norm=None):
    """`ifftn` over the last two axes by default (numpy.fft.ifft2)."""
    return _transform("ifft2", _IFFT, a, s, _two_axes("ifft2", axes), norm)


def rfft2(a, s=None, axes=(-2, -1), norm=None):
    """`rfftn` over the last two axes by default (numpy.fft.rfft2)."""
    return _transform("rfft2", _RFFT, a, s, _two_axes("rfft2", axes), norm)


def irfft2(a, s=None, axes=(-2, -1), norm=None):
    """`irfftn` over the last two axes by default (numpy.fft.irfft2)."""
    return _transform("irfft2", _IRFFT, a, s, _two_axes("irfft2", axes), norm)


# ---- frequencies and shifts ---------------------------------------------------------------
def _window(op, n, d):
    """`n` as an int and `d` as one value; ValueError (JAX's) for sequences."""
    if isinstance(n, (list, tuple)):
        raise user_error(ValueError, f"{op}: the n argument only takes an int. Got n = "
                                     f"{list(n)}")
    if isinstance(d, (list, tuple)) or (d.ndim if isinstance(d, Array) else np.ndim(d)):
        shown = list(d) if isinstance(d, (list, tuple)) else _s(d) if isinstance(d, Array) \
            else np.shape(d)
        raise user_error(ValueError, f"{op}: the d argument only takes a single value. Got "
                                     f"d = {shown}")
    return _length(op, "n", n)


def _frequencies(k, n, d, dtype):
    """k / (n d) in `dtype` (default: the default float); `d` may be a traced scalar."""
    dtype = dtypes.default_float() if dtype is None else dtypes.canonicalize(dtype)
    if isinstance(d, Array):
        return lax.div(asarray_any(k / n, dtype), lax.convert_element_type(d, dtype))
    return asarray_any(k / (n * d), dtype)


def fftfreq(n, d=1.0, *, dtype=None, device=None):
    """The sample frequencies of an `fft` of length `n` with sample spacing `d`
    (numpy.fft.fftfreq): [0, 1, ..., (n - 1) // 2, -(n // 2), ..., -1] / (n d).

    Args:
      n: the window length (an int). d: the sample spacing (a scalar, possibly traced).
      dtype: the result's dtype (default: the default float).
      device: accepted for JAX's signature; arrays live on the default device.

    Returns:
      f[n].
    """
    del device
    n = _window("fftfreq", n, d)
    k = np.concatenate([np.arange((n - 1) // 2 + 1), np.arange(-(n // 2), 0)])
    return _frequencies(k.astype(np.float64), n, d, dtype)


def rfftfreq(n, d=1.0, *, dtype=None, device=None):
    """The sample frequencies of an `rfft` of length `n` (numpy.fft.rfftfreq):
    [0, 1, ..., n // 2] / (n d), f[n // 2 + 1]; arguments as in `fftfreq`."""
    del device
    n = _window("rfftfreq", n, d)
    return _frequencies(np.arange(n // 2 + 1, dtype=np.float64), n, d, dtype)


def _shift(op, x, axes, sign):
    x = _array(x)
    axes = tuple(range(x.ndim)) if axes is None else _axes(op, axes, x)
    if not axes:
        return x
    return roll(x, tuple(sign * (x.shape[ax] // 2) for ax in axes), axes)


def fftshift(x, axes=None):
    """`x` with the zero frequency moved to the centre of `axes` (all by default): each
    axis rolled by size // 2 (numpy.fft.fftshift)."""
    return _shift("fftshift", x, axes, 1)


def ifftshift(x, axes=None):
    """The inverse of `fftshift`: each of `axes` rolled by -(size // 2)
    (numpy.fft.ifftshift)."""
    return _shift("ifftshift", x, axes, -1)
