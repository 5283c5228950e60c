"""GPU eager kernels of the linear-algebra primitives (mytorch/lax/linalg.py and
linalg_eig.py), with backends/numpy/linalg.py's semantics: float32, float64, complex64 and
complex128; results keep the operand's dtype, eigenvalues and singular values take its real
dtype.

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
  largest |re| + |im|, first on ties), one step per column over the whole stack, written for
  any array module: O(min(m, n)) small kernel launches.
- tridiagonal_solve: the NumPy kernel's Gaussian elimination with partial pivoting (LAPACK
  gtsv's), vectorised over the batch and the columns, for any array module: O(m) steps
  (each reads one flag to the host to skip the pivoting branch).
- eig: HOST FALLBACK (`kernels_common.on_host`): CuPy's `eig` gives no left
  eigenvectors and its NaN handling for non-finite matrices is not LAPACK's, so the NumPy
  kernel runs on host copies and the results are copied back.
"""

import math

import numpy as np

from mytorch.backends.cupy.kernels import register, xp_of
from mytorch.backends.cupy.kernels_common import on_host, real_dtype
from mytorch.backends.numpy.linalg_eig import _eig
from mytorch.lax import linalg as la
from mytorch.lax.linalg_eig import eig_p


def _mT(x):
    return x.swapaxes(-1, -2)


def _set_diagonal(xp, x, values):
    n = x.shape[-1]
    ar = xp.arange(n)
    x[..., ar, ar] = values


# ---- cholesky ----------------------------------------------------------------------------
def _factor_stack(xp, sym):
    """The Cholesky factors of the stack `sym`, NaNs for matrices not positive definite."""
    if xp is np:  # NumPy raises for the whole stack: factor matrix by matrix then
        try:
            return xp.linalg.cholesky(sym)
        except xp.linalg.LinAlgError:
            pass
        flat = sym.reshape(-1, *sym.shape[-2:])
        out = xp.full_like(flat, np.nan)
        for i in range(flat.shape[0]):
            try:
                out[i] = xp.linalg.cholesky(flat[i])
            except xp.linalg.LinAlgError:
                pass
        return out.reshape(sym.shape)
    factor = xp.linalg.cholesky(sym)
    return nan_where_not_positive(xp, factor)


def nan_where_not_positive(xp, factor):
    """`factor` (..., n, n) with NaNs for each matrix whose diagonal is not all > 0 (where
    potrf stopped: a pivot <= 0 or NaN)."""
    if factor.size == 0:
        return factor
    diag = xp.real(xp.diagonal(factor, 0, -2, -1))
    bad = ~(diag > 0).all(axis=-1)
    return xp.where(bad[..., None, None], xp.asarray(np.nan, dtype=factor.dtype), factor)


@register(la.cholesky_p)
def _cholesky(x):
    xp = xp_of(x)
    # LAPACK reads one triangle (and the real part of a complex diagonal)
    if x.dtype.kind == "c":
        strict = xp.tril(x, -1)
        sym = strict + xp.conj(_mT(strict))
        _set_diagonal(xp, sym, xp.real(xp.diagonal(x, 0, -2, -1)))
    else:
        sym = xp.tril(x) + _mT(xp.tril(x, -1))
    if sym.size == 0:
        return sym.astype(x.dtype)
    return _factor_stack(xp, sym).astype(x.dtype, copy=False)


# ---- triangular_solve --------------------------------------------------------------------
def _substitute(xp, a, b, lower):
    """x with a x = b for triangular a (..., n, n), b (..., n, k), row by row."""
    n = a.shape[-1]
    x = xp.zeros(b.shape, b.dtype)
    rows = range(n) if lower else range(n - 1, -1, -1)
    with np.errstate(all="ignore"):
        for i in rows:
            acc = xp.einsum("...j,...jk->...k", a[..., i, :], x)
            x[..., i, :] = (b[..., i, :] - acc) / a[..., i, i, None]
    return x


def _solve_triangular(xp, tri, b, lower):
    if xp is np:  # the NumPy kernel's way: LAPACK's solve, substitution when singular
        try:
            with np.errstate(under="ignore"):
                return xp.linalg.solve(tri, b)
        except xp.linalg.LinAlgError:
            return _substitute(xp, tri, b, lower)
    from cupyx.scipy.linalg import solve_triangular

    return solve_triangular(xp.ascontiguousarray(tri), xp.ascontiguousarray(b), lower=lower)


