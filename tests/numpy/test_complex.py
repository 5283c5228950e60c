"""Complex dtypes through mytorch.numpy: values against NumPy (elementwise functions,
reductions, products, creation, methods), JAX's promotion lattice, the printer, jit and
vmap."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import mytorch as mt
import mytorch.numpy as mnp
from mytorch.core import dtypes

C64, C128 = np.dtype(np.complex64), np.dtype(np.complex128)


def _complex_arrays(dtype=np.complex64, min_dims=0, max_dims=2, lo=-3.0, hi=3.0):
    parts = st.floats(lo, hi, width=32)
    return hnp.arrays(dtype, hnp.array_shapes(min_dims=min_dims, max_dims=max_dims,
                                              min_side=0, max_side=4),
                      elements=st.builds(complex, parts, parts))


def _close(got, want, rtol=2e-5, atol=2e-6):
    got = np.asarray(got)
    assert got.dtype == np.asarray(want).dtype, (got.dtype, np.asarray(want).dtype)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


UNARY = ["negative", "exp", "expm1", "log", "log1p", "log2", "log10", "sqrt", "sin", "cos",
         "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh",
         "arctanh", "square", "reciprocal", "conj", "conjugate", "real", "imag", "abs",
         "absolute", "angle", "sign", "isfinite", "isnan", "isinf", "exp2", "positive"]


@pytest.mark.parametrize("name", UNARY)
@settings(max_examples=20, deadline=None)
@given(x=_complex_arrays())
def test_unary_matches_numpy(name, x):
    ours, theirs = getattr(mnp, name), getattr(np, name)
    if name in ("log", "log2", "log10", "reciprocal", "arctanh", "arctan"):
        x = np.where(np.abs(x) < 0.1, x + (0.5 + 0.5j), x).astype(x.dtype)  # away from poles
    with np.errstate(all="ignore"):
        want = theirs(x)
    _close(ours(mnp.asarray(x)), want, rtol=1e-4, atol=1e-5)


BINARY = ["add", "subtract", "multiply", "divide", "power", "equal", "not_equal",
          "maximum", "minimum"]


@pytest.mark.parametrize("name", BINARY)
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_binary_matches_numpy(name, data):
    x = data.draw(_complex_arrays(max_dims=2))
    y = data.draw(hnp.arrays(C64, x.shape, elements=st.builds(
        complex, st.floats(0.5, 2, width=32), st.floats(-2, 2, width=32))))
    with np.errstate(all="ignore"):
        want = getattr(np, name)(x, y)
    _close(getattr(mnp, name)(mnp.asarray(x), mnp.asarray(y)), want, rtol=1e-4, atol=1e-4)


def test_special_values_match_numpy():
    vals = np.array([0, np.inf, -np.inf, complex(np.inf, np.inf), complex(np.nan, 1),
                     complex(1, np.nan), complex(0, np.inf), -0.0 + 0j], np.complex64)
    x = mnp.asarray(vals)
    with np.errstate(all="ignore"):
        for name in ("exp", "log", "sqrt", "abs", "isfinite", "isnan", "isinf", "real", "imag",
                     "conj", "angle", "tanh"):
            np.testing.assert_array_equal(np.asarray(getattr(mnp, name)(x)),
                                          getattr(np, name)(vals), err_msg=name)


@settings(max_examples=25, deadline=None)
@given(x=_complex_arrays(min_dims=1, max_dims=3), data=st.data())
def test_reductions_match_numpy(x, data):
    axis = data.draw(st.none() | st.integers(-x.ndim, x.ndim - 1))
    a = mnp.asarray(x)
    for name in ("sum", "prod", "mean", "cumsum"):
        if name == "cumsum" and axis is None:
            continue
        if name in ("mean",) and x.size == 0:
            continue
        want = getattr(np, name)(x, axis=axis)
        _close(getattr(mnp, name)(a, axis=axis), want, rtol=1e-4, atol=1e-4)
    if x.size:
        for name in ("var", "std"):
            want = getattr(np, name)(x, axis=axis)
            if np.all(np.isfinite(want)):
                _close(getattr(mnp, name)(a, axis=axis), want.astype(np.float32), rtol=1e-4,
                       atol=1e-4)


def test_products_match_numpy():
    rng = np.random.default_rng(0)
    a = (rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))).astype(C64)
    b = (rng.standard_normal((4, 2)) + 1j * rng.standard_normal((4, 2))).astype(C64)
    v = a[0]
    for got, want in [
        (mnp.matmul(a, b), a @ b), (mnp.dot(v, v), np.dot(v, v)), (mnp.vdot(v, v), np.vdot(v, v)),
        (mnp.inner(v, v), np.inner(v, v)), (mnp.outer(v, v), np.outer(v, v)),
        (mnp.einsum("ij,jk->ik", a, b), a @ b), (mnp.tensordot(a, b, 1), a @ b),
        (mnp.kron(v[:2], v[:2]), np.kron(v[:2], v[:2])), (mnp.cov(a), np.cov(a).astype(C64)),
        (mnp.convolve(v, v[:2]), np.convolve(v, v[:2])),
        (mnp.correlate(v, v[:2], "full"), np.correlate(v, v[:2], "full")),
        (mnp.polyval(v, 0.5 - 1j), np.polyval(v, np.complex64(0.5 - 1j))),
    ]:
        _close(got, want, rtol=1e-4, atol=1e-4)


# ---- promotion: JAX's lattice ---------------------------------------------------------------
@pytest.mark.parametrize("a, b, want", [
    (np.float32, np.complex64, C64), (np.float16, np.complex64, C64),
    (np.int32, np.complex64, C64), (np.bfloat16 if hasattr(np, "bfloat16") else
                                    dtypes.bfloat16, np.complex64, C64),
    (np.complex64, np.complex64, C64), (np.uint8, np.complex64, C64),
    (complex, np.float32, C64), (complex, np.float16, C64), (complex, np.int8, C64),
    (complex, float, C64), (float, np.complex64, C64), (int, np.complex64, C64),
])
def test_promotion_without_x64(a, b, want):
    assert mnp.promote_types(a, b) == want
    assert mnp.promote_types(b, a) == want


@pytest.mark.parametrize("a, b, want", [
    (np.float64, np.complex64, C128), (np.complex64, np.complex128, C128),
    (complex, np.float64, C128), (complex, np.float32, C64), (complex, np.int64, C128),
    (np.int64, np.complex64, C64), (np.float32, np.complex128, C128),
])
def test_promotion_with_x64(x64, a, b, want):
    assert mnp.promote_types(a, b) == want


def test_python_complex_scalars_are_weak():
    x = mnp.ones(2, mnp.float32)
    assert (x * 1j).dtype == C64
    assert (mnp.ones(2, mnp.float16) * 1j).dtype == C64
    z = mnp.asarray(1j)
    assert z.dtype == C64 and z.weak_type
    assert (mnp.arange(3) * 1j).dtype == C64
    assert mnp.result_type(1j, mnp.float32) == C64


def test_complex128_narrows_without_x64():
    with pytest.warns(mt.errors.X64Warning if hasattr(mt, "errors") else UserWarning):
        assert mnp.zeros(2, np.complex128).dtype == C64


def test_complex128_with_x64(x64):
    x = mnp.asarray(np.array([1 + 2j]))
    assert x.dtype == C128
    assert (x * 2.0).dtype == C128
    assert mnp.abs(x).dtype == np.float64


# ---- creation, conversion, methods ----------------------------------------------------------
def test_creation_and_conversion():
    assert mnp.array([1, 2j]).dtype == C64
    _close(mnp.array([1, 2j]), np.array([1, 2j], C64))
    assert mnp.zeros(2, complex).dtype == C64
    assert mnp.complex64(1.5).dtype == C64
    _close(mnp.linspace(0, 1j, 3), np.linspace(0, 1j, 3).astype(C64))
    z = mnp.asarray(np.array([1.5 - 2j, -3 + 0.5j], C64))
    with pytest.warns(np.exceptions.ComplexWarning, match="discards the imaginary part"):
        _close(z.astype(np.float32), np.array([1.5, -3], np.float32))  # the real part
    with pytest.warns(np.exceptions.ComplexWarning):
        _close(z.astype(np.int32), np.array([1, -3], np.int32))
    _close(z.astype(bool), np.array([True, True]))
    _close(z.real, np.array([1.5, -3], np.float32))
    _close(z.imag, np.array([-2, 0.5], np.float32))
    _close(z.conj(), np.conj(np.asarray(z)))
    assert complex(z[0]) == 1.5 - 2j
    assert mnp.iscomplexobj(z) and not mnp.isrealobj(z) and mnp.isrealobj(mnp.ones(2))
    np.testing.assert_array_equal(np.asarray(mnp.iscomplex(mnp.array([1 + 1j, 2]))),
                                  [True, False])
    np.testing.assert_array_equal(np.asarray(mnp.isreal(mnp.array([np.nan, 1]))), [True, True])
    assert mnp.issubdtype(z.dtype, mnp.complexfloating)
    assert mnp.isdtype(z.dtype, "complex floating") and mnp.isdtype(z.dtype, "numeric")
    assert float(mnp.finfo(mnp.complex64).eps) == float(np.finfo(np.complex64).eps)


def test_indexing_and_updates():
    zn = np.array([1 + 2j, 3 - 4j, 0.5j], C64)
    z = mnp.asarray(zn)
    _close(z[mnp.array([2, 0])], zn[[2, 0]])
    _close(z.at[1].set(5j), np.array([1 + 2j, 5j, 0.5j], C64))
    _close(z.at[0].multiply(1j), np.array([-2 + 1j, 3 - 4j, 0.5j], C64))
    _close(mnp.where(mnp.abs(z) > 1, z, 0), np.where(np.abs(zn) > 1, zn, 0).astype(C64))
    _close(mnp.concatenate([z, mnp.ones(2)]), np.concatenate([zn, np.ones(2, C64)]))
    _close(mnp.sort(z), np.sort(zn))
    _close(mnp.round(z * 1.55, 1), np.round(zn * np.complex64(1.55), 1), atol=1e-5)
    _close(mnp.nan_to_num(mnp.array([complex(np.nan, np.inf)])),
           np.nan_to_num(np.array([complex(np.nan, np.inf)], C64)))


def test_real_only_functions_raise():
    z = mnp.asarray([1 + 1j])
    for fn in (mnp.floor, mnp.ceil, mnp.trunc, mnp.fabs, mnp.floor_divide, mnp.remainder,
               mnp.fmod, mnp.heaviside, mnp.modf, mnp.logaddexp, mnp.logaddexp2):
        args = (z,) if fn in (mnp.floor, mnp.ceil, mnp.trunc, mnp.fabs, mnp.modf) else (z, z)
        with pytest.raises(TypeError, match=r"not defined for complex arguments, got c64\[1\]"):
            fn(*args)


# ---- printer, jit, vmap -------------------------------------------------------------------
def test_jaxpr_prints_complex_literals():
    text = str(mt.make_jaxpr(lambda z: z * 2j + 1)(mnp.ones(2, mnp.complex64)))
    assert "c64[2]" in text and "2j" in text and "(1+0j)" in text


@settings(max_examples=15, deadline=None)
@given(x=_complex_arrays(min_dims=1))
def test_jit_matches_eager(x):
    def f(z):
        w = mnp.exp(z * 0.5j) + mnp.conj(z) * z
        return mnp.abs(w) + mnp.angle(w), mnp.sum(w * z, axis=-1), mnp.real(w) - mnp.imag(w)

    a = mnp.asarray(x)
    for got, want in zip(mt.jit(f)(a), f(a)):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-5)


def test_vmap_matches_loop():
    rng = np.random.default_rng(3)
    zs = (rng.standard_normal((4, 3)) + 1j * rng.standard_normal((4, 3))).astype(C64)

    def f(z):
        return mnp.dot(z, mnp.conj(z)) * mnp.exp(z) + mnp.abs(z)

    batched = np.asarray(mt.vmap(f)(mnp.asarray(zs)))
    np.testing.assert_allclose(batched, np.stack([np.asarray(f(mnp.asarray(z))) for z in zs]),
                               rtol=1e-6)


def test_sort_complex_matches_numpy():
    a = np.array([[3 + 1j, 1 - 2j, 1 - 3j, np.nan + 0j], [2, 1j, -1j, 0]], C64)
    np.testing.assert_array_equal(np.asarray(mnp.sort_complex(a)), np.sort_complex(a))
    got = mnp.sort_complex(mnp.array([3.0, 1.0, 2.0]))
    assert got.dtype == C64
    np.testing.assert_array_equal(np.asarray(got), [1, 2, 3])
