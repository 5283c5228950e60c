"""lax.linalg against numpy.linalg / scipy.linalg, reconstruction identities, float64 finite
differences (forward and reverse mode), vmap against a loop, and jit against eager."""

import numpy as np
import pytest
import scipy.linalg as sla
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch.lax import linalg as L
from tests.autodiff.fd import check_grads
from tests.dtype_fixtures import dtype_fixture


def _settings(n):
    return settings(max_examples=n, suppress_health_check=[HealthCheck.function_scoped_fixture])


# ---- well-conditioned inputs -------------------------------------------------------------
def _orthogonal(rng, n):
    q, r = np.linalg.qr(rng.standard_normal((n, n)))
    return q * np.sign(np.diag(r))


@st.composite
def spd(draw, batch=(), n=None):
    """A = Q diag(s) Qᵀ, s distinct in [0.5, 2] (well separated, for eigenvector FD)."""
    n = draw(st.integers(1, 4)) if n is None else n
    return _spd(np.random.default_rng(draw(st.integers(0, 2**32 - 1))), batch, n)


def _spd(rng, batch, n):
    out = np.empty((*batch, n, n))
    for idx in np.ndindex(*batch):
        s = 0.5 + 1.5 * (np.arange(n) + rng.uniform(0.1, 0.9, n)) / n
        q = _orthogonal(rng, n)
        out[idx] = (q * s) @ q.T
    return out


@st.composite
def general(draw, batch=(), m=None, n=None):
    """Random matrices, + max(m, n) I on the square part (well conditioned)."""
    m = draw(st.integers(1, 4)) if m is None else m
    n = draw(st.integers(1, 4)) if n is None else n
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    return rng.standard_normal((*batch, m, n)) + max(m, n) * np.eye(m, n)


def _sign_fixed(v):
    """Eigen/singular vectors (columns) with a fixed sign, for comparing decompositions."""
    return v * np.where(np.sum(v, axis=-2, keepdims=True) < 0, -1, 1)


def _a(x):
    return np.asarray(x)


TOL = {np.float32: dict(rtol=2e-4, atol=2e-5), np.float64: dict(rtol=1e-10, atol=1e-11)}


dtype = dtype_fixture(np.float32, np.float64)


# ---- values ------------------------------------------------------------------------------
@_settings(10)
@given(data=st.data())
def test_cholesky_values(dtype, data):
    a = data.draw(spd(batch=(2,))).astype(dtype)
    got = _a(L.cholesky(a))
    assert got.dtype == dtype
    np.testing.assert_allclose(got, np.linalg.cholesky(a), **TOL[dtype])
    np.testing.assert_allclose(got @ np.swapaxes(got, -1, -2), a, **TOL[dtype])


def test_cholesky_not_positive_definite_gives_nans_for_that_matrix_only():
    a = np.stack([np.eye(3), -np.eye(3)]).astype(np.float32)
    got = _a(L.cholesky(a))
    np.testing.assert_array_equal(got[0], np.eye(3))
    assert np.isnan(got[1]).all()


@_settings(10)
@given(data=st.data(), left_side=st.booleans(), lower=st.booleans(),
       transpose_a=st.booleans(), unit_diagonal=st.booleans())
def test_triangular_solve_values(dtype, data, left_side, lower, transpose_a, unit_diagonal):
    m, n = data.draw(st.integers(1, 4)), data.draw(st.integers(1, 4))
    k = m if left_side else n
    a = data.draw(general(batch=(2,), m=k, n=k)).astype(dtype)
    b = data.draw(general(batch=(2,), m=m, n=n)).astype(dtype)
    got = _a(L.triangular_solve(a, b, left_side=left_side, lower=lower,
                                transpose_a=transpose_a, unit_diagonal=unit_diagonal))
    tri = np.tril(a) if lower else np.triu(a)
    if unit_diagonal:
        tri[..., np.arange(k), np.arange(k)] = 1
    op = np.swapaxes(tri, -1, -2) if transpose_a else tri
    for i in range(2):
        want = (sla.solve_triangular(op[i], b[i], lower=lower != transpose_a) if left_side
                else sla.solve_triangular(op[i].T, b[i].T, lower=lower == transpose_a).T)
        np.testing.assert_allclose(got[i], want, **TOL[dtype])


