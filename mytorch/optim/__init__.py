"""mt.optim: Optax's GradientTransformations by Optax's names and signatures."""
