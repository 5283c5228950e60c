"""The NumPy backend's elementwise lowerings: a table from primitive to NumPy function, and
the eager kernels built from it.

`NUMPY_FNS[prim]` is the function the kernel applies; where it is a ufunc the code generator
(emitters.py) calls it directly on the dtypes NumPy computes natively. Kernels quiet
floating-point warnings and compute bfloat16 (and, for float-only functions, float16) in
float32, rounding once to the operand dtype, as the CUDA expressions do
(mytorch/backends/cupy/expressions.py).
"""

import numpy as np

from mytorch.backends.numpy import numpy_backend, special
from mytorch.core import dtypes
from mytorch.lax import elementwise as ew


def _kernel(np_fn, float_only):
    """Wrap `np_fn` as an eager kernel: fn(*arrays, **params) -> array."""

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


# ---- functions that need more than one ufunc -----------------------------------------------
def _round(x, rounding_method=0):
    if rounding_method == 1:  # to nearest even
        return np.round(x)
    t = np.trunc(x)  # away from zero
    return np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t).astype(x.dtype)


def _logistic(x):
    if x.dtype.kind == "c":
        return (1 / (1 + np.exp(-x))).astype(x.dtype)
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
    if x.dtype.kind in "iu":  # C semantics: round toward zero; x / 0 is 0
        safe = np.where(y == 0, 1, y)
        q = np.floor_divide(x, safe)
        fix = (q < 0) & (q * safe != x)
        return np.where(y == 0, 0, q + fix.astype(x.dtype)).astype(x.dtype)
    return np.true_divide(x, y)


def _rem(x, y):
    if x.dtype.kind in "iu":  # the sign of x; x % 0 is 0
        safe = np.where(y == 0, 1, y)
        return np.where(y == 0, 0, np.fmod(x, safe)).astype(x.dtype)
    return np.fmod(x, y)


def _not(x):
    return np.logical_not(x) if x.dtype == np.bool_ else np.invert(x)


def _shift(kind):
    """Shifts by a negative amount or by at least the bit width give 0 (-1 for a negative
    operand shifted right arithmetically)."""

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


def _nextafter(x, y):
    """np.nextafter, exact in float16 and, through the bit pattern, in bfloat16; y where
    x == y (C's rule: nextafter(0, -0) is -0), which NumPy's float16 loop follows only from
    NumPy 2.5 on."""
    if x.dtype != dtypes.bfloat16:
        with np.errstate(all="ignore"):
            out = np.nextafter(x, y)
        return np.where(x == y, y, out).astype(x.dtype) if x.dtype == np.float16 else out
    x, y = np.broadcast_arrays(x, y)
    xf, yf = x.astype(np.float32), y.astype(np.float32)
    bits = x.view(np.int16).astype(np.int32)
    away = (xf < yf) == (xf > 0)  # moving away from zero grows the magnitude bits
    step = np.where(xf == 0, 1, np.where(away, 1, -1))
    mag = np.where(xf == 0, np.where(yf < 0, -0x8000 + 1, 1), bits + step)
    out = mag.astype(np.int16).view(dtypes.bfloat16)
    out = np.where(xf == yf, y, out)
    return np.where(np.isnan(xf) | np.isnan(yf), np.array(np.nan, x.dtype), out)


def _select_n(which, *cases):
    if which.dtype == np.bool_:
        return np.where(which, cases[1], cases[0]) if len(cases) == 2 else np.array(cases[0])
    if which.ndim == 0:
        return np.array(cases[int(np.clip(which, 0, len(cases) - 1))])
    return np.choose(which, cases, mode="clip")


def _clamp(lo, x, hi):
    with np.errstate(all="ignore"):  # NaN comparisons in bfloat16 warn
        return np.minimum(np.maximum(x, lo), hi)


def _convert(x, *, new_dtype, weak_type):
    """Any dtype to any dtype. float -> int truncates toward zero, saturates at the integer
    range and sends NaN to 0 (as XLA's CPU backend); narrowing floats overflow to inf; to
    bool is `x != 0` (NaN is True)."""
    if new_dtype == np.bool_:
        return x != 0
    if x.dtype.kind == "c" and not dtypes.is_complex(new_dtype):
        x = x.real  # complex -> real keeps the real part, as JAX (NumPy's cast warns)
    with np.errstate(all="ignore"):
        if dtypes.is_int(new_dtype) and dtypes.is_float(x.dtype):  # bfloat16's kind is "V"
            # float(info.max) rounds up to 2**63 (2**64) for 64-bit types, so compare first
            info = np.iinfo(new_dtype)
            y = np.trunc(x.astype(np.float64))
            big, small = y >= float(info.max), y <= float(info.min)
            inner = np.where(big | small | np.isnan(y), 0, y).astype(new_dtype)
            return np.where(big, info.max, np.where(small, info.min, inner)).astype(new_dtype)
        return x.astype(new_dtype)


