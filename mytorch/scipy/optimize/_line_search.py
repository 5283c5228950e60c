"""A line search satisfying the strong Wolfe conditions (Nocedal & Wright, Algorithms 3.5
and 3.6, as scipy.optimize.line_search and JAX's `line_search`): bracketing steps that
double, then a zoom by cubic, quadratic or bisection interpolation.

Every branch is computed and chosen by `where` (no Python control flow on values), and
each loop is a `lax.while_loop`, so the search runs under jit and vmap.
"""

from typing import NamedTuple

import mytorch.numpy as mnp
from mytorch import lax
from mytorch.autodiff import value_and_grad

__all__ = ["LineSearchResults", "line_search"]


class LineSearchResults(NamedTuple):
    """The outcome of `line_search`.

    failed: True when no step satisfying the strong Wolfe conditions was found.
    nit: bracketing iterations; nfev, ngev: function and gradient evaluations.
    k: iterations + 1; a_k: the step; f_k, g_k: value and gradient at `xk + a_k pk`.
    status: 0 success, 1 zoom failed, 3 maxiter reached.
    """

    failed: object
    nit: object
    nfev: object
    ngev: object
    k: object
    a_k: object
    f_k: object
    g_k: object
    status: object


def _pick(pred, old, new):
    """`new` where `pred` holds, `old` elsewhere, field by field of two dicts."""
    return {key: mnp.where(pred, val, old[key]) for key, val in new.items()}


def _cubicmin(a, fa, fpa, b, fb, c, fc):
    """The minimizer of the cubic through (a, fa), (b, fb), (c, fc) with slope fpa at a
    (NaN or inf when there is none: the caller checks the result lies in the bracket)."""
    db = b - a
    dc = c - a
    denom = (db * dc) ** 2 * (db - dc)
    rhs_b = fb - fa - fpa * db
    rhs_c = fc - fa - fpa * dc
    big_a = (dc ** 2 * rhs_b - db ** 2 * rhs_c) / denom
    big_b = (-dc ** 3 * rhs_b + db ** 3 * rhs_c) / denom
    radical = big_b * big_b - 3 * big_a * fpa
    return a + (-big_b + mnp.sqrt(radical)) / (3 * big_a)


def _quadmin(a, fa, fpa, b, fb):
    """The minimizer of the quadratic through (a, fa), (b, fb) with slope fpa at a."""
    db = b - a
    curv = (fb - fa - fpa * db) / (db * db)
    return a - fpa / (2 * curv)


class _Zoom(NamedTuple):
    done: object
    failed: object
    j: object
    a_lo: object
    phi_lo: object
    dphi_lo: object
    a_hi: object
    phi_hi: object
    dphi_hi: object
    a_rec: object
    phi_rec: object
    a_star: object
    phi_star: object
    dphi_star: object
    g_star: object
    nfev: object
    ngev: object


