"""Worked examples with known numbers: a two-variable function and a 3-3-2 sigmoid
network, whose values and gradients are checked to 4 decimals and against a hand-written
NumPy backward pass; in float32 (the default) and in float64.
"""

import math

import numpy as np
import pytest

import mytorch as mt
import mytorch.numpy as mnp
from mytorch import lax


@pytest.fixture(params=["float32", "float64"])
def dtype(request):
    """Each example runs in the default float32 and, with x64, in float64."""
    if request.param == "float64":
        mt.config.update("enable_x64", True)
    try:
        yield np.dtype(request.param)
    finally:
        mt.config.update("enable_x64", False)


def arr(v, dtype):
    return mnp.asarray(np.asarray(v, dtype))


# ---- f(x1, x2) = (exp(x1) + x2) * (x2 + 1) -------------------------------------------------
def f_two(x1, x2):
    return (mnp.exp(x1) + x2) * (x2 + 1.0)


def test_two_variable_gradient(dtype):
    x1, x2 = arr(3.0, dtype), arr(2.0, dtype)
    g1, g2 = mt.grad(f_two, argnums=(0, 1))(x1, x2)
    assert g1.dtype == dtype and g2.dtype == dtype
    # df/dx1 = exp(x1) (x2 + 1) = 3 e^3; df/dx2 = (x2 + 1) + (exp(x1) + x2) = e^3 + 5
    assert round(float(g1), 4) == 60.2566
    assert round(float(g2), 4) == 25.0855
    v, (h1, h2) = mt.value_and_grad(f_two, argnums=(0, 1))(x1, x2)
    assert round(float(v), 4) == round((math.exp(3) + 2) * 3, 4)
    assert (float(h1), float(h2)) == (float(g1), float(g2))
    # forward mode gives the same numbers, one direction at a time
    _, t1 = mt.jvp(f_two, (x1, x2), (arr(1.0, dtype), arr(0.0, dtype)))
    _, t2 = mt.jvp(f_two, (x1, x2), (arr(0.0, dtype), arr(1.0, dtype)))
    assert round(float(t1), 4) == 60.2566 and round(float(t2), 4) == 25.0855
    # and a vector of points at once, through vjp
    xs1, xs2 = arr([3.0, 0.0], dtype), arr([2.0, -1.0], dtype)
    _, vjp_fn = mt.vjp(f_two, xs1, xs2)
    c1, c2 = vjp_fn(arr([1.0, 1.0], dtype))
    np.testing.assert_allclose(np.asarray(c1, np.float64), [3 * math.exp(3), 0.0], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(c2, np.float64), [math.exp(3) + 5, 0.0], rtol=1e-6)


# ---- the 3-3-2 sigmoid network -----------------------------------------------------------
X = [0.02, 0.04, 0.01]
W1 = [[0.25, 0.15, 0.30], [0.25, 0.20, 0.35], [0.10, 0.25, 0.15]]
W2 = [[0.40, 0.25], [0.35, 0.30], [0.01, 0.35]]
B1, B2 = 0.4, 0.7
TARGET = [0.9, 0.5]


def sigmoid(z):
    return 1.0 / (1.0 + mnp.exp(-z))


def forward(params, x):
    """h = sigmoid(W1^T x + b1), yhat = sigmoid(W2^T h + b2); b1, b2 0-d or per unit."""
    h = sigmoid(params["W1"].T @ x + params["b1"])
    return sigmoid(params["W2"].T @ h + params["b2"])


def loss(params, x, y):
    """1/2 sum (y - yhat)^2."""
    return 0.5 * mnp.sum((y - forward(params, x)) ** 2)


# the same network written other ways: lax.logistic, einsum, broadcasting + sum
def loss_logistic(params, x, y):
    h = lax.logistic(mnp.dot(x, params["W1"]) + params["b1"])
    yhat = lax.logistic(mnp.dot(h, params["W2"]) + params["b2"])
    return 0.5 * mnp.sum(mnp.square(y - yhat))


def loss_einsum(params, x, y):
    h = sigmoid(mnp.einsum("i,ij->j", x, params["W1"]) + params["b1"])
    yhat = sigmoid(mnp.einsum("j,jk->k", h, params["W2"]) + params["b2"])
    return 0.5 * mnp.sum((y - yhat) ** 2)


