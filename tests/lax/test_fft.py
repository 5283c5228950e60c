"""lax.fft against numpy.fft (every type, dtype and 1 to 3 lengths), its JVP and VJP
against float64 central finite differences (complex directions, pairing re(sum(a * b))),
the transposes against the definition <ct, A x> = <Aᵀ ct, x>, vmap against a loop, jit
against eager, and the errors of abstract evaluation."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch import lax
from mytorch.lax import FftType
from tests.autodiff.fd import check_grads

_NUMPY = {FftType.FFT: np.fft.fftn, FftType.IFFT: np.fft.ifftn,
          FftType.RFFT: np.fft.rfftn, FftType.IRFFT: np.fft.irfftn}
_TOL = {np.float32: dict(rtol=1e-4, atol=1e-4), np.float64: dict(rtol=1e-10, atol=1e-10)}


def _settings(n):
    return settings(max_examples=n, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


def _operand(rng, fft_type, batch, lengths, real):
    """A random operand of the shape `fft_type` reads for `lengths`, real dtype `real`."""
    shape = (*batch, *lengths)
    if fft_type == FftType.IRFFT:
        shape = (*batch, *lengths[:-1], lengths[-1] // 2 + 1)
    x = rng.standard_normal(shape)
    if fft_type != FftType.RFFT:
        x = x + 1j * rng.standard_normal(shape)
        return x.astype(np.complex64 if real == np.float32 else np.complex128)
    return x.astype(real)


def _reference(x, fft_type, lengths):
    axes = tuple(range(x.ndim - len(lengths), x.ndim))
    return _NUMPY[fft_type](x.astype(np.complex128 if np.iscomplexobj(x) else np.float64),
                            s=lengths, axes=axes)


_LENGTHS = st.lists(st.integers(1, 6), min_size=1, max_size=3).map(tuple)
_BATCH = st.lists(st.integers(1, 3), min_size=0, max_size=2).map(tuple)


@pytest.mark.parametrize("fft_type", list(FftType))
@pytest.mark.parametrize("real", [np.float32, np.float64])
@_settings(25)
@given(lengths=_LENGTHS, batch=_BATCH, seed=st.integers(0, 2**32 - 1))
def test_values_match_numpy(x64, fft_type, real, lengths, batch, seed):
    x = _operand(np.random.default_rng(seed), fft_type, batch, lengths, real)
    got = lax.fft(x, fft_type, lengths)
    want = _reference(x, fft_type, lengths)
    assert got.shape == want.shape
    is_real_out = fft_type == FftType.IRFFT
    expected_dtype = {(np.float32, False): np.complex64, (np.float32, True): np.float32,
                      (np.float64, False): np.complex128, (np.float64, True): np.float64}
    assert got.dtype == expected_dtype[(real, is_real_out)]
    scale = max(1.0, float(np.max(np.abs(want), initial=0.0)))
    tol = _TOL[real]
    np.testing.assert_allclose(np.asarray(got), want, rtol=tol["rtol"], atol=tol["atol"] * scale)


def test_string_types_any_case():
    x = np.arange(4, dtype=np.float32)
    want = np.fft.rfft(x)
    for name in ("rfft", "RFFT", "Rfft"):
        np.testing.assert_allclose(np.asarray(lax.fft(x, name, (4,))), want, rtol=1e-6)
    assert FftType("irfft") is FftType.IRFFT and FftType(1) is FftType.IFFT
    assert lax.fft_p is mt.lax.fft_p and str(FftType.FFT) == "FFT"


def test_size_one_and_zero_batch():
    x = np.ones((0, 1, 1), np.complex64)
    assert lax.fft(x, "fft", (1, 1)).shape == (0, 1, 1)
    y = np.array([[2.0]], np.float32)
    np.testing.assert_allclose(np.asarray(lax.fft(y, "rfft", (1,))), [[2.0 + 0j]])
    np.testing.assert_allclose(np.asarray(lax.fft(lax.fft(y, "rfft", (1,)), "irfft", (1,))),
                               y)


# ---- derivatives --------------------------------------------------------------------------
_CASES = [(1,), (2,), (5,), (6,), (3, 4), (4, 1), (2, 3, 5), (1, 2, 2)]


@pytest.mark.parametrize("fft_type", list(FftType))
@pytest.mark.parametrize("lengths", _CASES)
def test_derivatives_match_finite_differences(x64, fft_type, lengths):
    rng = np.random.default_rng(hash((int(fft_type), lengths)) % 2**32)
    x = _operand(rng, fft_type, (2,), lengths, np.float64)
    if fft_type == FftType.IRFFT:
        # half spectra with arbitrary imaginary parts at the zero (and Nyquist) frequency:
        # the transform ignores them, and so must its derivatives
        x = x + 0.5j
    check_grads(lambda v: lax.fft(v, fft_type, lengths), (x,), order=2)


def _inner(a, b):
    return float(np.real(np.sum(np.asarray(a) * np.asarray(b))))


@pytest.mark.parametrize("fft_type", list(FftType))
@pytest.mark.parametrize("lengths", _CASES)
def test_transpose_pairs_by_real_product(x64, fft_type, lengths):
    """<ct, A x> == <Aᵀ ct, x> under re(sum(a * b)), for random x and ct."""
    rng = np.random.default_rng(7)
    x = _operand(rng, fft_type, (3,), lengths, np.float64)
    f = lambda v: lax.fft(v, fft_type, lengths)  # noqa: E731
    y = f(x)
    ct = rng.standard_normal(y.shape)
    if np.iscomplexobj(np.asarray(y)):
        ct = ct + 1j * rng.standard_normal(y.shape)
    (back,) = mt.linear_transpose(f, x)(mnp.asarray(ct))
    assert back.dtype == x.dtype and back.shape == x.shape
    assert abs(_inner(ct, y) - _inner(back, x)) <= 1e-9 * max(1.0, abs(_inner(ct, y)))


def test_grad_of_power_is_parseval(x64):
    """sum |FFT(x)|² = N sum |x|², so its gradient is 2 N x (real) and 2 N x for complex x
    (JAX's convention: df/dx - i df/dy of a real function)."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 4))
    loss = lambda v: mnp.sum(mnp.abs(lax.fft(v, "fft", (3, 4))) ** 2)  # noqa: E731
    g = mt.grad(loss)(x.astype(np.complex128))
    np.testing.assert_allclose(np.asarray(g), 2 * 12 * x, rtol=1e-10)
    z = x + 1j * rng.standard_normal(x.shape)
    np.testing.assert_allclose(np.asarray(mt.grad(loss)(z)), 2 * 12 * np.conj(z), rtol=1e-10)
    rloss = lambda v: mnp.sum(mnp.abs(lax.fft(v, "rfft", (3, 4))) ** 2)  # noqa: E731
    check_grads(rloss, (x,), order=2)
    iloss = lambda v: mnp.sum(mnp.sin(lax.fft(v, "irfft", (3, 4))))  # noqa: E731
    check_grads(iloss, (np.fft.rfftn(x),), order=2)


# ---- vmap and jit -------------------------------------------------------------------------
@pytest.mark.parametrize("fft_type", list(FftType))
@pytest.mark.parametrize("in_axis", [0, 1, 2, -1])
def test_vmap_matches_loop(fft_type, in_axis):
    rng = np.random.default_rng(11)
    lengths = (4, 3)
    x = _operand(rng, fft_type, (5,), lengths, np.float32)  # batch first
    x = np.moveaxis(x, 0, in_axis)
    f = lambda v: lax.fft(v, fft_type, lengths)  # noqa: E731
    got = mt.vmap(f, in_axes=in_axis)(x)
    want = np.stack([np.asarray(f(np.take(x, i, axis=in_axis)))
                     for i in range(x.shape[in_axis])])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)


