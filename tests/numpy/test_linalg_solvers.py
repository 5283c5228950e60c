"""mnp.linalg's factorisations and solvers: values against numpy.linalg, gradients against
float64 central differences, vmap against a loop, jit against eager, and the errors."""

import numpy as np
import pytest

import mytorch as mt
import mytorch.numpy as mnp
from mytorch.numpy import linalg as LA
from tests.autodiff.fd import check_grads

RNG = np.random.default_rng(0)


def _rand(*shape):
    return RNG.normal(size=shape)


def _spd(*shape):
    a = _rand(*shape)
    return a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])


def _close(got, want, rtol=1e-4, atol=1e-5):
    np.testing.assert_allclose(np.asarray(got), want, rtol=rtol, atol=atol)


A = _rand(3, 4, 4)
B = _rand(3, 4, 2)
S = _spd(3, 4, 4)
W = _rand(2, 5, 3)


@pytest.mark.parametrize("name, args, ref", [
    ("solve", (A, B), np.linalg.solve),
    ("solve", (A[0], B[0, :, 0]), np.linalg.solve),
    ("solve", (A, B[0]), np.linalg.solve),
    ("inv", (A,), np.linalg.inv),
    ("det", (A,), np.linalg.det),
    ("cholesky", (S,), np.linalg.cholesky),
    ("eigvalsh", (S,), np.linalg.eigvalsh),
    ("pinv", (W,), np.linalg.pinv),
    ("matrix_rank", (A,), np.linalg.matrix_rank),
    ("cond", (A,), np.linalg.cond),
    ("tensorinv", (_rand(4, 6, 8, 3),), np.linalg.tensorinv),
    ("tensorsolve", (_rand(2, 3, 6), _rand(2, 3)), np.linalg.tensorsolve),
])
def test_values_match_numpy(name, args, ref):
    got = getattr(LA, name)(*[mnp.asarray(a.astype(np.float32)) for a in args])
    _close(got, ref(*[a.astype(np.float32) for a in args]).astype(np.float32))


def test_factorisations_reconstruct():
    for shape in [(4, 4), (5, 3), (3, 5), (2, 4, 3)]:
        a = _rand(*shape).astype(np.float32)
        for mode in ("reduced", "complete"):
            q, r = LA.qr(mnp.asarray(a), mode=mode)
            _close(mnp.matmul(q, r), a)
            _close(np.abs(np.asarray(r)), np.abs(np.linalg.qr(a, mode=mode)[1]))
        _close(np.abs(np.asarray(LA.qr(mnp.asarray(a), mode="r"))),
               np.abs(np.linalg.qr(a, mode="r")))
        for full in (True, False):
            u, s, vh = LA.svd(mnp.asarray(a), full_matrices=full)
            k = min(shape[-2:])
            _close(mnp.matmul(u[..., :k] * s[..., None, :], vh[..., :k, :]), a)
            _close(s, np.linalg.svd(a, compute_uv=False))
    w, v = LA.eigh(mnp.asarray(S))
    _close(mnp.matmul(v * w[..., None, :], mnp.swapaxes(v, -1, -2)), S)
    _close(w, np.linalg.eigvalsh(S))
    upper = np.triu(S) - np.tril(S, -1) * 7  # only the upper triangle is read with "U"
    _close(LA.eigh(mnp.asarray(upper), UPLO="U", symmetrize_input=False).eigenvalues,
           np.linalg.eigvalsh(upper, UPLO="U"))
    sym = (A + np.swapaxes(A, -1, -2)).astype(np.float32)
    u, s, vh = LA.svd(mnp.asarray(sym), hermitian=True)
    _close(s, np.linalg.svd(sym, compute_uv=False))
    _close(mnp.matmul(u * s[..., None, :], vh), sym)
    _close(LA.cholesky(mnp.asarray(S), upper=True), np.swapaxes(np.linalg.cholesky(S), -1, -2))


