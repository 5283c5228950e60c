"""Reductions over axes, argmax/argmin, and cumulative reductions along one axis.

Reductions drop the reduced axes and keep the operand's dtype and weak type:

    reduce_sum(f32[3,4,5], axes=(0, 2)) -> f32[4]
    argmax(f32[3,4], axis=1, index_dtype=int32) -> i32[3]
    cumsum(f32[3,4], axis=1, reverse=True) -> f32[3,4]

Primitive parameters hold non-negative axes; the binders accept negative ones and normalise
them. Reducing an empty axis gives the reduction's identity (XLA's convention: 0 for sums,
1 for products, -inf/+inf or the integer min/max for max/min). The NumPy kernels live in
mytorch/backends/numpy/reductions.py.
"""

import operator

import numpy as np

from mytorch.core import dtypes
from mytorch.core.aval import ShapedArray
from mytorch.core.primitive import Primitive
from mytorch.core.source_info import user_error
from mytorch.lax._utils import asarray, short

__all__ = [
    "reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_and", "reduce_or",
    "reduce_xor", "argmax", "argmin", "cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp",
    "reduce_sum_p", "reduce_max_p", "reduce_min_p", "reduce_prod_p", "reduce_and_p",
    "reduce_or_p", "reduce_xor_p", "argmax_p", "argmin_p", "cumsum_p", "cumprod_p",
    "cummax_p", "cummin_p", "cumlogsumexp_p",
]

# ---- dtype classes -----------------------------------------------------------------------
_NUMBER = ("number", "integer, floating-point or complex",
           lambda d: dtypes.is_int(d) or dtypes.is_inexact(d))
_FLOAT = ("float", "floating-point", dtypes.is_float)
_LOGICAL = ("logical", "bool or integer", lambda d: dtypes.is_bool(d) or dtypes.is_int(d))
_ANY = ("any", "bool, integer, floating-point or complex", lambda d: True)


def _check_dtype(op, aval, kind):
    _, words, ok = kind
    if not ok(aval.dtype):
        hint = ""
        if kind is _NUMBER and dtypes.is_bool(aval.dtype):
            hint = "; convert bools first with lax.convert_element_type(x, np.int32)"
        elif kind is _LOGICAL and dtypes.is_float(aval.dtype):
            hint = "; compare first (e.g. lax.ne(x, 0.0)) to get a bool array"
        raise user_error(TypeError, f"{op} needs {words} operands, got {short(aval)}{hint}")


# ---- axis checks -------------------------------------------------------------------------
def _is_int(a):
    return isinstance(a, (int, np.integer)) and not isinstance(a, (bool, np.bool_))


def _normalize_axis(axis, ndim, op):
    """A binder's axis: in-range negative axes count from the end; anything else is passed
    on for the abstract evaluation to reject with a full message."""
    if not _is_int(axis):
        raise user_error(TypeError, f"{op}: an axis must be an int, got {axis!r}")
    axis = operator.index(axis)
    return axis + ndim if -ndim <= axis < 0 else axis


def _normalize_axes(axes, ndim, op):
    if _is_int(axes):
        axes = (axes,)
    try:
        axes = tuple(axes)
    except TypeError:
        raise user_error(TypeError, f"{op}: axes must be a tuple of ints, got {axes!r}") from None
    return tuple(_normalize_axis(a, ndim, op) for a in axes)


def _check_axis(op, aval, axis, what="axis"):
    if type(axis) is not int:
        raise user_error(TypeError, f"{op}: {what} must be a Python int, got {axis!r}")
    n = aval.ndim
    if 0 <= axis < n:
        return axis
    if n == 0:
        raise user_error(ValueError,
            f"{op}: {what} {axis} is invalid for the 0-d operand {short(aval)}, "
            "which has no axes")
    if -n <= axis < 0:
        raise user_error(ValueError,
            f"{op}: the primitive takes non-negative axes, got {what} {axis}; "
            f"the binder lax.{op} normalises negative axes")
    raise user_error(ValueError,
        f"{op}: {what} {axis} is out of bounds for {short(aval)}: it must be in "
        f"[{-n}, {n})")


