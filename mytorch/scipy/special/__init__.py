"""Special functions (`jax.scipy.special`'s counterpart): logsumexp, softmax, the logistic
pair, the error function family, the entropy terms, the Bessel functions i0 and i1 (and
their scaled forms), the gamma family (gamma, its sign and log, beta, factorial, poch,
polygamma and Hurwitz's zeta), the regularized incomplete gamma and beta functions, the
exponential integrals (expn, exp1, expi), Spence's function, the Bernoulli numbers,
Kummer's hypergeometric function hyp1f1, the associated Legendre functions and spherical
harmonics, and the normal distribution's CDF, its log and its inverse.

Every function promotes its inputs to a float dtype (integers to the default float), works
elementwise with NumPy broadcasting, and traces. float16/bfloat16 compute in float32 where
precision needs it and return their own dtype.

Values and derivatives are right over the whole domain, tails, poles and endpoints
included: where plain differentiation would pass through an unsafe branch of a select
(log_ndtr's and ndtri's tails, logit's and entr's endpoints, xlogy at x = 0) the function
carries a closed-form `custom_jvp` rule, itself safe to differentiate again.

    logsumexp(f32[3,4], axis=1) -> f32[3]     ndtri(f32[5]) -> f32[5]
"""

from mytorch.scipy.special._bernoulli import bernoulli
from mytorch.scipy.special._bessel import i0, i0e, i1, i1e
from mytorch.scipy.special._elementary import (
    entr,
    erf,
    erfc,
    erfinv,
    expit,
    kl_div,
    logit,
    rel_entr,
    xlog1py,
    xlogy,
)
from mytorch.scipy.special._expint import exp1, expi, expn
from mytorch.scipy.special._gamma import betaln, digamma, gammaln, multigammaln
from mytorch.scipy.special._gamma_function import beta, factorial, gamma, gammasgn, poch
from mytorch.scipy.special._hyp1f1 import hyp1f1
from mytorch.scipy.special._incomplete import betainc, gammainc, gammaincc
from mytorch.scipy.special._legendre import lpmn, lpmn_values, sph_harm
from mytorch.scipy.special._logsumexp import log_softmax, logsumexp, softmax
from mytorch.scipy.special._normal import log_ndtr, ndtr, ndtri
from mytorch.scipy.special._spence import spence
from mytorch.scipy.special._zeta import polygamma, zeta

__all__ = [
    "bernoulli",
    "beta",
    "betainc",
    "betaln",
    "digamma",
    "entr",
    "erf",
    "erfc",
    "erfinv",
    "exp1",
    "expi",
    "expit",
    "expn",
    "factorial",
    "gamma",
    "gammainc",
    "gammaincc",
    "gammaln",
    "gammasgn",
    "hyp1f1",
    "i0",
    "i0e",
    "i1",
    "i1e",
    "kl_div",
    "log_ndtr",
    "log_softmax",
    "logit",
    "logsumexp",
    "lpmn",
    "lpmn_values",
    "multigammaln",
    "ndtr",
    "ndtri",
    "poch",
    "polygamma",
    "rel_entr",
    "softmax",
    "spence",
    "sph_harm",
    "xlog1py",
    "xlogy",
    "zeta",
]
