"""`mnp.linalg`'s factorisations and solvers over the `lax.linalg` primitives: cholesky,
qr, eigh, eigvalsh, svd, solve, inv, det, slogdet, and the LU helpers they share with
`mt.scipy.linalg`.

Every function takes float32/float64 and complex64/complex128 matrices (ints and bools
become the default float), batched over leading dimensions with NumPy broadcasting where
two operands meet. float16/bfloat16 raise TypeError, as in NumPy. For complex input the
symmetric cases read Hermitian: cholesky gives L with L Lᴴ = a, eigh decomposes the
Hermitian part and returns real eigenvalues, svd's singular values are real, and slogdet's
sign is a complex number of modulus 1 (its logabsdet stays real). A singular matrix cannot
raise at trace time: `solve` and `inv` give inf/nan there, `det` gives 0 and `slogdet`
(0, -inf), as in JAX. Derivatives come from the primitives' rules; `det` and `slogdet`
carry JAX's closed-form rules (det's through a cofactor solve that stays finite at a
rank-deficient matrix).

    solve(f32[B,n,n], f32[B,n,k]) -> f32[B,n,k]     det(f32[B,n,n]) -> f32[B]
"""

from collections import namedtuple

from mytorch import lax
from mytorch import numpy as mnp
from mytorch.core import dtypes
from mytorch.core.source_info import user_error
from mytorch.custom_derivatives import custom_jvp
from mytorch.lax import linalg as lax_linalg
from mytorch.numpy._promote import asarray_any, broadcast_shapes, result_type

__all__ = [
    "cholesky", "qr", "eigh", "eigvalsh", "svd", "solve", "inv", "det", "slogdet",
    "EighResult", "QRResult", "SlogdetResult", "SVDResult",
]

EighResult = namedtuple("EighResult", ["eigenvalues", "eigenvectors"])
QRResult = namedtuple("QRResult", ["Q", "R"])
SlogdetResult = namedtuple("SlogdetResult", ["sign", "logabsdet"])
SVDResult = namedtuple("SVDResult", ["U", "S", "Vh"])


def _s(x):
    return x.aval.str_short()


def inexact(name, *xs):
    """`xs` as arrays of one float32/float64/complex64/complex128 dtype (ints and bools
    give the default float); float16/bfloat16 raise TypeError, as NumPy's linalg does."""
    xs = [asarray_any(x) for x in xs]
    dtype = result_type(*xs)
    if not dtypes.is_inexact(dtype):
        dtype = dtypes.default_float()
    if dtype in (dtypes.float16, dtypes.bfloat16):
        raise user_error(TypeError, f"{name} does not accept dtype {dtype}: it is "
                         f"unsupported in linear algebra; convert to float32 first (got "
                         f"{', '.join(_s(x) for x in xs)})")
    return [x if x.dtype == dtype and not x.weak_type
            else lax.convert_element_type(x, dtype, weak_type=False) for x in xs]


def matrix(name, a, square=False):
    """Check that `a` is a (batch of) matrix, square if asked."""
    if a.ndim < 2:
        raise user_error(ValueError, f"{name}: needs an array of rank >= 2 (a matrix or a "
                         f"batch of them), got {_s(a)}")
    if square and a.shape[-1] != a.shape[-2]:
        raise user_error(ValueError, f"{name}: the last two dimensions must be square, got "
                         f"{_s(a)}")
    return a


def mT(x):
    """Swap the last two axes."""
    return mnp.swapaxes(x, -1, -2)


def mH(x):
    """The conjugate transpose over the last two axes (the transpose for real x)."""
    x = mT(x)
    return mnp.conj(x) if dtypes.is_complex(x.dtype) else x


def real_dtype(x):
    """The dtype of `x`'s real parts: float32 for complex64, else x's own dtype."""
    return dtypes.real_dtype(x.dtype)


def eye_like(a):
    """The identity broadcast to `a`'s (square) shape and dtype."""
    n = a.shape[-1]
    return mnp.broadcast_to(mnp.eye(n, dtype=a.dtype), a.shape)


def broadcast_batch(name, a, b):
    """`a` [..., m, m] and `b` [..., m, k] broadcast to one batch shape."""
    batch = broadcast_shapes(name, a.shape[:-2], b.shape[:-2])
    if a.shape[:-2] != batch:
        a = mnp.broadcast_to(a, batch + a.shape[-2:])
    if b.shape[:-2] != batch:
        b = mnp.broadcast_to(b, batch + b.shape[-2:])
    return a, b


def permute_rows(b, perm):
    """Rows of `b` [..., m, k] taken in the order `perm` [..., m]: `b[..., perm, :]`."""
    idx = mnp.broadcast_to(perm[..., None], perm.shape + b.shape[-1:])
    return mnp.take_along_axis(b, idx, axis=-2)


