"""Containers: Sequential, Lambda and MLP (Equinox's signatures)."""

from mytorch import random
from mytorch.core.source_info import user_error
from mytorch.nn._checks import positive_int
from mytorch.nn._state import StatefulLayer
from mytorch.nn.activations import identity, relu
from mytorch.nn.linear import Linear
from mytorch.nn.module import Module, field

__all__ = ["MLP", "Lambda", "Sequential"]

_NO_STATE = None


class Lambda(Module):
    """Wrap a function `fn(x)` as a layer (e.g. an activation inside `Sequential`).

    Args:
        fn: the function; static (hashable), so it holds no parameters.

    Shapes: whatever `fn` does.
    """

    fn: object = field(static=True)

    def __init__(self, fn):
        if not callable(fn):
            raise user_error(TypeError, f"Lambda: fn must be callable, got "
                             f"{type(fn).__name__}")
        self.fn = fn

    def describe(self):
        return f"Lambda({getattr(self.fn, '__name__', self.fn)!r})"

    def __call__(self, x, *, key=None):
        """`fn(x)`; `key` is ignored."""
        return self.fn(x)


def _stateful(layer):
    return isinstance(layer, StatefulLayer) and layer.is_stateful()


class Sequential(StatefulLayer):
    """Apply layers in order.

    Args:
        layers: a sequence of modules (or plain callables of one argument).

    Called as `seq(x, *, key=None)`, or `seq(x, state, *, key=None) -> (y, state)` when it
    holds stateful layers (BatchNorm), whose `state` it threads through. A given key is
    split into one key per layer (as Equinox). Indexing and slicing give layers and
    sub-`Sequential`s. Shapes: whatever the layers do.
    """

    layers: tuple

    def __init__(self, layers):
        self.layers = tuple(layers)
        for i, layer in enumerate(self.layers):
            if not callable(layer):
                raise user_error(TypeError, f"Sequential: layer {i} is not callable: "
                                 f"{type(layer).__name__}")

    def describe(self):
        return f"Sequential({len(self.layers)} layers)"

    def is_stateful(self):
        return any(_stateful(layer) for layer in self.layers)

    def __call__(self, x, state=_NO_STATE, *, key=None):
        """`x -> y`, or `(x, state) -> (y, state)`."""
        keys = [None] * len(self.layers) if key is None else random.split(key, len(self.layers))
        for i, layer in enumerate(self.layers):
            k = None if key is None else keys[i]
            if _stateful(layer):
                if state is _NO_STATE:
                    raise user_error(TypeError, f"Sequential: layer {i} "
                                     f"({type(layer).__name__}) is stateful: call "
                                     "`y, state = model(x, state)` with the State from "
                                     "mt.nn.make_with_state")
                x, state = layer(x, state, key=k)
            elif isinstance(layer, Module):
                x = layer(x, key=k)
            else:
                x = layer(x)
        return x if state is _NO_STATE else (x, state)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return Sequential(self.layers[i])
        return self.layers[i]

    def __iter__(self):
        return iter(self.layers)

    def __len__(self):
        return len(self.layers)


class MLP(Module):
    """A multi-layer perceptron: `depth` hidden layers of `width_size`, `activation` after
    each, `final_activation` after the output layer.

    Args:
        in_size / out_size: input and output sizes (ints or `"scalar"`).
        width_size: hidden width.
        depth: the number of hidden layers (0: a single Linear).
        activation: applied after each hidden layer (default relu); static.
        final_activation: applied to the output (default identity); static.
        use_bias / use_final_bias: biases of the hidden layers / the output layer.
        dtype: parameter dtype.
        key: a PRNG key (keyword-only), split into one key per Linear (as Equinox).

    Shapes: `(..., in_size) -> (..., out_size)`.
    """

    layers: tuple
    activation: object = field(static=True)
    final_activation: object = field(static=True)
    in_size: object = field(static=True)
    out_size: object = field(static=True)
    width_size: int = field(static=True)
    depth: int = field(static=True)
    use_bias: bool = field(static=True)
    use_final_bias: bool = field(static=True)

    def __init__(self, in_size, out_size, width_size, depth, activation=relu,
                 final_activation=identity, use_bias=True, use_final_bias=True, dtype=None,
                 *, key):
        depth = positive_int("MLP", "depth", depth)
        width_size = positive_int("MLP", "width_size", width_size)
        keys = random.split(key, depth + 1)
        if depth == 0:
            layers = [Linear(in_size, out_size, use_final_bias, dtype, key=keys[0])]
        else:
            layers = [Linear(in_size, width_size, use_bias, dtype, key=keys[0])]
            layers += [Linear(width_size, width_size, use_bias, dtype, key=keys[i + 1])
                       for i in range(depth - 1)]
            layers.append(Linear(width_size, out_size, use_final_bias, dtype, key=keys[-1]))
        self.layers = tuple(layers)
        self.activation, self.final_activation = activation, final_activation
        self.in_size, self.out_size = in_size, out_size
        self.width_size, self.depth = width_size, depth
        self.use_bias, self.use_final_bias = bool(use_bias), bool(use_final_bias)

    def describe(self):
        return f"MLP(in_size={self.in_size}, out_size={self.out_size}, depth={self.depth})"

    def __call__(self, x, *, key=None):
        """`(..., in_size) -> (..., out_size)`; `key` is ignored."""
        for layer in self.layers[:-1]:
            x = self.activation(layer(x))
        return self.final_activation(self.layers[-1](x))
