"""Elementwise primitives: one row per op with its dtype kinds and abstract evaluation.

Operands of an n-ary elementwise primitive share one dtype and one shape, except that 0-d
operands broadcast (so `x * 2.0` stays one equation). The result is weakly typed when every
operand is. JVP and batching rules are registered in elementwise_rules.py; each backend
keeps its own lowering of every row (backends/numpy/elementwise.py,
backends/cupy/expressions.py).
"""

import warnings

import numpy as np

from mytorch.core import dtypes
from mytorch.core.aval import ShapedArray
from mytorch.core.primitive import Primitive
from mytorch.lax._utils import (
    asarray,
    check_dtype,
    coerce_operands,
    elementwise_shape,
    same_dtypes,
    weak_of,
)

FLOAT = frozenset({"float"})
INEXACT = frozenset({"float", "complex"})
COMPLEX = frozenset({"complex"})
INT = frozenset({"int", "uint"})
NUMERIC = frozenset({"int", "uint", "float", "complex"})
REAL = frozenset({"int", "uint", "float"})
BOOL_INT = frozenset({"bool", "int", "uint"})
ANY = frozenset({"bool", "int", "uint", "float", "complex"})


def unary(name, kinds=INEXACT, out_dtype=None):
    """Define a unary elementwise primitive and its binder: returns (prim, fn).
    `out_dtype` is a dtype, or "real" for the real dtype of a complex operand (abs)."""
    prim = Primitive(name, kind="elementwise")

    @prim.def_abstract_eval
    def _abstract_eval(x, **params):
        check_dtype(name, x, kinds)
        if isinstance(out_dtype, str):  # "real": the real dtype of a complex operand
            return ShapedArray(x.shape, dtypes.real_dtype(x.dtype), x.weak_type)
        if out_dtype is not None:
            return ShapedArray(x.shape, out_dtype, False)
        return ShapedArray(x.shape, x.dtype, x.weak_type)

    def fn(x):
        return prim.bind(asarray(x))

    fn.__name__ = name
    fn.__doc__ = f"Elementwise {name} of `x` (any shape); same shape out."
    return prim, fn


def binary(name, kinds=NUMERIC, out_dtype=None):
    """Define a binary elementwise primitive and its binder: returns (prim, fn)."""
    prim = Primitive(name, kind="elementwise")

    @prim.def_abstract_eval
    def _abstract_eval(x, y):
        dtype = same_dtypes(name, (x, y))
        check_dtype(name, x, kinds)
        shape = elementwise_shape(name, (x, y))
        if out_dtype is not None:
            return ShapedArray(shape, out_dtype, False)
        return ShapedArray(shape, dtype, weak_of((x, y)))

    def fn(x, y):
        return prim.bind(*coerce_operands(name, x, y))

    fn.__name__ = name
    fn.__doc__ = (f"Elementwise {name} of `x` and `y`: equal shapes (or 0-d) and one dtype.")
    return prim, fn


# ---- the table ----------------------------------------------------------------------------
neg_p, neg = unary("neg", NUMERIC)
abs_p, abs = unary("abs", NUMERIC, out_dtype="real")  # |x| of a complex x is real
sign_p, sign = unary("sign", NUMERIC)  # x / |x| for a complex x
floor_p, floor = unary("floor", FLOAT)
ceil_p, ceil = unary("ceil", FLOAT)
exp_p, exp = unary("exp")
exp2_p, exp2 = unary("exp2")
log_p, log = unary("log")
log1p_p, log1p = unary("log1p")
expm1_p, expm1 = unary("expm1")
sqrt_p, sqrt = unary("sqrt")
rsqrt_p, rsqrt = unary("rsqrt")
cbrt_p, cbrt = unary("cbrt", FLOAT)
sin_p, sin = unary("sin")
cos_p, cos = unary("cos")
tan_p, tan = unary("tan")
asin_p, asin = unary("asin")
acos_p, acos = unary("acos")
atan_p, atan = unary("atan")
sinh_p, sinh = unary("sinh")
cosh_p, cosh = unary("cosh")
tanh_p, tanh = unary("tanh")
asinh_p, asinh = unary("asinh")
acosh_p, acosh = unary("acosh")
atanh_p, atanh = unary("atanh")
logistic_p, logistic = unary("logistic")
erf_p, erf = unary("erf", FLOAT)
erfc_p, erfc = unary("erfc", FLOAT)
erf_inv_p, erf_inv = unary("erf_inv", FLOAT)
lgamma_p, lgamma = unary("lgamma", FLOAT)
digamma_p, digamma = unary("digamma", FLOAT)
is_finite_p, is_finite = unary("is_finite", out_dtype=np.bool_)
not_p, bitwise_not = unary("not", BOOL_INT)
square_p, square = unary("square", NUMERIC)
reciprocal_p, reciprocal = unary("reciprocal")
stop_gradient_p, _ = unary("stop_gradient", ANY)
real_p, real = unary("real", COMPLEX, out_dtype="real")
imag_p, imag = unary("imag", COMPLEX, out_dtype="real")
conj_p, conj = unary("conj", COMPLEX)
real.__doc__ = "The real part of the complex `x` (any shape): float32/float64 out."
imag.__doc__ = "The imaginary part of the complex `x` (any shape): float32/float64 out."
conj.__doc__ = "The complex conjugate of the complex `x` (any shape)."


