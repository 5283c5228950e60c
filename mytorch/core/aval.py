"""Abstract values: what tracing knows about an array (shape, dtype, weak type)."""

import math

import numpy as np

from mytorch.core import dtypes


class ShapedArray:
    """The abstract value of an array: `shape` (tuple of ints), `dtype`, `weak_type`.

    `weak_type` marks values that came from Python scalars: they adopt the dtype of the
    other operand in binary operations (`x * 2.0` keeps x's dtype).
    """

    __slots__ = ("shape", "dtype", "weak_type", "_hash")

    def __init__(self, shape, dtype, weak_type=False):
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.weak_type = bool(weak_type)
        self._hash = hash((self.shape, self.dtype, self.weak_type))

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return math.prod(self.shape)

    def update(self, shape=None, dtype=None, weak_type=None):
        """A copy with some fields replaced."""
        return ShapedArray(
            self.shape if shape is None else shape,
            self.dtype if dtype is None else dtype,
            self.weak_type if weak_type is None else weak_type,
        )

    def strip_weak(self):
        return self if not self.weak_type else ShapedArray(self.shape, self.dtype, False)

    def __eq__(self, other):
        return (
            type(other) is ShapedArray
            and self.shape == other.shape
            and self.dtype == other.dtype
            and self.weak_type == other.weak_type
        )

    def __hash__(self):
        return self._hash

    def str_short(self):
        """`f32[3,4]`: the form used in jaxprs and error messages."""
        return f"{dtypes.short_name(self.dtype)}[{','.join(map(str, self.shape))}]"

    __str__ = str_short

    def __repr__(self):
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapedArray({self.str_short()}{weak})"


def describe(avals):
    """`f32[3], i32[]`: a comma-separated list for error messages."""
    return ", ".join(a.str_short() for a in avals)
