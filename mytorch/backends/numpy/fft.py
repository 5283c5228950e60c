"""NumPy kernel of the `fft` primitive (mytorch/lax/fft.py): numpy.fft's n-dimensional
transforms over the trailing axes, with `s` the primitive's fft_lengths.

The result is cast to the primitive's dtype (complex64 stays complex64, as in JAX): NumPy 2
computes single precision in single precision, older NumPy in double.

Written for any array module (`xp`, NumPy by default): the GPU backend registers the same
kernel with CuPy's `cupy.fft` (cuFFT plans; backends/cupy/kernels_fft.py).
"""

import numpy as np

from mytorch.backends.numpy import numpy_backend
from mytorch.core import dtypes
from mytorch.lax.fft import FftType, fft_p

_NAMES = {FftType.FFT: "fftn", FftType.IFFT: "ifftn", FftType.RFFT: "rfftn",
          FftType.IRFFT: "irfftn"}


@numpy_backend.register(fft_p)
def _fft(x, *, fft_type, fft_lengths, xp=np):
    axes = tuple(range(x.ndim - len(fft_lengths), x.ndim))
    out = getattr(xp.fft, _NAMES[fft_type])(x, s=fft_lengths, axes=axes)
    if fft_type == FftType.IRFFT:
        dtype = dtypes.real_dtype(x.dtype)
    elif fft_type == FftType.RFFT:
        dtype = dtypes.complex_dtype(x.dtype)
    else:
        dtype = x.dtype
    return out.astype(dtype, copy=False)
