"""mt.nn.initializers: jax.nn.initializers by the same names, signatures and formulas.

Every builder returns `init(key, shape, dtype=None) -> Array` (dtype None: float32, or
float64 with x64). Given the same key an initializer returns JAX's numbers: the draws are
mt.random's (bit-exact with jax.random) and the scalings are the same float operations in
the same dtype; `orthogonal` goes through a QR and agrees to float round-off.

    >>> import mytorch as mt
    >>> w = mt.nn.initializers.glorot_uniform()(mt.random.key(0), (3, 4))
    >>> w.shape
    (3, 4)
"""

import math
import operator
import typing
from typing import Protocol

import numpy as np

import mytorch.numpy as mnp
from mytorch import random
from mytorch.core import dtypes
from mytorch.core.source_info import user_error

__all__ = [
    "Initializer",
    "constant",
    "delta_orthogonal",
    "glorot_normal",
    "glorot_uniform",
    "he_normal",
    "he_uniform",
    "kaiming_normal",
    "kaiming_uniform",
    "lecun_normal",
    "lecun_uniform",
    "normal",
    "ones",
    "orthogonal",
    "truncated_normal",
    "uniform",
    "variance_scaling",
    "xavier_normal",
    "xavier_uniform",
    "zeros",
]

# stddev of a standard normal truncated to [-2, 2]: variance_scaling divides by it so the
# truncated draws have the requested variance
_TRUNC_STD = 0.87962566103423978


@typing.runtime_checkable
class Initializer(Protocol):
    """What every builder returns: `init(key, shape, dtype=None) -> Array`."""

    def __call__(self, key, shape, dtype=None): ...


def _dtype(name, dtype):
    if dtype is None:
        return dtypes.default_float()
    d = dtypes.to_dtype(dtype)
    if not dtypes.is_float(d):
        raise user_error(
            ValueError, f"nn.initializers.{name}: dtype must be a float dtype, got {d}"
        )
    return dtypes.canonicalize(d, explicit=True)


def _shape(name, shape):
    try:
        if np.ndim(shape) == 0:
            return (operator.index(shape),)
        return tuple(operator.index(d) for d in shape)
    except TypeError:
        raise user_error(
            TypeError, f"nn.initializers.{name}: shape must be a tuple of ints, got {shape!r}"
        ) from None


def zeros(key, shape, dtype=None):
    """An array of zeros of `shape` (the key is ignored)."""
    return mnp.zeros(_shape("zeros", shape), _dtype("zeros", dtype))


def ones(key, shape, dtype=None):
    """An array of ones of `shape` (the key is ignored)."""
    return mnp.ones(_shape("ones", shape), _dtype("ones", dtype))


def constant(value, dtype=None):
    """An initializer filling `shape` with `value` (the key is ignored).

    Args:
      value: the fill value (scalar or anything broadcastable to the shape).
      dtype: the initializer's default dtype.
    """

    def init(key, shape, dtype=dtype):
        return mnp.full(_shape("constant", shape), value, dtype=_dtype("constant", dtype))

    return init


def uniform(scale=1e-2, dtype=None):
    """An initializer drawing uniformly from `[0, scale)`: `uniform(key, shape) * scale`."""

    def init(key, shape, dtype=dtype):
        dtype = _dtype("uniform", dtype)
        return random.uniform(key, _shape("uniform", shape), dtype) * mnp.array(scale, dtype)

    return init


def normal(stddev=1e-2, dtype=None):
    """An initializer drawing from N(0, stddev^2): `normal(key, shape) * stddev`."""

    def init(key, shape, dtype=dtype):
        dtype = _dtype("normal", dtype)
        return random.normal(key, _shape("normal", shape), dtype) * mnp.array(stddev, dtype)

    return init


def truncated_normal(stddev=1e-2, dtype=None, lower=-2.0, upper=2.0):
    """An initializer drawing a standard normal truncated to `[lower, upper]`, times
    `stddev` (no variance correction: `stddev` is that of the untruncated normal)."""

    def init(key, shape, dtype=dtype):
        dtype = _dtype("truncated_normal", dtype)
        shape = _shape("truncated_normal", shape)
        draws = random.truncated_normal(key, lower, upper, shape, dtype)
        return draws * mnp.array(stddev, dtype)

    return init


