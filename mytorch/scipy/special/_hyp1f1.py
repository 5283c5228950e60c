"""Kummer's confluent hypergeometric function `1F1(a; b; x) = M(a, b, x)`.

    M(a, b, x) = sum_k (a)_k / (b)_k x^k / k!

Negative x goes through Kummer's transformation `M(a, b, x) = e^x M(b - a, b, -x)`, so
that (for a, b > 0) every term of the series is positive and nothing cancels; then the
series runs for the whole array in one `lax.while_loop`, or, where x >= 100 is also large
against a and b, the asymptotic expansion (Pearson, Olver and Porter 2014, eq. 3.8, which
JAX uses)

    M(a, b, x) ~ Gamma(b) / Gamma(a) e^x x^(a-b) sum_k (b-a)_k (1-a)_k / (k! x^k)

(the other exponentially small part is below rounding there). A polynomial (a a
non-positive integer) is summed directly.

Derivatives are a `custom_jvp` rule: in x the closed form `a/b M(a+1, b+1, x)` (which
differentiates again); in a and b the forward-mode derivative of the sum as computed
(series or expansion, whose terms converge with the value's).
"""

import numpy as np

import mytorch.numpy as mnp
from mytorch import lax
from mytorch.custom_derivatives import custom_jvp
from mytorch.scipy.special._args import real_args
from mytorch.scipy.special._gamma_function import _gammasgn, _nonpos_int
from mytorch.scipy.special._util import _cast, _up
from mytorch.autodiff import jvp

_MAX_STEPS = 20000  # the series of M(a, b, x) needs about x + sqrt terms; all stop early
_ASYMPTOTIC_FROM = 100.0


def _eps(x):
    return np.array(np.finfo(x.dtype).eps, x.dtype)


def _series(a, b, x):
    """sum_k (a)_k / (b)_k x^k / k!, until the terms are below rounding for good: past the
    indices where a + k or b + k change sign and past k = |x|, from where a ratio of
    consecutive terms below 1 stays below 1 (a tiny early term, as for a ~ 1e-25, may be
    followed by growing ones)."""
    eps = _eps(x)

    def more(state):
        return (state[0] < _MAX_STEPS) & ~mnp.all(state[-1])

    def step(state):
        k, term, total, done = state
        total = mnp.where(done, total, total + term)
        ratio = (a + k) / (b + k) * x / (k + 1)
        term = term * ratio
        settled = (k > -a) & (k > -b) & (k + 1 >= mnp.abs(x)) & (mnp.abs(ratio) < 1)
        small = mnp.abs(term) <= eps * mnp.abs(total)
        return k + 1, term, total, done | (term == 0) | (small & settled)

    init = (mnp.zeros((), x.dtype), mnp.ones_like(x), mnp.zeros_like(x),
            mnp.zeros(x.shape, bool))
    return lax.while_loop(more, step, init)[2]


def _asymptotic(a, b, x, log_factor):
    """M(a, b, x) e^log_factor for large x > 0 by the expansion in 1/x, summed while its
    terms fall (the factor joins the exponent, so that Kummer's e^x and the expansion's
    e^-x cancel without overflowing)."""
    eps = _eps(x)

    def more(state):
        return (state[0] < _MAX_STEPS) & ~mnp.all(state[-1])

    def step(state):
        k, term, total, done = state
        total = mnp.where(done, total, total + term)
        nxt = term * (b - a + k) * (1 - a + k) / ((k + 1) * x)
        small = mnp.abs(nxt) <= eps * mnp.abs(total)
        # an asymptotic series: stop too where the terms start growing
        return k + 1, nxt, total, done | small | (mnp.abs(nxt) >= mnp.abs(term))

    init = (mnp.zeros((), x.dtype), mnp.ones_like(x), mnp.zeros_like(x),
            mnp.zeros(x.shape, bool))
    total = lax.while_loop(more, step, init)[2]
    log_scale = lax.lgamma(b) - lax.lgamma(a) + x + (a - b) * mnp.log(x) + log_factor
    return _gammasgn(a) * _gammasgn(b) * mnp.exp(log_scale) * total


