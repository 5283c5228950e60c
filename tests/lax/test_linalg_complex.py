"""lax.linalg on complex64/complex128: values against numpy.linalg / scipy.linalg,
reconstruction identities (L Lᴴ = A, Q R = A, A V = V diag(w), U S Vᴴ = A), derivatives
against central differences in complex directions (values paired by re(sum(a b))), grads of
real losses against differences in the real and imaginary directions, vmap against a loop
and jit against eager."""

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


# ---- well-conditioned complex inputs -----------------------------------------------------
def _cnormal(rng, shape):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def _unitary(rng, n):
    q, r = np.linalg.qr(_cnormal(rng, (n, n)))
    return q * (np.diag(r) / np.abs(np.diag(r)))


def _hpd(rng, batch, n):
    """A = Q diag(s) Qᴴ, Q unitary, s distinct in [0.5, 2] (well separated)."""
    out = np.empty((*batch, n, n), np.complex128)
    for idx in np.ndindex(*batch):
        s = 0.5 + 1.5 * (np.arange(n) + rng.uniform(0.1, 0.9, n)) / n
        q = _unitary(rng, n)
        out[idx] = (q * s) @ q.conj().T
    return out


def _general(rng, batch, m, n):
    """Random complex matrices, + max(m, n) I on the square part (well conditioned)."""
    return _cnormal(rng, (*batch, m, n)) + max(m, n) * np.eye(m, n)


@st.composite
def hpd(draw, batch=(), n=None):
    n = draw(st.integers(1, 4)) if n is None else n
    return _hpd(np.random.default_rng(draw(st.integers(0, 2**32 - 1))), batch, n)


@st.composite
def general(draw, batch=(), m=None, n=None):
    m = draw(st.integers(1, 4)) if m is None else m
    n = draw(st.integers(1, 4)) if n is None else n
    return _general(np.random.default_rng(draw(st.integers(0, 2**32 - 1))), batch, m, n)


def _a(x):
    return np.asarray(x)


def _H(x):
    return np.conj(np.swapaxes(x, -1, -2))


REAL = {np.complex64: np.float32, np.complex128: np.float64}
TOL = {np.complex64: dict(rtol=5e-4, atol=5e-5), np.complex128: dict(rtol=1e-10, atol=1e-11)}


dtype = dtype_fixture(np.complex64, np.complex128)


# ---- values ------------------------------------------------------------------------------
@_settings(10)
@given(data=st.data())
def test_cholesky_values(dtype, data):
    a = data.draw(hpd(batch=(2,))).astype(dtype)
    got = _a(L.cholesky(a))
    assert got.dtype == dtype
    np.testing.assert_allclose(got, np.linalg.cholesky(a), **TOL[dtype])
    np.testing.assert_allclose(got @ _H(got), a, **TOL[dtype])


def test_cholesky_reads_the_hermitian_part_or_the_lower_triangle():
    rng = np.random.default_rng(0)
    a = _hpd(rng, (), 3).astype(np.complex64)
    noise = np.triu(_cnormal(rng, (3, 3)), 1).astype(np.complex64)
    # symmetrize_input=False reads the lower triangle and the real part of the diagonal
    got = _a(L.cholesky(a + noise + 1j * np.eye(3, dtype=np.complex64),
                        symmetrize_input=False))
    np.testing.assert_allclose(got, np.linalg.cholesky(a), rtol=1e-4, atol=1e-5)
    # the default uses (x + xᴴ) / 2
    skew = (noise - _H(noise)).astype(np.complex64)
    np.testing.assert_allclose(_a(L.cholesky(a + skew)), np.linalg.cholesky(a), rtol=1e-4,
                               atol=1e-5)


def test_cholesky_not_positive_definite_gives_nans_for_that_matrix_only():
    a = np.stack([np.eye(3), -np.eye(3)]).astype(np.complex64)
    got = _a(L.cholesky(a))
    np.testing.assert_array_equal(got[0], np.eye(3))
    assert np.isnan(got[1]).all()


@_settings(10)
@given(data=st.data(), left_side=st.booleans(), lower=st.booleans(),
       transpose_a=st.booleans(), conjugate_a=st.booleans(), unit_diagonal=st.booleans())
