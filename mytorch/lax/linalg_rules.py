"""Derivative, transpose and batching rules of the linear-algebra primitives (linalg.py).

The JVPs are JAX's matrix-calculus rules, written with lax operations (so they
differentiate again and transpose for reverse mode). Xᴴ is the conjugate transpose (the
transpose for real X), so one rule serves real and complex operands:

- cholesky: L̇ = L Φ(L⁻¹ Ẋ L⁻ᴴ), Φ the lower triangle with its diagonal halved;
- triangular_solve: linear in b (its transpose solves with op(a)ᵀ: values pair by
  re(sum(a b)), without conjugation, as in JAX); in a, ẋ = -op(a)⁻¹ op(ȧ) x (or
  -x op(ȧ) op(a)⁻¹ on the right), ȧ masked to a's triangle;
- lu: with P A = L U, F = L⁻¹ P Ȧ U⁻¹, L̇ = L tril(F, -1) and U̇ = triu(F) U;
- qr: JAX's rule through R⁻¹ for reduced m >= n, with its correction that keeps R's
  diagonal real for complex input; a wide x = [x1 x2] differentiates x1's square QR and
  R₂ = Qᴴ x2; the complete factorisation of a tall x completes Q̇ by Roberts and
  Roberts' formula (arXiv:2409.13374, as JAX);
- eigh: ẇ = re(diag(Vᴴ Ȧ V)), V̇ = V (F ∘ Vᴴ Ȧ V) with F_ij = 1 / (w_j - w_i), and 0
  where the eigenvalues are equal (degenerate ones: their eigenvectors are not unique);
- svd: JAX's rule (reduced matrices, or square full ones), 1/(s_j² - s_i²) zero where
  equal; for complex input U̇ gains the term i im(diag(Uᴴ Ȧ V)) / s that fixes the phase
  of the singular vectors (it is zero for real input);
- tridiagonal_solve: linear in b (its transpose solves with Aᵀ); in the diagonals
  ẋ = -A⁻¹ (Ȧ x).

Every primitive takes leading batch dimensions, so batching moves the mapped axis of
every operand to the front (broadcasting unmapped ones) and binds the same primitive.
"""

import numpy as np

from mytorch.core import dtypes
from mytorch.core.ad_util import is_undefined
from mytorch.core.trace import aval_of
from mytorch.lax import elementwise as ew
from mytorch.lax import linalg as la
from mytorch.lax import structural as st
from mytorch.lax._ad import Zero, zero_out
from mytorch.lax._batching import bdim_at_front
from mytorch.lax.dot import dot_general
from mytorch.lax.precision import Precision
from mytorch.lax.reductions import reduce_sum
from mytorch.lax.indexing import take_along_axis


# ---- matrix helpers (last two axes are the matrix, the rest batch) -----------------------
def _mT(x):
    n = aval_of(x).ndim
    return st.transpose(x, (*range(n - 2), n - 1, n - 2))


def _is_complex(x):
    return dtypes.is_complex(aval_of(x).dtype)


def _conj(x):
    """The complex conjugate; x itself when real."""
    return ew.conj(x) if _is_complex(x) else x


def _mH(x):
    """The conjugate transpose over the last two axes (the transpose for real x)."""
    return _conj(_mT(x))


def _real(x):
    """The real part; x itself when real."""
    return ew.real(x) if _is_complex(x) else x


def _like(x, ref):
    """The real `x` in `ref`'s dtype (complex when ref is), for products with ref."""
    dtype = aval_of(ref).dtype
    return x if aval_of(x).dtype == dtype else ew.convert_element_type(x, dtype)


def _mm(a, b):
    """a f[..., m, k] @ b f[..., k, n] with equal batch dims."""
    n = aval_of(a).ndim
    batch = tuple(range(n - 2))
    return dot_general(a, b, (((n - 1,), (n - 2,)), (batch, batch)),
                       precision=Precision.HIGHEST)


def _band_mask(shape, lo, hi):
    """Bool mask of `shape`: True where lo <= column - row <= hi (None: unbounded)."""
    n = len(shape)
    diff = ew.sub(st.broadcasted_iota(np.int32, shape, n - 1),
                  st.broadcasted_iota(np.int32, shape, n - 2))
    mask = None
    if lo is not None:
        mask = ew.ge(diff, np.int32(lo))
    if hi is not None:
        upper = ew.le(diff, np.int32(hi))
        mask = upper if mask is None else ew.bitwise_and(mask, upper)
    return mask


