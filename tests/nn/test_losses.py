"""mt.nn's losses (Optax's): values against NumPy and against Optax 0.2.8's numbers written
literally, derivatives against central differences and Optax's, jit == eager, vmap == loop,
dtypes, and the errors users see."""

import math

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from tests.autodiff.fd import check_grads
from tests.strategies import arrays, assert_close, shapes

nan, inf = math.nan, math.inf
nn = mt.nn

L = np.array([[1, 2, 3], [-1e4, 0, 1e4], [0.5, -0.5, 0], [-inf, 0, 1]], np.float32)
P = np.array([[0.2, 0.3, 0.5], [0, 0, 1], [1, 0, 0], [0, 0.5, 0.5]], np.float32)
INT_LABELS = np.array([2, 0, 1, 1])


def _grad_sum(f, *args, argnum=0):
    return np.asarray(mt.grad(lambda *a: mnp.sum(f(*a)), argnums=argnum)(*args))


def _close(got, want, rtol=1e-5, atol=1e-6):
    with np.errstate(under="ignore"):
        np.testing.assert_allclose(np.asarray(got), np.float32(want), rtol=rtol,
                                   atol=atol)


def _np_log_softmax(x, axis=-1):
    x = np.asarray(x, np.float64)
    m = np.max(x, axis=axis, keepdims=True)
    return x - m - np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))


# ---- cross entropies: Optax 0.2.8's numbers ------------------------------------------------
def test_softmax_cross_entropy_matches_optax():
    _close(nn.softmax_cross_entropy(L, P), [1.1076059, -0, 0.68026966, nan])
    _close(_grad_sum(nn.softmax_cross_entropy, L, P),
           [[-0.10996943, -0.05527154, 0.16524094], [0, 0, 0],
            [-0.4935196, 0.18632373, 0.3071959], [0, -0.23105857, 0.2310586]])


def test_integer_label_cross_entropy_matches_optax():
    _close(nn.softmax_cross_entropy_with_integer_labels(L, INT_LABELS),
           [0.40760589, 20000, 1.6802697, 1.3132616])
    _close(_grad_sum(nn.softmax_cross_entropy_with_integer_labels, L, INT_LABELS),
           [[0.090030573, 0.24472848, -0.33475906], [-1, 0, 1],
            [0.5064804, -0.81367624, 0.3071959], [0, -0.7310586, 0.7310586]])
    # out of range, as Optax: negative labels count from the end, others give NaN
    rows = np.repeat(L[:1], 4, axis=0)
    _close(nn.softmax_cross_entropy_with_integer_labels(rows, np.array([3, -1, -3, -4])),
           [nan, 0.40760589, 2.4076059, nan])


def test_safe_softmax_cross_entropy_matches_optax():
    _close(nn.safe_softmax_cross_entropy(L, P), [1.1076059, -0, 0.68026966, 0.81326163])
    _close(_grad_sum(nn.safe_softmax_cross_entropy, L, P),
           [[-0.10996943, -0.055271536, 0.16524094], [0, 0, 0],
            [-0.4935196, 0.18632373, 0.3071959], [0, -0.23105857, 0.2310586]])
    # with respect to the labels: d/dw (w * log_softmax) = log_softmax, -inf included
    g = _grad_sum(nn.safe_softmax_cross_entropy, L, P, argnum=1)
    assert g[3, 0] == inf
    np.testing.assert_allclose(g[0], -_np_log_softmax(L[0]), rtol=1e-6)


def test_poly_loss_matches_optax():
    _close(nn.poly_loss_cross_entropy(L[[0, 2]], P[[0, 2]], epsilon=1.5),
           [1.9715383, 1.4205492])


X = np.array([-1e4, -30, -1, 0, 0.5, 30, 1e4], np.float32)
Y = np.array([1, 0, 1, 0.5, 1, 1, 0], np.float32)


