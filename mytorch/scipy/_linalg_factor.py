"""`mt.scipy.linalg`'s factorisations besides LU, QR, Cholesky, SVD and the
eigendecompositions: polar, RQ, the Hessenberg form and the tridiagonal eigenproblem.

    polar(f32[B,m,n]) -> (u f32[B,m,n], p f32[B,n,n])
    rq(f32[B,m,n]) -> (r f32[B,m,n], q f32[B,n,n])
    hessenberg(f32[B,n,n], calc_q=True) -> (h f32[B,n,n], q f32[B,n,n])
    eigh_tridiagonal(f32[B,n], f32[B,n-1]) -> (w f32[B,n], v f32[B,n,n])

Composed from the lax.linalg primitives (svd, qr, eigh) and elementwise/matmul
operations, so derivatives, vmap and jit follow from theirs.
"""

import numpy as np

from mytorch import numpy as mnp
from mytorch.core import dtypes
from mytorch.core.source_info import user_error
from mytorch.lax import linalg as lax_linalg
from mytorch.numpy._linalg_solvers import inexact, matrix, mH

__all__ = ["polar", "rq", "hessenberg", "eigh_tridiagonal"]


def _s(x):
    return x.aval.str_short()


def polar(a, side="right", *, method="qdwh", eps=None, max_iterations=None):
    """The polar decomposition of `a` [..., m, n]: (u, p) with a = u p (side "right", p
    [..., n, n]) or a = p u (side "left", p [..., m, m]); u [..., m, n] has orthonormal
    columns (rows if n > m) and p is Hermitian positive semidefinite.

    Both methods ("qdwh", JAX's default, and "svd") are computed from the SVD a = U S Vᴴ
    (u = U Vᴴ, p = V S Vᴴ or U S Uᴴ), which is exact; `eps` and `max_iterations` only
    steer JAX's QDWH iteration and are accepted for compatibility.
    """
    del eps, max_iterations
    if side not in ("right", "left"):
        raise user_error(ValueError, f"polar: side must be 'right' or 'left', got {side!r}")
    if method not in ("qdwh", "svd"):
        raise user_error(ValueError, f"polar: method must be 'qdwh' or 'svd', got "
                         f"{method!r}")
    (a,) = inexact("polar", a)
    matrix("polar", a)
    u_svd, s, vh = mnp.linalg.svd(a, full_matrices=False)
    s = s.astype(a.dtype)
    unitary = mnp.matmul(u_svd, vh)
    if side == "right":
        posdef = mnp.matmul(mH(vh) * s[..., None, :], vh)
    else:
        posdef = mnp.matmul(u_svd * s[..., None, :], mH(u_svd))
    return unitary, posdef


def rq(a, overwrite_a=False, lwork=None, mode="full", check_finite=True):
    """The RQ factorisation a = R Q of `a` [..., m, n], k = min(m, n): mode "full" (R
    [..., m, n], Q [..., n, n]), "economic" (R [..., m, k], Q [..., k, n]) or "r" (R alone,
    as in "full", returned bare as SciPy does). R is upper trapezoidal, its diagonal
    aligned with the bottom-right corner (R[i, j] = 0 for j - i < n - m); Q is unitary
    (orthonormal rows).

    With J the exchange matrix (reversed identity), the QR factorisation J aᴴ J = Q₁ R₁
    gives a = (J R₁ᴴ J)(J Q₁ᴴ J), whose factors are the R and Q asked for; its Householder
    steps are LAPACK's xGERQF's mirrored, so the signs match SciPy's.
    """
    del overwrite_a, lwork, check_finite
    if mode not in ("full", "economic", "r"):
        raise user_error(ValueError, f"rq: mode must be 'full', 'economic' or 'r', got "
                         f"{mode!r}")
    (a,) = inexact("rq", a)
    matrix("rq", a)
    both = (-2, -1)
    q1, r1 = lax_linalg.qr(mnp.flip(mH(a), axis=both), full_matrices=mode != "economic")
    r = mnp.flip(mH(r1), axis=both)
    if mode == "r":
        return r
    return r, mnp.flip(mH(q1), axis=both)


def _householder(col, k):
    """LAPACK's elementary reflector (xLARFG) that takes `col` [..., n]'s entries k+1..n-1
    to beta e_{k+1} with a real beta: (tau [...], v [..., n]) with H = I - tau v vᴴ and
    Hᴴ col = beta e_{k+1} on those entries; v[k+1] = 1 and v is zero above k+1. tau = 0
    (H = I) when there is nothing to annihilate."""
    n = col.shape[-1]
    rows = np.arange(n)
    below = mnp.asarray(rows > k + 1)
    x = mnp.where(below, col, 0)
    alpha = col[..., k + 1]
    xnorm2 = mnp.sum(mnp.real(x * mnp.conj(x)), axis=-1)
    alpha2 = mnp.real(alpha * mnp.conj(alpha))
    identity = (xnorm2 == 0) & (mnp.imag(alpha) == 0)
    # the guarded values keep the untaken branch finite so that its derivative is too
    norm = mnp.sqrt(mnp.where(identity, 1, alpha2 + xnorm2))
    beta = mnp.where(mnp.real(alpha) >= 0, -norm, norm).astype(col.dtype)
    denom = mnp.where(identity, 1, alpha - beta)
    tau = mnp.where(identity, 0, (beta - alpha) / mnp.where(identity, 1, beta))
    v = x / denom[..., None] + mnp.asarray(rows == k + 1).astype(col.dtype)
    return tau, v


