"""Ready-made optimisers (Optax's aliases, same signatures and defaults).

Each returns a GradientTransformationExtraArgs: a `chain` of building blocks ending in
`scale_by_learning_rate(learning_rate)`, so updates are already negated and
`apply_updates(params, updates)` takes the step. `learning_rate` is a number or a schedule.
"""

from __future__ import annotations

import functools

from mytorch.optim import transforms as T
from mytorch.optim import variants as V
from mytorch.optim.base import identity
from mytorch.optim.clipping import add_noise
from mytorch.optim.wrappers import chain, masked

__all__ = [
    "adabelief",
    "adadelta",
    "adagrad",
    "adam",
    "adamax",
    "adamaxw",
    "adamw",
    "adan",
    "amsgrad",
    "lamb",
    "lars",
    "lion",
    "nadam",
    "nadamw",
    "noisy_sgd",
    "novograd",
    "radam",
    "rmsprop",
    "rprop",
    "sgd",
    "sign_sgd",
    "signum",
    "yogi",
]


def sgd(learning_rate, momentum=None, nesterov=False, accumulator_dtype=None):
    """Stochastic gradient descent, with optional (Nesterov) momentum.

    `u = -lr * g`; with momentum `t <- g + momentum * t`, `u = -lr * t` (Nesterov:
    `u = -lr * (g + momentum * t)`).

    Args:
      learning_rate: a float, a 0-d array, or a schedule `count -> value`.
      momentum: the decay of the momentum buffer, or None for plain SGD.
      nesterov: use Nesterov's look-ahead momentum.
      accumulator_dtype: dtype of the momentum buffer (default: each param's dtype).
    Returns:
      A GradientTransformationExtraArgs; its state is `(TraceState(trace) | EmptyState(),
      EmptyState() | ScaleByScheduleState(count))`, each leaf shaped like its param.

    Example:
        >>> opt = sgd(0.1, momentum=0.9)
        >>> state = opt.init(params); updates, state = opt.update(grads, state)
    """
    first = T.trace(decay=momentum, nesterov=nesterov, accumulator_dtype=accumulator_dtype) \
        if momentum is not None else identity()
    return chain(first, T.scale_by_learning_rate(learning_rate))


def adam(learning_rate, b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0, mu_dtype=None, *,
         nesterov=False):
    """Adam: `u = -lr * m_hat / (sqrt(v_hat + eps_root) + eps)` with bias-corrected moving
    averages of g (`b1`) and g**2 (`b2`). `nesterov=True` is NAdam.

    Args:
      learning_rate: a float, a 0-d array, or a schedule `count -> value`.
      b1, b2: decay rates of the first and second moments.
      eps, eps_root: added outside and inside the square root of the second moment.
      mu_dtype: dtype of the first moment (default: each param's dtype).
    Returns:
      A GradientTransformationExtraArgs whose state is `(ScaleByAdamState(count: int32[],
      mu, nu), ...)`, `mu` and `nu` shaped like the params.

    Example:
        >>> opt = adam(1e-3); state = opt.init({'w': mnp.zeros((3, 2))})
    """
    return chain(T.scale_by_adam(b1, b2, eps, eps_root, mu_dtype, nesterov=nesterov),
                 T.scale_by_learning_rate(learning_rate))


nadam = functools.partial(adam, nesterov=True)
nadam.__doc__ = "NAdam: `adam(..., nesterov=True)`."


def adamw(learning_rate, b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0, mu_dtype=None,
          weight_decay=1e-4, mask=None, *, nesterov=False):
    """AdamW: Adam's step plus decoupled weight decay,
    `u = -lr * (adam_direction + weight_decay * p)`; `mask` limits the decay (a pytree of
    bools or a callable `params -> mask`). Needs params in `update`."""
    return chain(T.scale_by_adam(b1, b2, eps, eps_root, mu_dtype, nesterov=nesterov),
                 T.add_decayed_weights(weight_decay, mask),
                 T.scale_by_learning_rate(learning_rate))


