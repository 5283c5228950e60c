"""mt.scipy.linalg against scipy.linalg: values, float64 finite-difference gradients, vmap
against a loop, jit against eager, and the errors."""

import numpy as np
import pytest
import scipy.linalg as sl

import mytorch as mt
import mytorch.numpy as mnp
from mytorch.scipy import linalg as L

RNG = np.random.default_rng(0)
A = RNG.normal(size=(4, 4)).astype(np.float32)
B = RNG.normal(size=(4, 2)).astype(np.float32)
SPD = (A @ A.T + 4 * np.eye(4)).astype(np.float32)


def _close(got, want, rtol=1e-4, atol=1e-5):
    np.testing.assert_allclose(np.asarray(got), want, rtol=rtol, atol=atol)


@pytest.mark.parametrize("trans", [0, 1, 2, "N", "T"])
@pytest.mark.parametrize("lower", [True, False])
def test_solve_triangular(trans, lower):
    _close(L.solve_triangular(mnp.asarray(A), mnp.asarray(B), trans=trans, lower=lower),
           sl.solve_triangular(A, B, trans=trans, lower=lower), rtol=1e-3)
    _close(L.solve_triangular(mnp.asarray(A), mnp.asarray(B[:, 0]), trans=trans, lower=lower,
                              unit_diagonal=True),
           sl.solve_triangular(A, B[:, 0], trans=trans, lower=lower, unit_diagonal=True),
           rtol=1e-3)


def test_cholesky_and_lu_solvers():
    for lower in (True, False):
        c = L.cho_factor(mnp.asarray(SPD), lower=lower)
        assert c[1] is lower
        _close(L.cho_solve(c, mnp.asarray(B)), sl.cho_solve(sl.cho_factor(SPD, lower=lower), B))
        _close(L.cholesky(mnp.asarray(SPD), lower=lower), sl.cholesky(SPD, lower=lower))
    lu, piv = L.lu_factor(mnp.asarray(A))
    lu0, piv0 = sl.lu_factor(A)
    _close(lu, lu0)
    np.testing.assert_array_equal(np.asarray(piv), piv0)
    for trans in (0, 1, 2):
        _close(L.lu_solve((lu, piv), mnp.asarray(B), trans=trans), sl.lu_solve((lu0, piv0), B,
                                                                               trans=trans))
        _close(L.lu_solve((lu, piv), mnp.asarray(B[:, 0]), trans=trans),
               sl.lu_solve((lu0, piv0), B[:, 0], trans=trans))


@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
@pytest.mark.parametrize("lower", [True, False])
def test_cholesky_reads_one_triangle(dtype, lower):
    # SciPy reads only the `lower` (or upper) triangle: a triangular matrix, or one whose
    # other triangle holds anything, stands for the Hermitian matrix it is half of
    rng = np.random.default_rng(3)
    m = rng.normal(size=(4, 4)) + (1j * rng.normal(size=(4, 4)) if dtype == np.complex64 else 0)
    spd = (m @ m.conj().T + 4 * np.eye(4)).astype(dtype)
    half = np.tril(spd) if lower else np.triu(spd)
    junk = half + (np.triu(m, 1) if lower else np.tril(m, -1)).astype(dtype)
    for a in (half, junk):
        _close(L.cholesky(mnp.asarray(a), lower=lower), sl.cholesky(a, lower=lower), rtol=1e-3)
        c = L.cho_factor(mnp.asarray(a), lower=lower)
        _close(L.cho_solve(c, mnp.asarray(B)), sl.cho_solve(sl.cho_factor(a, lower=lower), B),
               rtol=1e-3, atol=1e-4)
        _close(L.solve(mnp.asarray(a), mnp.asarray(B), assume_a="pos", lower=lower),
               sl.solve(a, B, assume_a="pos", lower=lower), rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("a_shape, b_shape", [((2, 4, 4), (2, 4, 3)), ((3, 4, 4), (4,)),
                                              ((3, 4, 4), (4, 2)), ((4, 4), (3, 4, 2))])
def test_solvers_broadcast_batches_as_scipy(a_shape, b_shape):
    # SciPy >= 1.16: a 1-D b is a vector for every matrix of a, else b is [..., n, k] and
    # the batch dims broadcast
    rng = np.random.default_rng(12)
    a = (np.tril(rng.random(a_shape)) + 4 * np.eye(a_shape[-1])).astype(np.float32)
    b = rng.random(b_shape).astype(np.float32)
    for got, want in [(L.solve_triangular(a, b, lower=True), sl.solve_triangular(a, b, lower=True)),
                      (L.cho_solve((a, True), b), sl.cho_solve((a, True), b))]:
        assert np.shape(got) == want.shape
        _close(got, want, rtol=1e-4)


@pytest.mark.parametrize("shape", [(4, 3), (4, 4), (3, 5)])
@pytest.mark.parametrize("mode", ["right", "left"])
def test_qr_multiply_matches_scipy(x64, shape, mode):
    rng = np.random.default_rng(18)
    a = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    m, k = shape[0], min(shape)
    for conjugate in (False, True):
        for c in ((rng.standard_normal((2, m)), rng.standard_normal(m)) if mode == "right"
                  else (rng.standard_normal((k, 2)), rng.standard_normal(k))):
            got = L.qr_multiply(a, c, mode=mode, conjugate=conjugate)
            want = sl.qr_multiply(a, c, mode=mode, conjugate=conjugate)
            for g, w in zip(got, want):
                assert np.shape(g) == np.shape(w)
                _close(g, w, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (2, 3, 3)])
