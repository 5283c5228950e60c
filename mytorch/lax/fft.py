"""The discrete Fourier transform primitive (`lax.fft`, after `jax.lax.fft`).

One primitive, `fft`, with two params: `fft_type` (an `FftType`) and `fft_lengths` (the
sizes L of the 1 to 3 trailing dimensions it transforms; leading dimensions are batch
dimensions):

    FFT    c[..., *L] -> c[..., *L]                      forward, unnormalised
    IFFT   c[..., *L] -> c[..., *L]                      inverse, divided by prod(L)
    RFFT   f[..., *L] -> c[..., *L[:-1], L[-1]//2 + 1]   the non-negative frequencies of
                                                         a real signal (last axis)
    IRFFT  c[..., *L[:-1], L[-1]//2 + 1] -> f[..., *L]   the real signal of such a half
                                                         spectrum (NumPy's irfftn)

f is float32 or float64 and c the complex dtype of the same precision (complex64 or
complex128). The binder, as JAX's, converts real operands of FFT, IFFT and IRFFT to
complex and integer ones to the default float first; the primitive itself takes only the
dtypes above. The NumPy kernel is in mytorch/backends/numpy/fft.py, the derivative,
transpose and batching rules in fft_rules.py; `mytorch.numpy.fft` builds NumPy's API
(lengths, axes, norms) on it.
"""

import enum
import operator

import numpy as np

from mytorch.core import dtypes
from mytorch.core.aval import ShapedArray
from mytorch.core.primitive import Primitive
from mytorch.core.source_info import user_error
from mytorch.lax._utils import asarray, short
from mytorch.lax.elementwise import convert_element_type

__all__ = ["FftType", "fft", "fft_p"]


class FftType(enum.IntEnum):
    """The four transforms of `lax.fft` (the values of `jax.lax.FftType`).

    Also accepts the names as strings, in any case: ``FftType("rfft")``.
    """

    FFT = 0
    IFFT = 1
    RFFT = 2
    IRFFT = 3

    @classmethod
    def _missing_(cls, value):
        if isinstance(value, str) and value.upper() in cls.__members__:
            return cls[value.upper()]
        raise ValueError(f"fft: unknown fft_type {value!r}; expected an FftType or one of "
                         "'fft', 'ifft', 'rfft', 'irfft'")

    def __str__(self):
        return self.name


fft_p = Primitive("fft", kind="fft")

_REAL = (np.dtype(np.float32), np.dtype(np.float64))
_COMPLEX = (np.dtype(np.complex64), np.dtype(np.complex128))


def _check_dtype(x, fft_type):
    """FFT, IFFT and IRFFT read complex operands, RFFT float32/float64 ones."""
    if fft_type == FftType.RFFT:
        if x.dtype not in _REAL:
            hint = "use FFT for complex input" if dtypes.is_complex(x.dtype) else \
                "convert it first"
            raise TypeError(f"fft (RFFT) needs a float32 or float64 operand, got {short(x)}; "
                            + hint)
    elif x.dtype not in _COMPLEX:
        raise TypeError(f"fft ({fft_type.name}) needs a complex64 or complex128 operand, "
                        f"got {short(x)}; convert it with lax.convert_element_type"
                        + (" or use RFFT" if fft_type == FftType.FFT else ""))


@fft_p.def_abstract_eval
def _fft_abstract_eval(x, *, fft_type, fft_lengths):
    _check_dtype(x, fft_type)
    k = len(fft_lengths)
    if x.ndim < k:
        raise ValueError(f"fft ({fft_type.name}) with fft_lengths={fft_lengths} needs an "
                         f"operand of rank >= {k}, got {short(x)}")
    trailing = tuple(x.shape[x.ndim - k:])
    expected = fft_lengths
    if fft_type == FftType.IRFFT:
        expected = (*fft_lengths[:-1], fft_lengths[-1] // 2 + 1)
    if trailing != expected:
        what = (f"(the last one fft_lengths[-1] // 2 + 1 = {expected[-1]})"
                if fft_type == FftType.IRFFT else "")
        raise ValueError(f"fft ({fft_type.name}) with fft_lengths={fft_lengths} needs the "
                         f"trailing dims of the operand to be {expected}{what}, got "
                         f"{short(x)}")
    batch = x.shape[:x.ndim - k]
    if fft_type == FftType.RFFT:
        return ShapedArray((*batch, *fft_lengths[:-1], fft_lengths[-1] // 2 + 1),
                           dtypes.complex_dtype(x.dtype))
    if fft_type == FftType.IRFFT:
        return ShapedArray((*batch, *fft_lengths), dtypes.real_dtype(x.dtype))
    return ShapedArray(x.shape, x.dtype)


def fft(x, fft_type, fft_lengths):
    """The discrete Fourier transform of the trailing `len(fft_lengths)` dims of `x`.

    Args:
      x: c[..., *L] for FFT and IFFT; f[..., *L] for RFFT; c[..., *L[:-1], L[-1] // 2 + 1]
        for IRFFT. As in JAX, real and integer operands of FFT, IFFT and IRFFT are
        converted to complex (integers through the default float), integer operands of
        RFFT to the default float.
      fft_type: an `FftType`, or one of "fft", "ifft", "rfft", "irfft" (any case).
      fft_lengths: L, 0 to 3 positive ints, the logical sizes of the transformed dims;
        with none, `x` is returned (converted as above).

    Returns:
      FFT/IFFT: c[..., *L]; RFFT: c[..., *L[:-1], L[-1] // 2 + 1] (complex of x's
      precision); IRFFT: f[..., *L] (real of x's precision). IFFT and IRFFT divide by
      prod(L), FFT and RFFT do not scale.

    Raises:
      TypeError: complex input to RFFT, or float16/bfloat16 input to it. ValueError:
      trailing dims that do not match `fft_lengths`, or lengths that are not 0 to 3
      positive ints.

    >>> import numpy as np
    >>> from mytorch import lax
    >>> lax.fft(np.array([1.0, 2.0, 3.0, 4.0], np.float32), "rfft", (4,))
    Array([10.+0.j, -2.+2.j, -2.+0.j], dtype=complex64)
    """
    fft_type = FftType(fft_type)
    try:
        lengths = tuple(operator.index(n) for n in (
            (fft_lengths,) if isinstance(fft_lengths, (int, np.integer)) else fft_lengths))
    except TypeError:
        raise user_error(TypeError, f"fft: fft_lengths must be ints, got {fft_lengths!r}") \
            from None
    if len(lengths) > 3 or any(n < 1 for n in lengths):
        raise user_error(ValueError, f"fft: fft_lengths must be 0 to 3 positive ints, got "
                         f"{lengths}")
    x = _converted(asarray(x), fft_type)
    if not lengths:
        return x
    return fft_p.bind(x, fft_type=fft_type, fft_lengths=lengths)


def _converted(x, fft_type):
    """`x` in the dtype `fft_type` reads, as JAX's lax.fft converts it: integers and bools
    to the default float, and for all but RFFT real values to complex (complex input to
    RFFT and float16 are left for the abstract evaluation to reject)."""
    d = x.dtype
    if dtypes.is_complex(d) or (fft_type == FftType.RFFT and dtypes.is_float(d)):
        return x
    real = d if dtypes.is_float(d) else dtypes.default_float()
    target = real if fft_type == FftType.RFFT else dtypes.complex_dtype(real)
    return convert_element_type(x, target, weak_type=False)
