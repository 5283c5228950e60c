"""custom_jvp and custom_vjp: the user's rule is what every mode of differentiation uses,
through pytrees, nondiff_argnums, closures and higher order."""

import numpy as np
import pytest

import mytorch as mt
import mytorch.numpy as mnp
from tests.autodiff.fd import check_grads


def _x(v):
    return mnp.asarray(np.asarray(v, np.float64))


# ---- custom_jvp -----------------------------------------------------------------------
@mt.custom_jvp
def scaled_sin(x):
    return mnp.sin(x)


@scaled_sin.defjvp
def _scaled_sin_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return scaled_sin(x), 3.0 * mnp.cos(x) * t  # deliberately 3x the true derivative


def test_custom_jvp_rule_is_used_in_both_modes(x64):
    x = _x([0.1, 0.7, -1.3])
    np.testing.assert_allclose(scaled_sin(x), np.sin(np.asarray(x)))
    _, t = mt.jvp(scaled_sin, (x,), (mnp.ones(3, dtype=mnp.float64),))
    np.testing.assert_allclose(t, 3 * np.cos(np.asarray(x)))
    g = mt.grad(lambda x: scaled_sin(x).sum())(x)
    np.testing.assert_allclose(g, 3 * np.cos(np.asarray(x)))
    # and inside make_jaxpr it is one call equation carrying the function's jaxpr
    text = str(mt.make_jaxpr(scaled_sin)(x))
    assert "custom_jvp_call" in text and "sin" in text


def test_custom_jvp_second_order(x64):
    # the rule is written with traceable ops, so it differentiates again
    g2 = mt.grad(mt.grad(lambda x: scaled_sin(x)))(_x(0.4))
    np.testing.assert_allclose(g2, -3 * np.sin(0.4), rtol=1e-12)


@mt.custom_jvp
def safe_log1pexp(x):
    """softplus whose derivative is computed stably for large x."""
    return mnp.logaddexp(x, 0.0)


@safe_log1pexp.defjvp
def _softplus_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return safe_log1pexp(x), t * mt.lax.logistic(x)


def test_custom_jvp_matches_finite_differences(x64):
    check_grads(safe_log1pexp, (np.array([-3.0, 0.2, 5.0]),), order=2)


def test_custom_jvp_pytrees_and_nondiff_argnums(x64):
    def f(power, xs):
        return {"p": xs["a"] ** power * xs["b"]}

    cf = mt.custom_jvp(f, nondiff_argnums=(0,))

    @cf.defjvp
    def cf_jvp(power, primals, tangents):
        (xs,), (ts,) = primals, tangents
        a, b = xs["a"], xs["b"]
        out = cf(power, xs)
        dt = power * a ** (power - 1) * b * ts["a"] + a ** power * ts["b"]
        return out, {"p": dt}

    xs = {"a": _x([1.5, 2.0]), "b": _x([0.5, -1.0])}
    got = mt.grad(lambda xs: cf(3, xs)["p"].sum())(xs)
    want = mt.grad(lambda xs: f(3, xs)["p"].sum())(xs)
    for k in xs:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-12)


def test_custom_jvp_defjvps(x64):
    @mt.custom_jvp
    def f(x, y):
        return x * y

    f.defjvps(lambda tx, ans, x, y: tx * y, lambda ty, ans, x, y: x * ty)
    gx, gy = mt.grad(f, argnums=(0, 1))(_x(2.0), _x(5.0))
    assert (float(gx), float(gy)) == (5.0, 2.0)


def test_custom_jvp_closure_over_differentiated_value_is_an_error(x64):
    def outer(y):
        @mt.custom_jvp
        def f(x):
            return x * y

        f.defjvp(lambda p, t: (f(*p), t[0] * y))
        return f(_x(2.0))

    with pytest.raises(TypeError, match="closes over a value that is being differentiated"):
        mt.grad(outer)(_x(3.0))


