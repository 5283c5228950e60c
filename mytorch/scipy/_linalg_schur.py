"""`mt.scipy.linalg`'s Schur decomposition, its real-to-complex conversion, and general
matrix functions by the Schur-Parlett method.

    schur(f32[B,n,n]) -> (t f32[B,n,n], z f32[B,n,n])        a = z t zᴴ
    rsf2csf(f32[B,n,n], f32[B,n,n]) -> (t c64[B,n,n], z c64[B,n,n])
    funm(f32[B,n,n], func) -> c64[B,n,n]

The Schur form comes from the Hessenberg form by the shifted QR algorithm with
deflation from the bottom (Golub and Van Loan, Matrix Computations, 7.5): complex
matrices take Wilkinson single shifts, real ones Francis double shifts in real
arithmetic, each step an explicit QR factorisation (the `qr` primitive) of the shifted
leading block, applied to the whole matrix as a unitary similarity. Isolated 2 × 2 blocks
of the real form are standardised as LAPACK's xLANV2 does (real eigenvalues split, a
complex pair with equal diagonal entries). The loop is a `lax.while_loop` over
deflations, so jit and vmap work. The Schur factors are not unique, so schur has no
derivative (as JAX's: differentiating it raises); funm has a rule of its own.
"""

import numpy as np

from mytorch import lax
from mytorch import numpy as mnp
from mytorch.core import dtypes
from mytorch.core.source_info import user_error
from mytorch.custom_derivatives import custom_jvp
from mytorch.lax import linalg as lax_linalg
from mytorch.numpy._linalg_solvers import broadcast_batch, inexact, matrix, mH
from mytorch.scipy._linalg_factor import hessenberg

__all__ = ["schur", "rsf2csf", "funm"]

# LAPACK's xLAHQR allows 30 iterations per eigenvalue (at least 10 n in all); an
# exceptional shift every 10 iterations breaks the cycles that plain shifts can enter
_ITERATIONS_PER_EIGENVALUE = 30
_EXCEPTIONAL_EVERY = 10


def _s(x):
    return x.aval.str_short()


def _at(n, i, j):
    """The n × n mask of entry (i, j) (i, j static or traced ints)."""
    rows, cols = np.arange(n)[:, None], np.arange(n)[None, :]
    return mnp.asarray(rows == i) & mnp.asarray(cols == j)


def _givens(n, i, cs, sn, dtype):
    """The n × n identity with [[cs, -sn], [sn, cs]] at rows and columns i, i+1."""
    eye = mnp.eye(n, dtype=dtype)
    g = mnp.where(_at(n, i, i) | _at(n, i + 1, i + 1), cs, eye)
    g = mnp.where(_at(n, i, i + 1), -sn, g)
    return mnp.where(_at(n, i + 1, i), sn, g)


def _sign(x):
    """Fortran's SIGN(1, x): +1 for x >= 0."""
    return mnp.where(x >= 0, 1.0, -1.0).astype(x.dtype)


