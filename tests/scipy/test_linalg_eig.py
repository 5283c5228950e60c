"""mt.scipy.linalg's generalised eigh(a, b), eig / eigvals and logm against SciPy: values,
the defining identities, float64 finite differences (real and complex input), vmap against
a loop, jit against eager, and errors."""

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


def _sorted(w):
    return np.sort_complex(np.asarray(w).astype(np.complex128))


def _hermitian(rng, n, complex_=False, batch=()):
    x = rng.standard_normal((*batch, n, n))
    if complex_:
        x = x + 1j * rng.standard_normal((*batch, n, n))
    return (x + _mH(x)) / 2


def _positive_definite(rng, n, complex_=False, batch=()):
    x = rng.standard_normal((*batch, n, n))
    if complex_:
        x = x + 1j * rng.standard_normal((*batch, n, n))
    return x @ _mH(x) + n * np.eye(n)


# ---- generalised eigh --------------------------------------------------------------------
@pytest.mark.parametrize("type_", [1, 2, 3])
@pytest.mark.parametrize("complex_", [False, True])
def test_generalized_eigh_values_x64(x64, type_, complex_):
    rng = np.random.default_rng(type_)
    a, b = _hermitian(rng, 4, complex_), _positive_definite(rng, 4, complex_)
    w, v = (_a(x) for x in L.eigh(a, b, type=type_))
    want_w = sla.eigh(a, b, type=type_, eigvals_only=True)
    np.testing.assert_allclose(w, want_w, rtol=1e-10, atol=1e-10)
    lhs = {1: a @ v, 2: a @ b @ v, 3: b @ a @ v}[type_]
    rhs = (b @ v if type_ == 1 else v) * w
    np.testing.assert_allclose(lhs, rhs, rtol=1e-10, atol=1e-10)
    gram = _mH(v) @ (np.linalg.inv(b) if type_ == 3 else b) @ v  # SciPy's normalisation
    np.testing.assert_allclose(gram, np.eye(4), atol=1e-10)
    np.testing.assert_allclose(_a(L.eigh(a, b, type=type_, eigvals_only=True)), w)


def test_generalized_eigh_float32_batched_and_lower_triangle():
    rng = np.random.default_rng(0)
    a = _hermitian(rng, 3, batch=(2,)).astype(np.float32)
    b = _positive_definite(rng, 3).astype(np.float32)  # broadcast over a's batch
    w, v = (_a(x) for x in L.eigh(a, b))
    assert w.dtype == v.dtype == np.float32 and w.shape == (2, 3) and v.shape == (2, 3, 3)
    for i in range(2):
        np.testing.assert_allclose(w[i], sla.eigh(a[i], b, eigvals_only=True), rtol=1e-4,
                                   atol=1e-5)
    # without symmetrizing only the named triangle is read, as SciPy
    junk = np.triu(np.full((3, 3), 7.0, np.float32), 1)
    got = _a(L.eigh(np.tril(a[0]) + junk, np.tril(b) + junk, eigvals_only=True,
                    symmetrize_input=False))
    np.testing.assert_allclose(got, sla.eigh(a[0], b, eigvals_only=True), rtol=1e-4,
                               atol=1e-5)
    got = _a(L.eigh(np.triu(a[0]) + junk.T, np.triu(b) + junk.T, lower=False,
                    eigvals_only=True, symmetrize_input=False))
    np.testing.assert_allclose(got, sla.eigh(a[0], b, eigvals_only=True), rtol=1e-4,
                               atol=1e-5)


@pytest.mark.parametrize("complex_", [False, True])
def test_generalized_eigh_derivatives_x64(x64, complex_):
    rng = np.random.default_rng(5)
    a, b = _hermitian(rng, 3, complex_), _positive_definite(rng, 3, complex_)

    def values(a, b):
        return L.eigh(a, b, eigvals_only=True)

    def projectors(a, b):  # v vᴴ does not depend on each eigenvector's phase
        _, v = L.eigh(a, b)
        return v[..., :, None, :] * mnp.conj(v)[..., None, :, :]

    check_grads(values, (a, b), order=2)
    check_grads(projectors, (a, b), order=1)