nadamw = functools.partial(adamw, nesterov=True)
nadamw.__doc__ = "NAdamW: `adamw(..., nesterov=True)`."


def lion(learning_rate, b1=0.9, b2=0.99, mu_dtype=None, weight_decay=1e-3, mask=None):
    """Lion: `u = -lr * (sign((1 - b1) g + b1 m) + weight_decay * p)`, then
    `m <- (1 - b2) g + b2 m`. Needs params in `update` (for the weight decay)."""
    return chain(T.scale_by_lion(b1, b2, mu_dtype),
                 T.add_decayed_weights(weight_decay, mask),
                 T.scale_by_learning_rate(learning_rate))


def rmsprop(learning_rate, decay=0.9, eps=1e-8, initial_scale=0.0, eps_in_sqrt=True,
            centered=False, momentum=None, nesterov=False, bias_correction=False):
    """RMSProp: `u = -lr * g / sqrt(nu + eps)` with `nu` the moving average of g**2
    (`centered`: divides by the standard deviation instead), then optional momentum."""
    scaler = T.scale_by_stddev if centered else T.scale_by_rms
    return chain(
        scaler(decay=decay, eps=eps, initial_scale=initial_scale, eps_in_sqrt=eps_in_sqrt,
               bias_correction=bias_correction),
        T.scale_by_learning_rate(learning_rate),
        T.trace(decay=momentum, nesterov=nesterov) if momentum is not None else identity())


def adagrad(learning_rate, initial_accumulator_value=0.1, eps=1e-7):
    """Adagrad: `u = -lr * g / sqrt(sum_of_squares + eps)`, the sum starting at
    `initial_accumulator_value`."""
    return chain(T.scale_by_rss(initial_accumulator_value, eps),
                 T.scale_by_learning_rate(learning_rate))


def lamb(learning_rate, b1=0.9, b2=0.999, eps=1e-6, eps_root=0.0, weight_decay=0.0,
         mask=None):
    """LAMB: Adam's direction plus weight decay, rescaled per parameter by the trust ratio
    `||p|| / ||u||`. Needs params in `update`."""
    return chain(T.scale_by_adam(b1=b1, b2=b2, eps=eps, eps_root=eps_root),
                 T.add_decayed_weights(weight_decay=weight_decay, mask=mask),
                 T.scale_by_trust_ratio(),
                 T.scale_by_learning_rate(learning_rate))


def adamax(learning_rate, b1=0.9, b2=0.999, eps=1e-8):
    """Adamax: Adam with the infinity norm, `u = -lr * m_hat / max(|g| + eps, b2 * u)`."""
    return chain(V.scale_by_adamax(b1, b2, eps), T.scale_by_learning_rate(learning_rate))


def adamaxw(learning_rate, b1=0.9, b2=0.999, eps=1e-8, weight_decay=1e-4, mask=None):
    """Adamax with decoupled weight decay. Needs params in `update`."""
    return chain(V.scale_by_adamax(b1, b2, eps), T.add_decayed_weights(weight_decay, mask),
                 T.scale_by_learning_rate(learning_rate))


def radam(learning_rate, b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0, threshold=5.0, *,
          nesterov=False):
    """Rectified Adam (see `scale_by_radam`)."""
    return chain(V.scale_by_radam(b1, b2, eps, eps_root, threshold, nesterov=nesterov),
                 T.scale_by_learning_rate(learning_rate))


def adabelief(learning_rate, b1=0.9, b2=0.999, eps=1e-16, eps_root=1e-16, *,
              nesterov=False):
    """AdaBelief: Adam with the second moment of `g - m` (see `scale_by_belief`)."""
    return chain(V.scale_by_belief(b1, b2, eps, eps_root, nesterov=nesterov),
                 T.scale_by_learning_rate(learning_rate))