def _standardize(a, b, c, d, eps):
    """LAPACK's xLANV2: the rotation (cs, sn) and the standardised real 2 × 2 block
    (a, b, c, d) = Gᵀ [[a, b], [c, d]] G, G = [[cs, -sn], [sn, cs]]: upper triangular
    when the eigenvalues are real, else with a = d and b c < 0."""
    one, zero = mnp.ones_like(a), mnp.zeros_like(a)

    def safe(x):
        return mnp.where(x == 0, one, x)

    # general case, real eigenvalues: a rotation that makes c = 0
    temp = a - d
    p = temp / 2
    bcmax = mnp.maximum(mnp.abs(b), mnp.abs(c))
    bcmis = mnp.minimum(mnp.abs(b), mnp.abs(c)) * _sign(b) * _sign(c)
    scale = mnp.maximum(mnp.abs(p), bcmax)
    z = p / safe(scale) * p + bcmax / safe(scale) * bcmis
    real_eigs = z >= 4 * eps
    zr = p + _sign(p) * mnp.sqrt(scale) * mnp.sqrt(mnp.where(real_eigs, z, one))
    tau = safe(mnp.hypot(c, zr))
    r_vals = (d + zr, b - c, zero, d - bcmax / safe(zr) * bcmis, zr / tau, c / tau)
    # general case, complex (or nearly equal) eigenvalues: make the diagonal equal
    sigma = b + c
    tau = safe(mnp.hypot(sigma, temp))
    cs = mnp.sqrt((1 + mnp.abs(sigma) / tau) / 2)
    sn = -(p / (tau * cs)) * _sign(sigma)
    aa, bb = a * cs + b * sn, -a * sn + b * cs
    cc, dd = c * cs + d * sn, -c * sn + d * cs
    b2, c2 = bb * cs + dd * sn, -aa * sn + cc * cs
    mid = ((aa * cs + cc * sn) + (-bb * sn + dd * cs)) / 2
    # ... whose eigenvalues may still turn out real (b2, c2 of one sign): split them
    sab, sac = mnp.sqrt(mnp.abs(b2)), mnp.sqrt(mnp.abs(c2))
    pp = _sign(c2) * sab * sac
    tau1 = 1 / mnp.sqrt(safe(mnp.abs(b2 + c2)))
    cs1, sn1 = sab * tau1, sac * tau1
    split = (c2 != 0) & (b2 != 0) & (_sign(b2) == _sign(c2))
    b_zero = (c2 != 0) & (b2 == 0)
    c_vals = (
        mnp.where(split, mid + pp, mid),
        mnp.where(split, b2 - c2, mnp.where(b_zero, -c2, b2)),
        mnp.where(split | b_zero, zero, c2),
        mnp.where(split, mid - pp, mid),
        mnp.where(split, cs * cs1 - sn * sn1, mnp.where(b_zero, -sn, cs)),
        mnp.where(split, cs * sn1 + sn * cs1, mnp.where(b_zero, cs, sn)),
    )
    general = tuple(mnp.where(real_eigs, r, cv) for r, cv in zip(r_vals, c_vals))
    # special cases: already triangular, lower triangular (swap), already standard
    keep = (c == 0) | ((temp == 0) & (_sign(b) != _sign(c)))
    swap = ~keep & (b == 0)
    ident = (a, b, c, d, one, zero)
    swapped = (d, -c, zero, a, zero, one)
    return tuple(mnp.where(keep, i, mnp.where(swap, s, g))
                 for i, s, g in zip(ident, swapped, general))


