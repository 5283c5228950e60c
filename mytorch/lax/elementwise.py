"""Elementwise primitives: one row per op with its NumPy kernel and CUDA C expression.

Operands of an n-ary elementwise primitive share one dtype and one shape, except that 0-d
operands broadcast (so `x * 2.0` stays one equation). The result is weakly typed when every
operand is. JVP rules are added next to each row by the autodiff layer's table.
"""

import numpy as np

from mytorch.core import dtypes
from mytorch.core.aval import ShapedArray
from mytorch.core.primitive import Primitive
from mytorch.lax import _numpy_special as special
from mytorch.lax._utils import (
    asarray,
    check_dtype,
    coerce_operands,
    elementwise_shape,
    same_dtypes,
    weak_of,
)

FLOAT = frozenset({"float"})
INT = frozenset({"int", "uint"})
NUMERIC = frozenset({"int", "uint", "float"})
BOOL_INT = frozenset({"bool", "int", "uint"})
ANY = frozenset({"bool", "int", "uint", "float"})


def _kernel(np_fn, float_only=False):
    """Wrap a NumPy function as an eager kernel: quiet floating-point warnings, compute
    bfloat16 (and, for float-only functions, float16) in float32."""

    def kernel(*xs, **params):
        dt = xs[0].dtype
        upcast = dt == dtypes.bfloat16 or (float_only and dt == dtypes.float16)
        if upcast:
            xs = [x.astype(np.float32) if x.dtype == dt else x for x in xs]
        with np.errstate(all="ignore"):
            out = np_fn(*xs, **params)
            return out.astype(dt) if upcast and out.dtype != np.bool_ else out

    kernel.__name__ = getattr(np_fn, "__name__", "kernel")
    return kernel


def unary(name, np_fn, cuda, kinds=FLOAT, out_dtype=None):
    """Define a unary elementwise primitive and its binder: returns (prim, fn)."""
    prim = Primitive(name, kind="elementwise")
    prim.numpy_fn, prim.cuda_expr = np_fn, cuda

    @prim.def_abstract_eval
    def _abstract_eval(x, **params):
        check_dtype(name, x, kinds)
        if out_dtype is not None:
            return ShapedArray(x.shape, out_dtype, False)
        return ShapedArray(x.shape, x.dtype, x.weak_type)

    prim.def_lowering("cpu", _kernel(np_fn, kinds == FLOAT))

    def fn(x):
        return prim.bind(asarray(x))

    fn.__name__ = name
    fn.__doc__ = f"Elementwise {name} of `x` (any shape); same shape out."
    return prim, fn


def binary(name, np_fn, cuda, kinds=NUMERIC, out_dtype=None):
    """Define a binary elementwise primitive and its binder: returns (prim, fn)."""
    prim = Primitive(name, kind="elementwise")
    prim.numpy_fn, prim.cuda_expr = np_fn, cuda

    @prim.def_abstract_eval
    def _abstract_eval(x, y):
        dtype = same_dtypes(name, (x, y))
        check_dtype(name, x, kinds)
        shape = elementwise_shape(name, (x, y))
        if out_dtype is not None:
            return ShapedArray(shape, out_dtype, False)
        return ShapedArray(shape, dtype, weak_of((x, y)))

    prim.def_lowering("cpu", _kernel(np_fn, kinds == FLOAT))

    def fn(x, y):
        return prim.bind(*coerce_operands(name, x, y))

    fn.__name__ = name
    fn.__doc__ = (f"Elementwise {name} of `x` and `y`: equal shapes (or 0-d) and one dtype.")
    return prim, fn


# ---- NumPy kernels that need more than one ufunc -----------------------------------------
def _round(x, rounding_method=0):
    if rounding_method == 1:  # to nearest even
        return np.round(x)
    t = np.trunc(x)  # away from zero
    return np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t).astype(x.dtype)


def _logistic(x):
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype)


def _rsqrt(x):
    return (1 / np.sqrt(x)).astype(x.dtype)


def _integer_pow(x, y):
    if y == 0:
        return np.ones_like(x)
    if y < 0:
        return (1 / np.power(x, -y)).astype(x.dtype)
    if x.dtype.kind in "iu" and y > np.iinfo(x.dtype).max:
        # NumPy refuses an exponent x's dtype cannot hold; 64-bit powers wrap to the same
        # low bits
        wide = np.uint64 if x.dtype.kind == "u" else np.int64
        return np.power(x.astype(wide), wide(y)).astype(x.dtype)
    return np.power(x, y)


