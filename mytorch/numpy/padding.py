"""`pad`: NumPy's padding modes (constant, empty, edge, reflect, symmetric, wrap, linear_ramp,
and maximum/minimum/mean/median), lowered to lax.pad, slices and concatenations.

Pad widths and the mode's keyword arguments are static. Part of
`mytorch.numpy.manipulation`.
"""

import numpy as np

from mytorch import lax
from mytorch.core import dtypes
from mytorch.core.array import Array, from_numpy
from mytorch.core.source_info import user_error
from mytorch.numpy._manip_util import (
    _arr,
    _broadcast_axis,
    _concat,
    _s,
    _set_dim,
    _slice_axis,
    _static,
)
from mytorch.numpy._promote import broadcast_to_shape
from mytorch.numpy.shapes import broadcast_to

__all__ = ["pad"]


# ---- padding ------------------------------------------------------------------------------
def _as_pairs(op, name, value, ndim, as_index=False):
    """NumPy's rule for pad_width-like arguments: a scalar, (before, after), or per-axis
    pairs; returned as a list of ndim [before, after] pairs."""
    v = _static(op, name, value)
    if as_index:
        if v.dtype.kind not in "iufb":
            raise user_error(TypeError, f"{op}: {name} must hold ints, got {value!r}")
        v = np.round(v).astype(np.int64)
    if v.size == 1:
        pairs = [[v.reshape(-1)[0].item()] * 2] * ndim
    elif v.size == 2 and v.shape != (2, 1):
        pairs = [v.reshape(-1).tolist()] * ndim
    else:
        try:
            pairs = np.broadcast_to(v, (ndim, 2)).tolist()
        except ValueError:
            raise user_error(ValueError, f"{op}: {name} of shape {v.shape} cannot be broadcast to "
                             f"({ndim}, 2), one (before, after) pair per axis") from None
    if as_index and any(p < 0 for pair in pairs for p in pair):
        raise user_error(ValueError, f"{op}: {name} must be non-negative, got {value!r}")
    return pairs


_PAD_KWARGS = {
    "constant": {"constant_values"}, "empty": set(), "edge": set(), "wrap": set(),
    "reflect": {"reflect_type"}, "symmetric": {"reflect_type"},
    "linear_ramp": {"end_values"}, "maximum": {"stat_length"}, "minimum": {"stat_length"},
    "mean": {"stat_length"}, "median": {"stat_length"},
}


def pad(array, pad_width, mode="constant", **kwargs):
    """Pad an array (NumPy's `pad`).

    Args:
      array: array of any shape.
      pad_width: an int, (before, after), or one (before, after) pair per axis (static).
      mode: "constant" (`constant_values`, default 0), "empty" (zeros here), "edge",
        "reflect" / "symmetric" (`reflect_type` "even" or "odd"), "wrap", "linear_ramp"
        (`end_values`), "maximum" / "minimum" / "mean" / "median" (`stat_length`).

    Returns:
      The padded array, same dtype. `pad([1, 2], 1, "edge")` is [1, 1, 2, 2].
    """
    x = _arr(array)
    if not isinstance(mode, str) or mode not in _PAD_KWARGS:
        raise user_error(ValueError, f"pad: mode {mode!r} is not supported; use one of "
                         + ", ".join(repr(m) for m in _PAD_KWARGS))
    extra = set(kwargs) - _PAD_KWARGS[mode]
    if extra:
        raise user_error(ValueError, f"pad: unsupported keyword arguments for mode {mode!r}: "
                         f"{sorted(extra)}")
    widths = [tuple(p) for p in _as_pairs("pad", "pad_width", pad_width, x.ndim, True)]
    rtype = kwargs.get("reflect_type", "even")
    if rtype not in ("even", "odd"):
        raise user_error(ValueError, f"pad: reflect_type must be 'even' or 'odd', got {rtype!r}")
    ends = _as_pairs("pad", "end_values", kwargs.get("end_values", 0), x.ndim)
    lengths = kwargs.get("stat_length")
    lengths = [[None, None]] * x.ndim if lengths is None else _as_pairs(
        "pad", "stat_length", lengths, x.ndim, True)
    values = kwargs.get("constant_values", 0)
    if not isinstance(values, Array):
        _as_pairs("pad", "constant_values", values, x.ndim)  # validate its shape
    if not any(lo or hi for lo, hi in widths):
        return x
    if mode in ("constant", "empty"):
        return _pad_constant(x, widths, values)
    for ax, (lo, hi) in enumerate(widths):
        if x.shape[ax] == 0 and (lo or hi):
            raise user_error(ValueError,
                             f"pad: can't extend the empty axis {ax} of {_s(x)} with mode "
                             f"{mode!r}; only 'constant' and 'empty' can")
    if x.size == 0:
        return _pad_constant(x, widths, 0)
    for ax, (lo, hi) in enumerate(widths):
        if not (lo or hi):
            continue
        if mode == "edge" or (mode in ("reflect", "symmetric") and x.shape[ax] == 1):
            x = _pad_edge(x, ax, lo, hi)
        elif mode in ("reflect", "symmetric"):
            x = _pad_reflect(x, ax, lo, hi, mode == "symmetric", rtype == "odd")
        elif mode == "wrap":
            x = _pad_wrap(x, ax, lo, hi)
        elif mode == "linear_ramp":
            x = _pad_ramp(x, ax, lo, hi, ends[ax])
        else:
            x = _pad_stat(x, ax, lo, hi, lengths[ax], mode)
    return x


