"""mt.nn: Optax's losses, by Optax's names, signatures and numerics.

Every loss returns per-example values (no mean over the batch): a loss over `axis` drops
that axis (`[batch, classes] -> [batch]`), an elementwise loss keeps the shape. Average
them yourself: `mnp.mean(mt.nn.softmax_cross_entropy(logits, labels))`.
"""

import math
import operator

import numpy as np

from mytorch import lax
from mytorch import numpy as mnp
from mytorch.core import dtypes
from mytorch.core.source_info import user_error
from mytorch.custom_derivatives import custom_jvp
from mytorch.nn.activations import log_sigmoid, log_softmax, softmax
from mytorch.scipy.special import logsumexp

__all__ = [
    "convex_kl_divergence", "cosine_distance", "cosine_similarity", "ctc_loss",
    "ctc_loss_with_forward_probs", "generalized_kl_divergence",
    "hinge_loss", "huber_loss", "kl_divergence", "kl_divergence_with_log_targets", "l2_loss",
    "log_cosh", "poly_loss_cross_entropy", "safe_softmax_cross_entropy",
    "sigmoid_binary_cross_entropy", "sigmoid_focal_loss", "smooth_labels",
    "softmax_cross_entropy", "softmax_cross_entropy_with_integer_labels", "squared_error",
]


def _s(x):
    return x.aval.str_short()


def _floating(name, arg, x):
    """x as an Array, which must have a float dtype (as Optax checks)."""
    x = mnp.asarray(x)
    if not dtypes.is_float(x.dtype):
        raise user_error(TypeError, f"{name}: `{arg}` must have a floating dtype, got "
                                    f"{_s(x)}")
    return x


def _integer(name, arg, x):
    x = mnp.asarray(x)
    if not dtypes.is_int(x.dtype):
        raise user_error(TypeError, f"{name}: `{arg}` must have an integer dtype, got "
                                    f"{_s(x)}")
    return x


def _same_shape(name, a, b, a_name="logits", b_name="labels"):
    if a.shape != b.shape:
        raise user_error(ValueError, f"{name}: `{a_name}` {_s(a)} and `{b_name}` {_s(b)} "
                                     "must have the same shape")


def _broadcastable(name, a, b, a_name, b_name):
    try:
        np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        raise user_error(ValueError, f"{name}: `{a_name}` {_s(a)} and `{b_name}` {_s(b)} "
                                     "do not broadcast together") from None


def _norm_axis(name, axis, ndim, shape_of):
    try:
        ax = operator.index(axis)
    except TypeError:
        raise user_error(TypeError, f"{name}: axis must be an int or a tuple of ints, got "
                                    f"{axis!r}") from None
    if not -ndim <= ax < ndim:
        raise user_error(ValueError, f"{name}: axis {axis} is out of bounds for "
                                     f"{_s(shape_of)}")
    return ax % ndim


def _where_like(where, logits, axis):
    """Optax: a mask without the class axis gets it back (size 1)."""
    if where is None:
        return None
    where = mnp.asarray(where)
    if where.ndim != logits.ndim:
        where = mnp.expand_dims(where, axis)
    return where


# ---- classification -----------------------------------------------------------------------
def softmax_cross_entropy(logits, labels, axis=-1, where=None):
    """-sum(labels * log_softmax(logits)) over `axis`.

    Args:
      logits: [..., num_classes] float array of unnormalised log-probabilities.
      labels: [..., num_classes] probabilities (one-hot or soft), logits' shape.
      axis: the class axis (an int, a tuple of ints, or None).
      where: optional bool mask of the classes that take part.

    Returns:
      [...] per-example losses.

    >>> softmax_cross_entropy(mnp.array([[0.0, 0.0]]), mnp.array([[1.0, 0.0]]))
    Array([0.6931472], dtype=float32)
    """
    name = "softmax_cross_entropy"
    logits = _floating(name, "logits", logits)
    labels = mnp.asarray(labels)
    _same_shape(name, logits, labels)
    where = _where_like(where, logits, axis)
    log_probs = log_softmax(logits, axis, where)
    return -mnp.sum(labels * log_probs, axis, where=where)


