"""Learning-rate schedules: functions `count -> value` (Optax's names and formulas).

`count` is the number of updates made so far: a Python int or an int32 array (also a
traced one under `jit`). Every schedule but `constant_schedule` returns an array.
"""

from __future__ import annotations

import math

import numpy as np

import mytorch.numpy as mnp
from mytorch.core.source_info import user_error

__all__ = [
    "constant_schedule",
    "cosine_decay_schedule",
    "cosine_onecycle_schedule",
    "exponential_decay",
    "join_schedules",
    "linear_onecycle_schedule",
    "linear_schedule",
    "piecewise_constant_schedule",
    "piecewise_interpolate_schedule",
    "polynomial_schedule",
    "sgdr_schedule",
    "warmup_constant_schedule",
    "warmup_cosine_decay_schedule",
    "warmup_exponential_decay_schedule",
]


def _int_arg(fname, name, value):
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or int(value) != value:
        raise user_error(TypeError, f"{fname}: {name} must be an int, got "
                         f"{type(value).__name__} {value!r}")
    return int(value)


def constant_schedule(value):
    """`count -> value`.

    Example:
        >>> constant_schedule(0.1)(5)
        0.1
    """
    return lambda count: value


def polynomial_schedule(init_value, end_value, power, transition_steps, transition_begin=0):
    """From `init_value` to `end_value` over `transition_steps` steps starting at
    `transition_begin`: `(init - end) * (1 - t / transition_steps)**power + end` with
    `t = clip(count - transition_begin, 0, transition_steps)`. A non-positive
    `transition_steps` gives the constant `init_value`."""
    transition_steps = _int_arg("polynomial_schedule", "transition_steps", transition_steps)
    transition_begin = _int_arg("polynomial_schedule", "transition_begin", transition_begin)
    if transition_steps <= 0:
        return lambda count: init_value
    transition_begin = max(transition_begin, 0)

    def schedule(count):
        t = mnp.clip(mnp.asarray(count) - transition_begin, 0, transition_steps)
        frac = 1 - t / transition_steps
        return (init_value - end_value) * (frac ** power) + end_value

    return schedule


def linear_schedule(init_value, end_value, transition_steps, transition_begin=0):
    """Linear from `init_value` to `end_value` over `transition_steps` steps (then held).

    Example:
        >>> linear_schedule(1.0, 0.0, 10)(5)
        Array(0.5, dtype=float32)
    """
    return polynomial_schedule(init_value, end_value, 1, transition_steps, transition_begin)


def piecewise_constant_schedule(init_value, boundaries_and_scales=None):
    """`init_value` multiplied by `scale` for every `{boundary: scale}` with
    `count >= boundary` (scales must be non-negative)."""
    items = sorted((boundaries_and_scales or {}).items())
    if any(scale < 0.0 for _, scale in items):
        raise user_error(ValueError, "piecewise_constant_schedule: scales must be "
                         f"non-negative, got {dict(items)}")

    def schedule(count):
        v = init_value
        for boundary, scale in items:
            indicator = mnp.maximum(0.0, mnp.sign(boundary - mnp.asarray(count)))
            v = v * indicator + (1 - indicator) * scale * v
        return v

    return schedule


def exponential_decay(init_value, transition_steps, decay_rate, transition_begin=0,
                      staircase=False, end_value=None):
    """`init_value * decay_rate ** ((count - transition_begin) / transition_steps)` after
    `transition_begin` (`init_value` before), the exponent floored with `staircase`, and
    bounded by `end_value` (below when decaying, above when growing)."""
    transition_steps = _int_arg("exponential_decay", "transition_steps", transition_steps)
    if transition_steps <= 0 or decay_rate == 0:
        return lambda count: init_value
    transition_begin = max(_int_arg("exponential_decay", "transition_begin",
                                    transition_begin), 0)
    clip_fn = None if end_value is None else (mnp.maximum if decay_rate < 1.0 else mnp.minimum)

    def schedule(count):
        dec = mnp.asarray(count) - transition_begin
        p = dec / transition_steps
        if staircase:
            p = mnp.floor(p)
        value = mnp.where(dec <= 0, init_value, init_value * mnp.power(decay_rate, p))
        return value if clip_fn is None else clip_fn(value, end_value)

    return schedule


def cosine_decay_schedule(init_value, decay_steps, alpha=0.0, exponent=1.0):
    """Cosine decay from `init_value` to `alpha * init_value` over `decay_steps`:
    `init * ((1 - alpha) * (0.5 * (1 + cos(pi * min(count, decay_steps) / decay_steps)))
    ** exponent + alpha)`.

    Raises:
      ValueError: `decay_steps` is not positive.
    """
    if not decay_steps > 0:
        raise user_error(ValueError, "cosine_decay_schedule: decay_steps must be positive, "
                         f"got {decay_steps}")

    def schedule(count):
        count = mnp.asarray(count)
        c = mnp.minimum(count.astype(mnp.result_type(count.dtype, mnp.float32)),
                        float(decay_steps))
        cosine = 0.5 * (1 + mnp.cos(math.pi * c / float(decay_steps)))
        return init_value * ((1 - alpha) * cosine ** exponent + alpha)

    return schedule


