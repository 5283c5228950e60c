"""Recurrent cells as Equinox-style modules: `GRUCell` and `LSTMCell`.

A cell advances one time step; run a sequence with `lax.scan`:

    cell = mt.nn.GRUCell(input_size=8, hidden_size=16, key=mt.random.key(0))

    def step(h, x):
        h = cell(x, h)
        return h, h

    h_last, hs = lax.scan(step, mnp.zeros(16), xs)      # xs: f32[T, 8] -> hs: f32[T, 16]

Inputs are `input [input_size]` and a state of `[hidden_size]` arrays; a leading batch
(`input [N, input_size]`, states `[N, hidden_size]`) is accepted too. Weights are laid out as
PyTorch's and Equinox's (`weight_ih [k * hidden, input]`, `weight_hh [k * hidden, hidden]`,
gates stacked in PyTorch's order) and initialised uniformly in `±1/sqrt(hidden_size)`.
"""

import math

import mytorch.numpy as mnp
from mytorch import random as _random
from mytorch.core.source_info import user_error
from mytorch.nn.activations import sigmoid, tanh
from mytorch.nn.conv import default_dtype, shape_str, uniform_init
from mytorch.nn.module import Module, field

__all__ = ["GRUCell", "LSTMCell"]


def _check_step(owner, x, states, input_size, hidden_size):
    """Shapes of one step: input [..., input_size], each state [..., hidden_size], with
    the same (empty or one-dim) batch."""
    x = mnp.asarray(x)
    states = [mnp.asarray(s) for s in states]
    batch = x.shape[:-1]
    ok = x.ndim in (1, 2) and x.shape[-1] == input_size
    ok = ok and all(s.shape == (*batch, hidden_size) for s in states)
    if not ok:
        b = "N, " if len(batch) == 1 else ""
        got = ", ".join(shape_str(a) for a in [x, *states])
        want = ", ".join([f"({b}{input_size})"] + [f"({b}{hidden_size})"] * len(states))
        raise user_error(ValueError, f"{owner} expected input and state of shapes {want} "
                         f"(an optional leading batch N on all), got {got}")
    return x, states


class GRUCell(Module):
    """One step of a gated recurrent unit (PyTorch's and Equinox's equations):

        r = sigmoid(W_ir x + W_hr h + b_r)
        z = sigmoid(W_iz x + W_hz h + b_z)
        n = tanh(W_in x + b_in + r * (W_hn h + b_hn))
        h' = (1 - z) * n + z * h

    Parameters: `weight_ih [3H, input_size]`, `weight_hh [3H, H]` (gates r, z, n),
    `bias [3H]` (the input biases, with the hidden biases of r and z folded in) and
    `bias_n [H]` (b_hn, which sits inside the reset gate); PyTorch's
    `b_ih + [b_hr, b_hz, 0]` and `b_hn` give the same cell.

    Args:
      input_size, hidden_size: feature sizes.
      use_bias: learn `bias` and `bias_n` (otherwise both are None).
      dtype: of the parameters (default float32, float64 under enable_x64).
      key: PRNG key for the initialisation (keyword only).

    Call: `cell(input [input_size], hidden [H]) -> hidden [H]` (or with a leading batch).
    """

    weight_ih: object
    weight_hh: object
    bias: object
    bias_n: object
    input_size: int = field(static=True)
    hidden_size: int = field(static=True)
    use_bias: bool = field(static=True)

    def __init__(self, input_size, hidden_size, use_bias=True, dtype=None, *, key):
        dtype = default_dtype(dtype)
        ihkey, hhkey, bkey, bkey2 = _random.split(key, 4)
        lim = math.sqrt(1 / hidden_size)
        self.weight_ih = uniform_init(ihkey, (3 * hidden_size, input_size), dtype, lim)
        self.weight_hh = uniform_init(hhkey, (3 * hidden_size, hidden_size), dtype, lim)
        self.bias = uniform_init(bkey, (3 * hidden_size,), dtype, lim) if use_bias else None
        self.bias_n = uniform_init(bkey2, (hidden_size,), dtype, lim) if use_bias else None
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.use_bias = use_bias

    def __call__(self, input, hidden, *, key=None):
        """`(input [..., input_size], hidden [..., H]) -> hidden [..., H]`; `key` is
        ignored."""
        del key
        x, (h,) = _check_step(type(self).__name__, input, (hidden,), self.input_size,
                              self.hidden_size)
        gi = x @ self.weight_ih.T
        gh = h @ self.weight_hh.T
        bias_n = 0
        if self.use_bias:
            gi = gi + self.bias
            bias_n = self.bias_n
        size = self.hidden_size
        i_r, i_z, i_n = gi[..., :size], gi[..., size:2 * size], gi[..., 2 * size:]
        h_r, h_z, h_n = gh[..., :size], gh[..., size:2 * size], gh[..., 2 * size:]
        reset = sigmoid(i_r + h_r)
        update = sigmoid(i_z + h_z)
        new = tanh(i_n + reset * (h_n + bias_n))
        return new + update * (h - new)


class LSTMCell(Module):
    """One step of a long short-term memory cell (PyTorch's and Equinox's equations):

        i, f, g, o = split(W_ih x + W_hh h + b, 4)
        c' = sigmoid(f) * c + sigmoid(i) * tanh(g)
        h' = sigmoid(o) * tanh(c')

    Parameters: `weight_ih [4H, input_size]`, `weight_hh [4H, H]` (gates i, f, g, o as in
    PyTorch) and `bias [4H]` (PyTorch's `b_ih + b_hh`).

    Args:
      input_size, hidden_size: feature sizes.
      use_bias: learn `bias` (otherwise None).
      dtype: of the parameters (default float32, float64 under enable_x64).
      key: PRNG key for the initialisation (keyword only).

    Call: `cell(input [input_size], (h [H], c [H])) -> (h [H], c [H])` (or with a leading
    batch).
    """

    weight_ih: object
    weight_hh: object
    bias: object
    input_size: int = field(static=True)
    hidden_size: int = field(static=True)
    use_bias: bool = field(static=True)

    def __init__(self, input_size, hidden_size, use_bias=True, dtype=None, *, key):
        dtype = default_dtype(dtype)
        ihkey, hhkey, bkey = _random.split(key, 3)
        lim = math.sqrt(1 / hidden_size)
        self.weight_ih = uniform_init(ihkey, (4 * hidden_size, input_size), dtype, lim)
        self.weight_hh = uniform_init(hhkey, (4 * hidden_size, hidden_size), dtype, lim)
        self.bias = uniform_init(bkey, (4 * hidden_size,), dtype, lim) if use_bias else None
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.use_bias = use_bias

    def __call__(self, input, hidden, *, key=None):
        """`(input [..., input_size], (h [..., H], c [..., H])) -> (h, c)`; `key` is
        ignored."""
        del key
        owner = type(self).__name__
        if not isinstance(hidden, (tuple, list)) or len(hidden) != 2:
            raise user_error(TypeError, f"{owner} expected its state as a pair (h, c), got "
                             f"{type(hidden).__name__}")
        x, (h, c) = _check_step(owner, input, hidden, self.input_size, self.hidden_size)
        lin = x @ self.weight_ih.T + h @ self.weight_hh.T
        if self.use_bias:
            lin = lin + self.bias
        size = self.hidden_size
        i = sigmoid(lin[..., :size])
        f = sigmoid(lin[..., size:2 * size])
        g = tanh(lin[..., 2 * size:3 * size])
        o = sigmoid(lin[..., 3 * size:])
        c = f * c + i * g
        h = o * tanh(c)
        return (h, c)