@_settings(10)
@given(data=st.data())
def test_lu_values_and_reconstruction(dtype, data):
    a = data.draw(general(batch=(2,))).astype(dtype)
    a = a + np.random.default_rng(0).standard_normal(a.shape).astype(dtype)  # pivoting
    lu, pivots, perm = (_a(v) for v in L.lu(a))
    assert pivots.dtype == perm.dtype == np.int32
    m, n = a.shape[-2:]
    k = min(m, n)
    for i in range(2):
        low = np.tril(lu[i][:, :k], -1) + np.eye(m, k)
        up = np.triu(lu[i][:k])
        np.testing.assert_allclose(low @ up, a[i][perm[i]], **TOL[dtype])
        rows = np.arange(m)
        for j, p in enumerate(pivots[i]):  # the pivots applied in order give perm
            rows[[j, p]] = rows[[p, j]]
        np.testing.assert_array_equal(rows, perm[i])
        if m == n:
            want_lu, want_piv = sla.lu_factor(a[i].astype(np.float64))
            np.testing.assert_array_equal(pivots[i], want_piv)
            np.testing.assert_allclose(lu[i], want_lu, rtol=1e-3 if dtype == np.float32
                                       else 1e-9, atol=1e-4 if dtype == np.float32 else 1e-10)


@_settings(10)
@given(data=st.data(), full_matrices=st.booleans())
def test_qr_values_and_reconstruction(dtype, data, full_matrices):
    a = data.draw(general(batch=(2,))).astype(dtype)
    q, r = _a(L.qr(a, full_matrices=full_matrices)[0]), _a(L.qr(a, full_matrices=full_matrices)[1])
    wq, wr = np.linalg.qr(a, mode="complete" if full_matrices else "reduced")
    assert q.shape == wq.shape and r.shape == wr.shape
    np.testing.assert_allclose(q @ r, a, **TOL[dtype])
    np.testing.assert_allclose(np.abs(r), np.abs(wr), **TOL[dtype])
    assert np.allclose(np.tril(r, -1), 0)


@_settings(10)
@given(data=st.data())
def test_eigh_values_and_reconstruction(dtype, data):
    a = data.draw(spd(batch=(2,))).astype(dtype)
    v, w = (_a(x) for x in L.eigh(a))
    ww, wv = np.linalg.eigh(a)
    np.testing.assert_allclose(w, ww, **TOL[dtype])
    np.testing.assert_allclose(_sign_fixed(v), _sign_fixed(wv), rtol=1e-3 if dtype ==
                               np.float32 else 1e-9, atol=1e-3 if dtype == np.float32 else 1e-9)
    np.testing.assert_allclose((v * w[..., None, :]) @ np.swapaxes(v, -1, -2), a,
                               **TOL[dtype])


def test_eigh_reads_one_triangle_without_symmetrizing():
    a = np.array([[2.0, 100.0], [1.0, 3.0]], np.float32)
    for lower, tri in ((True, np.tril(a)), (False, np.triu(a))):
        sym = tri + np.triu(tri.T, 1) if lower else tri + np.tril(tri.T, -1)
        _, w = L.eigh(a, lower=lower, symmetrize_input=False)
        np.testing.assert_allclose(_a(w), np.linalg.eigvalsh(sym), rtol=1e-5)


@_settings(10)
@given(data=st.data(), full_matrices=st.booleans())
def test_svd_values_and_reconstruction(dtype, data, full_matrices):
    a = data.draw(general(batch=(2,))).astype(dtype)
    u, s, vh = (_a(x) for x in L.svd(a, full_matrices=full_matrices))
    wu, ws, wvh = np.linalg.svd(a, full_matrices=full_matrices)
    assert u.shape == wu.shape and vh.shape == wvh.shape
    np.testing.assert_allclose(s, ws, **TOL[dtype])
    np.testing.assert_allclose(_a(L.svd(a, compute_uv=False)), ws, **TOL[dtype])
    k = s.shape[-1]
    np.testing.assert_allclose((u[..., :k] * s[..., None, :]) @ vh[..., :k, :], a,
                               **TOL[dtype])


