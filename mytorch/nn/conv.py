"""Convolutions as Equinox-style modules: `Conv`, `Conv1d/2d/3d`, `ConvTranspose`,
`ConvTranspose1d/2d/3d`.

Inputs are channels-first, `(in_channels, *spatial)` as in Equinox; a leading batch
`(N, in_channels, *spatial)` is accepted too and kept in the output. Weights are
`[out_channels, in_channels // groups, *kernel_size]`, biases `[out_channels, 1, ..., 1]`,
both drawn uniformly from `±1/sqrt(fan_in)` (fan_in = in_channels // groups * prod(kernel)),
PyTorch's and Equinox's default.

    conv = mt.nn.Conv2d(3, 16, kernel_size=3, padding="SAME", key=mt.random.key(0))
    conv(x)          # f32[3, 32, 32] -> f32[16, 32, 32]; f32[8, 3, 32, 32] -> f32[8, 16, 32, 32]
"""

import math
import operator

import numpy as np

import mytorch.numpy as mnp
from mytorch import lax
from mytorch import random as _random
from mytorch.core.source_info import user_error
from mytorch.nn.module import Module, field

__all__ = [
    "Conv", "Conv1d", "Conv2d", "Conv3d",
    "ConvTranspose", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
]

_PADDING_MODES = {"ZEROS": None, "REFLECT": "reflect", "REPLICATE": "edge", "CIRCULAR": "wrap"}


# ---- argument parsing shared with pooling -----------------------------------------------
def ntuple(value, n, what, owner, minimum=None):
    """`value` (an int or a sequence of n ints, each >= minimum) as a tuple of n ints."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        out = (int(value),) * n
    else:
        try:
            out = tuple(operator.index(v) for v in value)
        except TypeError:
            out = None
    if out is None or len(out) != n:
        raise user_error(
            ValueError,
            f"{owner}: {what} must be an int or a sequence of {n} ints, got {value!r}",
        )
    if minimum is not None and min(out, default=minimum) < minimum:
        raise user_error(ValueError, f"{owner}: {what} must be at least {minimum} in every "
                         f"dim, got {value!r}")
    return out


def padding_init(padding, n, owner, strings=("SAME", "SAME_LOWER", "VALID")):
    """Equinox's padding forms -> a string from `strings` or n (low, high) int pairs."""
    if isinstance(padding, str):
        upper = padding.upper()
        if upper not in strings:
            raise user_error(ValueError, f"{owner}: padding string must be one of "
                             f"{', '.join(map(repr, strings))}, got {padding!r}")
        return upper
    if isinstance(padding, (int, np.integer)) and not isinstance(padding, bool):
        return ((int(padding), int(padding)),) * n
    try:
        items = list(padding)
        if len(items) == n and all(isinstance(p, (tuple, list)) for p in items):
            pairs = tuple((operator.index(p[0]), operator.index(p[1])) for p in items
                          if len(p) == 2)
        elif len(items) == n:
            pairs = tuple((operator.index(p), operator.index(p)) for p in items)
        else:
            pairs = ()
    except TypeError:
        pairs = ()
    if len(pairs) != n or any(lo < 0 or hi < 0 for lo, hi in pairs):
        raise user_error(
            ValueError,
            f"{owner}: padding must be a string, an int, or a sequence of {n} ints or "
            f"(low, high) pairs of non-negative ints, got {padding!r}",
        )
    return pairs


def default_dtype(dtype):
    """`dtype`, or the default floating dtype (float32, float64 under enable_x64)."""
    return mnp.result_type(float) if dtype is None else mnp.dtype(dtype)


def uniform_init(key, shape, dtype, lim):
    """Uniform in [-lim, lim): PyTorch's and Equinox's default for conv/linear/recurrent."""
    return _random.uniform(key, shape, dtype, minval=-lim, maxval=lim)


def shape_str(x):
    """`f32[3,4]` for an array (its abstract type)."""
    return mnp.asarray(x).aval.str_short()


def check_channels_first(owner, x, channels, num_spatial_dims):
    """The input's rank check for `(C, *spatial)` / `(N, C, *spatial)`; True when batched."""
    x = mnp.asarray(x)
    spatial = ", ".join(f"d{i + 1}" for i in range(num_spatial_dims))
    expected = f"({channels}, {spatial}) or (N, {channels}, {spatial})"
    ok_rank = x.ndim in (num_spatial_dims + 1, num_spatial_dims + 2)
    if not ok_rank or (channels is not None and x.shape[x.ndim - num_spatial_dims - 1]
                       != channels):
        raise user_error(
            ValueError, f"{owner} expected an input of shape {expected}, got {shape_str(x)}"
        )
    return x, x.ndim == num_spatial_dims + 2


