"""NumPy kernels of sort and top_k: one stable argsort/lexsort over the whole array, then
`np.take_along_axis` (no Python loop over rows)."""

import ml_dtypes
import numpy as np

from mytorch.backends.numpy import numpy_backend
from mytorch.lax import sorting as s

_BF16 = np.dtype(ml_dtypes.bfloat16)


def _key(x):
    """A key NumPy sorts in its own order (bfloat16 widens exactly to float32)."""
    return x.astype(np.float32) if x.dtype == _BF16 else x


@numpy_backend.register(s.sort_p)
def _sort(*operands, dimension, is_stable, num_keys):
    keys = [_key(k) for k in operands[:num_keys]]
    if num_keys == 1:
        perm = np.argsort(keys[0], axis=dimension, kind="stable")
    else:
        perm = np.lexsort(keys[::-1], axis=dimension)  # lexsort's primary key comes last
    return [np.take_along_axis(x, perm, axis=dimension) for x in operands]


def _descending_order(x):
    """Indices that sort the last axis in descending order, NaN first, stable on ties."""
    key = _key(x)
    if key.dtype.kind == "f":
        nan = np.isnan(key)
        # primary key: not-NaN (NaNs first); secondary: -x ascending, i.e. x descending
        return np.lexsort((np.where(nan, 0, -key), ~nan), axis=-1)
    # ~x reverses the order of bools and of (un)signed integers without overflow
    return np.argsort(~key, axis=-1, kind="stable")


@numpy_backend.register(s.top_k_p)
def _top_k(x, *, k):
    with np.errstate(all="ignore"):
        idx = _descending_order(x)[..., :k]
    return [np.take_along_axis(x, idx, axis=-1), idx.astype(np.int32)]