def test_lu(shape):
    a = RNG.normal(size=shape)
    p, l, u = L.lu(mnp.asarray(a))
    p0, l0, u0 = sl.lu(a)
    _close(p, p0)
    _close(l, l0)
    _close(u, u0)
    pl, u1 = L.lu(mnp.asarray(a), permute_l=True)
    _close(mnp.matmul(pl, u1), a)


@pytest.mark.parametrize("scale", [0.01, 0.3, 1.0, 3.0, 20.0])
def test_expm_matches_scipy(scale, x64):
    for dtype, rtol in ((np.float32, 1e-4), (np.float64, 1e-7)):
        a = (A * scale).astype(dtype)
        _close(L.expm(mnp.asarray(a)), sl.expm(a), rtol=rtol, atol=rtol * 1e-2)
    batch = np.stack([A, A / 3, -A])
    _close(L.expm(mnp.asarray(batch)), np.stack([sl.expm(m) for m in batch]), rtol=1e-4)


def _fd_grad(loss, a, eps=1e-6):
    """The gradient of the scalar `loss` at the float64 array `a` by central differences."""
    want = np.zeros_like(a)
    for i in np.ndindex(a.shape):
        d = np.zeros_like(a)
        d[i] = eps
        want[i] = (float(loss(mnp.asarray(a + d))) - float(loss(mnp.asarray(a - d)))) / (2 * eps)
    return want


def test_expm_gradient_matches_finite_differences(x64):
    a = RNG.normal(size=(3, 3))
    w = RNG.normal(size=(3, 3))
    for scale in (0.1, 2.0):
        def loss(m):
            return mnp.sum(L.expm(m * scale) * mnp.asarray(w))
        got = mt.grad(loss)(mnp.asarray(a))
        want = _fd_grad(loss, a)
        _close(got, want, rtol=1e-6, atol=1e-7)


def test_block_diag_and_spellings():
    blocks = [A[:2, :3], np.float32(1.5), B[:, 0], B]
    _close(L.block_diag(*[mnp.asarray(b) for b in blocks]), sl.block_diag(*blocks))
    for assume_a in ("gen", "sym", "pos"):
        m = A if assume_a == "gen" else SPD
        _close(L.solve(mnp.asarray(m), mnp.asarray(B), assume_a=assume_a),
               sl.solve(m, B, assume_a=assume_a), rtol=1e-3)
        _close(L.solve(mnp.asarray(m), mnp.asarray(B[:, 0]), assume_a=assume_a),
               sl.solve(m, B[:, 0], assume_a=assume_a), rtol=1e-3)
    w, v = L.eigh(mnp.asarray(SPD))
    _close(w, sl.eigh(SPD, eigvals_only=True), rtol=1e-4)
    _close(L.eigh(mnp.asarray(SPD), eigvals_only=True), w)
    for mode in ("full", "economic"):
        q, r = L.qr(mnp.asarray(A[:, :3]), mode=mode)
        _close(mnp.matmul(q, r), A[:, :3])
        assert r.shape == sl.qr(A[:, :3], mode=mode)[1].shape
    (r,) = L.qr(mnp.asarray(A), mode="r")
    _close(np.abs(np.asarray(r)), np.abs(sl.qr(A, mode="r")[0]))
    _close(L.svd(mnp.asarray(A), compute_uv=False), sl.svd(A, compute_uv=False))
    _close(L.det(mnp.asarray(A)), sl.det(A))
    _close(L.inv(mnp.asarray(A)), sl.inv(A), rtol=1e-3)


