"""NumPy kernels of the threefry-2x32 random-bit primitive (mytorch/lax/prng.py).

Whole-array uint32 arithmetic (NumPy wraps modulo 2**32), twenty rounds unrolled in five
groups of four with a key injection after each group; no Python loop over elements.
"""

import numpy as np

from mytorch.backends.numpy import numpy_backend
from mytorch.lax import prng

_U32 = np.uint32
_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = _U32(0x1BD11BDA)  # Threefish's key-schedule constant


def _rotl(x, d):
    return (x << _U32(d)) | (x >> _U32(32 - d))


@numpy_backend.register(prng.threefry2x32_p)
def _threefry2x32(key1, key2, x1, x2):
    key1, key2, x1, x2 = np.broadcast_arrays(*(np.asarray(a, _U32) for a in (key1, key2, x1,
                                                                             x2)))
    ks = (key1, key2, key1 ^ key2 ^ _PARITY)
    with np.errstate(over="ignore"):
        x0 = x1 + ks[0]
        y0 = x2 + ks[1]
        for group in range(5):
            for r in _ROTATIONS[group % 2]:
                x0 = x0 + y0
                y0 = _rotl(y0, r)
                y0 ^= x0
            x0 = x0 + ks[(group + 1) % 3]
            y0 = y0 + ks[(group + 2) % 3] + _U32(group + 1)
    shape = key1.shape  # 0-d operands give NumPy scalars: make them arrays again
    return [np.asarray(x0, _U32).reshape(shape), np.asarray(y0, _U32).reshape(shape)]