def _tril(x, k=0):
    """x with zeros above diagonal k."""
    aval = aval_of(x)
    return ew.select(_band_mask(aval.shape, None, k), x, st.full_like(x, 0))


def _triu(x, k=0):
    """x with zeros below diagonal k."""
    aval = aval_of(x)
    return ew.select(_band_mask(aval.shape, k, None), x, st.full_like(x, 0))


def _eye_like(x):
    """The identity broadcast to x's shape (square matrices), x's dtype."""
    aval = aval_of(x)
    return ew.convert_element_type(_band_mask(aval.shape, 0, 0), aval.dtype)


def _diag_sum(x):
    """f[..., n, n] -> f[..., n]: the diagonal."""
    aval = aval_of(x)
    return reduce_sum(ew.select(_band_mask(aval.shape, 0, 0), x, st.full_like(x, 0)),
                      (aval.ndim - 1,))


def _row(v, shape):
    """f[..., n] broadcast along rows to `shape` [..., m, n]: out[..., i, j] = v[..., j]."""
    nb = aval_of(v).ndim - 1
    return st.broadcast_in_dim(v, shape, (*range(nb), nb + 1))


def _col(v, shape):
    """f[..., m] broadcast along columns to `shape` [..., m, n]: out[..., i, j] = v[..., i]."""
    nb = aval_of(v).ndim - 1
    return st.broadcast_in_dim(v, shape, (*range(nb), nb))


def _safe_reciprocal(d):
    """1 / d, and 0 where d == 0."""
    zero = ew.eq(d, st.full_like(d, 0))
    return ew.select(zero, st.full_like(d, 0), ew.div(st.full_like(d, 1),
                                                       ew.select(zero, st.full_like(d, 1), d)))


# ---- cholesky ----------------------------------------------------------------------------
def _cholesky_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    L = la.cholesky_p.bind(x)
    if type(t) is Zero:
        return L, zero_out(L)
    tmp = la.triangular_solve(L, t, left_side=False, transpose_a=True,
                              conjugate_a=_is_complex(L), lower=True)
    inner = la.triangular_solve(L, tmp, left_side=True, lower=True)
    phi = ew.sub(_tril(inner), ew.mul(ew.mul(inner, _eye_like(inner)), 0.5))
    return L, _mm(L, phi)


la.cholesky_p.def_jvp(_cholesky_jvp)


# ---- triangular_solve --------------------------------------------------------------------
def _triangular_solve_jvp(primals, tangents, **params):
    a, b = primals
    ta, tb = tangents
    ans = la.triangular_solve_p.bind(a, b, **params)
    out = Zero(aval_of(ans))
    if type(tb) is not Zero:
        out = la.triangular_solve_p.bind(a, tb, **params)
    if type(ta) is not Zero:
        m, n = aval_of(b).shape[-2:]
        k = 1 if params["unit_diagonal"] else 0
        g = _tril(ta, -k) if params["lower"] else _triu(ta, k)
        g = ew.neg(g)
        if params["transpose_a"]:
            g = _mT(g)
        if params["conjugate_a"]:
            g = _conj(g)

        def a_inverse(rhs):
            return la.triangular_solve_p.bind(a, rhs, **params)

        # solves cost about a product: order them for the smaller intermediate
        if params["left_side"]:
            term = a_inverse(_mm(g, ans)) if m > n else _mm(a_inverse(g), ans)
        else:
            term = a_inverse(_mm(ans, g)) if m < n else _mm(ans, a_inverse(g))
        out = term if type(out) is Zero else ew.add(out, term)
    return ans, out


def _triangular_solve_transpose(ct, a, b, *, left_side, lower, transpose_a, conjugate_a,
                                unit_diagonal):
    if is_undefined(a):
        raise TypeError("triangular_solve: the matrix a of a linear solve must not be linear")
    if type(ct) is Zero:
        return [None, Zero(b.aval)]
    return [None, la.triangular_solve_p.bind(
        a, ct, left_side=left_side, lower=lower, transpose_a=not transpose_a,
        conjugate_a=conjugate_a, unit_diagonal=unit_diagonal)]


la.triangular_solve_p.def_jvp(_triangular_solve_jvp)
la.triangular_solve_p.def_transpose(_triangular_solve_transpose)


