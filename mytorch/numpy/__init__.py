"""`mytorch.numpy`: NumPy's API over immutable mytorch arrays, written in terms of lax.

Semantics and dtype promotion follow NumPy except where JAX deliberately differs
(32-bit defaults, weak Python scalars, clamped out-of-bounds gathers); docs/numpy.md lists
the differences.
"""

from mytorch.core.array import Array as ndarray  # noqa: F401
from mytorch.numpy.scalar_types import (  # noqa: F401
    bfloat16, bool, bool_, cdouble, complex64, complex128, complex_, csingle, double, float16,
    float32, float64, float_, int8, int16, int32, int64, int_, single, uint, uint8, uint16,
    uint32, uint64, intp, uintp, intc, uintc, byte, ubyte, short, ushort, longlong,
    ulonglong, half,
)
from mytorch.numpy._promote import result_type  # noqa: F401
from mytorch.numpy.creation import *  # noqa: F401,F403
from mytorch.numpy.ufuncs import *  # noqa: F401,F403
from mytorch.numpy.reductions import *  # noqa: F401,F403
from mytorch.numpy.manipulation import *  # noqa: F401,F403
from mytorch.numpy.indexing import *  # noqa: F401,F403
from mytorch.numpy.products import *  # noqa: F401,F403
from mytorch.numpy.sorting import *  # noqa: F401,F403
from mytorch.numpy.vectorize import piecewise, vectorize  # noqa: F401
from mytorch.numpy.index_tricks import *  # noqa: F401,F403
from mytorch.numpy.setops import *  # noqa: F401,F403
from mytorch.numpy.signal import *  # noqa: F401,F403
from mytorch.numpy.polynomial import *  # noqa: F401,F403
from mytorch.numpy.moments import *  # noqa: F401,F403
from mytorch.numpy.functional import *  # noqa: F401,F403
from mytorch.numpy.bitpack import *  # noqa: F401,F403
from mytorch.numpy.bits import spacing  # noqa: F401
from mytorch.numpy.bit_count import bitwise_count  # noqa: F401
from mytorch.numpy.bessel import i0  # noqa: F401
from mytorch.numpy.windows import *  # noqa: F401,F403
from mytorch.numpy.phase import unwrap  # noqa: F401
from mytorch.numpy.poly_division import polydiv  # noqa: F401
from mytorch.numpy.unique_results import *  # noqa: F401,F403
from mytorch.numpy.from_indices import fromfunction, mask_indices  # noqa: F401
from mytorch.numpy.text_io import frombuffer, fromstring  # noqa: F401
from mytorch.numpy.matvec import matvec, vecmat  # noqa: F401
from mytorch.numpy.conversions import *  # noqa: F401,F403
from mytorch.numpy import linalg  # noqa: F401
from mytorch.numpy import fft  # noqa: F401
from mytorch.numpy.ufunc import frompyfunc, make_ufuncs as _make_ufuncs, ufunc  # noqa: F401
from mytorch.numpy import methods as _methods  # noqa: F401  (installs Array operators)

import numpy as _np

pi, e, inf, nan, newaxis = _np.pi, _np.e, _np.inf, _np.nan, None
euler_gamma = _np.euler_gamma
# Arrays print through NumPy, so NumPy's print options are theirs
printoptions, get_printoptions, set_printoptions = (
    _np.printoptions, _np.get_printoptions, _np.set_printoptions)

_make_ufuncs(globals())  # add, multiply, maximum, ... gain reduce/accumulate/outer/at
