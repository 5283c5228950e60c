"""The operators and methods of `Array`: `x + y`, `x < 0`, `x[idx]`, `x.at[idx].set(v)`,
`x.T`, `x.reshape(2, 3)`, `x.sum(axis=0)`, `x.astype(dtype)`, ...

Each delegates to the mytorch.numpy function of the same meaning, so it works on concrete
arrays and tracers alike, with the same promotion rules. Binary operators accept Arrays,
Python scalars, NumPy arrays and scalars, and plain lists and tuples; for anything else
(NamedTuples included) they return NotImplemented, so Python tries the other operand's
reflected operator.

The common case, an operation between two arrays of one dtype and one shape (or a float
array and a Python number), binds the lax primitive directly and skips promotion.

Differences from NumPy's methods: `x.sort()` and `x.sort(axis)` return a new sorted array
(arrays are immutable); `x.view()` is not supported; `x[idx] = v` raises TypeError (use
`x.at[idx].set(v)`).
"""

import math

import numpy as np

import mytorch.numpy as _mnp  # still being initialised: its attributes are read at call time
from mytorch import lax
from mytorch.core import dtypes
from mytorch.core.array import Array, from_numpy, install_methods
from mytorch.lax import elementwise as _ew
from mytorch.numpy import manipulation as _manip
from mytorch.numpy._manip_util import _is_int

__all__ = []

_FLOATS = frozenset((dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64))
_INTS = frozenset((dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64, dtypes.uint8,
                   dtypes.uint16, dtypes.uint32, dtypes.uint64))
_COMPLEXES = frozenset((dtypes.complex64, dtypes.complex128))
_INEXACT = _FLOATS | _COMPLEXES
_NUMERIC = _FLOATS | _INTS | _COMPLEXES
_BOOL_INT = _INTS | {dtypes.bool_}
_ANY = _NUMERIC | {dtypes.bool_}
_OPERANDS = (Array, np.ndarray, np.bool_, np.number, bool, int, float, complex)


def _operand(x):
    """Whether a binary operator converts `x` (else it returns NotImplemented). Plain lists
    and tuples convert, as in NumPy; their subclasses do not, so that a NamedTuple class
    defining the reflected operator (`__rmul__`, ...) gets the call, as in JAX."""
    return isinstance(x, _OPERANDS) or type(x) in (list, tuple)


def _same_kind(x, y, kinds):
    """Whether lax's primitive gives exactly what promotion would: one dtype in `kinds`,
    not both weak (two weak values promote to the default dtype), equal or 0-d shapes."""
    dt = x.dtype
    if y.dtype != dt or dt not in kinds or (x.weak_type and y.weak_type):
        return False
    return x.shape == y.shape or not y.shape or not x.shape


_IINFO = {d: np.iinfo(d) for d in _INTS}
_SCALARS = {}  # (dtype, type, value, sign, device) -> weak 0-d array: immutable, so shared


def _scalar_fast(x, y, kinds):
    """The weak 0-d operand for a Python float or int `y` against a strong float or int
    array `x`, when promotion would just give x's dtype; else None."""
    dt = x.dtype
    if kinds is None or x.weak_type or dt not in kinds or not dtypes.is_canonical(dt):
        return None  # (an int64 array made under x64, used without it, promotes: narrows)
    t, info = type(y), _IINFO.get(dt)
    if t is float:
        if dt not in _FLOATS:
            return None
        key = (dt, t, y, math.copysign(1.0, y), getattr(x, "_device", None))
    elif t is int:
        if not (info.min <= y <= info.max if info else -(2**31) <= y < 2**31):
            return None  # the slow path raises OverflowError or converts as NumPy does
        if info is None and dt not in _FLOATS:
            return None
        key = (dt, t, y, 0, getattr(x, "_device", None))
    else:
        return None
    hit = _SCALARS.get(key)
    if hit is None:
        # the value promotion gives: a float goes through float32 (float64 for a float64
        # x), an int is exact; then x's dtype
        src = np.int64 if t is int else (np.float64 if dt == dtypes.float64 else np.float32)
        hit = from_numpy(np.asarray(y, src).astype(dt), weak_type=True, device=key[-1])
        if len(_SCALARS) >= 1024:
            _SCALARS.clear()
        _SCALARS[key] = hit
    return hit


def _binary(prim, fn_name, kinds=(), scalar_kinds=None):
    """`x <op> y` and its reflection: fast lax path, else mytorch.numpy's `fn_name`."""

    def forward(self, other):
        if isinstance(other, Array):
            if _same_kind(self, other, kinds):
                return prim.bind(self, other)
        elif not _operand(other):
            return NotImplemented
        else:
            y = _scalar_fast(self, other, scalar_kinds)
            if y is not None:
                return prim.bind(self, y)
        return getattr(_mnp, fn_name)(self, other)

    def reflected(self, other):
        if not _operand(other):
            return NotImplemented
        if not isinstance(other, Array):
            y = _scalar_fast(self, other, scalar_kinds)
            if y is not None:
                return prim.bind(y, self)
        return getattr(_mnp, fn_name)(other, self)

    forward.__doc__ = f"`mytorch.numpy.{fn_name}(self, other)`."
    reflected.__doc__ = f"`mytorch.numpy.{fn_name}(other, self)`."
    return forward, reflected


