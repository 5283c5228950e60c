"""`mt.lax.linalg` functions without a primitive of their own, written with lax operations
(so they differentiate, batch and compile as those do):

    lu_pivots_to_permutation(i32[..., k], m) -> i32[..., m]
    symmetric_product(f[..., m, n], f[..., m, m]) -> f[..., m, m]    alpha a aᵀ + beta c
"""

import operator

import numpy as np

from mytorch.core import dtypes
from mytorch.core.source_info import user_error
from mytorch.core.trace import aval_of
from mytorch.lax import elementwise as ew
from mytorch.lax import structural as st
from mytorch.lax._utils import asarray, short
from mytorch.lax.dot import dot_general
from mytorch.lax.indexing import take_along_axis
from mytorch.lax.precision import Precision

__all__ = ["lu_pivots_to_permutation", "symmetric_product"]


def lu_pivots_to_permutation(pivots, permutation_size):
    """The row order that LU's row interchanges produce (as `lu`'s third result).

    Args:
      pivots: i32[..., k]: row i was swapped with row pivots[i], for i = 0..k-1 in turn.
      permutation_size: m >= k, the number of rows.

    Returns:
      i32[..., m], the rows of the original matrix in their final order.
    """
    pivots = asarray(pivots)
    m = operator.index(permutation_size)
    if not dtypes.is_int(pivots.dtype) or pivots.ndim < 1:
        raise user_error(TypeError, f"lu_pivots_to_permutation needs integer pivots "
                         f"[..., k], got {short(aval_of(pivots))}")
    k = pivots.shape[-1]
    if k > m:
        raise user_error(ValueError, f"lu_pivots_to_permutation: permutation_size {m} is "
                         f"smaller than the number of pivots {k}")
    shape = pivots.shape[:-1] + (m,)
    last = len(shape) - 1
    rows = st.broadcasted_iota(pivots.dtype, shape, last)
    perm = rows
    for i in range(k):
        # swap entries i and j = pivots[i] of perm
        j = st.slice_in_dim(pivots, i, i + 1, axis=last)
        at_i = st.slice_in_dim(perm, i, i + 1, axis=last)
        at_j = take_along_axis(perm, j, last)
        is_i = ew.eq(rows, np.array(i, pivots.dtype))
        is_j = ew.eq(rows, st.broadcast_in_dim(j, shape, tuple(range(len(shape)))))
        perm = ew.select(is_i, st.broadcast_in_dim(at_j, shape, tuple(range(len(shape)))),
                         ew.select(is_j, st.broadcast_in_dim(at_i, shape,
                                                             tuple(range(len(shape)))), perm))
    return perm


def symmetric_product(a_matrix, c_matrix, *, alpha=1.0, beta=0.0, symmetrize_output=False):
    """alpha a aᵀ + beta c (BLAS's syrk), for a f[..., m, n] and symmetric c f[..., m, m].

    Returns:
      f[..., m, m]: the whole symmetric matrix (its lower triangle is what JAX guarantees;
      here both triangles are always right, so `symmetrize_output` changes nothing).
    """
    del symmetrize_output
    a, c = asarray(a_matrix), asarray(c_matrix)
    if a.ndim < 2 or c.shape != a.shape[:-1] + (a.shape[-2],):
        raise user_error(ValueError, f"symmetric_product needs a [..., m, n] and c [..., m, m], "
                         f"got {short(aval_of(a))} and {short(aval_of(c))}")
    nd = a.ndim
    batch = tuple(range(nd - 2))
    aat = dot_general(a, a, (((nd - 1,), (nd - 1,)), (batch, batch)),
                      precision=Precision.HIGHEST)
    return ew.add(ew.mul(aat, np.array(alpha, a.dtype)), ew.mul(c, np.array(beta, c.dtype)))
