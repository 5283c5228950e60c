"""d sample / d a of a Gamma(a) draw (implicit reparameterisation), from lax ops.

A draw x = F^-1(u; a) with the CDF F = P(a, x) (the regularised lower incomplete gamma)
moves with a as  dx/da = -(dP/da) / (dP/dx),  dP/dx = x^(a-1) e^-x / Gamma(a).

With the series P(a, x) = sum_k x^(a+k) e^-x / Gamma(a+k+1), the ratio needs no Gamma
function at all: writing R_k = x^(k+1) / (a (a+1) ... (a+k)),

    dx/da = -sum_k R_k (log x - digamma(a+k+1)),

with R_k and digamma(a+k+1) both by recurrence (R_k = R_(k-1) x/(a+k), psi += 1/(a+k)).
The terms peak near k = x - a and decay geometrically after it, so the loop runs until k
is past x - a and the terms are below working precision (about x - a + 10 sqrt(x) + 20
steps). A draw is within a few sqrt(a) of a, so the sum's cancellation is mild.
"""

import numpy as np

import mytorch.numpy as mnp
from mytorch import lax
from mytorch.jit import jit
from mytorch.random._common import quiet_call
from mytorch.vectorize import vmap

__all__ = ["sample_derivative"]


def _kahan_add(acc, x):
    # compensated running sum (value, lost low-order part): the recurrences run for about
    # x - a steps, and plain float32 accumulation would drift by steps * eps
    total, comp = acc
    y = x - comp
    t = total + y
    return t, (t - total) - y


def _one(a, x):
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
    out = -total
    out = mnp.where(x == 0, 0, out)
    bad = (x < 0) | (a <= 0) | mnp.isnan(a) | mnp.isnan(x)
    return mnp.where(bad, np.nan, out).astype(dtype)


def sample_derivative(a, x):
    """d x / d a for Gamma(a) draws `x` (same shape as `a`): 0 at x == 0, NaN for a <= 0."""
    if a.size == 0:
        return mnp.zeros(a.shape, a.dtype)
    return quiet_call(_compiled, a, mnp.asarray(x).astype(a.dtype))


@jit
def _compiled(a, x):
    # compiled once per shape and dtype: eager calls skip re-tracing the series loop
    flat = vmap(_one)(mnp.reshape(a, (-1,)), mnp.reshape(x, (-1,)))
    return mnp.reshape(flat, a.shape)