def _zoom(restricted, wolfe_one, wolfe_two, a_lo, phi_lo, dphi_lo, a_hi, phi_hi, dphi_hi,
          g_0, pass_through):
    """Algorithm 3.6: shrink the bracket [a_lo, a_hi] until a point satisfies both Wolfe
    conditions; does nothing where `pass_through` (the caller did not need this zoom)."""
    delta1, delta2 = 0.2, 0.1
    state = _Zoom(
        done=mnp.asarray(False), failed=mnp.asarray(False), j=mnp.asarray(0),
        a_lo=a_lo, phi_lo=phi_lo, dphi_lo=dphi_lo, a_hi=a_hi, phi_hi=phi_hi,
        dphi_hi=dphi_hi, a_rec=(a_lo + a_hi) / 2, phi_rec=(phi_lo + phi_hi) / 2,
        a_star=mnp.ones_like(a_lo), phi_star=phi_lo, dphi_star=dphi_lo, g_star=g_0,
        nfev=mnp.asarray(0), ngev=mnp.asarray(0))

    def body(s):
        dalpha = s.a_hi - s.a_lo
        lo = mnp.minimum(s.a_hi, s.a_lo)
        hi = mnp.maximum(s.a_hi, s.a_lo)
        cchk = delta1 * dalpha
        qchk = delta2 * dalpha
        # the cubic needs a third point, the previous a_hi or a_lo: not on the first pass
        a_cubic = _cubicmin(s.a_lo, s.phi_lo, s.dphi_lo, s.a_hi, s.phi_hi, s.a_rec, s.phi_rec)
        use_cubic = (s.j > 0) & (a_cubic > lo + cchk) & (a_cubic < hi - cchk)
        a_quad = _quadmin(s.a_lo, s.phi_lo, s.dphi_lo, s.a_hi, s.phi_hi)
        use_quad = ~use_cubic & (a_quad > lo + qchk) & (a_quad < hi - qchk)
        use_bisection = ~use_cubic & ~use_quad
        a_j = mnp.where(use_cubic, a_cubic, s.a_rec)
        a_j = mnp.where(use_quad, a_quad, a_j)
        a_j = mnp.where(use_bisection, (s.a_lo + s.a_hi) / 2, a_j)

        phi_j, dphi_j, g_j = restricted(a_j)
        phi_j = phi_j.astype(s.phi_lo.dtype)
        dphi_j = dphi_j.astype(s.dphi_lo.dtype)
        g_j = g_j.astype(s.g_star.dtype)
        d = s._asdict()
        d.update(nfev=s.nfev + 1, ngev=s.ngev + 1)

        hi_to_j = wolfe_one(a_j, phi_j) | (phi_j >= d["phi_lo"])
        star_to_j = wolfe_two(dphi_j) & ~hi_to_j
        hi_to_lo = (dphi_j * (d["a_hi"] - d["a_lo"]) >= 0) & ~hi_to_j & ~star_to_j
        lo_to_j = ~hi_to_j & ~star_to_j

        d.update(_pick(hi_to_j, d, dict(a_hi=a_j, phi_hi=phi_j, dphi_hi=dphi_j,
                                        a_rec=d["a_hi"], phi_rec=d["phi_hi"])))
        d["done"] = star_to_j | d["done"]
        d.update(_pick(star_to_j, d, dict(a_star=a_j, phi_star=phi_j, dphi_star=dphi_j,
                                          g_star=g_j)))
        d.update(_pick(hi_to_lo, d, dict(a_hi=d["a_lo"], phi_hi=d["phi_lo"],
                                         dphi_hi=d["dphi_lo"], a_rec=d["a_hi"],
                                         phi_rec=d["phi_hi"])))
        d.update(_pick(lo_to_j, d, dict(a_lo=a_j, phi_lo=phi_j, dphi_lo=dphi_j,
                                        a_rec=d["a_lo"], phi_rec=d["phi_lo"])))
        d["j"] = d["j"] + 1
        # a higher cutoff than SciPy's 10: float32 needs more steps to the same point
        d["failed"] = d["failed"] | (d["j"] >= 30)
        return _Zoom(**d)

    return lax.while_loop(lambda s: ~s.done & ~pass_through & ~s.failed, body, state)


class _Search(NamedTuple):
    done: object
    failed: object
    i: object
    a_i1: object
    phi_i1: object
    dphi_i1: object
    nfev: object
    ngev: object
    a_star: object
    phi_star: object
    dphi_star: object
    g_star: object


