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

The kernels are written for any array module (`xp=`, NumPy by default) and the GPU backend
registers them with CuPy's (backends/cupy/kernels_linalg.py). cholesky and triangular_solve
take their factor/solve step as a parameter (`cholesky_with`, `triangular_solve_with`):
NumPy's raises on a singular or indefinite stack, cuSOLVER's and cuBLAS's do not.
"""

import math

import numpy as np

from mytorch.backends.numpy import numpy_backend
from mytorch.lax import linalg as la


def _mT(x):
    return x.swapaxes(-1, -2)


def _real_dtype(dtype):
    """float32 for complex64, float64 for complex128; real dtypes are their own."""
    return np.finfo(dtype).dtype


def _set_diagonal(xp, x, values):
    ar = xp.arange(x.shape[-1])
    x[..., ar, ar] = values


def factor_stack(xp, sym):
    """The Cholesky factors of the NumPy stack `sym`, NaNs for the matrices that are not
    positive definite (as JAX): NumPy raises for the whole stack, so then the stack is
    factored matrix by matrix."""
    try:
        return xp.linalg.cholesky(sym)
    except xp.linalg.LinAlgError:
        pass
    flat = sym.reshape(-1, *sym.shape[-2:])
    out = xp.full_like(flat, np.nan)
    for i, m in enumerate(flat):
        try:
            out[i] = xp.linalg.cholesky(m)
        except xp.linalg.LinAlgError:
            pass
    return out.reshape(sym.shape)


def cholesky_with(factor):
    """The cholesky kernel (for any array module: `xp=`) whose factorisation of the
    symmetrised stack is `factor(xp, sym)` (NaNs for matrices not positive definite)."""

    def cholesky(x, xp=np):
        # LAPACK reads one triangle (and the real part of a complex diagonal): make that
        # explicit for the library's call, which would otherwise see the upper triangle too
        if x.dtype.kind == "c":
            strict = xp.tril(x, -1)
            sym = strict + xp.conj(_mT(strict))
            _set_diagonal(xp, sym, xp.real(xp.diagonal(x, 0, -2, -1)))
        else:
            sym = xp.tril(x) + _mT(xp.tril(x, -1))
        if sym.size == 0:
            return sym.astype(x.dtype)
        return factor(xp, sym).astype(x.dtype, copy=False)

    return cholesky


_cholesky = numpy_backend.register(la.cholesky_p)(cholesky_with(factor_stack))


def substitute(xp, a, b, lower):
    """x with a x = b for triangular a (..., n, n), b (..., n, k), row by row."""
    n = a.shape[-1]
    x = xp.zeros(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + b.shape[-2:], b.dtype)
    rows = range(n) if lower else range(n - 1, -1, -1)
    with np.errstate(all="ignore"):
        for i in rows:
            acc = xp.einsum("...j,...jk->...k", a[..., i, :], x)
            x[..., i, :] = (b[..., i, :] - acc) / a[..., i, i, None]
    return x


def solve_or_substitute(xp, tri, b, lower):
    """x with tri x = b (NumPy): LAPACK's solve, substitution where it rejects a singular
    triangle (a zero on the diagonal), giving a triangular solver's infs/NaNs."""
    try:
        with np.errstate(under="ignore"):  # NumPy solves float32 in float64, then casts
            return xp.linalg.solve(tri, b)
    except xp.linalg.LinAlgError:
        return substitute(xp, tri, b, lower)


def triangular_solve_with(solve):
    """The triangular_solve kernel (for any array module: `xp=`) whose solve of the masked
    triangle is `solve(xp, tri, b, lower)` (b non-empty)."""

    def triangular_solve(a, b, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal,
                         xp=np):
        tri = xp.tril(a) if lower else xp.triu(a)
        if unit_diagonal:
            tri = tri.copy()
            _set_diagonal(xp, tri, 1)
        if conjugate_a and tri.dtype.kind == "c":
            tri = xp.conj(tri)
        if transpose_a:
            tri, lower = _mT(tri), not lower
        # x op(a) = b  <=>  op(a)ᵀ xᵀ = bᵀ
        if not left_side:
            tri, lower, b = _mT(tri), not lower, _mT(b)
        x = xp.zeros(b.shape, b.dtype) if b.size == 0 else solve(xp, tri, b, lower)
        if not left_side:
            x = _mT(x)
        return xp.ascontiguousarray(x, dtype=b.dtype)

    return triangular_solve


_triangular_solve = numpy_backend.register(la.triangular_solve_p)(
    triangular_solve_with(solve_or_substitute))


def _magnitude(xp, dtype):
    """|v| for pivoting: |re| + |im| for complex, as LAPACK's izamax."""
    if dtype.kind == "c":
        return lambda v: xp.abs(v.real) + xp.abs(v.imag)
    return xp.abs


@numpy_backend.register(la.lu_p)
def _lu(x, xp=np):
    *batch, m, n = x.shape
    k = min(m, n)
    nb = math.prod(batch)  # not reshape(-1, ...): m or n may be 0
    a = x.reshape(nb, m, n).copy()
    rows = xp.arange(nb)
    pivots = xp.zeros((nb, k), np.int32)
    perm = xp.tile(xp.arange(m, dtype=np.int32), (nb, 1))
    magnitude = _magnitude(xp, a.dtype)
    with np.errstate(all="ignore"):
        for j in range(k):
            p = j + xp.argmax(magnitude(a[:, j:, j]), axis=1)
            pivots[:, j] = p
            # swap rows j and p of every matrix (and of the permutation)
            a[rows, j], a[rows, p] = a[rows, p], a[rows, j].copy()
            perm[rows, j], perm[rows, p] = perm[rows, p], perm[rows, j].copy()
            piv = a[:, j, j]
            scale = xp.where(piv == 0, 1, piv)
            a[:, j + 1:, j] /= scale[:, None]
            a[:, j + 1:, j + 1:] -= a[:, j + 1:, j, None] * a[:, j, None, j + 1:]
    return [a.reshape(x.shape), pivots.reshape(*batch, k), perm.reshape(*batch, m)]