def test_triangular_solve_values(dtype, data, left_side, lower, transpose_a, conjugate_a,
                                 unit_diagonal):
    m, n = data.draw(st.integers(1, 4)), data.draw(st.integers(1, 4))
    k = m if left_side else n
    a = data.draw(general(batch=(2,), m=k, n=k)).astype(dtype)
    b = data.draw(general(batch=(2,), m=m, n=n)).astype(dtype)
    got = _a(L.triangular_solve(a, b, left_side=left_side, lower=lower,
                                transpose_a=transpose_a, conjugate_a=conjugate_a,
                                unit_diagonal=unit_diagonal))
    assert got.dtype == dtype
    tri = np.tril(a) if lower else np.triu(a)
    if unit_diagonal:
        tri[..., np.arange(k), np.arange(k)] = 1
    op = np.conj(tri) if conjugate_a else tri
    op = np.swapaxes(op, -1, -2) if transpose_a else op
    want = np.linalg.solve(op, b) if left_side else _H(np.linalg.solve(_H(op), _H(b)))
    np.testing.assert_allclose(got, want, **TOL[dtype])


@pytest.mark.parametrize("trans", [0, 1, 2])
def test_triangular_solve_transpose_and_conjugate_follow_lapack(trans):
    """op(a) = a, aᵀ, aᴴ, as scipy's trans=0, 1, 2."""
    rng = np.random.default_rng(trans)
    a = np.triu(_general(rng, (), 4, 4))
    b = _cnormal(rng, (4, 2))
    got = _a(L.triangular_solve(a.astype(np.complex64), b.astype(np.complex64),
                                left_side=True, lower=False, transpose_a=trans > 0,
                                conjugate_a=trans == 2))
    np.testing.assert_allclose(got, sla.solve_triangular(a, b, trans=trans), rtol=1e-4,
                               atol=1e-5)


@_settings(10)
@given(data=st.data())
def test_lu_values_and_reconstruction(dtype, data):
    a = data.draw(general(batch=(2,))).astype(dtype)
    a = a + _cnormal(np.random.default_rng(0), a.shape).astype(dtype)  # pivoting
    lu, pivots, perm = (_a(v) for v in L.lu(a))
    assert lu.dtype == dtype and pivots.dtype == perm.dtype == np.int32
    m, n = a.shape[-2:]
    k = min(m, n)
    for i in range(2):
        low = np.tril(lu[i][:, :k], -1) + np.eye(m, k)
        up = np.triu(lu[i][:k])
        np.testing.assert_allclose(low @ up, a[i][perm[i]], **TOL[dtype])
        if m == n:
            want_lu, want_piv = sla.lu_factor(a[i].astype(np.complex128))
            np.testing.assert_array_equal(pivots[i], want_piv)
            np.testing.assert_allclose(lu[i], want_lu, rtol=1e-3 if dtype == np.complex64
                                       else 1e-9, atol=1e-4 if dtype == np.complex64
                                       else 1e-10)


def test_lu_pivots_on_abs_re_plus_abs_im_as_lapack():
    # |3 + 3i| > |4| but |3| + |3| = 6 > 4 too; |4.5| > |3 + 3i| = 4.24 while 6 > 4.5
    a = np.array([[4.5, 1], [3 + 3j, 2]], np.complex64)
    _, pivots, _ = L.lu(a)
    np.testing.assert_array_equal(_a(pivots), sla.lu_factor(a)[1])
    assert _a(pivots)[0] == 1


@_settings(10)
@given(data=st.data(), full_matrices=st.booleans())
def test_qr_values_and_reconstruction(dtype, data, full_matrices):
    a = data.draw(general(batch=(2,))).astype(dtype)
    q, r = (_a(x) for x in L.qr(a, full_matrices=full_matrices))
    wq, wr = np.linalg.qr(a, mode="complete" if full_matrices else "reduced")
    assert q.shape == wq.shape and r.shape == wr.shape and q.dtype == r.dtype == dtype
    np.testing.assert_allclose(q @ r, a, **TOL[dtype])
    np.testing.assert_allclose(_H(q) @ q, np.broadcast_to(np.eye(q.shape[-1]), _H(q).shape
                                                          [:-1] + (q.shape[-1],)),
                               **TOL[dtype])
    np.testing.assert_allclose(np.abs(r), np.abs(wr), **TOL[dtype])
    assert np.allclose(np.tril(r, -1), 0)


@_settings(10)
@given(data=st.data(), lower=st.booleans())
def test_eigh_values_and_reconstruction(dtype, data, lower):
    a = data.draw(hpd(batch=(2,))).astype(dtype)
    v, w = (_a(x) for x in L.eigh(a, lower=lower))
    assert v.dtype == dtype and w.dtype == REAL[dtype]
    np.testing.assert_allclose(w, np.linalg.eigvalsh(a), **TOL[dtype])
    np.testing.assert_allclose(a @ v, v * w[..., None, :], **TOL[dtype])
    np.testing.assert_allclose(_H(v) @ v, np.broadcast_to(np.eye(a.shape[-1]), a.shape),
                               **TOL[dtype])