def hessenberg(a, calc_q=False, overwrite_a=False, check_finite=True):
    """The Hessenberg form of a square `a` [..., n, n]: H zero below the first
    subdiagonal with a = Q H Qᴴ, Q unitary; H, or (H, Q) with `calc_q`.

    Householder reduction as LAPACK's xGEHRD (which SciPy calls): for each column k a
    reflector H_k = I - tau v vᴴ zeroes a[k+2:, k] and makes a[k+1, k] real, and
    a ← H_kᴴ a H_k, Q ← Q H_k; so H matches SciPy's, signs included. Matrices of size 2 or
    less are returned as they are (Q = I), as SciPy.
    """
    del overwrite_a, check_finite
    (a,) = inexact("hessenberg", a)
    matrix("hessenberg", a, square=True)
    n = a.shape[-1]
    q = mnp.broadcast_to(mnp.eye(n, dtype=a.dtype), a.shape)
    h = a
    for k in range(n - 1 if n > 2 else 0):
        tau, v = _householder(h[..., :, k], k)
        tau = tau[..., None, None]
        vh = mnp.conj(v)[..., None, :]
        h = h - mnp.conj(tau) * v[..., :, None] * mnp.matmul(vh, h)
        h = h - tau * mnp.matmul(h, v[..., :, None]) * vh
        q = q - tau * mnp.matmul(q, v[..., :, None]) * vh
    if n > 2:
        h = mnp.triu(h, -1)
    return (h, q) if calc_q else h


def eigh_tridiagonal(d, e, eigvals_only=False, select="a", select_range=None, tol=None,
                     key=None):
    """The eigenvalues w [..., k] (ascending, real) and, unless `eigvals_only`,
    eigenvectors v [..., n, k] (columns) of the Hermitian tridiagonal matrix with diagonal
    `d` [..., n] and superdiagonal `e` [..., n-1] (subdiagonal conj(e); for complex `d`
    its real part is read, as JAX).

    select "a" gives all n eigenvalues; "i" those with indices select_range[0] <= i <=
    select_range[1] (static ints, so k is known). select "v" (eigenvalues in a value
    range) has a data-dependent count and raises. The matrix is formed densely and
    solved by `eigh`, so the result is accurate to the dtype and `tol` (JAX's bisection
    tolerance) and `key` (its inverse-iteration seed) are accepted and not needed.
    """
    del tol, key
    if select == "v":
        raise user_error(ValueError, "eigh_tridiagonal: select='v' (a value range) gives a "
                         "data-dependent number of eigenvalues; use select='a' and mask, "
                         "or select='i' with an index range")
    if select not in ("a", "i"):
        raise user_error(ValueError, f"eigh_tridiagonal: select must be 'a', 'i' or 'v', "
                         f"got {select!r}")
    d, e = inexact("eigh_tridiagonal", d, e)
    if d.ndim < 1 or e.ndim < 1 or e.shape[-1] != max(d.shape[-1] - 1, 0):
        raise user_error(ValueError, f"eigh_tridiagonal: e must be [..., n-1] for d "
                         f"[..., n], got d {_s(d)} and e {_s(e)}")
    n = d.shape[-1]
    if select == "i":
        lo, hi = _index_range(select_range, n)
    else:
        lo, hi = 0, n - 1
    if dtypes.is_complex(d.dtype):
        d = mnp.real(d).astype(d.dtype)
    up = mnp.pad(e, [(0, 0)] * (e.ndim - 1) + [(0, 1)])
    rows, cols = np.arange(n)[:, None], np.arange(n)[None, :]
    t = (d[..., None, :] * mnp.asarray(rows == cols).astype(d.dtype)
         + up[..., :, None] * mnp.asarray(cols == rows + 1).astype(d.dtype)
         + mnp.conj(up)[..., None, :] * mnp.asarray(rows == cols + 1).astype(d.dtype))
    v, w = lax_linalg.eigh(t, symmetrize_input=False)
    w, v = w[..., lo:hi + 1], v[..., :, lo:hi + 1]
    return w if eigvals_only else (w, v)


def _index_range(select_range, n):
    """select_range as static (lo, hi) with 0 <= lo <= hi < n."""
    try:
        lo, hi = (int(i) for i in select_range)
    except (TypeError, ValueError):
        raise user_error(ValueError, f"eigh_tridiagonal: select='i' needs select_range = "
                         f"(lo, hi) of static ints, got {select_range!r}") from None
    if not 0 <= lo <= hi < n:
        raise user_error(ValueError, f"eigh_tridiagonal: select_range must satisfy 0 <= lo "
                         f"<= hi < {n}, got {select_range!r}")
    return lo, hi