def _axes_size(name, shape, axes, what):
    axes = (axes,) if isinstance(axes, int) else tuple(axes)
    for ax in axes:
        if not -len(shape) <= ax < len(shape):
            raise user_error(
                ValueError,
                f"nn.initializers.{name}: {what} {ax} is out of range for a weight of shape "
                f"{shape} ({len(shape)} dims)",
            )
    return math.prod(shape[ax] for ax in axes)


def _compute_fans(shape, in_axis=-2, out_axis=-1, batch_axis=(), name="variance_scaling"):
    """(fan_in, fan_out) of a weight `shape`: the in/out sizes times the receptive field
    (the product of every axis that is none of in_axis, out_axis, batch_axis)."""
    if isinstance(in_axis, int) and in_axis == -2 and len(shape) <= 1:
        raise user_error(
            ValueError,
            f"nn.initializers.{name}: can't compute input and output sizes of a "
            f"{len(shape)}-dimensional weight of shape {shape} with the default in_axis; "
            "give a weight of at least 2 dims, or pass in_axis explicitly",
        )
    in_size = _axes_size(name, shape, in_axis, "in_axis")
    out_size = _axes_size(name, shape, out_axis, "out_axis")
    batch_size = _axes_size(name, shape, batch_axis, "batch_axis")
    receptive_field = math.prod(shape) / in_size / out_size / batch_size
    return in_size * receptive_field, out_size * receptive_field


_MODES = ("fan_in", "fan_out", "fan_avg", "fan_geo_avg")
_DISTRIBUTIONS = ("truncated_normal", "normal", "uniform")


