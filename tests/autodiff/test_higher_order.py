"""Higher-order derivatives: grad of grad up to 4th order against closed forms, Hessian-
vector products (forward-over-reverse, reverse-over-reverse, forward-over-forward) against
hessian @ v, jacfwd(jacrev) == hessian, third-derivative tensors against finite
differences, all through pytrees of parameters, and the awkward points at higher order.
"""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch import lax, tree_util
from tests.autodiff.fd import check_grads

_HC = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large]
SETTINGS = settings(max_examples=max(3, settings.default.max_examples // 3),
                    suppress_health_check=_HC)
g = mt.grad


def f64(v):
    return mnp.asarray(np.asarray(v, np.float64))


def np_(x):
    return np.asarray(x, np.float64)


def nth_grad(f, n):
    for _ in range(n):
        f = g(f)
    return f


# ---- grad of grad to 4th order against closed forms --------------------------------------
def _tanh_derivs(x):
    t = math.tanh(x)
    return [t, 1 - t * t, -2 * t * (1 - t * t), -2 + 8 * t * t - 6 * t ** 4,
            16 * t - 40 * t ** 3 + 24 * t ** 5]


def _logistic_derivs(x):
    s = 1 / (1 + math.exp(-x))
    d1 = s * (1 - s)
    return [s, d1, d1 * (1 - 2 * s), d1 * (1 - 6 * s + 6 * s * s),
            d1 * (1 - 2 * s) * (1 - 12 * s + 12 * s * s)]


CLOSED_FORMS = {
    # name: (function, [f, f', f'', f''', f''''] at x)
    "sin": (mnp.sin, lambda x: [math.sin(x), math.cos(x), -math.sin(x), -math.cos(x),
                                math.sin(x)]),
    "exp": (mnp.exp, lambda x: [math.exp(x)] * 5),
    "x**5": (lambda x: x ** 5, lambda x: [x ** 5, 5 * x ** 4, 20 * x ** 3, 60 * x * x,
                                         120 * x]),
    "pow(x, 5.0)": (lambda x: lax.pow(x, f64(5.0)),
                    lambda x: [x ** 5, 5 * x ** 4, 20 * x ** 3, 60 * x * x, 120 * x]),
    "tanh": (mnp.tanh, _tanh_derivs),
    "logistic": (lax.logistic, _logistic_derivs),
    "logistic(2x)": (lambda x: lax.logistic(2.0 * x),
                     lambda x: [d * 2 ** k for k, d in enumerate(_logistic_derivs(2 * x))]),
    "sin^2": (lambda x: mnp.sin(x) ** 2,
              lambda x: [math.sin(x) ** 2, math.sin(2 * x), 2 * math.cos(2 * x),
                         -4 * math.sin(2 * x), -8 * math.cos(2 * x)]),
    "exp(-x^2/2)": (lambda x: mnp.exp(-0.5 * x * x),
                    lambda x: [h * math.exp(-0.5 * x * x) for h in
                               (1, -x, x * x - 1, -x ** 3 + 3 * x, x ** 4 - 6 * x * x + 3)]),
    "log": (mnp.log, lambda x: [math.log(x), 1 / x, -1 / x ** 2, 2 / x ** 3, -6 / x ** 4]),
    "1/x": (lambda x: 1.0 / x, lambda x: [1 / x, -1 / x ** 2, 2 / x ** 3, -6 / x ** 4,
                                          24 / x ** 5]),
    "sqrt": (mnp.sqrt, lambda x: [x ** 0.5, 0.5 * x ** -0.5, -0.25 * x ** -1.5,
                                  0.375 * x ** -2.5, -0.9375 * x ** -3.5]),
}
POSITIVE = {"log", "1/x", "sqrt"}


@pytest.mark.parametrize("name", sorted(CLOSED_FORMS))
@SETTINGS
@given(x=st.floats(-2.0, 2.0))
def test_grad_of_grad_closed_forms(x64, name, x):
    fn, derivs = CLOSED_FORMS[name]
    if name in POSITIVE:
        x = abs(x) + 0.25
    want = derivs(x)
    for n in range(1, 5):
        got = float(nth_grad(fn, n)(f64(x)))
        assert got == pytest.approx(want[n], rel=1e-9, abs=1e-9), f"order {n}"


@pytest.mark.parametrize("name", ["sin", "tanh", "logistic(2x)", "exp(-x^2/2)"])
def test_forward_and_mixed_modes_agree_to_4th_order(x64, name):
    fn, derivs = CLOSED_FORMS[name]
    x = 0.37
    want = derivs(x)[4]

    def fwd(f):
        return lambda x: mt.jvp(f, (x,), (f64(1.0),))[1]

    def rev_vjp(f):
        return lambda x: mt.vjp(f, x)[1](f64(1.0))[0]

    for combo in ([fwd] * 4, [g] * 4, [fwd, g, fwd, g], [g, fwd, g, fwd],
                  [rev_vjp, fwd, rev_vjp, fwd], [mt.jacfwd, mt.jacrev, mt.jacfwd, mt.jacrev]):
        f = fn
        for d in combo:
            f = d(f)
        assert float(f(f64(x))) == pytest.approx(want, rel=1e-9)


def test_compositions_fd_order_3(x64):
    # logistic and tanh compositions, vector valued: FD at every order up to 3
    x = np.array([-1.3, -0.2, 0.4, 1.7])
    check_grads(lambda v: lax.logistic(mnp.sin(v) * 3.0) * mnp.tanh(v), (x,), order=3)
    check_grads(lambda v: mnp.tanh(lax.logistic(v) ** 2 - v), (x,), order=3)
    check_grads(lambda v: mnp.exp(mnp.tanh(v)) / (1.0 + v * v), (x,), order=3)


# ---- Hessian-vector products ------------------------------------------------------------
A = np.array([[0.5, -1.0, 0.25, 0.3], [2.0, 0.1, -0.3, 0.7], [0.2, 0.4, 0.6, -0.8]])


def scalar_fn(x):
    return mnp.sum(mnp.tanh(f64(A) @ x) ** 2) + mnp.sum(x ** 4) * 0.1 + mnp.prod(mnp.sin(x))


def _hvps(f, x, v):
    """H v by forward-over-reverse, reverse-over-reverse, reverse-over-forward and
    forward-over-forward (one entry of it per basis direction)."""
    fwd_rev = mt.jvp(g(f), (x,), (v,))[1]
    rev_rev = g(lambda y: mnp.vdot(g(f)(y), v))(x)
    rev_fwd = g(lambda y: mt.jvp(f, (y,), (v,))[1])(x)
    n = x.shape[0]
    fwd_fwd = []
    for i in range(n):
        e = f64(np.eye(n)[i])
        fwd_fwd.append(mt.jvp(lambda y: mt.jvp(f, (y,), (v,))[1], (x,), (e,))[1])
    return [fwd_rev, rev_rev, rev_fwd, mnp.stack(fwd_fwd)]


@SETTINGS
@given(seed=st.integers(0, 2 ** 16))
def test_hessian_vector_products(x64, seed):
    rng = np.random.default_rng(seed)
    x, v = f64(rng.uniform(-1, 1, 4)), f64(rng.standard_normal(4))
    H = np_(mt.hessian(scalar_fn)(x))
    np.testing.assert_allclose(H, H.T, rtol=1e-12, atol=1e-13)
    for hv in _hvps(scalar_fn, x, v):
        np.testing.assert_allclose(np_(hv), H @ np_(v), rtol=1e-10, atol=1e-12)
    # and the Hessian against finite differences of the gradient
    eps = 1e-6
    fd = np.stack([(np_(g(scalar_fn)(x + f64(eps * e))) - np_(g(scalar_fn)(x - f64(eps * e))))
                   / (2 * eps) for e in np.eye(4)], axis=1)
    np.testing.assert_allclose(H, fd, rtol=1e-6, atol=1e-8)


def test_jacfwd_of_jacrev_is_the_hessian(x64):
    x = f64([0.3, -0.7, 1.2, 0.1])
    H = np_(mt.hessian(scalar_fn)(x))
    for outer in (mt.jacfwd, mt.jacrev):
        for inner in (mt.jacfwd, mt.jacrev):
            np.testing.assert_allclose(np_(outer(inner(scalar_fn))(x)), H, rtol=1e-11,
                                       atol=1e-12)
    np.testing.assert_allclose(np_(mt.jacfwd(g(scalar_fn))(x)), H, rtol=1e-11, atol=1e-12)


def test_third_derivative_tensor(x64):
    x = f64([0.3, -0.7, 1.2, 0.1])
    T = np_(mt.jacfwd(mt.hessian(scalar_fn))(x))
    assert T.shape == (4, 4, 4)
    for perm in [(1, 0, 2), (0, 2, 1), (2, 1, 0), (1, 2, 0)]:  # symmetric in every index
        np.testing.assert_allclose(T, T.transpose(perm), rtol=1e-10, atol=1e-11)
    eps = 1e-5
    H = mt.hessian(scalar_fn)
    fd = np.stack([(np_(H(x + f64(eps * e))) - np_(H(x - f64(eps * e)))) / (2 * eps)
                   for e in np.eye(4)], axis=-1)
    np.testing.assert_allclose(T, fd, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(np_(mt.jacrev(mt.jacrev(mt.jacrev(scalar_fn)))(x)), T,
                               rtol=1e-10, atol=1e-11)


# ---- the same through pytrees of parameters ---------------------------------------------
def mlp_loss(params, x):
    h = mnp.tanh(x @ params["w1"] + params["b1"])
    out = lax.logistic(h @ params["w2"] + params["b2"]["v"])
    return mnp.sum((out - 0.5) ** 2) + 0.01 * mnp.sum(params["w1"] ** 2)


def _params(rng):
    return {"w1": f64(rng.standard_normal((3, 4)) * 0.5), "b1": f64(rng.standard_normal(4)),
            "w2": f64(rng.standard_normal((4, 2)) * 0.5),
            "b2": {"v": f64(rng.standard_normal(2))}}


def _flat(tree):
    return np.concatenate([np_(x).ravel() for x in tree_util.tree_leaves(tree)])


def _hessian_matrix(H_tree, params):
    """The dict-of-dicts Hessian assembled as one (n, n) matrix (leaves in tree order)."""
    leaves, treedef = tree_util.tree_flatten(params)
    sizes = [int(np.size(np_(x))) for x in leaves]
    rows = []
    for i, row_tree in enumerate(tree_util.flatten_up_to(treedef, H_tree)):
        blocks = tree_util.flatten_up_to(treedef, row_tree)
        rows.append(np.concatenate([np_(b).reshape(sizes[i], sizes[j])
                                    for j, b in enumerate(blocks)], axis=1))
    return np.concatenate(rows, axis=0)


@SETTINGS
@given(seed=st.integers(0, 2 ** 16))
def test_pytree_hessian_and_hvp(x64, seed):
    rng = np.random.default_rng(seed)
    params, x = _params(rng), f64(rng.standard_normal((5, 3)))
    v = tree_util.tree_map(lambda p: f64(rng.standard_normal(p.shape)), params)
    H_tree = mt.hessian(mlp_loss)(params, x)
    assert H_tree["w1"]["w2"].shape == (3, 4, 4, 2)
    assert H_tree["b2"]["v"]["b1"].shape == (2, 4)
    H = _hessian_matrix(H_tree, params)
    n = _flat(params).size
    assert H.shape == (n, n)
    np.testing.assert_allclose(H, H.T, rtol=1e-10, atol=1e-12)
    # forward-over-reverse HVP with a dict tangent: a dict like params
    hv = mt.jvp(lambda p: g(mlp_loss)(p, x), (params,), (v,))[1]
    assert tree_util.tree_structure(hv) == tree_util.tree_structure(params)
    np.testing.assert_allclose(_flat(hv), H @ _flat(v), rtol=1e-9, atol=1e-11)
    # reverse-over-reverse: grad of <grad, v>
    def gv(p):
        gp = g(mlp_loss)(p, x)
        return sum(mnp.vdot(a, b) for a, b in zip(tree_util.tree_leaves(gp),
                                                  tree_util.tree_leaves(v)))
    np.testing.assert_allclose(_flat(g(gv)(params)), H @ _flat(v), rtol=1e-9, atol=1e-11)
    # jacfwd(jacrev) on the dict == hessian
    H2 = _hessian_matrix(mt.jacfwd(mt.jacrev(mlp_loss))(params, x), params)
    np.testing.assert_allclose(H2, H, rtol=1e-11, atol=1e-12)


def test_pytree_hessian_against_fd(x64):
    rng = np.random.default_rng(3)
    params, x = _params(rng), f64(rng.standard_normal((5, 3)))
    H = _hessian_matrix(mt.hessian(mlp_loss)(params, x), params)
    leaves, treedef = tree_util.tree_flatten(params)
    shapes = [np_(p).shape for p in leaves]
    flat0 = _flat(params)

    def unflat(vec):
        out, k = [], 0
        for s in shapes:
            size = int(np.prod(s))
            out.append(f64(vec[k:k + size].reshape(s)))
            k += size
        return tree_util.tree_unflatten(treedef, out)

    eps = 1e-6
    cols = []
    for i in range(flat0.size):
        e = np.zeros(flat0.size)
        e[i] = eps
        cols.append((_flat(g(mlp_loss)(unflat(flat0 + e), x))
                     - _flat(g(mlp_loss)(unflat(flat0 - e), x))) / (2 * eps))
    np.testing.assert_allclose(H, np.stack(cols, axis=1), rtol=1e-6, atol=1e-8)


# ---- awkward points at higher order ------------------------------------------------------
ZERO = 0.0


def test_abs_at_zero_higher_order(x64):
    # JAX's convention: d|x| = select(x >= 0, 1, -1), so 1 at 0 and 0 at higher orders;
    # |x|^3 then takes its derivatives from the right: 0, 0, 6
    assert [float(nth_grad(lax.abs, n)(f64(ZERO))) for n in (1, 2, 3)] == [1.0, 0.0, 0.0]
    assert [float(nth_grad(lambda x: lax.abs(x) ** 3, n)(f64(ZERO))) for n in (1, 2, 3)] == [
        0.0, 0.0, 6.0]


def test_max_tie_higher_order(x64):
    # max(x, x) = x: the halves add to 1, and the second derivative is 0
    assert float(g(lambda x: lax.max(x, x))(f64(1.0))) == 1.0
    assert float(g(g(lambda x: lax.max(x, x)))(f64(1.0))) == 0.0
    assert float(g(g(lambda x: lax.max(x, 0.0) * x))(f64(ZERO))) == 1.0  # 2 * 1/2


def test_sqrt_at_zero_higher_order(x64):
    # +inf, then -inf, then +inf (the limits of the closed forms from the right)
    assert [float(nth_grad(lax.sqrt, n)(f64(ZERO))) for n in (1, 2, 3)] == [
        math.inf, -math.inf, math.inf]


@pytest.mark.parametrize("form", ["integer_pow", "mnp.power", "lax.pow"])
def test_zero_exponent_higher_order(x64, form):
    fn = {"integer_pow": lambda x: lax.integer_pow(x, 0),
          "mnp.power": lambda x: mnp.power(x, 0),
          "lax.pow": lambda x: lax.pow(x, f64(0.0))}[form]
    for n in (1, 2, 3):
        assert float(nth_grad(fn, n)(f64(2.0))) == 0.0
    if form != "lax.pow":  # x ** 0.0 at x == 0 is singular beyond first order (x ** -1)
        for n in (1, 2, 3):
            assert float(nth_grad(fn, n)(f64(ZERO))) == 0.0


def test_pow_in_y_at_zero_base_higher_order(x64):
    # d/dy 0 ** y = log(0) * 0 ** y, taken as 0 at every order
    for n in (1, 2, 3):
        assert float(nth_grad(lambda y: lax.pow(f64(ZERO), y), n)(f64(2.0))) == 0.0


@pytest.mark.parametrize("form", ["x ** 5", "lax.pow(x, 5.0)"])
def test_fifth_power_at_zero(x64, form):
    fn = (lambda x: x ** 5) if form == "x ** 5" else (lambda x: lax.pow(x, f64(5.0)))
    assert [float(nth_grad(fn, n)(f64(ZERO))) for n in range(1, 7)] == [0, 0, 0, 0, 120, 0]


def test_stop_gradient_higher_order(x64):
    # stop_gradient(x) * x^2 differentiates as c * x^2 with c = x: 2 c x, 2 c, 0
    assert [float(nth_grad(lambda x: lax.stop_gradient(x) * x ** 2, n)(f64(1.5)))
            for n in (1, 2, 3)] == [4.5, 3.0, 0.0]
    assert float(nth_grad(lax.stop_gradient, 2)(f64(1.5))) == 0.0


def test_log1p_expm1_at_zero(x64):
    # the Taylor coefficients times n!
    assert [float(nth_grad(lax.log1p, n)(f64(ZERO))) for n in range(1, 5)] == [1, -1, 2, -6]
    assert [float(nth_grad(lax.expm1, n)(f64(ZERO))) for n in range(1, 5)] == [1, 1, 1, 1]


def test_saturated_logistic_and_tanh(x64):
    # finite and tiny, never NaN
    for x in (-40.0, 40.0):
        for fn in (lax.logistic, lax.tanh):
            vals = [float(nth_grad(fn, n)(f64(x))) for n in (1, 2, 3)]
            assert all(math.isfinite(v) and abs(v) < 1e-16 for v in vals), vals


def test_sinc_at_zero_higher_order(x64):
    # JAX's _sinc_maclaurin rule: the 2nd derivative at 0 is -pi^2/3, the 4th pi^4/5
    np.testing.assert_allclose(float(nth_grad(mnp.sinc, 2)(f64(ZERO))), -math.pi ** 2 / 3,
                               rtol=1e-10)
    np.testing.assert_allclose(float(nth_grad(mnp.sinc, 4)(f64(ZERO))), math.pi ** 4 / 5,
                               rtol=1e-10)
