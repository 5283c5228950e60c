"""mt.scipy.linalg's toeplitz, hankel, hilbert, expm_frechet, sqrtm, polar, rq, hessenberg
and eigh_tridiagonal against SciPy: values (real and complex), the defining identities,
float64 finite differences, batching against a loop, vmap, jit against eager, and
errors."""

import numpy as np
import pytest
import scipy.linalg as sla

import mytorch as mt
import mytorch.numpy as mnp
from mytorch.scipy import linalg as L
from tests.autodiff.fd import check_grads


def _a(x):
    return np.asarray(x)


def _mH(x):
    return np.conj(np.swapaxes(x, -1, -2))


def _matrix(rng, shape, complex_=False):
    x = rng.standard_normal(shape)
    return x + 1j * rng.standard_normal(shape) if complex_ else x


def _check_batched(f, args, n_out, rtol=1e-12, atol=1e-12):
    """f over a batch (leading axis of every arg) against a loop, under vmap and jit."""
    def outs(y):
        return [y] if n_out == 1 else list(y)

    loop = [outs(f(*(x[j] for x in args))) for j in range(args[0].shape[0])]
    for got in (f(*args), mt.vmap(f)(*args), mt.jit(f)(*args)):
        for k, g in enumerate(outs(got)):
            want = np.stack([_a(one[k]) for one in loop])
            np.testing.assert_allclose(_a(g), want, rtol=rtol, atol=atol)


# ---- toeplitz, hankel, hilbert ---------------------------------------------------------
@pytest.mark.parametrize("complex_", [False, True])
def test_toeplitz_hankel_values(x64, complex_):
    rng = np.random.default_rng(0)
    c, r = _matrix(rng, (4,), complex_), _matrix(rng, (3,), complex_)
    np.testing.assert_array_equal(_a(L.toeplitz(c, r)), sla.toeplitz(c, r))
    np.testing.assert_array_equal(_a(L.toeplitz(c)), sla.toeplitz(c))  # r = conj(c)
    np.testing.assert_array_equal(_a(L.hankel(c, r)), sla.hankel(c, r))
    np.testing.assert_array_equal(_a(L.hankel(c)), sla.hankel(c))  # r = zeros
    np.testing.assert_array_equal(_a(L.toeplitz(2.0)), [[2.0]])


def test_toeplitz_complex_default_is_hermitian(x64):
    c = np.array([1.0, 2 - 1j, 1 + 2j])
    t = _a(L.toeplitz(c))
    np.testing.assert_array_equal(t, _mH(t))


def test_toeplitz_hankel_dtypes_and_batch():
    t = L.toeplitz(np.arange(3), np.arange(4))
    assert t.dtype == mnp.int32 and t.shape == (3, 4)
    rng = np.random.default_rng(1)
    c = rng.standard_normal((2, 3)).astype(np.float32)
    r = rng.standard_normal((4,)).astype(np.float32)  # broadcast against c's batch
    for f, ref in ((L.toeplitz, sla.toeplitz), (L.hankel, sla.hankel)):
        got = _a(f(c, r))
        assert got.shape == (2, 3, 4)
        for j in range(2):
            np.testing.assert_array_equal(got[j], ref(c[j], r))
    _check_batched(L.toeplitz, (c, np.stack([r, r + 1])), 1)
    _check_batched(L.hankel, (c, np.stack([r, r + 1])), 1)


def test_hilbert():
    h = _a(L.hilbert(5))
    assert h.dtype == np.float32
    np.testing.assert_allclose(h, sla.hilbert(5), rtol=1e-7)
    assert L.hilbert(0).shape == (0, 0)
    with pytest.raises(ValueError, match="hilbert: n must be a non-negative int, got -1"):
        L.hilbert(-1)


