"""`mt.scipy.linalg`'s eigenproblems and matrix logarithm: the generalised symmetric
eigenproblem (`eigh(a, b)`), SciPy's spellings of `eig` and `eigvals`, and `logm`.

    generalized_eigh(f32[B,n,n], f32[B,n,n]) -> (w f32[B,n], v f32[B,n,n])
    eig(f32[n,n]) -> (w c64[n], vr c64[n,n])       logm(f32[B,n,n]) -> f32[B,n,n]

Everything is composed from the lax.linalg primitives (cholesky, triangular_solve, eigh,
eig, lu) and lax loops, so derivatives, vmap and jit follow from theirs.
"""

import numpy as np

from mytorch import lax
from mytorch import numpy as mnp
from mytorch.core import dtypes
from mytorch.core.source_info import user_error
from mytorch.lax import linalg as lax_linalg
from mytorch.numpy._linalg_solvers import broadcast_batch, inexact, matrix, mH

__all__ = ["generalized_eigh", "eig", "eigvals", "logm"]


def _s(x):
    return x.aval.str_short()


def _hermitian(x, lower, symmetrize_input):
    """(x + xᴴ) / 2, or the Hermitian matrix of x's `lower` (or upper) triangle."""
    if symmetrize_input:
        return (x + mH(x)) / 2
    tri = mnp.tril(x) if lower else mnp.triu(x)
    strict = mnp.tril(x, -1) if lower else mnp.triu(x, 1)
    return tri + mH(strict)


def generalized_eigh(a, b, *, lower=True, eigvals_only=False, type=1, symmetrize_input=True):
    """The generalised eigenproblem of a Hermitian (real: symmetric) `a` and a Hermitian
    positive-definite `b`, both [..., n, n] (batch dims broadcast):

      type 1: a v = w b v,   type 2: a b v = w v,   type 3: b a v = w v.

    With the Cholesky factor b = L Lᴴ it is the standard problem of C = L⁻¹ a L⁻ᴴ (type 1)
    or C = Lᴴ a L (types 2 and 3), whose eigenvectors y give v = L⁻ᴴ y (types 1 and 2) or
    v = L y (type 3); so, as in SciPy, vᴴ b v = I (types 1, 2) or vᴴ b⁻¹ v = I (type 3).

    Returns:
      (w [..., n] ascending and real, v [..., n, n] with the eigenvectors as columns), or w
      alone with `eigvals_only`. A `b` that is not positive definite gives NaNs.
    """
    if type not in (1, 2, 3):
        raise user_error(ValueError, f"eigh: type must be 1, 2 or 3, got {type!r}")
    a, b = inexact("eigh", a, b)
    matrix("eigh", a, square=True)
    matrix("eigh", b, square=True)
    if a.shape[-1] != b.shape[-1]:
        raise user_error(ValueError, f"eigh: a and b must be matrices of one size, got a "
                         f"{_s(a)} and b {_s(b)}")
    a, b = broadcast_batch("eigh", a, b)
    a = _hermitian(a, lower, symmetrize_input)
    chol = lax_linalg.cholesky(_hermitian(b, lower, symmetrize_input), symmetrize_input=False)

    def inv_l(x, adjoint=False):  # L⁻¹ x, or L⁻ᴴ x
        return lax_linalg.triangular_solve(chol, x, left_side=True, lower=True,
                                           transpose_a=adjoint, conjugate_a=adjoint)

    if type == 1:
        c = mH(inv_l(mH(inv_l(a))))  # (L⁻¹ a) L⁻ᴴ = (L⁻¹ (L⁻¹ a)ᴴ)ᴴ
    else:
        c = mnp.matmul(mH(chol), mnp.matmul(a, chol))
    y, w = lax_linalg.eigh(c, symmetrize_input=True)
    if eigvals_only:
        return w
    return w, (mnp.matmul(chol, y) if type == 3 else inv_l(y, adjoint=True))


def _no_b(name, b):
    if b is not None:
        raise user_error(ValueError, f"{name}: the generalised problem (b=) is supported by "
                         "eigh only, for Hermitian a and positive-definite b")


def _homogeneous(w):
    """SciPy's homogeneous eigenvalues: (w, 1) pairs stacked as [..., 2, n]."""
    return mnp.stack([w, mnp.ones_like(w)], axis=-2)


def eig(a, b=None, left=False, right=True, overwrite_a=False, overwrite_b=False,
        check_finite=True, homogeneous_eigvals=False):
    """The eigenvalues w [..., n] and, as asked, the left (vlᴴ a = diag(w) vlᴴ) and right
    (a vr = vr diag(w)) eigenvectors [..., n, n] of square `a`: w, (w, vr), (w, vl) or
    (w, vl, vr), as SciPy. Results are complex always (as `mnp.linalg.eig`); eigenvector
    columns have unit norm and a real largest component. `homogeneous_eigvals` gives w as
    [..., 2, n] pairs (w, 1)."""
    del overwrite_a, overwrite_b, check_finite
    _no_b("eig", b)
    (a,) = inexact("eig", a)
    matrix("eig", a, square=True)
    w, *vectors = lax_linalg.eig(a, compute_left_eigenvectors=bool(left),
                                 compute_right_eigenvectors=bool(right))
    if homogeneous_eigvals:
        w = _homogeneous(w)
    return (w, *vectors) if vectors else w


