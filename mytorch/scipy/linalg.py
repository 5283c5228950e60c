"""`mt.scipy.linalg` (JAX's `jax.scipy.linalg`): triangular, Cholesky and LU solves, the
LU factorisation as P, L, U, the matrix exponential (and its Fréchet derivative),
logarithm and square root, block_diag, toeplitz, hankel, hilbert, the polar, RQ and
Hessenberg factorisations, the Schur form (with rsf2csf and funm), the tridiagonal
eigenproblem, and SciPy's spellings of solve, eigh (also the generalised problem), eig,
eigvals, cholesky, qr, svd, det and inv.

float32/float64 and complex64/complex128 matrices, batched over leading dimensions (ints
and bools become the default float); for complex input the symmetric cases read Hermitian
(Cholesky factors with a = L Lᴴ = Uᴴ U) and trans=2 solves with the conjugate transpose.
SciPy's `overwrite_*` and `check_finite` arguments are accepted and ignored: arrays are
immutable, and a traced value cannot be checked.

    solve_triangular(f32[B,n,n], f32[B,n,k]) -> f32[B,n,k]     expm(f32[n,n]) -> f32[n,n]
"""

from mytorch import lax
from mytorch import numpy as mnp
from mytorch.vectorize import vmap
from mytorch.core.source_info import user_error
from mytorch.lax import linalg as lax_linalg
from mytorch.numpy._linalg_solvers import broadcast_batch, inexact, lu_solve as _lu_solve
from mytorch.numpy._linalg_solvers import matrix, real_dtype
from mytorch.scipy._linalg_construct import hankel, hilbert, toeplitz
from mytorch.scipy._linalg_special import (
    circulant, companion, convolution_matrix, dft, fiedler, fiedler_companion, hadamard,
    helmert, invhilbert, invpascal, leslie, pascal,
)
from mytorch.scipy._linalg_eig import eig, eigvals, generalized_eigh, logm
from mytorch.scipy._linalg_factor import eigh_tridiagonal, hessenberg, polar, rq
from mytorch.scipy._linalg_matfunc import expm_frechet, sqrtm
from mytorch.scipy._linalg_schur import funm, rsf2csf, schur
from mytorch.scipy._linalg_sylvester import solve_sylvester

__all__ = ["solve_triangular", "cho_factor", "cho_solve", "lu_factor", "lu_solve", "lu",
           "expm", "block_diag", "solve", "eigh", "cholesky", "qr", "svd", "det", "inv",
           "eig", "eigvals", "logm", "sqrtm", "expm_frechet", "toeplitz", "hankel",
           "hilbert", "polar", "rq", "hessenberg", "eigh_tridiagonal", "schur", "rsf2csf",
           "funm", "circulant", "companion", "convolution_matrix", "dft", "fiedler",
           "fiedler_companion", "hadamard", "helmert", "invhilbert", "invpascal", "leslie",
           "pascal", "qr_multiply", "solve_sylvester"]


def _s(x):
    return x.aval.str_short()


def _as_matrix_rhs(name, a, b):
    """b as [..., n, k], whether it was a vector, with the batch broadcast against a's. As
    SciPy (1.16+) and JAX, b is a vector when it is 1-D, or when it has one dimension fewer
    than a and ends in n (JAX's older batched-vector reading); else it is [..., n, k]."""
    vector = b.ndim == 1 or (b.ndim == a.ndim - 1 and b.shape[-1] == a.shape[-1])
    if vector:
        b = b[..., None]
    if b.ndim < 2 or b.shape[-2] != a.shape[-1]:
        raise user_error(ValueError, f"{name}: b must be [..., {a.shape[-1]}] or [..., "
                         f"{a.shape[-1]}, k] for a {_s(a)}, got {_s(b)}")
    a, b = broadcast_batch(name, a, b)
    return a, b, vector


def solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False,
                     debug=None, check_finite=True):
    """The solution `x` of `a x = b` (trans 0 or "N"), `aᵀ x = b` (1 or "T") or
    `aᴴ x = b` (2 or "C") for a triangular `a` [..., n, n] (only its `lower` or upper
    triangle is read; with `unit_diagonal` its diagonal is taken as ones); b [..., n] or
    [..., n, k]."""
    del overwrite_b, debug, check_finite
    a, b = inexact("solve_triangular", a, b)
    matrix("solve_triangular", a, square=True)
    if trans not in (0, 1, 2, "N", "T", "C"):
        raise user_error(ValueError, f"solve_triangular: trans must be 0, 1, 2, 'N', 'T' or "
                         f"'C', got {trans!r}")
    a, b, vector = _as_matrix_rhs("solve_triangular", a, b)
    x = lax_linalg.triangular_solve(a, b, left_side=True, lower=lower,
                                    transpose_a=trans not in (0, "N"),
                                    conjugate_a=trans in (2, "C"),
                                    unit_diagonal=bool(unit_diagonal))
    return x[..., 0] if vector else x


def cholesky(a, lower=False, overwrite_a=False, check_finite=True):
    """The Cholesky factor of a Hermitian (real: symmetric) positive-definite `a`
    [..., n, n]: upper `U` with `a = Uᴴ U`, or lower `L` with `a = L Lᴴ` (NaN where `a`
    is not positive definite). As SciPy's, only the `lower` (or upper) triangle of `a` is
    read, so a triangular `a` stands for the Hermitian matrix it is half of."""
    del overwrite_a, check_finite
    (a,) = inexact("cholesky", a)
    matrix("cholesky", a, square=True)
    # the Hermitian matrix the triangle stands for (the real part of the diagonal, as
    # LAPACK reads it), built with differentiable operations so that derivatives are
    # those of the function SciPy computes
    half = mnp.tril(a, -1) if lower else mnp.triu(a, 1)
    diagonal = mnp.eye(a.shape[-1], dtype=real_dtype(a)) * mnp.real(a)
    hermitian = half + mnp.conj(mnp.swapaxes(half, -1, -2)) + diagonal
    return mnp.linalg.cholesky(hermitian, upper=not lower)


def cho_factor(a, lower=False, overwrite_a=False, check_finite=True):
    """(c, lower): the Cholesky factor of `a` (upper unless `lower`) for `cho_solve`."""
    return cholesky(a, lower, overwrite_a, check_finite), lower


def cho_solve(c_and_lower, b, overwrite_b=False, check_finite=True):
    """The solution of `a x = b` from `cho_factor(a)`'s (c, lower); b [..., n] or
    [..., n, k]."""
    del overwrite_b, check_finite
    c, lower = c_and_lower
    c, b = inexact("cho_solve", c, b)
    matrix("cho_solve", c, square=True)
    c, b, vector = _as_matrix_rhs("cho_solve", c, b)
    # a = L Lᴴ: solve L y = b, then Lᴴ x = y (with U = Lᴴ the transposes swap)
    x = lax_linalg.triangular_solve(c, b, left_side=True, lower=lower,
                                    transpose_a=not lower, conjugate_a=not lower)
    x = lax_linalg.triangular_solve(c, x, left_side=True, lower=lower, transpose_a=lower,
                                    conjugate_a=lower)
    return x[..., 0] if vector else x


def lu_factor(a, overwrite_a=False, check_finite=True):
    """(lu, piv): `a`'s [..., m, n] LU factors packed in one matrix (L's unit diagonal
    left out) and LAPACK's row interchanges (row i was swapped with row piv[i]), int32
    [..., min(m, n)]."""
    del overwrite_a, check_finite
    (a,) = inexact("lu_factor", a)
    matrix("lu_factor", a)
    lu_, pivots, _ = lax_linalg.lu(a)
    return lu_, pivots


def _pivots_to_permutation(pivots, m):
    """The row order [..., m] that the row interchanges `pivots` [..., k] produce: row i
    swapped with row pivots[i], for i = 0..k-1 in turn."""
    perm = mnp.broadcast_to(mnp.arange(m, dtype=pivots.dtype), pivots.shape[:-1] + (m,))
    rows = mnp.arange(m, dtype=pivots.dtype)
    for i in range(pivots.shape[-1]):
        j = pivots[..., i:i + 1]
        at_i, at_j = perm[..., i:i + 1], mnp.take_along_axis(perm, j, axis=-1)
        perm = mnp.where(rows == i, at_j, mnp.where(rows == j, at_i, perm))
    return perm


