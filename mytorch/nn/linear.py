"""mt.nn.Linear and mt.nn.Identity (Equinox's signatures, PyTorch's initialisation)."""

import math

from mytorch import random
from mytorch.nn._checks import as_array, positive_int, shape_error
from mytorch.nn.module import Module, field
from mytorch.numpy import matmul, squeeze

__all__ = ["Identity", "Linear"]


def _features(name, what, value):
    if value == "scalar":
        return 1
    return positive_int(name, what, value)


class Linear(Module):
    """An affine map `y = x @ weight.T + bias` over the last axis.

    Args:
        in_features: size of the input's last axis, or `"scalar"` for inputs without one.
        out_features: size of the output's last axis, or `"scalar"` to drop it.
        use_bias: whether to add a bias.
        dtype: parameter dtype (default: float32, float64 under x64).
        key: a PRNG key (keyword-only).

    Parameters: `weight` [out, in] and `bias` [out], both uniform in ±1/sqrt(in)
    (Equinox's and PyTorch's default).

    Shapes: `(..., in) -> (..., out)`; `"scalar"` sizes drop that axis. Equinox takes a
    single example `(in,)`; leading axes are accepted here as well.

    Example:
        >>> layer = Linear(3, 4, key=mt.random.key(0))
        >>> layer(mnp.ones((2, 3))).shape
        (2, 4)
    """

    weight: object
    bias: object
    in_features: object = field(static=True)
    out_features: object = field(static=True)
    use_bias: bool = field(static=True)

    def __init__(self, in_features, out_features, use_bias=True, dtype=None, *, key):
        n_in = _features("Linear", "in_features", in_features)
        n_out = _features("Linear", "out_features", out_features)
        wkey, bkey = random.split(key, 2)
        lim = 1 / math.sqrt(max(n_in, 1))
        self.weight = random.uniform(wkey, (n_out, n_in), dtype, minval=-lim, maxval=lim)
        self.bias = (random.uniform(bkey, (n_out,), dtype, minval=-lim, maxval=lim)
                     if use_bias else None)
        self.in_features, self.out_features, self.use_bias = in_features, out_features, use_bias

    def describe(self):
        return f"Linear(in_features={self.in_features}, out_features={self.out_features})"

    def __call__(self, x, *, key=None):
        """`(..., in) -> (..., out)`; `key` is unused (accepted so layers share a call)."""
        x = as_array(x)
        if self.in_features == "scalar":
            x = x[..., None]
        elif x.ndim == 0 or x.shape[-1] != self.in_features:
            raise shape_error(self, f"(..., {self.in_features})", x)
        y = matmul(x, self.weight.T)
        if self.bias is not None:
            y = y + self.bias
        if self.out_features == "scalar":
            y = squeeze(y, -1)
        return y


class Identity(Module):
    """Returns its input unchanged; accepts and ignores any arguments (`key=...`).

    Shapes: `x -> x`.
    """

    def __init__(self, *args, **kwargs):
        del args, kwargs

    def describe(self):
        return "Identity()"

    def __call__(self, x, *, key=None):
        """Return `x`."""
        return x

