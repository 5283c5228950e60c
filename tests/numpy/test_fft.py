"""mytorch.numpy.fft against numpy.fft: every function over shapes with size-1 dims, lengths
smaller and larger than the axis, every axis (negative ones too), every norm, real, complex,
integer and bool inputs; derivatives against float64 central finite differences (complex
directions, pairing re(sum(a * b))); vmap against a loop; jit against eager; NumPy's
errors."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch.errors import AxisError
from tests.autodiff.fd import check_grads

NORMS = [None, "backward", "ortho", "forward"]
ONE_AXIS = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
N_AXES = ["fftn", "ifftn", "rfftn", "irfftn", "fft2", "ifft2", "rfft2", "irfft2"]
REAL_INPUT = {"rfft", "ihfft", "rfftn", "rfft2"}
HALF_SPECTRUM = {"irfft", "hfft", "irfftn", "irfft2"}  # the last axis is a half spectrum
DTYPES = [np.float32, np.float64, np.complex64, np.complex128, np.int32, np.bool_]


def _settings(n):
    return settings(max_examples=n, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


def _input(rng, shape, dtype):
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-5, 6, shape).astype(dtype)
    x = rng.standard_normal(shape)
    if np.issubdtype(dtype, np.complexfloating):
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def _expected_dtype(name, dtype):
    """JAX's result dtype under x64: float32 precision stays single, the rest double."""
    single = dtype in (np.float32, np.complex64)
    if name in HALF_SPECTRUM:
        return np.dtype(np.float32 if single else np.float64)
    return np.dtype(np.complex64 if single else np.complex128)


def _check(got, want, dtype):
    got = np.asarray(got)
    assert got.shape == want.shape, (got.shape, want.shape)
    scale = max(1.0, float(np.max(np.abs(want), initial=0.0)))
    single = dtype in (np.float32, np.complex64)
    tol = 1e-4 if single else 1e-10
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * scale)


def _shape_axis(draw, min_side=1):
    shape = draw(st.lists(st.integers(min_side, 5), min_size=1, max_size=3).map(tuple))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    return shape, axis


@pytest.mark.parametrize("name", ONE_AXIS)
@pytest.mark.parametrize("dtype", DTYPES)
@_settings(20)
@given(data=st.data())
def test_one_axis_matches_numpy(x64, name, dtype, data):
    if name in REAL_INPUT and np.issubdtype(dtype, np.complexfloating):
        return
    shape, axis = _shape_axis(data.draw)
    if name in HALF_SPECTRUM and shape[axis] == 1:
        shape = shape[:axis % len(shape)] + (2,) + shape[axis % len(shape) + 1:]
    n = data.draw(st.one_of(st.none(), st.integers(1, 9)))
    norm = data.draw(st.sampled_from(NORMS))
    x = _input(np.random.default_rng(data.draw(st.integers(0, 2**32 - 1))), shape, dtype)
    got = getattr(mnp.fft, name)(x, n=n, axis=axis, norm=norm)
    want = getattr(np.fft, name)(x, n=n, axis=axis, norm=norm)
    assert got.dtype == _expected_dtype(name, dtype)
    _check(got, want, dtype)


@pytest.mark.parametrize("name", N_AXES)
@pytest.mark.parametrize("dtype", DTYPES)
@_settings(20)
@given(data=st.data())
def test_n_axes_match_numpy(x64, name, dtype, data):
    if name in REAL_INPUT and np.issubdtype(dtype, np.complexfloating):
        return
    ndim = data.draw(st.integers(2, 4))
    shape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=ndim, max_size=ndim)))
    two = name.endswith("2")
    k = 2 if two else data.draw(st.integers(1, ndim))
    axes = data.draw(st.permutations(range(ndim)))[:k]
    axes = [a - ndim if data.draw(st.booleans()) else a for a in axes]
    s = data.draw(st.one_of(st.none(), st.lists(st.integers(1, 6), min_size=k, max_size=k)))
    if name in HALF_SPECTRUM and s is None and shape[axes[-1]] == 1:
        s = [shape[a] for a in axes[:-1]] + [data.draw(st.integers(1, 6))]
    norm = data.draw(st.sampled_from(NORMS))
    x = _input(np.random.default_rng(data.draw(st.integers(0, 2**32 - 1))), shape, dtype)
    got = getattr(mnp.fft, name)(x, s=s, axes=axes, norm=norm)
    want = getattr(np.fft, name)(x, s=s, axes=axes, norm=norm)
    assert got.dtype == _expected_dtype(name, dtype)
    _check(got, want, dtype)