@pytest.mark.parametrize("name", ["solve_triangular", "cho_solve", "lu_solve", "lu", "solve"])
def test_gradients_match_finite_differences(x64, name):
    rng = np.random.default_rng(2)
    a = rng.normal(size=(3, 3)) + 3 * np.eye(3)
    b = rng.normal(size=(3, 2))
    fns = {
        "solve_triangular": lambda m: L.solve_triangular(m, b, trans=1, lower=True),
        "cho_solve": lambda m: L.cho_solve(L.cho_factor(m @ m.T), b),
        "lu_solve": lambda m: L.lu_solve(L.lu_factor(m), b, trans=1),
        "lu": lambda m: L.lu(m)[2],
        "solve": lambda m: L.solve(m @ m.T, b, assume_a="pos"),
    }
    w = rng.normal(size=(3, 3))

    def loss(m):
        out = fns[name](m)
        return mnp.sum(out * mnp.asarray(w[:, :out.shape[-1]]))

    got = mt.grad(loss)(mnp.asarray(a))
    want = _fd_grad(loss, a)
    _close(got, want, rtol=1e-6, atol=1e-7)


def test_vmap_matches_a_loop_and_jit_matches_eager():
    a = mnp.asarray(np.stack([A, A / 2, -A]))
    b = mnp.asarray(np.stack([B, 2 * B, B]))
    cases = [
        lambda m, r: L.solve_triangular(m, r, lower=True),
        lambda m, r: L.lu_solve(L.lu_factor(m), r),
        lambda m, r: L.cho_solve(L.cho_factor(mnp.matmul(m, m.T) + 4 * mnp.eye(4)), r),
        lambda m, r: L.expm(m),
        lambda m, r: L.lu(m)[1],
        lambda m, r: L.block_diag(m, r),
    ]
    for f in cases:
        looped = np.stack([np.asarray(f(a[i], b[i])) for i in range(3)])
        _close(mt.vmap(f)(a, b), looped, rtol=1e-4)
        _close(mt.jit(f)(a[0], b[0]), np.asarray(f(a[0], b[0])), rtol=1e-5)


def test_errors_name_the_function_and_shape():
    with pytest.raises(ValueError, match=r"solve_triangular: the last two dimensions must be "
                                         r"square, got f32\[2,3\]"):
        L.solve_triangular(mnp.ones((2, 3)), mnp.ones(2))
    with pytest.raises(ValueError, match=r"cho_solve: b must be .* for a f32\[3,3\], got "
                                         r"f32\[2,1\]"):
        L.cho_solve((mnp.eye(3), True), mnp.ones((2, 1)))
    with pytest.raises(ValueError, match="solve_triangular: trans must be"):
        L.solve_triangular(mnp.eye(2), mnp.ones(2), trans=3)
    with pytest.raises(ValueError, match=r"expm: the last two dimensions must be square"):
        L.expm(mnp.ones((2, 3)))
    with pytest.raises(ValueError, match="solve: assume_a must be"):
        L.solve(mnp.eye(2), mnp.ones(2), assume_a="banded")
    with pytest.raises(ValueError, match="qr: pivoting=True is not supported"):
        L.qr(mnp.eye(2), pivoting=True)
    with pytest.raises(ValueError, match="eigh: eigenvalue subsets are not supported"):
        L.eigh(mnp.eye(2), subset_by_index=(0, 1))
    with pytest.raises(ValueError, match=r"block_diag: block 0 must have at most 2 "
                                         r"dimensions, got f32\[1,2,2\]"):
        L.block_diag(mnp.ones((1, 2, 2)))
