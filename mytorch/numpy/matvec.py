"""NumPy 2.2's generalised ufuncs `matvec` and `vecmat`: a stack of matrices times a stack
of vectors, broadcast over the leading dimensions, as one `matmul`."""

from mytorch import lax
from mytorch.core import dtypes
from mytorch.core.source_info import user_error
from mytorch.numpy._promote import promote_dtypes
from mytorch.numpy.creation import asarray
from mytorch.numpy.products import matmul

__all__ = ["matvec", "vecmat"]


def _operands(name, x1, x2, mat_first):
    a, b = promote_dtypes(name, asarray(x1), asarray(x2))
    m, v = (a, b) if mat_first else (b, a)
    if m.ndim < 2 or v.ndim < 1:
        raise user_error(ValueError, f"{name}: expected a matrix (at least 2-D) and a vector "
                                     f"(at least 1-D), got {a.aval.str_short()} and "
                                     f"{b.aval.str_short()}")
    k = m.shape[-1] if mat_first else m.shape[-2]
    if v.shape[-1] != k:
        raise user_error(ValueError, f"{name}: the contracted dimension differs: the matrix "
                                     f"has {k}, the vector {v.shape[-1]} "
                                     f"({a.aval.str_short()} and {b.aval.str_short()})")
    return a, b


def matvec(x1, x2, /):
    """The matrix-vector product `x1 @ x2` of a stack of (m, n) matrices and a stack of
    (n,) vectors, broadcast over their leading dims.

    Args:
      x1: an array of shape (..., m, n).
      x2: an array of shape (..., n).

    Returns:
      An array of shape (broadcast leading dims, m), of the promoted dtype.

    >>> mnp.matvec(mnp.array([[1, 2], [3, 4]]), mnp.array([1, 1])).tolist()
    [3, 7]
    """
    a, b = _operands("matvec", x1, x2, True)
    out = matmul(a, lax.expand_dims(b, (b.ndim,)))
    return lax.squeeze(out, (out.ndim - 1,))


def vecmat(x1, x2, /):
    """The vector-matrix product `conj(x1) @ x2` of a stack of (n,) vectors and a stack of
    (n, m) matrices; the vector is conjugated, as NumPy's `vecmat` (and `vecdot`) do.

    Args:
      x1: an array of shape (..., n).
      x2: an array of shape (..., n, m).

    Returns:
      An array of shape (broadcast leading dims, m), of the promoted dtype.
    """
    a, b = _operands("vecmat", x1, x2, False)
    if dtypes.is_complex(a.dtype):
        a = lax.conj(a)
    out = matmul(lax.expand_dims(a, (a.ndim - 1,)), b)
    return lax.squeeze(out, (out.ndim - 2,))
