"""NumPy kernel of the `fft` primitive (mytorch/lax/fft.py): numpy.fft's n-dimensional
transforms over the trailing axes, with `s` the primitive's fft_lengths.

The result is cast to the primitive's dtype (complex64 stays complex64, as in JAX): NumPy 2
computes single precision in single precision, older NumPy in double.
"""

import numpy as np

from mytorch.backends.numpy import numpy_backend
from mytorch.core import dtypes
from mytorch.lax.fft import FftType, fft_p

_NUMPY_FFT = {FftType.FFT: np.fft.fftn, FftType.IFFT: np.fft.ifftn,
              FftType.RFFT: np.fft.rfftn, FftType.IRFFT: np.fft.irfftn}


@numpy_backend.register(fft_p)
def _fft(x, *, fft_type, fft_lengths):
    axes = tuple(range(x.ndim - len(fft_lengths), x.ndim))
    out = _NUMPY_FFT[fft_type](x, s=fft_lengths, axes=axes)
    if fft_type == FftType.IRFFT:
        dtype = dtypes.real_dtype(x.dtype)
    elif fft_type == FftType.RFFT:
        dtype = dtypes.complex_dtype(x.dtype)
    else:
        dtype = x.dtype
    return out.astype(dtype, copy=False)
