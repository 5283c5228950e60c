"""custom_jvp and custom_vjp: the user's rule is what every mode of differentiation uses,
through pytrees, nondiff_argnums, closures and higher order."""

import functools

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


# ---- JAX's documented examples, with JAX's numbers ------------------------------------------
def _fixed_point(f, a, x_guess):
    def cond_fun(carry):
        x_prev, x = carry
        return mnp.abs(x_prev - x) > 1e-6

    def body_fun(carry):
        _, x = carry
        return x, f(a, x)

    _, x_star = mt.lax.while_loop(cond_fun, body_fun, (x_guess, f(a, x_guess)))
    return x_star


fixed_point = mt.custom_vjp(_fixed_point, nondiff_argnums=(0,))


def _fixed_point_fwd(f, a, x_init):
    x_star = fixed_point(f, a, x_init)
    return x_star, (a, x_star)


def _rev_iter(f, packed, u):
    a, x_star, x_star_bar = packed
    _, vjp_x = mt.vjp(lambda x: f(a, x), x_star)
    return x_star_bar + vjp_x(u)[0]


def _fixed_point_rev(f, res, x_star_bar):
    a, x_star = res
    _, vjp_a = mt.vjp(lambda a: f(a, x_star), a)
    (a_bar,) = vjp_a(fixed_point(functools.partial(_rev_iter, f), (a, x_star, x_star_bar),
                                 x_star_bar))
    return a_bar, mnp.zeros_like(x_star)


fixed_point.defvjp(_fixed_point_fwd, _fixed_point_rev)


def _newton_sqrt(a):
    return fixed_point(lambda a, x: 0.5 * (x + a / x), a, a)


def test_fixed_point_example():
    # jax: 1.41421 0.35355 -0.08839; vmap(grad) [0.5, 0.3536, 0.25]; jit(grad) 0.35355
    a = mnp.array(2.0)
    np.testing.assert_allclose(_newton_sqrt(a), np.sqrt(2.0), rtol=1e-6)
    np.testing.assert_allclose(mt.grad(_newton_sqrt)(a), 0.5 / np.sqrt(2.0), rtol=1e-5)
    np.testing.assert_allclose(mt.grad(mt.grad(_newton_sqrt))(a), -0.25 * 2.0 ** -1.5,
                               rtol=1e-4)
    np.testing.assert_allclose(mt.vmap(mt.grad(_newton_sqrt))(mnp.array([1.0, 2.0, 4.0])),
                               [0.5, 0.35355339, 0.25], rtol=1e-5)
    np.testing.assert_allclose(mt.jit(mt.grad(_newton_sqrt))(a), 0.35355339, rtol=1e-5)


def test_function_valued_nondiff_argument():
    app = mt.custom_jvp(lambda f, x: f(x), nondiff_argnums=(0,))

    @app.defjvp
    def app_jvp(f, primals, tangents):
        return f(primals[0]), 2.0 * tangents[0]

    cube = lambda x: x ** 3
    assert float(app(cube, mnp.array(3.0))) == 27.0
    assert float(mt.grad(app, 1)(cube, mnp.array(3.0))) == 2.0
    np.testing.assert_allclose(mt.vmap(lambda v: app(mnp.sin, v))(mnp.ones(2)),
                               np.sin(np.ones(2)), rtol=1e-6)
    assert float(mt.jit(mt.grad(lambda v: app(mnp.sin, v)))(mnp.array(1.0))) == 2.0
    np.testing.assert_array_equal(mt.vmap(mt.grad(lambda v: app(mnp.sin, v)))(mnp.ones(2)),
                                  [2.0, 2.0])


def test_clip_gradient_example_under_vmap():
    @mt.custom_vjp
    def clip(lo, hi, x):
        return x

    clip.defvjp(lambda lo, hi, x: (x, (lo, hi)),
                lambda res, g: (None, None, mnp.clip(g, res[0], res[1])))
    t = lambda x: clip(-0.75, 0.75, mnp.sin(x))
    xs = mnp.linspace(0, 10, 5)
    # the incoming cotangent 1 is clipped to 0.75 (jax: [.75 -.6009 .2127 .26 -.6293])
    want = 0.75 * np.cos(np.linspace(0, 10, 5))
    np.testing.assert_allclose(mt.vmap(mt.grad(t))(xs), want, rtol=1e-5)
    np.testing.assert_allclose(mt.grad(lambda v: mt.vmap(t)(v).sum())(xs), want, rtol=1e-5)


def test_closure_convert_with_pytrees_under_vmap_grad_and_jit():
    counts = []

    def outer(y, z):
        def f(p):
            return {"s": mnp.sin(p["a"]) * y, "t": p["b"] * z}

        cf, consts = mt.closure_convert(f, {"a": mnp.ones(2), "b": mnp.ones(2)})
        counts.append(len(consts))
        out = cf({"a": mnp.ones(2) * 2, "b": mnp.ones(2)}, *consts)
        return out["s"].sum() + out["t"].sum()

    three, four = mnp.array(3.0), mnp.array(4.0)
    np.testing.assert_allclose(outer(three, four), 6 * np.sin(2.0) + 8, rtol=1e-6)
    np.testing.assert_allclose(mt.grad(outer)(three, four), 2 * np.sin(2.0), rtol=1e-6)
    np.testing.assert_allclose(mt.vmap(outer)(mnp.ones(2), mnp.ones(2)),
                               [2 * np.sin(2.0) + 2] * 2, rtol=1e-6)
    np.testing.assert_allclose(mt.vmap(mt.grad(outer))(mnp.ones(2), mnp.ones(2)),
                               [2 * np.sin(2.0)] * 2, rtol=1e-6)
    np.testing.assert_allclose(mt.jit(outer)(three, four), 6 * np.sin(2.0) + 8, rtol=1e-6)
    mt.jit(outer)(mnp.array(3), mnp.array(4))
    # jax hoists: nothing eagerly or for batched constants; the differentiated value under
    # grad; every float value under jit; no int values
    assert counts == [0, 1, 0, 1, 2, 0]