def _schur_2d(a, real):
    """(t, z, converged) for one square matrix: the real (quasi-triangular) Schur form if
    `real`, else the complex (triangular) one of a complex `a`."""
    n = a.shape[-1]
    dtype = a.dtype
    eps = float(dtypes.finfo(dtypes.real_dtype(dtype)).eps)
    tiny = float(dtypes.finfo(dtypes.real_dtype(dtype)).tiny)
    rows, cols = np.arange(n)[:, None], np.arange(n)[None, :]
    eye = mnp.eye(n, dtype=dtype)
    below = mnp.asarray(rows > cols + 1)
    h, z = hessenberg(a, calc_q=True)
    fro = mnp.sqrt(mnp.sum(mnp.real(h * mnp.conj(h))))

    def negligible(h, i):
        """Whether the subdiagonal entry h[i, i-1] (i >= 1) is negligible."""
        i = mnp.maximum(i, 1)
        tst = mnp.abs(h[i, i]) + mnp.abs(h[i - 1, i - 1])
        tst = mnp.where(tst == 0, fro, tst)
        return mnp.abs(h[i, i - 1]) <= mnp.maximum(eps * tst, tiny)

    def qr_step(h, z, hi, its):
        """One shifted QR step on the leading block h[:hi+1, :hi+1]."""
        a_, b_ = h[hi - 1, hi - 1], h[hi - 1, hi]
        c_, d_ = h[hi, hi - 1], h[hi, hi]
        exceptional = (its % _EXCEPTIONAL_EVERY) == _EXCEPTIONAL_EVERY - 1
        if real:
            s = mnp.abs(c_) + mnp.abs(h[mnp.maximum(hi - 1, 1), mnp.maximum(hi - 2, 0)])
            h11 = 0.75 * s + d_
            trace = mnp.where(exceptional, 2 * h11, a_ + d_)
            det = mnp.where(exceptional, h11 * h11 + 0.4375 * s * s, a_ * d_ - b_ * c_)
            shifted = mnp.matmul(h, h) - trace * h + det * eye
        else:
            p = (a_ - d_) / 2
            disc = mnp.sqrt(p * p + b_ * c_)
            mu = d_ + mnp.where(mnp.abs(p + disc) < mnp.abs(p - disc), p + disc, p - disc)
            mu = mnp.where(exceptional, d_ + 0.75 * mnp.abs(c_), mu)
            shifted = h - mu * eye
        inside = mnp.asarray(rows <= hi) & mnp.asarray(cols <= hi)
        q, _ = lax_linalg.qr(mnp.where(inside, shifted, eye))
        q = mnp.where(inside, q, eye)
        h = mnp.where(below, 0, mnp.matmul(mH(q), mnp.matmul(h, q)))
        return h, mnp.matmul(z, q)

    def zero_sub(h, i):
        return mnp.where(mnp.asarray(rows == cols + 1) & (mnp.asarray(rows) == i), 0, h)

    def standardize(h, z, hi):
        """Standardise the isolated 2 × 2 block at rows and columns hi-1, hi."""
        i = hi - 1
        a_, b_, c_, d_ = h[i, i], h[i, i + 1], h[i + 1, i], h[i + 1, i + 1]
        a_, b_, c_, d_, cs, sn = _standardize(a_, b_, c_, d_, eps)
        g = _givens(n, i, cs, sn, dtype)
        h = mnp.matmul(mH(g), mnp.matmul(h, g))
        for r, c, v in ((0, 0, a_), (0, 1, b_), (1, 0, c_), (1, 1, d_)):
            h = mnp.where(_at(n, i + r, i + c), v, h)
        return zero_sub(h, i), mnp.matmul(z, g)

    def unfinished(carry):
        _, _, hi, _, total = carry
        return (hi > 0) & (total < _ITERATIONS_PER_EIGENVALUE * max(n, 10))

    def body(carry):
        h, z, hi, its, total = carry
        one_off = negligible(h, hi)
        if real:
            two_off = ~one_off & ((hi == 1) | negligible(h, hi - 1))
        else:
            two_off = mnp.asarray(False)
        stepped_h, stepped_z = qr_step(h, z, hi, its)
        std_h, std_z = standardize(h, z, hi) if real else (h, z)
        h = mnp.where(one_off, zero_sub(h, hi), mnp.where(two_off, std_h, stepped_h))
        z = mnp.where(one_off, z, mnp.where(two_off, std_z, stepped_z))
        deflated = one_off | two_off
        hi = hi - mnp.where(one_off, 1, mnp.where(two_off, 2, 0))
        its = mnp.where(deflated, 0, its + 1)
        return h, z, hi, its, total + 1

    start = (h, z, mnp.asarray(n - 1, dtype=mnp.int32), mnp.asarray(0, dtype=mnp.int32),
             mnp.asarray(0, dtype=mnp.int32))
    h, z, hi, _, _ = lax.while_loop(unfinished, body, start)
    # the standardising rotations leave roundoff below the subdiagonal
    return mnp.where(below, 0, h), z, hi <= 0


def _map_matrices(f, x, n_out):
    """f over the matrices of x [..., n, n] (lax.map over the flattened batch)."""
    flat = x.reshape((-1,) + x.shape[-2:])
    out = (tuple(y[None] for y in f(flat[0])) if flat.shape[0] == 1
           else lax.map(f, flat))
    return tuple(y.reshape(x.shape[:-2] + y.shape[1:]) for y in out[:n_out])


@custom_jvp
def _schur(a):
    def one(x):
        t, z, ok = _schur_2d(x, not dtypes.is_complex(a.dtype))
        return mnp.where(ok, t, mnp.nan), mnp.where(ok, z, mnp.nan)

    return _map_matrices(one, a, 2)


@_schur.defjvp
def _schur_jvp(primals, tangents):
    del primals, tangents
    raise user_error(TypeError, "schur: not differentiable (the Schur form is not unique, "
                     "as in JAX); differentiate a function of it that is unique, such as "
                     "sqrtm or funm, which have rules of their own")


