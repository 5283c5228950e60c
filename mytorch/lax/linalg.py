"""Linear-algebra primitives (`mt.lax.linalg`, after `jax.lax.linalg`): float32, float64,
complex64 and complex128 operands.

Every operand is a stack of matrices: leading dimensions are batch dimensions, the last two
are the matrix (the last one for vectors such as eigenvalues or pivots). `f` below is any of
the four dtypes and `r` its real dtype (float32 for complex64): eigenvalues of a Hermitian
matrix and singular values are real.

    cholesky(f[..., n, n]) -> f[..., n, n]                  lower L with L Lᴴ = x
    triangular_solve(f[..., k, k], f[..., m, n]) -> f[..., m, n]
    lu(f[..., m, n]) -> (f[..., m, n], i32[..., min(m, n)], i32[..., m])
    qr(f[..., m, n]) -> (q f[..., m, m or k], r f[..., m or k, n])     k = min(m, n)
    geqrf(f[..., m, n]) -> (f[..., m, n], taus f[..., k])   (LAPACK's compact QR)
    eigh(f[..., n, n]) -> (v f[..., n, n], w r[..., n])
    svd(f[..., m, n]) -> (u f[..., m, m or k], s r[..., k], vh f[..., n or k, n]) or s
    tridiagonal_solve(f[..., m] x 3, f[..., m, n]) -> f[..., m, n]

For real operands ᴴ is the plain transpose.

The NumPy kernels live in mytorch/backends/numpy/linalg.py, the derivative and batching
rules in linalg_rules.py.
"""

import enum

import numpy as np

from mytorch.core import dtypes
from mytorch.core.aval import ShapedArray
from mytorch.core.primitive import Primitive
from mytorch.core.source_info import user_error
from mytorch.lax._utils import asarray, short

__all__ = [
    "cholesky", "triangular_solve", "lu", "qr", "eigh", "svd", "tridiagonal_solve",
    "cholesky_p", "triangular_solve_p", "lu_p", "qr_p", "eigh_p", "svd_p",
    "tridiagonal_solve_p", "SvdAlgorithm",
]

_INEXACT = tuple(np.dtype(d) for d in (np.float32, np.float64, np.complex64, np.complex128))


def _check_float(op, *avals):
    """Every operand is float32, float64, complex64 or complex128, all of one dtype."""
    for a in avals:
        if a.dtype not in _INEXACT:
            raise TypeError(f"{op} needs float32, float64, complex64 or complex128 "
                             f"operands, got {short(a)}; convert it first")
    if len({a.dtype for a in avals}) > 1:
        raise TypeError(f"{op} needs operands of one dtype, got "
                         + ", ".join(short(a) for a in avals))


def _check_matrix(op, x, square=False):
    if x.ndim < 2:
        raise ValueError(f"{op} needs a matrix (rank >= 2, batch dims first), "
                         f"got {short(x)}")
    if square and x.shape[-1] != x.shape[-2]:
        raise ValueError(f"{op} needs square matrices, got {short(x)}")


def _out(shape, dtype):
    return ShapedArray(tuple(shape), dtype, False)


def _symmetrize(x):
    """(x + xᴴ) / 2 over the last two axes (the Hermitian part; xᵀ for real x), as lax
    operations (differentiable); other shapes are left to the primitive's abstract
    evaluation to reject."""
    from mytorch.lax import elementwise as ew
    from mytorch.lax import structural as st

    n = x.ndim
    xt = st.transpose(x, (*range(n - 2), n - 1, n - 2))
    if dtypes.is_complex(x.dtype):
        xt = ew.conj(xt)
    return ew.mul(ew.add(x, xt), 0.5)


# ---- cholesky ----------------------------------------------------------------------------
cholesky_p = Primitive("cholesky", kind="linalg")