def softmax_cross_entropy_with_integer_labels(logits, labels, axis=-1, where=None):
    """Cross entropy with integer class labels: logsumexp(logits) - logits[label].

    Args:
      logits: [..., num_classes] float array.
      labels: [...] integer class indices (logits' shape without `axis`).
      axis: the class axis of `logits` (an int, or a tuple of ints flattened into one).
      where: optional bool mask of the classes that take part; an example with none left
        gets loss 0.

    Returns:
      [...] per-example losses (labels' shape).

    Labels are not checked (as Optax): a negative label counts from the end (-1 is the
    last class), and one outside [-num_classes, num_classes) gives a NaN loss (with a zero
    gradient for its label term), as Optax under JAX's gather.
    """
    name = "softmax_cross_entropy_with_integer_labels"
    logits = _floating(name, "logits", logits)
    labels = _integer(name, "labels", labels)
    where = _where_like(where, logits, axis)
    if isinstance(axis, (tuple, list)):
        logit_axes = tuple(_norm_axis(name, a, logits.ndim, logits) for a in axis)
        batch = tuple(a for a in range(logits.ndim) if a not in logit_axes)
        perm = batch + logit_axes
        lead = tuple(logits.shape[a] for a in batch)
        logits = mnp.reshape(mnp.transpose(logits, perm), lead + (-1,))
        if where is not None:
            where = mnp.reshape(mnp.transpose(where, perm), lead + (-1,))
        ax = len(batch)
    else:
        ax = _norm_axis(name, axis, logits.ndim, logits)
    expected = logits.shape[:ax] + logits.shape[ax + 1:]
    if labels.shape != expected:
        raise user_error(ValueError, f"{name}: `labels` {_s(labels)} must have the shape of "
                                     f"`logits` {_s(logits)} without axis {axis}, "
                                     f"{expected}")
    idx = mnp.expand_dims(labels, ax)
    label_logits = mnp.squeeze(mnp.take_along_axis(logits, idx, axis=ax), ax)
    out = logsumexp(logits, axis=ax, where=where) - label_logits
    if where is not None:
        out = mnp.where(mnp.any(where, ax), out, 0.0)
    return out


@custom_jvp
def _weighted_log_softmax(x, weights):
    """weights * log_softmax(x) over the last axis, with 0 where weights == 0 (0 log 0 = 0)."""
    lsm = log_softmax(x, axis=-1)
    return mnp.where(weights != 0.0, weights * lsm, mnp.zeros_like(lsm))


@_weighted_log_softmax.defjvp
def _weighted_log_softmax_jvp(primals, tangents):
    (x, weights), (x_dot, w_dot) = primals, tangents
    lsm = log_softmax(x, axis=-1)
    out = mnp.where(weights != 0.0, weights * lsm, mnp.zeros_like(lsm))
    # d(w * lsm) = w * (x_dot - <softmax, x_dot>) + w_dot * lsm: the x part never forms
    # w * lsm, so -inf logits with zero weight contribute 0 (not NaN) to the logits' grads
    inner = mnp.sum(x_dot * softmax(x, axis=-1), axis=-1, keepdims=True)
    return out, weights * x_dot - weights * inner + w_dot * lsm


def safe_softmax_cross_entropy(logits, labels):
    """softmax_cross_entropy over the last axis that stays finite for -inf logits whose
    label is 0 (0 log 0 = 0), with gradients to match; [..., n] -> [...]."""
    name = "safe_softmax_cross_entropy"
    logits = _floating(name, "logits", logits)
    labels = mnp.asarray(labels, logits.dtype)
    _same_shape(name, logits, labels)
    return -mnp.sum(_weighted_log_softmax(logits, labels), axis=-1)


def sigmoid_binary_cross_entropy(logits, labels):
    """Binary cross entropy on logits: -labels log sigmoid(x) - (1 - labels) log sigmoid(-x).

    Args:
      logits: [...] float array.
      labels: [...] targets in [0, 1] (broadcastable with logits; cast to logits' dtype).

    Returns:
      [...] elementwise losses (no reduction, as Optax).
    """
    name = "sigmoid_binary_cross_entropy"
    logits = _floating(name, "logits", logits)
    labels = mnp.asarray(labels)
    _broadcastable(name, logits, labels, "logits", "labels")
    labels = mnp.asarray(labels, logits.dtype)
    return -labels * log_sigmoid(logits) - (1.0 - labels) * log_sigmoid(-logits)


