"""`mnp.linalg.eig` and `mnp.linalg.eigvals`: the nonsymmetric eigendecomposition over the
`lax.linalg.eig` primitive.

As in JAX (NumPy returns real arrays when every eigenvalue happens to be real), the results
are always complex: complex64 for float32/complex64 input, complex128 for float64/complex128;
ints and bools become the default float first. Eigenvectors are the columns of v, with unit
2-norm and a real largest-magnitude component (LAPACK's normalisation, which the derivative
keeps); eigenvalues come in LAPACK's order, not sorted.

    eig(f32[B,n,n]) -> (c64[B,n], c64[B,n,n])     eigvals(f64[n,n]) -> c128[n]
"""

from collections import namedtuple

from mytorch.lax import linalg as lax_linalg
from mytorch.numpy._linalg_solvers import inexact, matrix

__all__ = ["eig", "eigvals", "EigResult"]

EigResult = namedtuple("EigResult", ["eigenvalues", "eigenvectors"])


def eig(a):
    """Eigenvalues w [..., n] and right eigenvectors v [..., n, n] (columns: a v = v diag(w))
    of square matrices `a` [..., n, n], as an (eigenvalues, eigenvectors) named tuple.

    Raises:
      ValueError: `a` is not a stack of square matrices. TypeError: float16/bfloat16 input.

    >>> w, v = mnp.linalg.eig(mnp.array([[0., 1.], [-1., 0.]]))
    >>> w
    Array([0.+1.j, 0.-1.j], dtype=complex64)
    """
    (a,) = inexact("eig", a)
    matrix("eig", a, square=True)
    w, v = lax_linalg.eig(a, compute_left_eigenvectors=False)
    return EigResult(w, v)


def eigvals(a):
    """The eigenvalues [..., n] (complex) of square matrices `a` [..., n, n].

    >>> mnp.linalg.eigvals(mnp.array([[2., 1.], [0., 3.]]))
    Array([2.+0.j, 3.+0.j], dtype=complex64)
    """
    (a,) = inexact("eigvals", a)
    matrix("eigvals", a, square=True)
    return lax_linalg.eig(a, compute_left_eigenvectors=False,
                          compute_right_eigenvectors=False)[0]