@cholesky_p.def_abstract_eval
def _cholesky_abstract_eval(x):
    _check_matrix("cholesky", x, square=True)
    _check_float("cholesky", x)
    return _out(x.shape, x.dtype)


def cholesky(x, *, symmetrize_input=True):
    """Lower Cholesky factor L of Hermitian (real: symmetric) positive-definite matrices,
    L Lᴴ = x.

    Args:
      x: f[..., n, n] (float32, float64, complex64 or complex128).
      symmetrize_input: use (x + xᴴ) / 2, so that only the Hermitian part counts (and
        derivatives stay Hermitian); when False only the lower triangle of x is read (and
        the real part of its diagonal).

    Returns:
      L f[..., n, n], lower triangular; a matrix that is not positive definite gives NaNs
      (as JAX), the other matrices of a batch are unaffected.
    """
    x = asarray(x)
    if symmetrize_input and x.ndim >= 2 and x.shape[-1] == x.shape[-2]:
        x = _symmetrize(x)
    return cholesky_p.bind(x)


# ---- triangular_solve --------------------------------------------------------------------
triangular_solve_p = Primitive("triangular_solve", kind="linalg")


@triangular_solve_p.def_abstract_eval
def _triangular_solve_abstract_eval(a, b, *, left_side, lower, transpose_a, conjugate_a,
                                    unit_diagonal):
    _check_matrix("triangular_solve", a, square=True)
    _check_matrix("triangular_solve", b)
    _check_float("triangular_solve", a, b)
    if a.shape[:-2] != b.shape[:-2]:
        raise ValueError(f"triangular_solve needs equal batch dims, got a "
                         f"{short(a)} and b {short(b)}")
    side = b.shape[-2] if left_side else b.shape[-1]
    if a.shape[-1] != side:
        which = "rows" if left_side else "columns"
        raise ValueError(f"triangular_solve (left_side={left_side}) needs b's "
                         f"{which} to match a: a {short(a)}, b {short(b)}")
    return _out(b.shape, b.dtype)


def triangular_solve(a, b, *, left_side=False, lower=False, transpose_a=False,
                     conjugate_a=False, unit_diagonal=False):
    """Solve op(a) x = b (`left_side`) or x op(a) = b for x, with a triangular.

    Args:
      a: f[..., k, k]; only its `lower` (or upper) triangle is read, and with
        `unit_diagonal` not its diagonal either (taken as ones).
      b: f[..., m, n] with k = m (`left_side`) or k = n, a's dtype; or, one dimension
        shorter than a, f[..., k]: one column (`left_side`) or row per matrix, as JAX.
      transpose_a, conjugate_a: op(a) = a, aᵀ (`transpose_a`), conj(a) (`conjugate_a`) or
        aᴴ (both); conjugating is a no-op for real dtypes.

    Returns:
      x f[..., m, n] (f[..., k] for a vector b).
    """
    from mytorch.lax import structural as st

    a, b = asarray(a), asarray(b)
    vector = b.ndim == a.ndim - 1 and b.ndim >= 1
    if vector:
        b = st.expand_dims(b, (b.ndim if left_side else b.ndim - 1,))
    x = triangular_solve_p.bind(a, b, left_side=bool(left_side), lower=bool(lower),
                                transpose_a=bool(transpose_a), conjugate_a=bool(conjugate_a),
                                unit_diagonal=bool(unit_diagonal))
    if vector:
        x = st.squeeze(x, (x.ndim - 1 if left_side else x.ndim - 2,))
    return x


# ---- lu ----------------------------------------------------------------------------------
lu_p = Primitive("lu", multiple_results=True, kind="linalg")


@lu_p.def_abstract_eval
def _lu_abstract_eval(x):
    _check_matrix("lu", x)
    _check_float("lu", x)
    *batch, m, n = x.shape
    return [_out(x.shape, x.dtype), _out((*batch, min(m, n)), np.int32),
            _out((*batch, m), np.int32)]


