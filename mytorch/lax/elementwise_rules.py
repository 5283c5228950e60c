"""Derivative and batching rules of the elementwise primitives (defined in elementwise.py).

Conventions at the awkward points follow JAX: d|x| at 0 is 1 (x >= 0 takes the + side;
for a complex x, d|x| = re(conj(x) dx) / |x|, 0 at 0);
max/min split ties, giving half the tangent to each operand; d sqrt at 0 is inf;
d(x**y)/dx is 0 where y == 0 and d(x**y)/dy is 0 where x == 0; rounding, sign, comparisons
and bit operations have zero derivative. Rules are written with lax operations, so they
differentiate again. Complex values: the holomorphic functions keep their real rules (the
JVP is the complex derivative times the tangent); `real`, `imag`, `conj` and `complex` are
linear, and their transposes pair values by re(a * b), not re(conj(a) * b), as JAX does, so
that the transpose of multiplying by c is multiplying by c (docs/autodiff.md, "Complex
numbers"). Batching: every elementwise primitive batches as itself (see the end).
"""

import math

from mytorch.core import dtypes
from mytorch.core.ad_util import add_any_p
from mytorch.lax import elementwise as ew
from mytorch.lax._ad import (
    Zero, add_tangents, broadcast_to_aval, defjvp, defjvp_zero, deflinear, instantiate,
    is_undefined, unbroadcast, zero_out,
)
from mytorch.lax.elementwise import (
    add, cos, div, eq, ge, exp, floor, gt, integer_pow, log, lt, mul, neg,
    rsqrt, select, select_n, sign, sin, square, sub,
)
from mytorch.core.primitive import registry as _registry
from mytorch.core.trace import aval_of
from mytorch.lax._batching import bdim_at_front, defbroadcasting, moveaxis
from mytorch.lax._utils import weak_scalar
from mytorch.lax.structural import broadcast_in_dim, full_like
from mytorch.transforms.simplify import lossless, producer, same, unit_rule


def _c(x, value):
    """A weakly typed constant of `x`'s dtype (0-d)."""
    return weak_scalar(value, aval_of(x).dtype)


def _zeros_like(x):
    return full_like(x, 0)


# ---- unary ---------------------------------------------------------------------------
deflinear(ew.neg_p, lambda ct, x: [neg(ct)])


def _abs_jvp(t, ans, x):
    if not dtypes.is_complex(aval_of(x).dtype):
        return select(ge(x, _c(x, 0)), t, neg(t))  # 1 at 0, as JAX
    # re(conj(x) t) / |x|, with |x| = 0 replaced by 1 (conj(x) is 0 there)
    zero = eq(ans, _c(ans, 0))
    safe = select(zero, add(_zeros_like(ans), _c(ans, 1)), ans)
    return div(ew.real(mul(ew.conj(x), t)), safe)


