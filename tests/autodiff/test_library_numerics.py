"""Library functions whose derivatives need care: safe norms at 0, stable logsumexp,
log_softmax and softplus (logaddexp) gradients at extreme values."""

import numpy as np

import mytorch as mt
import mytorch.numpy as mnp
from mytorch.scipy.special import log_softmax, logsumexp
from tests.autodiff.fd import check_grads


def test_norm_gradient_at_zero_is_zero_not_nan():
    for ord_, shape in [(None, (3,)), (2, (3,)), ("fro", (2, 2)), (None, (2, 2))]:
        g = mt.grad(lambda x: mnp.linalg.norm(x, ord_))(mnp.zeros(shape))
        np.testing.assert_array_equal(np.asarray(g), np.zeros(shape))


def test_norm_derivatives_away_from_zero(x64):
    check_grads(lambda x: mnp.linalg.norm(x), (np.array([3.0, -4.0, 1.0]),), order=3)
    check_grads(lambda x: mnp.linalg.norm(x, axis=1), (np.array([[3.0, 4.0], [1.0, -2.0]]),),
                order=2)


def test_logsumexp_gradient_is_softmax_at_huge_values():
    x = np.array([1000.0, 1000.0, -np.inf, 990.0], np.float32)
    g = np.asarray(mt.grad(lambda x: logsumexp(x))(mnp.asarray(x)))
    e = np.exp(x.astype(np.float64) - 1000.0)
    np.testing.assert_allclose(g, e / e.sum(), rtol=1e-6)
    assert np.isfinite(g).all()


def test_log_softmax_and_softplus_gradients_are_finite_and_right(x64):
    x = mnp.asarray(np.array([800.0, -800.0, 0.0]))
    g = np.asarray(mt.grad(lambda x: log_softmax(x, axis=-1)[1])(x))
    np.testing.assert_allclose(g, [-1.0, 1.0, 0.0], atol=1e-12)
    softplus = lambda x: mnp.logaddexp(x, 0.0).sum()
    np.testing.assert_allclose(mt.grad(softplus)(x), [1.0, 0.0, 0.5], atol=1e-12)
    check_grads(lambda x: log_softmax(x, axis=-1), (np.array([0.3, -1.0, 2.0]),), order=2)