@pytest.mark.parametrize("name", ["fftn", "ifftn", "rfftn", "irfftn"])
def test_default_axes_and_more_than_three(x64, name):
    """axes=None: all axes (five here, transformed in groups of three), or the last len(s)
    with s."""
    rng = np.random.default_rng(4)
    x = _input(rng, (2, 3, 2, 3, 4), np.float64)
    fn, ref = getattr(mnp.fft, name), getattr(np.fft, name)
    _check(fn(x), ref(x), np.float64)
    _check(fn(x, s=(3, 5, 3, 6, 5)), ref(x, s=(3, 5, 3, 6, 5), axes=range(5)), np.float64)
    _check(fn(x, s=(5, 2)), ref(x, s=(5, 2), axes=(-2, -1)), np.float64)
    _check(fn(x, axes=(4, 0, 2, 1)), ref(x, axes=(4, 0, 2, 1)), np.float64)


def test_float32_and_defaults_without_x64():
    x = np.arange(6, dtype=np.float32)
    assert mnp.fft.fft(x).dtype == np.complex64
    assert mnp.fft.fft(np.arange(6)).dtype == np.complex64  # default float is float32
    assert mnp.fft.irfft(mnp.fft.rfft(x)).dtype == np.float32
    assert mnp.fft.fft(x.astype(np.float16)).dtype == np.complex64
    assert mnp.fft.rfft(x.astype(np.float16)).dtype == np.complex64
    _check(mnp.fft.irfft(mnp.fft.rfft(x), n=6), x, np.float32)
    _check(mnp.fft.fft([1, 2, 3]), np.fft.fft([1, 2, 3]), np.float32)


def test_no_axes_give_the_converted_input():
    """As JAX (whose lax.fft returns its converted operand for no lengths)."""
    assert mnp.fft.fftn(np.float32(2.0)).tolist() == 2.0 + 0j
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    for name, dtype in [("fftn", np.complex64), ("ifftn", np.complex64),
                        ("rfftn", np.float32), ("irfftn", np.complex64)]:
        got = getattr(mnp.fft, name)(x, axes=[])
        assert got.dtype == dtype and got.tolist() == x.tolist()


def test_empty_axes_give_empty_results():
    """A transformed axis of size 0 without a length: an empty result (as JAX)."""
    got = mnp.fft.fft(mnp.zeros((0,), mnp.complex64))
    assert got.shape == (0,) and got.dtype == np.complex64
    assert mnp.fft.rfftn(np.ones((2, 0), np.float32)).shape == (2, 0)
    assert mnp.fft.irfftn(np.ones((0, 3), np.complex64)).shape == (0, 4)
    assert mnp.fft.irfftn(np.ones((0, 3), np.complex64)).dtype == np.float32
    # an explicit length pads the empty axis, as NumPy
    np.testing.assert_array_equal(np.asarray(mnp.fft.fft(np.zeros(0, np.float32), n=3)),
                                  np.zeros(3))


# ---- frequencies and shifts ---------------------------------------------------------------
@pytest.mark.parametrize("n", [1, 2, 5, 8])
@pytest.mark.parametrize("d", [1.0, 0.1, 3])
def test_frequencies_match_numpy(x64, n, d):
    np.testing.assert_allclose(np.asarray(mnp.fft.fftfreq(n, d)), np.fft.fftfreq(n, d),
                               rtol=1e-15)
    np.testing.assert_allclose(np.asarray(mnp.fft.rfftfreq(n, d)), np.fft.rfftfreq(n, d),
                               rtol=1e-15)