def test_sigmoid_losses_match_optax():
    _close(nn.sigmoid_binary_cross_entropy(X, Y),
           [1e4, 9.3576229e-14, 1.3132617, 0.69314718, 0.47407699, 9.3576229e-14, 1e4])
    _close(_grad_sum(nn.sigmoid_binary_cross_entropy, X, Y),
           [-1, 9.3576229e-14, -0.73105854, 0, -0.37754068, -9.3576229e-14, 1])
    _close(nn.sigmoid_focal_loss(X, Y), [1e4, 0, 0.70186836, 0.1732868, 0.067573488, 0, 1e4])
    _close(nn.sigmoid_focal_loss(X, Y, alpha=0.25, gamma=1.5),
           [2500, 2.0089777e-33, 0.20521994, 0.12253226, 0.027493782, 6.6965925e-34, 7500])
    x5 = np.array([-2, -1, 0, 0.5, 2], np.float32)
    y5 = np.array([1, 0, 1, 0.5, 0], np.float32)
    _close(_grad_sum(lambda x: nn.sigmoid_focal_loss(x, y5, alpha=0.25), x5),
           [-0.26917842, 0.039435841, -0.074571699, 0.015307417, 0.80753517])


E = np.array([-1e4, -3, -1, -0.5, 0, 0.5, 1, 3, 1e4], np.float32)


def test_regression_losses_match_optax():
    _close(nn.huber_loss(E, delta=1.0), [9999.5, 2.5, 0.5, 0.125, 0, 0.125, 0.5, 2.5, 9999.5])
    _close(_grad_sum(nn.huber_loss, E), [-1, -1, -1, -0.5, 0, 0.5, 1, 1, 1])
    _close(nn.log_cosh(E), [9999.3066, 2.3093286, 0.43378079, 0.12011451, 0, 0.12011451,
                            0.43378079, 2.3093286, 9999.3066])
    _close(_grad_sum(nn.log_cosh, E), [-1, -0.99505466, -0.76159418, -0.4621172, 0, 0.4621172,
                                       0.76159418, 0.99505466, 1])
    s = np.sign(E + 0.25)
    _close(nn.hinge_loss(E, s), [0, 0, 0, 0.5, 1, 0.5, 0, 0, 0])
    # at the hinge (E = -1, s = -1) the derivative is 1/2, as JAX's maximum at a tie
    _close(_grad_sum(nn.hinge_loss, E, s), [0, 0, 0.5, 1, -1, -1, -0.5, 0, 0])


def test_similarity_and_divergences_match_optax():
    a = np.array([[1, 2, 3], [0, 0, 0], [1, 0, 0]], np.float32)
    b = np.array([[1, 2, 2], [1, 1, 1], [-1, 0, 0]], np.float32)
    _close(nn.cosine_similarity(a, b), [0.97995788, nan, -1])
    _close(nn.cosine_similarity(a, b, epsilon=0.1), [0.97995788, 0, -1])
    _close(nn.cosine_distance(a, b, epsilon=0.1), [0.020042121, 1, 2])
    lp = np.log(np.array([[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]], np.float32))
    t = np.array([[0, 0.5, 0.5], [0.2, 0.2, 0.6]], np.float32)
    _close(nn.kl_divergence(lp, t), [0.25541282, 0.10464963])
    with np.errstate(divide="ignore"):
        log_t = np.log(t)
    _close(nn.kl_divergence_with_log_targets(lp, log_t), [nan, 0.1046496])
    _close(nn.convex_kl_divergence(lp, t), [0.25541282, 0.1046496])
    _close(nn.generalized_kl_divergence(lp, t), [0.25541282, 0.1046496])
    # d/dt: log t + 1 - log p; at t == 0 Optax gives NaN, here the 0 log 0 = 0 branch
    # is constant, so the derivative there is -log p
    _close(_grad_sum(nn.kl_divergence, lp, t, argnum=1),
           [[-lp[0, 0], 1.5108256, 1], [1.6931472, 1.6931472, 0.71231794]])
    _close(nn.smooth_labels(np.eye(3, dtype=np.float32), 0.1),
           np.where(np.eye(3), 0.93333334, 0.033333335))