def _check_axes(op, aval, axes):
    if not isinstance(axes, tuple):
        raise user_error(TypeError, f"{op}: axes must be a tuple of ints, got {axes!r}")
    for a in axes:
        _check_axis(op, aval, a)
    if len(set(axes)) != len(axes):
        raise user_error(ValueError,
            f"{op}: axes {axes} name an axis more than once (after negative "
            f"axes are normalised) for {short(aval)}")
    return axes


def _drop(shape, axes):
    return tuple(d for i, d in enumerate(shape) if i not in axes)


# ---- reductions over axes ----------------------------------------------------------------
def _example(call, result):
    if not call:
        return ""
    return f"""

    >>> from mytorch import lax
    >>> lax.{call}
    {result}"""


def _reducer(name, kind, doc, call=None, result=None):
    prim = Primitive(name, kind="reduction")

    @prim.def_abstract_eval
    def _abstract_eval(x, *, axes):
        _check_dtype(name, x, kind)
        axes = _check_axes(name, x, axes)
        return ShapedArray(_drop(x.shape, axes), x.dtype, x.weak_type)

    def fn(operand, axes):
        x = asarray(operand)
        return prim.bind(x, axes=_normalize_axes(axes, x.ndim, name))

    fn.__name__ = fn.__qualname__ = name
    example = _example(call, result)
    fn.__doc__ = f"""{doc}

    Args:
      operand: an array of any shape.
      axes: the axes to reduce: distinct ints, negative ones count from the end.

    Returns:
      An array of `operand`'s dtype (and weak type), its shape without `axes`.

    Raises:
      ValueError: an axis out of range or repeated. TypeError: an unsupported dtype.{example}
    """
    return prim, fn


reduce_sum_p, reduce_sum = _reducer(
    "reduce_sum", _NUMBER,
    "Sum of `operand` over `axes`; 0 over an empty axis.\n\n"
    "    Integers wrap on overflow; float16/bfloat16 accumulate in float32.",
    "reduce_sum(np.arange(6, dtype=np.float32).reshape(2, 3), (1,))",
    "Array([ 3., 12.], dtype=float32)")
reduce_sum_p.def_linear()
reduce_prod_p, reduce_prod = _reducer(
    "reduce_prod", _NUMBER,
    "Product of `operand` over `axes`; 1 over an empty axis (integers wrap).")
reduce_max_p, reduce_max = _reducer(
    "reduce_max", _ANY,
    "Maximum of `operand` over `axes` (NaN propagates).\n\n"
    "    An empty axis gives -inf for floats, the integer minimum for ints, False for bools.")
reduce_min_p, reduce_min = _reducer(
    "reduce_min", _ANY,
    "Minimum of `operand` over `axes` (NaN propagates).\n\n"
    "    An empty axis gives +inf for floats, the integer maximum for ints, True for bools.")
reduce_and_p, reduce_and = _reducer(
    "reduce_and", _LOGICAL,
    "Logical (bool) or bitwise (int) AND of `operand` over `axes`; all ones if empty.")
reduce_or_p, reduce_or = _reducer(
    "reduce_or", _LOGICAL,
    "Logical (bool) or bitwise (int) OR of `operand` over `axes`; zero if empty.")
reduce_xor_p, reduce_xor = _reducer(
    "reduce_xor", _LOGICAL,
    "Logical (bool) or bitwise (int) XOR of `operand` over `axes`; zero if empty.")