def _tridiagonal(rng, batch, m, dtype):
    dl, du = rng.standard_normal((2, *batch, m))
    d = 3 + rng.random((*batch, m))  # diagonally dominant
    dl[..., 0] = du[..., -1] = 0
    return dl.astype(dtype), d.astype(dtype), du.astype(dtype)


def _dense(dl, d, du):
    return (np.vectorize(np.diag, signature="(m)->(m,m)")(d)
            + np.vectorize(lambda v: np.diag(v[1:], -1), signature="(m)->(m,m)")(dl)
            + np.vectorize(lambda v: np.diag(v[:-1], 1), signature="(m)->(m,m)")(du))


@_settings(10)
@given(m=st.integers(1, 5), n=st.integers(1, 3), seed=st.integers(0, 1000))
def test_tridiagonal_solve_values(dtype, m, n, seed):
    rng = np.random.default_rng(seed)
    dl, d, du = _tridiagonal(rng, (2,), m, dtype)
    b = rng.standard_normal((2, m, n)).astype(dtype)
    got = _a(L.tridiagonal_solve(dl, d, du, b))
    np.testing.assert_allclose(got, np.linalg.solve(_dense(dl, d, du), b), **TOL[dtype])


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize("zeros", [(0,), (1,), (0, 2), (3,)])
def test_tridiagonal_solve_pivots_past_zero_diagonal_entries(x64, dtype, zeros):
    # nonsingular systems whose diagonal has zeros need row swaps (LAPACK's gtsv pivots);
    # elimination without them divides by zero
    rng = np.random.default_rng(8)
    dl, d, du = _tridiagonal(rng, (3,), 5, dtype)
    d[..., list(zeros)] = 0
    b = rng.standard_normal((3, 5, 2)).astype(dtype)
    for fn in (L.tridiagonal_solve, mt.jit(L.tridiagonal_solve)):
        np.testing.assert_allclose(_a(fn(dl, d, du, b)),
                                   np.linalg.solve(_dense(dl, d, du), b), rtol=1e-10)
    check_grads(L.tridiagonal_solve, (dl[0], d[0], du[0], b[0]), order=1, rtol=1e-5,
                atol=1e-7)


def test_tridiagonal_solve_perturb_singular_gives_large_finite_solutions():
    z = np.zeros(3, np.float32)
    one = np.ones((3, 1), np.float32)
    assert not np.isfinite(_a(L.tridiagonal_solve(z, z, z, one))).all()
    x = _a(L.tridiagonal_solve(z, z, z, one, perturb_singular=True))
    assert np.isfinite(x).all() and (np.abs(x) > 1e6).all()
    # [[1, 3], [1, 3]] is singular: its second pivot is 0
    dl, d, du = (np.array(v, np.float32) for v in ([0, 1], [1, 3], [3, 0]))
    x = _a(L.tridiagonal_solve(dl, d, du, np.array([[1], [4]], np.float32),
                               perturb_singular=True))
    assert np.isfinite(x).all() and (np.abs(x) > 1e6).all()
    # a nonsingular system is unaffected
    dl, d, du = _tridiagonal(np.random.default_rng(9), (), 4, np.float32)
    b = np.ones((4, 1), np.float32)
    np.testing.assert_allclose(_a(L.tridiagonal_solve(dl, d, du, b, perturb_singular=True)),
                               _a(L.tridiagonal_solve(dl, d, du, b)))


@pytest.mark.parametrize("algorithm", [None, *L.SvdAlgorithm])
def test_svd_algorithm_and_subset_by_index(x64, algorithm):
    rng = np.random.default_rng(10)
    a = rng.standard_normal((2, 5, 3))
    _, s0, _ = np.linalg.svd(a)
    u, s, vh = (_a(v) for v in L.svd(a, full_matrices=False, algorithm=algorithm))
    np.testing.assert_allclose(s, s0, rtol=1e-12)
    u, s, vh = (_a(v) for v in L.svd(a, full_matrices=False, subset_by_index=(1, 3),
                                       algorithm=algorithm))
    assert u.shape == (2, 5, 2) and vh.shape == (2, 2, 3)
    np.testing.assert_allclose(s, s0[:, 1:3], rtol=1e-12)
    # the kept triplets are singular triplets: a v = s u
    np.testing.assert_allclose(a @ np.swapaxes(vh, -1, -2), u * s[:, None, :], atol=1e-12)
    np.testing.assert_allclose(_a(L.svd(a, compute_uv=False, subset_by_index=(0, 1))),
                               s0[:, :1], rtol=1e-12)
    check_grads(lambda x: L.svd(x, compute_uv=False, subset_by_index=(1, 3)), (a,),
                order=1)
    with pytest.raises(ValueError, match="subset_by_index must be"):
        L.svd(a, full_matrices=False, subset_by_index=(2, 5))
    with pytest.raises(ValueError, match="full_matrices and a subset_by_index"):
        L.svd(a, subset_by_index=(0, 2))