def _pad_constant(x, widths, values):
    if isinstance(values, Array):
        v = lax.convert_element_type(values, x.dtype)
        if v.ndim == 0:
            return lax.pad(x, v, tuple((lo, hi, 0) for lo, hi in widths))
        v = broadcast_to(v, (x.ndim, 2))
        pairs = [[lax.reshape(lax.slice(v, (i, j), (i + 1, j + 1)), ()) for j in (0, 1)]
                 for i in range(x.ndim)]
    else:
        pairs = _as_pairs("pad", "constant_values", values, x.ndim)
        flat = {float(p) for pair in pairs for p in pair}
        if len(flat) <= 1:
            value = pairs[0][0] if pairs else 0
            return lax.pad(x, _const(value, x.dtype), tuple((lo, hi, 0) for lo, hi in widths))
        pairs = [[_const(p, x.dtype) for p in pair] for pair in pairs]
    for ax, (lo, hi) in enumerate(widths):
        config = [(0, 0, 0)] * x.ndim
        config[ax] = (lo, 0, 0)
        x = lax.pad(x, pairs[ax][0], tuple(config)) if lo else x
        config[ax] = (0, hi, 0)
        x = lax.pad(x, pairs[ax][1], tuple(config)) if hi else x
    return x


def _const(value, dtype):
    with np.errstate(all="ignore"):
        return from_numpy(np.asarray(value).astype(dtype))


def _pad_edge(x, ax, lo, hi):
    n = x.shape[ax]
    left = [_broadcast_axis(_slice_axis(x, 0, 1, ax), ax, lo)] if lo else []
    right = [_broadcast_axis(_slice_axis(x, n - 1, n, ax), ax, hi)] if hi else []
    return _concat(left + [x] + right, ax)


def _odd(edge, chunk, ax):
    """`2 * edge - chunk`: the odd reflection (computed in int32 for bool)."""
    dt = chunk.dtype
    if dtypes.is_bool(dt):
        edge, chunk = (lax.convert_element_type(v, np.int32) for v in (edge, chunk))
    edge = _broadcast_axis(edge, ax, chunk.shape[ax])
    out = lax.sub(lax.add(edge, edge), chunk)
    return lax.convert_element_type(out, dt) if out.dtype != dt else out


def _pad_reflect(x, ax, lo, hi, include_edge, odd):
    """NumPy's iterative reflection: each round mirrors what has been filled so far."""
    n = x.shape[ax]
    while lo > 0 or hi > 0:
        cur = x.shape[ax]
        if include_edge:
            old = cur // n * n
        else:
            old = (cur - 1) // (n - 1) * (n - 1)
        e = 0 if include_edge else 1
        parts = []
        if lo > 0:
            c = min(old, lo)
            left = lax.rev(_slice_axis(x, e, e + c, ax), (ax,))
            parts.append(_odd(_slice_axis(x, 0, 1, ax), left, ax) if odd else left)
            lo -= c
        parts.append(x)
        if hi > 0:
            c = min(old, hi)
            right = lax.rev(_slice_axis(x, cur - e - c, cur - e, ax), (ax,))
            parts.append(_odd(_slice_axis(x, cur - 1, cur, ax), right, ax) if odd else right)
            hi -= c
        x = _concat(parts, ax)
    return x


