"""mnp.linalg.eig / eigvals, mnp.roots and mnp.poly against NumPy: values (eigenvalues and
roots as sorted multisets), the eigen-equation, dtypes (complex always, as JAX), float64
finite differences, vmap against a loop, jit against eager, and errors."""

import numpy as np
import pytest

import mytorch as mt
import mytorch.numpy as mnp
from mytorch.errors import ConcretizationTypeError
from tests.autodiff.fd import check_grads


def _a(x):
    return np.asarray(x)


def _sorted(w):
    return np.sort_complex(np.asarray(w).astype(np.complex128))


# ---- eig / eigvals -----------------------------------------------------------------------
@pytest.mark.parametrize("dtype,out", [(np.float32, np.complex64), (np.int32, np.complex64),
                                       (np.complex64, np.complex64)])
def test_eig_values(dtype, out):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 4, 4)) * 3
    if np.issubdtype(dtype, np.complexfloating):
        a = a + 1j * rng.standard_normal((2, 4, 4))
    a = a.astype(dtype)
    w, v = mnp.linalg.eig(a)
    res = mnp.linalg.eig(a)
    assert res.eigenvalues is not None and res.eigenvectors is not None
    w, v = _a(w), _a(v)
    assert w.dtype == v.dtype == out
    for i in range(2):
        np.testing.assert_allclose(_sorted(w[i]), _sorted(np.linalg.eigvals(a[i])),
                                   rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(a @ v, v * w[..., None, :], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.linalg.norm(v, axis=-2), 1, rtol=1e-5)
    ev = _a(mnp.linalg.eigvals(a))
    assert ev.dtype == out
    np.testing.assert_allclose(ev, w, rtol=1e-5, atol=1e-5)


def test_eig_real_eigenvalues_stay_complex_and_match_numpy_x64(x64):
    a = np.array([[2.0, 1.0], [1.0, 3.0]])
    w, v = mnp.linalg.eig(a)
    nw, nv = np.linalg.eig(a)
    assert _a(w).dtype == np.complex128
    np.testing.assert_allclose(_a(w), nw, rtol=1e-12)
    np.testing.assert_allclose(_a(v), nv, rtol=1e-12, atol=1e-14)


def test_eig_grad_x64(x64):
    rng = np.random.default_rng(1)
    v = np.eye(3) + 0.3 * rng.standard_normal((3, 3))
    a = v @ np.diag([1.0, 2.0, -1.5]) @ np.linalg.inv(v)
    check_grads(lambda x: mnp.linalg.eigvals(x), (a,), order=2)

    def invariant(x):  # projectors v vᴴ do not depend on the eigenvectors' scaling
        _, vec = mnp.linalg.eig(x)
        return vec[..., :, None, :] * mnp.conj(vec)[..., None, :, :]

    check_grads(invariant, (a,), order=1)


def test_eig_vmap_and_jit(x64):
    a = np.random.default_rng(2).standard_normal((3, 4, 4))
    got = mt.vmap(mnp.linalg.eig)(a)
    jitted = mt.jit(mnp.linalg.eigvals)(a)
    for j in range(3):
        w, v = mnp.linalg.eig(a[j])
        np.testing.assert_allclose(_a(got[0])[j], _a(w), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(_a(got[1])[j], _a(v), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(_a(jitted), _a(mnp.linalg.eigvals(a)), rtol=1e-12)


def test_eig_errors():
    with pytest.raises(ValueError, match=r"eig: the last two dimensions must be square.*"
                                         r"f32\[2,3\]"):
        mnp.linalg.eig(np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match=r"eigvals: needs an array of rank >= 2"):
        mnp.linalg.eigvals(np.zeros(3, np.float32))
    with pytest.raises(TypeError, match="eig does not accept dtype float16"):
        mnp.linalg.eig(np.eye(2, dtype=np.float16))


# ---- roots -------------------------------------------------------------------------------
@pytest.mark.parametrize("p", [
    [1.0, -3.0, 2.0],
    [1.0, 2.0, 3.0, 4.0, 5.0],
    [0.0, 0.0, 2.0, -1.0, 0.5],       # leading zeros are stripped
    [1.0, -1.0, 0.0, 0.0],            # trailing zeros give zero roots
    [0.0, 3.0, 0.0],
    [4.0],
    [0.0, 0.0],
    [2.0, 0.0],
    [1, 0, -4],                       # ints become the default float
])
def test_roots_values(p):
    got = _a(mnp.roots(np.array(p)))
    want = np.roots(p)
    assert got.dtype == np.complex64 and got.shape == want.shape
    np.testing.assert_allclose(_sorted(got), _sorted(want), rtol=1e-4, atol=1e-5)


def test_roots_trailing_zero_roots_are_exact_and_last():
    got = _a(mnp.roots(np.array([1.0, -2.0, 0.0, 0.0], np.float32)))
    assert got[-2:].tolist() == [0, 0]
    np.testing.assert_allclose(got[0], 2, rtol=1e-6)


def test_roots_complex_and_x64(x64):
    p = np.array([1.0, 2j, -3.0, 1 - 1j])
    got = _a(mnp.roots(p))
    assert got.dtype == np.complex128
    np.testing.assert_allclose(_sorted(got), _sorted(np.roots(p)), rtol=1e-12)


def test_roots_without_stripping_is_traceable_and_gives_nans_for_leading_zeros():
    p = np.array([0.0, 0.0, 1.0, -3.0, 2.0], np.float32)
    for fn in (lambda q: mnp.roots(q, strip_zeros=False),
               mt.jit(lambda q: mnp.roots(q, strip_zeros=False))):
        got = _a(fn(p))
        assert got.shape == (4,)
        np.testing.assert_allclose(_sorted(got[:2]), [1, 2], rtol=1e-5)
        assert np.isnan(got[2:].real).all() and np.isnan(got[2:].imag).all()
    # no leading zeros: the same roots as with stripping
    q = np.array([1.0, 0.5, -2.0, 1.0], np.float32)
    np.testing.assert_allclose(_sorted(mnp.roots(q, strip_zeros=False)),
                               _sorted(np.roots(q)), rtol=1e-5)


def test_roots_vmap_without_stripping():
    p = np.random.default_rng(3).standard_normal((3, 4)).astype(np.float32)
    got = _a(mt.vmap(lambda q: mnp.roots(q, strip_zeros=False))(p))
    for j in range(3):
        np.testing.assert_allclose(_sorted(got[j]), _sorted(np.roots(p[j])), rtol=1e-4,
                                   atol=1e-5)


def test_roots_derivative_x64(x64):
    # a simple root r of p moves by -dp(r) / p'(r)
    p = np.array([1.0, -6.0, 11.0, -6.0])  # roots 1, 2, 3
    check_grads(lambda q: mnp.roots(q), (p,), order=2)
    g = _a(mt.grad(lambda q: mnp.max(mnp.real(mnp.roots(q))))(p))
    r = 3.0
    np.testing.assert_allclose(g, -r ** np.arange(3, -1, -1) / np.polyval(np.polyder(p), r),
                               rtol=1e-8)


def test_roots_errors():
    with pytest.raises(ConcretizationTypeError, match="roots: needs concrete coefficients"):
        mt.jit(mnp.roots)(np.array([1.0, 2.0], np.float32))
    with pytest.raises(ValueError, match=r"roots: the coefficients must be 1-D"):
        mnp.roots(np.ones((2, 2), np.float32))


# ---- poly --------------------------------------------------------------------------------
@pytest.mark.parametrize("z", [[1.0, 2.0], [0.5, -1.0, 3.0], [], [2]])
def test_poly_of_roots(z):
    got = _a(mnp.poly(np.array(z)))
    np.testing.assert_allclose(got, np.poly(z), rtol=1e-5)


def test_poly_of_matrix_is_its_characteristic_polynomial():
    a = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    got = _a(mnp.poly(a))
    assert got.dtype == np.complex64
    np.testing.assert_allclose(got, np.poly(a), rtol=1e-5, atol=1e-5)


def test_poly_roots_round_trip_and_grad_x64(x64):
    z = np.array([1.0, -2.0, 0.5])
    np.testing.assert_allclose(_sorted(mnp.roots(mnp.poly(z))), _sorted(z), rtol=1e-10)
    check_grads(mnp.poly, (z,), order=2)


def test_poly_errors():
    with pytest.raises(ValueError, match=r"poly: needs roots \[n\] or a non-empty square"):
        mnp.poly(np.ones((2, 3), np.float32))