def test_eig_takes_jaxs_implementation_switches():
    a = np.random.default_rng(11).standard_normal((3, 3)).astype(np.float32)
    want = _a(L.eig(a)[0])
    for impl in (None, *L.EigImplementation):
        got = L.eig(a, implementation=impl, enable_eigvec_derivs=True, use_magma=False)
        np.testing.assert_array_equal(_a(got[0]), want)


@pytest.mark.parametrize("left_side", [True, False])
@pytest.mark.parametrize("batch", [(), (2,)])
def test_triangular_solve_of_a_vector(x64, left_side, batch):
    # b one dimension shorter than a is one column (left_side) or row per matrix
    rng = np.random.default_rng(13)
    a = np.tril(rng.standard_normal((*batch, 4, 4))) + 4 * np.eye(4)
    b = rng.standard_normal((*batch, 4))
    x = _a(L.triangular_solve(a, b, left_side=left_side, lower=True))
    col = b[..., :, None] if left_side else b[..., None, :]
    want = _a(L.triangular_solve(a, col, left_side=left_side, lower=True))
    np.testing.assert_allclose(x, want[..., 0] if left_side else want[..., 0, :], rtol=1e-14)
    check_grads(lambda m, v: L.triangular_solve(m, v, left_side=left_side, lower=True),
                (a, b), order=1)


@pytest.mark.parametrize("shape", [(5, 4), (3, 4, 4), (2, 3, 2, 6)])
def test_lu_pivots_to_permutation_matches_lu(shape):
    rng = np.random.default_rng(14)
    a = rng.standard_normal(shape).astype(np.float32)
    _, pivots, perm = L.lu(a)
    m = shape[-2]
    for fn in (L.lu_pivots_to_permutation, mt.jit(L.lu_pivots_to_permutation,
                                                  static_argnums=1)):
        np.testing.assert_array_equal(_a(fn(pivots, m)), _a(perm))
    # rows applied in the pivots' order, one interchange at a time (a loop definition)
    piv = _a(pivots).reshape(-1, pivots.shape[-1])
    for p, got in zip(piv, _a(L.lu_pivots_to_permutation(pivots, m + 2)).reshape(len(piv), -1)):
        want = np.arange(m + 2)
        for i, j in enumerate(p):
            want[[i, j]] = want[[j, i]]
        np.testing.assert_array_equal(got, want)
    flat = pivots.reshape((-1, pivots.shape[-1]))
    np.testing.assert_array_equal(_a(mt.vmap(lambda p: L.lu_pivots_to_permutation(p, m))(flat)),
                                  _a(perm).reshape(-1, m))


def test_symmetric_product(x64):
    rng = np.random.default_rng(15)
    a, c = rng.standard_normal((2, 4, 3)), rng.standard_normal((2, 4, 4))
    c = c + np.swapaxes(c, -1, -2)
    got = L.symmetric_product(a, c, alpha=2.0, beta=0.5)
    np.testing.assert_allclose(_a(got), 2 * a @ np.swapaxes(a, -1, -2) + 0.5 * c, rtol=1e-14)
    check_grads(lambda x, y: L.symmetric_product(x, y, alpha=2.0, beta=0.5), (a, c), order=1)