def _dims(num_spatial_dims):
    """Dimension numbers for channels-first lhs/out and [O, I, *k] weights."""
    sp = "".join("DHW"[3 - num_spatial_dims:]) if num_spatial_dims <= 3 else None
    if sp is not None:
        return (f"NC{sp}", f"OI{sp}", f"NC{sp}")
    n = num_spatial_dims + 2
    spec = tuple(range(n))
    return lax.ConvDimensionNumbers(spec, spec, spec)


def _check_groups(owner, in_channels, out_channels, groups):
    if groups < 1 or in_channels % groups or out_channels % groups:
        raise user_error(
            ValueError,
            f"{owner}: in_channels ({in_channels}) and out_channels ({out_channels}) must "
            f"both be divisible by groups ({groups})",
        )


def _padding_mode_init(mode, owner):
    upper = str(mode).upper()
    if upper not in _PADDING_MODES:
        raise user_error(ValueError, f"{owner}: padding_mode must be 'ZEROS', 'REFLECT', "
                         f"'REPLICATE' or 'CIRCULAR', got {mode!r}")
    return upper


class Conv(Module):
    """N-dimensional convolution (cross-correlation, as every deep-learning library).

    Input `(in_channels, *spatial)` or `(N, in_channels, *spatial)`; output
    `([N,] out_channels, *new_spatial)` with, per spatial dim,
    `new = (d + lo + hi - dilation * (k - 1) - 1) // stride + 1`.

    Args:
      num_spatial_dims: number of spatial dims (2 for images).
      in_channels, out_channels: channel counts; both divisible by `groups`.
      kernel_size, stride, dilation: an int or one int per spatial dim.
      padding: an int, one int per dim, one (low, high) pair per dim, or "SAME",
        "SAME_LOWER", "VALID".
      groups: feature groups (`groups == in_channels` is a depthwise convolution).
      use_bias: add a learned bias `[out_channels, 1, ..., 1]`.
      padding_mode: "ZEROS", "REFLECT" (`1234 -> 32123432`), "REPLICATE"
        (`1234 -> 11123444`) or "CIRCULAR" (`1234 -> 34123412`).
      dtype: of the parameters (default float32, float64 under enable_x64).
      key: the PRNG key for the initialisation (keyword only).
    """

    num_spatial_dims: int = field(static=True)
    weight: object
    bias: object
    in_channels: int = field(static=True)
    out_channels: int = field(static=True)
    kernel_size: tuple = field(static=True)
    stride: tuple = field(static=True)
    padding: object = field(static=True)
    dilation: tuple = field(static=True)
    groups: int = field(static=True)
    use_bias: bool = field(static=True)
    padding_mode: str = field(static=True)

    def __init__(self, num_spatial_dims, in_channels, out_channels, kernel_size, stride=1,
                 padding=0, dilation=1, groups=1, use_bias=True, padding_mode="ZEROS",
                 dtype=None, *, key):
        owner = type(self).__name__
        n = num_spatial_dims
        kernel_size = ntuple(kernel_size, n, "kernel_size", owner, 1)
        _check_groups(owner, in_channels, out_channels, groups)
        dtype = default_dtype(dtype)
        wkey, bkey = _random.split(key, 2)
        fan_in = in_channels // groups * math.prod(kernel_size)
        lim = 1 / math.sqrt(fan_in)
        self.weight = uniform_init(wkey, (out_channels, in_channels // groups) + kernel_size,
                                   dtype, lim)
        self.bias = (uniform_init(bkey, (out_channels,) + (1,) * n, dtype, lim)
                     if use_bias else None)
        self.num_spatial_dims = n
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = ntuple(stride, n, "stride", owner, 1)
        self.padding = padding_init(padding, n, owner)
        self.dilation = ntuple(dilation, n, "dilation", owner, 1)
        self.groups = groups
        self.use_bias = use_bias
        self.padding_mode = _padding_mode_init(padding_mode, owner)

    def _explicit_padding(self, spatial):
        if not isinstance(self.padding, str):
            return self.padding
        window = tuple(d * (k - 1) + 1 for k, d in zip(self.kernel_size, self.dilation,
                                                       strict=True))
        return tuple(lax.padtype_to_pads(spatial, window, self.stride, self.padding))

    def __call__(self, x, *, key=None):
        """`([N,] in_channels, *spatial) -> ([N,] out_channels, *new_spatial)`; `key` is
        ignored (for a uniform call signature)."""
        del key
        owner = type(self).__name__
        x, batched = check_channels_first(owner, x, self.in_channels, self.num_spatial_dims)
        lhs = x if batched else x[None]
        padding = self.padding
        if self.padding_mode != "ZEROS":
            pads = self._explicit_padding(lhs.shape[2:])
            mode = _PADDING_MODES[self.padding_mode]
            lhs = mnp.pad(lhs, [(0, 0), (0, 0)] + [tuple(p) for p in pads], mode=mode)
            padding = "VALID"
        out = lax.conv_general_dilated(
            lhs, self.weight, self.stride, padding, rhs_dilation=self.dilation,
            dimension_numbers=_dims(self.num_spatial_dims), feature_group_count=self.groups,
        )
        if not batched:
            out = out[0]
        if self.use_bias:
            out = out + self.bias
        return out


class Conv1d(Conv):
    """`Conv` with `num_spatial_dims=1`: `([N,] C_in, L) -> ([N,] C_out, L_out)`."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, use_bias=True, padding_mode="ZEROS", dtype=None, *,
                 key):
        super().__init__(1, in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, use_bias, padding_mode, dtype, key=key)


class Conv2d(Conv):
    """`Conv` with `num_spatial_dims=2`: `([N,] C_in, H, W) -> ([N,] C_out, H_out, W_out)`."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=(1, 1), padding=(0, 0),
                 dilation=(1, 1), groups=1, use_bias=True, padding_mode="ZEROS", dtype=None,
                 *, key):
        super().__init__(2, in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, use_bias, padding_mode, dtype, key=key)