# ---- against NumPy over shapes and axes -----------------------------------------------------
@st.composite
def _logits_and_axis(draw):
    shape = draw(shapes(min_dims=1, max_dims=3, min_side=1))
    x = draw(arrays(np.float32, shape, min_value=-20, max_value=20))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    return x, axis


@settings(max_examples=25, deadline=None)
@given(xa=_logits_and_axis(), data=st.data())
def test_cross_entropies_match_numpy(xa, data):
    x, axis = xa
    n = x.shape[axis]
    labels = data.draw(arrays(np.int32, x.shape[:axis % x.ndim] + x.shape[axis % x.ndim + 1:],
                              min_value=0, max_value=n - 1))
    onehot = np.moveaxis(np.eye(n, dtype=np.float32)[labels], -1, axis)
    lsm = _np_log_softmax(x, axis)
    want = -np.sum(onehot * lsm, axis=axis)
    assert_close(nn.softmax_cross_entropy(x, onehot, axis=axis), want, dtype=np.float32,
                 rtol=1e-5, atol=1e-5)
    assert_close(nn.softmax_cross_entropy_with_integer_labels(x, labels, axis=axis), want,
                 dtype=np.float32, rtol=1e-5, atol=1e-5)
    smooth = nn.smooth_labels(onehot, 0.2, axis=axis)
    assert_close(smooth, 0.8 * onehot + 0.2 / n, rtol=1e-6)
    p = np.exp(lsm)
    want_poly = want + 2.0 * np.sum(onehot * (1 - p), axis=axis)
    assert_close(nn.poly_loss_cross_entropy(x, onehot, axis=axis), want_poly, rtol=1e-5,
                 atol=1e-5)


@settings(max_examples=20, deadline=None)
@given(shape=shapes(max_dims=3), data=st.data())
def test_elementwise_losses_match_numpy(shape, data):
    pred = data.draw(arrays(np.float32, shape, min_value=-40, max_value=40))
    targ = data.draw(arrays(np.float32, shape, min_value=-40, max_value=40))
    lab = data.draw(arrays(np.float32, shape, min_value=0, max_value=1))
    p64, t64, y64 = (v.astype(np.float64) for v in (pred, targ, lab))
    err = p64 - t64
    assert_close(nn.l2_loss(pred, targ), 0.5 * err**2, dtype=np.float32, rtol=1e-5)
    assert_close(nn.squared_error(pred, targ), err**2, dtype=np.float32, rtol=1e-5)
    assert_close(nn.l2_loss(pred), 0.5 * p64**2, rtol=1e-5)
    huber = np.where(np.abs(err) <= 2.0, 0.5 * err**2, 2.0 * (np.abs(err) - 1.0))
    assert_close(nn.huber_loss(pred, targ, delta=2.0), huber, rtol=1e-5, atol=1e-5)
    assert_close(nn.log_cosh(pred, targ), np.logaddexp(err, -err) - np.log(2), rtol=1e-5,
                 atol=1e-5)
    bce = -y64 * -np.logaddexp(0, -p64) - (1 - y64) * -np.logaddexp(0, p64)
    assert_close(nn.sigmoid_binary_cross_entropy(pred, lab), bce, rtol=1e-5, atol=1e-5)
    sig = 1 / (1 + np.exp(-p64))
    one_minus_pt = (1 - y64) * sig + y64 * (1 - sig)  # the focal weight's base, mixed by y
    assert_close(nn.sigmoid_focal_loss(pred, lab, gamma=2.0), bce * one_minus_pt**2,
                 rtol=1e-4, atol=1e-5)
    assert_close(nn.hinge_loss(pred, np.sign(targ)), np.maximum(0, 1 - p64 * np.sign(t64)),
                 rtol=1e-6)