def test_eigh_reads_one_triangle_without_symmetrizing():
    a = np.array([[2.0, 100.0 + 7j], [1.0 - 2j, 3.0]], np.complex64)
    for lower, uplo in ((True, "L"), (False, "U")):
        _, w = L.eigh(a, lower=lower, symmetrize_input=False)
        assert _a(w).dtype == np.float32
        np.testing.assert_allclose(_a(w), np.linalg.eigvalsh(a, UPLO=uplo), rtol=1e-5)


@_settings(10)
@given(data=st.data(), full_matrices=st.booleans())
def test_svd_values_and_reconstruction(dtype, data, full_matrices):
    a = data.draw(general(batch=(2,))).astype(dtype)
    u, s, vh = (_a(x) for x in L.svd(a, full_matrices=full_matrices))
    wu, ws, wvh = np.linalg.svd(a, full_matrices=full_matrices)
    assert u.shape == wu.shape and vh.shape == wvh.shape
    assert u.dtype == vh.dtype == dtype and s.dtype == REAL[dtype]
    np.testing.assert_allclose(s, ws, **TOL[dtype])
    s_only = _a(L.svd(a, compute_uv=False))
    assert s_only.dtype == REAL[dtype]
    np.testing.assert_allclose(s_only, ws, **TOL[dtype])
    k = s.shape[-1]
    np.testing.assert_allclose((u[..., :k] * s[..., None, :]) @ vh[..., :k, :], a,
                               **TOL[dtype])


@_settings(10)
@given(m=st.integers(1, 5), n=st.integers(1, 3), seed=st.integers(0, 1000))
def test_tridiagonal_solve_values(dtype, m, n, seed):
    rng = np.random.default_rng(seed)
    dl, d, du = _tridiagonal(rng, (2,), m, dtype)
    b = _cnormal(rng, (2, m, n)).astype(dtype)
    got = _a(L.tridiagonal_solve(dl, d, du, b))
    assert got.dtype == dtype
    np.testing.assert_allclose(got, np.linalg.solve(_dense(dl, d, du), b), **TOL[dtype])


def _tridiagonal(rng, batch, m, dtype):
    dl, du = _cnormal(rng, (2, *batch, m))
    d = 3 + rng.random((*batch, m)) + 1j * rng.standard_normal((*batch, m))
    dl[..., 0] = du[..., -1] = 0
    return dl.astype(dtype), d.astype(dtype), du.astype(dtype)


def _dense(dl, d, du):
    return (np.vectorize(np.diag, signature="(m)->(m,m)")(d)
            + np.vectorize(lambda v: np.diag(v[1:], -1), signature="(m)->(m,m)")(dl)
            + np.vectorize(lambda v: np.diag(v[:-1], 1), signature="(m)->(m,m)")(du))


def test_mixed_real_and_complex_operands_are_rejected():
    with pytest.raises(TypeError, match="triangular_solve needs operands of one dtype"):
        L.triangular_solve(np.eye(2, dtype=np.complex64), np.ones((2, 2), np.float32),
                           left_side=True)


# ---- derivatives (central differences in complex directions) -----------------------------
def _mH(x):
    return mnp.conj(mnp.swapaxes(x, -1, -2))


@_settings(5)
@given(data=st.data())
def test_cholesky_derivatives(x64, data):
    a = data.draw(hpd())
    check_grads(lambda x: L.cholesky(x), (a,), order=2, rtol=1e-4, atol=1e-6)


@_settings(5)
@given(data=st.data(), left_side=st.booleans(), lower=st.booleans(),
       transpose_a=st.booleans(), conjugate_a=st.booleans(), unit_diagonal=st.booleans())
def test_triangular_solve_derivatives(x64, data, left_side, lower, transpose_a, conjugate_a,
                                      unit_diagonal):
    m, n = data.draw(st.integers(1, 4)), data.draw(st.integers(1, 4))
    rng = np.random.default_rng(data.draw(st.integers(0, 99)))
    k = m if left_side else n
    a, b = _general(rng, (), k, k) + 2 * np.eye(k), _cnormal(rng, (m, n))
    f = lambda a, b: L.triangular_solve(a, b, left_side=left_side, lower=lower,  # noqa: E731
                                        transpose_a=transpose_a, conjugate_a=conjugate_a,
                                        unit_diagonal=unit_diagonal)
    check_grads(f, (a, b), order=2, rtol=1e-4, atol=1e-6)


