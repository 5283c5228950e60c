"""NumPy kernels of the linear-algebra primitives (mytorch/lax/linalg.py), for float32,
float64, complex64 and complex128 (results keep the operand's dtype; eigenvalues and
singular values take its real dtype).

cholesky, qr, eigh and svd call numpy.linalg (LAPACK), which works on whole stacks of
matrices. NumPy has no triangular solve, LU or tridiagonal solver, so:

- triangular_solve masks a to its triangle (and unit diagonal) and calls
  numpy.linalg.solve; a singular triangle (a zero on the diagonal), which LAPACK's solve
  rejects, is solved by substitution instead, giving the infs/NaNs of a triangular solver.
- lu is Doolittle elimination with partial pivoting (LAPACK getrf's pivots: the largest
  magnitude in the column, |re| + |im| for complex as LAPACK's izamax, the first on ties),
  one Python step per column over the whole stack; a zero pivot column is left unscaled,
  as getrf does.
- tridiagonal_solve is the Thomas algorithm (no pivoting, as cuSPARSE's gtsv2_nopivot):
  one forward and one backward sweep over the rows, vectorised over batch and columns; it
  is exact for the diagonally dominant or positive-definite systems it is meant for.
"""

import numpy as np

from mytorch.backends.numpy import numpy_backend
from mytorch.lax import linalg as la


def _mT(x):
    return np.swapaxes(x, -1, -2)


def _real_dtype(dtype):
    """float32 for complex64, float64 for complex128; real dtypes are their own."""
    return np.finfo(dtype).dtype


@numpy_backend.register(la.cholesky_p)
def _cholesky(x):
    # LAPACK reads one triangle (and the real part of a complex diagonal): make that
    # explicit for NumPy's call, which would otherwise see the upper triangle too
    if np.iscomplexobj(x):
        strict = np.tril(x, -1)
        sym = strict + np.conj(_mT(strict))
        n = x.shape[-1]
        sym[..., np.arange(n), np.arange(n)] = np.real(np.diagonal(x, 0, -2, -1))
    else:
        sym = np.tril(x) + _mT(np.tril(x, -1))
    try:
        return np.linalg.cholesky(sym).astype(x.dtype, copy=False)
    except np.linalg.LinAlgError:
        pass
    # some matrix of the stack is not positive definite: NaNs for those only, as JAX
    flat = sym.reshape(-1, *x.shape[-2:])
    out = np.full_like(flat, np.nan)
    for i, m in enumerate(flat):
        try:
            out[i] = np.linalg.cholesky(m)
        except np.linalg.LinAlgError:
            pass
    return out.reshape(x.shape)


def _substitute(a, b, lower):
    """x with a x = b for triangular a (..., n, n), b (..., n, k), row by row."""
    n = a.shape[-1]
    x = np.zeros(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + b.shape[-2:], b.dtype)
    rows = range(n) if lower else range(n - 1, -1, -1)
    with np.errstate(all="ignore"):
        for i in rows:
            acc = np.einsum("...j,...jk->...k", a[..., i, :], x)
            x[..., i, :] = (b[..., i, :] - acc) / a[..., i, i, None]
    return x