def loss_broadcast(params, x, y):
    h = sigmoid(mnp.sum(params["W1"] * x[:, None], axis=0) + params["b1"])
    yhat = sigmoid(mnp.sum(params["W2"] * h[:, None], axis=0) + params["b2"])
    return 0.5 * mnp.sum((y - yhat) ** 2)


def numpy_backward(W1, b1, W2, b2, x, y):
    """Hand-written backward pass in float64: (loss, dW1, db1, dW2, db2, dx), with the
    bias gradients per unit (sum them for a shared 0-d bias)."""
    W1, W2, x, y = (np.asarray(a, np.float64) for a in (W1, W2, x, y))
    def s(z):
        return 1 / (1 + np.exp(-z))

    h = s(W1.T @ x + b1)
    yhat = s(W2.T @ h + b2)
    L = 0.5 * np.sum((y - yhat) ** 2)
    d_out = (yhat - y) * yhat * (1 - yhat)  # dL/d(W2^T h + b2)
    dW2 = np.outer(h, d_out)
    d_hid = (W2 @ d_out) * h * (1 - h)  # dL/d(W1^T x + b1)
    dW1 = np.outer(x, d_hid)
    dx = W1 @ d_hid
    return L, dW1, d_hid, dW2, d_out, dx


def _params(dtype, shared_bias):
    if shared_bias:
        b1, b2 = arr(B1, dtype), arr(B2, dtype)
    else:
        b1, b2 = arr([B1] * 3, dtype), arr([B2] * 2, dtype)
    return {"W1": arr(W1, dtype), "b1": b1, "W2": arr(W2, dtype), "b2": b2}


def test_network_forward_values(dtype):
    p = _params(dtype, shared_bias=True)
    yhat = forward(p, arr(X, dtype))
    assert [round(float(v), 4) for v in np.asarray(yhat)] == [0.7609, 0.7760]
    assert round(float(loss(p, arr(X, dtype), arr(TARGET, dtype))), 4) == 0.0478


@pytest.mark.parametrize("shared_bias", [True, False])
@pytest.mark.parametrize("fn", [loss, loss_logistic, loss_einsum, loss_broadcast])
def test_network_gradient(dtype, shared_bias, fn):
    p = _params(dtype, shared_bias)
    x, y = arr(X, dtype), arr(TARGET, dtype)
    value, g = mt.value_and_grad(fn)(p, x, y)
    assert set(g) == {"W1", "b1", "W2", "b2"}
    for k in g:
        assert g[k].shape == p[k].shape and g[k].dtype == dtype
    assert round(float(value), 4) == 0.0478
    assert round(float(g["W2"][1, 0]), 4) == -0.0152
    L, dW1, db1, dW2, db2, dx = numpy_backward(W1, B1, W2, B2, X, TARGET)
    if shared_bias:  # one bias shared by every unit: the per-unit gradients add up
        db1, db2 = db1.sum(), db2.sum()
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    got = {k: np.asarray(v, np.float64) for k, v in g.items()}
    np.testing.assert_allclose(float(value), L, rtol=rtol)
    np.testing.assert_allclose(got["W1"], dW1, rtol=rtol, atol=1e-9)
    np.testing.assert_allclose(got["b1"], db1, rtol=rtol, atol=1e-9)
    np.testing.assert_allclose(got["W2"], dW2, rtol=rtol, atol=1e-9)
    np.testing.assert_allclose(got["b2"], db2, rtol=rtol, atol=1e-9)
    # with respect to the input as well (argnums), and both at once
    gx = mt.grad(fn, argnums=1)(p, x, y)
    np.testing.assert_allclose(np.asarray(gx, np.float64), dx, rtol=rtol, atol=1e-9)
    gp, gx2 = mt.grad(fn, argnums=(0, 1))(p, x, y)
    np.testing.assert_allclose(np.asarray(gx2, np.float64), dx, rtol=rtol, atol=1e-9)
    np.testing.assert_allclose(np.asarray(gp["W1"], np.float64), dW1, rtol=rtol, atol=1e-9)


def test_network_gradient_descent_step_lowers_the_loss(dtype):
    p = _params(dtype, shared_bias=True)
    x, y = arr(X, dtype), arr(TARGET, dtype)
    before = float(loss(p, x, y))
    for _ in range(3):
        g = mt.grad(loss)(p, x, y)
        p = {k: p[k] - 0.5 * g[k] for k in p}
    assert float(loss(p, x, y)) < before
    assert all(p[k].dtype == dtype for k in p)
