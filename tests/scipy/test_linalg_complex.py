"""mt.scipy.linalg on complex64/complex128 against scipy.linalg: values and dtypes (trans=2
is the conjugate transpose, Cholesky factors satisfy a = L Lᴴ = Uᴴ U), derivatives against
central differences in complex directions, expm's gradient of a real loss against real and
imaginary differences, vmap against a loop and jit against eager."""

import numpy as np
import pytest
import scipy.linalg as sl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch.scipy import linalg as L
from tests.autodiff.fd import check_grads
from tests.dtype_fixtures import dtype_fixture
from tests.lax.test_linalg_complex import fd_real_grad


def _settings(n):
    return settings(max_examples=n, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _cnormal(rng, shape):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def _inputs(seed, dtype):
    """A well-conditioned a [4, 4], a Hermitian positive-definite h, a right side b [4, 2]."""
    rng = np.random.default_rng(seed)
    a = _cnormal(rng, (4, 4)) + 4 * np.eye(4)
    g = _cnormal(rng, (4, 4))
    h = g @ g.conj().T + 4 * np.eye(4)
    return a.astype(dtype), h.astype(dtype), _cnormal(rng, (4, 2)).astype(dtype)


TOL = {np.complex64: dict(rtol=1e-3, atol=1e-4), np.complex128: dict(rtol=1e-9, atol=1e-10)}


dtype = dtype_fixture(np.complex64, np.complex128)


def _check(got, want, dtype, real=False):
    got = np.asarray(got)
    assert got.dtype == (np.finfo(dtype).dtype if real else dtype)
    np.testing.assert_allclose(got, want, **TOL[dtype])


@_settings(5)
@given(seed=st.integers(0, 2**32 - 1), trans=st.sampled_from([0, 1, 2, "N", "T", "C"]),
       lower=st.booleans(), unit_diagonal=st.booleans())
def test_solve_triangular(dtype, seed, trans, lower, unit_diagonal):
    a, _, b = _inputs(seed, dtype)
    for rhs in (b, b[:, 0]):
        got = L.solve_triangular(mnp.asarray(a), mnp.asarray(rhs), trans=trans, lower=lower,
                                 unit_diagonal=unit_diagonal)
        _check(got, sl.solve_triangular(a, rhs, trans=trans, lower=lower,
                                        unit_diagonal=unit_diagonal), dtype)


@_settings(5)
@given(seed=st.integers(0, 2**32 - 1), lower=st.booleans())
def test_cholesky_and_cho_solve(dtype, seed, lower):
    _, h, b = _inputs(seed, dtype)
    c = L.cholesky(mnp.asarray(h), lower=lower)
    _check(c, sl.cholesky(h, lower=lower), dtype)
    c = np.asarray(c)
    _check(c @ c.conj().T if lower else c.conj().T @ c, h, dtype)
    factor = L.cho_factor(mnp.asarray(h), lower=lower)
    _check(L.cho_solve(factor, mnp.asarray(b)), sl.cho_solve(sl.cho_factor(h, lower=lower), b),
           dtype)
    _check(L.solve(mnp.asarray(h), mnp.asarray(b), assume_a="pos", lower=lower),
           sl.solve(h, b, assume_a="pos", lower=lower), dtype)


@_settings(5)
@given(seed=st.integers(0, 2**32 - 1))
def test_lu_factor_and_lu_solve(dtype, seed):
    a, _, b = _inputs(seed, dtype)
    lu, piv = L.lu_factor(mnp.asarray(a))
    lu0, piv0 = sl.lu_factor(a)
    _check(lu, lu0, dtype)
    np.testing.assert_array_equal(np.asarray(piv), piv0)
    for trans in (0, 1, 2):
        for rhs in (b, b[:, 0]):
            _check(L.lu_solve((lu, piv), mnp.asarray(rhs), trans=trans),
                   sl.lu_solve((lu0, piv0), rhs, trans=trans), dtype)


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (2, 3, 3)])
def test_lu(dtype, shape):
    a = _cnormal(np.random.default_rng(1), shape).astype(dtype)
    p, low, up = L.lu(mnp.asarray(a))
    want = [sl.lu(x) for x in a.reshape(-1, *shape[-2:])]
    for got, k, real in ((p, 0, True), (low, 1, False), (up, 2, False)):
        _check(got, np.stack([w[k] for w in want]).reshape(np.shape(got)), dtype, real=real)
    pl, u1 = L.lu(mnp.asarray(a), permute_l=True)
    _check(mnp.matmul(pl, u1), a, dtype)


