"""lax.linalg.eig against numpy.linalg / scipy.linalg: eigenvalues as sorted multisets, the
eigen-equations for both kinds of eigenvector, LAPACK's normalisation; float64 finite
differences (forward and reverse mode, real and complex input); vmap against a loop; jit
against eager; errors."""

import numpy as np
import pytest
import scipy.linalg as sla

import mytorch as mt
import mytorch.numpy as mnp
from mytorch.lax import linalg as L
from tests.autodiff.fd import check_grads
from tests.dtype_fixtures import dtype_fixture


def _a(x):
    return np.asarray(x)


def _sorted(w):
    return np.sort_complex(np.asarray(w).astype(np.complex128))


def _mH(x):
    return np.conj(np.swapaxes(x, -1, -2))


def _distinct(rng, n, complex_=False, batch=()):
    """Random matrices whose eigenvalues are well separated (FD-safe): V diag(w) V⁻¹ with
    w spread over a circle and V close to the identity."""
    out = np.empty((*batch, n, n), np.complex128 if complex_ else np.float64)
    for idx in np.ndindex(*batch):
        v = np.eye(n) + 0.3 * rng.standard_normal((n, n))
        if complex_:
            v = v + 0.3j * rng.standard_normal((n, n))
            w = 2 * np.exp(2j * np.pi * (np.arange(n) + rng.uniform(0.1, 0.4, n)) / n)
        else:  # real: conjugate pairs and a real one, as a real matrix has
            w = np.linalg.eigvals(rng.standard_normal((n, n)) + 3 * np.diag(np.arange(n)))
            v = np.real(v)
        m = v @ np.diag(w) @ np.linalg.inv(v)
        out[idx] = m if complex_ else np.real(m)
    return out


TOL = {np.float32: dict(rtol=1e-4, atol=1e-4), np.float64: dict(rtol=1e-10, atol=1e-10),
       np.complex64: dict(rtol=1e-4, atol=1e-4), np.complex128: dict(rtol=1e-10, atol=1e-10)}
OUT = {np.float32: np.complex64, np.float64: np.complex128, np.complex64: np.complex64,
       np.complex128: np.complex128}


dtype = dtype_fixture(np.float32, np.float64, np.complex64, np.complex128)


# ---- values ------------------------------------------------------------------------------
@pytest.mark.parametrize("n", [1, 2, 5])
def test_values_and_eigen_equations(dtype, n):
    rng = np.random.default_rng(n)
    a = rng.standard_normal((3, n, n))
    if np.issubdtype(dtype, np.complexfloating):
        a = a + 1j * rng.standard_normal((3, n, n))
    a = a.astype(dtype)
    w, vl, vr = (_a(v) for v in L.eig(a))
    assert w.dtype == vl.dtype == vr.dtype == OUT[dtype]
    assert w.shape == (3, n) and vl.shape == vr.shape == (3, n, n)
    tol = TOL[dtype]
    for i in range(3):
        np.testing.assert_allclose(_sorted(w[i]), _sorted(np.linalg.eigvals(a[i])), **tol)
    # a vr = vr diag(w), vlᴴ a = diag(w) vlᴴ
    np.testing.assert_allclose(a @ vr, vr * w[..., None, :], **tol)
    np.testing.assert_allclose(_mH(vl) @ a, w[..., :, None] * _mH(vl), **tol)
    # LAPACK's normalisation: unit columns, largest-magnitude component real
    for v in (vl, vr):
        np.testing.assert_allclose(np.linalg.norm(v, axis=-2), 1, **tol)
        k = np.argmax(np.abs(v), axis=-2)
        np.testing.assert_allclose(np.imag(np.take_along_axis(v, k[..., None, :], -2)), 0,
                                   atol=tol["atol"])


def test_left_vectors_match_scipy_up_to_phase(x64):
    a = np.random.default_rng(0).standard_normal((4, 4))
    w, vl, vr = (_a(v) for v in L.eig(a))
    sw, svl, svr = sla.eig(a, left=True, right=True)
    for j in range(4):
        k = int(np.argmin(np.abs(sw - w[j])))
        # unit vectors equal up to a unit factor: |<u, v>| = 1
        assert abs(abs(np.vdot(svl[:, k], vl[:, j])) - 1) < 1e-10
        assert abs(abs(np.vdot(svr[:, k], vr[:, j])) - 1) < 1e-10


