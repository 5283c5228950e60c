"""C helpers of the complex64/complex128 CUDA expressions (expressions.py): the element
structs `mt_c64 {float re, im;}` and `mt_c128 {double re, im;}` (NumPy's layout) and one
helper `mt_<op>_c64` / `mt_<op>_c128` per complex operation, generated from one C template
for both widths. They compute what the NumPy kernels compute: NumPy's own loops for
arithmetic (fma multiply, Smith's division, its vectorised abs), and the C library's
algorithms and C99 Annex G special values for exp, log, sqrt, the trigonometric and
hyperbolic functions and pow, which NumPy calls. Plain C: the same source compiles as CUDA
C++ and, for the CPU twin, as host C (tests/backends/c_harness.py).
"""

import numpy as np

__all__ = ["COMPLEX_PARTS", "complex_helpers"]

# One C template for both widths: @c@ is the struct (mt_c64, mt_c128), @s@ its name suffix
# (c64, c128), @f@ its part type, @m@ the libm suffix, @r@ the real helpers' suffix; @MAX@,
# @MIN@ (smallest normal), @EPS@, @MANT@ (mantissa digits) and @T@ (the integer part of
# (max exponent - 1) * ln 2, where exp is scaled in steps) describe the part type. The
# transcendental functions follow C99 Annex G with glibc's algorithms, since NumPy calls
# glibc's cexp, clog, csqrt, csin, ccosh, ctanh and cpow; products that NumPy rounds
# separately go through mt_rmul so that CUDA does not contract them into an fma.
_COMPLEX_C = r"""
MT_FN @c@ mt_mk_@s@(@f@ re, @f@ im) { @c@ z; z.re = re; z.im = im; return z; }
MT_FN @c@ mt_conj_@s@(@c@ z) { return mt_mk_@s@(z.re, -z.im); }
MT_FN @c@ mt_neg_@s@(@c@ z) { return mt_mk_@s@(-z.re, -z.im); }
MT_FN @c@ mt_add_@s@(@c@ a, @c@ b) { return mt_mk_@s@(a.re + b.re, a.im + b.im); }
MT_FN @c@ mt_sub_@s@(@c@ a, @c@ b) { return mt_mk_@s@(a.re - b.re, a.im - b.im); }
/* NumPy's vectorised multiply: each part is one fma over one rounded product */
MT_FN @c@ mt_mul_@s@(@c@ a, @c@ b) {
  return mt_mk_@s@(fma@m@(a.re, b.re, -mt_rmul_@r@(a.im, b.im)),
                   fma@m@(a.re, b.im, mt_rmul_@r@(a.im, b.re)));
}
/* NumPy's scalar multiply (integer powers): every product rounded */
MT_FN @c@ mt_mulr_@s@(@c@ a, @c@ b) {
  return mt_mk_@s@(mt_rmul_@r@(a.re, b.re) - mt_rmul_@r@(a.im, b.im),
                   mt_rmul_@r@(a.re, b.im) + mt_rmul_@r@(a.im, b.re));
}
/* Smith's algorithm, as NumPy divides; a zero divisor gives infinities or NaNs */
MT_FN @c@ mt_div_@s@(@c@ a, @c@ b) {
  @f@ abr = fabs@m@(b.re), abi = fabs@m@(b.im), rat, scl;
  if (abr >= abi) {
    if (abr == 0 && abi == 0) return mt_mk_@s@(a.re / abr, a.im / abi);
    rat = b.im / b.re;
    scl = (@f@)1 / (b.re + mt_rmul_@r@(b.im, rat));
    return mt_mk_@s@(mt_rmul_@r@(a.re + mt_rmul_@r@(a.im, rat), scl),
                     mt_rmul_@r@(a.im - mt_rmul_@r@(a.re, rat), scl));
  }
  rat = b.re / b.im;
  scl = (@f@)1 / (b.im + mt_rmul_@r@(b.re, rat));
  return mt_mk_@s@(mt_rmul_@r@(mt_rmul_@r@(a.re, rat) + a.im, scl),
                   mt_rmul_@r@(mt_rmul_@r@(a.im, rat) - a.re, scl));
}
MT_FN @c@ mt_recip_@s@(@c@ z) {
  @f@ r, d;
  if (fabs@m@(z.im) <= fabs@m@(z.re)) {
    r = z.im / z.re;
    d = z.re + mt_rmul_@r@(z.im, r);
    return mt_mk_@s@((@f@)1 / d, -r / d);
  }
  r = z.re / z.im;
  d = mt_rmul_@r@(z.re, r) + z.im;
  return mt_mk_@s@(r / d, (@f@)-1 / d);
}
/* hypot; CUDA's overflows on results within an ulp or so of the largest finite value,
   where the larger part times sqrt(1 + ratio**2) does not */
MT_FN @f@ mt_hypot_@r@(@f@ x, @f@ y) {
  @f@ h = hypot@m@(x, y), big, ratio;
  if (!isinf(h) || !isfinite(x) || !isfinite(y)) return h;
  big = fmax@m@(fabs@m@(x), fabs@m@(y));
  ratio = fmin@m@(fabs@m@(x), fabs@m@(y)) / big;
  return big * sqrt@m@(1 + ratio * ratio);
}
/* NumPy's vectorised absolute value: larger * sqrt(1 + ratio**2), an inf part wins over NaN */
MT_FN @f@ mt_abs_@s@(@c@ z) {
  @f@ re = fabs@m@(z.re), im = fabs@m@(z.im), big, small;
  if (isinf(re) || isinf(im)) return (@f@)MT_INF;
  if (re != re || im != im) return (@f@)MT_NAN;
  big = re > im ? re : im;
  small = re > im ? im : re;
  if (big == 0) return 0;
  small = small / big;
  return sqrt@m@(fma@m@(small, small, (@f@)1)) * big;
}
/* z / |z| with |z| from hypot (NumPy's loop); 0 at 0; an infinite part gives its sign */
MT_FN @c@ mt_sign_@s@(@c@ z) {
  @f@ a = mt_hypot_@r@(z.re, z.im);
  if (a != a) return mt_mk_@s@((@f@)MT_NAN, (@f@)MT_NAN);
  if (isinf(a)) {
    if (isinf(z.re)) {
      if (isinf(z.im)) return mt_mk_@s@((@f@)MT_NAN, (@f@)MT_NAN);
      return mt_mk_@s@(z.re > 0 ? (@f@)1 : (@f@)-1, 0);
    }
    return mt_mk_@s@(0, z.im > 0 ? (@f@)1 : (@f@)-1);
  }
  if (a == 0) return mt_mk_@s@(0, 0);
  return mt_mk_@s@(z.re / a, z.im / a);
}
/* NumPy's lexicographic order: the real parts decide unless equal; a NaN imaginary part
   makes a real-part decision false */
MT_FN bool mt_gt_@s@(@c@ a, @c@ b) {
  return (a.re > b.re && a.im == a.im && b.im == b.im) || (a.re == b.re && a.im > b.im);
}
MT_FN bool mt_ge_@s@(@c@ a, @c@ b) {
  return (a.re > b.re && a.im == a.im && b.im == b.im) || (a.re == b.re && a.im >= b.im);
}
MT_FN bool mt_lt_@s@(@c@ a, @c@ b) {
  return (a.re < b.re && a.im == a.im && b.im == b.im) || (a.re == b.re && a.im < b.im);
}
MT_FN bool mt_le_@s@(@c@ a, @c@ b) {
  return (a.re < b.re && a.im == a.im && b.im == b.im) || (a.re == b.re && a.im <= b.im);
}
/* maximum/minimum keep a NaN first operand, else the first unless the second is larger */
MT_FN @c@ mt_max_@s@(@c@ a, @c@ b) {
  return (a.re != a.re || a.im != a.im || mt_ge_@s@(a, b)) ? a : b;
}
MT_FN @c@ mt_min_@s@(@c@ a, @c@ b) {
  return (a.re != a.re || a.im != a.im || mt_le_@s@(a, b)) ? a : b;
}
/* sin and cos of y, with (y, 1) for |y| below the smallest normal */
MT_FN void mt_sincos_@r@(@f@ y, @f@ *s, @f@ *c) {
  if (fabs@m@(y) > @MIN@) { *s = sin@m@(y); *c = cos@m@(y); } else { *s = y; *c = 1; }
}
MT_FN @c@ mt_exp_@s@(@c@ z) {
  @f@ x = z.re, y = z.im, s, c, e;
  if (isfinite(x)) {
    if (!isfinite(y)) return mt_mk_@s@((@f@)MT_NAN, (@f@)MT_NAN);
    mt_sincos_@r@(y, &s, &c);
    if (x > @T@) {  /* scale in steps of exp(T) so that exp(x) * cos(y) may stay finite */
      e = exp@m@((@f@)@T@);
      x -= @T@; s *= e; c *= e;
      if (x > @T@) { x -= @T@; s *= e; c *= e; }
    }
    if (x > @T@) return mt_mk_@s@(@MAX@ * c, @MAX@ * s);
    e = exp@m@(x);
    return mt_mk_@s@(e * c, e * s);
  }
  if (isinf(x)) {
    if (isfinite(y)) {
      @f@ v = x < 0 ? (@f@)0 : (@f@)MT_INF;
      if (y == 0) return mt_mk_@s@(v, y);
      mt_sincos_@r@(y, &s, &c);
      return mt_mk_@s@(copysign@m@(v, c), copysign@m@(v, s));
    }
    return x > 0 ? mt_mk_@s@((@f@)MT_INF, y - y) : mt_mk_@s@(0, copysign@m@((@f@)0, y));
  }
  return mt_mk_@s@((@f@)MT_NAN, y == 0 ? y : (@f@)MT_NAN);
}
MT_FN @c@ mt_log_@s@(@c@ z) {
  @f@ x = z.re, y = z.im, ax = fabs@m@(x), ay = fabs@m@(y), re, d;
  int scale = 0;
  if (ax == 0 && ay == 0)
    return mt_mk_@s@(-1 / ax, copysign@m@(signbit(x) ? (@f@)MT_PI : (@f@)0, y));
  if (x != x || y != y)
    return mt_mk_@s@((isinf(x) || isinf(y)) ? (@f@)MT_INF : (@f@)MT_NAN, (@f@)MT_NAN);
  if (ax < ay) { d = ax; ax = ay; ay = d; }
  if (ax > @MAX@ / 2) {
    scale = -1;
    ax = scalbn@m@(ax, -1);
    ay = ay >= @MIN@ * 2 ? scalbn@m@(ay, -1) : 0;
  } else if (ax < @MIN@ && ay < @MIN@) {
    scale = @MANT@;
    ax = scalbn@m@(ax, @MANT@);
    ay = scalbn@m@(ay, @MANT@);
  }
  /* near |z| = 1 the real part is log1p of |z|**2 - 1, computed without cancellation */
  if (ax == 1 && scale == 0) {
    re = log1p@m@(ay * ay) / 2;
  } else if (ax > 1 && ax < 2 && ay < 1 && scale == 0) {
    d = (ax - 1) * (ax + 1);
    if (ay >= @EPS@) d += ay * ay;
    re = log1p@m@(d) / 2;
  } else if (ax < 1 && ax >= (@f@)0.5 && ay < @EPS@ / 2 && scale == 0) {
    re = log1p@m@((ax - 1) * (ax + 1)) / 2;
  } else if (ax < 1 && ax >= (@f@)0.5 && scale == 0 && ax * ax + ay * ay >= (@f@)0.5) {
    re = log1p@m@(mt_x2y2m1_@r@(ax, ay)) / 2;
  } else {
    re = log@m@(mt_hypot_@r@(ax, ay)) - scale * (@f@)MT_LN2;
  }
  return mt_mk_@s@(re, atan2@m@(y, x));
}
MT_FN @c@ mt_sqrt_@s@(@c@ z) {
  @f@ x = z.re, y = z.im, d, r, s;
  int scale = 0;
  if (isinf(y)) return mt_mk_@s@((@f@)MT_INF, y);
  if (isinf(x)) {
    if (x < 0) return mt_mk_@s@(y != y ? (@f@)MT_NAN : (@f@)0, copysign@m@((@f@)MT_INF, y));
    return mt_mk_@s@(x, y != y ? (@f@)MT_NAN : copysign@m@((@f@)0, y));
  }
  if (x != x || y != y) return mt_mk_@s@((@f@)MT_NAN, (@f@)MT_NAN);
  if (y == 0) {
    if (x < 0) return mt_mk_@s@(0, copysign@m@(sqrt@m@(-x), y));
    return mt_mk_@s@(fabs@m@(sqrt@m@(x)), copysign@m@((@f@)0, y));
  }
  if (x == 0) {
    r = fabs@m@(y) >= 2 * @MIN@ ? sqrt@m@((@f@)0.5 * fabs@m@(y))
                                : (@f@)0.5 * sqrt@m@(2 * fabs@m@(y));
    return mt_mk_@s@(r, copysign@m@(r, y));
  }
  /* scale by 4 (or by 2**(MANT+1) for tiny parts) so that |z| neither overflows nor
     underflows, and undo it with sqrt's half exponent */
  if (fabs@m@(x) > @MAX@ / 4) {
    scale = 1; x = scalbn@m@(x, -2); y = scalbn@m@(y, -2);
  } else if (fabs@m@(y) > @MAX@ / 4) {
    scale = 1; x = fabs@m@(x) >= 4 * @MIN@ ? scalbn@m@(x, -2) : 0; y = scalbn@m@(y, -2);
  } else if (fabs@m@(x) < 2 * @MIN@ && fabs@m@(y) < 2 * @MIN@) {
    scale = -((@MANT@ + 1) / 2);
    x = scalbn@m@(x, -2 * scale); y = scalbn@m@(y, -2 * scale);
  }
  d = mt_hypot_@r@(x, y);
  /* 2 re(w) im(w) = y gives the smaller part without cancellation in d -+ x */
  if (x > 0) {
    r = sqrt@m@((@f@)0.5 * (d + x));
    if (scale == 1 && fabs@m@(y) < 1) { s = y / r; r = scalbn@m@(r, 1); scale = 0; }
    else s = (@f@)0.5 * (y / r);
  } else {
    s = sqrt@m@((@f@)0.5 * (d - x));
    if (scale == 1 && fabs@m@(y) < 1) { r = fabs@m@(y / s); s = scalbn@m@(s, 1); scale = 0; }
    else r = fabs@m@((@f@)0.5 * (y / s));
  }
  if (scale) { r = scalbn@m@(r, scale); s = scalbn@m@(s, scale); }
  return mt_mk_@s@(r, copysign@m@(s, y));
}
/* cosh(x + iy) = cosh(x) cos(y) + i sinh(x) sin(y) */
MT_FN @c@ mt_cosh_@s@(@c@ z) {
  @f@ x = z.re, y = z.im, s, c, e, rx;
  if (isfinite(x)) {
    if (!isfinite(y)) return mt_mk_@s@(y - y, x == 0 ? (@f@)0 : (@f@)MT_NAN);
    mt_sincos_@r@(y, &s, &c);
    if (fabs@m@(x) > @T@) {  /* exp(|x|) / 2 in steps, as in mt_exp */
      e = exp@m@((@f@)@T@);
      rx = fabs@m@(x) - @T@;
      if (signbit(x)) s = -s;
      s *= e / 2; c *= e / 2;
      if (rx > @T@) { rx -= @T@; s *= e; c *= e; }
      if (rx > @T@) return mt_mk_@s@(@MAX@ * c, @MAX@ * s);
      e = exp@m@(rx);
      return mt_mk_@s@(e * c, e * s);
    }
    return mt_mk_@s@(cosh@m@(x) * c, sinh@m@(x) * s);
  }
  if (isinf(x)) {
    if (isfinite(y) && y != 0) {
      mt_sincos_@r@(y, &s, &c);
      return mt_mk_@s@(copysign@m@((@f@)MT_INF, c),
                       copysign@m@((@f@)MT_INF, s) * copysign@m@((@f@)1, x));
    }
    if (y == 0) return mt_mk_@s@((@f@)MT_INF, y * copysign@m@((@f@)1, x));
    return mt_mk_@s@((@f@)MT_INF, y - y);
  }
  return mt_mk_@s@((@f@)MT_NAN, y == 0 ? y : (@f@)MT_NAN);
}
/* sin(x + iy) = sin(x) cosh(y) + i cos(x) sinh(y) */
MT_FN @c@ mt_sin_@s@(@c@ z) {
  @f@ x = fabs@m@(z.re), y = z.im, s, c, e, ay;
  int negate = signbit(z.re);
  if (isfinite(y)) {
    if (isfinite(x)) {
      mt_sincos_@r@(x, &s, &c);
      if (negate) s = -s;
      if (fabs@m@(y) > @T@) {
        e = exp@m@((@f@)@T@);
        ay = fabs@m@(y) - @T@;
        if (signbit(y)) c = -c;
        s *= e / 2; c *= e / 2;
        if (ay > @T@) { ay -= @T@; s *= e; c *= e; }
        if (ay > @T@) return mt_mk_@s@(@MAX@ * s, @MAX@ * c);
        e = exp@m@(ay);
        return mt_mk_@s@(e * s, e * c);
      }
      return mt_mk_@s@(cosh@m@(y) * s, sinh@m@(y) * c);
    }
    if (y == 0) return mt_mk_@s@(x - x, y);
    return mt_mk_@s@((@f@)MT_NAN, (@f@)MT_NAN);
  }
  if (isinf(y)) {
    if (x == 0) return mt_mk_@s@(negate ? (@f@)-0.0 : (@f@)0, y);
    if (isfinite(x)) {
      mt_sincos_@r@(x, &s, &c);
      s = copysign@m@((@f@)MT_INF, s);
      c = copysign@m@((@f@)MT_INF, c);
      return mt_mk_@s@(negate ? -s : s, signbit(y) ? -c : c);
    }
    return mt_mk_@s@(x - x, (@f@)MT_INF);
  }
  return mt_mk_@s@(x == 0 ? (negate ? (@f@)-0.0 : (@f@)0) : (@f@)MT_NAN, (@f@)MT_NAN);
}
/* cos(z) = cosh(iz) */
MT_FN @c@ mt_cos_@s@(@c@ z) { return mt_cosh_@s@(mt_mk_@s@(-z.im, z.re)); }
/* sinh(z) = -i sin(iz) */
MT_FN @c@ mt_sinh_@s@(@c@ z) {
  @c@ w = mt_sin_@s@(mt_mk_@s@(-z.im, z.re));
  return mt_mk_@s@(w.im, -w.re);
}
/* tanh(x + iy) = (sinh(x) cosh(x) + i sin(y) cos(y)) / (sinh(x)**2 + cos(y)**2) */
MT_FN @c@ mt_tanh_@s@(@c@ z) {
  @f@ x = z.re, y = z.im, s, c, sh, ch, den, im;
  if (!isfinite(x) || !isfinite(y)) {
    if (isinf(x)) {
      if (isfinite(y) && fabs@m@(y) > 1) {
        mt_sincos_@r@(y, &s, &c);
        return mt_mk_@s@(copysign@m@((@f@)1, x), copysign@m@((@f@)0, s * c));
      }
      return mt_mk_@s@(copysign@m@((@f@)1, x), copysign@m@((@f@)0, y));
    }
    if (y == 0) return z;
    return mt_mk_@s@(x == 0 ? x : (@f@)MT_NAN, (@f@)MT_NAN);
  }
  mt_sincos_@r@(y, &s, &c);
  if (fabs@m@(x) > @T@ / 2) {
    /* real part +-1; imaginary 4 sin(y) cos(y) / exp(2|x|), divided in steps */
    @f@ e = exp@m@((@f@)(2 * (@T@ / 2))), ax = fabs@m@(x) - @T@ / 2;
    im = 4 * s * c / e;
    im = ax > @T@ / 2 ? im / e : im / exp@m@(2 * ax);
    return mt_mk_@s@(copysign@m@((@f@)1, x), im);
  }
  if (fabs@m@(x) > @MIN@) { sh = sinh@m@(x); ch = cosh@m@(x); } else { sh = x; ch = 1; }
  den = fabs@m@(sh) > fabs@m@(c) * @EPS@ ? sh * sh + c * c : c * c;
  return mt_mk_@s@(sh * ch / den, s * c / den);
}
/* tan(z) = -i tanh(iz) */
MT_FN @c@ mt_tan_@s@(@c@ z) {
  @c@ w = mt_tanh_@s@(mt_mk_@s@(-z.im, z.re));
  return mt_mk_@s@(w.im, -w.re);
}
/* NumPy's expm1: expm1(x) cos(y) - 2 sin(y/2)**2 + i exp(x) sin(y) */
MT_FN @c@ mt_expm1_@s@(@c@ z) {
  @f@ a = sin@m@(z.im / 2);
  return mt_mk_@s@(mt_rmul_@r@(expm1@m@(z.re), cos@m@(z.im)) - mt_rmul_@r@(2 * a, a),
                   exp@m@(z.re) * sin@m@(z.im));
}
/* NumPy's log1p: log|1 + z| + i arg(1 + z) */
MT_FN @c@ mt_log1p_@s@(@c@ z) {
  return mt_mk_@s@(log@m@(mt_hypot_@r@(z.re + 1, z.im)), atan2@m@(z.im, z.re + 1));
}
/* NumPy's exp2: exp(z ln 2) */
MT_FN @c@ mt_exp2_@s@(@c@ z) {
  return mt_exp_@s@(mt_mk_@s@(z.re * (@f@)MT_LN2, z.im * (@f@)MT_LN2));
}
/* C's complex product with Annex G's recovery of infinities from a NaN result */
MT_FN @c@ mt_cmul_@s@(@c@ x, @c@ w) {
  @f@ a = x.re, b = x.im, c = w.re, d = w.im;
  @f@ ac = mt_rmul_@r@(a, c), bd = mt_rmul_@r@(b, d), ad = mt_rmul_@r@(a, d),
      bc = mt_rmul_@r@(b, c);
  @f@ re = ac - bd, im = ad + bc, one;
  int again = 0;
  if (re == re || im == im) return mt_mk_@s@(re, im);
  if (isinf(a) || isinf(b)) {
    one = isinf(a) ? 1 : 0; a = copysign@m@(one, a);
    one = isinf(b) ? 1 : 0; b = copysign@m@(one, b);
    if (c != c) c = copysign@m@((@f@)0, c);
    if (d != d) d = copysign@m@((@f@)0, d);
    again = 1;
  }
  if (isinf(c) || isinf(d)) {
    one = isinf(c) ? 1 : 0; c = copysign@m@(one, c);
    one = isinf(d) ? 1 : 0; d = copysign@m@(one, d);
    if (a != a) a = copysign@m@((@f@)0, a);
    if (b != b) b = copysign@m@((@f@)0, b);
    again = 1;
  }
  if (!again && (isinf(ac) || isinf(bd) || isinf(ad) || isinf(bc))) {
    if (a != a) a = copysign@m@((@f@)0, a);
    if (b != b) b = copysign@m@((@f@)0, b);
    if (c != c) c = copysign@m@((@f@)0, c);
    if (d != d) d = copysign@m@((@f@)0, d);
    again = 1;
  }
  if (again) {
    re = (@f@)MT_INF * (mt_rmul_@r@(a, c) - mt_rmul_@r@(b, d));
    im = (@f@)MT_INF * (mt_rmul_@r@(a, d) + mt_rmul_@r@(b, c));
  }
  return mt_mk_@s@(re, im);
}
/* NumPy's power: b == 0 gives 1; a == 0 gives 0 for re(b) > 0, else NaN; integer b with
   |b| < 100 by repeated squaring (the reciprocal for b < 0); otherwise exp(b log a) */
MT_FN @c@ mt_pow_@s@(@c@ a, @c@ b) {
  int n;
  if (b.re == 0 && b.im == 0) return mt_mk_@s@(1, 0);
  if (a.re == 0 && a.im == 0)
    return b.re > 0 ? mt_mk_@s@(0, 0) : mt_mk_@s@((@f@)MT_NAN, (@f@)MT_NAN);
  if (b.im == 0 && b.re > -100 && b.re < 100 && (@f@)(n = (int)b.re) == b.re) {
    @c@ acc = mt_mk_@s@(1, 0), p = a;
    int m = n < 0 ? -n : n, mask = 1;
    if (n == 1) return a;
    if (n == 2) return mt_mulr_@s@(a, a);
    if (n == 3) return mt_mulr_@s@(a, mt_mulr_@s@(a, a));
    for (;;) {
      if (m & mask) acc = mt_mulr_@s@(acc, p);
      mask <<= 1;
      if (m < mask) break;
      p = mt_mulr_@s@(p, p);
    }
    return n < 0 ? mt_div_@s@(mt_mk_@s@(1, 0), acc) : acc;
  }
  return mt_exp_@s@(mt_cmul_@s@(b, mt_log_@s@(a)));
}
/* integer_pow as the NumPy kernel: 1 for n == 0, 1 / z**-n for n < 0 */
MT_FN @c@ mt_ipow_@s@(@c@ z, int n) {
  if (n == 0) return mt_mk_@s@(1, 0);
  if (n < 0) return mt_div_@s@(mt_mk_@s@(1, 0), mt_pow_@s@(z, mt_mk_@s@((@f@)-n, 0)));
  return mt_pow_@s@(z, mt_mk_@s@((@f@)n, 0));
}
"""
# x**2 + y**2 - 1 for 0.5 <= x < 1, y <= x (the real part of log near |z| = 1), as glibc
# computes it: exactly in double for float; for double the five exact terms (x**2 and y**2
# split in two, and -1) are summed smallest first, keeping each sum's rounding error
_X2Y2M1_C = r"""
MT_FN float mt_x2y2m1_f32(float x, float y) {
  double dx = x, dy = y;
  return (float)((dx - 1) * (dx + 1) + dy * dy);
}
MT_FN void mt_sort5_abs(double *v, int from) {
  int i, j;
  double t;
  for (i = from + 1; i < 5; i++) {
    for (j = i; j > from && fabs(v[j - 1]) > fabs(v[j]); j--) {
      t = v[j]; v[j] = v[j - 1]; v[j - 1] = t;
    }
  }
}
MT_FN double mt_x2y2m1_f64(double x, double y) {
  double v[5], hi;
  int i;
  v[1] = mt_rmul_f64(x, x); v[0] = fma(x, x, -v[1]);
  v[3] = mt_rmul_f64(y, y); v[2] = fma(y, y, -v[3]);
  v[4] = -1.0;
  mt_sort5_abs(v, 0);
  for (i = 0; i <= 3; i++) {
    hi = v[i + 1] + v[i];
    v[i] = (v[i + 1] - hi) + v[i];
    v[i + 1] = hi;
    mt_sort5_abs(v, i + 1);
  }
  return v[4] + v[3] + v[2] + v[1] + v[0];
}
"""
# dtype: (name suffix, part type, libm suffix, real suffix, MAX, MIN, EPS, MANT, T)
COMPLEX_PARTS = {
    np.dtype(np.complex64): ("c64", "float", "f", "f32", "3.40282346638528859812e+38f",
                             "1.17549435082228750797e-38f", "1.1920928955078125e-07f", "24",
                             "88"),
    np.dtype(np.complex128): ("c128", "double", "", "f64", "1.79769313486231570815e+308",
                              "2.22507385850720138309e-308", "2.220446049250313080847e-16",
                              "53", "709"),
}


def complex_helpers():
    """The C source of the structs and every complex helper, for the expression prelude."""
    out = ["\ntypedef struct { float re, im; } mt_c64;\n"
           "typedef struct { double re, im; } mt_c128;\n", _X2Y2M1_C]
    for sfx, f, m, r, mx, mn, eps, mant, t in COMPLEX_PARTS.values():
        code = _COMPLEX_C
        for key, val in (("@s@", sfx), ("@c@", "mt_" + sfx), ("@f@", f), ("@m@", m),
                         ("@r@", r), ("@MAX@", mx), ("@MIN@", mn), ("@EPS@", eps),
                         ("@MANT@", mant), ("@T@", t)):
            code = code.replace(key, val)
        out.append(code)
    out.append("MT_FN mt_c64 mt_c64_from(unsigned long long u) {\n"
               "  return mt_mk_c64(mt_f32_from((unsigned int)u), "
               "mt_f32_from((unsigned int)(u >> 32)));\n}\n")
    return "".join(out)