def _hyp1f1_value(a, b, x):
    poly = _nonpos_int(a)
    b_pole = _nonpos_int(b)
    # a polynomial ends before b + k reaches 0 exactly when a > b
    finite = ~b_pole | (poly & (a > b))
    kummer = (x < 0) & ~poly
    ka = mnp.where(kummer, b - a, a)
    kx = mnp.where(kummer, -x, x)
    asymptotic = ((kx >= _ASYMPTOTIC_FROM) & ~_nonpos_int(ka) & ~b_pole
                  & (4 * (mnp.abs(b - ka) + 1) * (mnp.abs(1 - ka) + 1) <= kx))
    use_series = finite & ~asymptotic
    one = mnp.ones_like(x)
    # each method sees stand-in inputs where the other one is used
    value_series = _series(mnp.where(use_series, ka, one), mnp.where(use_series, b, one),
                           mnp.where(use_series, kx, one))
    kummer_log = mnp.where(kummer, x, 0.0)  # log of Kummer's factor e^x
    value_asym = _asymptotic(mnp.where(asymptotic, ka, one), mnp.where(asymptotic, b, one),
                             mnp.where(asymptotic, kx, 2 * _ASYMPTOTIC_FROM),
                             mnp.where(asymptotic, kummer_log, 0.0))
    value_series = mnp.exp(kummer_log) * value_series
    value = mnp.where(asymptotic, value_asym, value_series)
    out = mnp.where(finite, value, np.inf)
    out = mnp.where(a == b, mnp.exp(x), out)
    out = mnp.where(a == 0, 1.0, out)
    # x -> -inf: M ~ Gamma(b) / Gamma(b - a) (-x)^-a -> 0 for a > 0
    out = mnp.where(mnp.isneginf(x) & (a > 0) & ~b_pole, 0.0, out)
    bad = (mnp.isnan(a) | mnp.isnan(b) | mnp.isnan(x) | mnp.isposinf(x)
           | (mnp.isneginf(x) & ((a <= 0) | b_pole)))
    return mnp.where(bad, np.nan, out)


@custom_jvp
def _hyp1f1(a, b, x):
    return _hyp1f1_value(a, b, x)


@_hyp1f1.defjvp
def _hyp1f1_jvp(primals, tangents):
    (a, b, x), (t_a, t_b, t_x) = primals, tangents
    zero, one = mnp.zeros_like(x), mnp.ones_like(x)
    # d/dx M(a, b, x) = a/b M(a + 1, b + 1, x); at b = 0 M itself is infinite
    safe_b = mnp.where(b == 0, 1.0, b)
    d_x = mnp.where(b == 0, np.nan, a / safe_b * _hyp1f1(a + 1, b + 1, x))
    d_a = jvp(_hyp1f1_value, (a, b, x), (one, zero, zero))[1]
    d_b = jvp(_hyp1f1_value, (a, b, x), (zero, one, zero))[1]
    return _hyp1f1(a, b, x), t_x * d_x + t_a * d_a + t_b * d_b


def hyp1f1(a, b, x, /):
    """Kummer's confluent hypergeometric function
    `1F1(a; b; x) = sum_k (a)_k / (b)_k x^k / k!`, elementwise with broadcasting.

    Args:
      a, b, x: array-likes of reals (ints give the default float).

    Returns:
      An array of the broadcast shape: 1 at a = 0, e^x at a = b, +inf where b is a
      non-positive integer (unless a is a larger non-positive integer, a polynomial), 0
      at x = -inf for a > 0, NaN at other infinite x and NaN inputs. Where a > b and x is
      far below 0 the series cancels (relative error up to about 1e-6 in float64 for
      a, b <= 20, x >= -50). Differentiable in x (`a/b hyp1f1(a+1, b+1, x)`, to any
      order) and in a and b (first order in reverse mode).

    >>> hyp1f1(np.float32(1.0), np.float32(2.0), np.float32(1.0))  # e - 1
    Array(1.7182819, dtype=float32)
    """
    av, bv, xv = real_args("hyp1f1", a, b, x)
    return _cast(_hyp1f1(_up(av), _up(bv), _up(xv)), xv.dtype, xv.weak_type)