defjvp(ew.abs_p, _abs_jvp)
defjvp(ew.exp_p, lambda t, ans, x: mul(t, ans))
defjvp(ew.exp2_p, lambda t, ans, x: mul(t, mul(ans, _c(x, math.log(2)))))
defjvp(ew.log_p, lambda t, ans, x: div(t, x))
defjvp(ew.log1p_p, lambda t, ans, x: div(t, add(x, _c(x, 1))))
defjvp(ew.expm1_p, lambda t, ans, x: mul(t, add(ans, _c(x, 1))))
defjvp(ew.sqrt_p, lambda t, ans, x: div(t, mul(ans, _c(x, 2))))
defjvp(ew.rsqrt_p, lambda t, ans, x: mul(t, mul(div(ans, x), _c(x, -0.5))))
defjvp(ew.cbrt_p, lambda t, ans, x: mul(t, mul(integer_pow(ans, -2), _c(x, 1 / 3))))
defjvp(ew.sin_p, lambda t, ans, x: mul(t, cos(x)))
defjvp(ew.cos_p, lambda t, ans, x: neg(mul(t, sin(x))))
defjvp(ew.tan_p, lambda t, ans, x: mul(t, add(square(ans), _c(x, 1))))
defjvp(ew.asin_p, lambda t, ans, x: mul(t, rsqrt(sub(_c(x, 1), square(x)))))
defjvp(ew.acos_p, lambda t, ans, x: neg(mul(t, rsqrt(sub(_c(x, 1), square(x))))))
defjvp(ew.atan_p, lambda t, ans, x: div(t, add(square(x), _c(x, 1))))
defjvp(ew.sinh_p, lambda t, ans, x: mul(t, ew.cosh(x)))
defjvp(ew.cosh_p, lambda t, ans, x: mul(t, ew.sinh(x)))
defjvp(ew.tanh_p, lambda t, ans, x: mul(t, sub(_c(x, 1), square(ans))))
defjvp(ew.asinh_p, lambda t, ans, x: mul(t, rsqrt(add(square(x), _c(x, 1)))))
def _acosh_jvp(t, ans, x):
    if dtypes.is_complex(aval_of(x).dtype):  # 1/(sqrt(x-1) sqrt(x+1)): the principal branch
        return mul(t, mul(rsqrt(sub(x, _c(x, 1))), rsqrt(add(x, _c(x, 1)))))
    return mul(t, rsqrt(mul(sub(x, _c(x, 1)), add(x, _c(x, 1)))))


defjvp(ew.acosh_p, _acosh_jvp)
defjvp(ew.atanh_p, lambda t, ans, x: div(t, mul(sub(_c(x, 1), x), add(x, _c(x, 1)))))
# d logistic = s(x) s(-x): 1 - s(x) would round to 0 for large x
defjvp(ew.logistic_p, lambda t, ans, x: mul(t, mul(ans, ew.logistic(neg(x)))))
defjvp(ew.erf_p, lambda t, ans, x: mul(t, mul(_c(x, 2 / math.sqrt(math.pi)), exp(neg(square(x))))))
defjvp(ew.erfc_p, lambda t, ans, x: mul(t, mul(_c(x, -2 / math.sqrt(math.pi)),
                                              exp(neg(square(x))))))
defjvp(ew.erf_inv_p, lambda t, ans, x: mul(t, mul(_c(x, math.sqrt(math.pi) / 2),
                                                  exp(square(ans)))))
defjvp(ew.lgamma_p, lambda t, ans, x: mul(t, ew.digamma(x)))
defjvp(ew.square_p, lambda t, ans, x: mul(t, mul(x, _c(x, 2))))
defjvp(ew.reciprocal_p, lambda t, ans, x: neg(mul(t, square(ans))))


def trigamma(x):
    """The derivative of digamma (polygamma(1, x)), from lax operations: the recurrence
    psi1(x) = psi1(x + 1) + 1/x^2 lifts x above 8, then the asymptotic series; negative
    x use the reflection psi1(1 - x) + psi1(x) = pi^2 / sin^2(pi x)."""
    reflect = lt(x, _c(x, 0.5))
    z = select(reflect, sub(_c(x, 1), x), x)
    acc = _zeros_like(z)
    for _ in range(8):
        acc = add(acc, ew.reciprocal(square(z)))
        z = add(z, _c(z, 1))
    inv = ew.reciprocal(z)
    inv2 = square(inv)
    # 1/z + 1/2z^2 + sum B_2k / z^(2k+1): through B_14 the error is below 1e-14 for z >= 8.5
    series = _c(z, 7 / 6)
    for b in (-691 / 2730, 5 / 66, -1 / 30, 1 / 42, -1 / 30, 1 / 6):
        series = add(mul(series, inv2), _c(z, b))
    series = add(inv, mul(inv2, add(_c(z, 0.5), mul(inv, series))))
    value = add(acc, series)
    pi = _c(x, math.pi)
    # sin^2 has period 1: sin(pi (x - round(x))) is exactly 0 at the poles (giving +inf,
    # as JAX) and keeps full precision for large |x|
    r = select(reflect, sub(x, ew.round(x)), add(_zeros_like(x), _c(x, 0.5)))  # safe: 1/2
    reflected = sub(div(square(pi), square(sin(mul(pi, r)))), value)
    return select(reflect, reflected, value)


