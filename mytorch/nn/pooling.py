"""Pooling as Equinox-style modules: `Pool`, `MaxPool1d/2d/3d`, `AvgPool1d/2d/3d`,
`AdaptivePool`, `AdaptiveAvgPool1d/2d/3d`, `AdaptiveMaxPool1d/2d/3d`.

Inputs are channels-first `(channels, *spatial)`, or `(N, channels, *spatial)` with a
leading batch. As in Equinox (and unlike PyTorch, whose default stride is the kernel size),
`stride` defaults to 1: write `MaxPool2d(2, stride=2)` for the usual halving.

    pool = mt.nn.MaxPool2d(kernel_size=2, stride=2)
    pool(x)          # f32[16, 32, 32] -> f32[16, 16, 16]
"""

import math

import numpy as np

import mytorch.numpy as mnp
from mytorch import lax
from mytorch.core.source_info import user_error
from mytorch.nn.conv import ntuple, shape_str
from mytorch.nn.module import Module, field

__all__ = [
    "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d",
    "AdaptiveMaxPool2d", "AdaptiveMaxPool3d", "AdaptivePool", "AvgPool1d", "AvgPool2d",
    "AvgPool3d", "MaxPool1d", "MaxPool2d", "MaxPool3d", "Pool",
]


def _check_rank(owner, x, num_spatial_dims):
    """`(C, *spatial)` or `(N, C, *spatial)`: the input as an array, and whether batched."""
    x = mnp.asarray(x)
    if x.ndim not in (num_spatial_dims + 1, num_spatial_dims + 2):
        spatial = ", ".join(f"d{i + 1}" for i in range(num_spatial_dims))
        raise user_error(ValueError, f"{owner} expected an input of shape (C, {spatial}) or "
                         f"(N, C, {spatial}), got {shape_str(x)}")
    return x, x.ndim == num_spatial_dims + 2


def _pool_padding(padding, n, owner):
    if isinstance(padding, (int, np.integer)) and not isinstance(padding, bool):
        pairs = ((int(padding), int(padding)),) * n
    else:
        try:
            items = list(padding)
            pairs = tuple(tuple(int(v) for v in p) if isinstance(p, (tuple, list))
                          else (int(p), int(p)) for p in items)
        except (TypeError, ValueError):
            pairs = ()
    if len(pairs) != n or any(len(p) != 2 or min(p) < 0 for p in pairs):
        raise user_error(ValueError, f"{owner}: padding must be an int, a sequence of {n} ints "
                         f"or {n} (low, high) pairs of non-negative ints, got {padding!r}")
    return pairs