def amsgrad(learning_rate, b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0, mu_dtype=None):
    """AMSGrad: Adam with the running maximum of the second moment."""
    return chain(V.scale_by_amsgrad(b1, b2, eps, eps_root, mu_dtype),
                 T.scale_by_learning_rate(learning_rate))


def lars(learning_rate, weight_decay=0.0, weight_decay_mask=True, trust_coefficient=0.001,
         eps=0.0, trust_ratio_mask=True, momentum=0.9, nesterov=False):
    """LARS: weight decay, the layer-wise trust ratio (`trust_coefficient * ||p|| /
    (||u|| + eps)`), the learning rate, then momentum. Needs params in `update`."""
    return chain(
        T.add_decayed_weights(weight_decay, mask=weight_decay_mask),
        masked(T.scale_by_trust_ratio(trust_coefficient=trust_coefficient, eps=eps),
               trust_ratio_mask),
        T.scale_by_learning_rate(learning_rate),
        T.trace(decay=momentum, nesterov=nesterov))


def sign_sgd(learning_rate):
    """signSGD: `u = -lr * sign(g)`."""
    return chain(T.scale_by_sign(), T.scale_by_learning_rate(learning_rate))


def signum(learning_rate, beta=0.9, accumulator_dtype=None):
    """Signum: `u = -lr * sign(e)` with `e <- (1 - beta) g + beta e` (not debiased)."""
    return chain(V.ema(beta, debias=False, accumulator_dtype=accumulator_dtype),
                 T.scale_by_sign(), T.scale_by_learning_rate(learning_rate))


def novograd(learning_rate, b1=0.9, b2=0.25, eps=1e-6, eps_root=0.0, weight_decay=0.0):
    """NovoGrad (see `scale_by_novograd`). Needs params in `update`."""
    return chain(V.scale_by_novograd(b1=b1, b2=b2, eps=eps, eps_root=eps_root,
                                     weight_decay=weight_decay),
                 T.scale_by_learning_rate(learning_rate))


def noisy_sgd(learning_rate, eta=0.01, gamma=0.55, key=0):
    """SGD with annealed Gaussian gradient noise (see `add_noise`)."""
    return chain(add_noise(eta, gamma, key), T.scale_by_learning_rate(learning_rate))


def yogi(learning_rate, b1=0.9, b2=0.999, eps=1e-3):
    """Yogi (see `scale_by_yogi`)."""
    return chain(V.scale_by_yogi(b1=b1, b2=b2, eps=eps),
                 T.scale_by_learning_rate(learning_rate))


def adadelta(learning_rate=None, rho=0.9, eps=1e-6, weight_decay=0.0, weight_decay_mask=None):
    """AdaDelta, with optional weight decay added to the gradient first (so it needs params
    in `update`)."""
    return chain(T.add_decayed_weights(weight_decay, mask=weight_decay_mask),
                 V.scale_by_adadelta(rho=rho, eps=eps),
                 T.scale_by_learning_rate(learning_rate))


def adan(learning_rate, b1=0.98, b2=0.92, b3=0.99, eps=1e-8, eps_root=1e-8, weight_decay=0.0,
         mask=None):
    """Adan (see `scale_by_adan`) with decoupled weight decay. Needs params in `update`."""
    return chain(V.scale_by_adan(b1=b1, b2=b2, b3=b3, eps=eps, eps_root=eps_root),
                 T.add_decayed_weights(weight_decay, mask),
                 T.scale_by_learning_rate(learning_rate))


def rprop(learning_rate, eta_minus=0.5, eta_plus=1.2, min_step_size=1e-6, max_step_size=50.0):
    """Rprop: sign-based steps with per-element adaptive sizes (see `scale_by_rprop`)."""
    return chain(V.scale_by_rprop(learning_rate, eta_minus, eta_plus, min_step_size,
                                  max_step_size), T.scale(-1.0))