def _delegate(fn_name):
    """A binary operator that always goes through mytorch.numpy's `fn_name`."""

    def forward(self, other):
        if not _operand(other):
            return NotImplemented
        return getattr(_mnp, fn_name)(self, other)

    def reflected(self, other):
        if not _operand(other):
            return NotImplemented
        return getattr(_mnp, fn_name)(other, self)

    forward.__doc__ = f"`mytorch.numpy.{fn_name}(self, other)`."
    reflected.__doc__ = f"`mytorch.numpy.{fn_name}(other, self)`."
    return forward, reflected


def _unary(prim, fn_name, kinds):
    def op(self):
        if self.dtype in kinds:
            return prim.bind(self)
        return getattr(_mnp, fn_name)(self)

    op.__doc__ = f"`mytorch.numpy.{fn_name}(self)`."
    return op


def _pow(self, other):
    """`self ** other`: a Python int exponent is `lax.integer_pow` (exact, one op)."""
    if type(other) is int and self.dtype in _NUMERIC and not self.weak_type and (
        other >= 0 or self.dtype in _INEXACT
    ):
        return lax.integer_pow(self, other)
    if _operand(other):
        return _mnp.power(self, other)
    return NotImplemented


def _rpow(self, other):
    if not _operand(other):
        return NotImplemented
    return _mnp.power(other, self)


def _matmul(self, other):
    from mytorch.numpy.products import matmul

    return matmul(self, other) if _operand(other) else NotImplemented


def _rmatmul(self, other):
    from mytorch.numpy.products import matmul

    return matmul(other, self) if _operand(other) else NotImplemented


def _divmod(self, other):
    if not _operand(other):
        return NotImplemented
    return _mnp.floor_divide(self, other), _mnp.remainder(self, other)


def _rdivmod(self, other):
    if not _operand(other):
        return NotImplemented
    return _mnp.floor_divide(other, self), _mnp.remainder(other, self)


def _getitem(self, idx):
    """`x[idx]`: NumPy's basic and advanced indexing (out-of-bounds gathers clamp)."""
    from mytorch.numpy.indexing import getitem

    return getitem(self, idx)


def _at(self):
    """`x.at[idx].set(v)` / `.add(v)` / `.mul(v)` / `.min(v)` / `.max(v)` / `.get()`:
    functional updates that return a new array."""
    from mytorch.numpy.indexing import IndexUpdateHelper

    return IndexUpdateHelper(self)


def _round_dunder(self, ndigits=None):
    """`round(x)`: a Python int for a concrete 0-d array (half to even, as Python's
    `round`), else an array of the default int; `round(x, ndigits)`: `mnp.round`."""
    if ndigits is not None:
        return _mnp.round(self, ndigits)
    if not self.shape and hasattr(self, "_buf"):
        return round(self.item())
    return _mnp.round(self).astype(dtypes.default_int())


# ---- shape methods ------------------------------------------------------------------------
def _reshape(self, *shape, order="C", **kwargs):
    """`x.reshape(2, 3)` or `x.reshape((2, 3))` (also `shape=`); `order` "C" or "F"."""
    if "shape" in kwargs:
        if shape:
            raise TypeError("reshape: give the shape positionally or as shape=, not both")
        shape = kwargs.pop("shape")
    elif len(shape) == 1 and not _is_int(shape[0]):
        shape = shape[0]
    if set(kwargs) - {"copy"}:
        raise TypeError(f"reshape: unexpected keyword arguments {sorted(kwargs)}")
    return _manip.reshape(self, shape, order)


def _transpose(self, *axes):
    """`x.transpose()`, `x.transpose(1, 0)` or `x.transpose((1, 0))`."""
    if not axes or (len(axes) == 1 and axes[0] is None):
        return _manip.transpose(self)
    if len(axes) == 1 and not _is_int(axes[0]):
        axes = axes[0]
    return _manip.transpose(self, axes)


def _astype(self, dtype, copy=False, device=None):
    """`x` converted to `dtype` (strongly typed). Python's float/int mean the default
    float/int types; an explicit 64-bit dtype without x64 narrows with an X64Warning."""
    if dtype is float:
        dt = dtypes.default_float()
    elif dtype is int:
        dt = dtypes.default_int()
    elif dtype is bool:
        dt = dtypes.bool_
    else:
        dt = dtypes.canonicalize(dtype, explicit=True)
    return lax.convert_element_type(self, dt)


