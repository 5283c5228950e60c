"""Normalisation layers: LayerNorm, RMSNorm, GroupNorm and BatchNorm (Equinox's signatures;
BatchNorm keeps its running statistics in an explicit `State`)."""

import numpy as np

from mytorch import lax
from mytorch.core.source_info import user_error
from mytorch.nn._checks import (
    as_array,
    check_inexact,
    positive_int,
    shape_error,
    tuple_of_ints,
)
from mytorch.nn._state import StatefulLayer, StateIndex
from mytorch.nn.module import Module, field
from mytorch.numpy import (
    array,
    float32,
    maximum,
    mean,
    ones,
    reshape,
    result_type,
    where,
    zeros,
)

__all__ = ["BatchNorm", "GroupNorm", "LayerNorm", "RMSNorm"]

_NO_STATE = None


def _compute_dtype(x):
    """Half-precision inputs are normalised in float32 (as Equinox), then cast back."""
    if np.dtype(x.dtype).itemsize < 4 and np.dtype(x.dtype).kind in "fV":
        return float32
    return x.dtype


def _check_trailing(module, x, shape):
    x = as_array(x)
    check_inexact(module, x)
    n = len(shape)
    if x.ndim < n or tuple(x.shape[x.ndim - n:]) != shape:
        lead = "..., " if n else "..."
        raise shape_error(module, f"({lead}{', '.join(map(str, shape))})", x)
    return x


def _with_state(out, state):
    return out if state is _NO_STATE else (out, state)


class _TrailingNorm(Module):
    """What LayerNorm and RMSNorm share: normalising over the trailing `shape` axes (in
    float32 for half-precision inputs), then the optional elementwise weight and bias."""

    weight: object
    bias: object
    shape: tuple = field(static=True)
    eps: float = field(static=True)
    use_weight: bool = field(static=True)
    use_bias: bool = field(static=True)

    def _init(self, name, shape, eps, use_weight, use_bias, dtype):
        self.shape = tuple_of_ints(name, "shape", shape)
        self.eps, self.use_weight, self.use_bias = float(eps), bool(use_weight), bool(use_bias)
        self.weight = ones(self.shape, dtype) if use_weight else None
        self.bias = zeros(self.shape, dtype) if use_bias else None

    def describe(self):
        return f"{type(self).__name__}(shape={self.shape})"

    def __call__(self, x, state=_NO_STATE, *, key=None):
        """`(..., *shape) -> (..., *shape)`."""
        x = _check_trailing(self, x, self.shape)
        orig, dt = x.dtype, _compute_dtype(x)
        out = self._normalise(x.astype(dt), tuple(range(x.ndim - len(self.shape), x.ndim)))
        if self.weight is not None:
            out = out * self.weight.astype(dt)
        if self.bias is not None:
            out = out + self.bias.astype(dt)
        return _with_state(out.astype(orig), state)


class LayerNorm(_TrailingNorm):
    """Normalise over the trailing `shape` axes: `(x - mean) / sqrt(var + eps) * weight +
    bias`, with the biased variance.

    Args:
        shape: the normalised trailing shape (an int or a tuple).
        eps: added to the variance.
        use_weight / use_bias: learnable elementwise scale (ones) and shift (zeros).
        dtype: parameter dtype.

    Shapes: `(..., *shape) -> (..., *shape)` (Equinox requires exactly `shape`; leading
    axes are accepted here). Called with a `state` as well, returns `(out, state)`.
    """

    def __init__(self, shape, eps=1e-5, use_weight=True, use_bias=True, dtype=None, *,
                 elementwise_affine=None):
        if elementwise_affine is not None:
            use_weight = use_bias = bool(elementwise_affine)
        self._init("LayerNorm", shape, eps, use_weight, use_bias, dtype)

    def _normalise(self, x, axes):
        centred = x - mean(x, axis=axes, keepdims=True)
        var = maximum(mean(centred * centred, axis=axes, keepdims=True), 0)
        return centred * lax.rsqrt(var + self.eps)


class RMSNorm(_TrailingNorm):
    """Root-mean-square normalisation over the trailing `shape` axes:
    `x / sqrt(mean(x**2) + eps) * weight + bias`.

    Args:
        shape: the normalised trailing shape (an int or a tuple).
        eps: added to the mean square.
        use_weight: learnable scale (ones).
        use_bias: learnable shift (zeros); off by default as in PyTorch (Equinox turns it on).
        dtype: parameter dtype.

    Shapes: `(..., *shape) -> (..., *shape)`.
    """

    def __init__(self, shape, eps=1e-5, use_weight=True, use_bias=False, dtype=None):
        self._init("RMSNorm", shape, eps, use_weight, use_bias, dtype)

    def _normalise(self, x, axes):
        return x * lax.rsqrt(mean(x * x, axis=axes, keepdims=True) + self.eps)