def lu_solve(lu, perm, b, trans=0):
    """Solve `a x = b` (trans 0), `aᵀ x = b` (trans 1) or `aᴴ x = b` (trans 2) from
    `a`'s LU factors (`a[perm] = L U`, L unit lower triangular): lu [..., m, m],
    perm [..., m], b [..., m, k] with the same batch shape."""
    if trans == 0:
        x = permute_rows(b, perm)
        x = lax_linalg.triangular_solve(lu, x, left_side=True, lower=True,
                                        unit_diagonal=True)
        return lax_linalg.triangular_solve(lu, x, left_side=True, lower=False)
    # aᵀ = Uᵀ Lᵀ P (aᴴ = Uᴴ Lᴴ P): solve with Uᵀ, then Lᵀ, then undo the row permutation
    conj = trans == 2
    x = lax_linalg.triangular_solve(lu, b, left_side=True, lower=False, transpose_a=True,
                                    conjugate_a=conj)
    x = lax_linalg.triangular_solve(lu, x, left_side=True, lower=True, transpose_a=True,
                                    conjugate_a=conj, unit_diagonal=True)
    return permute_rows(x, mnp.argsort(perm, axis=-1))


def cholesky(a, /, *, upper=False, symmetrize_input=True):
    """The Cholesky factor of a Hermitian (real: symmetric) positive-definite `a`
    [..., n, n]: lower `L` with `a = L Lᴴ` (or `Lᴴ` with `upper=True`). A matrix that is
    not positive definite gives NaNs (NumPy raises; a traced value cannot)."""
    (a,) = inexact("cholesky", a)
    matrix("cholesky", a, square=True)
    lower = lax_linalg.cholesky(a, symmetrize_input=symmetrize_input)
    return mH(lower) if upper else lower


def qr(a, mode="reduced"):
    """The QR factorisation of `a` [..., m, n], k = min(m, n). mode "reduced": (Q [..., m,
    k], R [..., k, n]); "complete": (Q [..., m, m], R [..., m, n]); "r": R [..., k, n]
    alone; "full" is NumPy's deprecated name of "reduced" (JAX accepts it too); "raw":
    LAPACK's compact form as NumPy returns it, (h [..., n, m] (geqrf's matrix transposed),
    tau [..., k])."""
    (a,) = inexact("qr", a)
    matrix("qr", a)
    if mode not in ("reduced", "complete", "r", "full", "raw"):
        raise user_error(ValueError, f"qr: mode must be 'reduced', 'complete', 'r', 'raw' or "
                         f"'full', got {mode!r} (for {_s(a)})")
    if mode == "raw":
        h, taus = lax_linalg.geqrf(a)
        return mT(h), taus
    q, r = lax_linalg.qr(a, full_matrices=mode == "complete")
    return r if mode == "r" else QRResult(q, r)


def eigh(a, UPLO=None, symmetrize_input=True):
    """Eigenvalues (ascending and real, [..., n]: float32 for complex64) and eigenvectors
    (the columns of [..., n, n]) of a Hermitian (real: symmetric) `a` [..., n, n]. UPLO
    "L" (default) or "U" names the triangle used; with `symmetrize_input` (default, as
    JAX) `(a + aᴴ)/2` is decomposed, which keeps the derivative Hermitian."""
    (a,) = inexact("eigh", a)
    matrix("eigh", a, square=True)
    if UPLO not in (None, "L", "U"):
        raise user_error(ValueError, f"eigh: UPLO must be 'L' or 'U', got {UPLO!r}")
    v, w = lax_linalg.eigh(a, lower=UPLO != "U", symmetrize_input=symmetrize_input)
    return EighResult(w, v)


def eigvalsh(a, UPLO="L"):
    """The eigenvalues of a Hermitian `a` [..., n, n], ascending and real: [..., n]."""
    (a,) = inexact("eigvalsh", a)
    matrix("eigvalsh", a, square=True)
    return eigh(a, UPLO).eigenvalues


def svd(a, full_matrices=True, compute_uv=True, hermitian=False, subset_by_index=None):
    """The singular value decomposition `a = U diag(S) Vh` of `a` [..., m, n], k = min(m,
    n): U [..., m, m or k], S [..., k] descending and real (float32 for complex64), Vh
    [..., n or k, n]; S alone when `compute_uv` is False. `hermitian=True` takes `a`
    Hermitian (real: symmetric) and goes through eigh. `subset_by_index` (start, stop)
    keeps S[start:stop] and their vectors (as `lax.linalg.svd`)."""
    (a,) = inexact("svd", a)
    matrix("svd", a)
    if hermitian:
        matrix("svd", a, square=True)
        if subset_by_index is not None:
            raise user_error(ValueError, "svd: subset_by_index is not supported with "
                             "hermitian=True")
        return _svd_hermitian(a, compute_uv)
    if not compute_uv:
        return lax_linalg.svd(a, full_matrices=False, compute_uv=False,
                              subset_by_index=subset_by_index)
    u, s, vh = lax_linalg.svd(a, full_matrices=full_matrices, compute_uv=True,
                              subset_by_index=subset_by_index)
    return SVDResult(u, s, vh)