defjvp(ew.digamma_p, lambda t, ans, x: mul(t, trigamma(x)))

for _p in (ew.sign_p, ew.floor_p, ew.ceil_p, ew.is_finite_p, ew.not_p, ew.round_p,
           ew.stop_gradient_p, ew.bitcast_convert_type_p, ew.nextafter_p, ew.and_p, ew.or_p,
           ew.xor_p, ew.shift_left_p, ew.shift_right_arithmetic_p, ew.shift_right_logical_p,
           ew.eq_p, ew.ne_p, ew.lt_p, ew.le_p, ew.gt_p, ew.ge_p):
    defjvp_zero(_p)


# ---- complex parts: linear ----------------------------------------------------------------
def _complex_of(ct_re, ct_im=None):
    """complex(ct_re, ct_im) (ct_im 0 when None)."""
    if ct_im is None:
        ct_im = _zeros_like(ct_re)
    return ew.complex(ct_re, ct_im)


deflinear(ew.real_p, lambda ct, x: [_complex_of(ct)])
deflinear(ew.imag_p, lambda ct, x: [_complex_of(_zeros_like(ct), neg(ct))])
deflinear(ew.conj_p, lambda ct, x: [ew.conj(ct)])


def _complex_transpose(ct, x, y):
    return [unbroadcast(ew.real(ct), x.aval) if is_undefined(x) else None,
            unbroadcast(neg(ew.imag(ct)), y.aval) if is_undefined(y) else None]


deflinear(ew.complex_p, _complex_transpose)


def _integer_pow_jvp(t, ans, x, *, y):
    if y == 0:
        return zero_out(t)
    scale = _c(x, y) if y == 1 else mul(_c(x, y), integer_pow(x, y - 1))
    return mul(t, scale)


defjvp(ew.integer_pow_p, _integer_pow_jvp)


# ---- binary --------------------------------------------------------------------------
def _add_transpose(ct, x, y):
    return [unbroadcast(ct, x.aval) if is_undefined(x) else None,
            unbroadcast(ct, y.aval) if is_undefined(y) else None]


def _sub_transpose(ct, x, y):
    return [unbroadcast(ct, x.aval) if is_undefined(x) else None,
            unbroadcast(neg(ct), y.aval) if is_undefined(y) else None]


deflinear(ew.add_p, _add_transpose)
deflinear(ew.sub_p, _sub_transpose)


def _mul_transpose(ct, x, y):
    if is_undefined(x) and is_undefined(y):
        raise TypeError("mul: cannot transpose a product of two linear values")
    if is_undefined(x):
        return [unbroadcast(mul(ct, y), x.aval), None]
    return [None, unbroadcast(mul(x, ct), y.aval)]


defjvp(ew.mul_p, lambda t, ans, x, y: mul(t, y), lambda t, ans, x, y: mul(x, t))
ew.mul_p.def_transpose(_mul_transpose)


def _div_transpose(ct, x, y):
    if is_undefined(y):
        raise TypeError("div: the divisor of a linear division must not be linear")
    return [unbroadcast(div(ct, y), x.aval), None]


defjvp(ew.div_p, lambda t, ans, x, y: div(t, y),
       lambda t, ans, x, y: neg(mul(t, div(ans, y))))
ew.div_p.def_transpose(_div_transpose)

defjvp(ew.rem_p, lambda t, ans, x, y: t,
       lambda t, ans, x, y: neg(mul(t, mul(sign(div(x, y)), floor(ew.abs(div(x, y)))))))


def _pow_dx(t, ans, x, y):
    # y * x ** (y - 1): 0 where y == 0 and x != 0 by itself (no select, so its derivative
    # in y, the mixed second derivative 1/x, stays right); where x == y == 0, 0 (not NaN)
    scale = mul(y, ew.pow(x, sub(y, _c(y, 1))))
    both_zero = ew.bitwise_and(eq(x, _c(x, 0)), eq(y, _c(y, 0)))
    return mul(t, select(both_zero, _zeros_like(scale), scale))