def test_triangular_solve_transposes_without_conjugating(x64):
    """The transpose of b -> op(a)⁻¹ b under the pairing re(sum(x y)) is u -> op(a)⁻ᵀ u:
    solving with aᵀ, not aᴴ (JAX's convention)."""
    rng = np.random.default_rng(0)
    a, b, u = np.triu(_general(rng, (), 3, 3)), _cnormal(rng, (3, 2)), _cnormal(rng, (3, 2))
    for trans in (0, 1, 2):
        f = lambda y: L.triangular_solve(a, y, left_side=True, lower=False,  # noqa: E731
                                         transpose_a=trans > 0, conjugate_a=trans == 2)
        (got,) = mt.linear_transpose(f, mnp.asarray(b))(mnp.asarray(u))
        op = [a, a.T, a.conj().T][trans]
        np.testing.assert_allclose(_a(got), np.linalg.solve(op.T, u), rtol=1e-12)


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


def _eigh_invariants(x):
    """Gauge-invariant functions of eigh: w, |V|², V diag(sin w) Vᴴ."""
    v, w = L.eigh(x)
    fv = v * mnp.sin(w).astype(v.dtype)[..., None, :]
    return w, mnp.abs(v) ** 2, mnp.matmul(fv, _mH(v))


@_settings(5)
@given(data=st.data())
def test_eigh_derivatives(x64, data):
    check_grads(_eigh_invariants, (data.draw(hpd()),), order=2, rtol=1e-4, atol=1e-6)


def test_eigh_degenerate_eigenvalues_give_finite_derivatives(x64):
    t = _cnormal(np.random.default_rng(0), (3, 3))
    t = t + t.conj().T
    a = mnp.asarray(np.eye(3, dtype=np.complex128))
    (v, _), (dv, dw) = mt.jvp(L.eigh, (a,), (mnp.asarray(t),))
    assert np.isfinite(_a(dv)).all()
    assert _a(dw).dtype == np.float64
    np.testing.assert_allclose(_a(dw), np.real(np.diag(_H(_a(v)) @ t @ _a(v))), atol=1e-12)


def _svd_invariants(x):
    """Gauge-invariant functions of svd: s, |U|², |Vh|², U diag(sin s) Vh (the last pins
    the relative phase of U's and V's columns, which the imaginary-diagonal term of the
    rule sets)."""
    u, s, vh = L.svd(x, full_matrices=False)
    fu = u * mnp.sin(s).astype(u.dtype)[..., None, :]
    return s, mnp.abs(u) ** 2, mnp.abs(vh) ** 2, mnp.matmul(fu, vh)


@_settings(5)
@given(data=st.data(), shape=st.sampled_from([(3, 3), (4, 2), (2, 4), (1, 3)]))
def test_svd_derivatives(x64, data, shape):
    a = data.draw(general(m=shape[0], n=shape[1]))
    check_grads(_svd_invariants, (a,), order=1, rtol=1e-4, atol=1e-6)
    check_grads(lambda x: L.svd(x, compute_uv=False), (a,), order=2, rtol=1e-4, atol=1e-6)


@_settings(5)
@given(m=st.integers(1, 5), n=st.integers(1, 3), seed=st.integers(0, 1000))
def test_tridiagonal_solve_derivatives(x64, m, n, seed):
    rng = np.random.default_rng(seed)
    dl, d, du = _tridiagonal(rng, (), m, np.complex128)
    b = _cnormal(rng, (m, n))
    check_grads(L.tridiagonal_solve, (dl, d, du, b), order=2, rtol=1e-4, atol=1e-6)


def fd_real_grad(f, z, eps=1e-6):
    """∂f/∂x - i ∂f/∂y elementwise by central differences, for a real f of complex z
    (the gradient JAX's convention returns)."""
    g = np.zeros(z.shape, np.complex128)
    for idx in np.ndindex(*z.shape):
        for step, weight in ((1.0, 1.0), (1j, -1j)):
            e = np.zeros(z.shape, np.complex128)
            e[idx] = step * eps
            df = (float(f(mnp.asarray(z + e))) - float(f(mnp.asarray(z - e)))) / (2 * eps)
            g[idx] += weight * df
    return g


@pytest.mark.parametrize("name", ["logdet_cholesky", "sum_eigh", "eigh_quadratic",
                                  "nuclear_norm", "qr_diagonal", "lu_diagonal",
                                  "triangular_solve"])