@pytest.mark.parametrize("shape", [(5, 3), (4, 4), (3, 5), (2, 6, 4), (0, 2), (2, 0)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
def test_geqrf_householder_product_and_ormqr(x64, shape, dtype):
    rng = np.random.default_rng(16)
    complex_ = np.dtype(dtype).kind == "c"
    a = (rng.standard_normal(shape) + (1j * rng.standard_normal(shape) if complex_ else 0)
         ).astype(dtype)
    tol = TOL[np.float32 if np.dtype(dtype) in (np.float32, np.complex64) else np.float64]
    h, taus = (_a(v) for v in L.geqrf(a))
    lapack = sla.lapack.get_lapack_funcs("geqrf", dtype=np.dtype(dtype))
    for idx in np.ndindex(*shape[:-2]):
        h0, t0 = lapack(a[idx])[:2]
        np.testing.assert_allclose(h[idx], h0, **tol)
        np.testing.assert_allclose(taus[idx], t0, **tol)
    np.testing.assert_allclose(_a(mt.vmap(L.geqrf)(a[None])[0])[0], h, **tol)
    m, n = shape[-2:]
    if min(m, n) == 0:
        return
    # q = H_0 ... H_k-1 (complete, m x m) from the square leading block or zero-padded
    hm = h[..., :, :m] if n >= m else np.concatenate(
        [h, np.zeros(shape[:-2] + (m, m - n), dtype)], axis=-1)
    q = _a(L.householder_product(hm, taus))
    np.testing.assert_allclose(np.conj(np.swapaxes(q, -1, -2)) @ q, np.broadcast_to(
        np.eye(m), q.shape), atol=1e-5)
    r = np.triu(h)
    np.testing.assert_allclose(q @ r, a, atol=1e-4)
    for left in (True, False):
        for transpose in (False, True):
            c = rng.standard_normal(shape[:-2] + ((m, 2) if left else (2, m))).astype(dtype)
            op = np.conj(np.swapaxes(q, -1, -2)) if transpose else q
            want = op @ c if left else c @ op
            got = _a(L.ormqr(h, taus, c, left=left, transpose=transpose))
            np.testing.assert_allclose(got, want, atol=1e-4)


def test_householder_product_and_ormqr_derivatives(x64):
    rng = np.random.default_rng(17)
    h, taus = (_a(v) for v in L.geqrf(rng.standard_normal((5, 3))))
    c = rng.standard_normal((5, 2))
    check_grads(L.householder_product, (h, taus), order=1)
    check_grads(L.geqrf, (rng.standard_normal((2, 4, 3)),), order=1)
    check_grads(L.geqrf, (rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4)),),
                order=1)
    check_grads(lambda x, t, y: L.ormqr(x, t, y, transpose=True), (h, taus, c), order=1)


# ---- errors ------------------------------------------------------------------------------
def test_errors_name_the_operation_and_shapes():
    with pytest.raises(ValueError, match="cholesky.*square"):
        L.cholesky(np.zeros((2, 3), np.float32))
    with pytest.raises(TypeError, match="qr needs float32, float64, complex64 or complex128"):
        L.qr(np.zeros((2, 2), np.int32))
    with pytest.raises(ValueError, match="rank >= 2"):
        L.svd(np.zeros(3, np.float32))
    with pytest.raises(ValueError, match="triangular_solve"):
        L.triangular_solve(np.eye(3, dtype=np.float32), np.zeros((2, 2), np.float32),
                           left_side=True)
    with pytest.raises(ValueError, match="tridiagonal_solve: d"):
        L.tridiagonal_solve(*np.zeros((2, 3), np.float32), np.zeros(2, np.float32),
                            np.zeros((3, 1), np.float32))


# ---- derivatives (float64 central differences, forward and reverse) ----------------------
def _fixed(v):
    return v * mnp.sign(mnp.sum(v, axis=-2, keepdims=True))


def _tri_args(rng, m, n, k):
    return rng.standard_normal((k, k)) + 3 * np.eye(k), rng.standard_normal((m, n))


@_settings(5)
@given(data=st.data())
def test_cholesky_derivatives(x64, data):
    a = data.draw(spd())
    check_grads(lambda x: L.cholesky(x), (a,), order=2, rtol=1e-4, atol=1e-6)


@_settings(5)
@given(data=st.data(), left_side=st.booleans(), lower=st.booleans(),
       transpose_a=st.booleans(), unit_diagonal=st.booleans())