def lu_solve(lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True):
    """The solution of `a x = b` (trans 0), `aᵀ x = b` (1) or `aᴴ x = b` (2) from
    `lu_factor(a)`'s (lu, piv); b [..., n] or [..., n, k]."""
    del overwrite_b, check_finite
    lu_, pivots = lu_and_piv
    lu_, b = inexact("lu_solve", lu_, b)
    matrix("lu_solve", lu_, square=True)
    if trans not in (0, 1, 2):
        raise user_error(ValueError, f"lu_solve: trans must be 0, 1 or 2, got {trans!r}")
    perm = _pivots_to_permutation(mnp.asarray(pivots), lu_.shape[-1])
    lu_, b, vector = _as_matrix_rhs("lu_solve", lu_, b)
    perm = mnp.broadcast_to(perm, lu_.shape[:-1])
    x = _lu_solve(lu_, perm, b, trans=trans)
    return x[..., 0] if vector else x


def lu(a, permute_l=False, overwrite_a=False, check_finite=True):
    """The LU factorisation `a = P L U` of `a` [..., m, n], k = min(m, n): P [..., m, m]
    a permutation matrix (of a's real dtype), L [..., m, k] unit lower triangular, U [..., k, n] upper
    triangular; (P L, U) with `permute_l`."""
    del overwrite_a, check_finite
    (a,) = inexact("lu", a)
    matrix("lu", a)
    lu_, _, perm = lax_linalg.lu(a)
    m, n = a.shape[-2:]
    k = min(m, n)
    # a[perm] = L U, so row perm[i] of a is row i of L U: P[perm[i], i] = 1 (P is real,
    # float32 for complex64 a, as SciPy and JAX)
    p = (perm[..., None, :] == mnp.arange(m)[:, None]).astype(real_dtype(a))
    lower = mnp.tril(lu_, -1)[..., :, :k] + mnp.eye(m, k, dtype=a.dtype)
    upper = mnp.triu(lu_)[..., :k, :]
    if permute_l:
        return mnp.matmul(p.astype(a.dtype), lower), upper
    return p, lower, upper


# Padé approximants of exp: U = odd part, V = even part, exp(A) ≈ (V - U)⁻¹ (V + U)
_PADE = {
    3: (120., 60., 12., 1.),
    5: (30240., 15120., 3360., 420., 30., 1.),
    7: (17297280., 8648640., 1995840., 277200., 25200., 1512., 56., 1.),
    9: (17643225600., 8821612800., 2075673600., 302702400., 30270240., 2162160., 110880.,
        3960., 90., 1.),
    13: (64764752532480000., 32382376266240000., 7771770303897600., 1187353796428800.,
         129060195264000., 10559470521600., 670442572800., 33522128640., 1323241920.,
         40840800., 960960., 16380., 182., 1.),
}
# the 1-norm bounds below which each order is accurate to the dtype's unit roundoff
# (Higham 2005), and the bound that the scaling brings the norm under
_THETA = {"float64": ((1.495585217958292e-2, 2.539398330063230e-1, 9.504178996162932e-1,
                       2.097847961257068e0), 5.371920351148152, (3, 5, 7, 9, 13)),
          "float32": ((4.258730016922831e-1, 1.880152677804762e0), 3.925724783138660,
                      (3, 5, 7))}


