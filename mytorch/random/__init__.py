"""mt.random: JAX's explicit, splittable, counter-based keys (threefry-2x32)."""

from mytorch.random.continuous import *  # noqa: F401,F403  (gamma, beta, dirichlet, ...)