def _div(x, y):
    if x.dtype.kind in "iu":  # C semantics: round toward zero
        safe = np.where(y == 0, 1, y)
        q = np.floor_divide(x, safe)
        fix = (q < 0) & (q * safe != x)
        return np.where(y == 0, 0, q + fix.astype(x.dtype)).astype(x.dtype)
    return np.true_divide(x, y)


def _rem(x, y):
    if x.dtype.kind in "iu":
        safe = np.where(y == 0, 1, y)
        return np.where(y == 0, 0, np.fmod(x, safe)).astype(x.dtype)
    return np.fmod(x, y)


def _not(x):
    return np.logical_not(x) if x.dtype == np.bool_ else np.invert(x)


def _shift(kind):
    def shift(x, s):
        bits = x.dtype.itemsize * 8
        out_of_range = (s < 0) | (s >= bits)
        s_safe = np.where(out_of_range, 0, s).astype(x.dtype)
        if kind == "left":
            out = np.left_shift(x, s_safe)
            return np.where(out_of_range, 0, out).astype(x.dtype)
        if kind == "right_logical":
            u = x.view(np.dtype(f"u{x.dtype.itemsize}"))
            out = np.right_shift(u, s_safe.astype(u.dtype)).view(x.dtype)
            return np.where(out_of_range, 0, out).astype(x.dtype)
        fill = np.where(x < 0, -1, 0).astype(x.dtype)  # arithmetic: sign fill
        return np.where(out_of_range, fill, np.right_shift(x, s_safe)).astype(x.dtype)

    shift.__name__ = f"shift_{kind}"
    return shift


def _f(fn):
    """A special function computed in float64, cast back to the input dtype."""

    def kernel(x):
        return fn(x).astype(x.dtype)

    kernel.__name__ = fn.__name__
    return kernel


# ---- the table ----------------------------------------------------------------------------
neg_p, neg = unary("neg", np.negative, "(-{x})", NUMERIC)
abs_p, abs = unary("abs", np.abs, "abs({x})", NUMERIC)
sign_p, sign = unary("sign", np.sign, "sign({x})", NUMERIC)
floor_p, floor = unary("floor", np.floor, "floor({x})")
ceil_p, ceil = unary("ceil", np.ceil, "ceil({x})")
exp_p, exp = unary("exp", np.exp, "exp({x})")
exp2_p, exp2 = unary("exp2", np.exp2, "exp2({x})")
log_p, log = unary("log", np.log, "log({x})")
log1p_p, log1p = unary("log1p", np.log1p, "log1p({x})")
expm1_p, expm1 = unary("expm1", np.expm1, "expm1({x})")
sqrt_p, sqrt = unary("sqrt", np.sqrt, "sqrt({x})")
rsqrt_p, rsqrt = unary("rsqrt", _rsqrt, "rsqrt({x})")
cbrt_p, cbrt = unary("cbrt", np.cbrt, "cbrt({x})")
sin_p, sin = unary("sin", np.sin, "sin({x})")
cos_p, cos = unary("cos", np.cos, "cos({x})")
tan_p, tan = unary("tan", np.tan, "tan({x})")
asin_p, asin = unary("asin", np.arcsin, "asin({x})")
acos_p, acos = unary("acos", np.arccos, "acos({x})")
atan_p, atan = unary("atan", np.arctan, "atan({x})")
sinh_p, sinh = unary("sinh", np.sinh, "sinh({x})")
cosh_p, cosh = unary("cosh", np.cosh, "cosh({x})")
tanh_p, tanh = unary("tanh", np.tanh, "tanh({x})")
asinh_p, asinh = unary("asinh", np.arcsinh, "asinh({x})")
acosh_p, acosh = unary("acosh", np.arccosh, "acosh({x})")
atanh_p, atanh = unary("atanh", np.arctanh, "atanh({x})")
logistic_p, logistic = unary("logistic", _logistic, "(1 / (1 + exp(-{x})))")
erf_p, erf = unary("erf", _f(special.erf), "erf({x})")
erfc_p, erfc = unary("erfc", _f(special.erfc), "erfc({x})")
erf_inv_p, erf_inv = unary("erf_inv", _f(special.erf_inv), "erfinv({x})")
lgamma_p, lgamma = unary("lgamma", _f(special.lgamma), "lgamma({x})")
digamma_p, digamma = unary("digamma", _f(special.digamma), "mt_digamma({x})")
is_finite_p, is_finite = unary("is_finite", np.isfinite, "isfinite({x})", out_dtype=np.bool_)
not_p, bitwise_not = unary("not", _not, "(~{x})", BOOL_INT)
square_p, square = unary("square", np.square, "({x} * {x})", NUMERIC)
reciprocal_p, reciprocal = unary("reciprocal", np.reciprocal, "(1 / {x})")
stop_gradient_p, _ = unary("stop_gradient", lambda x: x, "{x}", ANY)
stop_gradient_p.def_lowering("cpu", lambda x: x)  # arrays are immutable: no copy needed