# ---- argmax / argmin ---------------------------------------------------------------------
def _arg_reducer(name, which):
    prim = Primitive(name, kind="reduction")

    @prim.def_abstract_eval
    def _abstract_eval(x, *, axes, index_dtype):
        _check_dtype(name, x, _ANY)
        if not isinstance(axes, tuple) or len(axes) != 1:
            raise user_error(ValueError, f"{name}: axes must be a tuple of one axis, got {axes!r}")
        (axis,) = axes
        _check_axis(name, x, axis)
        if x.shape[axis] == 0:
            raise user_error(ValueError, f"{name}: axis {axis} of {short(x)} is empty, and the "
                                         f"{which} of no values is undefined")
        index_dtype = np.dtype(index_dtype)
        if not dtypes.is_int(index_dtype):
            raise user_error(TypeError,
                f"{name}: index_dtype must be an integer dtype, got {index_dtype}")
        return ShapedArray(_drop(x.shape, axes), index_dtype, False)

    def fn(operand, axis, index_dtype=dtypes.int32):
        x = asarray(operand)
        axis = _normalize_axis(axis, x.ndim, name)
        try:
            index_dtype = dtypes.canonicalize(index_dtype, explicit=True)
        except TypeError as err:
            raise user_error(TypeError, f"{name}: {err}") from None
        return prim.bind(x, axes=(axis,), index_dtype=index_dtype)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"""Index of the {which} of `operand` along `axis` (first one on ties).

    NaN counts as the {which} (NumPy's convention): the first NaN's index is returned.

    Args:
      operand: an array of rank >= 1 (any dtype); `axis` must not be empty.
      axis: the axis to search (negative counts from the end).
      index_dtype: the integer dtype of the result (default int32).

    Returns:
      An `index_dtype` array of `operand`'s shape without `axis`.

    Raises:
      ValueError: `axis` out of range or empty. TypeError: a non-integer `index_dtype`.

    >>> from mytorch import lax
    >>> lax.{name}(np.array([[1.0, 5.0, 5.0], [7.0, 0.0, 3.0]]), 1, np.int32)
    Array({"[1, 0]" if name == "argmax" else "[0, 1]"}, dtype=int32)
    """
    return prim, fn


argmax_p, argmax = _arg_reducer("argmax", "maximum")
argmin_p, argmin = _arg_reducer("argmin", "minimum")


# ---- cumulative reductions ---------------------------------------------------------------
def _cumulative(name, kind, doc, call=None, result=None):
    prim = Primitive(name, kind="reduction")

    @prim.def_abstract_eval
    def _abstract_eval(x, *, axis, reverse):
        _check_dtype(name, x, kind)
        _check_axis(name, x, axis)
        if not isinstance(reverse, bool):
            raise user_error(ValueError, f"{name}: reverse must be a bool, got {reverse!r}")
        return x

    def fn(operand, axis=0, reverse=False):
        x = asarray(operand)
        return prim.bind(x, axis=_normalize_axis(axis, x.ndim, name), reverse=bool(reverse))

    fn.__name__ = fn.__qualname__ = name
    example = _example(call, result)
    fn.__doc__ = f"""{doc}

    Args:
      operand: an array of rank >= 1.
      axis: the axis to scan along (negative counts from the end).
      reverse: scan from the end of the axis towards its start.

    Returns:
      An array of `operand`'s shape, dtype and weak type.

    Raises:
      ValueError: `axis` out of range (or a 0-d operand). TypeError: an unsupported dtype.{example}
    """
    return prim, fn


cumsum_p, cumsum = _cumulative(
    "cumsum", _NUMBER,
    "Running sum along `axis` (float16/bfloat16 accumulate in float32; integers wrap).",
    "cumsum(np.array([1, 2, 3], np.int32), reverse=True)", "Array([6, 5, 3], dtype=int32)")
cumsum_p.def_linear()
cumprod_p, cumprod = _cumulative(
    "cumprod", _NUMBER, "Running product along `axis` (integers wrap).")
cummax_p, cummax = _cumulative(
    "cummax", _NUMBER, "Running maximum along `axis` (a NaN propagates to the end).")
cummin_p, cummin = _cumulative(
    "cummin", _NUMBER, "Running minimum along `axis` (a NaN propagates to the end).")
cumlogsumexp_p, cumlogsumexp = _cumulative(
    "cumlogsumexp", _FLOAT,
    "Running log(sum(exp(x))) along `axis`, computed stably (no overflow for large\n"
    "    inputs; -inf entries contribute nothing).")