def join_schedules(schedules, boundaries):
    """`schedules[i](count - boundaries[i-1])` for `boundaries[i-1] <= count <
    boundaries[i]`: each schedule sees the steps since its own start."""
    schedules, boundaries = list(schedules), list(boundaries)
    if len(schedules) != len(boundaries) + 1:
        raise user_error(ValueError, f"join_schedules: {len(schedules)} schedules need "
                         f"{len(schedules) - 1} boundaries, got {len(boundaries)}")

    def schedule(step):
        out = schedules[0](step)
        for boundary, s in zip(boundaries, schedules[1:], strict=True):
            out = mnp.where(mnp.asarray(step) < boundary, out, s(mnp.asarray(step) - boundary))
        return out

    return schedule


def warmup_constant_schedule(init_value, peak_value, warmup_steps):
    """Linear from `init_value` to `peak_value` over `warmup_steps`, then constant."""
    return linear_schedule(init_value, peak_value, warmup_steps)


def warmup_cosine_decay_schedule(init_value, peak_value, warmup_steps, decay_steps,
                                 end_value=0.0, exponent=1.0):
    """Linear warmup from `init_value` to `peak_value` over `warmup_steps`, then cosine
    decay to `end_value` at step `decay_steps` (which counts the warmup too)."""
    alpha = 0.0 if peak_value == 0.0 else end_value / peak_value
    return join_schedules(
        [linear_schedule(init_value, peak_value, warmup_steps),
         cosine_decay_schedule(peak_value, decay_steps - warmup_steps, alpha, exponent)],
        [warmup_steps])


def warmup_exponential_decay_schedule(init_value, peak_value, warmup_steps,
                                      transition_steps, decay_rate, transition_begin=0,
                                      staircase=False, end_value=None):
    """Linear warmup to `peak_value` over `warmup_steps`, then `exponential_decay` from
    `peak_value` (its count starting at the end of the warmup)."""
    return join_schedules(
        [linear_schedule(init_value, peak_value, warmup_steps),
         exponential_decay(peak_value, transition_steps, decay_rate, transition_begin,
                           staircase, end_value)],
        [warmup_steps])


def piecewise_interpolate_schedule(interpolate_type, init_value, boundaries_and_scales=None):
    """Interpolates (`'linear'` or `'cosine'`) between values that are `init_value` times
    the running product of the scales, reached at each boundary."""
    if interpolate_type not in ("linear", "cosine"):
        raise user_error(ValueError, "piecewise_interpolate_schedule: interpolate_type must "
                         f"be 'linear' or 'cosine', got {interpolate_type!r}")
    items = sorted((boundaries_and_scales or {}).items())
    if any(scale < 0.0 for _, scale in items):
        raise user_error(ValueError, "piecewise_interpolate_schedule: scales must be "
                         f"non-negative, got {dict(items)}")
    bounds = [0] + [b for b, _ in items]
    values = [float(init_value)]
    for _, scale in items:
        values.append(values[-1] * scale)

    def interp(start, end, pct):
        if interpolate_type == "linear":
            return (end - start) * pct + start
        return end + (start - end) / 2.0 * (mnp.cos(math.pi * pct) + 1)

    def schedule(count):
        count = mnp.asarray(count)
        out = (count >= bounds[-1]) * mnp.asarray(values[-1], mnp.float32)
        for i in range(len(bounds) - 1):
            size = max(bounds[i + 1] - bounds[i], 1)
            inside = mnp.logical_and(bounds[i] <= count, count < bounds[i + 1])
            pct = (count - bounds[i]) / size
            out = out + inside * interp(values[i], values[i + 1], pct)
        return out

    return schedule


def linear_onecycle_schedule(transition_steps, peak_value, pct_start=0.3, pct_final=0.85,
                             div_factor=25.0, final_div_factor=1e4):
    """One-cycle policy, linear pieces: up from `peak_value / div_factor` to `peak_value`
    by `pct_start`, down again by `pct_final`, then to `/ final_div_factor` at the end."""
    if transition_steps <= 0:
        raise user_error(ValueError, "linear_onecycle_schedule: transition_steps must be "
                         f"positive, got {transition_steps}")
    return piecewise_interpolate_schedule("linear", peak_value / div_factor, {
        int(pct_start * transition_steps): div_factor,
        int(pct_final * transition_steps): 1.0 / div_factor,
        transition_steps: 1.0 / final_div_factor})


def cosine_onecycle_schedule(transition_steps, peak_value, pct_start=0.3, div_factor=25.0,
                             final_div_factor=1e4):
    """One-cycle policy, cosine pieces: up from `peak_value / div_factor` to `peak_value`
    by `pct_start`, then down to `peak_value / (div_factor * final_div_factor)`."""
    if transition_steps <= 0:
        raise user_error(ValueError, "cosine_onecycle_schedule: transition_steps must be "
                         f"positive, got {transition_steps}")
    return piecewise_interpolate_schedule("cosine", peak_value / div_factor, {
        int(pct_start * transition_steps): div_factor,
        int(transition_steps): 1.0 / (div_factor * final_div_factor)})


def sgdr_schedule(cosine_kwargs):
    """Warm restarts: `warmup_cosine_decay_schedule(**kw)` for each dict in turn, each
    lasting its `decay_steps`."""
    schedules, boundaries, step = [], [], 0
    for kw in cosine_kwargs:
        schedules.append(warmup_cosine_decay_schedule(**kw))
        step += kw["decay_steps"]
        boundaries.append(step)
    return join_schedules(schedules, boundaries[:-1])