class GroupNorm(Module):
    """Split the channels into `groups` and normalise each group over its channels and
    spatial positions, then scale and shift per channel.

    Args:
        groups: number of groups; must divide the channels.
        channels: number of channels (needed with `channelwise_affine`).
        eps: added to the variance.
        channelwise_affine: learnable per-channel weight (ones) and bias (zeros).
        dtype: parameter dtype.

    Shapes: one example `(channels, *spatial) -> (channels, *spatial)` (batch with vmap).
    """

    weight: object
    bias: object
    groups: int = field(static=True)
    channels: object = field(static=True)
    eps: float = field(static=True)
    channelwise_affine: bool = field(static=True)

    def __init__(self, groups, channels=None, eps=1e-5, channelwise_affine=True, dtype=None):
        self.groups = positive_int("GroupNorm", "groups", groups, allow_zero=False)
        if channels is not None:
            channels = positive_int("GroupNorm", "channels", channels)
            if channels % self.groups:
                raise user_error(ValueError, f"GroupNorm: channels={channels} is not "
                                 f"divisible by groups={self.groups}")
        if channelwise_affine and channels is None:
            raise user_error(ValueError, "GroupNorm: channels must be given when "
                             "channelwise_affine=True")
        self.channels, self.eps = channels, float(eps)
        self.channelwise_affine = bool(channelwise_affine)
        self.weight = ones((channels,), dtype) if channelwise_affine else None
        self.bias = zeros((channels,), dtype) if channelwise_affine else None

    def describe(self):
        return f"GroupNorm(groups={self.groups}, channels={self.channels})"

    def __call__(self, x, state=_NO_STATE, *, key=None):
        """`(channels, *spatial) -> (channels, *spatial)`."""
        x = as_array(x)
        check_inexact(self, x)
        c = self.channels if self.channels is not None else "C"
        if (x.ndim == 0 or (self.channels is not None and x.shape[0] != self.channels)
                or x.shape[0] % self.groups):
            raise shape_error(self, f"({c}, *spatial) with channels divisible by "
                              f"{self.groups}", x)
        orig, dt = x.dtype, _compute_dtype(x)
        y = reshape(x.astype(dt), (self.groups, -1))
        centred = y - mean(y, axis=1, keepdims=True)
        var = maximum(mean(centred * centred, axis=1, keepdims=True), 0)
        out = reshape(centred * lax.rsqrt(var + self.eps), x.shape)
        if self.channelwise_affine:
            bshape = (-1,) + (1,) * (x.ndim - 1)
            out = (out * reshape(self.weight.astype(dt), bshape)
                   + reshape(self.bias.astype(dt), bshape))
        return _with_state(out.astype(orig), state)