def schur(a, output="real"):
    """The Schur decomposition a = z t zᴴ of a square `a` [..., n, n]: z unitary, t upper
    triangular (output "complex") or, for real `a` with output "real", real
    quasi-upper-triangular with standardised 2 × 2 blocks for complex eigenvalue pairs
    (as LAPACK's); complex `a` always gives the complex form. NaNs where the QR
    iteration does not converge. Returns (t, z); the order of the eigenvalues along t's
    diagonal is the algorithm's, as in SciPy (whose order may differ).
    """
    if output not in ("real", "complex", "r", "c"):
        raise user_error(ValueError, f"schur: output must be 'real' or 'complex', got "
                         f"{output!r}")
    (a,) = inexact("schur", a)
    matrix("schur", a, square=True)
    if output in ("complex", "c") and not dtypes.is_complex(a.dtype):
        a = a.astype(dtypes.complex_dtype(a.dtype))
    if a.shape[-1] == 0:
        return a, a
    return _schur(a)


def complex_schur(a):
    """The complex Schur form (t, z) of `a` as SciPy's funm and sqrtm take it: for real
    `a` the real form converted by rsf2csf, so that real eigenvalues stay exactly real
    (a negative one then has the principal square root +i sqrt|λ|, as SciPy's)."""
    if dtypes.is_complex(a.dtype):
        return schur(a, output="complex")
    return rsf2csf(*schur(a))


def rsf2csf(T, Z, check_finite=True):
    """The complex Schur form (t, z) [..., n, n] of a real Schur form `T` and its `Z`
    (batch dims broadcast): each 2 × 2 block of a complex eigenvalue pair (a nonnegligible
    subdiagonal entry) is triangularised by a complex Givens rotation, as SciPy."""
    del check_finite
    T, Z = inexact("rsf2csf", T, Z)
    matrix("rsf2csf", T, square=True)
    matrix("rsf2csf", Z, square=True)
    if T.shape[-1] != Z.shape[-1]:
        raise user_error(ValueError, f"rsf2csf: T and Z must be matrices of one size, got "
                         f"T {_s(T)} and Z {_s(Z)}")
    T, Z = broadcast_batch("rsf2csf", T, Z)
    dtype = T.dtype if dtypes.is_complex(T.dtype) else dtypes.complex_dtype(T.dtype)
    T, Z = T.astype(dtype), Z.astype(dtype)
    n = T.shape[-1]
    eps = float(dtypes.finfo(dtypes.real_dtype(dtype)).eps)
    rows, cols = np.arange(n)[:, None], np.arange(n)[None, :]
    for m in range(n - 1, 0, -1):
        a, c, d = T[..., m - 1, m - 1], T[..., m, m - 1], T[..., m, m]
        pair = mnp.abs(c) > eps * (mnp.abs(a) + mnp.abs(d))
        # mu: the 2 × 2 block's first eigenvalue in LAPACK's order (SciPy's eigvals), - d
        mu = lax_linalg.eig(T[..., m - 1:m + 1, m - 1:m + 1],
                            compute_right_eigenvectors=False)[0][..., 0] - d
        r = mnp.hypot(mnp.abs(mu), mnp.abs(c))
        r = mnp.where(pair, r, 1).astype(dtype)
        cs, sn = mnp.where(pair, mu / r, 1), mnp.where(pair, c / r, 0)
        # G = [[conj(cs), sn], [-sn, cs]] on rows m-1, m (columns m-1 on) from the left,
        # Gᴴ on columns m-1, m (rows up to m) from the right, as SciPy
        g = mnp.broadcast_to(mnp.eye(n, dtype=dtype), T.shape)
        g = mnp.where(_at(n, m - 1, m - 1), mnp.conj(cs)[..., None, None], g)
        g = mnp.where(_at(n, m - 1, m), sn[..., None, None], g)
        g = mnp.where(_at(n, m, m - 1), -sn[..., None, None], g)
        g = mnp.where(_at(n, m, m), cs[..., None, None], g)
        T = mnp.where(mnp.asarray(cols >= m - 1), mnp.matmul(g, T), T)
        T = mnp.where(mnp.asarray(rows <= m), mnp.matmul(T, mH(g)), T)
        Z = mnp.matmul(Z, mH(g))
        T = mnp.where(_at(n, m, m - 1), 0, T)
    return T, Z


