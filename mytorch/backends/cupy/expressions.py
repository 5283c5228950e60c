"""CUDA C expressions of the elementwise primitives, with the semantics of the NumPy kernels
(mytorch/backends/numpy/elementwise.py), for the CuPy backend's generated kernels.

`expression(prim, in_dtypes, out_dtype, **params)` is a C expression template: `{0}`, `{1}`,
... stand for the operands (C values of `ctype(in_dtypes[i])`), and the expression has the C
type `ctype(out_dtype)`. It needs `PRELUDE` (helpers named `mt_*`), which is C that compiles
both as CUDA C++ and, given CUDA's half-precision names, as host C. No CuPy import here.

The semantics, dtype by dtype, are the NumPy kernels':
- float16 and bfloat16 are computed in float32 and rounded once (round to nearest even),
  except float16's integer_pow with a negative exponent, `1 / x**n` with `x**n` rounded to
  float16 first (NumPy computes that power in float16);
- signed integer arithmetic wraps (computed in unsigned); `x / 0` and `x % 0` are 0, and
  `MIN / -1` is MIN; division rounds toward zero, the remainder has the sign of `x`;
- shifts by a negative amount or by at least the bit width give 0 (an arithmetic right
  shift of a negative operand gives -1);
- max/min propagate NaN; of two equal operands (+0 and -0) they return the second, but the
  first for float16, as NumPy's loops do; nextafter(x, y) with x == y is y;
  sign(+-0) is +0 and sign(NaN) is NaN;
- round: halves away from zero (`rounding_method=0`, C's round) or to even (1, C's rint);
- float -> int conversion truncates toward zero, saturates at the integer range and sends
  NaN to 0; float64 -> bfloat16 rounds through float32 (as ml_dtypes does), float64 ->
  float16 rounds directly; anything -> bool is `x != 0` (NaN is true); int -> int wraps;
- the special functions erf, erfc, lgamma, erf_inv and digamma are computed in float64
  (erf_inv and digamma by the same algorithms as backends/numpy/special.py);
- bitcast_convert_type: same width reinterprets the bits; to a narrower dtype the
  template takes the operand `{0}` and the part index `{1}` (0 = least significant bits,
  NumPy's little-endian view); to a wider dtype it takes the r narrow operands `{0}`..
  `{r-1}`, least significant first;
- complex64 and complex128 are the structs `mt_c64` and `mt_c128` of `re` and `im` (NumPy's
  layout). Multiply and square are NumPy's vectorised loop (each part one fma over one
  rounded product), divide and reciprocal NumPy's Smith's algorithm, abs NumPy's vectorised
  `larger * sqrt(1 + (smaller / larger)**2)` (an infinite part gives inf, even beside a
  NaN), sign `z / hypot(z)` (0 at 0); comparisons, max and min order lexicographically as
  NumPy; exp, log, sqrt, sin, cos, tan, sinh, cosh, tanh and non-integer pow follow glibc,
  which NumPy calls, and exp2, expm1, log1p, rsqrt and logistic are NumPy's compositions;
  integer powers of magnitude below 100 are NumPy's repeated squaring (and reciprocal).
  complex -> real keeps the real part, -> bool is `z != 0`, real -> complex has a zero
  imaginary part. asin, acos, atan, asinh, acosh and atanh of complex operands, and bitcasts
  of complex128, have no expression (TypeError).
"""

import functools

import numpy as np

from mytorch.backends.cupy.complex_c import COMPLEX_PARTS, complex_helpers
from mytorch.core import dtypes
from mytorch.lax import elementwise as ew

