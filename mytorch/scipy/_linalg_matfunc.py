"""`mt.scipy.linalg`'s matrix functions besides expm and logm: the principal square root
and the Fréchet derivative of the exponential.

    sqrtm(f32[B,n,n]) -> c64[B,n,n]
    expm_frechet(f32[B,n,n], f32[B,n,n]) -> (expm f32[B,n,n], frechet f32[B,n,n])

sqrtm is the Schur method (the complex Schur form, then the square root of the triangular
factor by the Björck-Hammarling recurrence) with a JVP rule (a triangular Sylvester
solve); expm_frechet is expm of a block matrix. vmap and jit follow from the operations.
"""

import numpy as np

from mytorch import numpy as mnp
from mytorch.core import dtypes
from mytorch.core.source_info import user_error
from mytorch.custom_derivatives import custom_jvp
from mytorch.lax import linalg as lax_linalg
from mytorch.numpy._linalg_solvers import broadcast_batch, inexact, matrix, mH
from mytorch.scipy._linalg_schur import complex_schur

__all__ = ["sqrtm", "expm_frechet"]


def _s(x):
    return x.aval.str_short()


def _sqrt_triangular(t):
    """The upper-triangular square root u of an upper-triangular `t` [..., n, n] (u u = t,
    u's diagonal the principal roots of t's): u[i, j] = (t[i, j] - Σ_{i<k<j} u[i, k]
    u[k, j]) / (u[i, i] + u[j, j]), one superdiagonal at a time (Björck and Hammarling).
    A zero numerator gives zero also where the denominator is zero (two zero
    eigenvalues), as JAX: so diagonal and other semisimple singular matrices work."""
    n = t.shape[-1]
    rows, cols = np.arange(n)[:, None], np.arange(n)[None, :]
    root = mnp.sqrt(mnp.diagonal(t, axis1=-2, axis2=-1))
    u = mnp.where(mnp.asarray(rows == cols), root[..., None, :], 0)
    den = root[..., :, None] + root[..., None, :]
    for p in range(1, n):
        # with u's p-th superdiagonal still zero, (u u)[i, i+p] is the sum over i < k < j
        num = t - mnp.matmul(u, u)
        val = mnp.where(num == 0, 0, num / mnp.where(den == 0, 1, den))
        u = mnp.where(mnp.asarray(cols - rows == p), val, u)
    return u


def _sqrtm_factors(a):
    t, z = complex_schur(a)
    return z, _sqrt_triangular(t)


@custom_jvp
def _sqrtm(a):
    z, u = _sqrtm_factors(a)
    return mnp.matmul(z, mnp.matmul(u, mH(z)))


@_sqrtm.defjvp
def _sqrtm_jvp(primals, tangents):
    """dX from X dX + dX X = dA: in the Schur basis (X = Z U Zᴴ) it is the triangular
    Sylvester equation U Y + Y U = Zᴴ dA Z, solved a column at a time:
    (U + U[j, j] I) y_j = c_j - Σ_{k<j} y_k U[k, j]; then dX = Z Y Zᴴ."""
    (a,), (da,) = primals, tangents
    z, u = _sqrtm_factors(a)
    c = mnp.matmul(mH(z), mnp.matmul(da.astype(z.dtype), z))
    n = a.shape[-1]
    eye = mnp.eye(n, dtype=z.dtype)
    columns = []
    for j in range(n):
        rhs = c[..., :, j]
        if columns:
            rhs = rhs - mnp.matmul(mnp.stack(columns, axis=-1), u[..., :j, j:j + 1])[..., 0]
        shifted = u + u[..., j:j + 1, j:j + 1] * eye
        columns.append(lax_linalg.triangular_solve(shifted, rhs[..., None], left_side=True,
                                                   lower=False)[..., 0])
    y = mnp.stack(columns, axis=-1)
    return mnp.matmul(z, mnp.matmul(u, mH(z))), mnp.matmul(z, mnp.matmul(y, mH(z)))


def sqrtm(A, blocksize=1):
    """The principal square root X of `A` [..., n, n] (X @ X = A, X's eigenvalues the
    principal roots of A's), by the Schur method as SciPy and JAX: complex always (complex64
    for float32 and complex64 input), as JAX's, so real matrices with negative eigenvalues
    get their complex root, and singular matrices whose zero eigenvalues are semisimple
    (diagonal ones, say) work. The derivative solves X dX + dX X = dA (infinite where A is
    singular). `blocksize` is accepted for SciPy/JAX compatibility (it only changes
    SciPy's blocking, not the result).
    """
    if not isinstance(blocksize, int) or blocksize < 1:
        raise user_error(ValueError, f"sqrtm: blocksize must be a positive int, got "
                         f"{blocksize!r}")
    (A,) = inexact("sqrtm", A)
    matrix("sqrtm", A, square=True)
    if A.shape[-1] == 0:
        return A.astype(dtypes.complex_dtype(dtypes.real_dtype(A.dtype)))
    return _sqrtm(A)


def expm_frechet(A, E, *, method=None, compute_expm=True):
    """The Fréchet derivative L(A, E) of the matrix exponential at `A` in the direction
    `E` (both [..., n, n]; batch dims broadcast): the upper-right block of
    expm([[A, E], [0, A]]), exact up to expm's own accuracy and differentiable through it.

    Returns:
      (expm(A), L(A, E)), or L(A, E) alone with `compute_expm=False`. `method` (SciPy's
      "SPS" or "blockEnlarge") is accepted; the block form is used either way.
    """
    from mytorch.scipy.linalg import expm  # (linalg imports this module)

    if method not in (None, "SPS", "blockEnlarge"):
        raise user_error(ValueError, f"expm_frechet: method must be None, 'SPS' or "
                         f"'blockEnlarge', got {method!r}")
    A, E = inexact("expm_frechet", A, E)
    matrix("expm_frechet", A, square=True)
    matrix("expm_frechet", E, square=True)
    if A.shape[-1] != E.shape[-1]:
        raise user_error(ValueError, f"expm_frechet: A and E must be matrices of one "
                         f"size, got A {_s(A)} and E {_s(E)}")
    A, E = broadcast_batch("expm_frechet", A, E)
    n = A.shape[-1]
    block = mnp.concatenate([mnp.concatenate([A, E], axis=-1),
                             mnp.concatenate([mnp.zeros_like(A), A], axis=-1)], axis=-2)
    big = expm(block)
    frechet = big[..., :n, n:]
    return (big[..., :n, :n], frechet) if compute_expm else frechet