def stop_gradient(x):
    """`x` (a pytree of arrays) unchanged, with a zero derivative for every float leaf."""
    from mytorch.core.tree_util import tree_map

    def leaf(v):
        v = asarray(v)
        return stop_gradient_p.bind(v) if dtypes.is_float(v.dtype) else v

    return tree_map(leaf, x)


add_p, add = binary("add", np.add, "({x} + {y})")
sub_p, sub = binary("sub", np.subtract, "({x} - {y})")
mul_p, mul = binary("mul", np.multiply, "({x} * {y})")
div_p, div = binary("div", _div, "({x} / {y})")
rem_p, rem = binary("rem", _rem, "fmod({x}, {y})")
pow_p, pow = binary("pow", np.power, "pow({x}, {y})", FLOAT)
max_p, max = binary("max", np.maximum, "max({x}, {y})", ANY)
min_p, min = binary("min", np.minimum, "min({x}, {y})", ANY)
atan2_p, atan2 = binary("atan2", np.arctan2, "atan2({x}, {y})", FLOAT)
def _nextafter_kernel(x, y):
    """np.nextafter, exact in float16 and, through the bit pattern, in bfloat16."""
    if x.dtype != dtypes.bfloat16:
        with np.errstate(all="ignore"):
            return np.nextafter(x, y)
    x, y = np.broadcast_arrays(x, y)
    xf, yf = x.astype(np.float32), y.astype(np.float32)
    bits = x.view(np.int16).astype(np.int32)
    away = (xf < yf) == (xf > 0)  # moving away from zero grows the magnitude bits
    step = np.where(xf == 0, 1, np.where(away, 1, -1))
    mag = np.where(xf == 0, np.where(yf < 0, -0x8000 + 1, 1), bits + step)
    out = mag.astype(np.int16).view(dtypes.bfloat16)
    out = np.where(xf == yf, y, out)
    return np.where(np.isnan(xf) | np.isnan(yf), np.array(np.nan, x.dtype), out)


nextafter_p, nextafter = binary("nextafter", np.nextafter, "nextafter({x}, {y})", FLOAT)
nextafter_p.def_lowering("cpu", _nextafter_kernel)
and_p, bitwise_and = binary("and", np.bitwise_and, "({x} & {y})", BOOL_INT)
or_p, bitwise_or = binary("or", np.bitwise_or, "({x} | {y})", BOOL_INT)
xor_p, bitwise_xor = binary("xor", np.bitwise_xor, "({x} ^ {y})", BOOL_INT)
shift_left_p, shift_left = binary("shift_left", _shift("left"), "({x} << {y})", INT)
shift_right_arithmetic_p, shift_right_arithmetic = binary(
    "shift_right_arithmetic", _shift("right_arithmetic"), "({x} >> {y})", INT)
shift_right_logical_p, shift_right_logical = binary(
    "shift_right_logical", _shift("right_logical"), "mt_srl({x}, {y})", INT)
eq_p, eq = binary("eq", np.equal, "({x} == {y})", ANY, np.bool_)
ne_p, ne = binary("ne", np.not_equal, "({x} != {y})", ANY, np.bool_)
lt_p, lt = binary("lt", np.less, "({x} < {y})", ANY, np.bool_)
le_p, le = binary("le", np.less_equal, "({x} <= {y})", ANY, np.bool_)
gt_p, gt = binary("gt", np.greater, "({x} > {y})", ANY, np.bool_)
ge_p, ge = binary("ge", np.greater_equal, "({x} >= {y})", ANY, np.bool_)