def sigmoid_focal_loss(logits, labels, *, alpha=None, gamma=2.0):
    """The focal loss (Lin et al. 2017): sigmoid cross entropy * (1 - p_t)^gamma, weighted
    by alpha for positives and 1 - alpha for negatives when alpha is given; [...] -> [...]."""
    name = "sigmoid_focal_loss"
    logits = _floating(name, "logits", logits)
    labels = mnp.asarray(labels)
    _broadcastable(name, logits, labels, "logits", "labels")
    labels = mnp.asarray(labels, logits.dtype)
    ce = sigmoid_binary_cross_entropy(logits, labels)
    log_p, log_q = log_sigmoid(logits), log_sigmoid(-logits)
    shape = np.broadcast_shapes(log_p.shape, labels.shape)
    log_p, log_q, lab = (mnp.broadcast_to(v, shape) for v in (log_p, log_q, labels))
    # log(1 - p_t) = log((1 - y) p + y q), computed in log space
    log_one_minus_pt = logsumexp(mnp.stack([log_p, log_q], axis=-1), axis=-1,
                                 b=mnp.stack([1 - lab, lab], axis=-1))
    loss = ce * mnp.exp(gamma * log_one_minus_pt)
    if alpha is None:
        return loss
    return (alpha * labels + (1.0 - alpha) * (1.0 - labels)) * loss


def poly_loss_cross_entropy(logits, labels, *, epsilon=2.0, axis=-1, where=None):
    """PolyLoss (Leng et al. 2022): cross entropy + epsilon * sum(labels * (1 - softmax)).

    Args:
      logits, labels: [..., num_classes] float arrays of one shape.
      epsilon: the weight of the first polynomial term.
      axis, where: as softmax_cross_entropy.

    Returns:
      [...] per-example losses.
    """
    name = "poly_loss_cross_entropy"
    logits = _floating(name, "logits", logits)
    labels = _floating(name, "labels", labels)
    _same_shape(name, logits, labels)
    p = softmax(logits, axis=axis, where=where)
    one_minus_pt = mnp.sum(labels * (1 - p), axis=axis, where=where)
    ce = softmax_cross_entropy(logits, labels, axis=axis, where=where)
    return ce + epsilon * one_minus_pt


def hinge_loss(predictor_outputs, targets):
    """max(0, 1 - outputs * targets) elementwise, targets in {-1, 1}; [...] -> [...]."""
    outputs = mnp.asarray(predictor_outputs)
    targets = mnp.asarray(targets)
    _broadcastable("hinge_loss", outputs, targets, "predictor_outputs", "targets")
    return mnp.maximum(0, 1 - outputs * targets)


def _kl_args(name, log_predictions, targets, t_name):
    log_predictions = _floating(name, "log_predictions", log_predictions)
    targets = _floating(name, t_name, targets)
    _broadcastable(name, log_predictions, targets, "log_predictions", t_name)
    return log_predictions, targets


def kl_divergence(log_predictions, targets, axis=-1, where=None):
    """KL(targets || predictions) = sum(targets * (log targets - log_predictions)) over
    `axis`, with 0 log 0 = 0; [..., n] -> [...]."""
    log_predictions, targets = _kl_args("kl_divergence", log_predictions, targets, "targets")
    safe_log = mnp.where(targets == 0, 0, mnp.log(mnp.where(targets == 0, 1, targets)))
    loss = targets * (safe_log - log_predictions)
    return mnp.sum(loss, axis=axis, where=where)


def kl_divergence_with_log_targets(log_predictions, log_targets, axis=-1, where=None):
    """KL divergence with log-space targets: sum(exp(log_targets) * (log_targets -
    log_predictions)) over `axis`; [..., n] -> [...]."""
    log_predictions, log_targets = _kl_args("kl_divergence_with_log_targets",
                                            log_predictions, log_targets, "log_targets")
    loss = mnp.exp(log_targets) * (log_targets - log_predictions)
    return mnp.sum(loss, axis=axis, where=where)


def generalized_kl_divergence(log_predictions, targets, axis=-1, where=None):
    """kl_divergence + sum(exp(log_predictions) - targets): convex in the predictions and
    defined for unnormalised measures; [..., n] -> [...]."""
    log_predictions, targets = _kl_args("generalized_kl_divergence", log_predictions,
                                        targets, "targets")
    kl = kl_divergence(log_predictions, targets, axis=axis, where=where)
    return kl + mnp.sum(mnp.exp(log_predictions) - targets, axis=axis, where=where)


def convex_kl_divergence(log_predictions, targets, axis=-1, where=None):
    """Optax's older name of generalized_kl_divergence; [..., n] -> [...]."""
    return generalized_kl_divergence(log_predictions, targets, axis=axis, where=where)