def test_slogdet_and_det():
    sign, logdet = LA.slogdet(mnp.asarray(A))
    sign0, logdet0 = np.linalg.slogdet(A)
    _close(sign, sign0)
    _close(logdet, logdet0)
    big = (np.eye(60) * 1e3).astype(np.float32)  # det overflows float32; log does not
    _close(LA.slogdet(mnp.asarray(big)).logabsdet, np.float32(60 * np.log(1e3)), rtol=1e-5)
    singular = np.array([[1.0, 2.0], [2.0, 4.0]], np.float32)
    assert float(LA.det(mnp.asarray(singular))) == 0.0
    assert tuple(map(float, LA.slogdet(mnp.asarray(singular)))) == (0.0, -np.inf)
    assert np.isinf(np.asarray(LA.inv(mnp.asarray(singular)))).any()
    assert float(LA.cond(mnp.asarray(np.zeros((2, 2), np.float32)), 1)) == np.inf


@pytest.mark.parametrize("shape", [(0, 0), (2, 0, 0), (0, 3, 3)])
def test_empty_matrices_match_numpy(shape):
    # NumPy: the empty determinant is 1 (the empty product) and its inverse is empty
    a = np.zeros(shape, np.float32)
    b = np.zeros(shape[:-1] + (2,), np.float32)
    for fn in (LA.det, mt.jit(LA.det)):
        _close(fn(a), np.linalg.det(a))
    sign, logdet = LA.slogdet(a)
    _close(sign, np.linalg.slogdet(a)[0])
    _close(logdet, np.linalg.slogdet(a)[1])
    assert np.asarray(LA.inv(a)).shape == np.linalg.inv(a).shape
    assert np.asarray(LA.solve(a, b)).shape == np.linalg.solve(a, b).shape
    lu = [np.asarray(v) for v in mt.lax.linalg.lu(a)]
    assert [v.shape for v in lu] == [shape, shape[:-1], shape[:-1]]
    # d det = tr(adj(a) da) is empty for n = 0: the tangent is 0 and the gradient empty
    _, tangent = mt.jvp(LA.det, (a,), (a,))
    _close(tangent, np.zeros(shape[:-2]))
    assert np.asarray(mt.grad(lambda m: mnp.sum(LA.det(m)))(a)).shape == shape


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_slogdet_by_qr_matches_numpy_and_differences(x64, dtype):
    rng = np.random.default_rng(5)
    a = rng.standard_normal((3, 4, 4)) + (1j * rng.standard_normal((3, 4, 4))
                                          if dtype == np.complex128 else 0)
    for m in (a, np.zeros((2, 2)), np.array([[0.0, 1.0], [1.0, 0.0]])):
        for got, want in zip(LA.slogdet(m, method="qr"), np.linalg.slogdet(m)):
            _close(got, want, rtol=1e-10, atol=1e-12)
    check_grads(lambda x: LA.slogdet(x, method="qr"), (a,), order=1)


@pytest.mark.parametrize("shape", [(2, 1), (2, 2), (1, 2), (4, 6), (8, 6), (3, 0), (0, 3)])
def test_lstsq_numpy_resid_and_zero_matrices_match_numpy(shape):
    # NumPy returns no residuals where rank < n or m <= n; a zero matrix has rank 0 and
    # the zero solution (its singular values are all "below rcond * 0")
    rng = np.random.default_rng(6)
    for a in (rng.standard_normal(shape), np.zeros(shape)):
        b = rng.standard_normal(shape[:1] + (2,))
        got, want = LA.lstsq(a, b, numpy_resid=True), np.linalg.lstsq(a, b)
        for g, w in zip(got, want):
            assert np.shape(g) == np.shape(w)
            _close(g, w, rtol=1e-4, atol=1e-4)


def test_matrix_power_keeps_integer_and_bool_dtypes():
    for m in (np.array([[True, True], [False, True]]), np.array([[1, 2], [3, 4]], np.int32)):
        for n in (0, 1, 2, 3):
            got, want = LA.matrix_power(m, n), np.linalg.matrix_power(m, n)
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(np.asarray(got), want)
    _close(LA.matrix_power(np.array([[2, 1], [1, 1]], np.int32), -1), [[1, -1], [-1, 2]])


@pytest.mark.filterwarnings("ignore:The 'full' option is deprecated")
def test_qr_full_mode_is_numpys_old_name_of_reduced():
    a = _rand(4, 3)
    for got, want in zip(LA.qr(a, mode="full"), np.linalg.qr(a, mode="full")):
        _close(np.abs(np.asarray(got)), np.abs(want))


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (2, 5, 3), (0, 2), (2, 0)])
def test_qr_raw_mode_matches_numpy(shape):
    a = _rand(*shape).astype(np.float32)
    for got, want in zip(LA.qr(a, mode="raw"), np.linalg.qr(a, mode="raw")):
        assert np.shape(got) == want.shape
        _close(got, want, rtol=1e-4, atol=1e-5)