def _view(self, *args, **kwargs):
    raise NotImplementedError(
        f"Array.view is not supported ({self.aval.str_short()}): mytorch arrays are immutable "
        "and have no views. Use the array itself (sharing is safe), x.astype(dtype) to "
        "convert values, or lax.bitcast_convert_type(x, dtype) to reinterpret bits"
    )


def _sort(self, axis=-1, *args, **kwargs):
    """A sorted copy along `axis` (NumPy's `ndarray.sort` sorts in place and returns None;
    mytorch arrays are immutable, so this returns the new array)."""
    return _mnp.sort(self, axis, *args, **kwargs)


def _method(fn_name, module=None, name=None):
    """`x.<name>(*args, **kwargs)` = `mytorch.numpy.<fn_name>(x, *args, **kwargs)`."""

    def method(self, *args, **kwargs):
        return getattr(module or _mnp, fn_name)(self, *args, **kwargs)

    method.__name__ = method.__qualname__ = name or fn_name
    method.__doc__ = f"`mytorch.numpy.{fn_name}(self, ...)`."
    return method


def _contains(self, value):
    return bool(_mnp.any(self == value))


_methods = {}
for _name, _prim, _fn, _kinds in [
    ("add", _ew.add_p, "add", _NUMERIC), ("sub", _ew.sub_p, "subtract", _NUMERIC),
    ("mul", _ew.mul_p, "multiply", _NUMERIC), ("truediv", _ew.div_p, "true_divide", _INEXACT),
    ("and", _ew.and_p, "bitwise_and", _BOOL_INT), ("or", _ew.or_p, "bitwise_or", _BOOL_INT),
    ("xor", _ew.xor_p, "bitwise_xor", _BOOL_INT),
]:
    _methods[f"__{_name}__"], _methods[f"__r{_name}__"] = _binary(_prim, _fn, _kinds, _kinds)

for _name, _prim, _fn in [
    ("eq", _ew.eq_p, "equal"), ("ne", _ew.ne_p, "not_equal"), ("lt", _ew.lt_p, "less"),
    ("le", _ew.le_p, "less_equal"), ("gt", _ew.gt_p, "greater"),
    ("ge", _ew.ge_p, "greater_equal"),
]:
    # a reflected comparison is the mirrored comparison: Python calls y.__gt__(x) for x < y
    _methods[f"__{_name}__"] = _binary(_prim, _fn, _ANY, _NUMERIC)[0]

for _name, _fn in [
    ("floordiv", "floor_divide"), ("mod", "remainder"), ("lshift", "left_shift"),
    ("rshift", "right_shift"),
]:
    _methods[f"__{_name}__"], _methods[f"__r{_name}__"] = _delegate(_fn)

_methods.update({
    "__pow__": _pow, "__rpow__": _rpow, "__matmul__": _matmul, "__rmatmul__": _rmatmul,
    "__divmod__": _divmod, "__rdivmod__": _rdivmod,
    "__neg__": _unary(_ew.neg_p, "negative", _NUMERIC),
    "__pos__": _method("positive", name="__pos__"),
    "__abs__": _unary(_ew.abs_p, "abs", _NUMERIC),
    "__invert__": _unary(_ew.not_p, "invert", _BOOL_INT),
    "__getitem__": _getitem,
    "__round__": _round_dunder,
    "__contains__": _contains,
    "at": property(_at),
    "T": property(lambda self: _manip.transpose(self), doc="`x` with its axes reversed."),
    "mT": property(lambda self: _manip.matrix_transpose(self),
                   doc="`x` with its last two axes swapped."),
    "real": property(lambda self: _mnp.real(self), doc="The real part."),
    "imag": property(lambda self: _mnp.imag(self), doc="The imaginary part (zeros for a "
                     "real `x`)."),
    "itemsize": property(lambda self: self.dtype.itemsize, doc="Bytes per element."),
    "nbytes": property(lambda self: self.size * self.dtype.itemsize, doc="Bytes in all."),
    "reshape": _reshape,
    "transpose": _transpose,
    "astype": _astype,
    "view": _view,
    "sort": _sort,
    "flatten": _method("ravel", _manip, "flatten"),
    "ravel": _method("ravel", _manip),
    "squeeze": _method("squeeze", _manip),
    "swapaxes": _method("swapaxes", _manip),
    "repeat": _method("repeat", _manip),
    "diagonal": _method("diagonal", _manip),
    "trace": _method("trace", _manip),
    "conj": _method("conjugate", name="conj"),
})
for _fn in ("sum", "prod", "mean", "var", "std", "max", "min", "argmax", "argmin", "all",
            "any", "cumsum", "cumprod", "ptp", "clip", "round", "conjugate", "dot", "nonzero",
            "argsort", "take", "choose", "searchsorted"):
    _methods[_fn] = _method(_fn)

install_methods(_methods)