# ---- regression ---------------------------------------------------------------------------
def _errors(name, predictions, targets):
    predictions = _floating(name, "predictions", predictions)
    if targets is None:
        return predictions
    targets = mnp.asarray(targets)
    _same_shape(name, predictions, targets, "predictions", "targets")
    return predictions - targets


def squared_error(predictions, targets=None):
    """(predictions - targets)^2 elementwise (targets default to 0); [...] -> [...]."""
    return _errors("squared_error", predictions, targets) ** 2


def l2_loss(predictions, targets=None):
    """0.5 * (predictions - targets)^2 elementwise, as Optax (half the squared error)."""
    return 0.5 * _errors("l2_loss", predictions, targets) ** 2


def huber_loss(predictions, targets=None, *, delta=1.0):
    """0.5 err^2 for |err| <= delta, delta (|err| - delta / 2) beyond; [...] -> [...]."""
    err = _errors("huber_loss", predictions, targets)
    abs_err = mnp.abs(err)
    quadratic = mnp.minimum(abs_err, delta)
    return 0.5 * quadratic**2 + delta * (abs_err - quadratic)


def log_cosh(predictions, targets=None):
    """log(cosh(predictions - targets)), stable for large errors; [...] -> [...]."""
    err = _errors("log_cosh", predictions, targets)
    return mnp.logaddexp(err, -err) - mnp.asarray(math.log(2.0), err.dtype)


def cosine_similarity(predictions, targets, *, epsilon=0.0, axis=-1, where=None):
    """<a, b> / (|a| |b|) over `axis`, the norms' squares clipped below at epsilon.

    Args:
      predictions, targets: [..., dim] float arrays (broadcastable).
      epsilon: the lower bound of each squared norm (0 gives NaN for a zero vector).
      axis, where: the reduced axes and an optional bool mask.

    Returns:
      [...] similarities in [-1, 1].
    """
    name = "cosine_similarity"
    a = _floating(name, "predictions", predictions)
    b = _floating(name, "targets", targets)
    _broadcastable(name, a, b, "predictions", "targets")
    a_norm = mnp.sqrt(mnp.maximum(mnp.sum(mnp.square(a), axis, keepdims=True, where=where),
                                  epsilon))
    b_norm = mnp.sqrt(mnp.maximum(mnp.sum(mnp.square(b), axis, keepdims=True, where=where),
                                  epsilon))
    return mnp.sum((a / a_norm) * (b / b_norm), axis, where=where)


def cosine_distance(predictions, targets, *, epsilon=0.0, axis=-1, where=None):
    """1 - cosine_similarity over `axis`; [..., dim] -> [...] in [0, 2]."""
    return 1.0 - cosine_similarity(predictions, targets, epsilon=epsilon, axis=axis,
                                   where=where)


def smooth_labels(labels, alpha, *, axis=-1, where=None):
    """Label smoothing: (1 - alpha) * labels + alpha / num_categories.

    Args:
      labels: [..., num_categories] float (e.g. one-hot) labels.
      alpha: the smoothing factor.
      axis: the category axis (int or tuple of ints).
      where: optional bool mask of the categories counted (and smoothed).

    Returns:
      [..., num_categories] smoothed labels.
    """
    labels = _floating("smooth_labels", "labels", labels)
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    if where is None:
        n = math.prod(labels.shape[_norm_axis("smooth_labels", a, labels.ndim, labels)]
                      for a in axes)
    else:
        n = mnp.sum(mnp.asarray(where), axis, keepdims=True)
    return (1.0 - alpha) * labels + alpha / n


# ---- sequences ----------------------------------------------------------------------------
def _ctc_check(logits, logit_paddings, labels, label_paddings):
    name = "ctc_loss"
    logits = _floating(name, "logits", logits)
    labels = _integer(name, "labels", labels)
    logit_paddings, label_paddings = mnp.asarray(logit_paddings), mnp.asarray(label_paddings)
    if logits.ndim != 3 or labels.ndim != 2:
        raise user_error(ValueError, f"{name}: expected `logits` [batch, time, classes] and "
                                     f"`labels` [batch, max_label_len], got {_s(logits)} and "
                                     f"{_s(labels)}")
    if logit_paddings.shape != logits.shape[:2]:
        raise user_error(ValueError, f"{name}: `logit_paddings` {_s(logit_paddings)} must have "
                                     f"the shape {logits.shape[:2]} of `logits` {_s(logits)} "
                                     "without the class axis")
    if label_paddings.shape != labels.shape or labels.shape[0] != logits.shape[0]:
        raise user_error(ValueError, f"{name}: `labels` {_s(labels)} and `label_paddings` "
                                     f"{_s(label_paddings)} must have one shape, with the "
                                     f"batch size {logits.shape[0]} of `logits`")
    return logits, logit_paddings, labels, label_paddings