@settings(max_examples=20, deadline=None)
@given(xa=_logits_and_axis(), data=st.data())
def test_similarity_and_kl_match_numpy(xa, data):
    a, axis = xa
    b = data.draw(arrays(np.float32, a.shape, min_value=-20, max_value=20))
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    na = np.sqrt(np.maximum(np.sum(a64**2, axis=axis, keepdims=True), 1e-3))
    nb = np.sqrt(np.maximum(np.sum(b64**2, axis=axis, keepdims=True), 1e-3))
    want = np.sum(a64 / na * b64 / nb, axis=axis)
    assert_close(nn.cosine_similarity(a, b, epsilon=1e-3, axis=axis), want, rtol=1e-4,
                 atol=1e-5)
    assert_close(nn.cosine_distance(a, b, epsilon=1e-3, axis=axis), 1 - want, rtol=1e-4,
                 atol=1e-5)
    lp, lt = _np_log_softmax(a, axis), _np_log_softmax(b, axis)
    t = np.exp(lt)
    kl = np.sum(t * (lt - lp), axis=axis)
    assert_close(nn.kl_divergence(lp.astype(np.float32), t.astype(np.float32), axis=axis), kl,
                 rtol=1e-4, atol=1e-5)
    assert_close(nn.kl_divergence_with_log_targets(lp.astype(np.float32),
                                                   lt.astype(np.float32), axis=axis), kl,
                 rtol=1e-4, atol=1e-5)


def test_axes_tuples_and_where_as_optax():
    x = np.random.default_rng(0).normal(size=(2, 3, 4)).astype(np.float32)
    flat = x.reshape(2, 12)
    labels = np.array([5, 11])
    assert_close(nn.softmax_cross_entropy_with_integer_labels(x, labels, axis=(1, 2)),
                 -_np_log_softmax(flat)[np.arange(2), labels], rtol=1e-5)
    w = np.array([[True, True, False, True], [False, False, False, False]])
    got = nn.softmax_cross_entropy_with_integer_labels(x[0, :2], np.array([1, 2]), where=w)
    masked = np.where(w[0], x[0, 0], -np.inf)
    want0 = -(masked[1] - np.log(np.sum(np.exp(masked[w[0]].astype(np.float64)))))
    assert_close(got, [want0, 0.0], rtol=1e-5)  # a fully masked example: loss 0, as Optax
    p = np.full((2, 4), 0.25, np.float32)
    got = nn.softmax_cross_entropy(x[0, :2], p, where=w[:1])
    assert_close(got[0], -np.sum(np.where(w[0], p[0] * _np_log_softmax(masked), 0)),
                 rtol=1e-5)
    sm = nn.smooth_labels(np.eye(4, dtype=np.float32)[:2], 0.4, where=w[:1])
    assert_close(sm, 0.6 * np.eye(4)[:2] + 0.4 / 3, rtol=1e-6)


# ---- derivatives, transformations, dtypes ---------------------------------------------------
def _rng_inputs(seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(3, 5)), rng.dirichlet(np.ones(5), size=3), rng.random((3, 5))