def test_frequencies_dtype_and_traced_spacing():
    assert mnp.fft.fftfreq(4).dtype == np.float32
    assert mnp.fft.rfftfreq(4, dtype=mnp.float16).dtype == np.float16
    got = mt.jit(lambda d: mnp.fft.fftfreq(5, d))(np.float32(0.5))
    np.testing.assert_allclose(np.asarray(got), np.fft.fftfreq(5, 0.5), rtol=1e-6)
    got = mt.grad(lambda d: mnp.sum(mnp.fft.rfftfreq(4, d)))(np.float32(2.0))
    np.testing.assert_allclose(float(got), -np.sum(np.fft.rfftfreq(4)) / 4.0, rtol=1e-6)


@pytest.mark.parametrize("name", ["fftshift", "ifftshift"])
@pytest.mark.parametrize("axes", [None, 0, -1, (0, 2), (-1, 1)])
def test_shifts_match_numpy(name, axes):
    x = np.arange(60).reshape(3, 4, 5)
    got = getattr(mnp.fft, name)(x, axes=axes)
    np.testing.assert_array_equal(np.asarray(got), getattr(np.fft, name)(x, axes=axes))


def test_shifts_invert_each_other():
    x = np.arange(7.0)
    np.testing.assert_array_equal(np.asarray(mnp.fft.ifftshift(mnp.fft.fftshift(x))), x)


# ---- derivatives --------------------------------------------------------------------------
_COMPLEX_CASES = [
    ("fft", dict(n=3, axis=0, norm="ortho")), ("fft", dict(n=7, axis=-1)),
    ("ifft", dict(norm="forward")), ("irfft", dict(n=5)), ("irfft", dict(axis=0, n=4)),
    ("hfft", dict(n=6, norm="ortho")), ("fftn", dict(s=(2, 6))),
    ("ifftn", dict(axes=(1, 0), norm="ortho")), ("irfftn", dict(s=(3, 7))),
    ("fft2", dict(s=(5, 3), norm="forward")), ("irfft2", dict(norm="ortho")),
]
_REAL_CASES = [
    ("rfft", dict(n=3)), ("rfft", dict(axis=0, n=6, norm="ortho")), ("ihfft", dict(n=5)),
    ("rfftn", dict(s=(2, 7), norm="forward")), ("rfft2", dict(axes=(1, 0))),
    ("fft", dict(axis=0)), ("irfft", dict()),
]


@pytest.mark.parametrize("name,kwargs", _COMPLEX_CASES)
def test_derivatives_of_complex_input(x64, name, kwargs):
    x = _input(np.random.default_rng(1), (4, 5), np.complex128)
    check_grads(lambda v: getattr(mnp.fft, name)(v, **kwargs), (x,), order=2)


@pytest.mark.parametrize("name,kwargs", _REAL_CASES)
def test_derivatives_of_real_input(x64, name, kwargs):
    x = _input(np.random.default_rng(2), (4, 5), np.float64)
    check_grads(lambda v: getattr(mnp.fft, name)(v, **kwargs), (x,), order=2)


def test_grad_of_real_losses(x64):
    rng = np.random.default_rng(3)
    z = _input(rng, (3, 6), np.complex128)
    x = _input(rng, (3, 6), np.float64)

    def power(v):
        return mnp.sum(mnp.abs(mnp.fft.fft2(v, norm="ortho")) ** 2)

    # unitary: the power is sum |v|², whose gradient is 2 conj(v) (JAX's convention)
    np.testing.assert_allclose(np.asarray(mt.grad(power)(z)), 2 * np.conj(z), rtol=1e-10)
    check_grads(power, (z,), order=2)
    check_grads(lambda v: mnp.sum(mnp.real(mnp.fft.irfft(v, n=7)) ** 3), (z,), order=2)
    check_grads(lambda v: mnp.sum(mnp.abs(mnp.fft.rfft(v, axis=0))), (x,), order=2)
    check_grads(lambda v: mnp.sum(mnp.fft.fftshift(mnp.fft.fftn(v)).real * x), (z,))