@pytest.mark.parametrize("complex_", [False, True])
def test_toeplitz_hankel_derivatives_x64(x64, complex_):
    rng = np.random.default_rng(2)
    c, r = _matrix(rng, (3,), complex_), _matrix(rng, (4,), complex_)
    check_grads(L.toeplitz, (c, r), order=2)
    check_grads(L.toeplitz, (c,), order=1)
    check_grads(L.hankel, (c, r), order=1)


def test_toeplitz_errors():
    with pytest.raises(ValueError, match="toeplitz"):
        L.toeplitz(mnp.ones((2, 3)), mnp.ones((3, 4)))


# ---- expm_frechet ------------------------------------------------------------------------
@pytest.mark.parametrize("complex_", [False, True])
def test_expm_frechet_values_x64(x64, complex_):
    rng = np.random.default_rng(3)
    a, e = _matrix(rng, (4, 4), complex_), _matrix(rng, (4, 4), complex_)
    got_expm, got = (_a(x) for x in L.expm_frechet(a, e))
    want_expm, want = sla.expm_frechet(a, e)
    np.testing.assert_allclose(got_expm, want_expm, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)
    alone = _a(L.expm_frechet(a, e, compute_expm=False, method="SPS"))
    np.testing.assert_allclose(alone, got, rtol=1e-13, atol=1e-13)
    # it is expm's derivative in the direction e
    _, tangent = mt.jvp(L.expm, (mnp.asarray(a),), (mnp.asarray(e),))
    np.testing.assert_allclose(_a(tangent), got, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("norm", [0.5, 2.5, 4.0, 20.0])  # Padé orders 7 and 13, scaled
def test_expm_frechet_accuracy_across_norms_x64(x64, norm):
    rng = np.random.default_rng(42)
    a, e = rng.uniform(-1, 1, (20, 20)), rng.uniform(-1, 1, (20, 20))
    a = a / np.abs(a).sum(axis=0).max() * norm
    for got, want in zip(L.expm_frechet(a, e), sla.expm_frechet(a, e)):
        np.testing.assert_allclose(_a(got), want, rtol=1e-13, atol=1e-13 * np.abs(want).max())


def test_expm_frechet_float32_batched_and_vmap(x64):
    rng = np.random.default_rng(4)
    a, e = rng.standard_normal((3, 3, 3)), rng.standard_normal((3, 3, 3))
    got = _a(L.expm_frechet(a.astype(np.float32), e.astype(np.float32),
                            compute_expm=False))
    assert got.dtype == np.float32
    for j in range(3):
        np.testing.assert_allclose(got[j], sla.expm_frechet(a[j], e[j])[1], rtol=2e-4,
                                   atol=2e-4)
    _check_batched(L.expm_frechet, (a, e), 2, rtol=1e-11, atol=1e-11)
    # batch dims broadcast: one A against a batch of directions
    one = _a(L.expm_frechet(a[0], e, compute_expm=False))
    for j in range(3):
        np.testing.assert_allclose(one[j], sla.expm_frechet(a[0], e[j])[1], rtol=1e-10,
                                   atol=1e-10)


@pytest.mark.parametrize("complex_", [False, True])
def test_expm_frechet_derivatives_x64(x64, complex_):
    rng = np.random.default_rng(5)
    a, e = 0.5 * _matrix(rng, (3, 3), complex_), _matrix(rng, (3, 3), complex_)
    check_grads(lambda a, e: L.expm_frechet(a, e, compute_expm=False), (a, e), order=1)


def test_expm_frechet_errors():
    with pytest.raises(ValueError, match=r"expm_frechet: A and E must be matrices of one "
                                         r"size, got A f32\[2,2\] and E f32\[3,3\]"):
        L.expm_frechet(mnp.eye(2), mnp.eye(3))
    with pytest.raises(ValueError, match="expm_frechet: the last two dimensions must be "
                                         "square"):
        L.expm_frechet(mnp.ones((2, 3)), mnp.ones((2, 3)))
    with pytest.raises(ValueError, match="expm_frechet: method must be"):
        L.expm_frechet(mnp.eye(2), mnp.eye(2), method="pade")


# ---- sqrtm -------------------------------------------------------------------------------
def _sqrtm_cases(rng):
    spd = rng.standard_normal((4, 4))
    return {
        "spd": spd @ spd.T + np.eye(4),
        # real, with complex-conjugate eigenvalues in the right half-plane: a real root
        "rotation": np.array([[2.0, -1.0, 0.0], [1.0, 2.0, 0.5], [0.0, 0.0, 3.0]]),
        "nonsymmetric": rng.standard_normal((4, 4)) + 4 * np.eye(4),
        # real with negative eigenvalues: the principal root is complex
        "general": rng.standard_normal((5, 5)),
        "negative": np.array([[-4.0, 1.0], [0.0, 9.0]]),
        "complex": _matrix(rng, (4, 4), True) + 3 * np.eye(4),
        "defective": np.array([[4.0, 1.0], [0.0, 4.0]]),
        "singular_diagonal": np.diag([0.0, 0.0, 9.0, 0.0, 0.0, 4.0]),
    }


@pytest.mark.filterwarnings("ignore:Matrix is singular")
@pytest.mark.parametrize("name", list(_sqrtm_cases(np.random.default_rng(0))))
def test_sqrtm_values_x64(x64, name):
    a = _sqrtm_cases(np.random.default_rng(0))[name]
    got = _a(L.sqrtm(a))
    assert got.dtype == np.complex128  # complex always, as JAX's
    np.testing.assert_allclose(got, sla.sqrtm(a), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(got @ got, a, rtol=1e-10, atol=1e-10)


def test_sqrtm_float32_batched_vmap_and_jit(x64):
    rng = np.random.default_rng(6)
    a = rng.standard_normal((3, 3, 3)) + 3 * np.eye(3)
    got = _a(L.sqrtm(a.astype(np.float32)))
    assert got.dtype == np.complex64
    for j in range(3):
        np.testing.assert_allclose(got[j], sla.sqrtm(a[j]), rtol=1e-4, atol=1e-4)
    _check_batched(L.sqrtm, (a,), 1)
    assert L.sqrtm(np.zeros((2, 0, 0))).shape == (2, 0, 0)


@pytest.mark.parametrize("name", ["spd", "nonsymmetric", "general", "complex", "defective"])
def test_sqrtm_derivatives_x64(x64, name):
    a = _sqrtm_cases(np.random.default_rng(0))[name]
    check_grads(L.sqrtm, (a,), order=1)


def test_sqrtm_derivative_solves_the_sylvester_equation_x64(x64):
    # d(X²) = dX X + X dX = dA, also at a repeated eigenvalue (the identity)
    rng = np.random.default_rng(7)
    for a in (4 * np.eye(3), _sqrtm_cases(rng)["spd"]):
        e = rng.standard_normal(a.shape)
        x, dx = (_a(t) for t in mt.jvp(L.sqrtm, (mnp.asarray(a),), (mnp.asarray(e),)))
        np.testing.assert_allclose(dx @ x + x @ dx, e, rtol=1e-10, atol=1e-10)
    grad = _a(mt.grad(lambda x: mnp.real(mnp.trace(L.sqrtm(x))))(4 * np.eye(3)))
    np.testing.assert_allclose(grad, np.eye(3) / 4, atol=1e-12)  # d tr √A = tr(A^-½ dA)/2


def test_sqrtm_errors():
    with pytest.raises(ValueError, match="sqrtm: the last two dimensions must be square"):
        L.sqrtm(mnp.ones((2, 3)))
    with pytest.raises(ValueError, match="sqrtm: blocksize must be a positive int"):
        L.sqrtm(mnp.eye(2), blocksize=0)


# ---- polar -------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5)])
@pytest.mark.parametrize("complex_", [False, True])
@pytest.mark.parametrize("side", ["right", "left"])
def test_polar_values_and_identities_x64(x64, shape, complex_, side):
    a = _matrix(np.random.default_rng(8), shape, complex_)
    u, p = (_a(x) for x in L.polar(a, side))
    want_u, want_p = sla.polar(a, side)
    np.testing.assert_allclose(u, want_u, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(p, want_p, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(u @ p if side == "right" else p @ u, a, rtol=1e-10,
                               atol=1e-10)
    gram = _mH(u) @ u if shape[0] >= shape[1] else u @ _mH(u)
    np.testing.assert_allclose(gram, np.eye(min(shape)), atol=1e-12)
    np.testing.assert_allclose(p, _mH(p), atol=1e-12)
    assert np.linalg.eigvalsh(p).min() > -1e-12
    u2, p2 = (_a(x) for x in L.polar(a, side, method="svd"))
    np.testing.assert_allclose(u2, u)
    np.testing.assert_allclose(p2, p)


@pytest.mark.parametrize("complex_", [False, True])
def test_polar_derivatives_x64(x64, complex_):
    a = _matrix(np.random.default_rng(9), (3, 3), complex_)
    check_grads(L.polar, (a,), order=1)
    check_grads(lambda a: L.polar(a, "left"), (a,), order=1)
    check_grads(L.polar, (_matrix(np.random.default_rng(10), (4, 2), complex_),), order=1)


def test_polar_batched_vmap_and_jit(x64):
    a = np.random.default_rng(11).standard_normal((3, 4, 3))
    _check_batched(L.polar, (a,), 2)
    u, p = L.polar(a.astype(np.float32))
    assert u.dtype == p.dtype == mnp.float32 and p.shape == (3, 3, 3)


def test_polar_errors():
    with pytest.raises(ValueError, match="polar: side must be 'right' or 'left', got 'up'"):
        L.polar(mnp.eye(2), "up")
    with pytest.raises(ValueError, match="polar: method must be 'qdwh' or 'svd'"):
        L.polar(mnp.eye(2), method="newton")
    with pytest.raises(ValueError, match=r"polar: needs an array of rank >= 2"):
        L.polar(mnp.ones(3))


# ---- rq ----------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(4, 4), (3, 5), (5, 3)])
@pytest.mark.parametrize("complex_", [False, True])
@pytest.mark.parametrize("mode", ["full", "economic"])
def test_rq_values_and_identities_x64(x64, shape, complex_, mode):
    a = _matrix(np.random.default_rng(12), shape, complex_)
    r, q = (_a(x) for x in L.rq(a, mode=mode))
    want_r, want_q = sla.rq(a, mode=mode)
    assert r.shape == want_r.shape and q.shape == want_q.shape
    np.testing.assert_allclose(r, want_r, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(q, want_q, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(r @ q, a, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(q @ _mH(q), np.eye(q.shape[0]), atol=1e-12)
    m, n = r.shape
    np.testing.assert_array_equal(np.tril(r, n - m - 1), 0)  # upper, bottom-right aligned
    np.testing.assert_allclose(_a(L.rq(a, mode="r")), sla.rq(a, mode="r"), rtol=1e-10,
                               atol=1e-10)


@pytest.mark.parametrize("complex_", [False, True])
def test_rq_derivatives_x64(x64, complex_):
    rng = np.random.default_rng(13)
    check_grads(L.rq, (_matrix(rng, (3, 3), complex_),), order=1)
    check_grads(lambda a: L.rq(a, mode="economic"), (_matrix(rng, (2, 4), complex_),),
                order=1)


def test_rq_batched_vmap_and_jit(x64):
    a = np.random.default_rng(14).standard_normal((3, 3, 4))
    _check_batched(L.rq, (a,), 2)


def test_rq_errors():
    with pytest.raises(ValueError, match="rq: mode must be 'full', 'economic' or 'r', got "
                                         "'raw'"):
        L.rq(mnp.eye(2), mode="raw")
    with pytest.raises(ValueError, match=r"rq: needs an array of rank >= 2"):
        L.rq(mnp.ones(3))


# ---- hessenberg --------------------------------------------------------------------------
@pytest.mark.parametrize("n", [1, 2, 3, 6])
@pytest.mark.parametrize("complex_", [False, True])
def test_hessenberg_values_and_identities_x64(x64, n, complex_):
    a = _matrix(np.random.default_rng(15 + n), (n, n), complex_)
    h, q = (_a(x) for x in L.hessenberg(a, calc_q=True))
    want_h, want_q = sla.hessenberg(a, calc_q=True)
    np.testing.assert_allclose(h, want_h, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(q, want_q, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(q @ h @ _mH(q), a, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(q @ _mH(q), np.eye(n), atol=1e-12)
    np.testing.assert_array_equal(np.tril(h, -2), 0)
    np.testing.assert_array_equal(_a(L.hessenberg(a)), h)
    np.testing.assert_array_equal(_a(L.hessenberg(a, True)[1]), q)  # SciPy's positional


def test_hessenberg_of_a_hessenberg_matrix(x64):
    # nothing to annihilate: the reflectors are the identity (tau = 0), and stay finite
    a = np.triu(np.random.default_rng(16).standard_normal((4, 4)), -1)
    h, q = (_a(x) for x in L.hessenberg(a, calc_q=True))
    want_h, want_q = sla.hessenberg(a, calc_q=True)
    np.testing.assert_allclose(h, want_h, atol=1e-12)
    np.testing.assert_allclose(q, want_q, atol=1e-12)
    g = _a(mt.grad(lambda x: mnp.sum(L.hessenberg(x)))(mnp.asarray(np.triu(a, 1))))
    assert np.isfinite(g).all()


@pytest.mark.parametrize("complex_", [False, True])
def test_hessenberg_derivatives_x64(x64, complex_):
    a = _matrix(np.random.default_rng(17), (4, 4), complex_)
    check_grads(lambda a: L.hessenberg(a, calc_q=True), (a,), order=1)


def test_hessenberg_float32_batched_vmap_and_jit(x64):
    a = np.random.default_rng(18).standard_normal((3, 5, 5))
    got = _a(L.hessenberg(a.astype(np.float32)))
    assert got.dtype == np.float32
    for j in range(3):
        np.testing.assert_allclose(got[j], sla.hessenberg(a[j]), rtol=1e-4, atol=1e-4)
    _check_batched(lambda x: L.hessenberg(x, calc_q=True), (a,), 2)


def test_hessenberg_errors():
    with pytest.raises(ValueError, match="hessenberg: the last two dimensions must be "
                                         "square"):
        L.hessenberg(mnp.ones((2, 3)))


# ---- eigh_tridiagonal --------------------------------------------------------------------
def test_eigh_tridiagonal_values_x64(x64):
    rng = np.random.default_rng(19)
    d, e = rng.standard_normal(6), rng.standard_normal(5)
    w, v = (_a(x) for x in L.eigh_tridiagonal(d, e))
    want_w, want_v = sla.eigh_tridiagonal(d, e)
    np.testing.assert_allclose(w, want_w, rtol=1e-12, atol=1e-12)
    t = np.diag(d) + np.diag(e, 1) + np.diag(e, -1)
    np.testing.assert_allclose(t @ v, v * w, atol=1e-12)
    np.testing.assert_allclose(np.abs(v), np.abs(want_v), atol=1e-10)  # up to sign
    only = _a(L.eigh_tridiagonal(d, e, eigvals_only=True))
    np.testing.assert_allclose(only, w)
    got = L.eigh_tridiagonal(d, e, select="i", select_range=(1, 3))
    want = sla.eigh_tridiagonal(d, e, select="i", select_range=(1, 3))
    np.testing.assert_allclose(_a(got[0]), want[0], rtol=1e-12, atol=1e-12)
    assert got[1].shape == (6, 3)
    np.testing.assert_allclose(np.abs(_a(got[1])), np.abs(want[1]), atol=1e-10)


def test_eigh_tridiagonal_complex_hermitian_x64(x64):
    # complex d (real part read) and e: the Hermitian tridiagonal with conj(e) below
    rng = np.random.default_rng(20)
    d, e = _matrix(rng, (5,), True), _matrix(rng, (4,), True)
    t = np.diag(d.real) + np.diag(e, 1) + np.diag(np.conj(e), -1)
    w, v = (_a(x) for x in L.eigh_tridiagonal(d, e))
    assert w.dtype == np.float64 and v.dtype == np.complex128
    np.testing.assert_allclose(w, np.linalg.eigvalsh(t), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(t @ v, v * w, atol=1e-12)
    np.testing.assert_allclose(w, sla.eigh_tridiagonal(d.real, np.abs(e), eigvals_only=True),
                               rtol=1e-12, atol=1e-12)


def test_eigh_tridiagonal_float32_batched_vmap_and_jit(x64):
    rng = np.random.default_rng(21)
    d, e = rng.standard_normal((3, 4)), rng.standard_normal((3, 3))
    w = _a(L.eigh_tridiagonal(d.astype(np.float32), e.astype(np.float32), eigvals_only=True))
    assert w.dtype == np.float32
    for j in range(3):
        np.testing.assert_allclose(w[j], sla.eigh_tridiagonal(d[j], e[j], eigvals_only=True),
                                   rtol=1e-5, atol=1e-5)
    _check_batched(lambda d, e: L.eigh_tridiagonal(d, e), (d, e), 2)


@pytest.mark.parametrize("complex_", [False, True])
def test_eigh_tridiagonal_derivatives_x64(x64, complex_):
    rng = np.random.default_rng(22)
    d, e = rng.standard_normal(4), _matrix(rng, (3,), complex_)

    def projectors(d, e):  # v vᴴ does not depend on each eigenvector's phase
        _, v = L.eigh_tridiagonal(d, e)
        return v[..., :, None, :] * mnp.conj(v)[..., None, :, :]

    check_grads(lambda d, e: L.eigh_tridiagonal(d, e, eigvals_only=True), (d, e), order=2)
    check_grads(projectors, (d, e), order=1)


def test_eigh_tridiagonal_errors():
    d, e = mnp.ones(4), mnp.ones(3)
    with pytest.raises(ValueError, match=r"eigh_tridiagonal: select='v' \(a value range\) "
                                         r"gives a data-dependent number"):
        L.eigh_tridiagonal(d, e, select="v", select_range=(0.0, 1.0))
    with pytest.raises(ValueError, match="eigh_tridiagonal: select must be 'a', 'i' or 'v'"):
        L.eigh_tridiagonal(d, e, select="x")
    with pytest.raises(ValueError, match=r"eigh_tridiagonal: select_range must satisfy 0 <= "
                                         r"lo <= hi < 4, got \(2, 4\)"):
        L.eigh_tridiagonal(d, e, select="i", select_range=(2, 4))
    with pytest.raises(ValueError, match=r"eigh_tridiagonal: select='i' needs select_range"):
        L.eigh_tridiagonal(d, e, select="i")
    with pytest.raises(ValueError, match=r"eigh_tridiagonal: e must be \[..., n-1\] for d "
                                         r"\[..., n\], got d f32\[4\] and e f32\[4\]"):
        L.eigh_tridiagonal(d, mnp.ones(4))


# ---- schur, rsf2csf, funm ----------------------------------------------------------------
def _assert_same_spectrum(got, want, tol):
    """got and want [n] are one multiset of (complex) values, matched greedily."""
    left = list(np.asarray(want, np.complex128))
    for w in np.asarray(got, np.complex128):
        k = int(np.argmin([abs(w - v) for v in left]))
        assert abs(w - left[k]) <= tol * max(1.0, abs(w)), (got, want)
        left.pop(k)


def _schur_cases(rng, n):
    return {
        "random": rng.standard_normal((n, n)),
        "symmetric": (lambda x: x + x.T)(rng.standard_normal((n, n))),
        # a cyclic permutation: all eigenvalues on the unit circle, where plain shifts stall
        "cyclic": np.roll(np.eye(n), 1, axis=0),
        "defective": np.eye(n) + np.diag(np.ones(n - 1), 1),
        "zero": np.zeros((n, n)),
    }


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8])
@pytest.mark.parametrize("name", ["random", "symmetric", "cyclic", "defective", "zero"])
def test_schur_real_form_x64(x64, n, name):
    a = _schur_cases(np.random.default_rng(23 + n), n)[name]
    t, z = (_a(x) for x in L.schur(a))
    assert t.dtype == z.dtype == np.float64
    np.testing.assert_allclose(z @ t @ z.T, a, atol=1e-12 * max(1, np.abs(a).max()) * n)
    np.testing.assert_allclose(z @ z.T, np.eye(n), atol=1e-13 * n)
    np.testing.assert_array_equal(np.tril(t, -2), 0)
    sub = np.diagonal(t, -1)
    assert not (np.abs(sub[1:]) * np.abs(sub[:-1])).any()  # 2 × 2 blocks are isolated
    for i in np.flatnonzero(sub):  # standardised as LAPACK: a = d, b c < 0
        assert t[i, i] == t[i + 1, i + 1] and t[i, i + 1] * t[i + 1, i] < 0
    _assert_same_spectrum(np.linalg.eigvals(t), sla.schur(a)[0].diagonal() if n == 1
                          else np.linalg.eigvals(sla.schur(a)[0]),
                          1e-6 if name == "defective" else 1e-10)


@pytest.mark.parametrize("n", [1, 3, 6])
@pytest.mark.parametrize("complex_", [False, True])
def test_schur_complex_form_x64(x64, n, complex_):
    a = _matrix(np.random.default_rng(30 + n), (n, n), complex_)
    t, z = (_a(x) for x in L.schur(a, output="complex"))
    assert t.dtype == z.dtype == np.complex128
    np.testing.assert_allclose(z @ t @ _mH(z), a, atol=1e-12 * n)
    np.testing.assert_allclose(z @ _mH(z), np.eye(n), atol=1e-13 * n)
    np.testing.assert_array_equal(np.tril(t, -1), 0)
    _assert_same_spectrum(np.diagonal(t), sla.schur(a, output="complex")[0].diagonal(),
                          1e-10)
    if complex_:  # complex input gives the complex form whatever output asks
        np.testing.assert_array_equal(_a(L.schur(a)[0]), t)


def test_schur_values_where_the_form_is_unique_x64(x64):
    rng = np.random.default_rng(36)
    upper = np.triu(rng.standard_normal((4, 4)))  # already triangular: t = a, z = I
    for got, want in zip(L.schur(upper), sla.schur(upper)):
        np.testing.assert_allclose(_a(got), want, atol=1e-14)
    pair = np.array([[1.0, 2.0], [-3.0, 0.5]])  # one standardised 2 × 2 block, as LAPACK's
    for got, want in zip(L.schur(pair), sla.schur(pair)):
        np.testing.assert_allclose(_a(got), want, rtol=1e-13, atol=1e-14)


def test_schur_float32_batched_vmap_and_jit(x64):
    a = np.random.default_rng(37).standard_normal((3, 4, 4))
    t, z = (_a(x) for x in L.schur(a.astype(np.float32)))
    assert t.dtype == np.float32 and t.shape == (3, 4, 4)
    for j in range(3):
        np.testing.assert_allclose(z[j] @ t[j] @ z[j].T, a[j], atol=2e-5)
    _check_batched(L.schur, (a,), 2)
    _check_batched(lambda x: L.schur(x, "complex"), (a,), 2)
    assert L.schur(np.zeros((2, 0, 0)))[0].shape == (2, 0, 0)


def test_rsf2csf_x64(x64):
    a = np.random.default_rng(38).standard_normal((5, 5))
    t, z = (_a(x) for x in L.schur(a))
    tc, zc = (_a(x) for x in L.rsf2csf(t, z))
    want_t, want_z = sla.rsf2csf(t, z)
    np.testing.assert_allclose(tc, want_t, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(zc, want_z, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(np.tril(tc, -1), 0)
    np.testing.assert_allclose(zc @ tc @ _mH(zc), a, atol=1e-12)
    batch = np.stack([t, t]), np.stack([z, z])
    _check_batched(L.rsf2csf, batch, 2)


@pytest.mark.parametrize("complex_", [False, True])
def test_funm_x64(x64, complex_):
    a = _matrix(np.random.default_rng(39), (5, 5), complex_)
    got = _a(L.funm(a, mnp.exp))
    assert got.dtype == np.complex128
    np.testing.assert_allclose(got, sla.expm(a), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(_a(L.funm(a, lambda x: mnp.sin(x) + 2 * mnp.cos(x))),
                               sla.funm(a, lambda x: np.sin(x) + 2 * np.cos(x)), rtol=1e-10,
                               atol=1e-10)
    f, err = L.funm(a, mnp.sin, disp=False)
    want_f, want_err = sla.funm(a, np.sin, disp=False)
    np.testing.assert_allclose(_a(f), want_f, rtol=1e-10, atol=1e-10)
    assert float(err) < 1e-10 and want_err < 1e-10


def test_funm_batched_and_vmap(x64):
    a = np.random.default_rng(40).standard_normal((2, 3, 3))
    _check_batched(lambda x: L.funm(x, mnp.exp), (a,), 1)
    for j in range(2):
        np.testing.assert_allclose(_a(L.funm(a, mnp.exp))[j], sla.expm(a[j]), rtol=1e-10,
                                   atol=1e-10)


@pytest.mark.parametrize("complex_", [False, True])
def test_funm_derivatives_x64(x64, complex_):
    a = _matrix(np.random.default_rng(41), (3, 3), complex_) + 3 * np.eye(3)
    check_grads(lambda x: L.funm(x, mnp.exp), (a,), order=1)


def test_schur_errors():
    with pytest.raises(ValueError, match="schur: output must be 'real' or 'complex', got "
                                         "'upper'"):
        L.schur(mnp.eye(2), output="upper")
    with pytest.raises(ValueError, match="schur: the last two dimensions must be square"):
        L.schur(mnp.ones((2, 3)))
    with pytest.raises(ValueError, match=r"rsf2csf: T and Z must be matrices of one size, "
                                         r"got T f32\[2,2\] and Z f32\[3,3\]"):
        L.rsf2csf(mnp.eye(2), mnp.eye(3))
    with pytest.raises(ValueError, match="funm: the last two dimensions must be square"):
        L.funm(mnp.ones((2, 3)), mnp.exp)
    with pytest.raises(TypeError, match="schur: not differentiable"):
        mt.jvp(lambda x: L.schur(x)[0], (mnp.eye(2),), (mnp.eye(2),))


def test_jit_select_of_large_complex128_x64(x64):
    # schur's loop selects between complex128 matrices of 4096+ entries, which the
    # generated code's branch-free select (integer views of the values) cannot hold
    rng = np.random.default_rng(43)
    which = rng.random(5000) < 0.5
    a, b = _matrix(rng, (5000,), True), _matrix(rng, (5000,), True)
    got = _a(mt.jit(lambda w, a, b: mnp.where(w, a, b) * 1)(which, a, b))
    np.testing.assert_array_equal(got, np.where(which, a, b))