def test_triangular_solve_derivatives(x64, data, left_side, lower, transpose_a,
                                      unit_diagonal):
    m, n = data.draw(st.integers(1, 4)), data.draw(st.integers(1, 4))
    a, b = _tri_args(np.random.default_rng(data.draw(st.integers(0, 99))), m, n,
                     m if left_side else n)
    f = lambda a, b: L.triangular_solve(a, b, left_side=left_side, lower=lower,  # noqa: E731
                                        transpose_a=transpose_a, unit_diagonal=unit_diagonal)
    check_grads(f, (a, b), order=2, rtol=1e-4, atol=1e-6)


@_settings(5)
@given(data=st.data())
def test_lu_derivatives(x64, data):
    a = data.draw(general())
    check_grads(lambda x: L.lu(x)[0], (a,), order=2, rtol=1e-4, atol=1e-6)


@_settings(5)
@given(data=st.data(), square=st.booleans())
def test_qr_derivatives(x64, data, square):
    n = data.draw(st.integers(1, 3))
    a = data.draw(general(m=n if square else n + 1, n=n))
    check_grads(lambda x: L.qr(x, full_matrices=square), (a,), order=2, rtol=1e-4,
                atol=1e-6)


@_settings(5)
@given(data=st.data(), full_matrices=st.booleans(), batch=st.sampled_from([(), (2,)]))
def test_qr_derivatives_of_wide_matrices(x64, data, full_matrices, batch):
    # x = [x1 x2], x1 square: q r1 = x1 is a square QR and r2 = qᴴ x2
    m = data.draw(st.integers(1, 3))
    a = data.draw(general(batch=batch, m=m, n=m + data.draw(st.integers(1, 2))))
    check_grads(lambda x: L.qr(x, full_matrices=full_matrices), (a,), order=2, rtol=1e-4,
                atol=1e-6)


@pytest.mark.parametrize("shape", [(5, 3), (4, 1), (2, 6, 2)])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_qr_complete_derivative_of_a_tall_matrix_follows_numpys_completion(x64, shape, dtype):
    # the last m - n columns of a complete q are one completion of the column space; its
    # tangent is that of LAPACK's Householder completion, which NumPy returns
    rng = np.random.default_rng(4)
    a, t = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
            if dtype == np.complex128 else rng.standard_normal(shape) for _ in range(2))
    eps = 1e-6
    qr = lambda x: np.linalg.qr(x, mode="complete")
    want_q = (qr(a + eps * t).Q - qr(a - eps * t).Q) / (2 * eps)
    want_r = (qr(a + eps * t).R - qr(a - eps * t).R) / (2 * eps)
    _, (dq, dr) = mt.jvp(lambda x: L.qr(x, full_matrices=True), (a,), (t,))
    np.testing.assert_allclose(np.asarray(dq), want_q, atol=1e-7)
    np.testing.assert_allclose(np.asarray(dr), want_r, atol=1e-7)
    check_grads(lambda x: L.qr(x, full_matrices=True), (a,), order=1, rtol=1e-4, atol=1e-6)


def test_qr_derivative_of_an_empty_matrix_is_zero(x64):
    for shape in [(0, 2), (2, 0)]:
        _, (dq, dr) = mt.jvp(lambda x: L.qr(x, full_matrices=True), (np.zeros(shape),),
                             (np.zeros(shape),))
        assert not np.asarray(dq).any() and np.asarray(dr).shape == shape


@_settings(5)
@given(data=st.data())
def test_eigh_derivatives(x64, data):
    a = data.draw(spd())

    def f(x):
        v, w = L.eigh(x)
        return _fixed(v), w

    check_grads(f, (a,), order=2, rtol=1e-4, atol=1e-6)


def test_eigh_degenerate_eigenvalues_give_finite_derivatives(x64):
    t = np.random.default_rng(0).standard_normal((3, 3))
    _, (dv, dw) = mt.jvp(L.eigh, (mnp.asarray(np.eye(3)),), (mnp.asarray(t + t.T),))
    assert np.isfinite(_a(dv)).all()
    np.testing.assert_allclose(_a(dw), np.diag(_a(L.eigh(np.eye(3))[0]).T @ (t + t.T)
                                               @ _a(L.eigh(np.eye(3))[0])), atol=1e-12)


