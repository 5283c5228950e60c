"""mnp.linalg on complex64/complex128: values and dtypes against numpy.linalg, derivatives
against central differences in complex directions (values paired by re(sum(a b))), grads of
real losses against differences in the real and imaginary directions, vmap against a loop
and jit against eager, and singular input."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch.numpy import linalg as LA
from tests.autodiff.fd import check_grads
from tests.dtype_fixtures import dtype_fixture
from tests.lax.test_linalg_complex import fd_real_grad


def _settings(n):
    return settings(max_examples=n, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _cnormal(rng, shape):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def _general(rng, *shape):
    """Complex matrices, + max(m, n) I on the square part (well conditioned)."""
    m, n = shape[-2:]
    return _cnormal(rng, shape) + max(m, n) * np.eye(m, n)


def _hpd(rng, *shape):
    a = _cnormal(rng, shape)
    return a @ np.conj(np.swapaxes(a, -1, -2)) + shape[-1] * np.eye(shape[-1])


def _H(x):
    return np.conj(np.swapaxes(x, -1, -2))


REAL = {np.complex64: np.float32, np.complex128: np.float64}
TOL = {np.complex64: dict(rtol=1e-3, atol=1e-4), np.complex128: dict(rtol=1e-9, atol=1e-10)}


dtype = dtype_fixture(np.complex64, np.complex128)


def _check(got, want, dtype, tol=None):
    got = np.asarray(got)
    want = np.asarray(want)
    if np.issubdtype(want.dtype, np.integer):  # ranks: int32, as JAX
        assert got.dtype == np.int32
        np.testing.assert_array_equal(got, want)
        return
    # complex in, complex out (64 stays 64); real results take the real dtype
    assert got.dtype == (dtype if np.iscomplexobj(want) else REAL[dtype]), (got.dtype,
                                                                             want.dtype)
    np.testing.assert_allclose(got, want, **(tol or TOL[dtype]))


# ---- values ------------------------------------------------------------------------------
CASES = {
    "solve": lambda r: (_general(r, 2, 3, 3), _cnormal(r, (2, 3, 2))),
    "solve_vector": lambda r: (_general(r, 3, 3), _cnormal(r, (3,))),
    "inv": lambda r: (_general(r, 2, 3, 3),),
    "det": lambda r: (_general(r, 2, 3, 3),),
    "pinv": lambda r: (_cnormal(r, (2, 4, 3)),),
    "pinv_wide": lambda r: (_cnormal(r, (3, 5)),),
    "matrix_rank": lambda r: (_general(r, 2, 3, 3),),
    "cond": lambda r: (_general(r, 2, 3, 3),),
    "eigvalsh": lambda r: (_hpd(r, 2, 3, 3),),
    "svdvals": lambda r: (_cnormal(r, (2, 3, 4)),),
    "cholesky": lambda r: (_hpd(r, 2, 3, 3),),
    "tensorinv": lambda r: (_general(r, 6, 6).reshape(2, 3, 6),),
    "tensorsolve": lambda r: (_general(r, 6, 6).reshape(2, 3, 2, 3), _cnormal(r, (2, 3))),
}
REFS = {"solve_vector": np.linalg.solve, "pinv_wide": np.linalg.pinv,
        "svdvals": lambda a: np.linalg.svd(a, compute_uv=False),
        "tensorinv": lambda a: np.linalg.tensorinv(a, ind=2)}


@_settings(6)
@given(seed=st.integers(0, 2**32 - 1))
@pytest.mark.parametrize("name", sorted(CASES))
def test_values_match_numpy(dtype, name, seed):
    args = [a.astype(dtype) for a in CASES[name](np.random.default_rng(seed))]
    base = name.removesuffix("_vector").removesuffix("_wide")
    fn, ref = getattr(LA, base), REFS.get(name) or getattr(np.linalg, base)
    _check(fn(*[mnp.asarray(a) for a in args]), ref(*args), dtype)


@_settings(6)
@given(seed=st.integers(0, 2**32 - 1))
def test_slogdet_sign_is_a_phase_and_det_is_sign_times_exp(dtype, seed):
    a = _general(np.random.default_rng(seed), 2, 4, 4).astype(dtype)
    sign, logdet = LA.slogdet(mnp.asarray(a))
    want_sign, want_log = np.linalg.slogdet(a)
    _check(sign, want_sign, dtype)
    _check(logdet, want_log, dtype)
    np.testing.assert_allclose(np.abs(np.asarray(sign)), 1, rtol=1e-5)
    _check(LA.det(mnp.asarray(a)), np.linalg.det(a), dtype)


@_settings(6)
@given(seed=st.integers(0, 2**32 - 1), shape=st.sampled_from([(4, 4), (5, 3), (3, 5),
                                                              (2, 4, 3)]))
def test_factorisations_reconstruct(dtype, seed, shape):
    rng = np.random.default_rng(seed)
    a = _cnormal(rng, shape).astype(dtype)
    k = min(shape[-2:])
    for mode in ("reduced", "complete"):
        q, r = (np.asarray(x) for x in LA.qr(mnp.asarray(a), mode=mode))
        _check(q @ r, a, dtype)
        _check(_H(q) @ q, np.broadcast_to(np.eye(q.shape[-1]), q.shape[:-2] +
                                          (q.shape[-1],) * 2).astype(dtype), dtype)
        _check(np.abs(r), np.abs(np.linalg.qr(a, mode=mode)[1]), dtype)
    for full in (True, False):
        u, s, vh = (np.asarray(x) for x in LA.svd(mnp.asarray(a), full_matrices=full))
        _check(s, np.linalg.svd(a, compute_uv=False), dtype)
        _check((u[..., :k] * s[..., None, :]) @ vh[..., :k, :], a, dtype)
    h = _hpd(rng, *shape[:-2], 4, 4).astype(dtype)
    for uplo in ("L", "U"):
        w, v = (np.asarray(x) for x in LA.eigh(mnp.asarray(h), UPLO=uplo))
        _check(w, np.linalg.eigvalsh(h, UPLO=uplo), dtype)
        _check(h @ v, v * w[..., None, :].astype(dtype), dtype)
    lower = np.asarray(LA.cholesky(mnp.asarray(h)))
    _check(lower @ _H(lower), h, dtype)
    _check(LA.cholesky(mnp.asarray(h), upper=True), _H(np.linalg.cholesky(h)), dtype)
    u, s, vh = (np.asarray(x) for x in LA.svd(mnp.asarray(h), hermitian=True))
    _check(s, np.linalg.svd(h, compute_uv=False), dtype)
    _check((u * s[..., None, :]) @ vh, h, dtype)


def test_eigh_reads_the_named_triangle_of_a_non_hermitian_input():
    a = np.array([[2.0, 100.0 + 7j], [1.0 - 2j, 3.0]], np.complex64)
    for uplo in ("L", "U"):
        w = LA.eigh(mnp.asarray(a), UPLO=uplo, symmetrize_input=False).eigenvalues
        _check(w, np.linalg.eigvalsh(a, UPLO=uplo), np.complex64)


@pytest.mark.parametrize("ord", [None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf])
def test_matrix_norms_and_cond(dtype, ord):
    a = _general(np.random.default_rng(3), 2, 3, 3).astype(dtype)
    _check(LA.norm(mnp.asarray(a), ord, axis=(-2, -1)), np.linalg.norm(a, ord, axis=(-2, -1)),
           dtype)
    _check(LA.matrix_norm(mnp.asarray(a), ord="fro" if ord is None else ord),
           np.linalg.norm(a, "fro" if ord is None else ord, axis=(-2, -1)), dtype)
    if ord is not None:
        _check(LA.cond(mnp.asarray(a), ord), np.linalg.cond(a, ord), dtype)


@pytest.mark.parametrize("ord", [None, 0, 1, 2, 3, 0.5, np.inf, -np.inf])
def test_vector_norms(dtype, ord):
    v = _cnormal(np.random.default_rng(4), (2, 5)).astype(dtype)
    v[0, 1] = 0
    _check(LA.norm(mnp.asarray(v), ord, axis=-1), np.linalg.norm(v, ord, axis=-1), dtype)
    _check(LA.vector_norm(mnp.asarray(v), ord=2 if ord is None else ord, axis=1),
           np.linalg.norm(v, ord, axis=1), dtype)
    if ord is None:
        _check(LA.norm(mnp.asarray(v)), np.linalg.norm(v), dtype)


def test_lstsq_matches_numpy(dtype):
    rng = np.random.default_rng(5)
    a, b = _cnormal(rng, (6, 3)).astype(dtype), _cnormal(rng, (6, 2)).astype(dtype)
    for rhs in (b, b[:, 0]):
        x, resid, rank, s = LA.lstsq(mnp.asarray(a), mnp.asarray(rhs))
        x0, resid0, rank0, s0 = np.linalg.lstsq(a, rhs, rcond=None)
        _check(x, x0, dtype)
        _check(resid, resid0, dtype)
        assert int(rank) == rank0
        _check(s, s0, dtype)


def test_matrix_power_and_multi_dot(dtype):
    rng = np.random.default_rng(6)
    a = (_general(rng, 2, 3, 3) / 3).astype(dtype)
    for n in (-3, -1, 0, 1, 2, 5):
        _check(LA.matrix_power(mnp.asarray(a), n), np.linalg.matrix_power(a, n), dtype)
    mats = [_cnormal(rng, s).astype(dtype) for s in ((3,), (3, 7), (7, 2), (2, 5), (5,))]
    _check(LA.multi_dot([mnp.asarray(m) for m in mats]), np.linalg.multi_dot(mats), dtype)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_vecdot_conjugates_its_first_operand(x64, axis):
    # NumPy's vecdot is sum(conj(x1) * x2) along axis (not sum(x1 * x2))
    rng = np.random.default_rng(7)
    a, b = _cnormal(rng, (4, 4, 4)), _cnormal(rng, (4, 4))
    for fn in (LA.vecdot, mnp.vecdot, mt.jit(LA.vecdot, static_argnames="axis")):
        np.testing.assert_allclose(np.asarray(fn(a, b, axis=axis)),
                                   np.linalg.vecdot(a, b, axis=axis), rtol=1e-12)
    check_grads(lambda x, y: LA.vecdot(x, y, axis=axis), (a, b), order=1)


def test_real_and_complex_operands_promote_to_complex():
    rng = np.random.default_rng(7)
    a, b = _general(rng, 3, 3).real.astype(np.float32), _cnormal(rng, (3, 2)).astype(
        np.complex64)
    _check(LA.solve(mnp.asarray(a), mnp.asarray(b)), np.linalg.solve(a, b), np.complex64)


def test_singular_complex_input_keeps_numpys_values():
    singular = np.array([[1 + 1j, 2 + 2j], [2 + 2j, 4 + 4j]], np.complex64)
    assert complex(LA.det(mnp.asarray(singular))) == 0
    sign, logdet = LA.slogdet(mnp.asarray(singular))
    assert complex(sign) == 0 and float(logdet) == -np.inf
    assert np.asarray(sign).dtype == np.complex64 and np.asarray(logdet).dtype == np.float32
    assert not np.isfinite(np.asarray(LA.inv(mnp.asarray(singular)))).all()
    assert float(LA.cond(mnp.asarray(singular))) > 1e6
    assert int(LA.matrix_rank(mnp.asarray(singular))) == 1
    with pytest.raises(ValueError, match=r"inv: .*square, got c64\[2,3\]"):
        LA.inv(mnp.ones((2, 3), mnp.complex64))


# ---- derivatives (central differences in complex directions) -----------------------------
def _derivative_cases(rng):
    a, b = _general(rng, 3, 3), _cnormal(rng, (3, 2))
    h = _hpd(rng, 3, 3)
    return {
        "solve": (LA.solve, (a, b)),
        "inv": (LA.inv, (a,)),
        "det": (LA.det, (a,)),
        "slogdet": (lambda m: tuple(LA.slogdet(m)), (a,)),
        "cholesky": (lambda m: LA.cholesky(m, upper=True), (h,)),
        "qr": (lambda m: tuple(LA.qr(m)), (_cnormal(rng, (4, 3)),)),
        "eigvalsh": (LA.eigvalsh, (h,)),
        "svdvals": (LA.svdvals, (a,)),
        "pinv": (LA.pinv, (_cnormal(rng, (4, 3)),)),
        "pinv_wide": (LA.pinv, (_cnormal(rng, (3, 4)),)),
        "lstsq": (lambda m, r: LA.lstsq(m, r)[:2], (_cnormal(rng, (4, 3)),
                                                  _cnormal(rng, (4, 2)))),
        "matrix_power": (lambda m: LA.matrix_power(m, -2), (a,)),
        "multi_dot": (lambda m, r: LA.multi_dot([m, m, r]), (a, b)),
        "tensorsolve": (lambda m, r: LA.tensorsolve(m, r),
                        (_general(rng, 6, 6).reshape(2, 3, 2, 3), _cnormal(rng, (2, 3)))),
        "norms": (lambda m: (LA.norm(m), LA.norm(m, 2), LA.norm(m, "nuc"), LA.norm(m, 1),
                             LA.norm(m, np.inf), LA.norm(m[0], 3)), (a,)),
        "cond": (lambda m: (LA.cond(m), LA.cond(m, "fro")), (a,)),
    }


@pytest.mark.parametrize("name", sorted(_derivative_cases(np.random.default_rng(0))))
def test_derivatives_match_finite_differences(x64, name):
    fn, args = _derivative_cases(np.random.default_rng(0))[name]
    check_grads(fn, args, order=1, rtol=1e-5, atol=1e-6)


def test_slogdet_sign_derivative_is_i_im_trace_times_sign(x64):
    """d sign = i im(tr(a⁻¹ da)) sign, d log|det| = re(tr(a⁻¹ da)) (JAX's rule)."""
    rng = np.random.default_rng(1)
    a, t = _general(rng, 3, 3), _cnormal(rng, (3, 3))
    (sign, _), (dsign, dlog) = mt.jvp(lambda m: tuple(LA.slogdet(m)), (mnp.asarray(a),),
                                      (mnp.asarray(t),))
    tr = np.trace(np.linalg.solve(a, t))
    np.testing.assert_allclose(complex(dsign), 1j * tr.imag * complex(sign), rtol=1e-10)
    np.testing.assert_allclose(float(dlog), tr.real, rtol=1e-10)


@pytest.mark.parametrize("name", ["trace_inv", "svdvals", "logabsdet", "abs_det", "norm2",
                                  "fro", "pinv", "eigh", "solve"])
def test_grad_of_a_real_loss_against_real_and_imaginary_differences(x64, name):
    rng = np.random.default_rng(2)
    a, b = _general(rng, 3, 3), mnp.asarray(_cnormal(rng, (3, 3)))
    losses = {
        "trace_inv": lambda m: mnp.real(mnp.trace(mnp.matmul(LA.inv(m), b))),
        "svdvals": lambda m: mnp.sum(mnp.abs(LA.svdvals(m))),
        "logabsdet": lambda m: LA.slogdet(m).logabsdet,
        "abs_det": lambda m: mnp.abs(LA.det(m)),
        "norm2": lambda m: LA.norm(m, 2),
        "fro": lambda m: LA.norm(m),
        "pinv": lambda m: mnp.sum(mnp.imag(LA.pinv(m[:, :2]) * b[:2])),
        "eigh": lambda m: mnp.sum(LA.eigvalsh(m) * mnp.asarray([1.0, -2.0, 0.5])),
        "solve": lambda m: mnp.sum(mnp.abs(LA.solve(m, b)) ** 2),
    }
    f = losses[name]
    got = np.asarray(mt.grad(f)(mnp.asarray(a)))
    assert got.dtype == np.complex128
    np.testing.assert_allclose(got, fd_real_grad(f, a), rtol=1e-5, atol=1e-6)


def test_grad_of_real_trace_of_inverse_is_minus_the_transposed_product(x64):
    """f(A) = re(tr(A⁻¹ B)): df = re(tr(-A⁻¹ dA A⁻¹ B)), so JAX's gradient is
    -(A⁻¹ B A⁻¹)ᵀ (no conjugate: the holomorphic part's derivative, transposed)."""
    rng = np.random.default_rng(3)
    a, b = _general(rng, 3, 3), _cnormal(rng, (3, 3))
    g = mt.grad(lambda m: mnp.real(mnp.trace(mnp.matmul(LA.inv(m), mnp.asarray(b)))))(a)
    ainv = np.linalg.inv(a)
    np.testing.assert_allclose(np.asarray(g), -(ainv @ b @ ainv).T, rtol=1e-9)


def test_holomorphic_grad_of_det_is_the_cofactor_matrix(x64):
    a = _general(np.random.default_rng(4), 3, 3)
    g = mt.grad(LA.det, holomorphic=True)(mnp.asarray(a))
    np.testing.assert_allclose(np.asarray(g), np.linalg.det(a) * np.linalg.inv(a).T,
                               rtol=1e-9)


# ---- vmap == loop, jit == eager ----------------------------------------------------------
def test_vmap_matches_a_loop_and_jit_matches_eager():
    rng = np.random.default_rng(8)
    a = mnp.asarray(_general(rng, 3, 4, 4).astype(np.complex64))
    b = mnp.asarray(_cnormal(rng, (3, 4, 2)).astype(np.complex64))
    cases = [
        (lambda m, r: LA.solve(m, r), (a, b)),
        (lambda m, r: LA.det(m) + mnp.sum(LA.inv(m)), (a, b)),
        (lambda m, r: LA.slogdet(m).sign * LA.slogdet(m).logabsdet, (a, b)),
        (lambda m, r: LA.pinv(m[:, :3]), (a, b)),
        (lambda m, r: LA.lstsq(m, r)[0], (a, b)),
        (lambda m, r: LA.norm(m, "nuc") + LA.cond(m) + LA.norm(m, 1), (a, b)),
        (lambda m, r: LA.svd(m, compute_uv=False), (a, b)),
        (lambda m, r: LA.eigvalsh(mnp.matmul(m, mnp.conj(m.T))), (a, b)),
        (lambda m, r: LA.matrix_power(m, 3), (a, b)),
    ]
    for f, args in cases:
        looped = np.stack([np.asarray(f(*[x[i] for x in args])) for i in range(3)])
        got = np.asarray(mt.vmap(f)(*args))
        assert got.dtype == looped.dtype
        np.testing.assert_allclose(got, looped, rtol=1e-4, atol=1e-5)
        one = [x[0] for x in args]
        np.testing.assert_allclose(np.asarray(mt.jit(f)(*one)), np.asarray(f(*one)),
                                   rtol=1e-5, atol=1e-6)


def test_vmap_and_jit_of_grad(x64):
    rng = np.random.default_rng(9)
    a, b = _general(rng, 3, 3, 3), mnp.asarray(_cnormal(rng, (3, 3)))

    def loss(m):
        return mnp.real(mnp.trace(mnp.matmul(LA.inv(m), b))) + LA.norm(m, "nuc")

    batched = np.asarray(mt.vmap(mt.grad(loss))(mnp.asarray(a)))
    for j in range(3):
        want = np.asarray(mt.grad(loss)(mnp.asarray(a[j])))
        np.testing.assert_allclose(batched[j], want, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(np.asarray(mt.jit(mt.grad(loss))(mnp.asarray(a[j]))),
                                   want, rtol=1e-10, atol=1e-12)