def test_lstsq_matches_numpy():
    a, b = _rand(6, 3).astype(np.float32), _rand(6, 2).astype(np.float32)
    for rhs in (b, b[:, 0]):
        x, resid, rank, s = LA.lstsq(mnp.asarray(a), mnp.asarray(rhs))
        x0, resid0, rank0, s0 = np.linalg.lstsq(a, rhs, rcond=None)
        _close(x, x0)
        _close(resid, resid0, rtol=1e-3)
        assert int(rank) == rank0
        _close(s, s0)
    deficient = np.concatenate([a[:, :2], a[:, :1]], axis=1)
    x, _, rank, _ = LA.lstsq(mnp.asarray(deficient), mnp.asarray(b))
    _close(x, np.linalg.lstsq(deficient, b, rcond=None)[0], rtol=1e-3, atol=1e-4)
    assert int(rank) == 2


def test_matrix_power_norms_multi_dot():
    a = (A / 2).astype(np.float32)
    for n in (-3, -1, 0, 1, 2, 5):
        _close(LA.matrix_power(mnp.asarray(a), n), np.linalg.matrix_power(a, n),
               rtol=1e-3, atol=1e-4)
    for ord in (2, -2, "nuc"):
        _close(LA.norm(mnp.asarray(a), ord, axis=(0, 2)), np.linalg.norm(a, ord, axis=(0, 2)))
        _close(LA.norm(mnp.asarray(a), ord, axis=(2, 1), keepdims=True),
               np.linalg.norm(a, ord, axis=(2, 1), keepdims=True))
        _close(LA.matrix_norm(mnp.asarray(a), ord=ord), np.linalg.norm(a, ord, axis=(-2, -1)))
        _close(LA.cond(mnp.asarray(a), ord if ord != "nuc" else "fro"),
               np.linalg.cond(a, ord if ord != "nuc" else "fro"), rtol=1e-3)
    mats = [_rand(3), _rand(3, 7), _rand(7, 2), _rand(2, 5), _rand(5)]
    _close(LA.multi_dot([mnp.asarray(m) for m in mats]), np.linalg.multi_dot(mats), rtol=1e-3)
    _close(LA.multi_dot([mnp.asarray(m) for m in mats[1:4]]), np.linalg.multi_dot(mats[1:4]),
           rtol=1e-3)


def _fd_grad(f, x, eps=1e-6):
    """Central differences of a scalar function of a float64 array."""
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        g[i] = (f(x + d) - f(x - d)) / (2 * eps)
    return g


@pytest.mark.parametrize("name", ["solve", "inv", "det", "slogdet", "cholesky", "qr", "svd",
                                  "eigh", "pinv", "pinv_wide", "lstsq", "matrix_power",
                                  "norm2", "nuc", "cond"])
def test_gradients_match_finite_differences(x64, name):
    rng = np.random.default_rng(1)
    a = rng.normal(size=(3, 3)) + 3 * np.eye(3)
    b = rng.normal(size=(3, 2))
    weights = rng.normal(size=(3, 3))
    fns = {
        "solve": lambda m: LA.solve(m, b),
        "inv": LA.inv,
        "det": LA.det,
        "slogdet": lambda m: LA.slogdet(m).logabsdet,
        "cholesky": lambda m: LA.cholesky(m @ m.T),
        "qr": lambda m: LA.qr(m).R,
        "svd": lambda m: LA.svd(m, compute_uv=False),
        "eigh": lambda m: LA.eigh(m + m.T).eigenvalues,
        "pinv": lambda m: LA.pinv(m[:, :2]),
        "pinv_wide": lambda m: LA.pinv(m[:2, :]),
        "lstsq": lambda m: LA.lstsq(m[:, :2], b)[0],
        "matrix_power": lambda m: LA.matrix_power(m, -2),
        "norm2": lambda m: LA.norm(m, 2),
        "nuc": lambda m: LA.norm(m, "nuc"),
        "cond": LA.cond,
    }

    def loss(m):
        out = fns[name](m)
        return mnp.sum(out * mnp.asarray(weights[:out.shape[0], :out.shape[-1]]
                                         if out.ndim == 2 else weights[0, :out.size]
                                         .reshape(out.shape)))

    got = mt.grad(loss)(mnp.asarray(a))
    want = _fd_grad(lambda m: float(loss(mnp.asarray(m))), a)
    _close(got, want, rtol=1e-5, atol=1e-6)