class Conv3d(Conv):
    """`Conv` with `num_spatial_dims=3`: `([N,] C_in, D, H, W) -> ([N,] C_out, D', H', W')`."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=(1, 1, 1),
                 padding=(0, 0, 0), dilation=(1, 1, 1), groups=1, use_bias=True,
                 padding_mode="ZEROS", dtype=None, *, key):
        super().__init__(3, in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, use_bias, padding_mode, dtype, key=key)


class ConvTranspose(Module):
    """N-dimensional transposed convolution ("deconvolution"), Equinox's definition.

    It is a convolution of the input dilated by `stride` (holes between elements) with the
    weight `[out_channels, in_channels // groups, *kernel]`, padded so that
    `ConvTranspose(c_out, c_in, k, s, p, ...)` goes back from the output shape of
    `Conv(c_in, c_out, k, s, p, ...)` to its input shape, with the same connectivity. Per
    spatial dim: `new = (d - 1) * stride - lo - hi + dilation * (k - 1) + 1 +
    output_padding`. It is the exact linear transpose (gradient wrt the input) of the
    `Conv` whose weight is `flip(weight, spatial).swapaxes(0, 1)` (groups=1).

    Input `([N,] in_channels, *spatial)`, output `([N,] out_channels, *new_spatial)`.

    Args:
      num_spatial_dims, in_channels, out_channels, kernel_size, stride, dilation, groups,
        use_bias, dtype, key: as `Conv`.
      padding: the padding of the equivalent `Conv` (an int, ints, pairs, "SAME",
        "SAME_LOWER" or "VALID").
      output_padding: extra size at the high end of each dim (each < stride), choosing among
        the input shapes a strided `Conv` maps to the same output shape.
      padding_mode: "ZEROS", or "CIRCULAR" with "SAME"/"SAME_LOWER" padding and no
        output_padding.
    """

    num_spatial_dims: int = field(static=True)
    weight: object
    bias: object
    in_channels: int = field(static=True)
    out_channels: int = field(static=True)
    kernel_size: tuple = field(static=True)
    stride: tuple = field(static=True)
    padding: object = field(static=True)
    output_padding: tuple = field(static=True)
    dilation: tuple = field(static=True)
    groups: int = field(static=True)
    use_bias: bool = field(static=True)
    padding_mode: str = field(static=True)

    def __init__(self, num_spatial_dims, in_channels, out_channels, kernel_size, stride=1,
                 padding=0, output_padding=0, dilation=1, groups=1, use_bias=True,
                 padding_mode="ZEROS", dtype=None, *, key):
        owner = type(self).__name__
        n = num_spatial_dims
        kernel_size = ntuple(kernel_size, n, "kernel_size", owner, 1)
        stride = ntuple(stride, n, "stride", owner, 1)
        output_padding = ntuple(output_padding, n, "output_padding", owner)
        if any(o >= s or o < 0 for o, s in zip(output_padding, stride, strict=True)):
            raise user_error(ValueError, f"{owner}: output_padding {output_padding} must be "
                             f"non-negative and smaller than stride {stride} in every dim")
        _check_groups(owner, in_channels, out_channels, groups)
        padding = padding_init(padding, n, owner)
        padding_mode = _padding_mode_init(padding_mode, owner)
        if padding_mode in ("REFLECT", "REPLICATE"):
            raise user_error(ValueError, f"{owner}: padding_mode {padding_mode!r} has no "
                             "transposed form; use 'ZEROS' or 'CIRCULAR'")
        if padding_mode == "CIRCULAR" and (any(output_padding)
                                           or padding not in ("SAME", "SAME_LOWER")):
            raise user_error(ValueError, f"{owner}: padding_mode 'CIRCULAR' needs padding "
                             "'SAME' or 'SAME_LOWER' and output_padding 0")
        dtype = default_dtype(dtype)
        wkey, bkey = _random.split(key, 2)
        lim = 1 / math.sqrt(in_channels // groups * math.prod(kernel_size))
        self.weight = uniform_init(wkey, (out_channels, in_channels // groups) + kernel_size,
                                   dtype, lim)
        self.bias = (uniform_init(bkey, (out_channels,) + (1,) * n, dtype, lim)
                     if use_bias else None)
        self.num_spatial_dims = n
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.output_padding = output_padding
        self.dilation = ntuple(dilation, n, "dilation", owner, 1)
        self.groups = groups
        self.use_bias = use_bias
        self.padding_mode = padding_mode

    def _transposed_padding(self):
        """The (low, high) padding of the dilated input, per spatial dim."""
        out = []
        for i in range(self.num_spatial_dims):
            k, s, a, d = (self.kernel_size[i], self.stride[i], self.output_padding[i],
                          self.dilation[i])
            span = d * (k - 1)
            if self.padding == "VALID":
                lo = hi = 0
            elif isinstance(self.padding, str):
                total = span - s + a + 1
                if total < 0:  # SAME with stride > window: the output grows by -total
                    a, total = -total, 0
                lo = (total + (self.padding == "SAME_LOWER")) // 2
                hi = total - lo
            else:
                lo, hi = self.padding[i]
            out.append((span - lo, span - hi + a))
        return tuple(out)

    def __call__(self, x, *, key=None):
        """`([N,] in_channels, *spatial) -> ([N,] out_channels, *new_spatial)`; `key` is
        ignored."""
        del key
        owner = type(self).__name__
        x, batched = check_channels_first(owner, x, self.in_channels, self.num_spatial_dims)
        lhs = x if batched else x[None]
        pads = self._transposed_padding()
        if self.padding_mode == "CIRCULAR":
            # wrap whole strides of the padding onto the undilated input; the rest stays zero
            wrap = [(lo // s, hi // s) for (lo, hi), s in zip(pads, self.stride, strict=True)]
            lhs = mnp.pad(lhs, [(0, 0), (0, 0)] + wrap, mode="wrap")
            pads = tuple((lo % s, hi % s) for (lo, hi), s in zip(pads, self.stride,
                                                                 strict=True))
        out = lax.conv_general_dilated(
            lhs, self.weight, (1,) * self.num_spatial_dims, pads, lhs_dilation=self.stride,
            rhs_dilation=self.dilation, dimension_numbers=_dims(self.num_spatial_dims),
            feature_group_count=self.groups,
        )
        if not batched:
            out = out[0]
        if self.use_bias:
            out = out + self.bias
        return out


class ConvTranspose1d(ConvTranspose):
    """`ConvTranspose` with `num_spatial_dims=1` (Equinox's argument order: stride, then
    output_padding, then padding)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, output_padding=0,
                 padding=0, dilation=1, groups=1, use_bias=True, padding_mode="ZEROS",
                 dtype=None, *, key):
        super().__init__(1, in_channels, out_channels, kernel_size, stride, padding,
                         output_padding, dilation, groups, use_bias, padding_mode, dtype,
                         key=key)


class ConvTranspose2d(ConvTranspose):
    """`ConvTranspose` with `num_spatial_dims=2` (argument order as `ConvTranspose1d`)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=(1, 1),
                 output_padding=(0, 0), padding=(0, 0), dilation=(1, 1), groups=1,
                 use_bias=True, padding_mode="ZEROS", dtype=None, *, key):
        super().__init__(2, in_channels, out_channels, kernel_size, stride, padding,
                         output_padding, dilation, groups, use_bias, padding_mode, dtype,
                         key=key)


class ConvTranspose3d(ConvTranspose):
    """`ConvTranspose` with `num_spatial_dims=3` (argument order as `ConvTranspose1d`)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=(1, 1, 1),
                 output_padding=(0, 0, 0), padding=(0, 0, 0), dilation=(1, 1, 1), groups=1,
                 use_bias=True, padding_mode="ZEROS", dtype=None, *, key):
        super().__init__(3, in_channels, out_channels, kernel_size, stride, padding,
                         output_padding, dilation, groups, use_bias, padding_mode, dtype,
                         key=key)