def _parlett(func, A):
    """(f(A) by Schur-Parlett, SciPy's error estimate) for a square `A` [..., n, n]."""
    T, Z = complex_schur(A)
    n = A.shape[-1]
    diag = mnp.diagonal(T, axis1=-2, axis2=-1)
    values = mnp.asarray(func(diag)).astype(T.dtype)
    rows, cols = np.arange(n)[:, None], np.arange(n)[None, :]
    F = mnp.where(mnp.asarray(rows == cols), values[..., None, :], 0)
    den = diag[..., None, :] - diag[..., :, None]  # T[j, j] - T[i, i]
    for p in range(1, n):
        # with F's p-th superdiagonal still zero, (T F - F T)[i, i+p] is Parlett's sum
        s = mnp.matmul(T, F) - mnp.matmul(F, T)
        val = mnp.where(den == 0, s, s / mnp.where(den == 0, 1, den))
        F = mnp.where(mnp.asarray(cols - rows == p), val, F)
    F = mnp.matmul(Z, mnp.matmul(F, mH(Z)))
    real = dtypes.real_dtype(F.dtype)
    tol = float(dtypes.finfo(real).eps)
    upper = mnp.asarray(cols > rows)
    minden = mnp.min(mnp.where(upper, mnp.abs(den), np.inf), axis=(-2, -1))
    minden = mnp.where(minden == 0, tol, minden)
    norm1 = mnp.max(mnp.sum(mnp.abs(mnp.where(upper, T, 0)), axis=-2), axis=-1)
    err = mnp.minimum(1, mnp.maximum(tol, (tol / minden) * norm1)).astype(real)
    err = mnp.where(mnp.any(mnp.isinf(F), axis=(-2, -1)), np.inf, err)
    return F, err


_funm = custom_jvp(_parlett, nondiff_argnums=(0,))


@_funm.defjvp
def _funm_jvp(func, primals, tangents):
    """The Daleckii-Krein formula in the eigenbasis A = V diag(w) V⁻¹: dF = V (G ∘ (V⁻¹ dA
    V)) V⁻¹ with G[i, j] the divided difference (f(w_i) - f(w_j)) / (w_i - w_j), or the
    mean of f'(w_i) and f'(w_j) (func's own derivative) where w_i and w_j (nearly)
    coincide; the error estimate is constant."""
    from mytorch import jvp  # (mytorch imports the scipy modules)

    (A,), (dA,) = primals, tangents
    F, err = _parlett(func, A)
    w, v = lax_linalg.eig(A, compute_left_eigenvectors=False)
    dtype = v.dtype
    fw = mnp.asarray(func(w)).astype(dtype)
    dfw = mnp.asarray(jvp(func, (w,), (mnp.ones_like(w),))[1]).astype(dtype)
    diff = w[..., :, None] - w[..., None, :]
    scale = mnp.maximum(1, mnp.max(mnp.abs(w), axis=-1))[..., None, None]
    eps = float(dtypes.finfo(dtypes.real_dtype(dtype)).eps)
    close = mnp.abs(diff) <= np.sqrt(eps) * scale
    g = mnp.where(close, (dfw[..., :, None] + dfw[..., None, :]) / 2,
                  (fw[..., :, None] - fw[..., None, :]) / mnp.where(close, 1, diff))
    v_inv = mnp.linalg.inv(v)
    c = mnp.matmul(v_inv, mnp.matmul(dA.astype(dtype), v))
    dF = mnp.matmul(v, mnp.matmul(g * c, v_inv)).astype(F.dtype)
    return (F, err), (dF, mnp.zeros_like(err))


def funm(A, func, disp=True):
    """f(A) for a square `A` [..., n, n] and an elementwise `func` (called on the
    eigenvalues, a complex [..., n] array), by the Schur-Parlett method as SciPy: the
    complex Schur form A = Z T Zᴴ, f(T) from f on its diagonal and Parlett's recurrence
    above it, and Z f(T) Zᴴ.

    The result is complex always (as JAX's; SciPy returns a real array when the imaginary
    parts are negligible, a choice that depends on the values). Repeated or close
    eigenvalues make the recurrence inaccurate, as in SciPy (it divides by their
    differences). The derivative is the Daleckii-Krein formula, for a holomorphic
    `func` (differentiated with jvp) and a diagonalisable A. Returns f(A), or with
    `disp=False` (f(A), errest) with SciPy's error estimate [...].
    """
    (A,) = inexact("funm", A)
    matrix("funm", A, square=True)
    if A.shape[-1] == 0:
        F = A.astype(dtypes.complex_dtype(dtypes.real_dtype(A.dtype)))
        return F if disp else (F, mnp.zeros(A.shape[:-2], dtypes.real_dtype(A.dtype)))
    F, err = _funm(func, A)
    return F if disp else (F, err)