def _pow_dy(t, ans, x, y):
    # log(x) * x ** y, with log(0) replaced by 0: the derivative at a zero base is 0
    is_zero = eq(x, _c(x, 0))
    one = add(_zeros_like(x), _c(x, 1))
    safe_x = select(is_zero, one, x)
    return mul(t, mul(log(safe_x), ans))


defjvp(ew.pow_p, _pow_dx, _pow_dy)


def _minmax_jvp(pick):
    """d max(x, y): the tangent of the larger operand; ties split the tangent in half."""

    def dx(t, ans, x, y):
        return mul(t, _weight(pick(x, y), eq(x, y), t))

    def dy(t, ans, x, y):
        return mul(t, _weight(pick(y, x), eq(x, y), t))

    return dx, dy


def _weight(wins, tie, like):
    one, half, zero = _c(like, 1), _c(like, 0.5), _c(like, 0)
    return select(wins, _full(wins, one), select(tie, _full(tie, half), _full(tie, zero)))


def _full(shape_of, value):
    shape = aval_of(shape_of).shape
    return broadcast_in_dim(value, shape, ()) if shape else value


defjvp(ew.max_p, *_minmax_jvp(gt))
defjvp(ew.min_p, *_minmax_jvp(lt))


def _atan2_denominator(x, y):
    return add(square(x), square(y))


defjvp(ew.atan2_p, lambda t, ans, x, y: mul(t, div(y, _atan2_denominator(x, y))),
       lambda t, ans, x, y: neg(mul(t, div(x, _atan2_denominator(x, y)))))


# ---- select_n, clamp, dtype conversion -------------------------------------------------
def _select_n_jvp(primals, tangents):
    which, *cases = primals
    ans = select_n(which, *cases)
    case_ts = tangents[1:]
    if not dtypes.is_inexact(aval_of(ans).dtype) or all(type(t) is Zero for t in case_ts):
        return ans, zero_out(ans)
    return ans, select_n(which, *[instantiate(t) for t in case_ts])


def _select_n_transpose(ct, which, *cases):
    if is_undefined(which):
        raise TypeError("select_n: the selector cannot be linear")
    zeros = _zeros_like(ct)
    out = [None]
    for i, case in enumerate(cases):
        if not is_undefined(case):
            out.append(None)
            continue
        picks = [zeros] * len(cases)
        picks[i] = ct
        out.append(select_n(which, *picks))
    return out


ew.select_n_p.def_jvp(_select_n_jvp)
ew.select_n_p.def_transpose(_select_n_transpose)


def _clamp_jvp(primals, tangents):
    lo, x, hi = primals
    t_lo, t_x, t_hi = tangents
    ans = ew.clamp(lo, x, hi)
    out_aval = aval_of(ans)
    total = Zero(out_aval)
    zeros = _zeros_like(ans)
    if type(t_x) is not Zero:
        inside = ew.bitwise_and(gt(x, lo), lt(x, hi))
        total = add_tangents(total, select(inside, t_x, zeros))
    if type(t_lo) is not Zero:
        total = add_tangents(total, select(gt(lo, x), broadcast_to_aval(t_lo, out_aval), zeros))
    if type(t_hi) is not Zero:
        total = add_tangents(total, select(lt(hi, x), broadcast_to_aval(t_hi, out_aval), zeros))
    return ans, total


ew.clamp_p.def_jvp(_clamp_jvp)


def _convert_jvp(primals, tangents, *, new_dtype, weak_type):
    (x,), (t,) = primals, tangents
    ans = ew.convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=weak_type)
    if type(t) is Zero or not dtypes.is_inexact(new_dtype):
        return ans, zero_out(ans)
    return ans, ew.convert_element_type_p.bind(t, new_dtype=new_dtype, weak_type=weak_type)


def _convert_transpose(ct, x, *, new_dtype, weak_type):
    a = x.aval
    return [ew.convert_element_type_p.bind(ct, new_dtype=a.dtype, weak_type=a.weak_type)]