LOSSES = {
    "softmax_cross_entropy": lambda x, p, y: nn.softmax_cross_entropy(x, p),
    "softmax_cross_entropy_with_integer_labels":
        lambda x, p, y: nn.softmax_cross_entropy_with_integer_labels(x, np.array([0, 4, 2])),
    "safe_softmax_cross_entropy": lambda x, p, y: nn.safe_softmax_cross_entropy(x, p),
    "poly_loss_cross_entropy": lambda x, p, y: nn.poly_loss_cross_entropy(x, p, epsilon=0.7),
    "sigmoid_binary_cross_entropy": lambda x, p, y: nn.sigmoid_binary_cross_entropy(x, y),
    "sigmoid_focal_loss": lambda x, p, y: nn.sigmoid_focal_loss(x, y, alpha=0.3, gamma=2.5),
    "l2_loss": lambda x, p, y: nn.l2_loss(x, p),
    "squared_error": lambda x, p, y: nn.squared_error(x, y),
    "huber_loss": lambda x, p, y: nn.huber_loss(x, y, delta=0.3),
    "log_cosh": lambda x, p, y: nn.log_cosh(x, y),
    "cosine_similarity": lambda x, p, y: nn.cosine_similarity(x, p),
    "cosine_distance": lambda x, p, y: nn.cosine_distance(x, p, epsilon=1e-6),
    "kl_divergence": lambda x, p, y: nn.kl_divergence(x, p),
    "kl_divergence_with_log_targets": lambda x, p, y: nn.kl_divergence_with_log_targets(x, y),
    "convex_kl_divergence": lambda x, p, y: nn.convex_kl_divergence(x, p),
    "hinge_loss": lambda x, p, y: nn.hinge_loss(x, y * 2),
}
SMOOTH = set(LOSSES) - {"huber_loss", "hinge_loss"}


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_grads_match_finite_differences(name, x64):
    x, p, y = _rng_inputs()
    if name == "huber_loss":  # away from the switch at |x - y| = delta
        x = np.where(np.abs(np.abs(x - y) - 0.3) < 0.05, x + 0.1, x)
    if name == "hinge_loss":
        x = np.where(np.abs(1 - x * y * 2) < 0.05, x + 0.1, x)
    f = LOSSES[name]
    check_grads(lambda v: f(v, p, y), (x,), order=2 if name in SMOOTH else 1)
    if name in ("softmax_cross_entropy", "safe_softmax_cross_entropy", "kl_divergence",
                "sigmoid_binary_cross_entropy", "l2_loss"):  # and in the targets
        g = {"sigmoid_binary_cross_entropy": lambda t: nn.sigmoid_binary_cross_entropy(x, t),
             "l2_loss": lambda t: nn.l2_loss(x, t)}.get(name, lambda t: f(x, t, y))
        check_grads(g, (p,), order=1)


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_jit_equals_eager_and_vmap_equals_loop(name):
    x, p, y = (v.astype(np.float32) for v in _rng_inputs(1))
    f = LOSSES[name]
    eager = np.asarray(f(x, p, y))
    assert eager.shape == ((3,) if eager.ndim == 1 else (3, 5))
    np.testing.assert_allclose(np.asarray(mt.jit(lambda a, b, c: f(a, b, c))(x, p, y)), eager,
                               rtol=1e-6, atol=1e-7)
    if name == "softmax_cross_entropy_with_integer_labels":
        return  # its labels are fixed for three rows; batched below
    g = mt.vmap(lambda a, b, c: f(a[None], b[None], c[None])[0])
    np.testing.assert_allclose(np.asarray(g(x, p, y)), eager, rtol=1e-6, atol=1e-7)


def test_integer_labels_batch_under_vmap():
    x = np.random.default_rng(2).normal(size=(4, 3, 6)).astype(np.float32)
    labels = np.array([[0, 5, 2], [1, 1, 1], [5, 4, 3], [0, 0, 0]])
    f = nn.softmax_cross_entropy_with_integer_labels
    loop = np.stack([np.asarray(f(x[i], labels[i])) for i in range(4)])
    np.testing.assert_allclose(np.asarray(mt.vmap(f)(x, labels)), loop, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(mt.vmap(f, in_axes=(1, 1), out_axes=1)(x, labels)),
                               loop, rtol=1e-6)


def test_dtypes_follow_the_logits():
    bf = np.dtype(ml_dtypes.bfloat16)
    x = np.array([[0.5, -1.0, 2.0]], bf)
    assert nn.softmax_cross_entropy(x, np.array([[0, 1, 0]], np.float32)).dtype == np.float32
    assert nn.softmax_cross_entropy_with_integer_labels(x, np.array([1])).dtype == bf
    assert nn.sigmoid_binary_cross_entropy(x, np.array([[0, 1, 0]])).dtype == bf
    assert nn.l2_loss(x).dtype == bf and nn.huber_loss(x).dtype == bf
    assert nn.l2_loss(np.ones(3, np.float16)).dtype == np.float16
    assert_close(nn.softmax_cross_entropy_with_integer_labels(x, np.array([1])),
                 -_np_log_softmax(x.astype(np.float32))[:, 1], rtol=2e-2)