def _svd_hermitian(a, compute_uv):
    """A Hermitian matrix's SVD from its eigendecomposition: S = |w| sorted descending,
    U = the eigenvectors in that order, Vh = Uᴴ with the eigenvalues' signs on its rows."""
    v, w = lax_linalg.eigh(a)
    s = mnp.abs(w)
    order = mnp.flip(mnp.argsort(s, axis=-1), axis=-1)
    s = mnp.take_along_axis(s, order, axis=-1)
    if not compute_uv:
        return s
    sign = mnp.take_along_axis(mnp.sign(w), order, axis=-1).astype(a.dtype)
    cols = mnp.broadcast_to(lax.expand_dims(order, (order.ndim - 1,)), v.shape)
    u = mnp.take_along_axis(v, cols, axis=-1)
    vh = mH(u * sign[..., None, :])
    return SVDResult(u, s, vh)


def solve(a, b):
    """The solution `x` of `a x = b`, through `a`'s LU factorisation: a [..., m, m]; b
    [m] (a vector, NumPy 2's rule: only a 1-D b is a vector) or [..., m, k]; batch
    dimensions broadcast. A singular `a` gives inf/nan."""
    a, b = inexact("solve", a, b)
    matrix("solve", a, square=True)
    vector = b.ndim == 1
    if b.shape[0 if vector else -2] != a.shape[-1] if b.ndim else True:
        raise user_error(ValueError, f"solve: b must be [{a.shape[-1]}] or [..., "
                         f"{a.shape[-1]}, k] for a {_s(a)}, got {_s(b)}")
    if vector:
        b = lax.expand_dims(b, (1,))
    a, b = broadcast_batch("solve", a, b)
    lu, _, perm = lax_linalg.lu(a)
    x = lu_solve(lu, perm, b)
    return lax.squeeze(x, (x.ndim - 1,)) if vector else x


def inv(a):
    """The inverse of a square `a` [..., n, n] (inf/nan where `a` is singular)."""
    (a,) = inexact("inv", a)
    matrix("inv", a, square=True)
    return solve(a, eye_like(a))


def _pivot_sign(pivots, dtype):
    """+1 or -1 [...]: the parity of the row swaps that LAPACK-style `pivots` [..., k]
    record."""
    iota = lax.broadcasted_iota(pivots.dtype, pivots.shape, pivots.ndim - 1)
    parity = mnp.count_nonzero(mnp.not_equal(pivots, iota), axis=-1)
    return mnp.where(parity % 2 == 1, -1, 1).astype(dtype)


def _slogdet_lu(a):
    """(sign, log|det a|) from a's LU factors: the sign counts the pivot swaps and the
    negative diagonal entries (for complex a: times the product of the diagonal's phases
    u / |u|); a zero pivot gives (0, -inf)."""
    lu, pivots, _ = lax_linalg.lu(a)
    diag = mnp.diagonal(lu, 0, -2, -1)
    is_zero = mnp.any(diag == 0, axis=-1)
    if dtypes.is_complex(a.dtype):
        phases = diag / mnp.where(diag == 0, 1, mnp.abs(diag)).astype(a.dtype)
        sign = _pivot_sign(pivots, a.dtype) * mnp.prod(phases, axis=-1)
    else:
        negative = mnp.count_nonzero(diag < 0, axis=-1)
        sign = _pivot_sign(pivots, a.dtype) * mnp.where(negative % 2 == 1, -1,
                                                        1).astype(a.dtype)
    sign = mnp.where(is_zero, mnp.zeros_like(sign), sign)
    logdet = mnp.sum(mnp.log(mnp.abs(diag)), axis=-1)
    logdet = mnp.where(is_zero, mnp.full_like(logdet, -float("inf")), logdet)
    return sign, logdet


def _slogdet_qr(a):
    """(sign, log|det a|) from a's QR factors: log|det a| sums log|r_ii|, and the sign is
    det q's (a unit-modulus number; q is orthonormal, so its LU is stable) times the phases
    of r's diagonal; a zero r_ii gives (0, -inf)."""
    q, r = lax_linalg.qr(a, full_matrices=False)
    diag = mnp.diagonal(r, 0, -2, -1)
    is_zero = mnp.any(diag == 0, axis=-1)
    phases = diag / mnp.where(diag == 0, 1, mnp.abs(diag)).astype(a.dtype)
    sign = _slogdet_lu(q)[0] * mnp.prod(phases, axis=-1)
    sign = mnp.where(is_zero, mnp.zeros_like(sign), sign)
    logdet = mnp.sum(mnp.log(mnp.abs(diag)), axis=-1)
    logdet = mnp.where(is_zero, mnp.full_like(logdet, -float("inf")), logdet)
    return sign, logdet