def test_vmap_of_grad_and_jit_of_vmap(x64):
    rng = np.random.default_rng(5)
    xs = rng.standard_normal((4, 6))
    loss = lambda v: mnp.sum(mnp.abs(lax.fft(v, "rfft", (6,))))  # noqa: E731
    got = mt.jit(mt.vmap(mt.grad(loss)))(xs)
    want = np.stack([np.asarray(mt.grad(loss)(x)) for x in xs])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)


@pytest.mark.parametrize("fft_type", list(FftType))
def test_jit_matches_eager(fft_type):
    x = _operand(np.random.default_rng(2), fft_type, (2,), (4, 5), np.float32)
    f = lambda v: lax.fft(v, fft_type, (4, 5)) * 2  # noqa: E731
    got = mt.jit(f)(x)
    want = f(x)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6, atol=1e-6)
    assert "fft" in mt.jit(f).lower(x).as_text()


def test_jaxpr_shows_params():
    x = np.zeros((2, 8), np.float32)
    text = str(mt.make_jaxpr(lambda v: lax.fft(v, "rfft", (8,)))(x))
    assert "fft[fft_lengths=(8,), fft_type=RFFT]" in text and "c64[2,5]" in text


# ---- errors -------------------------------------------------------------------------------
def test_dtype_errors_name_the_type_and_operand():
    with pytest.raises(TypeError, match=r"fft \(FFT\) needs a complex64 or complex128 "
                                        r"operand, got f32\[4\]"):
        lax.fft_p.bind(mnp.zeros(4, np.float32), fft_type=FftType.FFT, fft_lengths=(4,))
    with pytest.raises(TypeError, match=r"fft \(IRFFT\) needs a complex.*got i32\[3\]"):
        lax.fft_p.bind(mnp.zeros(3, np.int32), fft_type=FftType.IRFFT, fft_lengths=(4,))
    with pytest.raises(TypeError, match=r"fft \(RFFT\) needs a float32 or float64 operand, "
                                        r"got c64\[4\]; use FFT for complex input"):
        lax.fft(np.zeros(4, np.complex64), "rfft", (4,))
    with pytest.raises(TypeError, match=r"fft \(RFFT\).*got f16\[4\]; convert it first"):
        lax.fft(np.zeros(4, np.float16), "rfft", (4,))