# ---- errors -------------------------------------------------------------------------------
def test_errors_name_the_loss_and_both_shapes():
    x = np.zeros((4, 3), np.float32)
    with pytest.raises(ValueError, match=r"softmax_cross_entropy: `logits` f32\[4,3\] and "
                                         r"`labels` f32\[4,5\] must have the same shape at "
                                         r"test_losses.py:\d+"):
        nn.softmax_cross_entropy(x, np.zeros((4, 5), np.float32))
    with pytest.raises(ValueError, match=r"softmax_cross_entropy_with_integer_labels: `labels` "
                                         r"i32\[3\] must have the shape of `logits` f32\[4,3\]"):
        mt.jit(nn.softmax_cross_entropy_with_integer_labels)(x, np.zeros(3, np.int32))
    with pytest.raises(TypeError, match=r"`labels` must have an integer dtype, got f32\[4\]"):
        nn.softmax_cross_entropy_with_integer_labels(x, np.zeros(4, np.float32))
    with pytest.raises(TypeError, match=r"sigmoid_binary_cross_entropy: `logits` must have a "
                                        r"floating dtype, got i32\[4\]"):
        nn.sigmoid_binary_cross_entropy(np.zeros(4, np.int32), np.zeros(4))
    with pytest.raises(ValueError, match=r"l2_loss: `predictions` f32\[4,3\] and `targets` "
                                         r"f32\[3\] must have the same shape"):
        nn.l2_loss(x, np.zeros(3, np.float32))
    with pytest.raises(ValueError, match=r"cosine_similarity: `predictions` f32\[4,3\] and "
                                         r"`targets` f32\[2\] do not broadcast"):
        nn.cosine_similarity(x, np.zeros(2, np.float32))
    with pytest.raises(ValueError, match=r"axis 2 is out of bounds for f32\[4,3\]"):
        nn.softmax_cross_entropy_with_integer_labels(x, np.zeros(4, np.int32), axis=2)


# ---- ctc_loss -------------------------------------------------------------------------------
CTC_LOGITS = np.array([[[0, 0.3, -0.27], [-0.89, -0.45, -0.99], [0.06, 1.34, -0.49],
                        [-0.62, 0.49, 0.36], [0.11, -0.93, -0.03]],
                       [[0.7, -1.34, -0.46], [-1.9, -1.29, -1.84], [-0.24, -1.27, 0.27],
                        [0.16, -0.19, -2.52], [-0.54, -0.05, 0.11]]], np.float32)
CTC_PADS = np.array([[0, 0, 0, 0, 0], [0, 0, 0, 0, 1]], np.float32)
CTC_LABELS = np.array([[1, 2], [2, 2]])


def _np_ctc(logits, time_len, labels, blank=0):
    """-log of the sum over every path of length time_len that collapses to labels (the
    definition, by enumeration)."""
    import itertools

    lp = _np_log_softmax(logits[:time_len])
    total = 0.0
    for path in itertools.product(range(logits.shape[-1]), repeat=time_len):
        collapsed = [c for i, c in enumerate(path) if c != blank and (i == 0 or
                                                                     c != path[i - 1])]
        if collapsed == list(labels):
            total += np.exp(sum(lp[t, c] for t, c in enumerate(path)))
    return -np.log(total)