def ctc_loss_with_forward_probs(logits, logit_paddings, labels, label_paddings, *,
                                blank_id=0, log_epsilon=-1e5):
    """ctc_loss, also returning the forward variables (Optax's layout).

    Returns:
      (per_seq_loss [batch], log_alpha_blank [time, batch, max_label_len + 1],
      log_alpha_label [time, batch, max_label_len]): after each time step, the log
      probability of having emitted n labels and sitting on a blank (or, at the last step,
      anywhere after label n), and of sitting on label n + 1.
    """
    logits, logit_paddings, labels, label_paddings = _ctc_check(
        logits, logit_paddings, labels, label_paddings)
    batch = logits.shape[0]
    n = labels.shape[1]
    dt = logits.dtype
    logprobs = log_softmax(logits)
    label_lens = n - mnp.sum(label_paddings, axis=1).astype(mnp.int32)
    # a label equal to the one before it cannot be reached from it without a blank
    repeat = mnp.pad((labels[:, :-1] == labels[:, 1:]).astype(dt), ((0, 0), (0, 1)))
    blank_lp = mnp.transpose(logprobs[:, :, blank_id], (1, 0))[..., None]  # [T, B, 1]
    idx = mnp.broadcast_to(labels[:, None, :], (batch, logits.shape[1], n))
    label_lp = mnp.transpose(mnp.take_along_axis(logprobs, idx, axis=2), (1, 0, 2))
    pads = mnp.transpose(logit_paddings, (1, 0)).astype(dt)[..., None]  # [T, B, 1]
    eps = mnp.asarray(log_epsilon, dt)

    def close_labels(blank, label, penalty):
        # leaving label n for the blank-or-next state n + 1 (penalised where disallowed)
        return mnp.concatenate([blank[:, :1], mnp.logaddexp(blank[:, 1:], label + penalty)],
                               axis=1)

    def step(carry, x):
        blank, label = carry
        lp_label, lp_blank, pad = x
        ready = close_labels(blank, label, eps * repeat)
        new_label = mnp.logaddexp(ready[:, :-1], label) + lp_label
        new_blank = close_labels(ready + lp_blank, label + lp_blank, eps * (1.0 - repeat))
        new_blank = pad * blank + (1.0 - pad) * new_blank
        new_label = pad * label + (1.0 - pad) * new_label
        return (new_blank, new_label), (new_blank, new_label)

    init_blank = mnp.concatenate([mnp.zeros((batch, 1), dt),
                                  mnp.full((batch, n), log_epsilon, dt)], axis=1)
    init_label = mnp.full((batch, n), log_epsilon, dt)
    _, (alpha_blank, alpha_label) = lax.scan(step, (init_blank, init_label),
                                             (label_lp, blank_lp, pads))
    last = close_labels(alpha_blank[-1], alpha_label[-1], mnp.zeros_like(alpha_label[-1]))
    alpha_blank = alpha_blank.at[-1].set(last)
    loss = -mnp.squeeze(mnp.take_along_axis(last, label_lens[:, None], axis=1), 1)
    return loss, alpha_blank, alpha_label


def ctc_loss(logits, logit_paddings, labels, label_paddings, *, blank_id=0, log_epsilon=-1e5):
    """Connectionist temporal classification loss: -log p(labels | logits), summed over
    every alignment (Graves et al. 2006), per sequence.

    Args:
      logits: [batch, time, classes] float array of unnormalised log-probabilities.
      logit_paddings: [batch, time], 1.0 at padded time steps, 0.0 elsewhere.
      labels: [batch, max_label_len] integer label ids (never `blank_id`).
      label_paddings: [batch, max_label_len], 1.0 at padded label positions (right padding).
      blank_id: the class of the blank symbol.
      log_epsilon: the stand-in for log(0) in the recursion (keeps gradients finite).

    Returns:
      [batch] per-sequence losses (not averaged, as Optax). A label sequence that cannot
      fit into the unpadded time steps gets a loss of order -log_epsilon.
    """
    return ctc_loss_with_forward_probs(logits, logit_paddings, labels, label_paddings,
                                       blank_id=blank_id, log_epsilon=log_epsilon)[0]