def test_custom_jvp_without_rule_is_an_error():
    f = mt.custom_jvp(lambda x: x)
    with pytest.raises(AttributeError, match="no JVP defined"):
        mt.grad(f)(mnp.array(1.0))


def test_custom_jvp_rule_output_checked(x64):
    @mt.custom_jvp
    def f(x):
        return x * 2.0

    f.defjvp(lambda p, t: (f(*p), mnp.ones(3)))
    with pytest.raises(TypeError, match="tangent output"):
        mt.jvp(f, (_x(1.0),), (_x(1.0),))


# ---- custom_vjp -----------------------------------------------------------------------
@mt.custom_vjp
def clip_gradient(x, lo, hi):
    return x


def _clip_fwd(x, lo, hi):
    return x, (lo, hi)


def _clip_bwd(res, g):
    lo, hi = res
    return (mnp.clip(g, lo, hi), None, None)


clip_gradient.defvjp(_clip_fwd, _clip_bwd)


def test_custom_vjp_bwd_is_used():
    f = lambda x: (clip_gradient(x, -1.0, 1.0) * mnp.array([5.0, 0.5, -3.0])).sum()
    g = mt.grad(f)(mnp.zeros(3))
    np.testing.assert_allclose(g, [1.0, 0.5, -1.0])


def test_custom_vjp_forward_mode_is_a_clear_error():
    with pytest.raises(TypeError, match="forward-mode"):
        mt.jvp(lambda x: clip_gradient(x, -1.0, 1.0), (mnp.ones(2),), (mnp.ones(2),))


def test_custom_vjp_matches_true_gradient_and_second_order(x64):
    @mt.custom_vjp
    def f(x, y):
        return mnp.sin(x) * y

    def fwd(x, y):
        return f(x, y), (x, y)

    def bwd(res, g):
        x, y = res
        return (g * mnp.cos(x) * y, g * mnp.sin(x))

    f.defvjp(fwd, bwd)
    x, y = _x([0.3, 1.1]), _x([2.0, -0.5])
    gx, gy = mt.grad(lambda x, y: f(x, y).sum(), argnums=(0, 1))(x, y)
    np.testing.assert_allclose(gx, np.cos(np.asarray(x)) * np.asarray(y), rtol=1e-12)
    np.testing.assert_allclose(gy, np.sin(np.asarray(x)), rtol=1e-12)
    # grad of grad runs through bwd, written with differentiable ops
    h = mt.grad(lambda x: mt.grad(lambda x: f(x, y).sum())(x).sum())(x)
    np.testing.assert_allclose(h, -np.sin(np.asarray(x)) * np.asarray(y), rtol=1e-12)


def test_custom_vjp_nondiff_argnums_and_pytrees(x64):
    def f(scale, params):
        return scale * (params["w"] * params["b"]).sum()

    cf = mt.custom_vjp(f, nondiff_argnums=(0,))

    def fwd(scale, params):
        return cf(scale, params), params

    def bwd(scale, params, g):
        return ({"w": scale * g * params["b"], "b": scale * g * params["w"]},)

    cf.defvjp(fwd, bwd)
    p = {"w": _x([1.0, 2.0]), "b": _x([3.0, 4.0])}
    got = mt.grad(lambda p: cf(2.0, p))(p)
    np.testing.assert_allclose(got["w"], [6.0, 8.0])
    np.testing.assert_allclose(got["b"], [2.0, 4.0])


def test_custom_vjp_bwd_output_checked():
    @mt.custom_vjp
    def f(x):
        return x

    f.defvjp(lambda x: (x, None), lambda res, g: (g, g))
    with pytest.raises(TypeError, match="one cotangent per differentiable argument"):
        mt.grad(lambda x: f(x).sum())(mnp.ones(2))

    f.defvjp(lambda x: (x, None), lambda res, g: (mnp.ones(3),))
    with pytest.raises(TypeError, match="f32\\[3\\] for argument 0"):
        mt.grad(lambda x: f(x).sum())(mnp.ones(2))