def _slogdet_jvp_of(slogdet_fn):
    """The JVP of `slogdet_fn`: with t = tr(a⁻¹ da), d log|det a| = re(t), and d sign =
    i im(t) sign (zero for real a: the sign is piecewise constant), as JAX."""
    def jvp(primals, tangents):
        (a,), (da,) = primals, tangents
        sign, logdet = slogdet_fn(a)
        dlog = mnp.trace(solve(a, da), 0, -2, -1)
        if not dtypes.is_complex(a.dtype):
            return (sign, logdet), (mnp.zeros_like(sign), dlog)
        dlog_real = mnp.real(dlog)
        dsign = (dlog - dlog_real.astype(dlog.dtype)) * sign
        return (sign, logdet), (dsign, dlog_real)
    return jvp


_SLOGDET = {"lu": custom_jvp(_slogdet_lu), "qr": custom_jvp(_slogdet_qr)}
for _fn in _SLOGDET.values():
    _fn.defjvp(_slogdet_jvp_of(_fn))
_slogdet = _SLOGDET["lu"]


def slogdet(a, *, method=None):
    """(sign, log|det a|) of a square `a` [..., n, n], each [...]; (0, -inf) when `a` is
    singular. For complex `a` the sign is complex with modulus 1 and log|det a| real (its
    real dtype). The log is computed from the LU factors (`method` None or "lu") or the QR
    factors ("qr"), so it does not overflow where det would."""
    (a,) = inexact("slogdet", a)
    matrix("slogdet", a, square=True)
    if method not in (None, "lu", "qr"):
        raise user_error(ValueError, f"slogdet: method must be 'lu' or 'qr', got {method!r}")
    return SlogdetResult(*_SLOGDET[method or "lu"](a))


def _cofactor_solve(a, b):
    """(det a, adj(a) b) for square a and b [..., n, n], finite when `a` has rank n - 1
    (where det a = 0 but its derivative, adj(a)ᵀ, is not): LU with the last pivot's
    reciprocal replaced by the product of the others, as JAX's jnp.linalg.det."""
    n = a.shape[-1]
    if n == 0:  # the empty product: det 1, and adj(a) b is as empty as b
        return mnp.ones(a.shape[:-2], a.dtype), b
    if n == 1:
        return lax.squeeze(a, (a.ndim - 2, a.ndim - 1)), b
    lu, pivots, perm = lax_linalg.lu(a)
    lu, b = broadcast_batch("det", lu, b)
    batch = lu.shape[:-2]
    perm = mnp.broadcast_to(perm, batch + (n,))
    sign = mnp.broadcast_to(_pivot_sign(pivots, a.dtype), batch)
    # partial[..., -1] is det a; partial[..., -2] is det a / u_nn
    partial = mnp.cumprod(mnp.diagonal(lu, 0, -2, -1), axis=-1) * sign[..., None]
    det = partial[..., -1]
    corner = (mnp.arange(n)[:, None] == n - 1) & (mnp.arange(n)[None, :] == n - 1)
    lu = mnp.where(corner, (1 / partial[..., -2])[..., None, None], lu)
    # rank < n - 1 (another pivot is zero): the adjugate is 0
    d = lax_linalg.triangular_solve(lu, mnp.ones(batch + (n, 1), a.dtype), left_side=True,
                                    lower=False)
    bad = mnp.any(~mnp.isfinite(d), axis=(-2, -1))[..., None, None]
    x = mnp.where(bad, 0, b)
    x = permute_rows(x, perm)
    x = lax_linalg.triangular_solve(lu, x, left_side=True, lower=True, unit_diagonal=True)
    scale = det[..., None, None]
    x = mnp.concatenate([x[..., :-1, :] * scale, x[..., -1:, :]], axis=-2)
    x = lax_linalg.triangular_solve(lu, x, left_side=True, lower=False)
    return det, mnp.where(bad, 0, x)


@custom_jvp
def _det(a):
    sign, logdet = _slogdet_lu(a)
    return sign * mnp.exp(logdet).astype(a.dtype)


@_det.defjvp
def _det_jvp(primals, tangents):
    """d det a = tr(adj(a) da), through the cofactor solve (right at singular a too)."""
    (a,), (da,) = primals, tangents
    y, z = _cofactor_solve(a, da)
    return y, mnp.trace(z, 0, -2, -1)


def det(a):
    """The determinant of a square `a` [..., n, n]: [...]."""
    (a,) = inexact("det", a)
    matrix("det", a, square=True)
    return _det(a)
