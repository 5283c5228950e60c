"""GPU eager kernel of the `fft` primitive: the NumPy backend's kernel
(backends/numpy/fft.py) with CuPy's n-dimensional transforms over the trailing axes (cuFFT
plans through `cupy.fft` on a GPU).

The result is cast to the primitive's dtype; CuPy transforms complex64 in single precision
(cuFFT's C2C/R2C/C2R), NumPy 2 does too.
"""

from mytorch.backends.cupy.kernels import register
from mytorch.backends.cupy.kernels_common import any_module
from mytorch.backends.numpy.fft import _fft
from mytorch.lax.fft import fft_p

register(fft_p)(any_module(_fft))