# ---- lu ----------------------------------------------------------------------------------
def _lu_jvp(primals, tangents):
    (a,), (t,) = primals, tangents
    lu, pivots, perm = la.lu_p.bind(a)
    zeros = [zero_out(pivots), zero_out(perm)]
    if type(t) is Zero:
        return [lu, pivots, perm], [zero_out(lu), *zeros]
    aval = aval_of(a)
    *batch, m, n = aval.shape
    k = min(m, n)
    nb = len(batch)
    rows = st.broadcast_in_dim(perm, aval.shape, (*range(nb), nb))
    x = take_along_axis(t, rows, nb)  # P ȧ
    # L (m x m, unit lower) and U (n x n, upper, padded with the identity) from lu
    zero = st.full((), 0, aval.dtype)
    cfg = [(0, 0, 0)] * len(aval.shape)
    l_part = st.slice(lu, (0,) * len(aval.shape), (*batch, m, k))
    l_cfg = list(cfg)
    l_cfg[-1] = (0, m - k, 0)
    L = st.pad(_tril(l_part, -1), zero, l_cfg)
    L = ew.add(L, _eye_like(L))
    u_part = st.slice(lu, (0,) * len(aval.shape), (*batch, k, n))
    u_cfg = list(cfg)
    u_cfg[-2] = (0, n - k, 0)
    U = st.pad(_triu(u_part), zero, u_cfg)
    if n > k:
        U = ew.add(U, _pad_identity(U, k))
    la_ = la.triangular_solve(L, x, left_side=True, lower=True, unit_diagonal=True)
    lau = la.triangular_solve(U, la_, left_side=False, lower=False)
    l_dot = _mm(L, _tril(lau, -1))
    u_dot = _mm(_triu(lau), U)
    return [lu, pivots, perm], [ew.add(l_dot, u_dot), *zeros]


def _pad_identity(U, k):
    """U plus ones on the diagonal below row k (the rows padded in for a wide matrix)."""
    shape = aval_of(U).shape
    n = len(shape)
    row = st.broadcasted_iota(np.int32, shape, n - 2)
    diag = ew.bitwise_and(_band_mask(shape, 0, 0), ew.ge(row, np.int32(k)))
    return ew.convert_element_type(diag, aval_of(U).dtype)


la.lu_p.def_jvp(_lu_jvp)


# ---- qr ----------------------------------------------------------------------------------
def _thin_qr_jvp(q, r, t):
    """(dq, dr) of the reduced factorisation x = q r, q [..., m, n], r [..., n, n], m >= n,
    in direction t [..., m, n]."""
    dx_rinv = la.triangular_solve(r, t)  # dx r⁻¹ (a right-side solve)
    qt_dx_rinv = _mm(_mH(q), dx_rinv)
    lower = _tril(qt_dx_rinv, -1)
    do = ew.sub(lower, _mH(lower))  # skew-Hermitian
    if _is_complex(q):
        # the imaginary part of the diagonal goes into dq, so that r's diagonal stays real
        imag_diag = ew.sub(qt_dx_rinv, _like(ew.real(qt_dx_rinv), qt_dx_rinv))
        do = ew.add(do, ew.mul(_eye_like(qt_dx_rinv), imag_diag))
    dq = ew.add(_mm(q, ew.sub(do, qt_dx_rinv)), dx_rinv)
    dr = _mm(ew.sub(qt_dx_rinv, do), r)
    return dq, dr


def _cols(x, start, stop):
    """x[..., :, start:stop]."""
    *batch, m, _ = aval_of(x).shape
    return st.slice(x, (0,) * (len(batch) + 1) + (start,), (*batch, m, stop))


def _rows(x, start, stop):
    """x[..., start:stop, :]."""
    *batch, _, n = aval_of(x).shape
    return st.slice(x, (0,) * len(batch) + (start, 0), (*batch, stop, n))