def _pade(order, a):
    """(U, V) of the Padé approximant of the given order at `a` [n, n]."""
    b = _PADE[order]
    ident = mnp.eye(a.shape[-1], dtype=a.dtype)
    a2 = mnp.matmul(a, a)
    if order == 13:
        a4 = mnp.matmul(a2, a2)
        a6 = mnp.matmul(a4, a2)
        u = mnp.matmul(a, mnp.matmul(a6, b[13] * a6 + b[11] * a4 + b[9] * a2)
                       + b[7] * a6 + b[5] * a4 + b[3] * a2 + b[1] * ident)
        v = (mnp.matmul(a6, b[12] * a6 + b[10] * a4 + b[8] * a2) + b[6] * a6 + b[4] * a4
             + b[2] * a2 + b[0] * ident)
        return u, v
    powers = [ident, a2]
    while len(powers) <= order // 2:
        powers.append(mnp.matmul(powers[-1], a2))
    odd = sum(b[2 * k + 1] * powers[k] for k in range(order // 2 + 1))
    even = sum(b[2 * k] * powers[k] for k in range(order // 2 + 1))
    return mnp.matmul(a, odd), even


def _expm_2d(a, max_squarings):
    """exp(a) for one matrix: scale by 2⁻ˢ so that the 1-norm is small, take the Padé
    approximant whose order the norm calls for, and square s times."""
    double = a.dtype in (mnp.float64, mnp.complex128)
    bounds, top, orders = _THETA["float64" if double else "float32"]
    norm1 = mnp.max(mnp.sum(mnp.abs(a), axis=0))
    # ceil, as Higham and SciPy: the scaled norm must be at most top for order 13
    squarings = mnp.maximum(0, mnp.ceil(mnp.log2(norm1 / top)))
    a = a / (2.0 ** squarings).astype(a.dtype)
    index = mnp.digitize(norm1, mnp.asarray(bounds, norm1.dtype))
    u, v = lax.switch(index, [lambda x, o=o: _pade(o, x) for o in orders], a)
    r = mnp.linalg.solve(v - u, v + u)

    def square(r, i):
        return mnp.where(i < squarings, mnp.matmul(r, r), r), None

    r, _ = lax.scan(square, r, mnp.arange(max_squarings, dtype=squarings.dtype))
    return mnp.where(squarings > max_squarings, mnp.nan, r)


def expm(A, *, upper_triangular=False, max_squarings=16):
    """The matrix exponential of `A` [..., n, n] by Padé approximation with scaling and
    squaring (Higham 2005, as SciPy and JAX); NaN where the norm would need more than
    `max_squarings` squarings. Differentiable through its operations.
    `upper_triangular` is accepted for JAX compatibility."""
    del upper_triangular
    (A,) = inexact("expm", A)
    matrix("expm", A, square=True)
    if A.shape[-1] == 0:
        return A
    flat = A.reshape((-1,) + A.shape[-2:])
    out = vmap(lambda x: _expm_2d(x, max_squarings))(flat)
    return out.reshape(A.shape)


def block_diag(*arrs):
    """The block-diagonal matrix with the given blocks in order (0-d and 1-D blocks count
    as [1, 1] and [1, n] matrices): [sum of rows, sum of columns]."""
    if not arrs:
        return mnp.zeros((1, 0))
    blocks = inexact("block_diag", *arrs)
    blocks = [mnp.atleast_2d(b) for b in blocks]
    for k, b in enumerate(blocks):
        if b.ndim != 2:
            raise user_error(ValueError, f"block_diag: block {k} must have at most 2 "
                             f"dimensions, got {_s(b)}")
    cols = sum(b.shape[1] for b in blocks)
    rows, before = [], 0
    for b in blocks:
        rows.append(mnp.pad(b, ((0, 0), (before, cols - before - b.shape[1]))))
        before += b.shape[1]
    return mnp.concatenate(rows, axis=0)


def solve(a, b, lower=False, overwrite_a=False, overwrite_b=False, check_finite=True,
          assume_a="gen"):
    """The solution of `a x = b`: assume_a "gen", "sym" (or "her") go through LU,
    "pos" through the Cholesky factor of the `lower` (or upper) triangle. b [..., n]
    (one dimension fewer than a) or [..., n, k]."""
    del overwrite_a, overwrite_b, check_finite
    a, b = inexact("solve", a, b)
    matrix("solve", a, square=True)
    if assume_a not in ("gen", "sym", "her", "pos"):
        raise user_error(ValueError, f"solve: assume_a must be 'gen', 'sym', 'her' or "
                         f"'pos', got {assume_a!r}")
    if assume_a == "pos":
        return cho_solve(cho_factor(a, lower=lower), b)
    a, b, vector = _as_matrix_rhs("solve", a, b)
    x = mnp.linalg.solve(a, b)
    return x[..., 0] if vector else x


def eigh(a, b=None, lower=True, eigvals_only=False, overwrite_a=False, overwrite_b=False,
         type=1, check_finite=True, subset_by_index=None, subset_by_value=None,
         driver=None, *, symmetrize_input=True):
    """(w, v): the ascending eigenvalues [..., n] and eigenvectors [..., n, n] of a
    symmetric `a` (its `lower` or upper triangle); w alone with `eigvals_only`. With `b`,
    the generalised problem of the given `type` (see `generalized_eigh`). Eigenvalue
    subsets are not supported."""
    del overwrite_a, overwrite_b, check_finite, driver
    if subset_by_index is not None or subset_by_value is not None:
        raise user_error(ValueError, "eigh: eigenvalue subsets are not supported; select "
                         "from the full result")
    if b is not None:
        return generalized_eigh(a, b, lower=lower, eigvals_only=eigvals_only, type=type,
                                symmetrize_input=symmetrize_input)
    (a,) = inexact("eigh", a)
    matrix("eigh", a, square=True)
    v, w = lax_linalg.eigh(a, lower=lower, symmetrize_input=symmetrize_input)
    return w if eigvals_only else (w, v)


def qr(a, overwrite_a=False, lwork=None, mode="full", pivoting=False, check_finite=True):
    """The QR factorisation of `a` [..., m, n]: mode "full" (Q [..., m, m], R [..., m,
    n]), "economic" (Q [..., m, k], R [..., k, n]), "r" ((R,) as in "full"). Column
    pivoting is not supported."""
    del overwrite_a, lwork, check_finite
    if pivoting:
        raise user_error(ValueError, "qr: pivoting=True is not supported")
    if mode not in ("full", "economic", "r"):
        raise user_error(ValueError, f"qr: mode must be 'full', 'economic' or 'r', got "
                         f"{mode!r}")
    (a,) = inexact("qr", a)
    matrix("qr", a)
    q, r = lax_linalg.qr(a, full_matrices=mode != "economic")
    return (r,) if mode == "r" else (q, r)


def qr_multiply(a, c, mode="right", pivoting=False, conjugate=False, overwrite_a=False,
                overwrite_c=False):
    """(c Q, R) (`mode` "right") or (Q c, R) ("left") for the economic QR of `a`
    [..., m, n], Q [..., m, k] and R [..., k, n], k = min(m, n); `conjugate` uses conj(Q).
    c is [..., p, m] ("right") or [..., k, p] ("left"), or a vector [m] or [k]. Column
    pivoting is not supported."""
    del overwrite_a, overwrite_c
    if pivoting:
        raise user_error(ValueError, "qr_multiply: pivoting=True is not supported")
    if mode not in ("right", "left"):
        raise user_error(ValueError, f"qr_multiply: mode must be 'right' or 'left', got "
                         f"{mode!r}")
    a, c = inexact("qr_multiply", a, c)
    matrix("qr_multiply", a)
    q, r = lax_linalg.qr(a, full_matrices=False)
    if conjugate:
        q = mnp.conj(q)
    m, k = q.shape[-2:]
    want = m if mode == "right" else k
    if c.shape[-1 if mode == "right" or c.ndim == 1 else -2] != want:
        raise user_error(ValueError, f"qr_multiply: c needs {want} "
                         f"{'columns' if mode == 'right' else 'rows'} for a {_s(a)} in "
                         f"mode {mode!r}, got {_s(c)}")
    return (mnp.matmul(c, q) if mode == "right" else mnp.matmul(q, c)), r


def svd(a, full_matrices=True, compute_uv=True, overwrite_a=False, check_finite=True,
        lapack_driver="gesdd"):
    """The SVD (U, s, Vh) of `a` [..., m, n], or s alone; as `mnp.linalg.svd`."""
    del overwrite_a, check_finite, lapack_driver
    return mnp.linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)


def det(a, overwrite_a=False, check_finite=True):
    """The determinant of a square `a` [..., n, n]; as `mnp.linalg.det`."""
    del overwrite_a, check_finite
    return mnp.linalg.det(a)


def inv(a, overwrite_a=False, check_finite=True):
    """The inverse of a square `a` [..., n, n]; as `mnp.linalg.inv`."""
    del overwrite_a, check_finite
    return mnp.linalg.inv(a)