def test_binder_converts_as_jax():
    """lax.fft converts real and integer operands (JAX's lax.fft does); no lengths: the
    converted operand itself."""
    x = np.arange(4)
    got = lax.fft(x.astype(np.float32), "fft", (4,))
    assert got.dtype == np.complex64
    np.testing.assert_allclose(np.asarray(got), np.fft.fft(x), rtol=1e-6)
    assert lax.fft(x, "rfft", (4,)).dtype == np.complex64
    assert lax.fft(x, "irfft", (6,)).dtype == np.float32
    assert lax.fft(np.float16(1.0) * np.ones(4, np.float16), "ifft", (4,)).dtype == np.complex64
    same = lax.fft(x, "fft", ())
    assert same.dtype == np.complex64 and same.tolist() == [0, 1, 2, 3]
    assert lax.fft(x, "rfft", []).dtype == np.float32


def test_length_errors():
    with pytest.raises(ValueError, match=r"fft \(FFT\) with fft_lengths=\(5,\) needs the "
                                         r"trailing dims of the operand to be \(5,\), got "
                                         r"c64\[4\]"):
        lax.fft(np.zeros(4, np.complex64), "fft", (5,))
    with pytest.raises(ValueError, match=r"fft_lengths\[-1\] // 2 \+ 1 = 3.*c64\[2,4\]"):
        lax.fft(np.zeros((2, 4), np.complex64), "irfft", (2, 4))
    with pytest.raises(ValueError, match=r"rank >= 2, got c64\[4\]"):
        lax.fft(np.zeros(4, np.complex64), "fft", (1, 4))
    with pytest.raises(ValueError, match="0 to 3 positive ints"):
        lax.fft(np.zeros((1, 1, 1, 1), np.complex64), "fft", (1, 1, 1, 1))
    with pytest.raises(ValueError, match="0 to 3 positive ints"):
        lax.fft(np.zeros(0, np.complex64), "fft", (0,))
    with pytest.raises(ValueError, match="unknown fft_type 'dct'"):
        lax.fft(np.zeros(4, np.complex64), "dct", (4,))
    with pytest.raises(ValueError, match=r"test_fft\.py"):  # the user's line
        lax.fft(np.zeros(4, np.complex64), "fft", (3,))