@pytest.mark.parametrize("scale", [0.01, 0.3, 1.0, 3.0, 20.0])
def test_expm(dtype, scale):
    """Every Padé order and the scaling and squaring; complex rotations included."""
    a = (_cnormal(np.random.default_rng(2), (4, 4)) * scale).astype(dtype)
    want = sl.expm(a.astype(np.complex128))
    got = np.asarray(L.expm(mnp.asarray(a)))
    assert got.dtype == dtype
    rtol = 2e-3 if dtype == np.complex64 else 1e-7  # as the real float64 test
    np.testing.assert_allclose(got, want, rtol=rtol, atol=0.1 * rtol * np.abs(want).max())
    # exp(iπ I) = -I, and a rotation by a quarter turn and a phase
    for m in (1j * np.pi * np.eye(2), (np.pi / 2) * np.array([[0, 1], [-1, 0]]) + 0.5j):
        got = np.asarray(L.expm(mnp.asarray(m.astype(dtype))))
        assert got.dtype == dtype
        np.testing.assert_allclose(got, sl.expm(m), rtol=rtol, atol=rtol)


def test_block_diag_solve_det_inv_eigh_qr_svd(dtype):
    a, h, b = _inputs(3, dtype)
    v = _cnormal(np.random.default_rng(3), (3,)).astype(dtype)
    _check(L.block_diag(mnp.asarray(a), mnp.asarray(b), mnp.asarray(v)),
           sl.block_diag(a, b, v), dtype)
    _check(L.solve(mnp.asarray(a), mnp.asarray(b)), sl.solve(a, b), dtype)
    _check(L.solve(mnp.asarray(h), mnp.asarray(b[:, 0]), assume_a="her"),
           sl.solve(h, b[:, 0], assume_a="her"), dtype)
    _check(L.det(mnp.asarray(a)), sl.det(a), dtype)
    _check(L.inv(mnp.asarray(a)), sl.inv(a), dtype)
    w, vecs = L.eigh(mnp.asarray(h))
    _check(w, sl.eigh(h, eigvals_only=True), dtype, real=True)
    _check(h @ np.asarray(vecs), np.asarray(vecs) * np.asarray(w).astype(dtype), dtype)
    q, r = L.qr(mnp.asarray(a))
    _check(mnp.matmul(q, r), a, dtype)
    u, s, vh = L.svd(mnp.asarray(a))
    _check(s, sl.svd(a, compute_uv=False), dtype, real=True)


# ---- derivatives -------------------------------------------------------------------------
def _derivative_cases():
    a, h, b = (x.astype(np.complex128) for x in _inputs(4, np.complex128))
    return {
        "solve_triangular": (lambda m, r: [L.solve_triangular(m, r, trans=t, lower=low)
                                           for t in (0, 1, 2) for low in (True, False)],
                             (a, b)),
        "cho_solve": (lambda m, r: [L.cho_solve(L.cho_factor(m, lower=low), r)
                                    for low in (True, False)], (h, b)),
        "lu_solve": (lambda m, r: [L.lu_solve(L.lu_factor(m), r, trans=t) for t in (0, 1, 2)],
                     (a, b)),
        "lu": (lambda m: L.lu(m)[1:], (a,)),
        "expm": (L.expm, (0.5 * a,)),
        "expm_squaring": (L.expm, (2.0 * a,)),
        "solve": (lambda m, r: L.solve(m, r), (a, b)),
    }


@pytest.mark.parametrize("name", sorted(_derivative_cases()))
def test_derivatives_match_finite_differences(x64, name):
    fn, args = _derivative_cases()[name]
    check_grads(fn, args, order=1, rtol=1e-5, atol=1e-6)


def test_grad_of_a_real_loss_of_expm(x64):
    a = 0.5 * _cnormal(np.random.default_rng(5), (3, 3))
    c = mnp.asarray(_cnormal(np.random.default_rng(6), (3, 3)))

    def f(m):
        return mnp.real(mnp.trace(mnp.matmul(L.expm(m), c)))

    got = np.asarray(mt.grad(f)(mnp.asarray(a)))
    np.testing.assert_allclose(got, fd_real_grad(f, a), rtol=1e-6, atol=1e-7)


def test_vmap_matches_a_loop_and_jit_matches_eager():
    a, h, b = _inputs(7, np.complex64)
    rng = np.random.default_rng(7)
    stack = np.stack([a, a + 0.1 * _cnormal(rng, (4, 4)), a.T]).astype(np.complex64)
    cases = [
        lambda m: L.solve_triangular(m, mnp.asarray(b), trans=2),
        lambda m: L.lu_solve(L.lu_factor(m), mnp.asarray(b), trans=2),
        lambda m: L.cho_solve(L.cho_factor(mnp.matmul(m, mnp.conj(m.T))), mnp.asarray(b)),
        lambda m: L.expm(0.3 * m),
        lambda m: L.lu(m)[2],
    ]
    for f in cases:
        looped = np.stack([np.asarray(f(mnp.asarray(x))) for x in stack])
        np.testing.assert_allclose(np.asarray(mt.vmap(f)(mnp.asarray(stack))), looped,
                                   rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(np.asarray(mt.jit(f)(mnp.asarray(a))),
                                   np.asarray(f(mnp.asarray(a))), rtol=1e-5, atol=1e-6)