def _real(x):
    return x.real.copy()  # a fresh buffer: generated code may write into results


def _imag(x):
    return x.imag.copy()


def _complex(x, y):
    out = np.empty(np.broadcast_shapes(x.shape, y.shape), dtypes.complex_dtype(x.dtype))
    out.real = x
    out.imag = y
    return out


def _bitcast(x, *, new_dtype):
    new_dtype = np.dtype(new_dtype)
    if new_dtype.itemsize < x.dtype.itemsize:
        ratio = x.dtype.itemsize // new_dtype.itemsize
        return np.ascontiguousarray(x).view(new_dtype).reshape(*x.shape, ratio)
    if new_dtype.itemsize > x.dtype.itemsize:
        return np.ascontiguousarray(x).view(new_dtype).reshape(x.shape[:-1])
    return np.ascontiguousarray(x).view(new_dtype).reshape(x.shape)


# ---- the table -----------------------------------------------------------------------------
# computed natively for every dtype but bfloat16
_ANY_FLOAT = {
    ew.neg_p: np.negative, ew.abs_p: np.abs, ew.sign_p: np.sign, ew.not_p: _not,
    ew.square_p: np.square, ew.add_p: np.add, ew.sub_p: np.subtract, ew.mul_p: np.multiply,
    ew.div_p: _div, ew.rem_p: _rem, ew.max_p: np.maximum, ew.min_p: np.minimum,
    ew.and_p: np.bitwise_and, ew.or_p: np.bitwise_or, ew.xor_p: np.bitwise_xor,
    ew.shift_left_p: _shift("left"),
    ew.shift_right_arithmetic_p: _shift("right_arithmetic"),
    ew.shift_right_logical_p: _shift("right_logical"),
    ew.eq_p: np.equal, ew.ne_p: np.not_equal, ew.lt_p: np.less, ew.le_p: np.less_equal,
    ew.gt_p: np.greater, ew.ge_p: np.greater_equal, ew.is_finite_p: np.isfinite,
    ew.integer_pow_p: _integer_pow, ew.conj_p: np.conjugate,
}
# float-only functions: float16 and bfloat16 computed in float32
_FLOAT_ONLY = {
    ew.floor_p: np.floor, ew.ceil_p: np.ceil, ew.round_p: _round, ew.exp_p: np.exp,
    ew.exp2_p: np.exp2, ew.log_p: np.log, ew.log1p_p: np.log1p, ew.expm1_p: np.expm1,
    ew.sqrt_p: np.sqrt, ew.rsqrt_p: _rsqrt, ew.cbrt_p: np.cbrt, ew.sin_p: np.sin,
    ew.cos_p: np.cos, ew.tan_p: np.tan, ew.asin_p: np.arcsin, ew.acos_p: np.arccos,
    ew.atan_p: np.arctan, ew.sinh_p: np.sinh, ew.cosh_p: np.cosh, ew.tanh_p: np.tanh,
    ew.asinh_p: np.arcsinh, ew.acosh_p: np.arccosh, ew.atanh_p: np.arctanh,
    ew.logistic_p: _logistic, ew.erf_p: _f(special.erf), ew.erfc_p: _f(special.erfc),
    ew.erf_inv_p: _f(special.erf_inv), ew.lgamma_p: _f(special.lgamma),
    ew.digamma_p: _f(special.digamma), ew.reciprocal_p: np.reciprocal, ew.pow_p: np.power,
    ew.atan2_p: np.arctan2, ew.nextafter_p: np.nextafter,
}
# kernels that handle every dtype themselves
_OWN = {
    ew.nextafter_p: _nextafter, ew.select_n_p: _select_n, ew.clamp_p: _clamp,
    ew.convert_element_type_p: _convert, ew.bitcast_convert_type_p: _bitcast,
    ew.stop_gradient_p: lambda x: x,  # arrays are immutable: no copy needed
    ew.real_p: _real, ew.imag_p: _imag, ew.complex_p: _complex,
}

NUMPY_FNS = {**_ANY_FLOAT, **_FLOAT_ONLY}


def _register():
    for table, float_only in ((_ANY_FLOAT, False), (_FLOAT_ONLY, True)):
        for prim, fn in table.items():
            numpy_backend.register(prim)(_kernel(fn, float_only))
    for prim, fn in _OWN.items():
        numpy_backend.register(prim)(fn)


_register()