class Pool(Module):
    """N-dimensional pooling: `operation` (lax.max, lax.min or lax.add) over sliding windows.

    Input `([N,] C, *spatial)`, output `([N,] C, *new_spatial)` with, per spatial dim,
    `new = (d + lo + hi - k) // stride + 1`, rounded up instead with `use_ceil` (extra
    padding at the high end completes the last window). Padded positions
    hold `init` (the identity of `operation`: -inf for max, 0 for a sum).

    Args:
      init: the reduction's initial value.
      operation: lax.max, lax.min or lax.add.
      num_spatial_dims: number of spatial dims.
      kernel_size, stride: an int or one int per spatial dim (stride defaults to 1, as in
        Equinox).
      padding: an int, one int per dim or one (low, high) pair per dim; each at most the
        kernel size.
      use_ceil: round the output size up instead of down.
    """

    init: object = field(static=True)
    operation: object = field(static=True)
    num_spatial_dims: int = field(static=True)
    kernel_size: tuple = field(static=True)
    stride: tuple = field(static=True)
    padding: tuple = field(static=True)
    use_ceil: bool = field(static=True)

    def __init__(self, init, operation, num_spatial_dims, kernel_size, stride=1, padding=0,
                 use_ceil=False):
        owner = type(self).__name__
        if operation not in (lax.max, lax.min, lax.add):
            raise user_error(TypeError, f"{owner}: operation must be lax.max, lax.min or "
                             f"lax.add, got {operation!r}")
        self.init = init
        self.operation = operation
        self.num_spatial_dims = num_spatial_dims
        self.kernel_size = ntuple(kernel_size, num_spatial_dims, "kernel_size", owner, 1)
        self.stride = ntuple(stride, num_spatial_dims, "stride", owner, 1)
        self.padding = _pool_padding(padding, num_spatial_dims, owner)
        self.use_ceil = bool(use_ceil)
        for (lo, hi), k in zip(self.padding, self.kernel_size, strict=True):
            if max(lo, hi) > k:
                raise user_error(ValueError, f"{owner}: padding {(lo, hi)} is larger than the "
                                 f"kernel size {k}")

    def _padding_for(self, spatial):
        pads = []
        for d, (lo, hi), k, s in zip(spatial, self.padding, self.kernel_size, self.stride,
                                     strict=True):
            rem = (d + lo + hi - k) % s
            if self.use_ceil and rem:
                hi += s - rem  # one more window; it holds only the identity past the end
            pads.append((lo, hi))
        return tuple(pads)

    def __call__(self, x, *, key=None):
        """`([N,] C, *spatial) -> ([N,] C, *new_spatial)`; `key` is ignored."""
        del key
        owner = type(self).__name__
        x, _ = _check_rank(owner, x, self.num_spatial_dims)
        lead = x.ndim - self.num_spatial_dims
        pads = self._padding_for(x.shape[lead:])
        for d, (lo, hi), k in zip(x.shape[lead:], pads, self.kernel_size, strict=True):
            if d + lo + hi < k:
                raise user_error(ValueError, f"{owner}: the kernel {self.kernel_size} does not "
                                 f"fit in the padded input {shape_str(x)} (padding {pads})")
        init = self.init
        if self.operation is lax.add:
            init = 0
        elif not mnp.issubdtype(x.dtype, mnp.floating) and not np.isfinite(init):
            info = mnp.iinfo(x.dtype)  # integers have no infinity: use the extreme values
            init = int(info.min if init < 0 else info.max)
        return lax.reduce_window(
            x, init, self.operation, (1,) * lead + self.kernel_size,
            (1,) * lead + self.stride,
            ((0, 0),) * lead + pads,
        )


def _pool_subclass(name, num_spatial_dims, kind):
    maximum = kind == "max"
    doc = (f"{'Maximum' if maximum else 'Average'} pooling over {num_spatial_dims}-d windows: "
           f"`([N,] C, *spatial) -> ([N,] C, *new_spatial)`; as `Pool` with "
           f"{'init=-inf, operation=lax.max' if maximum else 'a sum divided by the kernel size'}."
           + ("" if maximum else " Padded positions count in the divisor "
              "(PyTorch's count_include_pad=True, Equinox's behaviour)."))

    def __init__(self, kernel_size, stride=1, padding=0, use_ceil=False):
        Pool.__init__(self, -math.inf if maximum else 0, lax.max if maximum else lax.add,
                      num_spatial_dims, kernel_size, stride, padding, use_ceil)

    def __call__(self, x, *, key=None):
        out = Pool.__call__(self, x)
        if maximum:
            return out
        return out / math.prod(self.kernel_size)

    __init__.__doc__ = ("Args: kernel_size, stride (default 1), padding (ints or (low, high) "
                        "pairs), use_ceil: as `Pool`.")
    __call__.__doc__ = Pool.__call__.__doc__
    return type(name, (Pool,), {"__init__": __init__, "__call__": __call__, "__doc__": doc,
                                "__module__": __name__, "__qualname__": name})


MaxPool1d = _pool_subclass("MaxPool1d", 1, "max")
MaxPool2d = _pool_subclass("MaxPool2d", 2, "max")
MaxPool3d = _pool_subclass("MaxPool3d", 3, "max")
AvgPool1d = _pool_subclass("AvgPool1d", 1, "avg")
AvgPool2d = _pool_subclass("AvgPool2d", 2, "avg")
AvgPool3d = _pool_subclass("AvgPool3d", 3, "avg")


