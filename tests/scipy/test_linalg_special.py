"""mt.scipy.linalg's special matrices against scipy.linalg: values (batched too), float64
finite-difference derivatives of the ones built from vectors, vmap against a loop, jit
against eager, and the errors."""

import numpy as np
import pytest
import scipy.linalg as sl

import mytorch as mt
from mytorch.scipy import linalg as L
from tests.autodiff.fd import check_grads

RNG = np.random.default_rng(0)


def _close(got, want, tol=1e-10):
    got = np.asarray(got)
    assert got.shape == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("shape", [(), (1,), (3,), (5,), (2, 3), (1, 2, 4)])
def test_circulant_and_fiedler(x64, shape):
    c = RNG.standard_normal(shape)
    _close(L.circulant(c), sl.circulant(c))
    _close(L.fiedler(c), sl.fiedler(c))


@pytest.mark.parametrize("shape", [(2,), (3,), (5,), (8,), (2, 3), (1, 2, 4)])
def test_companion_and_fiedler_companion(x64, shape):
    a = RNG.standard_normal(shape) + 3
    _close(L.companion(a), sl.companion(a))
    _close(L.fiedler_companion(a), sl.fiedler_companion(a))
    ints = RNG.integers(1, 5, shape)
    _close(L.companion(ints), sl.companion(ints))
    # both have the polynomial's roots as eigenvalues
    if len(shape) == 1:
        want = np.sort_complex(np.roots(a))
        for m in (L.companion(a), L.fiedler_companion(a)):
            _close(np.sort_complex(np.linalg.eigvals(np.asarray(m))), want, 1e-8)


@pytest.mark.parametrize("n", [2, 3, 5])
@pytest.mark.parametrize("batch", [(), (2,)])
def test_leslie(x64, n, batch):
    f, s = RNG.standard_normal(batch + (n,)), RNG.standard_normal(batch + (n - 1,))
    _close(L.leslie(f, s), sl.leslie(f, s))


@pytest.mark.parametrize("m", [1, 2, 4, 7])
@pytest.mark.parametrize("n", [1, 3, 5])
@pytest.mark.parametrize("mode", ["full", "valid", "same"])
def test_convolution_matrix_is_np_convolve(x64, m, n, mode):
    a, v = RNG.standard_normal((2, m)), RNG.standard_normal(n)
    got = L.convolution_matrix(a, n, mode)
    _close(got, sl.convolution_matrix(a, n, mode))
    _close(np.asarray(got[0]) @ v, np.convolve(a[0], v, mode))


def test_constant_matrices(x64):
    for n in (0, 1, 2, 3, 8, 16):
        for scale in (None, "sqrtn", "n"):
            _close(L.dft(n, scale), sl.dft(n, scale) if n else np.zeros((0, 0)))
        _close(L.invhilbert(n), sl.invhilbert(n), 1e-8)
        for kind in ("symmetric", "lower", "upper"):
            _close(L.pascal(n, kind), sl.pascal(n, kind, exact=False))
            _close(L.invpascal(n, kind), sl.invpascal(n, kind, exact=False))
            if n:
                _close(np.asarray(L.pascal(n, kind)) @ np.asarray(L.invpascal(n, kind)),
                       np.eye(n))
    for n in (1, 2, 4, 16):
        _close(L.hadamard(n), sl.hadamard(n))
    for n in (1, 2, 5):
        for full in (False, True):
            _close(L.helmert(n, full), sl.helmert(n, full))
    assert L.dft(3).dtype == np.complex128 and L.hadamard(4).dtype == np.int64


def test_constant_matrices_take_the_default_precision():
    assert L.dft(3).dtype == np.complex64 and L.pascal(3).dtype == np.float32
    assert L.invhilbert(3).dtype == np.float32 and L.helmert(3).dtype == np.float32


def test_derivatives_vmap_and_jit(x64):
    a = RNG.standard_normal((3, 5)) + 3
    cases = [L.circulant, L.companion, L.fiedler_companion,
             lambda x: L.convolution_matrix(x, 3, "same"),
             lambda x: L.leslie(x, x[..., 1:] * 0.5)]
    for fn in cases:
        check_grads(fn, (a[0],), order=1)
        _close(mt.vmap(fn)(a), np.stack([np.asarray(fn(r)) for r in a]))
        _close(mt.jit(fn)(a), fn(a))


def test_errors_name_the_function():
    with pytest.raises(ValueError, match="companion: the length of `a` along the last axis"):
        L.companion(np.zeros(1))
    with pytest.raises(ValueError, match="leslie: Incorrect lengths for f and s"):
        L.leslie(np.ones(3), np.ones(1))
    with pytest.raises(ValueError, match="leslie: the length of f along the last axis"):
        L.leslie(np.ones(0), np.ones(0))
    with pytest.raises(ValueError, match="convolution_matrix: n must be a positive integer"):
        L.convolution_matrix(np.ones(3), 0)
    for n in (-1, 0, 6):
        with pytest.raises(ValueError, match="hadamard: n must be a positive power of 2"):
            L.hadamard(n)
    with pytest.raises(ValueError, match="fiedler_companion: a needs a nonzero length"):
        L.fiedler_companion(np.ones((3, 0)))
    assert L.fiedler_companion(np.ones((3, 1))).shape == (3, 0, 0)
    with pytest.raises(ValueError, match="leslie: the length of f along the last axis"):
        L.leslie(np.ones(1), np.ones(0))
    with pytest.raises(ValueError, match="convolution_matrix: mode must be one of"):
        L.convolution_matrix(np.ones(3), 2, "bad")
    with pytest.raises(ValueError, match=r"convolution_matrix: len\(a\) must be at least 1"):
        L.convolution_matrix(np.ones((2, 0)), 2)
    with pytest.raises(ValueError, match="convolution_matrix: a must be at least 1-dim"):
        L.convolution_matrix(np.float32(5), 2)
    with pytest.raises(ValueError, match="helmert: n must be a positive integer"):
        L.helmert(0)
    with pytest.raises(ValueError, match="invpascal: Expected kind to be one of"):
        L.invpascal(3, kind="bad")
    with pytest.raises(ValueError, match="dft: scale must be"):
        L.dft(3, scale="bad")
    with pytest.raises(ValueError, match="dft: dtype must be complex"):
        L.dft(3, dtype=np.float32)


def test_dft_dtype(x64):
    for dtype in (np.complex64, np.complex128):
        got = L.dft(4, dtype=dtype)
        assert got.dtype == dtype
        _close(got, sl.dft(4), 1e-6)