def test_ctc_loss_matches_the_definition_and_optax():
    labp = np.zeros((2, 2), np.float32)
    got = nn.ctc_loss(CTC_LOGITS, CTC_PADS, CTC_LABELS, labp)
    want = [_np_ctc(CTC_LOGITS[0], 5, [1, 2]), _np_ctc(CTC_LOGITS[1], 4, [2, 2])]
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5)
    _close(got, [1.4399259, 3.800576])  # Optax 0.2.8
    _close(_grad_sum(lambda lg: nn.ctc_loss(lg, CTC_PADS, CTC_LABELS, labp), CTC_LOGITS),
           [[[-0.16235013, -0.08285418, 0.24520436], [0.05652118, -0.29055378, 0.2340326],
             [0.02481792, -0.02710128, 0.00228335], [0.02870531, 0.21506871, -0.24377404],
             [0.08222088, 0.15901235, -0.24123318]],
            [[0.5848906, 0.09007782, -0.6749684], [-0.6020624, 0.47163114, 0.1304312],
             [0.15735337, 0.11812433, -0.2754777], [-0.20951337, 0.39739883, -0.1878855],
             [0, 0, 0]]])
    # label padding, another blank id, and a label sequence too long for the time steps
    labels, labp = np.array([[2, 1], [1, 1]]), np.array([[0, 1], [0, 0]], np.float32)
    got = nn.ctc_loss(CTC_LOGITS, CTC_PADS, labels, labp, blank_id=0)
    want = [_np_ctc(CTC_LOGITS[0], 5, [2]), _np_ctc(CTC_LOGITS[1], 4, [1, 1])]
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5)
    got = nn.ctc_loss(CTC_LOGITS, CTC_PADS, np.array([[0, 1], [1, 0]]), np.zeros((2, 2)),
                      blank_id=2)
    want = [_np_ctc(CTC_LOGITS[0], 5, [0, 1], 2), _np_ctc(CTC_LOGITS[1], 4, [1, 0], 2)]
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5)
    long = nn.ctc_loss(CTC_LOGITS[:1, :2], np.zeros((1, 2)), np.array([[1, 1]]),
                       np.zeros((1, 2)))
    _close(long, [99999.73])  # impossible: of order -log_epsilon, as Optax 0.2.8


def test_ctc_loss_grads_jit_and_vmap(x64):
    labp = np.zeros((2, 2))
    check_grads(lambda lg: nn.ctc_loss(lg, CTC_PADS, CTC_LABELS, labp),
                (CTC_LOGITS.astype(np.float64),), order=1)
    eager = np.asarray(nn.ctc_loss(CTC_LOGITS, CTC_PADS, CTC_LABELS, labp))
    np.testing.assert_allclose(np.asarray(mt.jit(nn.ctc_loss)(CTC_LOGITS, CTC_PADS,
                                                               CTC_LABELS, labp)), eager)
    stacked = np.stack([CTC_LOGITS, CTC_LOGITS[::-1]])
    f = mt.vmap(lambda lg: nn.ctc_loss(lg, CTC_PADS, CTC_LABELS, labp))
    loop = [np.asarray(nn.ctc_loss(s, CTC_PADS, CTC_LABELS, labp)) for s in stacked]
    np.testing.assert_allclose(np.asarray(f(stacked)), np.stack(loop), rtol=1e-12)


def test_ctc_loss_errors():
    with pytest.raises(ValueError, match=r"ctc_loss: expected `logits` \[batch, time, "
                                         r"classes\] .*got f32\[5,3\] and i32\[2,2\]"):
        nn.ctc_loss(CTC_LOGITS[0], CTC_PADS[0], CTC_LABELS, np.zeros((2, 2)))
    with pytest.raises(ValueError, match=r"ctc_loss: `logit_paddings` f32\[2,4\] must have "
                                         r"the shape \(2, 5\)"):
        nn.ctc_loss(CTC_LOGITS, CTC_PADS[:, :4], CTC_LABELS, np.zeros((2, 2)))


def test_extreme_logits_make_no_nan_anywhere(debug_nans):
    logits = np.array([[1e4, -1e4, 0], [1, 2, 3]], np.float32)
    p = np.array([[0, 0, 1], [0.2, 0.3, 0.5]], np.float32)
    for f in (lambda v: nn.softmax_cross_entropy(v, p),
              lambda v: nn.softmax_cross_entropy_with_integer_labels(v, np.array([0, 2])),
              lambda v: nn.safe_softmax_cross_entropy(v, p),
              lambda v: nn.sigmoid_binary_cross_entropy(v, p),
              lambda v: nn.sigmoid_focal_loss(v, p),
              lambda v: nn.poly_loss_cross_entropy(v, p),
              lambda v: nn.log_cosh(v), lambda v: nn.huber_loss(v),
              lambda v: nn.kl_divergence(nn.log_softmax(v), p)):
        assert np.all(np.isfinite(np.asarray(f(logits))))
        g = mt.grad(lambda v, f=f: mnp.sum(f(v)))(logits)
        assert np.all(np.isfinite(np.asarray(g)))
