"""Windowed primitives: `conv_general_dilated` and `reduce_window_{sum,max,min}`.

Both slide a window over the spatial dims of an operand that may be dilated (holes between
elements: `lhs_dilation`/`base_dilation`) and padded (`(low, high)` per dim; negative
padding crops). The window itself may be dilated (`rhs_dilation`/`window_dilation`) and
moves by `window_strides`. Per dim, with d(n, r) = (n - 1) * r + 1 (0 for n = 0):

    out = max(0, (d(in, base_dilation) + low + high - d(window, window_dilation)) // stride + 1)

Convolution layouts follow JAX: `ConvDimensionNumbers(lhs_spec, rhs_spec, out_spec)` lists,
for each operand, the dim of (batch N, feature C, spatial...), (out feature O, in feature I,
spatial...) and (N, C, spatial...):

    conv_general_dilated(f32[8,32,32,3], f32[3,3,3,16], (1, 1), "SAME",
                         dimension_numbers=("NHWC", "HWIO", "NHWC")) -> f32[8,32,32,16]

The NumPy kernels live in mytorch/backends/numpy/convolution.py.
"""

import operator
from typing import NamedTuple

import numpy as np

from mytorch.core import dtypes
from mytorch.core.array import Array, ArrayImpl
from mytorch.core.aval import ShapedArray
from mytorch.core.primitive import Primitive
from mytorch.lax import elementwise as _ew
from mytorch.lax._utils import asarray, coerce_operands, short, weak_scalar
from mytorch.lax.dot import (
    check_operand_dtypes,
    check_precision,
    normalize_precision,
    normalize_preferred_element_type,
)

__all__ = [
    "ConvDimensionNumbers", "conv_dimension_numbers", "conv_general_permutations",
    "padtype_to_pads", "conv_general_dilated", "conv", "conv_with_general_padding",
    "conv_transpose", "reduce_window", "reduce_window_sum", "reduce_window_max",
    "reduce_window_min", "conv_general_dilated_p", "reduce_window_sum_p",
    "reduce_window_max_p", "reduce_window_min_p",
]


class ConvDimensionNumbers(NamedTuple):
    """The dims of (N, C, spatial...) in lhs, (O, I, spatial...) in rhs and (N, C,
    spatial...) in the output: three tuples of ints, each a permutation of the operand's
    dims."""

    lhs_spec: tuple
    rhs_spec: tuple
    out_spec: tuple


# ---- shared helpers: int tuples, padding, window shapes ----------------------------------
def _ints(values, what, op):
    """A tuple of Python ints (TypeError otherwise)."""
    if isinstance(values, (int, np.integer)):
        values = (values,)
    try:
        return tuple(operator.index(v) for v in values)
    except TypeError:
        raise TypeError(f"{op}: {what} must be a sequence of ints, got {values!r}") from None


def _pairs(padding, op):
    """Explicit padding as a tuple of (low, high) pairs of Python ints."""
    try:
        pairs = tuple(tuple(operator.index(v) for v in p) for p in padding)
    except TypeError:
        pairs = None
    if pairs is None or any(len(p) != 2 for p in pairs):
        raise TypeError(
            f"{op}: padding must be 'SAME', 'SAME_LOWER', 'VALID' or a sequence of (low, high) "
            f"int pairs, got {padding!r}"
        )
    return pairs


def _dilate(n, r):
    return 0 if n == 0 else (n - 1) * r + 1


