"""GPU eager kernels of the linear-algebra primitives (mytorch/lax/linalg.py and
linalg_eig.py): backends/numpy/linalg.py's kernels, which are written for any array
module, run with CuPy's. float32, float64, complex64 and complex128; results keep the
operand's dtype, eigenvalues and singular values take its real dtype.

- cholesky: the operand symmetrised from its lower triangle (as LAPACK reads it), then
  `cupy.linalg.cholesky` (cuSOLVER potrf, batched). cuSOLVER does not raise on a matrix
  that is not positive definite: it stops with a non-positive (or NaN) pivot on the
  diagonal, so every matrix of the stack whose factor's diagonal is not all positive
  becomes NaNs, as the NumPy kernel makes it (NumPy raises; its matrices are then factored
  one by one).
- triangular_solve: the triangle masked (unit diagonal set), conjugated and transposed as
  asked, then `cupyx.scipy.linalg.solve_triangular` (cuBLAS trsm, batched): a zero on the
  diagonal gives a triangular solver's infs/NaNs, as the NumPy kernel's substitution does.
- qr, eigh, svd: `cupy.linalg.qr/eigh/svd` (cuSOLVER geqrf+orgqr, syevj, gesvdj; batched).
  Eigenvectors and singular vectors are unique only up to a sign (a phase for complex), and
  cuSOLVER's Jacobi methods may pick other signs than LAPACK; float32 is factored in
  float32 (NumPy factors it in float64, then rounds).
- lu: the NumPy kernel's Doolittle elimination with partial pivoting (getrf's pivots:
  largest |re| + |im|, first on ties), one step per column over the whole stack:
  O(min(m, n)) small kernel launches.
- tridiagonal_solve: the NumPy kernel's Gaussian elimination with partial pivoting (LAPACK
  gtsv's), vectorised over the batch and the columns: O(m) steps (each reads one flag to
  the host to skip the pivoting branch).
- cholesky and triangular_solve are the NumPy kernels' masking and symmetrising with the
  factor/solve step below (`cholesky_with`, `triangular_solve_with`); with NumPy operands
  (the tests) that step is the NumPy kernel's own.
- eig: HOST FALLBACK (`kernels_common.on_host`): CuPy's `eig` gives no left
  eigenvectors and its NaN handling for non-finite matrices is not LAPACK's, so the NumPy
  kernel runs on host copies and the results are copied back.
"""

import numpy as np

from mytorch.backends.cupy.kernels import register
from mytorch.backends.cupy.kernels_common import any_module, on_host
from mytorch.backends.numpy import linalg as cpu
from mytorch.backends.numpy.linalg_eig import _eig
from mytorch.lax import linalg as la
from mytorch.lax.linalg_eig import eig_p


# ---- cholesky ----------------------------------------------------------------------------
def _factor_stack(xp, sym):
    """The Cholesky factors of the stack `sym`, NaNs for matrices not positive definite."""
    if xp is np:  # NumPy raises for the whole stack: the NumPy kernel's way
        return cpu.factor_stack(xp, sym)
    return nan_where_not_positive(xp, xp.linalg.cholesky(sym))


def nan_where_not_positive(xp, factor):
    """`factor` (..., n, n) with NaNs for each matrix whose diagonal is not all > 0 (where
    potrf stopped: a pivot <= 0 or NaN)."""
    if factor.size == 0:
        return factor
    diag = xp.real(xp.diagonal(factor, 0, -2, -1))
    bad = ~(diag > 0).all(axis=-1)
    return xp.where(bad[..., None, None], xp.asarray(np.nan, dtype=factor.dtype), factor)


# ---- triangular_solve --------------------------------------------------------------------
def _solve_triangular(xp, tri, b, lower):
    if xp is np:  # the NumPy kernel's way: LAPACK's solve, substitution when singular
        return cpu.solve_or_substitute(xp, tri, b, lower)
    from cupyx.scipy.linalg import solve_triangular

    return solve_triangular(xp.ascontiguousarray(tri), xp.ascontiguousarray(b), lower=lower)


register(la.cholesky_p)(any_module(cpu.cholesky_with(_factor_stack)))
register(la.triangular_solve_p)(any_module(cpu.triangular_solve_with(_solve_triangular)))
for _prim, _kernel in [(la.lu_p, cpu._lu), (la.qr_p, cpu._qr), (la.eigh_p, cpu._eigh),
                       (la.svd_p, cpu._svd), (la.tridiagonal_solve_p, cpu._tridiagonal_solve)]:
    register(_prim)(any_module(_kernel))

# ---- eig: on the host --------------------------------------------------------------------
register(eig_p)(on_host(_eig))