_F16, _BF16 = np.dtype(np.float16), np.dtype(dtypes.bfloat16)
_INTS = {  # dtype: (suffix, C type, same-width unsigned, wide unsigned, bits, min, max)
    np.dtype(np.int8): ("i8", "signed char", "unsigned char", "unsigned int", 8,
                        "(-127 - 1)", "127"),
    np.dtype(np.int16): ("i16", "short", "unsigned short", "unsigned int", 16,
                         "(-32767 - 1)", "32767"),
    np.dtype(np.int32): ("i32", "int", "unsigned int", "unsigned int", 32,
                         "(-2147483647 - 1)", "2147483647"),
    np.dtype(np.int64): ("i64", "long long", "unsigned long long", "unsigned long long", 64,
                         "(-9223372036854775807LL - 1)", "9223372036854775807LL"),
    np.dtype(np.uint8): ("u8", "unsigned char", "unsigned char", "unsigned int", 8,
                         "0", "255"),
    np.dtype(np.uint16): ("u16", "unsigned short", "unsigned short", "unsigned int", 16,
                          "0", "65535"),
    np.dtype(np.uint32): ("u32", "unsigned int", "unsigned int", "unsigned int", 32,
                          "0", "4294967295U"),
    np.dtype(np.uint64): ("u64", "unsigned long long", "unsigned long long",
                          "unsigned long long", 64, "0", "18446744073709551615ULL"),
}
_FLOATS = {np.dtype(np.float32): ("f32", "float", "f"), np.dtype(np.float64): ("f64", "double", "")}
_UNSIGNED = {1: "unsigned char", 2: "unsigned short", 4: "unsigned int", 8: "unsigned long long"}


@functools.lru_cache(maxsize=None)  # the code generators ask for it per value and path
def ctype(dtype):
    """The C type holding one element of `dtype`."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return "bool"
    if dtype == _F16:
        return "__half"
    if dtype == _BF16:
        return "__nv_bfloat16"
    if dtype in _INTS:
        return _INTS[dtype][1]
    if dtype in _FLOATS:
        return _FLOATS[dtype][1]
    if dtype in COMPLEX_PARTS:
        return "mt_" + COMPLEX_PARTS[dtype][0]
    raise TypeError(f"cuda expressions: no C type for dtype {dtype}")


def _int_helpers():
    out = []
    for dt, (s, t, u, w, bits, lo, hi) in _INTS.items():
        signed = dt.kind == "i"
        neg_s = "s < 0 || " if signed else ""
        out.append(f"""
MT_FN {t} mt_neg_{s}({t} x) {{ return ({t})(0 - ({w})x); }}
MT_FN {t} mt_abs_{s}({t} x) {{ return {"x < 0 ? (" + t + ")(0 - (" + w + ")x) : " if signed else ""}x; }}
MT_FN {t} mt_sign_{s}({t} x) {{ return ({t})({"(x > 0) - (x < 0)" if signed else "x > 0"}); }}
MT_FN {t} mt_add_{s}({t} x, {t} y) {{ return ({t})(({w})x + ({w})y); }}
MT_FN {t} mt_sub_{s}({t} x, {t} y) {{ return ({t})(({w})x - ({w})y); }}
MT_FN {t} mt_mul_{s}({t} x, {t} y) {{ return ({t})(({w})x * ({w})y); }}
MT_FN {t} mt_div_{s}({t} x, {t} y) {{
  return y == 0 ? ({t})0 : {"y == -1 ? (" + t + ")(0 - (" + w + ")x) : " if signed else ""}({t})(x / y);
}}
MT_FN {t} mt_rem_{s}({t} x, {t} y) {{
  return (y == 0{" || y == -1" if signed else ""}) ? ({t})0 : ({t})(x % y);
}}
MT_FN {t} mt_shl_{s}({t} x, {t} s) {{
  return ({neg_s}s >= {bits}) ? ({t})0 : ({t})(({w})x << s);
}}
MT_FN {t} mt_sar_{s}({t} x, {t} s) {{
  return ({neg_s}s >= {bits}) ? ({t}){"(x < 0 ? -1 : 0)" if signed else "0"} : ({t})(x >> s);
}}
MT_FN {t} mt_shr_{s}({t} x, {t} s) {{
  return ({neg_s}s >= {bits}) ? ({t})0 : ({t})(({u})x >> s);
}}
MT_FN {t} mt_ipow_{s}({t} x, int n) {{
  {w} r = 1, b = ({w})x;
  while (n) {{ if (n & 1) r = ({w})(r * b); b = ({w})(b * b); n >>= 1; }}
  return ({t})r;
}}
MT_FN {t} mt_from_f64_{s}(double v) {{
  return v != v ? ({t})0 : v >= (double){hi} ? ({t}){hi} : v <= (double){lo} ? ({t}){lo} : ({t})v;
}}""")
    return "".join(out)


def _float_helpers():
    out = []
    for s, f, suf in _FLOATS.values():
        out.append(f"""
