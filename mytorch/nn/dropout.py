"""mt.nn.Dropout: inverted dropout with an explicit key (Equinox's signature)."""

from mytorch import random
from mytorch.core.source_info import user_error
from mytorch.nn._checks import as_array
from mytorch.nn.module import Module, field
from mytorch.numpy import where, zeros_like

__all__ = ["Dropout"]


class Dropout(Module):
    """Zero each element with probability `p` and scale the rest by `1 / (1 - p)`, so the
    expectation is unchanged; the identity in inference mode or when `p == 0`.

    Args:
        p: the drop probability, in [0, 1].
        inference: start in inference mode (flip with `mt.nn.inference_mode`).

    Called as `dropout(x, *, key=None, inference=None)`; training mode with `p > 0` needs a
    key. Shapes: `x -> x` (any shape).
    """

    p: float = field(static=True)
    inference: bool = field(static=True)

    def __init__(self, p=0.5, inference=False):
        if not 0.0 <= p <= 1.0:
            raise user_error(ValueError, f"Dropout: p must be in [0, 1], got {p!r}")
        self.p, self.inference = float(p), bool(inference)

    def describe(self):
        return f"Dropout(p={self.p})"

    def __call__(self, x, *, key=None, inference=None):
        """`x -> x` with elements dropped (training) or unchanged (inference)."""
        inference = self.inference if inference is None else inference
        x = as_array(x)
        if inference or self.p == 0:
            return x
        if key is None:
            raise user_error(RuntimeError, f"{self.describe()} needs a key in training mode: "
                             "call dropout(x, key=key), or pass inference=True (see "
                             "mt.nn.inference_mode)")
        if self.p == 1:
            return zeros_like(x)
        q = 1.0 - self.p
        keep = random.uniform(key, x.shape) < q   # jax.random.bernoulli(key, q, shape)
        return where(keep, x / q, 0)