def padtype_to_pads(in_shape, window_shape, window_strides, padding):
    """(low, high) pads per dim for a padding string, as XLA/JAX define them.

    "VALID" pads nothing; "SAME" pads so that out = ceil(in / stride), with the extra pad
    (if odd) at the high end; "SAME_LOWER" puts it at the low end.

    >>> padtype_to_pads((5, 6), (3, 3), (2, 1), "SAME")
    ((1, 1), (1, 1))
    """
    op = "padtype_to_pads"
    if not isinstance(padding, str):
        raise TypeError(f"{op}: padding must be a string, got {padding!r}")
    kind = padding.upper()
    if kind not in ("SAME", "SAME_LOWER", "VALID"):
        raise ValueError(
            f"padding must be 'SAME', 'SAME_LOWER', 'VALID' or a sequence of (low, high) "
            f"pairs, got {padding!r}"
        )
    in_shape, window_shape = _ints(in_shape, "in_shape", op), _ints(window_shape, "window", op)
    strides = _ints(window_strides, "window_strides", op)
    if not len(in_shape) == len(window_shape) == len(strides):
        raise ValueError(
            f"{op}: in_shape {in_shape}, window {window_shape} and strides {strides} need one "
            "entry per spatial dim each"
        )
    if any(s < 1 for s in strides):
        raise ValueError(f"{op}: window_strides must be positive, got {strides}")
    if kind == "VALID":
        return tuple((0, 0) for _ in in_shape)
    pads = []
    for n, w, s in zip(in_shape, window_shape, strides, strict=True):
        out = -(-n // s)
        total = max((out - 1) * s + w - n, 0)
        small, big = total // 2, total - total // 2
        pads.append((small, big) if kind == "SAME" else (big, small))
    return tuple(pads)


def _check_ints(op, name, values, n, minimum):
    if not (isinstance(values, tuple) and len(values) == n
            and all(type(v) is int for v in values)):
        raise ValueError(f"{op}: {name} must be a tuple of {n} ints (one per spatial dim), "
                         f"got {values!r}")
    if any(v < minimum for v in values):
        raise ValueError(f"{op}: {name} must be >= {minimum}, got {values}")


def _check_padding(op, padding, n):
    if not (isinstance(padding, tuple) and len(padding) == n and all(
            isinstance(p, tuple) and len(p) == 2 and all(type(v) is int for v in p)
            for p in padding)):
        raise ValueError(f"{op}: padding must be a tuple of {n} (low, high) int pairs, "
                         f"got {padding!r}")


def window_output_shape(op, in_shape, window, strides, padding, base_dilation,
                        window_dilation):
    """The output spatial shape of a window sliding over `in_shape` (see the module doc)."""
    out = []
    for i, (n, w, s, (lo, hi), bd, wd) in enumerate(zip(
            in_shape, window, strides, padding, base_dilation, window_dilation, strict=True)):
        padded = _dilate(n, bd) + lo + hi
        if padded < 0:
            raise ValueError(
                f"{op}: padding {(lo, hi)} crops spatial dim {i} (size {_dilate(n, bd)} after "
                f"dilation) to a negative size {padded}"
            )
        out.append(max(0, (padded - _dilate(w, wd)) // s + 1))
    return tuple(out)


# ---- convolution: dimension numbers ------------------------------------------------------
def conv_general_permutations(dimension_numbers):
    """(lhs_perm, rhs_perm, out_perm) for layout strings like ("NHWC", "HWIO", "NHWC").

    Spatial dims are ordered as they appear in the rhs string.
    """
    op = "conv_general_dilated"
    specs = tuple(dimension_numbers)
    for spec, (a, b) in zip(specs, (("N", "C"), ("O", "I"), ("N", "C")), strict=True):
        if not (isinstance(spec, str) and spec.count(a) == 1 and spec.count(b) == 1):
            raise ValueError(f"{op}: layout {spec!r} must contain {a!r} and {b!r} once each")
        if len(set(spec)) != len(spec):
            raise ValueError(f"{op}: layout {spec!r} repeats a letter")
    lhs, rhs, out = specs
    spatial = [c for c in rhs if c not in "OI"]
    if not set(lhs) - set("NC") == set(spatial) == set(out) - set("NC"):
        raise ValueError(f"{op}: the spatial letters of the layouts {specs} must match")

    def perm(spec, first, second):
        rest = sorted((i for i, c in enumerate(spec) if c in spatial),
                      key=lambda i: spatial.index(spec[i]))
        return (spec.index(first), spec.index(second), *rest)

    return perm(lhs, "N", "C"), perm(rhs, "O", "I"), perm(out, "N", "C")


def conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers):
    """Normalise `dimension_numbers` to a ConvDimensionNumbers of int tuples.

    Args:
      lhs_shape, rhs_shape: the operand shapes (equal ranks >= 2).
      dimension_numbers: None (NC..., OI..., NC...), three layout strings such as
        ("NHWC", "HWIO", "NHWC"), or a ConvDimensionNumbers.

    >>> conv_dimension_numbers((1, 5, 5, 3), (3, 3, 3, 8), ("NHWC", "HWIO", "NHWC"))
    ConvDimensionNumbers(lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1), out_spec=(0, 3, 1, 2))
    """
    op = "conv_general_dilated"
    ndim = len(lhs_shape)
    if ndim != len(rhs_shape) or ndim < 2:
        raise TypeError(
            f"{op} needs lhs and rhs of one rank >= 2 (batch, feature and spatial dims), got "
            f"shapes {tuple(lhs_shape)} and {tuple(rhs_shape)}"
        )
    if dimension_numbers is None:
        iota = tuple(range(ndim))
        return ConvDimensionNumbers(iota, iota, iota)
    if isinstance(dimension_numbers, ConvDimensionNumbers):
        specs = tuple(_ints(s, "a dimension spec", op) for s in dimension_numbers)
    elif (isinstance(dimension_numbers, (tuple, list)) and len(dimension_numbers) == 3
          and all(isinstance(s, str) for s in dimension_numbers)):
        for s in dimension_numbers:
            if len(s) != ndim:
                raise ValueError(f"{op}: layout {s!r} has {len(s)} letters for operands of "
                                 f"rank {ndim}")
        specs = conv_general_permutations(dimension_numbers)
    else:
        raise TypeError(
            f"{op}: dimension_numbers must be None, a tuple of three layout strings such as "
            f"('NHWC', 'HWIO', 'NHWC') or a ConvDimensionNumbers, got {dimension_numbers!r}"
        )
    return ConvDimensionNumbers(*specs)


# ---- convolution: the primitive ----------------------------------------------------------
conv_general_dilated_p = Primitive("conv_general_dilated", kind="contraction")


def _check_dnums(op, dnums, ndim):
    if not isinstance(dnums, ConvDimensionNumbers):
        raise ValueError(f"{op}: dimension_numbers must be a ConvDimensionNumbers, got "
                         f"{dnums!r}; the binder normalises layout strings")
    for spec in dnums:
        if not (isinstance(spec, tuple) and sorted(spec) == list(range(ndim))
                and all(type(i) is int for i in spec)):
            raise ValueError(f"{op}: each spec of {dnums} must be a permutation of the "
                             f"{ndim} operand dims")


def _check_groups(op, lhs, rhs, n, c, o, i, g, b):
    for name, v in (("feature_group_count", g), ("batch_group_count", b)):
        if type(v) is not int or v < 1:
            raise ValueError(f"{op}: {name} must be a positive int, got {v!r}")
    if g > 1 and b > 1:
        raise ValueError(f"{op}: at most one of feature_group_count ({g}) and "
                         f"batch_group_count ({b}) may exceed 1")
    if c % g:
        raise ValueError(f"{op}: feature_group_count={g} must divide the {c} lhs features of "
                         f"{short(lhs)}")
    if c // g != i:
        groups = f" / feature_group_count={g}" if g > 1 else ""
        raise TypeError(
            f"{op}: the rhs input features must equal the lhs features{groups}: lhs "
            f"{short(lhs)} has {c} features but rhs {short(rhs)} has {i} input features"
        )
    for name, v in (("feature_group_count", g), ("batch_group_count", b)):
        if o % v:
            raise ValueError(f"{op}: {name}={v} must divide the {o} rhs output features of "
                             f"{short(rhs)}")
    if n % b:
        raise ValueError(f"{op}: batch_group_count={b} must divide the lhs batch size {n} of "
                         f"{short(lhs)}")


@conv_general_dilated_p.def_abstract_eval
def _conv_general_dilated_abstract_eval(
        lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers,
        feature_group_count, batch_group_count, precision, preferred_element_type):
    op = "conv_general_dilated"
    check_precision(op, precision)
    dtype = check_operand_dtypes(op, lhs, rhs, preferred_element_type)
    if lhs.ndim != rhs.ndim or lhs.ndim < 2:
        raise TypeError(f"{op} needs lhs and rhs of one rank >= 2, got {short(lhs)} and "
                        f"{short(rhs)}")
    _check_dnums(op, dimension_numbers, lhs.ndim)
    nsp = lhs.ndim - 2
    _check_ints(op, "window_strides", window_strides, nsp, 1)
    _check_ints(op, "lhs_dilation", lhs_dilation, nsp, 1)
    _check_ints(op, "rhs_dilation", rhs_dilation, nsp, 1)
    _check_padding(op, padding, nsp)
    lspec, rspec, ospec = dimension_numbers
    n, c, *spatial = (lhs.shape[d] for d in lspec)
    o, i, *kernel = (rhs.shape[d] for d in rspec)
    _check_groups(op, lhs, rhs, n, c, o, i, feature_group_count, batch_group_count)
    out_spatial = window_output_shape(op, spatial, kernel, window_strides, padding,
                                      lhs_dilation, rhs_dilation)
    shape = [0] * lhs.ndim
    for d, size in zip(ospec, (n // batch_group_count, o, *out_spatial), strict=True):
        shape[d] = size
    weak = preferred_element_type is None and lhs.weak_type and rhs.weak_type
    return ShapedArray(tuple(shape), dtype, weak)


def conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=None,
                         rhs_dilation=None, dimension_numbers=None, feature_group_count=1,
                         batch_group_count=1, precision=None, preferred_element_type=None):
    """General n-d convolution (cross-correlation, as in XLA): JAX's signature and semantics.

    Args:
      lhs: the input, e.g. f32[N,C,H,W] (layout from dimension_numbers).
      rhs: the kernel, e.g. f32[O,I,KH,KW] with I = C / feature_group_count.
      window_strides: one positive int per spatial dim.
      padding: "SAME", "SAME_LOWER", "VALID", or one (low, high) pair per spatial dim
        (negative values crop). String padding is computed on the undilated lhs shape.
      lhs_dilation: holes between input elements (transposed convolution); default 1s.
      rhs_dilation: holes between kernel taps (atrous convolution); default 1s.
      dimension_numbers: None, layout strings like ("NHWC", "HWIO", "NHWC"), or a
        ConvDimensionNumbers (see conv_dimension_numbers).
      feature_group_count: split the features into groups (grouped/depthwise convolution).
      batch_group_count: split the batch into groups matched with output feature groups.
      precision: recorded only. preferred_element_type: the output dtype (None: lhs's).

    Returns:
      The output, e.g. f32[N / batch_group_count, O, OH, OW] in the out layout.

    >>> import numpy as np; from mytorch import lax; from mytorch.core.array import from_numpy
    >>> x = from_numpy(np.ones((1, 2, 5, 5), np.float32))
    >>> w = from_numpy(np.ones((4, 2, 3, 3), np.float32))
    >>> lax.conv_general_dilated(x, w, (1, 1), "SAME").shape
    (1, 4, 5, 5)
    """
    op = "conv_general_dilated"
    lhs, rhs = coerce_operands(op, lhs, rhs)
    dnums = conv_dimension_numbers(lhs.shape, rhs.shape, dimension_numbers)
    nsp = lhs.ndim - 2
    ones = (1,) * nsp
    window_strides = _ints(window_strides, "window_strides", op)
    lhs_dilation = ones if lhs_dilation is None else _ints(lhs_dilation, "lhs_dilation", op)
    rhs_dilation = ones if rhs_dilation is None else _ints(rhs_dilation, "rhs_dilation", op)
    if isinstance(padding, str):
        _check_ints(op, "window_strides", window_strides, nsp, 1)
        _check_ints(op, "rhs_dilation", rhs_dilation, nsp, 1)
        kernel = [rhs.shape[d] for d in dnums.rhs_spec[2:]]
        window = [_dilate(k, r) for k, r in zip(kernel, rhs_dilation, strict=True)]
        spatial = [lhs.shape[d] for d in dnums.lhs_spec[2:]]
        padding = padtype_to_pads(spatial, window, window_strides, padding)
    else:
        padding = _pairs(padding, op)
    return conv_general_dilated_p.bind(
        lhs, rhs, window_strides=window_strides, padding=padding, lhs_dilation=lhs_dilation,
        rhs_dilation=rhs_dilation, dimension_numbers=dnums,
        feature_group_count=operator.index(feature_group_count),
        batch_group_count=operator.index(batch_group_count),
        precision=normalize_precision(precision),
        preferred_element_type=normalize_preferred_element_type(preferred_element_type),
    )


def conv(lhs, rhs, window_strides, padding, precision=None, preferred_element_type=None):
    """Convolution with NC.../OI.../NC... layouts and no dilation (see
    conv_general_dilated): f32[N,C,H,W] * f32[O,C,KH,KW] -> f32[N,O,OH,OW]."""
    return conv_general_dilated(lhs, rhs, window_strides, padding, precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_with_general_padding(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                              precision=None, preferred_element_type=None):
    """Convolution with NC.../OI.../NC... layouts, explicit padding and dilations (see
    conv_general_dilated)."""
    return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation,
                                rhs_dilation, precision=precision,
                                preferred_element_type=preferred_element_type)


_TRANSPOSE_LAYOUTS = {2: ("NC", "IO", "NC"), 3: ("NHC", "HIO", "NHC"),
                      4: ("NHWC", "HWIO", "NHWC"), 5: ("NHWDC", "HWDIO", "NHWDC")}


def _conv_transpose_padding(k, s, padding):
    if padding == "SAME":
        total = k + s - 2
        low = k - 1 if s > k - 1 else -(-total // 2)
    else:  # VALID
        total = k + s - 2 + max(k - s, 0)
        low = k - 1
    return low, total - low


def conv_transpose(lhs, rhs, strides, padding, rhs_dilation=None, dimension_numbers=None,
                   transpose_kernel=False, precision=None, preferred_element_type=None):
    """Transposed ("deconvolution") convolution, as `jax.lax.conv_transpose`: a convolution
    with lhs_dilation = strides.

    Args:
      lhs: the input, by default f32[N,H,W,C] (NHWC/HWIO/NHWC layouts for 2-D).
      rhs: the kernel f32[KH,KW,I,O].
      strides: the dilation of the input (the stride of the forward convolution).
      padding: "SAME", "VALID" or explicit (low, high) pairs.
      transpose_kernel: flip the kernel's spatial dims and swap its I and O dims (the
        gradient of a forward convolution).
    """
    lhs, rhs = coerce_operands("conv_transpose", lhs, rhs)
    if dimension_numbers is None:
        if lhs.ndim not in _TRANSPOSE_LAYOUTS:
            raise ValueError(f"conv_transpose has no default layout for rank {lhs.ndim}; "
                             "pass dimension_numbers")
        dimension_numbers = _TRANSPOSE_LAYOUTS[lhs.ndim]
    dnums = conv_dimension_numbers(lhs.shape, rhs.shape, dimension_numbers)
    nsp = lhs.ndim - 2
    strides = _ints(strides, "strides", "conv_transpose")
    rhs_dilation = (1,) * nsp if rhs_dilation is None else _ints(rhs_dilation, "rhs_dilation",
                                                                "conv_transpose")
    if isinstance(padding, str) and padding.upper() in ("SAME", "VALID"):
        kernel = [_dilate(rhs.shape[d], r) for d, r in zip(dnums.rhs_spec[2:], rhs_dilation,
                                                           strict=True)]
        padding = tuple(_conv_transpose_padding(k, s, padding.upper())
                        for k, s in zip(kernel, strides, strict=True))
    if transpose_kernel:
        from mytorch.lax.structural import rev, transpose

        rhs = rev(rhs, tuple(dnums.rhs_spec[2:]))
        perm = list(range(rhs.ndim))
        o, i = dnums.rhs_spec[:2]
        perm[o], perm[i] = i, o
        rhs = transpose(rhs, tuple(perm))
    return conv_general_dilated(lhs, rhs, (1,) * nsp, padding, strides, rhs_dilation, dnums,
                                precision=precision,
                                preferred_element_type=preferred_element_type)


# ---- reduce_window ----------------------------------------------------------------------
def _reduce_window_primitive(name, kinds):
    prim = Primitive(name, kind="window")

    @prim.def_abstract_eval
    def _abstract_eval(operand, *, window_dimensions, window_strides, padding, base_dilation,
                       window_dilation):
        if not kinds(operand.dtype):
            raise TypeError(f"{name} needs integer or floating-point operands, got "
                            f"{short(operand)}")
        n = operand.ndim
        _check_ints(name, "window_dimensions", window_dimensions, n, 1)
        _check_ints(name, "window_strides", window_strides, n, 1)
        _check_ints(name, "base_dilation", base_dilation, n, 1)
        _check_ints(name, "window_dilation", window_dilation, n, 1)
        _check_padding(name, padding, n)
        shape = window_output_shape(name, operand.shape, window_dimensions, window_strides,
                                    padding, base_dilation, window_dilation)
        return ShapedArray(shape, operand.dtype, operand.weak_type)

    return prim


def _number(d):
    return dtypes.is_int(d) or dtypes.is_inexact(d)


reduce_window_sum_p = _reduce_window_primitive("reduce_window_sum", _number)
reduce_window_sum_p.def_linear()
reduce_window_max_p = _reduce_window_primitive("reduce_window_max", lambda d: True)
reduce_window_min_p = _reduce_window_primitive("reduce_window_min", lambda d: True)


def _bind_reduce_window(prim, operand, window_dimensions, window_strides, padding,
                        base_dilation, window_dilation):
    op = prim.name
    operand = asarray(operand)
    n = operand.ndim
    window_dimensions = _ints(window_dimensions, "window_dimensions", op)
    window_strides = _ints(window_strides, "window_strides", op)
    base_dilation = (1,) * n if base_dilation is None else _ints(base_dilation,
                                                                "base_dilation", op)
    window_dilation = (1,) * n if window_dilation is None else _ints(window_dilation,
                                                                    "window_dilation", op)
    if isinstance(padding, str):
        for name, values in (("window_dimensions", window_dimensions),
                             ("window_strides", window_strides),
                             ("window_dilation", window_dilation)):
            _check_ints(op, name, values, n, 1)
        window = [_dilate(w, r) for w, r in zip(window_dimensions, window_dilation, strict=True)]
        padding = padtype_to_pads(operand.shape, window, window_strides, padding)
    else:
        padding = _pairs(padding, op)
    return prim.bind(operand, window_dimensions=window_dimensions,
                     window_strides=window_strides, padding=padding,
                     base_dilation=base_dilation, window_dilation=window_dilation)


_WINDOW_ARGS_DOC = """
    Args:
      operand: an array of any rank n.
      window_dimensions, window_strides: n positive ints each.
      padding: "SAME", "SAME_LOWER", "VALID" or n (low, high) pairs (negative crops); the
        padding and the holes of base_dilation hold the reduction's identity.
      base_dilation, window_dilation: n positive ints each (default 1s).

    Returns:
      An array of the operand's dtype; each dim has the size given in the module doc."""


def reduce_window_sum(operand, window_dimensions, window_strides, padding, base_dilation=None,
                      window_dilation=None):
    return _bind_reduce_window(reduce_window_sum_p, operand, window_dimensions,
                               window_strides, padding, base_dilation, window_dilation)


def reduce_window_max(operand, window_dimensions, window_strides, padding, base_dilation=None,
                      window_dilation=None):
    return _bind_reduce_window(reduce_window_max_p, operand, window_dimensions,
                               window_strides, padding, base_dilation, window_dilation)


def reduce_window_min(operand, window_dimensions, window_strides, padding, base_dilation=None,
                      window_dilation=None):
    return _bind_reduce_window(reduce_window_min_p, operand, window_dimensions,
                               window_strides, padding, base_dilation, window_dilation)


reduce_window_sum.__doc__ = ("Sum over sliding windows (sum pooling); float16/bfloat16 "
                             "accumulate in float32, integers wrap.\n" + _WINDOW_ARGS_DOC)
reduce_window_max.__doc__ = ("Maximum over sliding windows (max pooling); NaN propagates.\n"
                             + _WINDOW_ARGS_DOC)
reduce_window_min.__doc__ = ("Minimum over sliding windows; NaN propagates.\n"
                             + _WINDOW_ARGS_DOC)


def _identity(dtype, computation):
    if computation is _ew.add:
        return 0
    largest = computation is _ew.min
    if dtypes.is_bool(dtype):
        return largest
    if dtypes.is_int(dtype):
        info = dtypes.iinfo(dtype)
        return int(info.max if largest else info.min)
    return np.inf if largest else -np.inf


def _concrete_scalar(x):
    """The value of a 0-d concrete init value, or None for a traced one."""
    if isinstance(x, Array) and not isinstance(x, ArrayImpl):
        return None
    return np.asarray(x).item()


def reduce_window(operand, init_value, computation, window_dimensions, window_strides,
                  padding, base_dilation=None, window_dilation=None):
    """Reduce sliding windows with `computation`, which must be lax.add, lax.max or lax.min.

    `init_value` is a scalar: for lax.add it must be 0; for lax.max/lax.min any value
    (it is combined with every window's result). Other arguments as in reduce_window_sum.

    >>> import numpy as np; from mytorch import lax; from mytorch.core.array import from_numpy
    >>> x = from_numpy(np.arange(6.0, dtype=np.float32))
    >>> lax.reduce_window(x, -np.inf, lax.max, (2,), (2,), "VALID").tolist()
    [1.0, 3.0, 5.0]
    """
    prims = {_ew.add: reduce_window_sum_p, _ew.max: reduce_window_max_p,
             _ew.min: reduce_window_min_p}
    prim = prims.get(computation)
    if prim is None:
        raise TypeError(
            f"reduce_window supports the computations lax.add, lax.max and lax.min, got "
            f"{computation!r}; build other window reductions from reduce_window_sum/max/min "
            "and elementwise ops"
        )
    operand = asarray(operand)
    if isinstance(init_value, Array):
        if init_value.ndim != 0 or init_value.dtype != operand.dtype:
            raise TypeError(f"reduce_window needs a 0-d init_value of the operand's dtype, "
                            f"got {init_value.aval.str_short()} for {operand.aval.str_short()}")
    elif np.ndim(init_value) != 0:
        raise TypeError(f"reduce_window needs a scalar init_value, got {init_value!r}")
    value = _concrete_scalar(init_value)
    out = _bind_reduce_window(prim, operand, window_dimensions, window_strides, padding,
                              base_dilation, window_dilation)
    identity = _identity(operand.dtype, computation)
    if value is not None and (value == identity or (computation is _ew.max and value < identity)
                              or (computation is _ew.min and value > identity)):
        return out  # combining with init_value changes nothing
    if computation is _ew.add:
        what = "a traced value" if value is None else repr(value)
        raise ValueError(f"reduce_window with lax.add needs init_value 0, got {what}; add "
                         "the init value to the result instead")
    if not isinstance(init_value, Array):
        init_value = weak_scalar(value, operand.dtype)
    return computation(out, init_value)