def test_right_vectors_equal_numpy(x64):
    a = np.random.default_rng(1).standard_normal((2, 5, 5))
    w, vr = (_a(v) for v in L.eig(a, compute_left_eigenvectors=False))
    nw, nv = np.linalg.eig(a)
    np.testing.assert_allclose(w, nw, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(vr, nv, rtol=1e-12, atol=1e-12)


def test_which_outputs():
    a = np.random.default_rng(2).standard_normal((3, 3)).astype(np.float32)
    assert len(L.eig(a)) == 3
    assert len(L.eig(a, compute_left_eigenvectors=False)) == 2
    assert len(L.eig(a, compute_right_eigenvectors=False)) == 2
    (w,) = L.eig(a, compute_left_eigenvectors=False, compute_right_eigenvectors=False)
    np.testing.assert_allclose(_sorted(w), _sorted(np.linalg.eigvals(a)), rtol=1e-5)


def test_defective_and_repeated_eigenvalues():
    # a Jordan block: one eigenvector; the identity: every vector is one
    jordan = np.array([[2.0, 1.0], [0.0, 2.0]], np.float32)
    w, vl, vr = (_a(v) for v in L.eig(np.stack([jordan, np.eye(2, dtype=np.float32)])))
    np.testing.assert_allclose(w, [[2, 2], [1, 1]], atol=1e-6)
    np.testing.assert_allclose(np.stack([jordan, np.eye(2)]) @ vr, vr * w[..., None, :],
                               atol=1e-6)


def test_nonfinite_matrix_gives_nans_for_that_matrix_only():
    a = np.stack([np.diag([1.0, 2.0]), np.full((2, 2), np.nan)]).astype(np.float32)
    w, vl, vr = (_a(v) for v in L.eig(a))
    np.testing.assert_allclose(_sorted(w[0]), [1, 2])
    assert np.isnan(w[1]).all() and np.isnan(vl[1]).all() and np.isnan(vr[1]).all()


def test_empty():
    w, vl, vr = (_a(v) for v in L.eig(np.zeros((2, 0, 0), np.float32)))
    assert w.shape == (2, 0) and vr.shape == (2, 0, 0) and w.dtype == np.complex64


# ---- derivatives -------------------------------------------------------------------------
@pytest.mark.parametrize("complex_", [False, True])
def test_eigenvalue_derivatives(x64, complex_):
    a = _distinct(np.random.default_rng(3), 4, complex_)

    def eigvals(x):
        return L.eig(x, compute_left_eigenvectors=False, compute_right_eigenvectors=False)[0]

    check_grads(eigvals, (a,), order=2)


@pytest.mark.parametrize("complex_", [False, True])
def test_eigenvector_derivatives(x64, complex_):
    a = _distinct(np.random.default_rng(4), 4, complex_)
    # the raw vectors (the rule keeps LAPACK's normalisation) ...
    check_grads(lambda x: L.eig(x), (a,), order=1)

    # ... and a function that does not depend on it: each vector's projector v vᴴ / vᴴ v
    def projectors(x):
        _, vl, vr = L.eig(x)
        return [v[..., :, None, :] * mnp.conj(v)[..., None, :, :]
                / mnp.sum(mnp.abs(v) ** 2, axis=-2) for v in (vl, vr)]

    check_grads(projectors, (a,), order=1)


def test_eigenvector_second_derivatives(x64):
    a = _distinct(np.random.default_rng(5), 3, True)
    check_grads(lambda x: L.eig(x, compute_left_eigenvectors=False), (a,), order=2,
                modes=("fwd",))


def test_grad_of_real_function_is_conjugate_wirtinger(x64):
    # f(z) = sum |w(z)|²: grad is df/dx - i df/dy, checked component by component
    a = _distinct(np.random.default_rng(6), 3, True)

    def f(x):
        w = L.eig(x, compute_left_eigenvectors=False, compute_right_eigenvectors=False)[0]
        return mnp.sum(mnp.abs(w) ** 2)

    g = _a(mt.grad(f)(a))
    eps = 1e-6
    for idx in [(0, 0), (1, 2), (2, 1)]:
        e = np.zeros_like(a)
        e[idx] = 1
        dx = (float(f(a + eps * e)) - float(f(a - eps * e))) / (2 * eps)
        dy = (float(f(a + 1j * eps * e)) - float(f(a - 1j * eps * e))) / (2 * eps)
        np.testing.assert_allclose(g[idx], dx - 1j * dy, rtol=1e-6, atol=1e-8)


# ---- transformations ---------------------------------------------------------------------
@pytest.mark.parametrize("left,right", [(True, True), (False, True), (False, False)])
def test_vmap_matches_loop_and_jit_matches_eager(x64, left, right):
    a = np.random.default_rng(7).standard_normal((3, 4, 4))

    def fn(x):
        return L.eig(x, compute_left_eigenvectors=left, compute_right_eigenvectors=right)

    got = mt.vmap(fn)(a)
    moved = mt.vmap(fn, in_axes=2)(np.moveaxis(a, 0, 2))
    jitted = mt.jit(fn)(a)
    eager = fn(a)
    for k in range(len(eager)):
        for j in range(3):
            want = _a(fn(a[j])[k])
            np.testing.assert_allclose(_a(got[k])[j], want, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(_a(moved[k])[j], want, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(_a(jitted[k]), _a(eager[k]), rtol=1e-12, atol=1e-12)


def test_vmap_and_jit_of_grad(x64):
    a = _distinct(np.random.default_rng(8), 3, False, batch=(3,))

    def f(x):
        w, v = L.eig(x, compute_left_eigenvectors=False)
        return mnp.sum(mnp.real(w) ** 2) + mnp.sum(mnp.abs(v[..., 0, :]))

    g = mt.vmap(mt.grad(f))(a)
    gj = mt.jit(mt.vmap(mt.grad(f)))(a)
    for j in range(3):
        want = _a(mt.grad(f)(a[j]))
        np.testing.assert_allclose(_a(g)[j], want, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(_a(gj)[j], want, rtol=1e-10, atol=1e-12)


# ---- errors ------------------------------------------------------------------------------
def test_errors():
    with pytest.raises(ValueError, match=r"eig needs square matrices.*f32\[2,3\]"):
        L.eig(np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match=r"eig needs square matrices.*f32\[3\]"):
        L.eig(np.zeros(3, np.float32))
    with pytest.raises(TypeError, match=r"eig needs a float32.*i32\[2,2\]"):
        L.eig(np.zeros((2, 2), np.int32))
