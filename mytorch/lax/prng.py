"""The threefry-2x32 counter-based random-bit primitive.

    threefry2x32(key1 u32[...], key2 u32[...], x1 u32[n], x2 u32[n]) -> (u32[n], u32[n])

Threefry-2x32 with 20 rounds (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3",
2011) and the rotation constants JAX uses, so the same key and counts give JAX's bits. The
operands broadcast against each other (NumPy rules), so one key pair can hash many counts.
It has no derivative: its operands and results are integers, whose tangents are symbolic
zeros. Its NumPy kernel lives in mytorch/backends/numpy/prng.py.
"""

import numpy as np

from mytorch.core.aval import ShapedArray, describe
from mytorch.core.primitive import Primitive
from mytorch.core.trace import aval_of
from mytorch.lax import structural as st
from mytorch.lax._batching import moveaxis, not_mapped
from mytorch.lax._utils import asarray

__all__ = ["threefry2x32", "threefry2x32_p"]

threefry2x32_p = Primitive("threefry2x32", multiple_results=True, kind="random")


def _broadcast_shapes(shapes):
    """NumPy's broadcast of `shapes`, or None when they do not broadcast."""
    rank = max(len(s) for s in shapes)
    out = []
    for dims in zip(*[(1,) * (rank - len(s)) + tuple(s) for s in shapes], strict=True):
        sizes = {d for d in dims if d != 1}
        if len(sizes) > 1:
            return None
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


@threefry2x32_p.def_abstract_eval
def _threefry2x32_abstract_eval(key1, key2, x1, x2):
    avals = (key1, key2, x1, x2)
    if any(a.dtype != np.uint32 for a in avals):
        raise TypeError(f"threefry2x32 needs uint32 keys and counts, got {describe(avals)}; "
                        "convert them with lax.convert_element_type(x, jnp.uint32)")
    shape = _broadcast_shapes([a.shape for a in avals])
    if shape is None:
        raise ValueError(f"threefry2x32 cannot broadcast the shapes of {describe(avals)}: "
                         "each trailing dim must be equal or 1")
    out = ShapedArray(shape, np.dtype(np.uint32))
    return [out, out]


def threefry2x32(key1, key2, x1, x2):
    """Threefry-2x32 (20 rounds) of the counter pairs `(x1, x2)` under the key `(key1, key2)`.

    Args:
      key1, key2: the two uint32 words of the key (any shapes broadcastable with the counts).
      x1, x2: uint32 counters, broadcastable against each other and the keys.

    Returns:
      A pair of uint32 arrays of the broadcast shape: the two words of each hashed pair.

    Raises:
      TypeError: an operand that is not uint32. ValueError: shapes that do not broadcast.

    >>> import numpy as np
    >>> from mytorch import lax
    >>> u = np.uint32
    >>> [int(w) for w in lax.threefry2x32(u(0), u(0), u(0), u(0))]
    [1797259609, 2579123966]
    """
    return tuple(threefry2x32_p.bind(*(asarray(a) for a in (key1, key2, x1, x2))))


@threefry2x32_p.def_batching
def _threefry2x32_batching(axis, args, dims):
    # the batch dimension goes first; a batched operand of lower rank than the unbatched
    # result gets 1s after it, so NumPy broadcasting lines its dims up from the right
    rank = max(aval_of(x).ndim - (d is not not_mapped) for x, d in zip(args, dims,
                                                                      strict=True))
    new_args = []
    for x, d in zip(args, dims, strict=True):
        if d is not not_mapped:
            x = moveaxis(x, d, 0)
            shape = aval_of(x).shape
            if len(shape) - 1 < rank:
                x = st.reshape(x, (shape[0], *(1,) * (rank + 1 - len(shape)), *shape[1:]))
        new_args.append(x)
    return threefry2x32_p.bind(*new_args), [0, 0]