def line_search(f, xk, pk, old_fval=None, old_old_fval=None, gfk=None, c1=1e-4, c2=0.9,
                maxiter=20):
    """A step `a` along `pk` from `xk` satisfying the strong Wolfe conditions
    `f(xk + a pk) <= f(xk) + c1 a f'(xk) . pk` and `|f'(xk + a pk) . pk| <= c2 |f'(xk) . pk|`.

    Args:
      f: scalar function of an `(n,)` array.
      xk, pk: `(n,)` start and descent direction.
      old_fval, gfk: `f(xk)` and its gradient, if known (saves an evaluation).
      old_old_fval: the value at the previous iterate; sets the first trial step as
        SciPy does (`min(1, 2.02 (f_k - f_{k-1}) / f'.p)`).
      c1, c2: the Wolfe constants; maxiter: bracketing iterations.

    Returns:
      A `LineSearchResults`.
    """
    xk = mnp.asarray(xk)
    pk = mnp.asarray(pk)
    grad_f = value_and_grad(f)

    def restricted(t):
        phi, g = grad_f(xk + t * pk)
        return phi, mnp.dot(g, pk), g

    if old_fval is None or gfk is None:
        phi_0, dphi_0, gfk = restricted(mnp.zeros((), xk.dtype))
        evals = 1
    else:
        phi_0 = mnp.asarray(old_fval)
        dphi_0 = mnp.dot(gfk, pk)
        evals = 0
    if old_old_fval is not None:
        candidate = 1.01 * 2 * (phi_0 - old_old_fval) / dphi_0
        start = mnp.where(candidate > 1, 1.0, candidate).astype(dphi_0.dtype)
    else:
        start = mnp.ones((), dphi_0.dtype)

    def wolfe_one(a_i, phi_i):
        return phi_i > phi_0 + c1 * a_i * dphi_0

    def wolfe_two(dphi_i):
        return mnp.abs(dphi_i) <= -c2 * dphi_0

    zero = mnp.zeros((), dphi_0.dtype)
    state = _Search(
        done=mnp.asarray(False), failed=mnp.asarray(False), i=mnp.asarray(1),
        a_i1=zero, phi_i1=phi_0, dphi_i1=dphi_0, nfev=mnp.asarray(evals),
        ngev=mnp.asarray(evals), a_star=zero, phi_star=phi_0, dphi_star=dphi_0, g_star=gfk)

    def body(s):
        a_i = mnp.where(s.i == 1, start, s.a_i1 * 2)
        phi_i, dphi_i, g_i = restricted(a_i)
        d = s._asdict()

        star_to_zoom1 = wolfe_one(a_i, phi_i) | ((phi_i >= s.phi_i1) & (s.i > 1))
        star_to_i = wolfe_two(dphi_i) & ~star_to_zoom1
        star_to_zoom2 = (dphi_i >= 0) & ~star_to_zoom1 & ~star_to_i

        zoom1 = _zoom(restricted, wolfe_one, wolfe_two, s.a_i1, s.phi_i1, s.dphi_i1,
                      a_i, phi_i, dphi_i, gfk, ~star_to_zoom1)
        zoom2 = _zoom(restricted, wolfe_one, wolfe_two, a_i, phi_i, dphi_i,
                      s.a_i1, s.phi_i1, s.dphi_i1, gfk, ~star_to_zoom2)
        d["nfev"] = s.nfev + 1 + zoom1.nfev + zoom2.nfev
        d["ngev"] = s.ngev + 1 + zoom1.ngev + zoom2.ngev

        keys = ("a_star", "phi_star", "dphi_star", "g_star")
        z1, z2 = zoom1._asdict(), zoom2._asdict()
        d["done"] = star_to_zoom1 | d["done"]
        d["failed"] = (star_to_zoom1 & zoom1.failed) | d["failed"]
        d.update(_pick(star_to_zoom1, d, {k: z1[k] for k in keys}))
        d["done"] = star_to_i | d["done"]
        d.update(_pick(star_to_i, d, dict(a_star=a_i, phi_star=phi_i, dphi_star=dphi_i,
                                          g_star=g_i)))
        d["done"] = star_to_zoom2 | d["done"]
        d["failed"] = (star_to_zoom2 & zoom2.failed) | d["failed"]
        d.update(_pick(star_to_zoom2, d, {k: z2[k] for k in keys}))
        d.update(i=s.i + 1, a_i1=a_i, phi_i1=phi_i, dphi_i1=dphi_i)
        return _Search(**d)

    state = lax.while_loop(lambda s: ~s.done & (s.i <= maxiter) & ~s.failed, body, state)
    status = mnp.where(state.failed, 1, mnp.where(state.i > maxiter, 3, 0))
    alpha = state.a_star
    # below 64 bits a tiny step leaves x unchanged and the search stalls: floor it
    if mnp.finfo(alpha.dtype).bits != 64:
        alpha = mnp.where(mnp.abs(alpha) < 1e-8, mnp.sign(alpha) * 1e-8, alpha)
    return LineSearchResults(
        failed=state.failed | ~state.done, nit=state.i - 1, nfev=state.nfev,
        ngev=state.ngev, k=state.i, a_k=alpha, f_k=state.phi_star, g_k=state.g_star,
        status=status)