@register(la.triangular_solve_p)
def _triangular_solve(a, b, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    xp = xp_of(a, b)
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
    if b.size == 0:
        x = xp.zeros(b.shape, b.dtype)
    else:
        x = _solve_triangular(xp, tri, b, lower)
    if not left_side:
        x = _mT(x)
    return xp.ascontiguousarray(x, dtype=b.dtype)


# ---- lu ----------------------------------------------------------------------------------
@register(la.lu_p)
def _lu(x):
    xp = xp_of(x)
    *batch, m, n = x.shape
    k = min(m, n)
    nb = math.prod(batch)
    a = x.reshape(nb, m, n).copy()
    rows = xp.arange(nb)
    pivots = xp.zeros((nb, k), np.int32)
    perm = xp.tile(xp.arange(m, dtype=np.int32), (nb, 1))
    if a.dtype.kind == "c":
        def magnitude(v):
            return xp.abs(v.real) + xp.abs(v.imag)
    else:
        magnitude = xp.abs
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


# ---- qr, eigh, svd -----------------------------------------------------------------------
@register(la.qr_p)
def _qr(x, *, full_matrices):
    xp = xp_of(x)
    with np.errstate(under="ignore"):
        q, r = xp.linalg.qr(x, mode="complete" if full_matrices else "reduced")
    return [q.astype(x.dtype, copy=False), r.astype(x.dtype, copy=False)]


@register(la.eigh_p)
def _eigh(x, *, lower):
    xp = xp_of(x)
    with np.errstate(under="ignore"):
        w, v = xp.linalg.eigh(x, UPLO="L" if lower else "U")
    return [v.astype(x.dtype, copy=False), w.astype(real_dtype(x.dtype), copy=False)]


@register(la.svd_p)
def _svd(x, *, full_matrices, compute_uv):
    xp = xp_of(x)
    with np.errstate(under="ignore"):
        if not compute_uv:
            s = xp.linalg.svd(x, compute_uv=False)
            return [s.astype(real_dtype(x.dtype), copy=False)]
        u, s, vh = xp.linalg.svd(x, full_matrices=full_matrices)
    return [s.astype(real_dtype(x.dtype), copy=False), u.astype(x.dtype, copy=False),
            vh.astype(x.dtype, copy=False)]


# ---- tridiagonal_solve ---------------------------------------------------------------------
@register(la.tridiagonal_solve_p)
def _tridiagonal_solve(dl, d, du, b, *, perturb_singular=False):
    # Gaussian elimination with partial pivoting, as LAPACK's gtsv (backends/numpy/linalg.py
    # explains the steps): at step i the row with the larger entry in column i becomes the
    # pivot row, and a swap fills a second super-diagonal u2
    xp = xp_of(dl, d, du, b)
    m = d.shape[-1]
    if d.dtype.kind == "c":
        def mag(v):
            return xp.abs(v.real) + xp.abs(v.imag)
    else:
        mag = xp.abs
    u0, u1, low, y = d.copy(), du.copy(), dl.copy(), b.copy()
    u2 = xp.zeros_like(d)
    with np.errstate(all="ignore"):
        swapped = False
        for i in range(m - 1):
            swap = mag(u0[..., i]) < mag(low[..., i + 1])
            if not bool(swap.any()):  # the common case: no where's
                f = low[..., i + 1] / u0[..., i]
                f = xp.where(low[..., i + 1] == 0, 0, f)
                u0[..., i + 1] -= f * u1[..., i]
                y[..., i + 1, :] -= f[..., None] * y[..., i, :]
                continue
            swapped = True
            keep = ~swap
            f_keep = xp.where(low[..., i + 1] == 0, 0, low[..., i + 1] / xp.where(
                keep, u0[..., i], 1))
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
            # LAPACK lagts (job -1): pivots below tol = eps max|U| become tol with their sign
            eps = np.finfo(d.dtype).eps
            big = xp.max(xp.concatenate([mag(u0), mag(u1), mag(u2)], axis=-1), axis=-1)
            tol = xp.where(big == 0, 1, big) * eps
            phase = xp.where(u0 == 0, 1, u0 / xp.where(u0 == 0, 1, mag(u0)))
            u0 = xp.where(mag(u0) < tol[..., None], phase * tol[..., None], u0)
        for i in range(m - 1, -1, -1):  # back substitution through U (three diagonals)
            acc = y[..., i, :]
            if i + 1 < m:
                acc = acc - u1[..., i, None] * y[..., i + 1, :]
            if swapped and i + 2 < m:
                acc = acc - u2[..., i, None] * y[..., i + 2, :]
            y[..., i, :] = acc / u0[..., i, None]
    return y


# ---- eig: on the host --------------------------------------------------------------------
register(eig_p)(on_host(_eig))
