"""`mytorch.dlpack`: DLPack exchange, as `jax.dlpack`.

Arrays export themselves (`np.from_dlpack(x)`, `torch.from_dlpack(x)` read an Array without
a copy); `from_dlpack` reads any host object with `__dlpack__` into an Array.
"""

from mytorch.numpy.creation import from_dlpack

__all__ = ["from_dlpack"]