# ---- ops with parameters -------------------------------------------------------------------
round_p = Primitive("round", kind="elementwise")
round_p.numpy_fn, round_p.cuda_expr = _round, "round({x})"
round_p.def_lowering("cpu", _kernel(_round, True))


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
integer_pow_p.numpy_fn, integer_pow_p.cuda_expr = _integer_pow, "mt_ipow({x}, {y})"
integer_pow_p.def_lowering("cpu", _kernel(_integer_pow))


@integer_pow_p.def_abstract_eval
def _integer_pow_abstract_eval(x, *, y):
    check_dtype("integer_pow", x, NUMERIC)
    if not isinstance(y, int):
        raise TypeError(f"integer_pow: the exponent must be a Python int, got {y!r}")
    if y < 0 and not dtypes.is_float(x.dtype):
        raise TypeError(f"integer_pow: negative exponent {y} needs a float operand")
    return x


def integer_pow(x, y):
    """`x ** y` for a static Python int `y`."""
    return integer_pow_p.bind(asarray(x), y=int(y))


# ---- n-ary: select_n, clamp -----------------------------------------------------------------
def _select_n_kernel(which, *cases):
    if which.dtype == np.bool_:
        return np.where(which, cases[1], cases[0]) if len(cases) == 2 else np.array(cases[0])
    if which.ndim == 0:
        return np.array(cases[int(np.clip(which, 0, len(cases) - 1))])
    return np.choose(which, cases, mode="clip")


select_n_p = Primitive("select_n", kind="elementwise")
select_n_p.def_lowering("cpu", _select_n_kernel)


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


def select_n(which, *cases):
    """`cases[which]` elementwise: `which` is bool (2 cases) or int32, 0-d or the cases'
    shape; cases share one shape and dtype."""
    return select_n_p.bind(asarray(which), *coerce_operands("select_n", *cases))


def select(pred, on_true, on_false):
    """`on_true` where `pred` else `on_false` (JAX's lax.select)."""
    return select_n(pred, on_false, on_true)


def _clamp_kernel(lo, x, hi):
    return np.minimum(np.maximum(x, lo), hi)


clamp_p = Primitive("clamp", kind="elementwise")
clamp_p.def_lowering("cpu", _clamp_kernel)


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
def _convert_kernel(x, *, new_dtype, weak_type):
    if new_dtype == np.bool_:
        return x != 0
    with np.errstate(all="ignore"):  # narrowing floats overflow to inf, as in XLA
        if dtypes.is_int(new_dtype) and dtypes.is_float(x.dtype):  # bfloat16's kind is "V"
            # float -> int: NaN to 0, saturate at the integer range (as XLA's CPU backend);
            # float(info.max) rounds up to 2**63 (2**64) for 64-bit types, so compare first
            info = np.iinfo(new_dtype)
            y = np.trunc(x.astype(np.float64))
            big, small = y >= float(info.max), y <= float(info.min)
            inner = np.where(big | small | np.isnan(y), 0, y).astype(new_dtype)
            return np.where(big, info.max, np.where(small, info.min, inner)).astype(new_dtype)
        return x.astype(new_dtype)


convert_element_type_p = Primitive("convert_element_type", kind="elementwise")
convert_element_type_p.def_lowering("cpu", _convert_kernel)


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
    """`x` converted to `new_dtype` (64-bit dtypes narrow to 32 bits without x64)."""
    x = asarray(x)
    new_dtype = dtypes.canonicalize(new_dtype, explicit=True)
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


@bitcast_convert_type_p.def_lowering("cpu")
def _bitcast_kernel(x, *, new_dtype):
    new_dtype = np.dtype(new_dtype)
    if new_dtype.itemsize < x.dtype.itemsize:
        ratio = x.dtype.itemsize // new_dtype.itemsize
        return np.ascontiguousarray(x).view(new_dtype).reshape(*x.shape, ratio)
    if new_dtype.itemsize > x.dtype.itemsize:
        return np.ascontiguousarray(x).view(new_dtype).reshape(x.shape[:-1])
    return np.ascontiguousarray(x).view(new_dtype).reshape(x.shape)


def bitcast_convert_type(x, new_dtype):
    """Reinterpret the bits of `x` as `new_dtype` (a narrower type adds a trailing dim)."""
    return bitcast_convert_type_p.bind(asarray(x), new_dtype=dtypes.canonicalize(new_dtype))
