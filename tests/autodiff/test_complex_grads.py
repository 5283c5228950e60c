"""Derivatives of complex functions against float64 central finite differences in complex
directions (tests/autodiff/fd.py pairs values by re(a * b), JAX's convention), and the
gradient conventions of grad/jacfwd/jacrev: a real function of complex z has the gradient
df/dx - i df/dy; holomorphic=True gives f'(z)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch import lax
from tests.autodiff.fd import check_grads

# every elementwise lax function defined on complex numbers, with a safe input region
HOLOMORPHIC = {
    "neg": lax.neg, "exp": lax.exp, "log": lax.log, "log1p": lax.log1p,
    "expm1": lax.expm1, "sqrt": lax.sqrt, "rsqrt": lax.rsqrt, "sin": lax.sin, "cos": lax.cos,
    "tan": lax.tan, "asin": lax.asin, "acos": lax.acos, "atan": lax.atan, "sinh": lax.sinh,
    "cosh": lax.cosh, "tanh": lax.tanh, "asinh": lax.asinh, "acosh": lax.acosh,
    "atanh": lax.atanh, "logistic": lax.logistic, "square": lax.square,
    "reciprocal": lax.reciprocal, "exp2": lax.exp2,
}
NON_HOLOMORPHIC = {
    "abs": lax.abs, "real": lax.real, "imag": lax.imag, "conj": lax.conj,
    "angle": mnp.angle, "abs_squared": lambda z: lax.real(z * lax.conj(z)),
}


def _z(seed, shape=(3,)):
    """Points away from branch cuts (the real and imaginary axes beyond +-1) and zeros."""
    rng = np.random.default_rng(seed)
    re = rng.uniform(0.3, 0.8, shape) * rng.choice([-1, 1], shape)
    im = rng.uniform(0.3, 0.8, shape) * rng.choice([-1, 1], shape)
    return re + 1j * im


@pytest.mark.parametrize("name", sorted(HOLOMORPHIC))
def test_holomorphic_unary(x64, name):
    check_grads(HOLOMORPHIC[name], (_z(1),), order=2)


@pytest.mark.parametrize("name", sorted(NON_HOLOMORPHIC))
def test_non_holomorphic_unary(x64, name):
    check_grads(NON_HOLOMORPHIC[name], (_z(2),), order=2)


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "pow"])
def test_binary(x64, op):
    check_grads(getattr(lax, op), (_z(3), _z(4)), order=2)


def test_complex_from_parts(x64):
    rng = np.random.default_rng(5)
    check_grads(lax.complex, (rng.standard_normal(3), rng.standard_normal(3)), order=2)


def test_mixed_real_and_complex(x64):
    """A float input promoted into complex arithmetic, and back out through abs and real."""
    rng = np.random.default_rng(6)

    def f(x, z):
        w = mnp.exp(1j * x) * z + mnp.sin(z) * x
        return mnp.abs(w) + mnp.real(w * mnp.conj(z))

    check_grads(f, (rng.standard_normal(3), _z(7)), order=2)


def test_integer_pow_and_select(x64):
    def f(z):
        return lax.select(lax.gt(lax.real(z), 0.0), lax.integer_pow(z, 3), lax.integer_pow(z, -2))

    check_grads(f, (_z(8, (4,)),), order=2)


def test_reductions_and_dot(x64):
    a, b = _z(9, (2, 3)), _z(10, (3, 2))
    check_grads(lambda x, y: mnp.sum(x @ y, axis=0) * mnp.prod(x), (a, b), order=2)
    check_grads(lambda x: mnp.cumsum(x, axis=1) + mnp.mean(x), (a,), order=1)


def test_convert_between_real_and_complex(x64):
    rng = np.random.default_rng(11)
    # float -> complex, complex -> float (the real part)
    check_grads(lambda x: lax.convert_element_type(x, np.complex128) * (1 + 2j),
                (rng.standard_normal(3),))
    check_grads(lambda z: lax.convert_element_type(z * z, np.float64), (_z(12),))


# ---- the gradient conventions -----------------------------------------------------------
def _fd_partials(f, z, eps=1e-6):
    """(df/dx, df/dy) of a real scalar function at the complex scalar z."""
    dx = (f(z + eps) - f(z - eps)) / (2 * eps)
    dy = (f(z + 1j * eps) - f(z - 1j * eps)) / (2 * eps)
    return dx, dy


@settings(max_examples=25, deadline=None)
@given(st.complex_numbers(min_magnitude=0.2, max_magnitude=3, allow_nan=False,
                          allow_infinity=False))
def test_grad_of_real_function_is_dx_minus_i_dy(z):
    with mt.config.override(enable_x64=True):
        def f(w):
            return mnp.abs(mnp.sin(w)) ** 2 + mnp.real(w) * mnp.imag(w * w)

        def f_np(w):
            return abs(np.sin(w)) ** 2 + w.real * (w * w).imag

        g = complex(mt.grad(f)(mnp.asarray(z, dtype=np.complex128)))
        dx, dy = _fd_partials(f_np, z)
        np.testing.assert_allclose(g, dx - 1j * dy, rtol=1e-6, atol=1e-6)


def test_abs_squared_gradient_is_2_conj_z():
    """JAX's worked example: grad(|z|^2)(3+4j) = 6-8j."""
    g = mt.grad(lambda z: mnp.abs(z) ** 2)(mnp.asarray(3 + 4j))
    assert g.dtype == np.complex64
    np.testing.assert_allclose(complex(g), 6 - 8j, rtol=1e-6)