def lu(x):
    """LU decomposition with partial pivoting: x[perm] = L U.

    Args:
      x: f[..., m, n].

    Returns:
      (lu f[..., m, n] holding L's strict lower part (unit diagonal implied) and U's upper
      part, pivots i32[..., min(m, n)] (row i was swapped with row pivots[i], in order),
      permutation i32[..., m] (the rows of x in the order of L U)).
    """
    out = lu_p.bind(asarray(x))
    return tuple(out)


# ---- qr ----------------------------------------------------------------------------------
qr_p = Primitive("qr", multiple_results=True, kind="linalg")


@qr_p.def_abstract_eval
def _qr_abstract_eval(x, *, full_matrices):
    _check_matrix("qr", x)
    _check_float("qr", x)
    *batch, m, n = x.shape
    k = m if full_matrices else min(m, n)
    return [_out((*batch, m, k), x.dtype), _out((*batch, k, n), x.dtype)]


def qr(x, *, full_matrices=True):
    """QR decomposition x = q r, q with orthonormal columns (qᴴ q = I), r upper triangular.

    Args:
      x: f[..., m, n].
      full_matrices: q f[..., m, m] and r f[..., m, n]; else q f[..., m, k] and
        r f[..., k, n], k = min(m, n).

    Returns:
      (q, r).
    """
    return tuple(qr_p.bind(asarray(x), full_matrices=bool(full_matrices)))


# ---- eigh --------------------------------------------------------------------------------
eigh_p = Primitive("eigh", multiple_results=True, kind="linalg")


@eigh_p.def_abstract_eval
def _eigh_abstract_eval(x, *, lower):
    _check_matrix("eigh", x, square=True)
    _check_float("eigh", x)
    return [_out(x.shape, x.dtype), _out(x.shape[:-1], dtypes.real_dtype(x.dtype))]


def eigh(x, *, lower=True, symmetrize_input=True):
    """Eigendecomposition of Hermitian (real: symmetric) matrices: x v = v diag(w).

    Args:
      x: f[..., n, n].
      lower: read the lower triangle (else the upper) when not symmetrizing.
      symmetrize_input: use (x + xᴴ) / 2.

    Returns:
      (v f[..., n, n] with orthonormal eigenvectors as columns, w r[..., n] ascending and
      real: float32 for complex64 x).
    """
    x = asarray(x)
    if symmetrize_input and x.ndim >= 2 and x.shape[-1] == x.shape[-2]:
        x = _symmetrize(x)
    return tuple(eigh_p.bind(x, lower=bool(lower)))


# ---- svd ---------------------------------------------------------------------------------
class SvdAlgorithm(enum.Enum):
    """JAX's choice of SVD algorithm. Every choice gives the same decomposition (up to the
    signs or phases of singular vectors); on the CPU it is LAPACK's, through NumPy."""
    DEFAULT = "default"
    QR = "QR"
    JACOBI = "Jacobi"
    POLAR = "polar"
    DIVIDE_AND_CONQUER = "divide_and_conquer"


svd_p = Primitive("svd", multiple_results=True, kind="linalg")


@svd_p.def_abstract_eval
def _svd_abstract_eval(x, *, full_matrices, compute_uv):
    _check_matrix("svd", x)
    _check_float("svd", x)
    *batch, m, n = x.shape
    k = min(m, n)
    s = _out((*batch, k), dtypes.real_dtype(x.dtype))
    if not compute_uv:
        return [s]
    ku, kv = (m, n) if full_matrices else (k, k)
    return [s, _out((*batch, m, ku), x.dtype), _out((*batch, kv, n), x.dtype)]


