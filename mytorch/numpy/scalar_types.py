"""Scalar type objects (`mnp.float32`, ...): usable wherever a dtype is expected, and
callable like JAX's, so `mnp.float32(x)` makes an array of that dtype. The aliases JAX
exports are here too: `bool` (= `bool_`), `int_`, `uint`, `float_`, `single`, `double`."""

import numpy as np

from mytorch.core import dtypes


class _ScalarType:
    """A dtype that can also be called: `mnp.float32(1.5)` -> Array(1.5, dtype=float32)."""

    def __init__(self, dtype):
        self.dtype = np.dtype(dtype)
        self.__name__ = self.dtype.name

    def __call__(self, x):
        from mytorch.numpy.creation import asarray

        return asarray(x, dtype=self.dtype)

    def __eq__(self, other):
        try:
            return self.dtype == np.dtype(other)
        except TypeError:
            return NotImplemented

    def __hash__(self):
        return hash(self.dtype)

    def __repr__(self):
        return f"mytorch.numpy.{self.__name__}"


bool_ = _ScalarType(dtypes.bool_)
int8, int16, int32, int64 = (_ScalarType(d) for d in (np.int8, np.int16, np.int32, np.int64))
uint8, uint16, uint32, uint64 = (
    _ScalarType(d) for d in (np.uint8, np.uint16, np.uint32, np.uint64))
float16, float32, float64 = (_ScalarType(d) for d in (np.float16, np.float32, np.float64))
bfloat16 = _ScalarType(dtypes.bfloat16)
bool = bool_  # JAX's name (NumPy 2 has it too)
int_, uint, float_, double, single = int64, uint64, float64, float64, float32