def stop_gradient(x):
    """`x` (a pytree of arrays) unchanged, with a zero derivative for every float leaf."""
    from mytorch.core.tree_util import tree_map

    def leaf(v):
        v = asarray(v)
        return stop_gradient_p.bind(v) if dtypes.is_inexact(v.dtype) else v

    return tree_map(leaf, x)


add_p, add = binary("add")
sub_p, sub = binary("sub")
mul_p, mul = binary("mul")
div_p, div = binary("div")
rem_p, rem = binary("rem", REAL)
pow_p, pow = binary("pow", INEXACT)
max_p, max = binary("max", ANY)
min_p, min = binary("min", ANY)
atan2_p, atan2 = binary("atan2", FLOAT)
nextafter_p, nextafter = binary("nextafter", FLOAT)
and_p, bitwise_and = binary("and", BOOL_INT)
or_p, bitwise_or = binary("or", BOOL_INT)
xor_p, bitwise_xor = binary("xor", BOOL_INT)
shift_left_p, shift_left = binary("shift_left", INT)
shift_right_arithmetic_p, shift_right_arithmetic = binary("shift_right_arithmetic", INT)
shift_right_logical_p, shift_right_logical = binary("shift_right_logical", INT)
eq_p, eq = binary("eq", ANY, np.bool_)
ne_p, ne = binary("ne", ANY, np.bool_)
lt_p, lt = binary("lt", ANY, np.bool_)
le_p, le = binary("le", ANY, np.bool_)
gt_p, gt = binary("gt", ANY, np.bool_)
ge_p, ge = binary("ge", ANY, np.bool_)

# ---- ops with parameters -------------------------------------------------------------------
round_p = Primitive("round", kind="elementwise")


@round_p.def_abstract_eval
def _round_abstract_eval(x, *, rounding_method):
    check_dtype("round", x, FLOAT)
    if rounding_method not in (0, 1):
        raise ValueError("round: rounding_method must be 0 (away from zero) or 1 (to even)")
    return x


def round(x, rounding_method=0):
    """Round to the nearest integer: halves away from zero (0) or to even (1)."""
    return round_p.bind(asarray(x), rounding_method=int(rounding_method))


integer_pow_p = Primitive("integer_pow", kind="elementwise")


@integer_pow_p.def_abstract_eval
def _integer_pow_abstract_eval(x, *, y):
    check_dtype("integer_pow", x, NUMERIC)
    if not isinstance(y, int):
        raise TypeError(f"integer_pow: the exponent must be a Python int, got {y!r}")
    if y < 0 and not dtypes.is_inexact(x.dtype):
        raise TypeError(f"integer_pow: negative exponent {y} needs a float operand")
    return x


def integer_pow(x, y):
    """`x ** y` for a static Python int `y`."""
    return integer_pow_p.bind(asarray(x), y=int(y))


# ---- n-ary: select_n, clamp -----------------------------------------------------------------
select_n_p = Primitive("select_n", kind="elementwise")


@select_n_p.def_abstract_eval
def _select_n_abstract_eval(which, *cases):
    if not cases:
        raise ValueError("select_n needs at least one case")
    dtype = same_dtypes("select_n", cases)
    shape = elementwise_shape("select_n", cases)
    if which.ndim and which.shape != shape or any(c.shape != shape for c in cases):
        raise TypeError(
            "select_n: the cases must share one shape and `which` must be 0-d or that shape"
        )
    if dtypes.is_bool(which.dtype):
        if len(cases) > 2:
            raise TypeError("select_n: a bool `which` selects between at most 2 cases")
    elif which.dtype != np.int32 and not dtypes.is_int(which.dtype):
        raise TypeError(f"select_n: `which` must be bool or int32, got {which.str_short()}")
    return ShapedArray(shape, dtype, weak_of(cases))


