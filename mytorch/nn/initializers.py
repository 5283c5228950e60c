"""mt.nn.initializers: the jax.nn.initializers by the same names."""
