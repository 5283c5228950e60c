"""mt.random: JAX's explicit, splittable, counter-based keys (threefry-2x32).

Keys and bits are in keys.py; uniform, normal and truncated_normal in uniform.py; the
discrete samplers and the Gumbel trick in discrete.py; one-line transforms of uniform and
normal draws in simple.py; gamma and the distributions built on it in continuous.py.
"""

from mytorch.random.discrete import (  # noqa: F401
    bernoulli,
    categorical,
    choice,
    exponential,
    gumbel,
    permutation,
    randint,
)
from mytorch.random.keys import (  # noqa: F401
    KeyArray,
    PRNGKey,
    bits,
    clone,
    fold_in,
    key,
    key_data,
    key_impl,
    split,
    wrap_key_data,
)
from mytorch.random.simple import (  # noqa: F401
    ball,
    cauchy,
    double_sided_maxwell,
    generalized_normal,
    geometric,
    laplace,
    logistic,
    lognormal,
    maxwell,
    pareto,
    rademacher,
    rayleigh,
    triangular,
    wald,
    weibull_min,
)
from mytorch.random.uniform import normal, truncated_normal, uniform  # noqa: F401

# isort: split
from mytorch.random.continuous import *  # noqa: F401,F403  (gamma, beta, dirichlet, ...)
