"""`mytorch.scipy`: SciPy-style functions over mytorch arrays (JAX's `jax.scipy`).

    from mytorch.scipy import special
    special.logsumexp(x, axis=-1)
"""

from mytorch.scipy import special  # noqa: F401

__all__ = ["special"]