def svd(x, *, full_matrices=True, compute_uv=True, subset_by_index=None, algorithm=None):
    """Singular value decomposition x = u diag(s) vh (vh = vᴴ).

    Args:
      x: f[..., m, n].
      full_matrices: u f[..., m, m], vh f[..., n, n]; else u f[..., m, k], vh f[..., k, n],
        k = min(m, n).
      compute_uv: return (u, s, vh); else only s.
      subset_by_index: (start, stop): only the singular values s[start:stop] (largest
        first) and their vectors, u f[..., m, stop - start] and vh f[..., stop - start, n];
        with full_matrices only the whole range (0, k).
      algorithm: None or an `SvdAlgorithm` (all give the same decomposition).

    Returns:
      (u, s, vh) or s r[..., k], real (float32 for complex64 x), descending and
      non-negative.
    """
    x = asarray(x)
    if algorithm is not None and not isinstance(algorithm, SvdAlgorithm):
        raise user_error(TypeError, f"svd: algorithm must be None or an SvdAlgorithm, got "
                         f"{algorithm!r}")
    k = min(x.shape[-2:]) if x.ndim >= 2 else 0
    if subset_by_index is not None:
        start, stop = (int(v) for v in subset_by_index)
        if not 0 <= start <= stop <= k:
            raise user_error(ValueError, f"svd: subset_by_index must be (start, stop) with "
                             f"0 <= start <= stop <= {k} for {short(x.aval)}, got "
                             f"{subset_by_index!r}")
        if full_matrices and compute_uv and (start, stop) != (0, k):
            raise user_error(ValueError, "svd: full_matrices and a subset_by_index other "
                             f"than (0, {k}) cannot both be set")
    out = svd_p.bind(x, full_matrices=bool(full_matrices), compute_uv=bool(compute_uv))
    if subset_by_index is not None and (start, stop) != (0, k):
        from mytorch.lax import structural as st

        def part(v, axis):  # v[..., start:stop] along `axis` (counted from the end)
            return st.slice_in_dim(v, start, stop, axis=v.ndim + axis)
        out = [part(out[0], -1)] + ([part(out[1], -1), part(out[2], -2)]
                                    if compute_uv else [])
    if not compute_uv:
        return out[0]
    s, u, vh = out
    return u, s, vh


# ---- tridiagonal_solve -------------------------------------------------------------------
tridiagonal_solve_p = Primitive("tridiagonal_solve", kind="linalg")


@tridiagonal_solve_p.def_abstract_eval
def _tridiagonal_solve_abstract_eval(dl, d, du, b, *, perturb_singular):
    _check_matrix("tridiagonal_solve", b)
    _check_float("tridiagonal_solve", dl, d, du, b)
    want = b.shape[:-1]
    for name, v in (("dl", dl), ("d", d), ("du", du)):
        if v.shape != want:
            raise ValueError(f"tridiagonal_solve: {name} must have shape {want} "
                             f"(b's shape {b.shape} without its last axis), got {short(v)}")
    return _out(b.shape, b.dtype)


def tridiagonal_solve(dl, d, du, b, *, perturb_singular=False):
    """Solve the tridiagonal systems A x = b, by elimination with partial pivoting (as
    LAPACK's gtsv).

    Args:
      dl: f[..., m], the sub-diagonal (dl[..., 0] is ignored).
      d: f[..., m], the diagonal.
      du: f[..., m], the super-diagonal (du[..., m - 1] is ignored).
      b: f[..., m, n], the right-hand sides.
      perturb_singular: pivots of U (A = P L U) smaller than eps * max|U| are raised to
        that size, so a singular A gives a large finite x (for inverse iteration) rather
        than infinities and NaNs.

    Returns:
      x f[..., m, n].
    """
    return tridiagonal_solve_p.bind(asarray(dl), asarray(d), asarray(du), asarray(b),
                                    perturb_singular=bool(perturb_singular))

from mytorch.lax.linalg_eig import EigImplementation, eig, eig_p  # noqa: E402,F401
from mytorch.lax.linalg_composite import (  # noqa: E402,F401
    geqrf, householder_product, lu_pivots_to_permutation, ormqr, symmetric_product,
)