def test_generalized_eigh_vmap_and_jit(x64):
    rng = np.random.default_rng(6)
    a, b = _hermitian(rng, 3, batch=(3,)), _positive_definite(rng, 3, batch=(3,))
    got = mt.vmap(L.eigh)(a, b)
    jitted = mt.jit(L.eigh)(a, b)
    for j in range(3):
        want = L.eigh(a[j], b[j])
        for k in range(2):
            np.testing.assert_allclose(_a(got[k])[j], _a(want[k]), rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(_a(jitted[k])[j], _a(want[k]), rtol=1e-12, atol=1e-12)


def test_generalized_eigh_not_positive_definite_gives_nans():
    w = _a(L.eigh(np.eye(2, dtype=np.float32), -np.eye(2, dtype=np.float32),
                  eigvals_only=True))
    assert np.isnan(w).all()


def test_generalized_eigh_errors():
    with pytest.raises(ValueError, match="eigh: type must be 1, 2 or 3"):
        L.eigh(mnp.eye(2), mnp.eye(2), type=4)
    with pytest.raises(ValueError, match=r"eigh: a and b must be matrices of one size, got "
                                         r"a f32\[2,2\] and b f32\[3,3\]"):
        L.eigh(mnp.eye(2), mnp.eye(3))
    with pytest.raises(ValueError, match=r"eigh: the last two dimensions must be square"):
        L.eigh(mnp.eye(2), mnp.ones((2, 3)))


# ---- eig / eigvals -----------------------------------------------------------------------
def test_eig_spellings():
    a = np.random.default_rng(7).standard_normal((4, 4)).astype(np.float32)
    w = _a(L.eig(a, right=False))
    w2, vr = (_a(x) for x in L.eig(a))
    w3, vl = (_a(x) for x in L.eig(a, left=True, right=False))
    w4, vl4, vr4 = (_a(x) for x in L.eig(a, left=True))
    assert w.dtype == np.complex64
    np.testing.assert_allclose(_sorted(w), _sorted(sla.eigvals(a)), rtol=1e-4, atol=1e-5)
    for other in (w2, w3, w4, _a(L.eigvals(a))):
        np.testing.assert_allclose(other, w, rtol=1e-6)
    np.testing.assert_allclose(a @ vr, vr * w, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(_mH(vl) @ a, w[:, None] * _mH(vl), rtol=1e-4, atol=1e-4)
    hom = _a(L.eigvals(a, homogeneous_eigvals=True))
    np.testing.assert_allclose(hom, np.stack([w, np.ones(4)]), rtol=1e-6)
    with pytest.raises(ValueError, match=r"eig: the generalised problem \(b=\) is supported "
                                         r"by eigh only"):
        L.eig(a, np.eye(4))


# ---- logm --------------------------------------------------------------------------------
def _logm_cases(rng):
    v = np.eye(4) + 0.3 * rng.standard_normal((4, 4))
    return {
        "general": rng.standard_normal((4, 4)) + 4 * np.eye(4),
        "jordan block": np.array([[2.0, 1.0, 0.0], [0.0, 2.0, 1.0], [0.0, 0.0, 2.0]]),
        "identity": np.eye(3),
        "wide spectrum": v @ np.diag([1e-3, 0.5, 20.0, 1e3]) @ np.linalg.inv(v),
        "rotation": np.array([[np.cos(2.5), -np.sin(2.5)], [np.sin(2.5), np.cos(2.5)]]),
        "complex": (rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))
                    + 3 * np.eye(3)),
    }


@pytest.mark.filterwarnings("ignore:logm result may be inaccurate")
@pytest.mark.parametrize("name", list(_logm_cases(np.random.default_rng(0))))
def test_logm_values_x64(x64, name):
    a = _logm_cases(np.random.default_rng(0))[name]
    got = _a(L.logm(a))
    assert got.dtype == a.dtype
    np.testing.assert_allclose(got, sla.logm(a), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(sla.expm(got), a, rtol=1e-9, atol=1e-9)


def test_logm_float32_and_errest():
    a = (np.random.default_rng(1).standard_normal((3, 3)) + 3 * np.eye(3)).astype(np.float32)
    got, err = L.logm(a, disp=False)
    assert _a(got).dtype == np.float32
    np.testing.assert_allclose(_a(got), sla.logm(a.astype(np.float64)), rtol=2e-5, atol=2e-5)
    assert 0 <= float(err) < 1e-5


def test_logm_without_a_real_logarithm_gives_nans():
    # a negative eigenvalue: the logarithm is complex, which a real dtype cannot hold
    assert np.isnan(_a(L.logm(np.diag([-1.0, 2.0]).astype(np.float32)))).all()
    assert np.isnan(_a(L.logm(np.zeros((2, 2), np.float32)))).all()  # singular


@pytest.mark.parametrize("name", ["general", "jordan block", "complex"])
def test_logm_derivatives_x64(x64, name):
    a = _logm_cases(np.random.default_rng(0))[name]
    check_grads(L.logm, (a,), order=1)


def test_logm_derivative_at_repeated_eigenvalues_x64(x64):
    # d log at the identity is the identity map, where eigenvector-based rules break down
    e = np.random.default_rng(2).standard_normal((3, 3))
    _, t = mt.jvp(L.logm, (mnp.asarray(np.eye(3)),), (mnp.asarray(e),))
    np.testing.assert_allclose(_a(t), e, atol=1e-12)
    np.testing.assert_allclose(_a(mt.grad(lambda x: mnp.sum(L.logm(x)))(2 * np.eye(3))),
                               np.full((3, 3), 0.5), atol=1e-12)


def test_logm_batched_vmap_and_jit_x64(x64):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((3, 3, 3)) + 3 * np.eye(3)
    loop = np.stack([_a(L.logm(x)) for x in a])
    np.testing.assert_allclose(_a(L.logm(a)), loop, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(_a(mt.vmap(L.logm)(a)), loop, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(_a(mt.jit(L.logm)(a)), loop, rtol=1e-12, atol=1e-12)
    assert L.logm(np.zeros((2, 0, 0))).shape == (2, 0, 0)


def test_logm_errors():
    with pytest.raises(ValueError, match=r"logm: the last two dimensions must be square"):
        L.logm(mnp.ones((2, 3)))