# ---- adaptive pooling -----------------------------------------------------------------
def _adaptive_axis(x, axis, target, reduce):
    """Reduce `axis` (size n >= target) into `target` windows: the first n % target hold
    n // target + 1 elements, the rest n // target (Equinox's split)."""
    n = x.shape[axis]
    q, r = divmod(n, target)
    x = mnp.moveaxis(x, axis, -1)
    lead = x.shape[:-1]
    parts = []
    if r:
        head = x[..., :r * (q + 1)].reshape(*lead, r, q + 1)
        parts.append(reduce(head, axis=-1))
    if target - r:
        tail = x[..., r * (q + 1):].reshape(*lead, target - r, q)
        parts.append(reduce(tail, axis=-1))
    out = parts[0] if len(parts) == 1 else mnp.concatenate(parts, axis=-1)
    return mnp.moveaxis(out, -1, axis)


class AdaptivePool(Module):
    """Pooling to a fixed output size: `([N,] C, *spatial) -> ([N,] C, *target_shape)`.

    Each spatial dim of size n is cut into `target` contiguous, non-overlapping windows:
    the first `n % target` of size `n // target + 1`, the others `n // target` (Equinox's
    windows; PyTorch's may overlap, so the two agree when n is a multiple of target).
    Needs n >= target.

    Args:
      target_shape: an int or one int per spatial dim.
      num_spatial_dims: number of spatial dims.
      operation: a reduction `f(x, axis=-1)` such as `mnp.mean` or `mnp.max`.
    """

    target_shape: tuple = field(static=True)
    num_spatial_dims: int = field(static=True)
    operation: object = field(static=True)

    def __init__(self, target_shape, num_spatial_dims, operation):
        owner = type(self).__name__
        self.target_shape = ntuple(target_shape, num_spatial_dims, "target_shape", owner, 1)
        self.num_spatial_dims = num_spatial_dims
        self.operation = operation

    def __call__(self, x, *, key=None):
        """`([N,] C, *spatial) -> ([N,] C, *target_shape)`; `key` is ignored."""
        del key
        owner = type(self).__name__
        x, _ = _check_rank(owner, x, self.num_spatial_dims)
        lead = x.ndim - self.num_spatial_dims
        if any(d < t for d, t in zip(x.shape[lead:], self.target_shape, strict=True)):
            raise user_error(ValueError, f"{owner}: every spatial dim of the input "
                             f"{shape_str(x)} must be at least the target shape "
                             f"{self.target_shape}")
        for i, t in enumerate(self.target_shape):
            x = _adaptive_axis(x, lead + i, t, self.operation)
        return x


def _adaptive_subclass(name, num_spatial_dims, operation, what):
    def __init__(self, target_shape):
        AdaptivePool.__init__(self, target_shape, num_spatial_dims, operation)

    __init__.__doc__ = "Args: target_shape: an int or one int per spatial dim."
    doc = (f"Adaptive {what} pooling to `target_shape`: `([N,] C, *spatial) -> "
           f"([N,] C, *target_shape)` over {num_spatial_dims} spatial dim(s); see "
           "`AdaptivePool` for the windows.")
    return type(name, (AdaptivePool,), {"__init__": __init__, "__doc__": doc,
                                        "__module__": __name__, "__qualname__": name})


AdaptiveAvgPool1d = _adaptive_subclass("AdaptiveAvgPool1d", 1, mnp.mean, "average")
AdaptiveAvgPool2d = _adaptive_subclass("AdaptiveAvgPool2d", 2, mnp.mean, "average")
AdaptiveAvgPool3d = _adaptive_subclass("AdaptiveAvgPool3d", 3, mnp.mean, "average")
AdaptiveMaxPool1d = _adaptive_subclass("AdaptiveMaxPool1d", 1, mnp.max, "maximum")
AdaptiveMaxPool2d = _adaptive_subclass("AdaptiveMaxPool2d", 2, mnp.max, "maximum")
AdaptiveMaxPool3d = _adaptive_subclass("AdaptiveMaxPool3d", 3, mnp.max, "maximum")