def _qr_jvp(primals, tangents, *, full_matrices):
    (x,), (t,) = primals, tangents
    *_, m, n = aval_of(x).shape
    q, r = la.qr_p.bind(x, full_matrices=full_matrices)
    if type(t) is Zero or m == 0 or n == 0:  # an empty x: q is the constant identity
        return [q, r], [zero_out(q), zero_out(r)]
    if m < n:
        # x = [x1 x2] with x1 square: x1 = q r1 is a square QR, and r2 = qᴴ x2, so
        # dr2 = dqᴴ x2 + qᴴ dx2 (q is m x m whatever full_matrices says)
        dq, dr1 = _thin_qr_jvp(q, _cols(r, 0, m), _cols(t, 0, m))
        dr2 = ew.add(_mm(_mH(dq), _cols(x, m, n)), _mm(_mH(q), _cols(t, m, n)))
        return [q, r], [dq, st.concatenate([dr1, dr2], aval_of(x).ndim - 1)]
    if not full_matrices or m == n:
        dq, dr = _thin_qr_jvp(q, r, t)
        return [q, r], [dq, dr]
    # complete factorisation of a tall x (Roberts and Roberts, arXiv:2409.13374, eqs. 32-33):
    # q = [q_mn q_mp]; with q_mn = [q_nn; q_pn] and z = q_pn (q_nn - I)⁻¹, the completion's
    # tangent is dq_mp = dq_mn zᴴ - (q_mn + q_mp z) (dq_pn - z dq_nn)ᴴ; r gains zero rows
    nd = aval_of(x).ndim
    q_mn, q_mp = _cols(q, 0, n), _cols(q, n, m)
    dq_mn, dr_nn = _thin_qr_jvp(q_mn, _rows(r, 0, n), t)
    q_nn, q_pn = _rows(q_mn, 0, n), _rows(q_mn, n, m)
    dq_nn, dq_pn = _rows(dq_mn, 0, n), _rows(dq_mn, n, m)
    # zᴴ solves (q_nn - I)ᴴ zᴴ = q_pnᴴ
    z_h = _solve(_mH(ew.sub(q_nn, _eye_like(q_nn))), _mH(q_pn))
    z = _mH(z_h)
    dq_mp = ew.sub(_mm(dq_mn, z_h),
                   _mm(ew.add(q_mn, _mm(q_mp, z)), _mH(ew.sub(dq_pn, _mm(z, dq_nn)))))
    cfg = [(0, 0, 0)] * nd
    cfg[-2] = (0, m - n, 0)
    dr = st.pad(dr_nn, st.full((), 0, aval_of(r).dtype), cfg)
    return [q, r], [st.concatenate([dq_mn, dq_mp], nd - 1), dr]


def _solve(a, b):
    """a⁻¹ b for square a [..., k, k] and b [..., k, j] of equal batch dims, through lu_p
    (so that it differentiates again)."""
    lu, _, perm = la.lu(a)
    shape = aval_of(b).shape
    nb = len(shape) - 2
    pb = take_along_axis(b, st.broadcast_in_dim(perm, shape, (*range(nb), nb)), nb)
    y = la.triangular_solve(lu, pb, left_side=True, lower=True, unit_diagonal=True)
    return la.triangular_solve(lu, y, left_side=True, lower=False)


la.qr_p.def_jvp(_qr_jvp)


# ---- eigh --------------------------------------------------------------------------------
def _eigh_jvp(primals, tangents, *, lower):
    (x,), (t,) = primals, tangents
    v, w = la.eigh_p.bind(x, lower=lower)
    if type(t) is Zero:
        return [v, w], [zero_out(v), zero_out(w)]
    shape = aval_of(v).shape
    # 1 / (w_j - w_i), 0 where equal
    F = _safe_reciprocal(ew.sub(_row(w, shape), _col(w, shape)))
    vt_t_v = _mm(_mm(_mH(v), t), v)
    dv = _mm(v, ew.mul(_like(F, vt_t_v), vt_t_v))
    dw = _real(_diag_sum(vt_t_v))
    return [v, w], [dv, dw]


la.eigh_p.def_jvp(_eigh_jvp)


# ---- svd ---------------------------------------------------------------------------------
def _svd_jvp(primals, tangents, *, full_matrices, compute_uv):
    (A,), (dA,) = primals, tangents
    *_, m, n = aval_of(A).shape
    if compute_uv and full_matrices and m != n:
        raise TypeError(f"svd: the derivative of u and vh is defined for reduced "
                        f"decompositions (full_matrices=False) or square matrices, got an "
                        f"{m}x{n} matrix with full_matrices=True")
    s, U, Vt = la.svd_p.bind(A, full_matrices=False, compute_uv=True)
    outs = [s] if not compute_uv else [s, U, Vt]
    if type(dA) is Zero:
        return outs, [zero_out(o) for o in outs]
    Ut, V = _mH(U), _mH(Vt)
    dS = _mm(_mm(Ut, dA), V)
    kk = aval_of(dS).shape
    s_row = _row(s, kk)
    ds = _real(_diag_sum(dS))
    if not compute_uv:
        return [s], [ds]
    s_col = _col(s, kk)
    F = _like(_safe_reciprocal(ew.mul(ew.add(s_row, s_col), ew.sub(s_row, s_col))), dS)
    # the diagonal of F is 0 already (s_j² - s_i² = 0 there)
    dSS = ew.mul(_like(s_row, dS), dS)
    SdS = ew.mul(_like(s_col, dS), dS)
    s_inv = _safe_reciprocal(s)
    s_inv_mat = _like(ew.mul(_eye_like(s_row), _row(s_inv, kk)), dS)
    # (dS - dSᴴ) / 2 on the diagonal: zero for real input, i im(dS_ii) for complex
    dUdV_diag = ew.mul(ew.mul(ew.sub(dS, _mH(dS)), 0.5), s_inv_mat)
    dU = _mm(U, ew.add(ew.mul(F, ew.add(dSS, _mH(dSS))), dUdV_diag))
    dV = _mm(V, ew.mul(F, ew.add(SdS, _mH(SdS))))
    if m > n:
        dAV = _mm(dA, V)
        dU = ew.add(dU, ew.div(ew.sub(dAV, _mm(U, _mm(Ut, dAV))),
                               _like(_row(s, aval_of(dAV).shape), dAV)))
    if n > m:
        dAHU = _mm(_mH(dA), U)
        dV = ew.add(dV, ew.div(ew.sub(dAHU, _mm(V, _mm(Vt, dAHU))),
                               _like(_row(s, aval_of(dAHU).shape), dAHU)))
    return outs, [ds, dU, _mH(dV)]


