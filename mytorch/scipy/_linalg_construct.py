"""`mt.scipy.linalg`'s structured matrices: Toeplitz, Hankel and Hilbert.

    toeplitz(f32[B,m], f32[B,n]) -> f32[B,m,n]     hankel(f32[m], f32[n]) -> f32[m,n]
    hilbert(n) -> f32[n,n]

Each entry is gathered from the defining vectors by a static index table, so derivatives
(a gather's transpose scatters back), vmap and jit follow from `mnp.take`.
"""

import numpy as np

from mytorch import numpy as mnp
from mytorch.core import dtypes
from mytorch.core.source_info import user_error
from mytorch.numpy._promote import broadcast_shapes

__all__ = ["toeplitz", "hankel", "hilbert"]


def _vectors(name, c, r):
    """c [..., m] and r [..., n] (0-d counts as length 1) of one dtype, batch broadcast."""
    c, r = mnp.atleast_1d(mnp.asarray(c)), mnp.atleast_1d(mnp.asarray(r))
    dtype = mnp.result_type(c, r)
    c, r = c.astype(dtype), r.astype(dtype)
    batch = broadcast_shapes(name, c.shape[:-1], r.shape[:-1])
    return (mnp.broadcast_to(c, batch + c.shape[-1:]),
            mnp.broadcast_to(r, batch + r.shape[-1:]))


def toeplitz(c, r=None):
    """The Toeplitz matrix [..., m, n] with first column `c` [..., m] and first row `r`
    [..., n]: A[i, j] = c[i - j] for i >= j, r[j - i] for i < j (r[0] is ignored). Without
    `r` it is conj(c), so a complex `c` with a real c[0] gives a Hermitian matrix, as SciPy
    and JAX. Leading dimensions of c and r broadcast to a batch of matrices."""
    c = mnp.asarray(c)
    if r is None:
        r = mnp.conj(c) if dtypes.is_complex(c.dtype) else c
    c, r = _vectors("toeplitz", c, r)
    m, n = c.shape[-1], r.shape[-1]
    # elems = c reversed, then r[1:]: A[i, j] = elems[m - 1 - i + j]
    elems = mnp.concatenate([mnp.flip(c, axis=-1), r[..., 1:]], axis=-1)
    index = m - 1 - np.arange(m)[:, None] + np.arange(n)[None, :]
    return mnp.take(elems, mnp.asarray(index.astype(np.int32)), axis=-1)


def hankel(c, r=None):
    """The Hankel matrix [..., m, n] with first column `c` [..., m] and last row `r`
    [..., n]: A[i, j] = v[i + j] with v = concatenate(c, r[1:]) (r[0] is ignored); `r`
    defaults to zeros. Leading dimensions of c and r broadcast to a batch of matrices."""
    c = mnp.asarray(c)
    if r is None:
        r = mnp.zeros_like(c)
    c, r = _vectors("hankel", c, r)
    m, n = c.shape[-1], r.shape[-1]
    elems = mnp.concatenate([c, r[..., 1:]], axis=-1)
    index = np.arange(m)[:, None] + np.arange(n)[None, :]
    return mnp.take(elems, mnp.asarray(index.astype(np.int32)), axis=-1)


def hilbert(n):
    """The Hilbert matrix [n, n] of the default float dtype: H[i, j] = 1 / (i + j + 1)."""
    if not isinstance(n, (int, np.integer)) or n < 0:
        raise user_error(ValueError, f"hilbert: n must be a non-negative int, got {n!r}")
    i = mnp.arange(n, dtype=dtypes.default_float())
    return 1 / (i[:, None] + i[None, :] + 1)
