"""Scalar types (`mnp.float32`, ...): classes usable wherever a dtype is expected, and
callable like JAX's, so `mnp.float32(x)` makes an array of that dtype;
`isinstance(np.float32(1), mnp.float32)` holds. The aliases JAX
exports are here too: `bool` (= `bool_`), `int_`, `uint`, `float_`, `single`, `double`,
`complex_`, `csingle`, `cdouble`, and NumPy's C-type names `intp`, `uintp`, `intc`, `uintc`,
`byte`, `ubyte`, `short`, `ushort`, `longlong`, `ulonglong`, `half` (their NumPy widths on
64-bit Linux; the 64-bit ones narrow without x64 like `int64`)."""

import numpy as np

from mytorch.core import dtypes


class _ScalarMeta(type):
    """The type of `mnp.float32` and the like: classes that stand for a dtype (as JAX's)."""

    def __call__(cls, x):
        from mytorch.numpy.creation import asarray

        return asarray(x, dtype=cls.dtype)

    def __eq__(cls, other):
        if other is cls:
            return True
        if other is None:
            return False
        try:
            return cls.dtype == dtypes.to_dtype(other)
        except TypeError:
            return NotImplemented

    def __ne__(cls, other):
        eq = _ScalarMeta.__eq__(cls, other)
        return eq if eq is NotImplemented else not eq

    def __hash__(cls):
        return hash(cls.dtype)

    def __instancecheck__(cls, instance):
        return isinstance(instance, cls.dtype.type)  # NumPy scalars of the type

    def __repr__(cls):
        return f"<class 'mytorch.numpy.{cls.__name__}'>"


def _ScalarType(dtype):
    """`mnp.float32`: callable (`mnp.float32(1.5)` -> Array(1.5, dtype=float32)), usable
    wherever a dtype is expected (`cls.dtype`)."""
    d = np.dtype(dtype)
    name = "bool" if d == dtypes.bool_ else d.name
    doc = f"The {d.name} scalar type: `mnp.{name}(x)` is `mnp.asarray(x, dtype={d.name})`."
    return _ScalarMeta(name, (), {"dtype": d, "__module__": "mytorch.numpy", "__doc__": doc})


bool_ = _ScalarType(dtypes.bool_)
int8, int16, int32, int64 = (_ScalarType(d) for d in (np.int8, np.int16, np.int32, np.int64))
uint8, uint16, uint32, uint64 = (
    _ScalarType(d) for d in (np.uint8, np.uint16, np.uint32, np.uint64))
float16, float32, float64 = (_ScalarType(d) for d in (np.float16, np.float32, np.float64))
bfloat16 = _ScalarType(dtypes.bfloat16)
complex64, complex128 = _ScalarType(np.complex64), _ScalarType(np.complex128)
bool = bool_  # JAX's name (NumPy 2 has it too)
int_, uint, float_, double, single = int64, uint64, float64, float64, float32
complex_, csingle, cdouble = complex128, complex64, complex128
# NumPy's C-type names, with their widths on 64-bit Linux (NumPy's and JAX's)
intp, uintp, longlong, ulonglong = int64, uint64, int64, uint64
intc, uintc, byte, ubyte, short, ushort = int32, uint32, int8, uint8, int16, uint16
half = float16