ew.convert_element_type_p.def_jvp(_convert_jvp)
ew.convert_element_type_p.def_transpose(_convert_transpose)


# ---- batching --------------------------------------------------------------------------
# Every elementwise primitive maps over its operands position by position, so the batched
# operation is the primitive itself on batched operands (see _batching.defbroadcasting).
def _bitcast_batching(axis, args, dims, **params):
    """bitcast_convert_type may add or drop a trailing dimension: batch at the front."""
    (x,), (d,) = args, dims
    return ew.bitcast_convert_type_p.bind(moveaxis(x, d, 0), **params), 0


def _select_n_batching(axis, args, dims):
    """select_n's cases share one shape (`which` may be 0-d): cases that lack the batch
    dimension are broadcast, and `which` too unless it is an unbatched 0-d."""
    (which, *cases), (dw, *dc) = args, dims
    avals = [aval_of(c) for c in cases]
    w_aval = aval_of(which)
    if (all(d == dc[0] for d in dc) and all(a.shape == avals[0].shape for a in avals)
            and ((dw is None and w_aval.ndim == 0)
                 or (dw == dc[0] and w_aval.shape == avals[0].shape))):
        return ew.select_n_p.bind(which, *cases), dc[0]
    unbatched = [a.shape if d is None else a.shape[:d] + a.shape[d + 1:]
                 for a, d in zip(avals, dc)]
    full = (axis.size, *unbatched[0])
    cases = [bdim_at_front(c, d, axis.size) for c, d in zip(cases, dc)]
    if not (dw is None and w_aval.ndim == 0):
        which = bdim_at_front(which, dw, axis.size)
        if aval_of(which).ndim != len(full):  # a 0-d `which` per example
            which = broadcast_in_dim(which, full, (0,))
    return ew.select_n_p.bind(which, *cases), 0


ew.select_n_p.def_batching(_select_n_batching)

for _prim in _registry().values():
    if _prim.kind == "elementwise" and "batching" not in _prim.rules:
        if _prim is ew.bitcast_convert_type_p:
            _prim.def_batching(_bitcast_batching)
        else:
            defbroadcasting(_prim)

# ---- simplification (read by mytorch.transforms.simplify) ----------------------------------
def _neg_simplify(eqn, defs):
    """neg(neg(x)) -> x."""
    inner = producer(eqn.invars[0], defs, ew.neg_p)
    return same(eqn, inner.invars[0]) if inner is not None else None


def _convert_simplify(eqn, defs):
    """convert to the operand's own type -> the operand; convert(convert(x, wider), d) ->
    convert(x, d) when the middle type holds every value of x's type."""
    (x,), out = eqn.invars, eqn.outvars[0]
    if x.aval == out.aval:
        return x
    inner = producer(x, defs, ew.convert_element_type_p)
    if inner is not None and lossless(inner.invars[0].aval.dtype, x.aval.dtype):
        return eqn.replace(invars=inner.invars)
    return None


def _select_n_simplify(eqn, defs):
    """select_n(which, x, x, ...) -> x."""
    cases = eqn.invars[1:]
    return same(eqn, cases[0]) if all(c is cases[0] for c in cases[1:]) else None


def _integer_pow_simplify(eqn, defs):
    """x ** 1 -> x."""
    return same(eqn, eqn.invars[0]) if eqn.params["y"] == 1 else None


for _prim, _rule in [
    (ew.add_p, unit_rule(0, (0, 1))), (ew.sub_p, unit_rule(0, (1,))),
    (ew.mul_p, unit_rule(1, (0, 1))), (ew.div_p, unit_rule(1, (1,))),
    (add_any_p, unit_rule(0, (0, 1))), (ew.neg_p, _neg_simplify),
    (ew.convert_element_type_p, _convert_simplify), (ew.select_n_p, _select_n_simplify),
    (ew.integer_pow_p, _integer_pow_simplify),
]:
    _prim.def_rule("simplify", _rule)

__all__ = ["trigamma"]