@numpy_backend.register(la.qr_p)
def _qr(x, *, full_matrices, xp=np):
    with np.errstate(under="ignore"):  # NumPy factors float32 in float64, then casts
        q, r = xp.linalg.qr(x, mode="complete" if full_matrices else "reduced")
    return [q.astype(x.dtype, copy=False), r.astype(x.dtype, copy=False)]


@numpy_backend.register(la.eigh_p)
def _eigh(x, *, lower, xp=np):
    with np.errstate(under="ignore"):
        w, v = xp.linalg.eigh(x, UPLO="L" if lower else "U")
    return [v.astype(x.dtype, copy=False), w.astype(_real_dtype(x.dtype), copy=False)]


@numpy_backend.register(la.svd_p)
def _svd(x, *, full_matrices, compute_uv, xp=np):
    with np.errstate(under="ignore"):
        if not compute_uv:
            return [xp.linalg.svd(x, compute_uv=False).astype(_real_dtype(x.dtype),
                                                              copy=False)]
        u, s, vh = xp.linalg.svd(x, full_matrices=full_matrices)
    return [s.astype(_real_dtype(x.dtype), copy=False), u.astype(x.dtype, copy=False),
            vh.astype(x.dtype, copy=False)]


@numpy_backend.register(la.tridiagonal_solve_p)
def _tridiagonal_solve(dl, d, du, b, *, perturb_singular=False, xp=np):
    # Gaussian elimination with partial pivoting, as LAPACK's gtsv: at step i the row with
    # the larger entry in column i (row i or i + 1) becomes the pivot row, and a swap fills
    # a second super-diagonal u2. Each matrix of a batch takes its own branch.
    m = d.shape[-1]
    mag = _magnitude(xp, d.dtype)
    u0 = d.copy()  # U's diagonal
    u1 = du.copy()  # U's first super-diagonal
    u2 = xp.zeros_like(d)  # U's second super-diagonal (nonzero after swaps)
    low = dl.copy()  # the sub-diagonal entry still to eliminate
    y = b.copy()
    with np.errstate(all="ignore"):
        swapped = False  # whether u2 has entries (else back substitution skips it)
        for i in range(m - 1):
            swap = mag(u0[..., i]) < mag(low[..., i + 1])
            if not swap.any():  # the common case (diagonally dominant rows): no where's
                f = low[..., i + 1] / u0[..., i]
                f = xp.where(low[..., i + 1] == 0, 0, f)  # 0 / 0 where the column is 0
                u0[..., i + 1] -= f * u1[..., i]
                y[..., i + 1, :] -= f[..., None] * y[..., i, :]
                continue
            swapped = True
            keep = ~swap
            # no swap: row i + 1 -= f row i, f = low / u0 (0 where low is 0: nothing to do)
            f_keep = xp.where(low[..., i + 1] == 0, 0, low[..., i + 1] / xp.where(
                keep, u0[..., i], 1))
            # swap: row i + 1 becomes row i - f row i + 1, f = u0 / low
            f_swap = u0[..., i] / xp.where(swap, low[..., i + 1], 1)
            nxt1 = u1[..., i + 1] if i + 1 < m - 1 else xp.zeros_like(u1[..., i])
            new_d0 = xp.where(swap, low[..., i + 1], u0[..., i])
            new_u1 = xp.where(swap, u0[..., i + 1], u1[..., i])
            new_u2 = xp.where(swap, nxt1, 0)
            new_next_d = xp.where(swap, u1[..., i] - f_swap * u0[..., i + 1],
                                  u0[..., i + 1] - f_keep * u1[..., i])
            new_next_u1 = xp.where(swap, -f_swap * nxt1, nxt1)
            yi, yn = y[..., i, :].copy(), y[..., i + 1, :].copy()
            y[..., i, :] = xp.where(swap[..., None], yn, yi)
            y[..., i + 1, :] = xp.where(swap[..., None], yi - f_swap[..., None] * yn,
                                        yn - f_keep[..., None] * yi)
            u0[..., i], u1[..., i], u2[..., i] = new_d0, new_u1, new_u2
            u0[..., i + 1] = new_next_d
            if i + 1 < m - 1:
                u1[..., i + 1] = new_next_u1
        if perturb_singular and m:
            # as LAPACK's lagts (job -1): pivots smaller than tol = eps max|U| (eps where U
            # is 0) become tol with their sign, so a singular system gives large finite x
            eps = np.finfo(d.dtype).eps
            big = xp.max(xp.concatenate([mag(u0), mag(u1), mag(u2)], axis=-1), axis=-1)
            tol = xp.where(big == 0, 1, big) * eps
            phase = xp.where(u0 == 0, 1, u0 / xp.where(u0 == 0, 1, mag(u0)))
            u0 = xp.where(mag(u0) < tol[..., None], phase * tol[..., None], u0)
        # back substitution through U (three diagonals)
        for i in range(m - 1, -1, -1):
            acc = y[..., i, :]
            if i + 1 < m:
                acc = acc - u1[..., i, None] * y[..., i + 1, :]
            if swapped and i + 2 < m:
                acc = acc - u2[..., i, None] * y[..., i + 2, :]
            y[..., i, :] = acc / u0[..., i, None]
    return y