MT_FN {f} mt_max_{s}({f} x, {f} y) {{ return (x > y || x != x) ? x : y; }}
MT_FN {f} mt_min_{s}({f} x, {f} y) {{ return (x < y || x != x) ? x : y; }}
MT_FN {f} mt_max1_{s}({f} x, {f} y) {{ return (x >= y || x != x) ? x : y; }}
MT_FN {f} mt_min1_{s}({f} x, {f} y) {{ return (x <= y || x != x) ? x : y; }}
MT_FN {f} mt_sign_{s}({f} x) {{ return x > 0 ? ({f})1 : x < 0 ? ({f})-1 : x == 0 ? ({f})0 : x; }}
MT_FN {f} mt_logistic_{s}({f} x) {{
  {f} e = exp{suf}(-fabs{suf}(x));
  return x >= 0 ? ({f})1 / (({f})1 + e) : e / (({f})1 + e);
}}
MT_FN {f} mt_ipow_{s}({f} x, int n) {{
  return n == 0 ? ({f})1 : n < 0 ? ({f})1 / pow{suf}(x, ({f})-n) : pow{suf}(x, ({f})n);
}}""")
    return "".join(out)


PRELUDE = (r"""
#ifdef __CUDACC__
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#define MT_FN static __device__ __forceinline__
MT_FN unsigned int mt_f32_bits(float x) { return __float_as_uint(x); }
MT_FN float mt_f32_from(unsigned int u) { return __uint_as_float(u); }
MT_FN unsigned long long mt_f64_bits(double x) {
  return (unsigned long long)__double_as_longlong(x);
}
MT_FN double mt_f64_from(unsigned long long u) { return __longlong_as_double((long long)u); }
/* a product nvcc may not contract into an fma with a following add */
MT_FN float mt_rmul_f32(float a, float b) { return __fmul_rn(a, b); }
MT_FN double mt_rmul_f64(double a, double b) { return __dmul_rn(a, b); }
#else
#define MT_FN static inline
MT_FN unsigned int mt_f32_bits(float x) { unsigned int u; memcpy(&u, &x, 4); return u; }
MT_FN float mt_f32_from(unsigned int u) { float x; memcpy(&x, &u, 4); return x; }
MT_FN unsigned long long mt_f64_bits(double x) {
  unsigned long long u; memcpy(&u, &x, 8); return u;
}
MT_FN double mt_f64_from(unsigned long long u) { double x; memcpy(&x, &u, 8); return x; }
MT_FN float mt_rmul_f32(float a, float b) { return a * b; }
MT_FN double mt_rmul_f64(double a, double b) { return a * b; }
#endif
#define MT_PI 3.141592653589793
#define MT_LN2 0.693147180559945309417232121458176568
#define MT_INF mt_f64_from(0x7ff0000000000000ULL)
#define MT_NAN mt_f64_from(0x7ff8000000000000ULL)
MT_FN unsigned short mt_next16(unsigned short xb, unsigned short yb, float x, float y,
                               unsigned short nan) {
  if (x != x || y != y) return nan;
  if (x == y) return yb;
  if (x == 0) return y < 0 ? (unsigned short)0x8001 : (unsigned short)1;
  return (unsigned short)((x < y) == (x > 0) ? xb + 1 : xb - 1);
}
MT_FN double mt_sign1(double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : x == 0 ? 0.0 : x; }
MT_FN double mt_erfinv(double x) {
  double a = 0.147, ln = log1p(-x * x), t = 2.0 / (MT_PI * a) + ln / 2.0, ax = fabs(x);
  double y = mt_sign1(x) * sqrt(sqrt(t * t - ln / a) - t), err;
  int i;
  for (i = 0; i < 4; i++) {
    err = ax > 0.5 ? mt_sign1(x) * (erfc(fabs(y)) - (1.0 - ax)) * -1.0 : erf(y) - x;
    y = y - err / (2.0 / sqrt(MT_PI) * exp(-y * y));
  }
  if (ax == 1.0) y = mt_sign1(x) * MT_INF;
  return (ax > 1.0 || x != x) ? MT_NAN : y;
}
MT_FN double mt_digamma(double x) {
  int reflect = x < 0.5, i;
  double z = reflect ? 1.0 - x : x, shift = 0.0, inv2, series, psi;
  for (i = 0; i < 10 && z < 10.0; i++) { shift = shift - 1.0 / z; z = z + 1.0; }
  inv2 = 1.0 / (z * z);
  series = inv2 * (1.0 / 12 - inv2 * (1.0 / 120 - inv2 * (1.0 / 252 - inv2 * (
      1.0 / 240 - inv2 * (1.0 / 132 - inv2 * (691.0 / 32760 - inv2 / 12.0))))));
  psi = log(z) - 0.5 / z - series + shift;
  if (reflect) psi = psi - MT_PI / tan(MT_PI * (x - rint(x)));
  if (x <= 0 && x == floor(x)) psi = MT_NAN;
  return x == 0 ? copysign(MT_INF, -copysign(1.0, x)) : psi;
}
""" + _int_helpers() + _float_helpers() + complex_helpers() + "\n")


# ---- float expressions, as (f32, f64) templates built from a C type's suffixes -------------
def _libm(name):
    return lambda s, f, suf: f"{name}{suf}({{0}})"


def _libm2(name):
    return lambda s, f, suf: f"{name}{suf}({{0}}, {{1}})"


def _in_f64(name):
    return lambda s, f, suf: f"({f}){name}((double){{0}})"


def _helper(name, nargs=1):
    args = ", ".join(f"{{{i}}}" for i in range(nargs))
    return lambda s, f, suf: f"mt_{name}_{s}({args})"


def _op(template):
    return lambda s, f, suf: template


_FLOAT_EXPR = {
    ew.neg_p: _op("(-{0})"), ew.abs_p: _libm("fabs"), ew.sign_p: _helper("sign"),
    ew.floor_p: _libm("floor"), ew.ceil_p: _libm("ceil"), ew.exp_p: _libm("exp"),
    ew.exp2_p: _libm("exp2"), ew.log_p: _libm("log"), ew.log1p_p: _libm("log1p"),
    ew.expm1_p: _libm("expm1"), ew.sqrt_p: _libm("sqrt"),
    ew.rsqrt_p: lambda s, f, suf: f"(({f})1 / sqrt{suf}({{0}}))", ew.cbrt_p: _libm("cbrt"),
    ew.sin_p: _libm("sin"), ew.cos_p: _libm("cos"), ew.tan_p: _libm("tan"),
    ew.asin_p: _libm("asin"), ew.acos_p: _libm("acos"), ew.atan_p: _libm("atan"),
    ew.sinh_p: _libm("sinh"), ew.cosh_p: _libm("cosh"), ew.tanh_p: _libm("tanh"),
    ew.asinh_p: _libm("asinh"), ew.acosh_p: _libm("acosh"), ew.atanh_p: _libm("atanh"),
    ew.logistic_p: _helper("logistic"), ew.erf_p: _in_f64("erf"), ew.erfc_p: _in_f64("erfc"),
    ew.erf_inv_p: _in_f64("mt_erfinv"), ew.lgamma_p: _in_f64("lgamma"),
    ew.digamma_p: _in_f64("mt_digamma"), ew.is_finite_p: _op("isfinite({0})"),
    ew.square_p: _op("({0} * {0})"), ew.reciprocal_p: lambda s, f, suf: f"(({f})1 / {{0}})",
    ew.add_p: _op("({0} + {1})"), ew.sub_p: _op("({0} - {1})"), ew.mul_p: _op("({0} * {1})"),
    ew.div_p: _op("({0} / {1})"), ew.rem_p: _libm2("fmod"), ew.pow_p: _libm2("pow"),
    ew.max_p: _helper("max", 2), ew.min_p: _helper("min", 2), ew.atan2_p: _libm2("atan2"),
    ew.nextafter_p: _libm2("nextafter"), ew.eq_p: _op("({0} == {1})"),
    ew.ne_p: _op("({0} != {1})"), ew.lt_p: _op("({0} < {1})"), ew.le_p: _op("({0} <= {1})"),
    ew.gt_p: _op("({0} > {1})"), ew.ge_p: _op("({0} >= {1})"),
}
_INT_EXPR = {
    ew.neg_p: "mt_neg_{s}({{0}})", ew.abs_p: "mt_abs_{s}({{0}})",
    ew.sign_p: "mt_sign_{s}({{0}})", ew.not_p: "(({t})~{{0}})",
    ew.square_p: "mt_mul_{s}({{0}}, {{0}})", ew.add_p: "mt_add_{s}({{0}}, {{1}})",
    ew.sub_p: "mt_sub_{s}({{0}}, {{1}})", ew.mul_p: "mt_mul_{s}({{0}}, {{1}})",
    ew.div_p: "mt_div_{s}({{0}}, {{1}})", ew.rem_p: "mt_rem_{s}({{0}}, {{1}})",
    ew.max_p: "({{0}} > {{1}} ? {{0}} : {{1}})", ew.min_p: "({{0}} < {{1}} ? {{0}} : {{1}})",
    ew.and_p: "(({t})({{0}} & {{1}}))", ew.or_p: "(({t})({{0}} | {{1}}))",
    ew.xor_p: "(({t})({{0}} ^ {{1}}))", ew.shift_left_p: "mt_shl_{s}({{0}}, {{1}})",
    ew.shift_right_arithmetic_p: "mt_sar_{s}({{0}}, {{1}})",
    ew.shift_right_logical_p: "mt_shr_{s}({{0}}, {{1}})",
    ew.eq_p: "({{0}} == {{1}})", ew.ne_p: "({{0}} != {{1}})", ew.lt_p: "({{0}} < {{1}})",
    ew.le_p: "({{0}} <= {{1}})", ew.gt_p: "({{0}} > {{1}})", ew.ge_p: "({{0}} >= {{1}})",
}
_BOOL_EXPR = {
    ew.not_p: "(!{0})", ew.and_p: "({0} && {1})", ew.or_p: "({0} || {1})",
    ew.xor_p: "({0} != {1})", ew.max_p: "({0} || {1})", ew.min_p: "({0} && {1})",
    ew.eq_p: "({0} == {1})", ew.ne_p: "({0} != {1})", ew.lt_p: "(!{0} && {1})",
    ew.le_p: "(!{0} || {1})", ew.gt_p: "({0} && !{1})", ew.ge_p: "({0} || !{1})",
}
_HALF = {  # dtype: (to float, from float, bits, from bits, NaN bits)
    _F16: ("__half2float", "__float2half_rn", "__half_as_ushort", "__ushort_as_half", "0x7e00"),
    _BF16: ("__bfloat162float", "__float2bfloat16_rn", "__bfloat16_as_ushort",
            "__ushort_as_bfloat16", "0x7fc0"),
}
# complex operands: "mt_<name>_c64({0}, ...)" (or c128) for each primitive named here
_COMPLEX_EXPR = {
    ew.neg_p: "neg", ew.abs_p: "abs", ew.sign_p: "sign", ew.conj_p: "conj", ew.exp_p: "exp",
    ew.exp2_p: "exp2", ew.log_p: "log", ew.log1p_p: "log1p", ew.expm1_p: "expm1",
    ew.sqrt_p: "sqrt", ew.sin_p: "sin", ew.cos_p: "cos", ew.tan_p: "tan", ew.sinh_p: "sinh",
    ew.cosh_p: "cosh", ew.tanh_p: "tanh", ew.reciprocal_p: "recip", ew.add_p: "add",
    ew.sub_p: "sub", ew.mul_p: "mul", ew.div_p: "div", ew.pow_p: "pow", ew.max_p: "max",
    ew.min_p: "min", ew.lt_p: "lt", ew.le_p: "le", ew.gt_p: "gt", ew.ge_p: "ge",
}
_BINARY_COMPLEX = {"add", "sub", "mul", "div", "pow", "max", "min", "lt", "le", "gt", "ge"}
_SPECIAL = (ew.select_n_p, ew.clamp_p, ew.convert_element_type_p, ew.bitcast_convert_type_p,
            ew.stop_gradient_p, ew.integer_pow_p, ew.round_p, ew.real_p, ew.imag_p,
            ew.complex_p, ew.square_p, ew.eq_p, ew.ne_p, ew.is_finite_p, ew.rsqrt_p,
            ew.logistic_p)
PRIMITIVES = frozenset((*_FLOAT_EXPR, *_INT_EXPR, *_BOOL_EXPR, *_COMPLEX_EXPR, *_SPECIAL))


def has_expression(prim):
    """Whether `prim` has a CUDA expression here."""
    return prim in PRIMITIVES


def expression(prim, in_dtypes, out_dtype, **params):
    """The C expression template of `prim` on operands of `in_dtypes` (a sequence of dtypes)
    giving `out_dtype`; `params` are the equation's parameters. Raises TypeError for a
    primitive or dtype without one."""
    in_dtypes = [np.dtype(d) for d in in_dtypes]
    out_dtype = np.dtype(out_dtype)
    dt = in_dtypes[-1] if prim is ew.select_n_p else in_dtypes[0]
    if prim is ew.convert_element_type_p:
        return convert(dt, out_dtype)
    if prim is ew.bitcast_convert_type_p:
        return bitcast(dt, out_dtype, len(in_dtypes))
    if prim is ew.stop_gradient_p:
        return "{0}"
    if prim is ew.select_n_p:
        return _select(in_dtypes[0], len(in_dtypes) - 1)
    if prim is ew.complex_p and out_dtype in COMPLEX_PARTS:
        return f"mt_mk_{COMPLEX_PARTS[out_dtype][0]}({{0}}, {{1}})"
    if dt in COMPLEX_PARTS:
        return _complex_expression(prim, dt, **params)
    if dt in _HALF:  # computed in float32, rounded once
        to_f, from_f = _HALF[dt][:2]
        nargs = len(in_dtypes)
        if prim is ew.nextafter_p:
            bits, nan = _HALF[dt][2], _HALF[dt][4]
            return (f"{_HALF[dt][3]}(mt_next16({bits}({{0}}), {bits}({{1}}), {to_f}({{0}}), "
                    f"{to_f}({{1}}), {nan}))")
        if prim is ew.integer_pow_p and dt == _F16 and params["y"] < 0:
            # NumPy's 1 / x**n: the power is rounded to float16 before the division
            power = f"{to_f}({from_f}(mt_ipow_f32({to_f}({{0}}), {-int(params['y'])})))"
            return f"{from_f}(1.0f / {power})"
        inner = expression(prim, [np.float32] * nargs, np.float32, **params)
        if dt == _F16:  # NumPy's float16 max/min keep the first operand when equal
            inner = inner.replace("mt_max_f32", "mt_max1_f32").replace("mt_min_f32", "mt_min1_f32")
        inner = inner.format(*(f"{to_f}({{{i}}})" for i in range(nargs)))
        return inner if out_dtype == np.bool_ else f"{from_f}({inner})"
    if prim is ew.clamp_p:  # minimum(maximum(x, lo), hi)
        mx = expression(ew.max_p, [dt, dt], dt).format("{1}", "{0}")
        return expression(ew.min_p, [dt, dt], dt).format(mx, "{2}")
    if dt in _FLOATS:
        s, f, suf = _FLOATS[dt]
        if prim is ew.integer_pow_p:
            return f"mt_ipow_{s}({{0}}, {int(params['y'])})"
        if prim is ew.round_p:
            return f"{'rint' if params.get('rounding_method', 0) == 1 else 'round'}{suf}({{0}})"
        if prim in _FLOAT_EXPR:
            return _FLOAT_EXPR[prim](s, f, suf)
    elif dt in _INTS:
        s, t = _INTS[dt][:2]
        if prim is ew.integer_pow_p:
            return f"mt_ipow_{s}({{0}}, {int(params['y'])})"
        if prim in _INT_EXPR:
            return _INT_EXPR[prim].format(s=s, t=t)
    elif dt == np.bool_ and prim in _BOOL_EXPR:
        return _BOOL_EXPR[prim]
    raise TypeError(f"cuda expressions: no expression for '{prim.name}' on {dt}")


def _complex_expression(prim, dt, **params):
    """The expression of `prim` on complex operands of dtype `dt`."""
    c = COMPLEX_PARTS[dt][0]
    if prim in _COMPLEX_EXPR:
        nargs = 2 if _COMPLEX_EXPR[prim] in _BINARY_COMPLEX else 1
        return f"mt_{_COMPLEX_EXPR[prim]}_{c}({', '.join(f'{{{i}}}' for i in range(nargs))})"
    one = f"mt_mk_{c}(1, 0)"
    composed = {  # as the NumPy kernels compose them
        ew.real_p: "({0}).re", ew.imag_p: "({0}).im",
        ew.square_p: f"mt_mul_{c}({{0}}, {{0}})",
        ew.eq_p: "(({0}).re == ({1}).re && ({0}).im == ({1}).im)",
        ew.ne_p: "(({0}).re != ({1}).re || ({0}).im != ({1}).im)",
        ew.is_finite_p: "(isfinite(({0}).re) && isfinite(({0}).im))",
        ew.rsqrt_p: f"mt_div_{c}({one}, mt_sqrt_{c}({{0}}))",
        ew.logistic_p: f"mt_div_{c}({one}, mt_add_{c}({one}, mt_exp_{c}(mt_neg_{c}({{0}}))))",
        ew.clamp_p: f"mt_min_{c}(mt_max_{c}({{1}}, {{0}}), {{2}})",
    }
    if prim in composed:
        return composed[prim]
    if prim is ew.integer_pow_p:
        return f"mt_ipow_{c}({{0}}, {int(params['y'])})"
    raise TypeError(f"cuda expressions: no expression for '{prim.name}' on {dt}")



def _select(which, ncases):
    """cases[which]: a bool `which` picks {2} when true; an int one is clipped to the
    cases' range."""
    if which == np.bool_:
        return "({0} ? {2} : {1})" if ncases == 2 else "{1}"
    out = f"{{{ncases}}}"
    for k in range(ncases - 2, -1, -1):
        out = f"({{0}} <= {k} ? {{{k + 1}}} : {out})"
    return out