def test_grad_of_a_real_loss_against_real_and_imaginary_differences(x64, name):
    rng = np.random.default_rng(1)
    a = _hpd(rng, (), 3) if name in ("logdet_cholesky", "sum_eigh", "eigh_quadratic") \
        else _general(rng, (), 3, 3)
    c = _cnormal(rng, (3, 3))
    losses = {
        "logdet_cholesky": lambda x: 2 * mnp.sum(mnp.log(mnp.real(
            mnp.diagonal(L.cholesky(x))))),
        "sum_eigh": lambda x: mnp.sum(L.eigh(x)[1] ** 2),
        "eigh_quadratic": lambda x: mnp.sum(mnp.abs(_eigh_invariants(x)[2] @ c) ** 2),
        "nuclear_norm": lambda x: mnp.sum(L.svd(x, compute_uv=False)),
        "qr_diagonal": lambda x: mnp.sum(mnp.abs(mnp.diagonal(L.qr(x)[1])) ** 2),
        "lu_diagonal": lambda x: mnp.sum(mnp.real(L.lu(x)[0] * c)),
        "triangular_solve": lambda x: mnp.sum(mnp.imag(L.triangular_solve(
            x, mnp.asarray(c), left_side=True, lower=True, transpose_a=True,
            conjugate_a=True))),
    }
    f = losses[name]
    g = _a(mt.grad(f)(mnp.asarray(a)))
    assert g.dtype == np.complex128
    np.testing.assert_allclose(g, fd_real_grad(f, a), rtol=1e-5, atol=1e-6)


def test_grad_of_logdet_through_cholesky_is_the_inverse(x64):
    """d log det A = tr(A⁻¹ dA) for Hermitian A; the gradient in JAX's convention (of the
    real function on all complex matrices, read through the Hermitian part) is conj(A⁻¹)
    made Hermitian, i.e. A⁻ᵀ = conj(A⁻¹) here."""
    a = _hpd(np.random.default_rng(0), (), 3)
    g = mt.grad(lambda x: 2 * mnp.sum(mnp.log(mnp.real(mnp.diagonal(L.cholesky(x))))))(a)
    np.testing.assert_allclose(_a(g), np.conj(np.linalg.inv(a)), rtol=1e-8, atol=1e-10)


# ---- vmap == loop, jit == eager ----------------------------------------------------------
def _cases(rng):
    a = _hpd(np.random.default_rng(1), (3,), 3)
    g = _cnormal(rng, (3, 4, 3)) + 3 * np.eye(4, 3)
    b = _cnormal(rng, (3, 3, 2))
    dl, d, du = _tridiagonal(rng, (3,), 3, np.complex128)
    return [
        (lambda x: L.cholesky(x), (a,)),
        (lambda x, y: L.triangular_solve(x, y, left_side=True, lower=True, transpose_a=True,
                                         conjugate_a=True), (a, b)),
        (lambda x: L.lu(x), (g,)),
        (lambda x: L.qr(x, full_matrices=False), (g,)),
        (lambda x: L.eigh(x), (a,)),
        (lambda x: L.svd(x, full_matrices=False), (g,)),
        (L.tridiagonal_solve, (dl, d, du, b)),
    ]


@pytest.mark.parametrize("i", range(7))
def test_vmap_matches_loop_and_jit_matches_eager(x64, i):
    fn, args = _cases(np.random.default_rng(i))[i]
    got = mt.tree_util.tree_leaves(mt.vmap(fn)(*args))
    want = [mt.tree_util.tree_leaves(fn(*[x[j] for x in args])) for j in range(3)]
    for k, leaf in enumerate(got):
        for j in range(3):
            np.testing.assert_allclose(_a(leaf)[j], _a(want[j][k]), rtol=1e-10, atol=1e-12)
    eager = mt.tree_util.tree_leaves(fn(*args))
    jitted = mt.tree_util.tree_leaves(mt.jit(fn)(*args))
    for e, j in zip(eager, jitted):
        assert _a(e).dtype == _a(j).dtype
        np.testing.assert_array_equal(_a(e), _a(j))


def test_vmap_of_grad_and_jit_of_grad(x64):
    rng = np.random.default_rng(1)
    a, c = _hpd(rng, (3,), 3), mnp.asarray(_cnormal(rng, (3, 3)))

    def loss(x):
        return mnp.sum(mnp.abs(mnp.matmul(L.cholesky(x), c)) ** 2)

    g = mt.vmap(mt.grad(loss))(a)
    for j in range(3):
        want = _a(mt.grad(loss)(a[j]))
        np.testing.assert_allclose(_a(g)[j], want, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(_a(mt.jit(mt.grad(loss))(a[j])), want, rtol=1e-10,
                                   atol=1e-12)