# ---- vmap and jit -------------------------------------------------------------------------
@pytest.mark.parametrize("name", ONE_AXIS + N_AXES)
def test_vmap_matches_loop(name):
    rng = np.random.default_rng(8)
    dtype = np.float32 if name in REAL_INPUT else np.complex64
    xs = _input(rng, (4, 3, 5), dtype)
    kwargs = dict(axis=0) if name in ONE_AXIS else dict(axes=(1, 0))
    f = lambda v: getattr(mnp.fft, name)(v, **kwargs)  # noqa: E731
    got = mt.vmap(f, in_axes=1)(xs)
    want = np.stack([np.asarray(f(xs[:, i])) for i in range(xs.shape[1])])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ONE_AXIS + N_AXES)
def test_jit_matches_eager(name):
    dtype = np.float32 if name in REAL_INPUT else np.complex64
    x = _input(np.random.default_rng(9), (3, 6), dtype)
    kwargs = dict(n=4, norm="ortho") if name in ONE_AXIS else dict(s=(4, 5), norm="forward")
    f = lambda v: getattr(mnp.fft, name)(v, **kwargs)  # noqa: E731
    got, want = mt.jit(f)(x), f(x)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6, atol=1e-6)


# ---- errors -------------------------------------------------------------------------------
def test_errors_as_numpy_raises_them():
    x = np.ones((3, 4), np.float32)
    with pytest.raises(ValueError, match=r"fft: invalid number of FFT data points \(0\)"):
        mnp.fft.fft(x, n=0)
    with pytest.raises(ValueError, match=r"irfft: invalid number of FFT data points \(0\)"):
        mnp.fft.irfft(np.ones((3, 1), np.complex64))
    with pytest.raises(ValueError, match=r"fft2: invalid number of FFT data points \(-1\)"):
        mnp.fft.fft2(x, s=(2, -1))
    with pytest.raises(ValueError, match=r"ifft: invalid norm value 'x'; should be "
                                         r"\"backward\", \"ortho\" or \"forward\""):
        mnp.fft.ifft(x, norm="x")
    with pytest.raises(ValueError, match=r"fftn: repeated axis"):
        mnp.fft.fftn(x, axes=(0, -2))
    with pytest.raises(ValueError, match=r"rfftn: shape and axes have different lengths"):
        mnp.fft.rfftn(x, s=(3,), axes=(0, 1))
    with pytest.raises(AxisError, match=r"fft: axis 2 is out of bounds for f32\[3,4\]"):
        mnp.fft.fft(x, axis=2)
    with pytest.raises(TypeError, match=r"rfft needs real input, got c64\[3\]; use fft"):
        mnp.fft.rfft(np.ones(3, np.complex64))
    with pytest.raises(TypeError, match=r"ihfft needs real input, got c64\[3\]"):
        mnp.fft.ihfft(np.ones(3, np.complex64))
    with pytest.raises(TypeError, match=r"fft: n must be an int, got 2.5"):
        mnp.fft.fft(x, n=2.5)
    with pytest.raises(ValueError, match=r"fft does not support multiple axes; use fftn "
                                         r"for them. Got axis = \[1, 1\]"):
        mnp.fft.fft(x, axis=[1, 1])
    with pytest.raises(ValueError, match=r"irfft2 transforms exactly two axes.*\(0, 1, 2\)"):
        mnp.fft.irfft2(np.ones((2, 3, 3)), axes=(0, 1, 2))
    with pytest.raises(ValueError, match=r"fftfreq: the n argument only takes an int"):
        mnp.fft.fftfreq([0, 1, 2])
    with pytest.raises(ValueError, match=r"rfftfreq: the d argument only takes a single "
                                         r"value. Got d = \[0, 1, 2\]"):
        mnp.fft.rfftfreq(10, d=[0, 1, 2])
    with pytest.raises(ValueError, match=r"test_fft\.py"):  # the user's line
        mnp.fft.fft(x, n=0)