complex_p = Primitive("complex", kind="elementwise")


@complex_p.def_abstract_eval
def _complex_abstract_eval(x, y):
    dtype = same_dtypes("complex", (x, y))
    if dtype not in (dtypes.float32, dtypes.float64):
        raise TypeError(f"complex needs float32 or float64 parts, got {short_of((x, y))}")
    return ShapedArray(elementwise_shape("complex", (x, y)), dtypes.complex_dtype(dtype),
                       weak_of((x, y)))


def complex(x, y):
    """`x + 1j * y` from real and imaginary parts `x` and `y` (float32 or float64, equal
    shapes or 0-d): complex64 or complex128 out."""
    return complex_p.bind(*coerce_operands("complex", x, y))


def short_of(avals):
    return ", ".join(a.str_short() for a in avals)


def select_n(which, *cases):
    """`cases[which]` elementwise: `which` is bool (2 cases) or int32, 0-d or the cases'
    shape; cases share one shape and dtype."""
    return select_n_p.bind(asarray(which), *coerce_operands("select_n", *cases))


def select(pred, on_true, on_false):
    """`on_true` where `pred` else `on_false` (JAX's lax.select)."""
    return select_n(pred, on_false, on_true)


clamp_p = Primitive("clamp", kind="elementwise")


@clamp_p.def_abstract_eval
def _clamp_abstract_eval(lo, x, hi):
    same_dtypes("clamp", (lo, x, hi))
    for bound in (lo, hi):
        if bound.ndim and bound.shape != x.shape:
            raise TypeError("clamp: min and max must be 0-d or have the operand's shape")
    return x


def clamp(min, x, max):
    """`x` clipped to [min, max]; bounds are 0-d or x's shape, all one dtype."""
    return clamp_p.bind(*coerce_operands("clamp", min, x, max))


# ---- dtype changes ----------------------------------------------------------------------
convert_element_type_p = Primitive("convert_element_type", kind="elementwise")


@convert_element_type_p.def_abstract_eval
def _convert_abstract_eval(x, *, new_dtype, weak_type):
    return ShapedArray(x.shape, new_dtype, weak_type)


def convert_to_existing(x, new_dtype, weak_type=False):
    """`x` converted to exactly `new_dtype`, the dtype of an existing array: a 64-bit dtype
    of an array made while x64 was on is kept (as JAX does), where `convert_element_type`,
    which takes a requested dtype, would narrow it."""
    x = asarray(x)
    new_dtype = np.dtype(new_dtype)
    if x.dtype == new_dtype and x.weak_type == weak_type:
        return x
    return convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=bool(weak_type))


def convert_element_type(x, new_dtype, weak_type=False):
    """`x` converted to `new_dtype` (64-bit dtypes narrow to 32 bits without x64). A complex
    `x` converted to a real dtype keeps its real part, with NumPy's ComplexWarning (as
    JAX)."""
    x = asarray(x)
    new_dtype = dtypes.canonicalize(new_dtype, explicit=True)
    if dtypes.is_complex(x.dtype) and not dtypes.is_complex(new_dtype) \
            and not dtypes.is_bool(new_dtype):
        warnings.warn("Casting complex values to real discards the imaginary part",
                      np.exceptions.ComplexWarning, stacklevel=2)
    if x.dtype == new_dtype and x.weak_type == weak_type:
        return x
    return convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=bool(weak_type))


bitcast_convert_type_p = Primitive("bitcast_convert_type", kind="elementwise")


@bitcast_convert_type_p.def_abstract_eval
def _bitcast_abstract_eval(x, *, new_dtype):
    old, new = x.dtype.itemsize, np.dtype(new_dtype).itemsize
    if old == new:
        return ShapedArray(x.shape, new_dtype)
    if old > new:
        if old % new:
            raise TypeError(f"bitcast_convert_type: cannot bitcast {x.dtype} to {new_dtype}")
        return ShapedArray((*x.shape, old // new), new_dtype)
    if not x.shape or x.shape[-1] != new // old:
        raise TypeError(
            f"bitcast_convert_type: bitcasting {x.str_short()} to the wider {new_dtype} needs "
            f"a last dimension of {new // old}"
        )
    return ShapedArray(x.shape[:-1], new_dtype)


def bitcast_convert_type(x, new_dtype):
    """Reinterpret the bits of `x` as `new_dtype` (a narrower type adds a trailing dim)."""
    return bitcast_convert_type_p.bind(asarray(x), new_dtype=dtypes.canonicalize(new_dtype))