def convert(src, dst):
    """The C expression converting `{0}` of dtype `src` to `dst` (see the module doc)."""
    src, dst = np.dtype(src), np.dtype(dst)
    if src == dst:
        return "{0}"
    if src in COMPLEX_PARTS:
        if dst == np.bool_:
            return "(({0}).re != 0 || ({0}).im != 0)"
        if dst in COMPLEX_PARTS:
            f = COMPLEX_PARTS[dst][1]
            return f"mt_mk_{COMPLEX_PARTS[dst][0]}(({f})({{0}}).re, ({f})({{0}}).im)"
        return convert(dtypes.real_dtype(src), dst).format("({0}).re")
    if dst in COMPLEX_PARTS:
        re = convert(src, dtypes.real_dtype(dst))
        return f"mt_mk_{COMPLEX_PARTS[dst][0]}({re}, 0)"
    x = f"{_HALF[src][0]}({{0}})" if src in _HALF else "{0}"  # halves go through float
    if dst == np.bool_:
        return f"({x} != 0)"
    src_float = src in _HALF or src in _FLOATS
    if dst in _INTS:
        if src_float:
            return f"mt_from_f64_{_INTS[dst][0]}((double){x})"
        return f"(({_INTS[dst][1]}){x})"
    if dst == _F16 and src == np.float64:
        return "__double2half({0})"
    if dst in _HALF:
        return f"{_HALF[dst][1]}((float){x})"
    return f"(({ctype(dst)}){x})"


