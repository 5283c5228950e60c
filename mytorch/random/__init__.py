"""mt.random: JAX's explicit, splittable, counter-based keys (threefry-2x32)."""

from mytorch.random.keys import (  # noqa: F401
    KeyArray, PRNGKey, bits, clone, fold_in, key, key_data, key_impl, split, wrap_key_data,
)
from mytorch.random.uniform import normal, truncated_normal, uniform  # noqa: F401

from mytorch.random.continuous import *  # noqa: F401,F403  (gamma, beta, dirichlet, ...)
