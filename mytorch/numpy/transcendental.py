"""Roots, exponentials, logarithms, trigonometric and hyperbolic ufuncs, and hypot and sinc.

Integer and bool input gives the default float. Part of `mytorch.numpy.ufuncs`.
"""

import math

from mytorch import lax
from mytorch.custom_derivatives import custom_jvp
from mytorch.numpy._ufunc_util import (
    _float_args, _fn, _full, _in_f32, _isinf, _real_only, _select,
)

__all__ = [
    "sqrt", "cbrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "logaddexp",
    "logaddexp2", "sin", "cos", "tan", "arcsin", "asin", "arccos", "acos", "arctan", "atan",
    "arctan2", "atan2", "sinh", "cosh", "tanh", "arcsinh", "asinh", "arccosh", "acosh",
    "arctanh", "atanh", "deg2rad", "rad2deg", "degrees", "radians", "hypot", "sinc",
]


# ---- roots, exponentials, logarithms, trigonometry ------------------------------------------
def _float_unary(name, lax_fn, what):
    def fn(x):
        return lax_fn(_float_args(name, x)[0])

    return _fn(name, fn, f"{what} of x, elementwise (any shape; ints and bools give the "
                         "default float).")


sqrt = _float_unary("sqrt", lax.sqrt, "The square root")
cbrt = _float_unary("cbrt", lax.cbrt, "The cube root")
exp = _float_unary("exp", lax.exp, "e ** x")
exp2 = _float_unary("exp2", lax.exp2, "2 ** x")
expm1 = _float_unary("expm1", lax.expm1, "exp(x) - 1 (accurate near 0)")
log = _float_unary("log", lax.log, "The natural logarithm")
log1p = _float_unary("log1p", lax.log1p, "log(1 + x) (accurate near 0)")
sin = _float_unary("sin", lax.sin, "The sine")
cos = _float_unary("cos", lax.cos, "The cosine")
tan = _float_unary("tan", lax.tan, "The tangent")
arcsin = asin = _float_unary("arcsin", lax.asin, "The inverse sine")
arccos = acos = _float_unary("arccos", lax.acos, "The inverse cosine")
arctan = atan = _float_unary("arctan", lax.atan, "The inverse tangent")
sinh = _float_unary("sinh", lax.sinh, "The hyperbolic sine")
cosh = _float_unary("cosh", lax.cosh, "The hyperbolic cosine")
tanh = _float_unary("tanh", lax.tanh, "The hyperbolic tangent")
arcsinh = asinh = _float_unary("arcsinh", lax.asinh, "The inverse hyperbolic sine")
arccosh = acosh = _float_unary("arccosh", lax.acosh, "The inverse hyperbolic cosine")
arctanh = atanh = _float_unary("arctanh", lax.atanh, "The inverse hyperbolic tangent")


def _scaled_log(name, base):
    def fn(x):
        (a,) = _float_args(name, x)
        return _in_f32(lambda v: lax.div(lax.log(v), math.log(base)), a)

    return _fn(name, fn, f"The base-{base} logarithm of x, elementwise (ints give the "
                         "default float).")


log2 = _scaled_log("log2", 2)
log10 = _scaled_log("log10", 10)


def _logaddexp_primal(x, y, ln_base):
    big = lax.max(x, y)
    d = lax.neg(lax.abs(lax.sub(x, y)))
    if ln_base == 1.0:
        tail = lax.log1p(lax.exp(d))
    else:  # log2(1 + 2**d)
        tail = lax.div(lax.log1p(lax.exp2(d)), ln_base)
    same = lax.add(x, math.log(2.0) / ln_base)  # also right for equal infinities
    return _select(lax.eq(x, y), same, lax.add(big, tail))


