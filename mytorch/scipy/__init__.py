"""`mytorch.scipy`: SciPy-style functions over mytorch arrays (JAX's `jax.scipy`).

    from mytorch.scipy import special
    special.logsumexp(x, axis=-1)
"""

from mytorch.scipy import special

__all__ = ["special"]