def _bits(dtype):
    """(to bits, from bits) templates between `dtype` and the unsigned of its width."""
    dtype = np.dtype(dtype)
    if dtype in _HALF:
        return f"{_HALF[dtype][2]}({{}})", f"{_HALF[dtype][3]}({{}})"
    if dtype in _FLOATS:
        s = _FLOATS[dtype][0]
        return f"mt_{s}_bits({{}})", f"mt_{s}_from({{}})"
    if dtype == np.bool_:
        return "((unsigned char)({}))", "(({}) != 0)"
    if dtype == np.complex64:  # the real part in the low half
        return ("((unsigned long long)mt_f32_bits(({0}).re) | "
                "((unsigned long long)mt_f32_bits(({0}).im) << 32))",
                "mt_c64_from({})")
    if dtype.itemsize not in _UNSIGNED:
        raise TypeError(f"cuda expressions: no expression for 'bitcast_convert_type' on {dtype}")
    return f"(({_UNSIGNED[dtype.itemsize]})({{}}))", f"(({ctype(dtype)})({{}}))"


def bitcast(src, dst, nargs=1):
    """The C expression reinterpreting the bits of `src` as `dst` (see the module doc for
    the operands of width-changing casts)."""
    src, dst = np.dtype(src), np.dtype(dst)
    to_bits, _ = _bits(src)
    _, from_bits = _bits(dst)
    if src.itemsize == dst.itemsize:
        return from_bits.format(to_bits.format("{0}"))
    u = _UNSIGNED[dst.itemsize]
    if src.itemsize > dst.itemsize:
        shifted = f"({to_bits.format('{0}')} >> ({{1}} * {8 * dst.itemsize}))"
        return from_bits.format(f"({u}){shifted}")
    ratio = dst.itemsize // src.itemsize
    if nargs != ratio:
        raise TypeError(f"cuda expressions: bitcasting {src} to {dst} takes {ratio} operands")
    parts = [f"(({u}){to_bits.format(f'{{{i}}}')} << {8 * src.itemsize * i})"
             for i in range(ratio)]
    return from_bits.format(" | ".join(parts))