la.svd_p.def_jvp(_svd_jvp)


# ---- tridiagonal_solve -------------------------------------------------------------------
def _shift(v, by, axis):
    """v shifted along `axis` by `by` (+1: v[i - 1] at i, -1: v[i + 1] at i), zero filled."""
    aval = aval_of(v)
    size = aval.shape[axis]
    start, limit = [0] * aval.ndim, list(aval.shape)
    cfg = [(0, 0, 0)] * aval.ndim
    if by > 0:
        limit[axis] = size - 1
        cfg[axis] = (1, 0, 0)
    else:
        start[axis] = 1
        cfg[axis] = (0, 1, 0)
    return st.pad(st.slice(v, tuple(start), tuple(limit)), st.full((), 0, aval.dtype), cfg)


def _tridiagonal_solve_jvp(primals, tangents, *, perturb_singular):
    dl, d, du, b = primals
    tdl, td, tdu, tb = tangents
    x = la.tridiagonal_solve_p.bind(dl, d, du, b, perturb_singular=perturb_singular)
    rhs = None if type(tb) is Zero else tb
    nd = aval_of(x).ndim
    # (Ȧ x)_i = dl̇_i x_{i-1} + ḋ_i x_i + du̇_i x_{i+1}
    for tv, shifted in ((tdl, lambda: _shift(x, 1, nd - 2)), (td, lambda: x),
                        (tdu, lambda: _shift(x, -1, nd - 2))):
        if type(tv) is Zero:
            continue
        term = ew.neg(ew.mul(_col(tv, aval_of(x).shape), shifted()))
        rhs = term if rhs is None else ew.add(rhs, term)
    if rhs is None:
        return x, zero_out(x)
    return x, la.tridiagonal_solve_p.bind(dl, d, du, rhs, perturb_singular=perturb_singular)


def _tridiagonal_solve_transpose(ct, dl, d, du, b, *, perturb_singular):
    if any(is_undefined(v) for v in (dl, d, du)):
        raise TypeError("tridiagonal_solve: the diagonals of a linear solve must not be "
                        "linear")
    if type(ct) is Zero:
        return [None, None, None, Zero(b.aval)]
    axis = aval_of(d).ndim - 1
    # Aᵀ's sub-diagonal at i is du[i - 1], its super-diagonal at i is dl[i + 1]
    dl_t, du_t = _shift(du, 1, axis), _shift(dl, -1, axis)
    return [None, None, None, la.tridiagonal_solve_p.bind(dl_t, d, du_t, ct,
                                                          perturb_singular=perturb_singular)]


la.tridiagonal_solve_p.def_jvp(_tridiagonal_solve_jvp)
la.tridiagonal_solve_p.def_transpose(_tridiagonal_solve_transpose)


# ---- batching ----------------------------------------------------------------------------
def _batch_at_front(prim):
    def rule(axis, args, dims, **params):
        xs = [bdim_at_front(x, d, axis.size) for x, d in zip(args, dims, strict=True)]
        out = prim.bind(*xs, **params)
        return (out, [0] * len(out)) if prim.multiple_results else (out, 0)
    prim.def_batching(rule)


for _prim in (la.cholesky_p, la.triangular_solve_p, la.lu_p, la.qr_p, la.eigh_p, la.svd_p,
              la.tridiagonal_solve_p):
    _batch_at_front(_prim)