def variance_scaling(scale, mode, distribution, in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    """An initializer whose draws have variance `scale / n`, n set by `mode` from the fans.

    Args:
      scale: positive float.
      mode: 'fan_in', 'fan_out', 'fan_avg' ((in + out) / 2) or 'fan_geo_avg' (sqrt(in out)).
      distribution: 'truncated_normal' (truncated at +-2 and rescaled by 1/0.8796... so the
        truncated draws have the variance), 'normal', or 'uniform' (on +-sqrt(3 scale / n)).
      in_axis, out_axis, batch_axis: axis or axes of the weight holding the inputs, the
        outputs, and a batch to ignore; every other axis is receptive field (a conv
        kernel's spatial dims), which multiplies both fans.
      dtype: the initializer's default dtype.

    Returns:
      `init(key, shape, dtype=None)`.

    Raises:
      ValueError (when called): an unknown mode or distribution, or a weight of rank < 2
      with the default in_axis.
    """
    if mode not in _MODES:
        raise user_error(
            ValueError,
            f"invalid mode for variance scaling initializer: {mode!r}; expected one of {_MODES}",
        )
    if distribution not in _DISTRIBUTIONS:
        raise user_error(
            ValueError,
            f"invalid distribution for variance scaling initializer: "
            f"{distribution!r}; expected one of {_DISTRIBUTIONS}",
        )

    def init(key, shape, dtype=dtype):
        shape = _shape("variance_scaling", shape)
        dtype = _dtype("variance_scaling", dtype)
        fan_in, fan_out = _compute_fans(shape, in_axis, out_axis, batch_axis)
        denominator = {
            "fan_in": fan_in,
            "fan_out": fan_out,
            "fan_avg": (fan_in + fan_out) / 2,
            "fan_geo_avg": (fan_in * fan_out) ** 0.5,
        }[mode]
        variance = mnp.array(scale / denominator, dtype=dtype)
        if distribution == "truncated_normal":
            stddev = mnp.sqrt(variance) / mnp.array(_TRUNC_STD, dtype)
            return random.truncated_normal(key, -2, 2, shape, dtype) * stddev
        if distribution == "normal":
            return random.normal(key, shape, dtype) * mnp.sqrt(variance)
        return random.uniform(key, shape, dtype, -1) * mnp.sqrt(3 * variance)

    return init


def _preset(name, scale, mode, distribution, doc):
    def builder(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
        return variance_scaling(
            scale,
            mode,
            distribution,
            in_axis=in_axis,
            out_axis=out_axis,
            batch_axis=batch_axis,
            dtype=dtype,
        )

    builder.__name__ = builder.__qualname__ = name
    builder.__doc__ = (
        f"{doc}: `variance_scaling({scale}, {mode!r}, {distribution!r}, in_axis, out_axis, "
        "batch_axis, dtype)`; returns `init(key, shape, dtype=None)`."
    )
    return builder


glorot_uniform = _preset("glorot_uniform", 1.0, "fan_avg", "uniform", "Glorot (Xavier) uniform")
glorot_normal = _preset(
    "glorot_normal", 1.0, "fan_avg", "truncated_normal", "Glorot (Xavier) normal"
)
lecun_uniform = _preset("lecun_uniform", 1.0, "fan_in", "uniform", "LeCun uniform")
lecun_normal = _preset("lecun_normal", 1.0, "fan_in", "truncated_normal", "LeCun normal")
he_uniform = _preset("he_uniform", 2.0, "fan_in", "uniform", "He (Kaiming) uniform")
he_normal = _preset("he_normal", 2.0, "fan_in", "truncated_normal", "He (Kaiming) normal")
xavier_uniform, xavier_normal = glorot_uniform, glorot_normal
kaiming_uniform, kaiming_normal = he_uniform, he_normal


def orthogonal(scale=1.0, column_axis=-1, dtype=None):
    """An initializer of (semi-)orthogonal weights, times `scale`.

    The weight is viewed as a matrix of `shape[column_axis]` columns and all other axes
    flattened into rows; that matrix is drawn with `mt.random.orthogonal` (orthonormal
    rows or columns, whichever are fewer) and put back into `shape`. Needs rank >= 2; a
    shape with a 0 dim gives zeros.
    """

    def init(key, shape, dtype=dtype):
        shape = _shape("orthogonal", shape)
        dtype = _dtype("orthogonal", dtype)
        if len(shape) < 2:
            raise user_error(
                ValueError,
                f"nn.initializers.orthogonal requires at least a 2D shape, got {shape}",
            )
        if not -len(shape) <= column_axis < len(shape):
            raise user_error(
                ValueError,
                f"nn.initializers.orthogonal: column_axis {column_axis} is out of range "
                f"for shape {shape}",
            )
        if any(d == 0 for d in shape):
            return mnp.zeros(shape, dtype)
        n_cols = shape[column_axis]
        n_rows = math.prod(shape) // n_cols
        q = random.orthogonal(key, n_rows, (), dtype, n_cols)
        rest = tuple(np.delete(np.asarray(shape), column_axis).tolist())
        q = mnp.moveaxis(mnp.reshape(q, rest + (n_cols,)), -1, column_axis)
        return mnp.array(scale, dtype) * q

    return init


def delta_orthogonal(scale=1.0, column_axis=-1, dtype=None):
    """An initializer of delta-orthogonal conv kernels (Xiao et al. 2018).

    For a kernel `(*spatial, in, out)` with 1 to 3 spatial dims and `in <= out`: zeros
    everywhere but the spatial centre `(k - 1) // 2`, which holds an orthogonal `(in, out)`
    matrix times `scale`.
    """

    def init(key, shape, dtype=dtype):
        shape = _shape("delta_orthogonal", shape)
        dtype = _dtype("delta_orthogonal", dtype)
        if len(shape) not in (3, 4, 5):
            raise user_error(
                ValueError,
                f"nn.initializers.delta_orthogonal requires a 3D, 4D or 5D shape, got {shape}",
            )
        if shape[-1] < shape[-2]:
            raise user_error(
                ValueError,
                "nn.initializers.delta_orthogonal: `fan_in` must be less or equal than "
                f"`fan_out`, got shape {shape} (in {shape[-2]} > out {shape[-1]})",
            )
        ortho = orthogonal(scale=scale, column_axis=column_axis, dtype=dtype)(key, shape[-2:])
        centre = tuple((k - 1) // 2 for k in shape[:-2])
        return mnp.zeros(shape, dtype).at[centre].set(ortho)

    return init
