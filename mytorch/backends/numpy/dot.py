"""NumPy kernel of dot_general, and the batched matrix product shared with convolution.

Every dimension-number pattern lowers to one `np.matmul` of 3-D operands: `lhs` is viewed
as (batch, free, contracting) and `rhs` as (batch, contracting, free), so float32/float64
products run in BLAS with no Python loop over batch elements. Transposes are views; a reshape
copies only when the grouped dims are not already adjacent in memory, and BLAS takes
transposed (Fortran-ordered) matrices without a copy.

Accumulation: float16/bfloat16 in float32; integers in float64 BLAS when every partial sum
is exactly representable (|a| max * |b| max * K < 2**53), in int64 otherwise, then wrapped to
the output type (XLA's two's-complement semantics); bool as OR of ANDs.
"""

import functools
import math

import ml_dtypes
import numpy as np

from mytorch.backends.numpy import dot_nt, numpy_backend
from mytorch.lax.dot import dot_general_p

_BF16 = np.dtype(ml_dtypes.bfloat16)
_F16, _F32, _F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)
_EXACT_F64 = 2**53


def _float_compute_dtype(out):
    return _F64 if out == _F64 else _F32


def _max_abs(x):
    if x.size == 0:
        return 0
    return max(abs(int(x.max())), abs(int(x.min())))


def matmul(a, b, out_dtype):
    """`np.matmul(a, b)` of (B, M, K) and (B, K, N) arrays (or 2-D), computed the fast way
    for `out_dtype` and returned with that dtype."""
    out_dtype = np.dtype(out_dtype)
    if out_dtype == np.bool_:
        # OR of ANDs: count the true products in float32 BLAS (a count of 1 stays > 0)
        return np.matmul(a.astype(_F32), b.astype(_F32)) > 0
    if out_dtype.kind == "c":  # complex64/complex128: BLAS's cgemm/zgemm
        return np.matmul(a.astype(out_dtype, copy=False), b.astype(out_dtype, copy=False))
    if out_dtype.kind == "f" or out_dtype == _BF16:
        ct = _float_compute_dtype(out_dtype)
        a, b = a.astype(ct, copy=False), b.astype(ct, copy=False)
        if a.ndim == 2 and b.ndim == 2 and dot_nt.pays(a.shape[0], b.shape[1], a.shape[1], ct):
            out = dot_nt.matmul(a, b)  # the swapped product where b is a transposed matrix
        elif a.ndim == 2 and b.ndim == 2 and dot_nt.copies(a.shape[0], b.shape[1], a.shape[1],
                                                            ct):
            out = dot_nt.matmul_copied(a, b)  # a transposed b copied into C order first
        else:
            out = np.matmul(a, b)
        return out.astype(out_dtype, copy=False)
    # integers
    k = a.shape[-1]
    if _max_abs(a) * _max_abs(b) * k < _EXACT_F64:
        out = np.matmul(a.astype(_F64), b.astype(_F64))
        return out.astype(np.int64).astype(out_dtype)
    out = np.matmul(a.astype(np.int64), b.astype(np.int64))
    return out.astype(out_dtype)


@functools.lru_cache(maxsize=4096)
def _plan(lhs_shape, rhs_shape, dimension_numbers):
    """(lhs perm, rhs perm, 2-D or 3-D matmul shapes, out shape); perms are None when
    they are the identity."""
    (lc, rc), (lb, rb) = dimension_numbers
    lfree = tuple(i for i in range(len(lhs_shape)) if i not in lc and i not in lb)
    rfree = tuple(i for i in range(len(rhs_shape)) if i not in rc and i not in rb)
    batch_shape = tuple(lhs_shape[i] for i in lb)
    lfree_shape = tuple(lhs_shape[i] for i in lfree)
    rfree_shape = tuple(rhs_shape[i] for i in rfree)
    nb, m, n = math.prod(batch_shape), math.prod(lfree_shape), math.prod(rfree_shape)
    k = math.prod(lhs_shape[i] for i in lc)
    lperm, rperm = lb + lfree + lc, rb + rc + rfree
    lperm = None if lperm == tuple(range(len(lhs_shape))) else lperm
    rperm = None if rperm == tuple(range(len(rhs_shape))) else rperm
    if nb == 1:  # a plain 2-D product: the common case, with the least overhead
        a_shape, b_shape = (m, k), (k, n)
    else:
        a_shape, b_shape = (nb, m, k), (nb, k, n)
    return lperm, rperm, a_shape, b_shape, batch_shape + lfree_shape + rfree_shape


def dot_general_with(matmul):
    """The dot_general kernel that runs every product as `matmul(a, b, out_dtype)` of
    (B, M, K) and (B, K, N) operands (or 2-D) after `_plan`'s transposes and reshapes: this
    module's `matmul` on the CPU, backends/cupy/kernels_dot.py's on a GPU."""

    def dot_general(lhs, rhs, *, dimension_numbers, precision, preferred_element_type):
        out_dtype = lhs.dtype if preferred_element_type is None else preferred_element_type
        lperm, rperm, a_shape, b_shape, out_shape = _plan(lhs.shape, rhs.shape,
                                                          dimension_numbers)
        a = lhs if lperm is None else lhs.transpose(lperm)
        b = rhs if rperm is None else rhs.transpose(rperm)
        with np.errstate(all="ignore"):
            out = matmul(a.reshape(a_shape), b.reshape(b_shape), out_dtype)
        return out.reshape(out_shape)

    return dot_general


dot_general = numpy_backend.register(dot_general_p)(dot_general_with(matmul))
