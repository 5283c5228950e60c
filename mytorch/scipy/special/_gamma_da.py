"""dx/da at fixed P(a, x) = gammainc(a, x), from lax ops: the derivative of a Gamma(a) draw
(implicit reparameterisation, `mytorch/random/_gamma_grad.py`) and, times -dP/dx, the
a-derivative of `gammainc`/`gammaincc` (`_incomplete.py`).

A draw x = F^-1(u; a) with the CDF F = P(a, x) (the regularised lower incomplete gamma)
moves with a as  dx/da = -(dP/da) / (dP/dx),  dP/dx = x^(a-1) e^-x / Gamma(a).

With the series P(a, x) = sum_k x^(a+k) e^-x / Gamma(a+k+1), the ratio needs no Gamma
function at all: writing R_k = x^(k+1) / (a (a+1) ... (a+k)),

    dx/da = -sum_k R_k (log x - digamma(a+k+1)),

with R_k and digamma(a+k+1) both by recurrence (R_k = R_(k-1) x/(a+k), psi += 1/(a+k)).
The terms peak near k = x - a and decay geometrically after it, so the loop runs until k
is past x - a and the terms are below working precision (about x - a + 10 sqrt(x) + 20
steps). A draw is within a few sqrt(a) of a, so the sum's cancellation is mild.

Where x > 1 and x > a (JAX's split), where the series cancels and runs long, the derivative
comes instead from Legendre's continued fraction C of Q = 1 - P (no Gamma function either):
dx/da = x ((log x - digamma(a)) C + dC/da), dC/da carried along the Lentz recurrence.
"""

import numpy as np

import mytorch.numpy as mnp
from mytorch import lax

__all__ = ["gamma_sample_da"]


def _kahan_add(acc, x):
    # compensated running sum (value, lost low-order part): the recurrences run for about
    # x - a steps, and plain float32 accumulation would drift by steps * eps
    total, comp = acc
    y = x - comp
    t = total + y
    return t, (t - total) - y


def _series(a, x):
    """dx/da from the series of P (any x > 0; short for x below about a)."""
    dtype = a.dtype
    eps = np.array(np.finfo(dtype).eps, dtype)
    max_steps = np.array(2**24, dtype)
    safe_x = mnp.where(x > 0, x, 1)
    log_x = mnp.log(safe_x)
    log_r0 = log_x - mnp.log(a)  # R_0 = x / a
    psi0 = lax.digamma(a + 1)

    def more(state):
        k, log_r, psi, _, mass = state
        term = mnp.exp(log_r[0]) * (mnp.abs(log_x - psi[0]) + eps)
        before_peak = a + k <= safe_x
        return (k < max_steps) & (before_peak | (term > eps * mass))

    def step(state):
        k, log_r, psi, total, mass = state
        term = mnp.exp(log_r[0]) * (log_x - psi[0])
        k1 = k + 1
        return (
            k1,
            _kahan_add(log_r, log_x - mnp.log(a + k1)),
            _kahan_add(psi, 1 / (a + k1)),
            _kahan_add(total, term),
            mass + mnp.abs(term),
        )

    zero = mnp.zeros((), dtype)
    init = (zero, (log_r0, zero), (psi0, zero), (zero, zero), zero)
    total = lax.while_loop(more, step, init)[3][0]
    return -total


def _fraction(a, x):
    """dx/da from Legendre's continued fraction C(a, x) for the upper incomplete gamma,
    Q(a, x) = x^a e^-x C / Gamma(a) (x > 1 and x > a, where it converges fast): with
    dP/dx = x^(a-1) e^-x / Gamma(a),  dx/da = x ((log x - digamma(a)) C + dC/da).

    C by the modified Lentz method, carrying each quantity's derivative in a (the `_da`
    names) so the loop stops only when both C and dC/da have converged (at integer a the
    fraction ends after a terms, while its derivative does not)."""
    dtype = a.dtype
    eps = np.array(np.finfo(dtype).eps, dtype)
    tiny = np.array(np.finfo(dtype).tiny, dtype) * 16

    def guard(v, v_da):
        small = mnp.abs(v) < tiny
        return mnp.where(small, tiny, v), mnp.where(small, 0, v_da)

    def more(state):
        i, _, _, _, h, delta = state
        converged = (mnp.abs(delta[0] - 1) <= eps) & (
            mnp.abs(delta[1] * h[0]) <= eps * mnp.abs(h[1]) + tiny
        )
        return (i < 2000) & ~converged

    def step(state):
        i, b, c, d, h, _ = state
        i1 = i + 1
        an, an_da = -i1 * (i1 - a), i1
        b = (b[0] + 2, b[1])
        dr, dr_da = guard(an * d[0] + b[0], an_da * d[0] + an * d[1] + b[1])
        d = (1 / dr, -dr_da / (dr * dr))
        cr = b[0] + an / c[0]
        cr_da = b[1] + (an_da * c[0] - an * c[1]) / (c[0] * c[0])
        c = guard(cr, cr_da)
        delta = (c[0] * d[0], c[1] * d[0] + c[0] * d[1])
        h = (h[0] * delta[0], h[1] * delta[0] + h[0] * delta[1])
        return i1, b, c, d, h, delta

    zero, one = mnp.zeros((), dtype), mnp.ones((), dtype)
    b0 = guard(x + 1 - a, -one)
    d0 = (1 / b0[0], -b0[1] / (b0[0] * b0[0]))
    init = (zero, b0, (mnp.full((), 1 / tiny, dtype), zero), d0, d0, (zero, zero))
    _, _, _, _, (c, c_da), _ = lax.while_loop(more, step, init)
    return x * ((mnp.log(x) - lax.digamma(a)) * c + c_da)


def gamma_sample_da(a, x):
    """dx/da at fixed P(a, x) for scalars a, x (vmap it over arrays): 0 at x == 0, NaN
    for x < 0, a <= 0 or NaN inputs."""
    # JAX's split: the continued fraction where x > 1 and x > a, the series elsewhere; each
    # branch gets a harmless stand-in input where the other one is used
    use_fraction = (x > 1) & (x > a)
    one = mnp.ones((), a.dtype)
    series = _series(mnp.where(use_fraction, one, a), mnp.where(use_fraction, one / 2, x))
    fraction = _fraction(mnp.where(use_fraction, a, one), mnp.where(use_fraction, x, 2 * one))
    out = mnp.where(use_fraction, fraction, series)
    out = mnp.where(x == 0, 0, out)
    bad = (x < 0) | (a <= 0) | mnp.isnan(a) | mnp.isnan(x)
    return mnp.where(bad, np.nan, out).astype(a.dtype)
