"""d sample / d a of a Gamma(a) draw (implicit reparameterisation): the series and continued
fraction of dx/da at fixed P(a, x) live with the incomplete gamma function
(`mytorch/scipy/special/_gamma_da.py`); this module runs them compiled over a draw."""

import mytorch.numpy as mnp
from mytorch.jit import jit
from mytorch.random._common import quiet_call
from mytorch.scipy.special._gamma_da import gamma_sample_da
from mytorch.vectorize import vmap

__all__ = ["sample_derivative"]


def sample_derivative(a, x):
    """d x / d a for Gamma(a) draws `x` (same shape as `a`): 0 at x == 0, NaN for a <= 0."""
    if a.size == 0:
        return mnp.zeros(a.shape, a.dtype)
    return quiet_call(_compiled, a, mnp.asarray(x).astype(a.dtype))


@jit
def _compiled(a, x):
    # compiled once per shape and dtype: eager calls skip re-tracing the series loop
    flat = vmap(gamma_sample_da)(mnp.reshape(a, (-1,)), mnp.reshape(x, (-1,)))
    return mnp.reshape(flat, a.shape)