def _logaddexp_rule(ln_base):
    # JAX's rule: d/dx = b ** (x - out) (b = e or 2), with +inf replaced by 0 so that
    # inf - inf gives no NaN. Written with lax, so it differentiates again (a tie x == y
    # gets 1/2 each, and the right second derivative).
    exp = lax.exp if ln_base == 1.0 else lax.exp2

    @custom_jvp
    def f(x, y):
        return _logaddexp_primal(x, y, ln_base)

    @f.defjvp
    def f_jvp(primals, tangents):
        x, y = primals
        tx, ty = tangents
        out = f(x, y)

        def no_inf(v):
            return _select(lax.eq(v, float("inf")), 0.0, v)

        o = no_inf(out)
        return out, lax.add(lax.mul(tx, exp(lax.sub(no_inf(x), o))),
                            lax.mul(ty, exp(lax.sub(no_inf(y), o))))

    return f


_logaddexp_e = _logaddexp_rule(1.0)
_logaddexp_2 = _logaddexp_rule(math.log(2.0))


def _logaddexp(a, b, ln_base):
    f = _logaddexp_e if ln_base == 1.0 else _logaddexp_2
    return _in_f32(lambda x, y: f(*_full([x, y])), a, b)


def logaddexp(x1, x2):
    """log(exp(x1) + exp(x2)) without overflow."""
    return _logaddexp(*_real_only("logaddexp", *_float_args("logaddexp", x1, x2)), 1.0)


def logaddexp2(x1, x2):
    """log2(2**x1 + 2**x2) without overflow."""
    return _logaddexp(*_real_only("logaddexp2", *_float_args("logaddexp2", x1, x2)),
                      math.log(2.0))


def arctan2(x1, x2):
    """The angle of the point (x2, x1) in [-pi, pi] (ints give the default float)."""
    return lax.atan2(*_float_args("arctan2", x1, x2))


atan2 = arctan2


def _scale(name, factor, what):
    def fn(x):
        (a,) = _float_args(name, x)
        return _in_f32(lambda v: lax.mul(v, factor), a)

    return _fn(name, fn, f"{what}, elementwise (ints give the default float).")


deg2rad = radians = _scale("deg2rad", math.pi / 180, "Degrees to radians")
rad2deg = degrees = _scale("rad2deg", 180 / math.pi, "Radians to degrees")


def _hypot(x, y):
    x, y = _full([lax.abs(x), lax.abs(y)])
    big, small = lax.max(x, y), lax.min(x, y)
    ratio = lax.div(small, _select(lax.eq(big, 0.0), 1.0, big))
    out = lax.mul(big, lax.sqrt(lax.add(lax.mul(ratio, ratio), 1.0)))
    return _select(lax.bitwise_or(_isinf(x), _isinf(y)), float("inf"), out)


def hypot(x1, x2):
    """sqrt(x1**2 + x2**2) without intermediate overflow (inf if either is inf)."""
    return _in_f32(_hypot, *_float_args("hypot", x1, x2))


# sin(t) / t = sum_k (-1)^k t^(2k) / (2k + 1)!, through t^16: below |t| = 1/2 its error
# is under 1e-22, and the quotient's rounding (which costs its derivative about 1/t^2 ulps)
# is avoided where t is small
_SINC_SERIES = tuple((-1) ** k / math.factorial(2 * k + 1) for k in range(9))


def sinc(x):
    """sin(pi x) / (pi x), with sinc(0) = 1 (ints give the default float).

    Near 0 (|pi x| < 1/2) it is the Maclaurin polynomial, so its derivatives of every order
    are right there too (the first is 0 at 0, as JAX).
    """
    def fn(v):
        t = lax.mul(v, math.pi)
        small = lax.lt(lax.abs(t), 0.5)
        pix = _select(small, 1.0, t)  # the quotient only sees |t| >= 1/2: safe
        t2 = lax.square(_select(small, t, 0.0))
        series = lax.full_like(t2, _SINC_SERIES[-1])
        for c in reversed(_SINC_SERIES[:-1]):
            series = lax.add(lax.mul(series, t2), c)
        return _select(small, series, lax.div(lax.sin(pix), pix))

    return _in_f32(fn, _float_args("sinc", x)[0])