@numpy_backend.register(la.triangular_solve_p)
def _triangular_solve(a, b, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    tri = np.tril(a) if lower else np.triu(a)
    if unit_diagonal:
        n = a.shape[-1]
        tri = tri.copy()
        tri[..., np.arange(n), np.arange(n)] = 1
    if conjugate_a and np.iscomplexobj(tri):
        tri = np.conj(tri)
    if transpose_a:
        tri, lower = _mT(tri), not lower
    # x op(a) = b  <=>  op(a)ᵀ xᵀ = bᵀ
    if not left_side:
        tri, lower, b = _mT(tri), not lower, _mT(b)
    try:
        with np.errstate(under="ignore"):  # NumPy solves float32 in float64, then casts
            x = np.linalg.solve(tri, b)
    except np.linalg.LinAlgError:
        x = _substitute(tri, b, lower)
    if not left_side:
        x = _mT(x)
    return np.ascontiguousarray(x, dtype=b.dtype)


@numpy_backend.register(la.lu_p)
def _lu(x):
    *batch, m, n = x.shape
    k = min(m, n)
    nb = int(np.prod(batch, dtype=np.int64))  # not reshape(-1, ...): m or n may be 0
    a = x.reshape(nb, m, n).copy()
    rows = np.arange(nb)
    pivots = np.zeros((nb, k), np.int32)
    perm = np.tile(np.arange(m, dtype=np.int32), (nb, 1))
    magnitude = (lambda v: np.abs(v.real) + np.abs(v.imag)) if np.iscomplexobj(a) else np.abs
    with np.errstate(all="ignore"):
        for j in range(k):
            p = j + np.argmax(magnitude(a[:, j:, j]), axis=1)
            pivots[:, j] = p
            # swap rows j and p of every matrix (and of the permutation)
            a[rows, j], a[rows, p] = a[rows, p], a[rows, j].copy()
            perm[rows, j], perm[rows, p] = perm[rows, p], perm[rows, j].copy()
            piv = a[:, j, j]
            scale = np.where(piv == 0, 1, piv)
            a[:, j + 1:, j] /= scale[:, None]
            a[:, j + 1:, j + 1:] -= a[:, j + 1:, j, None] * a[:, j, None, j + 1:]
    return [a.reshape(x.shape), pivots.reshape(*batch, k), perm.reshape(*batch, m)]


@numpy_backend.register(la.qr_p)
def _qr(x, *, full_matrices):
    with np.errstate(under="ignore"):  # NumPy factors float32 in float64, then casts
        q, r = np.linalg.qr(x, mode="complete" if full_matrices else "reduced")
    return [q.astype(x.dtype, copy=False), r.astype(x.dtype, copy=False)]


@numpy_backend.register(la.eigh_p)
def _eigh(x, *, lower):
    with np.errstate(under="ignore"):
        w, v = np.linalg.eigh(x, UPLO="L" if lower else "U")
    return [v.astype(x.dtype, copy=False), w.astype(_real_dtype(x.dtype), copy=False)]


@numpy_backend.register(la.svd_p)
def _svd(x, *, full_matrices, compute_uv):
    with np.errstate(under="ignore"):
        if not compute_uv:
            return [np.linalg.svd(x, compute_uv=False).astype(_real_dtype(x.dtype),
                                                              copy=False)]
        u, s, vh = np.linalg.svd(x, full_matrices=full_matrices)
    return [s.astype(_real_dtype(x.dtype), copy=False), u.astype(x.dtype, copy=False),
            vh.astype(x.dtype, copy=False)]


@numpy_backend.register(la.tridiagonal_solve_p)
def _tridiagonal_solve(dl, d, du, b, *, perturb_singular=False):
    # Gaussian elimination with partial pivoting, as LAPACK's gtsv: at step i the row with
    # the larger entry in column i (row i or i + 1) becomes the pivot row, and a swap fills
    # a second super-diagonal u2. Each matrix of a batch takes its own branch.
    m = d.shape[-1]
    mag = (lambda v: np.abs(v.real) + np.abs(v.imag)) if np.iscomplexobj(d) else np.abs
    u0 = np.array(d, copy=True)  # U's diagonal
    u1 = np.array(du, copy=True)  # U's first super-diagonal
    u2 = np.zeros_like(d)  # U's second super-diagonal (nonzero after swaps)
    low = np.array(dl, copy=True)  # the sub-diagonal entry still to eliminate
    y = np.array(b, copy=True)
    with np.errstate(all="ignore"):
        swapped = False  # whether u2 has entries (else back substitution skips it)
        for i in range(m - 1):
            swap = mag(u0[..., i]) < mag(low[..., i + 1])
            if not swap.any():  # the common case (diagonally dominant rows): no where's
                f = low[..., i + 1] / u0[..., i]
                f = np.where(low[..., i + 1] == 0, 0, f)  # 0 / 0 where the column is 0
                u0[..., i + 1] -= f * u1[..., i]
                y[..., i + 1, :] -= f[..., None] * y[..., i, :]
                continue
            swapped = True
            keep = ~swap
            # no swap: row i + 1 -= f row i, f = low / u0 (0 where low is 0: nothing to do)
            f_keep = np.where(low[..., i + 1] == 0, 0, low[..., i + 1] / np.where(
                keep, u0[..., i], 1))
            # swap: row i + 1 becomes row i - f row i + 1, f = u0 / low
            f_swap = u0[..., i] / np.where(swap, low[..., i + 1], 1)
            nxt1 = u1[..., i + 1] if i + 1 < m - 1 else np.zeros_like(u1[..., i])
            new_d0 = np.where(swap, low[..., i + 1], u0[..., i])
            new_u1 = np.where(swap, u0[..., i + 1], u1[..., i])
            new_u2 = np.where(swap, nxt1, 0)
            new_next_d = np.where(swap, u1[..., i] - f_swap * u0[..., i + 1],
                                  u0[..., i + 1] - f_keep * u1[..., i])
            new_next_u1 = np.where(swap, -f_swap * nxt1, nxt1)
            yi, yn = y[..., i, :].copy(), y[..., i + 1, :].copy()
            y[..., i, :] = np.where(swap[..., None], yn, yi)
            y[..., i + 1, :] = np.where(swap[..., None], yi - f_swap[..., None] * yn,
                                        yn - f_keep[..., None] * yi)
            u0[..., i], u1[..., i], u2[..., i] = new_d0, new_u1, new_u2
            u0[..., i + 1] = new_next_d
            if i + 1 < m - 1:
                u1[..., i + 1] = new_next_u1
        if perturb_singular:
            # as LAPACK's lagts (job -1): pivots smaller than tol = eps max|U| (eps where U
            # is 0) become tol with their sign, so a singular system gives large finite x
            eps = np.finfo(d.dtype).eps
            big = np.max(np.concatenate([mag(u0), mag(u1), mag(u2)], axis=-1), axis=-1,
                         initial=0)
            tol = np.where(big == 0, 1, big) * eps
            phase = np.where(u0 == 0, 1, u0 / np.where(u0 == 0, 1, mag(u0)))
            u0 = np.where(mag(u0) < tol[..., None], phase * tol[..., None], u0)
        # back substitution through U (three diagonals)
        for i in range(m - 1, -1, -1):
            acc = y[..., i, :]
            if i + 1 < m:
                acc = acc - u1[..., i, None] * y[..., i + 1, :]
            if swapped and i + 2 < m:
                acc = acc - u2[..., i, None] * y[..., i + 2, :]
            y[..., i, :] = acc / u0[..., i, None]
    return y