def test_det_gradient_at_a_singular_matrix(x64):
    """det's derivative is the adjugate's transpose, finite at a rank n-1 matrix (a plain
    derivative through LU would divide by the zero pivot)."""
    a = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]])
    cofactors = np.array([[np.linalg.det(np.delete(np.delete(a, i, 0), j, 1)) * (-1) ** (i + j)
                           for j in range(3)] for i in range(3)])
    _close(mt.grad(LA.det)(mnp.asarray(a)), cofactors, rtol=1e-8, atol=1e-8)
    _close(mt.grad(LA.det)(mnp.asarray(np.zeros((3, 3)))), np.zeros((3, 3)))


def test_vmap_matches_a_loop_and_jit_matches_eager():
    a, b = mnp.asarray(A.astype(np.float32)), mnp.asarray(B.astype(np.float32))
    cases = [
        (lambda m, r: LA.solve(m, r), (a, b)),
        (lambda m, r: LA.det(m) + mnp.sum(LA.inv(m)), (a, b)),
        (lambda m, r: LA.slogdet(m).logabsdet, (a, b)),
        (lambda m, r: LA.pinv(m[:, :3]), (a, b)),
        (lambda m, r: LA.lstsq(m, r)[0], (a, b)),
        (lambda m, r: LA.norm(m, "nuc") + LA.cond(m), (a, b)),
        (lambda m, r: LA.svd(m, compute_uv=False), (a, b)),
    ]
    for f, args in cases:
        looped = np.stack([np.asarray(f(*[x[i] for x in args])) for i in range(3)])
        _close(mt.vmap(f)(*args), looped, rtol=1e-4)
        one = [x[0] for x in args]
        _close(mt.jit(f)(*one), np.asarray(f(*one)), rtol=1e-5)


def test_errors_name_the_function_and_shape():
    rect = mnp.ones((2, 3))
    for fn in (LA.inv, LA.det, LA.slogdet, LA.cholesky, LA.eigh, LA.eigvalsh):
        with pytest.raises(ValueError, match=rf"{fn.__name__}: .*square, got f32\[2,3\]"):
            fn(rect)
    with pytest.raises(ValueError, match=r"solve: b must be \[3\] or \[\.\.\., 3, k\] for a "
                                         r"f32\[3,3\], got f32\[4\]"):
        LA.solve(mnp.eye(3), mnp.ones(4))
    with pytest.raises(ValueError, match=r"svd: needs an array of rank >= 2.*f32\[3\]"):
        LA.svd(mnp.ones(3))
    with pytest.raises(ValueError, match="qr: mode must be"):
        LA.qr(rect, mode="economic")
    with pytest.raises(TypeError, match="inv does not accept dtype float16"):
        LA.inv(mnp.eye(2, dtype=mnp.float16))
    with pytest.raises(ValueError, match="matrix_rank: only one of tol or rtol"):
        LA.matrix_rank(mnp.eye(3), tol=1e-2, rtol=1e-2)
    with pytest.raises(ValueError, match="pinv: only one of rtol and rcond"):
        LA.pinv(mnp.eye(3), 1e-2, rcond=1e-2)
    with pytest.raises(ValueError, match="slogdet: method must be 'lu' or 'qr'"):
        LA.slogdet(mnp.eye(3), method="svd")
    with pytest.raises(TypeError, match="matrix_power: the exponent must be an integer"):
        LA.matrix_power(mnp.eye(2), 1.5)
    with pytest.raises(ValueError, match=r"lstsq: a must be 2-D, got f32\[2,2,2\]"):
        LA.lstsq(mnp.ones((2, 2, 2)), mnp.ones(2))
    with pytest.raises(ValueError, match=r"multi_dot: array 1 must be 2-D"):
        LA.multi_dot([mnp.ones((2, 2)), mnp.ones((2, 2, 2)), mnp.ones((2, 2))])
    with pytest.raises(ValueError, match=r"tensorinv: needs prod\(a.shape\[:ind\]\)"):
        LA.tensorinv(mnp.ones((2, 3)), ind=1)