class BatchNorm(StatefulLayer):
    """Batch normalisation over a named batch axis, with running statistics in a `State`.

    Args:
        input_size: the number of channels.
        axis_name: the name of the vmap (or pmap) axis to average over, e.g. "batch"; or
            None to call it on a whole batch `(N, input_size, *spatial)` without vmap
            (statistics over the first and the spatial axes).
        eps: added to the variance.
        channelwise_affine: learnable per-channel weight (ones) and bias (zeros).
        momentum: running = momentum * running + (1 - momentum) * batch.
        inference: use the running statistics (flip with `mt.nn.inference_mode`).
        dtype: parameter and statistics dtype.
        mode: "ema" (Equinox's default: the first call stores the batch statistics, later
            calls update them as exponential moving averages, and the output is normalised
            with the updated running statistics) or "batch" (normalise with the batch's own
            statistics, as PyTorch; the running averages start at mean 0, variance 1).

    Build it with `bn, state = mt.nn.make_with_state(BatchNorm)(3, "batch")` and call one
    example at a time under `vmap`:
    `y, state = mt.vmap(bn, axis_name="batch", in_axes=(0, None), out_axes=(0, None))(x, state)`.

    Shapes: `(input_size, *spatial) -> (input_size, *spatial)` per example; with
    `axis_name=None`, `(N, input_size, *spatial) -> (N, input_size, *spatial)`.
    """

    weight: object
    bias: object
    ema_first_time_index: object
    ema_state_index: object
    batch_counter: object
    batch_state_index: object
    axis_name: object = field(static=True)
    input_size: int = field(static=True)
    eps: float = field(static=True)
    channelwise_affine: bool = field(static=True)
    momentum: float = field(static=True)
    inference: bool = field(static=True)
    mode: str = field(static=True)

    def __init__(self, input_size, axis_name, eps=1e-5, channelwise_affine=True, momentum=0.99,
                 inference=False, dtype=None, mode="ema"):
        if mode not in ("ema", "batch"):
            raise user_error(ValueError, f"BatchNorm: mode must be 'ema' or 'batch', got "
                             f"{mode!r}")
        if not 0.0 <= momentum <= 1.0:
            raise user_error(ValueError, f"BatchNorm: momentum must be in [0, 1], got "
                             f"{momentum!r}")
        self.input_size = positive_int("BatchNorm", "input_size", input_size)
        self.axis_name = tuple(axis_name) if isinstance(axis_name, list) else axis_name
        self.eps, self.momentum = float(eps), float(momentum)
        self.channelwise_affine, self.inference = bool(channelwise_affine), bool(inference)
        self.mode = mode
        n = self.input_size
        self.weight = ones((n,), dtype) if channelwise_affine else None
        self.bias = zeros((n,), dtype) if channelwise_affine else None
        stats = StateIndex((zeros((n,), dtype), ones((n,), dtype)))
        ema = mode == "ema"
        self.ema_first_time_index = StateIndex(array(True)) if ema else None
        self.ema_state_index = stats if ema else None
        self.batch_counter = None if ema else StateIndex(array(0))
        self.batch_state_index = None if ema else stats

    def describe(self):
        return f"BatchNorm(input_size={self.input_size}, axis_name={self.axis_name!r})"

    def _channel_shape(self, x):
        """Where the channel axis is: first for one example, second for a whole batch."""
        shape = [1] * x.ndim
        shape[0 if self.axis_name is not None else 1] = -1
        return tuple(shape)

    def _batch_stats(self, x):
        c_ax = 0 if self.axis_name is not None else 1
        axes = tuple(a for a in range(x.ndim) if a != c_ax)
        mu = mean(x, axis=axes)
        if self.axis_name is not None:
            mu = lax.pmean(mu, self.axis_name)
        centred = x - reshape(mu, self._channel_shape(x))
        var = mean(centred * centred, axis=axes)
        if self.axis_name is not None:
            var = lax.pmean(var, self.axis_name)
        return mu, maximum(var, 0)

    def _ema(self, x, state, inference):
        running_mean, running_var = _read(state, self.ema_state_index, x.dtype)
        if inference:
            return running_mean, running_var, state
        first = state.get(self.ema_first_time_index)
        state = state.set(self.ema_first_time_index, array(False))
        batch_mean, batch_var = self._batch_stats(x)
        m = self.momentum
        mu = lax.select(first, batch_mean, (1 - m) * batch_mean + m * running_mean)
        var = lax.select(first, batch_var, (1 - m) * batch_var + m * running_var)
        return mu, var, _write(state, self.ema_state_index, (mu, var))

    def _batch(self, x, state, inference):
        counter = state.get(self.batch_counter)
        hidden_mean, hidden_var = _read(state, self.batch_state_index, x.dtype)
        if inference:
            # zero-debiased averages, as Equinox: divide by 1 - momentum**steps
            scale = where(counter == 0, 1.0, 1.0 - self.momentum ** counter.astype(x.dtype))
            return hidden_mean / scale, hidden_var / scale, state
        mu, var = self._batch_stats(x)
        m = self.momentum
        state = state.set(self.batch_counter, counter + 1)
        state = _write(state, self.batch_state_index, (m * hidden_mean + (1 - m) * mu,
                                                   m * hidden_var + (1 - m) * var))
        return mu, var, state

    def __call__(self, x, state, *, key=None, inference=None):
        """`(input_size, *spatial), state -> (input_size, *spatial), state` (with a leading
        batch axis when `axis_name` is None)."""
        x = as_array(x)
        check_inexact(self, x)
        if self.axis_name is None:
            if x.ndim < 2 or x.shape[1] != self.input_size:
                raise shape_error(self, f"(N, {self.input_size}, *spatial): with "
                                  "axis_name=None it takes the whole batch", x)
        elif x.ndim == 0 or x.shape[0] != self.input_size:
            raise shape_error(self, f"({self.input_size}, *spatial) for one example", x,
                              hint="call it under vmap(..., axis_name=...) over the batch")
        inference = self.inference if inference is None else inference
        orig = x.dtype
        index = self.ema_state_index if self.mode == "ema" else self.batch_state_index
        dt = result_type(_compute_dtype(x), state.get(index)[0].dtype)
        x = x.astype(dt)
        step = self._ema if self.mode == "ema" else self._batch
        mu, var, state = step(x, state, inference)
        bshape = self._channel_shape(x)
        out = (x - reshape(mu, bshape)) * reshape(lax.rsqrt(var + self.eps), bshape)
        if self.channelwise_affine:
            out = (out * reshape(self.weight.astype(dt), bshape)
                   + reshape(self.bias.astype(dt), bshape))
        return out.astype(orig), state


def _read(state, index, dtype):
    return tuple(v.astype(dtype) for v in state.get(index))


def _write(state, index, values):
    return state.set(index, tuple(v.astype(old.dtype)
                                  for v, old in zip(values, state.get(index), strict=True)))