@_settings(5)
@given(data=st.data(), shape=st.sampled_from([(3, 3), (4, 2), (2, 4), (1, 3)]))
def test_svd_derivatives(x64, data, shape):
    a = data.draw(general(m=shape[0], n=shape[1]))

    def f(x):
        u, s, vh = L.svd(x, full_matrices=False)
        return _fixed(u), s, vh * mnp.sign(mnp.sum(u, axis=-2))[..., :, None]

    check_grads(f, (a,), order=1, rtol=1e-4, atol=1e-6)
    check_grads(lambda x: L.svd(x, compute_uv=False), (a,), order=2, rtol=1e-4, atol=1e-6)


@_settings(5)
@given(m=st.integers(1, 5), n=st.integers(1, 3), seed=st.integers(0, 1000))
def test_tridiagonal_solve_derivatives(x64, m, n, seed):
    rng = np.random.default_rng(seed)
    dl, d, du = _tridiagonal(rng, (), m, np.float64)
    b = rng.standard_normal((m, n))
    check_grads(L.tridiagonal_solve, (dl, d, du, b), order=2, rtol=1e-4, atol=1e-6)


def test_grad_of_a_scalar_function(x64):
    a = _spd(np.random.default_rng(0), (), 3)
    # log det through cholesky: d/dA = A⁻¹ (A symmetric)
    g = mt.grad(lambda x: 2 * mnp.sum(mnp.log(mnp.diagonal(L.cholesky(x)))))(a)
    np.testing.assert_allclose(_a(g), np.linalg.inv(a), rtol=1e-8, atol=1e-10)
    # sum of eigenvalues is the trace
    g = mt.grad(lambda x: mnp.sum(L.eigh(x)[1]))(a)
    np.testing.assert_allclose(_a(g), np.eye(3), atol=1e-10)


# ---- vmap == loop, jit == eager ----------------------------------------------------------
def _cases(rng):
    a = _spd(np.random.default_rng(1), (3,), 3)
    g = rng.standard_normal((3, 4, 3)) + 3 * np.eye(4, 3)
    b = rng.standard_normal((3, 3, 2))
    dl, d, du = _tridiagonal(rng, (3,), 3, np.float64)
    return [
        (lambda x: L.cholesky(x), (a,)),
        (lambda x, y: L.triangular_solve(x, y, left_side=True, lower=True), (a, b)),
        (lambda x: L.lu(x), (g,)),
        (lambda x: L.qr(x, full_matrices=False), (g,)),
        (lambda x: L.eigh(x), (a,)),
        (lambda x: L.svd(x, full_matrices=False), (g,)),
        (L.tridiagonal_solve, (dl, d, du, b)),
    ]


@pytest.mark.parametrize("i", range(7))
def test_vmap_matches_loop_and_jit_matches_eager(x64, i):
    fn, args = _cases(np.random.default_rng(i))[i]
    got = mt.vmap(fn)(*args)
    want = [fn(*[x[j] for x in args]) for j in range(3)]
    got_leaves = mt.tree_util.tree_leaves(got)
    for k, leaf in enumerate(got_leaves):
        for j in range(3):
            np.testing.assert_allclose(_a(leaf)[j], _a(mt.tree_util.tree_leaves(want[j])[k]),
                                       rtol=1e-10, atol=1e-12)
    # a batch dim that is not first, and an unbatched operand
    if len(args) == 2:
        got = mt.vmap(fn, in_axes=(None, 2))(args[0][0], args[1])
        for j in range(2):
            np.testing.assert_allclose(_a(got)[j], _a(fn(args[0][0], args[1][..., j])),
                                       rtol=1e-10)
    eager = mt.tree_util.tree_leaves(fn(*args))
    jitted = mt.tree_util.tree_leaves(mt.jit(fn)(*args))
    for e, j in zip(eager, jitted):
        np.testing.assert_array_equal(_a(e), _a(j))


def test_vmap_of_grad(x64):
    a = _spd(np.random.default_rng(1), (3,), 3)
    g = mt.vmap(mt.grad(lambda x: mnp.sum(L.cholesky(x) ** 2)))(a)
    for j in range(3):
        np.testing.assert_allclose(
            _a(g)[j], _a(mt.grad(lambda x: mnp.sum(L.cholesky(x) ** 2))(a[j])), rtol=1e-10)