@pytest.mark.parametrize("name", ["exp", "sin", "log", "tanh", "sqrt", "reciprocal"])
def test_holomorphic_grad_is_complex_derivative(x64, name):
    fn = HOLOMORPHIC[name]
    z = 0.7 - 0.4j
    g = complex(mt.grad(fn, holomorphic=True)(mnp.asarray(z)))
    eps = 1e-6
    want = (complex(fn(mnp.asarray(z + eps))) - complex(fn(mnp.asarray(z - eps)))) / (2 * eps)
    np.testing.assert_allclose(g, want, rtol=1e-7)


def test_holomorphic_jacobians_agree(x64):
    z = mnp.asarray(_z(13))

    def f(w):
        return mnp.exp(w) * w[::-1] + mnp.sum(w ** 2)

    jf = np.asarray(mt.jacfwd(f, holomorphic=True)(z))
    jr = np.asarray(mt.jacrev(f, holomorphic=True)(z))
    np.testing.assert_allclose(jf, jr, rtol=1e-12)
    zn = np.asarray(z)
    eps = 1e-6
    fd = np.stack([(np.asarray(f(mnp.asarray(zn + eps * e))) -
                    np.asarray(f(mnp.asarray(zn - eps * e)))) / (2 * eps)
                   for e in np.eye(3)], axis=1)
    np.testing.assert_allclose(jf, fd, rtol=1e-6, atol=1e-8)
    h = mt.hessian(lambda w: mnp.sum(mnp.sin(w) * w), holomorphic=True)(z)
    np.testing.assert_allclose(np.asarray(h), np.diag(2 * np.cos(zn) - zn * np.sin(zn)),
                               rtol=1e-10, atol=1e-12)


def test_jacrev_of_real_function_of_complex_input(x64):
    z = mnp.asarray(_z(14))
    j = np.asarray(mt.jacrev(lambda w: mnp.abs(w) ** 2)(z))
    np.testing.assert_allclose(j, np.diag(2 * np.conj(np.asarray(z))), rtol=1e-12)


# ---- errors -----------------------------------------------------------------------------
def test_grad_of_complex_output_needs_holomorphic():
    with pytest.raises(TypeError, match=r"requires real-valued outputs, got c64\[\].*"
                                        r"holomorphic=True"):
        mt.grad(lambda z: z * z)(mnp.asarray(1 + 1j))


def test_holomorphic_needs_complex_inputs_and_outputs():
    with pytest.raises(TypeError, match=r"holomorphic=True requires complex inputs.*f32\[\]"):
        mt.grad(lambda x: x * 1j, holomorphic=True)(1.0)
    with pytest.raises(TypeError, match=r"holomorphic=True requires complex outputs.*f32"):
        mt.grad(mnp.abs, holomorphic=True)(mnp.asarray(1 + 1j))
    with pytest.raises(TypeError, match=r"holomorphic=True requires complex outputs"):
        mt.jacfwd(mnp.abs, holomorphic=True)(mnp.asarray([1 + 1j]))


def test_jacfwd_of_complex_input_needs_holomorphic():
    with pytest.raises(TypeError, match=r"jacfwd.*real-valued \(float\) inputs.*c64\[2\].*"
                                        r"holomorphic=True"):
        mt.jacfwd(mnp.abs)(mnp.asarray([1 + 1j, 2j]))


def test_jacrev_of_complex_output_needs_holomorphic():
    with pytest.raises(TypeError, match=r"jacrev.*requires real-valued outputs"):
        mt.jacrev(lambda z: z * 2)(mnp.asarray([1 + 1j]))


def test_real_only_primitives_reject_complex():
    z = mnp.asarray([1 + 1j])
    for fn, name in ((lax.floor, "floor"), (lax.erf, "erf"), (lax.lgamma, "lgamma"),
                     (lax.cbrt, "cbrt")):
        with pytest.raises(TypeError, match=fr"{name} needs floating-point operands, "
                                            r"got c64\[1\]"):
            fn(z)
    with pytest.raises(TypeError, match=r"real needs complex operands, got f32\[\]"):
        lax.real(mnp.asarray(1.0))
    with pytest.raises(TypeError, match=r"complex needs float32 or float64 parts"):
        lax.complex(mnp.asarray(1, np.int32), mnp.asarray(2, np.int32))


# ---- under vmap and jit ----------------------------------------------------------------------
def _complex_fn(z, x):
    return mnp.abs(mnp.exp(z) * x) + mnp.real(mnp.conj(z) * mnp.sqrt(z))


def test_grad_under_vmap_matches_loop(x64):
    zs, xs = _z(15, (4, 3)), np.random.default_rng(16).standard_normal((4, 3))
    g = mt.grad(lambda z, x: mnp.sum(_complex_fn(z, x)), argnums=(0, 1))
    batched = mt.vmap(g)(mnp.asarray(zs), mnp.asarray(xs))
    for i in range(4):
        single = g(mnp.asarray(zs[i]), mnp.asarray(xs[i]))
        for b, s in zip(batched, single):
            np.testing.assert_allclose(np.asarray(b)[i], np.asarray(s), rtol=1e-12)


def test_grad_under_jit_matches_eager(x64):
    z, x = mnp.asarray(_z(17)), mnp.asarray(np.random.default_rng(18).standard_normal(3))
    g = mt.grad(lambda z, x: mnp.sum(_complex_fn(z, x)), argnums=(0, 1))
    for a, b in zip(mt.jit(g)(z, x), g(z, x)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12)
