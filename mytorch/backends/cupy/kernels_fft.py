"""GPU eager kernel of the `fft` primitive: the array module's n-dimensional transforms over
the trailing axes (cuFFT plans through `cupy.fft` on a GPU), as backends/numpy/fft.py.

The result is cast to the primitive's dtype; CuPy transforms complex64 in single precision
(cuFFT's C2C/R2C/C2R), NumPy 2 does too.
"""

from mytorch.backends.cupy.kernels import register, xp_of
from mytorch.core import dtypes
from mytorch.lax.fft import FftType, fft_p

_NAMES = {FftType.FFT: "fftn", FftType.IFFT: "ifftn", FftType.RFFT: "rfftn",
          FftType.IRFFT: "irfftn"}


@register(fft_p)
def _fft(x, *, fft_type, fft_lengths):
    xp = xp_of(x)
    axes = tuple(range(x.ndim - len(fft_lengths), x.ndim))
    out = getattr(xp.fft, _NAMES[fft_type])(x, s=fft_lengths, axes=axes)
    if fft_type == FftType.IRFFT:
        dtype = dtypes.real_dtype(x.dtype)
    elif fft_type == FftType.RFFT:
        dtype = dtypes.complex_dtype(x.dtype)
    else:
        dtype = x.dtype
    return out.astype(dtype, copy=False)
