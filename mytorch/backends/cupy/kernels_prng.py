"""GPU eager kernel of the threefry-2x32 random-bit primitive (mytorch/lax/prng.py).

The same 20 rounds as backends/numpy/prng.py on whole uint32 arrays: CuPy's uint32
arithmetic wraps modulo 2**32 and its shifts are logical, as NumPy's, so the bits are the
NumPy kernel's (`mt.random` gives the same numbers on a GPU). The NumPy kernel's scalar
shortcut for tiny inputs (Python ints) is not taken: its results are the same bits, and on a
GPU it would cost a copy to the host.
"""

import math

import numpy as np

from mytorch.backends.cupy.kernels import register, xp_of
from mytorch.lax import prng

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = 0x1BD11BDA  # Threefish's key-schedule constant
_U32 = np.dtype(np.uint32)


@register(prng.threefry2x32_p)
def _threefry2x32(key1, key2, x1, x2):
    xp = xp_of(key1, key2, x1, x2)
    u32 = xp.uint32
    key1, key2, x1, x2 = (xp.asarray(a, dtype=_U32) for a in (key1, key2, x1, x2))
    shape = np.broadcast_shapes(key1.shape, key2.shape, x1.shape, x2.shape)
    ks = (key1, key2, key1 ^ key2 ^ u32(_PARITY))
    x = xp.empty(shape, _U32)
    y = xp.empty(shape, _U32)
    if math.prod(shape) == 0:
        return [x, y]
    scratch = xp.empty(shape, _U32)
    xp.add(x1, ks[0], out=x)
    xp.add(x2, ks[1], out=y)
    for group in range(5):
        for r in _ROTATIONS[group % 2]:
            x += y
            xp.left_shift(y, u32(r), out=scratch)  # y = rotl(y, r) ^ x
            y >>= u32(32 - r)
            y |= scratch
            y ^= x
        x += ks[(group + 1) % 3]
        y += ks[(group + 2) % 3]
        y += u32(group + 1)
    return [x, y]
