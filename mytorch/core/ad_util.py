"""What the differentiation interpreters need from core: symbolic zeros, undefined primals,
and the two primitives they emit themselves (`add_any` to accumulate tangents and
cotangents, `zeros` to materialise a symbolic zero when a value must exist).

    Zero(aval)            a tangent or cotangent known to be zero: costs nothing
    UndefinedPrimal(aval) a linear input of a transpose rule (its value is not known)
"""

import numpy as np

from mytorch.core import dtypes
from mytorch.core.aval import ShapedArray
from mytorch.core.primitive import Primitive
from mytorch.core.trace import aval_of


class Zero:
    """A symbolic zero tangent/cotangent of abstract value `aval`."""

    __slots__ = ("aval",)

    def __init__(self, aval):
        self.aval = aval

    @staticmethod
    def like(x):
        return Zero(tangent_aval(aval_of(x)))

    def __repr__(self):
        return f"Zero({self.aval.str_short()})"


class UndefinedPrimal:
    """A linear argument of a transpose rule: only its abstract value is known."""

    __slots__ = ("aval",)

    def __init__(self, aval):
        self.aval = aval

    def __repr__(self):
        return f"UndefinedPrimal({self.aval.str_short()})"


def is_undefined(x):
    return type(x) is UndefinedPrimal


def is_differentiable(aval):
    """Whether values of `aval` have tangents (floats and complex numbers do; ints and
    bools do not)."""
    return dtypes.is_inexact(aval.dtype)


def tangent_aval(aval):
    """The abstract value of a tangent of a value of `aval` (same shape and dtype)."""
    return aval


# ---- the interpreters' own primitives -------------------------------------------------
zeros_p = Primitive("zeros", kind="ad")


@zeros_p.def_abstract_eval
def _zeros_abstract_eval(*, shape, dtype, weak_type):
    return ShapedArray(shape, dtype, weak_type)


zeros_p.def_lowering("cpu", lambda *, shape, dtype, weak_type: np.zeros(shape, dtype))


def zeros(aval):
    """A zero array of `aval`, bound under the current trace."""
    return zeros_p.bind(shape=aval.shape, dtype=aval.dtype, weak_type=aval.weak_type)


add_any_p = Primitive("add_any", kind="ad")


@add_any_p.def_abstract_eval
def _add_any_abstract_eval(x, y):
    if x.shape != y.shape or x.dtype != y.dtype:
        raise TypeError(f"add_any needs equal types, got {x.str_short()} and {y.str_short()}")
    return ShapedArray(x.shape, x.dtype, x.weak_type and y.weak_type)


def _add_kernel(x, y):
    with np.errstate(all="ignore"):
        return np.add(x, y)


add_any_p.def_lowering("cpu", _add_kernel)


def instantiate(t):
    """`t` as an array: a symbolic Zero becomes a zero array."""
    return zeros(t.aval) if type(t) is Zero else t


def add_tangents(a, b):
    """a + b for tangents/cotangents of one aval, skipping symbolic zeros."""
    if type(a) is Zero:
        return b
    if type(b) is Zero:
        return a
    return add_any_p.bind(a, b)


# add_any and zeros are linear / constant: their derivative rules live with them.
def _add_any_jvp(primals, tangents):
    return add_any_p.bind(*primals), add_tangents(*tangents)


def _add_any_transpose(ct, x, y):
    return [ct if is_undefined(x) else None, ct if is_undefined(y) else None]


def _zeros_jvp(primals, tangents, **params):
    out = zeros_p.bind(**params)
    return out, Zero(aval_of(out))


add_any_p.def_jvp(_add_any_jvp)
add_any_p.def_transpose(_add_any_transpose)
add_any_p.def_linear()
zeros_p.def_jvp(_zeros_jvp)
