"""GPU eager kernels of sort and top_k (backends/numpy/sorting.py's semantics).

Stable argsorts of the whole array along the axis, then `take_along_axis`: CuPy's argsort
is a stable (radix/merge) sort through CUB/Thrust that orders NaNs last and complex numbers
lexicographically, as NumPy's. CuPy's `lexsort` takes 2-D keys only and no axis, so a
multi-key sort (and top_k's NaN-first descending order) is a least-significant-key-first
sequence of stable argsorts, which gives `np.lexsort`'s permutation exactly. bfloat16 keys
are compared as float32 (exact).
"""

import numpy as np

from mytorch.backends.cupy.kernels import register, xp_of
from mytorch.backends.cupy.kernels_common import BF16, F32, stable_argsort
from mytorch.lax import sorting as s


def _key(x):
    return x.astype(F32) if x.dtype == BF16 else x


def lexsort(xp, keys, axis):
    """The stable permutation along `axis` sorting by `keys[0]`, then `keys[1]`, ... (the
    primary key first, unlike np.lexsort)."""
    perm = stable_argsort(xp, keys[-1], axis)
    for key in reversed(keys[:-1]):
        inner = stable_argsort(xp, xp.take_along_axis(key, perm, axis=axis), axis)
        perm = xp.take_along_axis(perm, inner, axis=axis)
    return perm


@register(s.sort_p)
def _sort(*operands, dimension, is_stable, num_keys):
    xp = xp_of(*operands)
    keys = [_key(k) for k in operands[:num_keys]]
    perm = lexsort(xp, keys, dimension)
    return [xp.take_along_axis(x, perm, axis=dimension) for x in operands]


def _descending_order(xp, x):
    """Indices that sort the last axis in descending order, NaN first, stable on ties."""
    key = _key(x)
    if key.dtype.kind == "f":
        nan = xp.isnan(key)
        # primary key: not-NaN (NaNs first); secondary: -x ascending, i.e. x descending
        return lexsort(xp, [(~nan).astype(np.int8), xp.where(nan, 0, -key)], -1)
    # ~x reverses the order of bools and of (un)signed integers without overflow
    return stable_argsort(xp, ~key, -1)


@register(s.top_k_p)
def _top_k(x, *, k):
    xp = xp_of(x)
    with np.errstate(all="ignore"):
        idx = _descending_order(xp, x)[..., :k]
    return [xp.take_along_axis(x, idx, axis=-1), idx.astype(np.int32)]