def _pad_wrap(x, ax, lo, hi):
    n = x.shape[ax]
    while lo > 0 or hi > 0:
        cur = x.shape[ax]
        period = cur // n * n
        parts = []
        if lo > 0:
            c = min(period, lo)
            parts.append(_slice_axis(x, period - c, period, ax))
            lo -= c
        parts.append(x)
        if hi > 0:
            c = min(period, hi)
            parts.append(_slice_axis(x, cur - period, cur - period + c, ax))
            hi -= c
        x = _concat(parts, ax)
    return x


def _ramp(edge, end, width, ax, dtype):
    """NumPy's `linspace(end, edge, width, endpoint=False)` along `ax`, in `dtype`."""
    shape = _set_dim(edge.shape, ax, width)
    if dtypes.is_float(dtype) or not float(end).is_integer():
        ft = dtype if dtypes.is_float(dtype) and dtype.itemsize >= 4 else dtypes.default_float()
        e = broadcast_to_shape(lax.convert_element_type(edge, ft), shape)
        i = lax.broadcasted_iota(ft, shape, ax)
        step = lax.div(lax.sub(e, float(end)), float(width))
        out = lax.add(lax.mul(i, step), float(end))
        return lax.convert_element_type(lax.floor(out) if not dtypes.is_float(dtype) else out,
                                        dtype)
    it = dtypes.default_int()  # exact: end + floor(i * (edge - end) / width)
    e = broadcast_to_shape(lax.convert_element_type(edge, it), shape)
    num = lax.mul(lax.broadcasted_iota(it, shape, ax), lax.sub(e, int(end)))
    q = lax.div(num, width)
    q = lax.sub(q, lax.convert_element_type(lax.lt(lax.rem(num, width), 0), it))
    return lax.convert_element_type(lax.add(q, int(end)), dtype)


def _pad_ramp(x, ax, lo, hi, ends):
    n = x.shape[ax]
    parts = []
    if lo:
        parts.append(_ramp(_slice_axis(x, 0, 1, ax), ends[0], lo, ax, x.dtype))
    parts.append(x)
    if hi:
        right = _ramp(_slice_axis(x, n - 1, n, ax), ends[1], hi, ax, x.dtype)
        parts.append(lax.rev(right, (ax,)))
    return _concat(parts, ax)


def _stat(chunk, ax, mode, dtype):
    """The statistic of `chunk` along `ax` (kept as a size-1 axis), cast to `dtype`."""
    keep = _set_dim(chunk.shape, ax, 1)
    if mode in ("maximum", "minimum"):
        red = lax.reduce_max if mode == "maximum" else lax.reduce_min
        return lax.reshape(red(chunk, (ax,)), keep)
    ft = dtype if dtypes.is_float(dtype) and dtype.itemsize >= 4 else dtypes.default_float()
    c = lax.convert_element_type(chunk, ft)
    k = chunk.shape[ax]
    if mode == "median":
        c = lax.sort(c, dimension=ax)
        c = _slice_axis(c, (k - 1) // 2, k // 2 + 1, ax)
        k = c.shape[ax]
    out = lax.div(lax.reduce_sum(c, (ax,)), float(k) if k else float("nan"))
    if dtypes.is_int(dtype):
        out = lax.round(out, 1)  # NumPy rounds half to even before the cast
    return lax.reshape(lax.convert_element_type(out, dtype), keep)


def _pad_stat(x, ax, lo, hi, lengths, mode):
    n = x.shape[ax]
    left_len = n if lengths[0] is None else min(lengths[0], n)
    right_len = n if lengths[1] is None else min(lengths[1], n)
    if (left_len == 0 or right_len == 0) and mode in ("maximum", "minimum"):
        raise user_error(ValueError, "pad: stat_length of 0 yields no value for padding")
    left = _stat(_slice_axis(x, 0, left_len, ax), ax, mode, x.dtype)
    right = left if left_len == right_len == n else _stat(
        _slice_axis(x, n - right_len, n, ax), ax, mode, x.dtype)
    parts = ([_broadcast_axis(left, ax, lo)] if lo else []) + [x]
    return _concat(parts + ([_broadcast_axis(right, ax, hi)] if hi else []), ax)
