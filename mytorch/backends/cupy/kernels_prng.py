"""GPU eager kernel of the threefry-2x32 random-bit primitive (mytorch/lax/prng.py): the NumPy
backend's kernel (backends/numpy/prng.py) with CuPy's arrays.

The same 20 rounds on whole uint32 arrays: CuPy's uint32 arithmetic wraps modulo 2**32 and
its shifts are logical, as NumPy's, so the bits are the NumPy kernel's (`mt.random` gives
the same numbers on a GPU). The NumPy kernel's scalar shortcut for tiny inputs (Python
ints) is taken with NumPy operands only: its results are the same bits, and on a GPU it
would cost a copy to the host.
"""

from mytorch.backends.cupy.kernels import register
from mytorch.backends.cupy.kernels_common import any_module
from mytorch.backends.numpy.prng import _threefry2x32
from mytorch.lax import prng

register(prng.threefry2x32_p)(any_module(_threefry2x32))