def eigvals(a, b=None, overwrite_a=False, check_finite=True, homogeneous_eigvals=False):
    """The eigenvalues [..., n] (complex) of square `a`, as SciPy's `eigvals`."""
    return eig(a, b, right=False, overwrite_a=overwrite_a, check_finite=check_finite,
               homogeneous_eigvals=homogeneous_eigvals)


# ---- logm: inverse scaling and squaring ------------------------------------------------
# log(I + X) by the m-point Gauss-Legendre rule on ∫₀¹ X (I + t X)⁻¹ dt, which is the
# [m/m] Padé approximant (Kenney and Laub); for ||X||₁ <= 1/4 and m = 8 its error is below
# the float64 unit roundoff. At most _MAX_ROOTS square roots, each of at most
# _MAX_DB_STEPS iterations (scaled, it converges in about ten).
_PADE_POINTS = 8
_THETA = 0.25
_MAX_ROOTS = 40
_MAX_DB_STEPS = 50


def _norm1(x):
    return mnp.max(mnp.sum(mnp.abs(x), axis=-2), axis=-1)


def _sqrtm(a):
    """(a^(1/2), whether the iteration converged), by the scaled product form of the
    Denman-Beavers iteration (Higham, Functions of Matrices, eq. 6.29 with determinant
    scaling): M → I and Y → a^(1/2). M stalls away from I when a has an eigenvalue on the
    closed negative real axis."""
    n = a.shape[-1]
    ident = mnp.eye(n, dtype=a.dtype)
    tol = float(np.sqrt(dtypes.finfo(dtypes.real_dtype(a.dtype)).eps))

    def unconverged(carry):
        m, _, steps = carry
        return (_norm1(m - ident) > tol) & (steps < _MAX_DB_STEPS)

    def step(carry):
        m, y, steps = carry
        mu = mnp.exp(-mnp.linalg.slogdet(m).logabsdet / (2 * n)).astype(a.dtype)
        m_inv = mnp.linalg.inv(m) / mu ** 2
        y = mu * mnp.matmul(y, ident + m_inv) / 2
        m = (ident + (mu ** 2 * m + m_inv) / 2) / 2
        return m, y, steps + 1

    carry = lax.while_loop(unconverged, step, (a, a, mnp.asarray(0, dtype=mnp.int32)))
    converged = _norm1(carry[0] - ident) <= tol
    # quadratic convergence: two more steps take M - I from sqrt(eps) to roundoff
    return step(step(carry))[1], converged


def _logm_2d(a):
    n = a.shape[-1]
    ident = mnp.eye(n, dtype=a.dtype)

    def far(carry):
        x, roots, ok = carry
        return ok & (_norm1(x - ident) > _THETA) & (roots < _MAX_ROOTS)

    def root(carry):
        x, roots, _ = carry
        x, ok = _sqrtm(x)
        return x, roots + 1, ok

    x, roots, ok = lax.while_loop(far, root, (a, mnp.asarray(0, dtype=mnp.int32),
                                              mnp.asarray(True)))
    x = x - ident
    nodes, weights = np.polynomial.legendre.leggauss(_PADE_POINTS)
    out = mnp.zeros_like(a)
    for t, wt in zip((nodes + 1) / 2, weights / 2, strict=True):
        out = out + wt * mnp.linalg.solve(ident + t * x, x)
    scale = (2.0 ** roots).astype(dtypes.real_dtype(a.dtype)).astype(a.dtype)
    # a square root that did not converge (an eigenvalue on the closed negative real axis,
    # a singular matrix) or too many of them: no principal logarithm of a's dtype
    ok = ok & (_norm1(x) <= _THETA)
    return mnp.where(ok, scale * out, mnp.nan)


def logm(A, disp=True):
    """The principal matrix logarithm of `A` [..., n, n] (exp(logm(A)) = A), by inverse
    scaling and squaring (Higham): repeated square roots bring A close to I, where the
    Padé approximant of log(I + X) is accurate, and the result is scaled back.

    Unlike SciPy, which works on the Schur form, the square roots come from the
    Denman-Beavers iteration, which needs no eigenvectors: any A without eigenvalues on the
    closed negative real axis works, diagonalisable or not, and the derivative (through
    the loops' operations) is smooth also at repeated eigenvalues. A real A keeps a real
    dtype, so a real A with a negative eigenvalue (whose logarithm is complex) gives NaNs:
    pass it as complex (`A.astype(mnp.complex64)`) to get SciPy's complex result. Singular
    matrices give NaNs.

    Returns:
      logm(A), or with `disp=False` (logm(A), errest) where errest [...] is
      ||expm(logm(A)) - A||₁ / ||A||₁, as SciPy.
    """
    from mytorch.scipy.linalg import expm  # (linalg imports this module)

    (A,) = inexact("logm", A)
    matrix("logm", A, square=True)
    if A.shape[-1] == 0:
        out = A
    else:
        flat = A.reshape((-1,) + A.shape[-2:])
        out = (_logm_2d(flat[0])[None] if flat.shape[0] == 1
               else lax.map(_logm_2d, flat)).reshape(A.shape)
    if disp:
        return out
    return out, _norm1(expm(out) - A) / _norm1(A)
