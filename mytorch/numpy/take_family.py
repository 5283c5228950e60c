"""The take family: take, take_along_axis and put_along_axis; choose, compress and extract;
place and put; and the index helpers ix_, unravel_index and ravel_multi_index.

Indices may be traced unless a function says otherwise; out-of-bounds indices follow each
function's `mode`. Part of `mytorch.numpy.indexing`.
"""

import math
import operator

import numpy as np

from mytorch import lax
from mytorch.core import dtypes
from mytorch.core.array import Array, from_numpy
from mytorch.core.source_info import user_error
from mytorch.errors import AxisError, ConcretizationTypeError
from mytorch.numpy._index_lowering import (
    _IDX,
    _arr,
    _as_index,
    _broadcast_values,
    _concrete,
    _Gather,
    _modulo,
    _s,
    _update,
    _wrap_negative,
)
from mytorch.numpy._promote import asarray_any, broadcast_to_shape, promote_dtypes

__all__ = [
    "take", "take_along_axis", "put_along_axis", "choose", "compress", "extract", "ix_",
    "unravel_index", "ravel_multi_index", "place", "put",
]


# ---- take family --------------------------------------------------------------------------
def _axis(name, axis, x):
    try:
        ax = operator.index(axis)
    except TypeError:
        raise user_error(TypeError, f"{name}: axis must be an int, got {axis!r}") from None
    if not -x.ndim <= ax < x.ndim:
        raise user_error(AxisError,
                         f"{name}: axis {ax} is out of bounds for {_s(x)} (rank {x.ndim})")
    return ax % x.ndim


def _index_array(name, indices):
    """A static NumPy int64 array or an int Array."""
    if isinstance(indices, Array) and _concrete(indices) is None:
        if not (dtypes.is_int(indices.dtype) or dtypes.is_bool(indices.dtype)):
            raise user_error(TypeError, f"{name}: indices must be integers, got {_s(indices)}")
        return indices
    v = _concrete(indices) if isinstance(indices, Array) else np.asarray(indices)
    if v.dtype.kind not in "iub" and not (v.size == 0 and v.dtype.kind == "f"):
        raise user_error(TypeError, f"{name}: indices must be integers, got dtype {v.dtype}")
    return v.astype(np.int64)


def _take_mode(name, p, n, mode):
    """Index values and the gather mode for take's `mode` (JAX's rules): None/"fill" wrap
    negative indices once and fill the other out-of-bounds ones; "clip" clamps into
    [0, n-1] without wrapping (as NumPy); "wrap" takes indices modulo n."""
    if mode in (None, "fill"):
        return _wrap_negative(p, n), "fill"
    if mode == "clip":
        return p, "clip"
    if mode == "wrap":
        return (_modulo(p, n) if n else p), "clip"
    raise user_error(ValueError, 
        f"{name}: mode must be None, 'fill', 'clip' or 'wrap', got {mode!r} (indices may be "
        "traced, so 'raise' is not available)"
    )


def _along_mode(name, p, n, mode):
    """Index values and the gather mode for take_along_axis's `mode` (JAX's rules): negative
    indices wrap once, except with "promise_in_bounds"; then None/"fill" fill and "clip"
    clamps the out-of-bounds ones; "wrap" takes indices modulo n."""
    if mode == "wrap":
        return (_modulo(p, n) if n else p), "clip"
    if mode in (None, "fill", "clip"):
        return _wrap_negative(p, n), mode or "fill"
    if mode == "promise_in_bounds":
        return p, mode
    raise user_error(ValueError, 
        f"{name}: mode must be None, 'fill', 'clip', 'wrap' or 'promise_in_bounds', got "
        f"{mode!r}"
    )


def _ravel(x):
    return x if x.ndim == 1 else lax.reshape(x, (x.size,))


def take(a, indices, axis=None, mode=None, fill_value=None, *, unique_indices=False,
         indices_are_sorted=False):
    """Elements of `a` at `indices` along `axis` (the flattened `a` when axis is None).

    Args:
      indices: an int array (static or traced) of any shape.
      mode: None or "fill" (default: negative indices count from the end once; other
        out-of-bounds indices give `fill_value`), "clip" (clamp into [0, n-1], no negative
        indexing, as NumPy) or "wrap" (modulo n).
      fill_value: for "fill": default NaN for inexact dtypes, the minimum of signed and the
        maximum of unsigned integers, True for bools (JAX's choice).

    Returns:
      Shape `a.shape[:axis] + indices.shape + a.shape[axis + 1:]`.
    """
    x = _arr(a)
    if axis is None:
        x, axis = _ravel(x), 0
    else:
        axis = _axis("take", axis, x)
    p = _index_array("take", indices)
    p, gmode = _take_mode("take", p, x.shape[axis], mode)
    k = p.ndim
    offset = tuple(range(axis)) + tuple(range(axis + k, x.ndim - 1 + k))
    sizes = tuple(1 if d == axis else s for d, s in enumerate(x.shape))
    g = _Gather(x.shape, [(p, tuple(range(k)))], p.shape, offset, (axis,), (axis,), sizes)
    return g.gather(x, gmode, fill_value, indices_are_sorted, unique_indices)


def _along_axis(name, x, indices, axis):
    """(operand, _Gather) for take_along_axis/put_along_axis."""
    p = _index_array(name, indices)
    if axis is None:
        if p.ndim != 1:
            raise user_error(ValueError,
                             f"{name}: with axis=None the indices must be 1-D, got shape "
                             f"{tuple(p.shape)}")
        x, axis = _ravel(x), 0
    if p.ndim != x.ndim:
        raise user_error(ValueError, 
            f"{name}: indices and arr must have the same number of dimensions, got indices "
            f"of shape {tuple(p.shape)} and {_s(x)}"
        )
    axis = _axis(name, axis, x)
    out = []
    for d, (s, t) in enumerate(zip(x.shape, p.shape, strict=True)):
        if d != axis and s != t and 1 not in (s, t):
            raise user_error(ValueError, 
                f"{name}: indices of shape {tuple(p.shape)} do not broadcast with {_s(x)} "
                f"outside axis {axis}"
            )
        out.append(t if d == axis or s == 1 else s)
    keep = [d for d in range(x.ndim) if d == axis or x.shape[d] != 1]
    if len(keep) != x.ndim:
        x = lax.reshape(x, tuple(x.shape[d] for d in keep))
    pieces = [(p, tuple(range(len(out)))) if d == axis else (("iota", d), (d,)) for d in keep]
    return x, keep.index(axis), pieces, tuple(out)


def take_along_axis(arr, indices, axis, mode=None, fill_value=None):
    """`arr` gathered along `axis` at `indices` (same rank; other dims broadcast).

    Args:
      arr: an array.
      indices: an int array (static or traced) of `arr`'s rank.
      axis: the axis to index (None: the flattened `arr`, with 1-D `indices`).
      mode: None or "fill" (default: out-of-bounds indices give `fill_value`), "clip"
        (clamp into [0, n-1]), "wrap" (modulo n) or "promise_in_bounds". Except with
        "promise_in_bounds", negative indices first count from the end, once.
      fill_value: for "fill": as for `take` (NaN for inexact dtypes).

    Returns:
      The broadcast shape of `arr` and `indices`, with `indices`' size along `axis` (zeros
      when `arr` is empty along `axis`).
    """
    x = _arr(arr)
    x, ax, pieces, out = _along_axis("take_along_axis", x, indices, axis)
    if x.shape[ax] == 0:  # nothing to read: JAX gives zeros
        return lax.broadcast_in_dim(from_numpy(np.zeros((), x.dtype), weak_type=x.weak_type),
                                    out, ())
    p, gmode = _along_mode("take_along_axis", pieces[ax][0], x.shape[ax], mode)
    pieces[ax] = (p, pieces[ax][1])
    n = x.ndim
    g = _Gather(x.shape, pieces, out, (), range(n), range(n), (1,) * n)
    return g.gather(x, gmode, fill_value)


def put_along_axis(arr, indices, values, axis, inplace=False, *, mode=None):
    """A copy of `arr` with `values` written at `indices` along `axis` (functional)."""
    if inplace:
        raise user_error(ValueError,
                         "put_along_axis: mytorch arrays are immutable; pass inplace=False "
                         "and use the returned array")
    x0 = _arr(arr)
    x, ax, pieces, out = _along_axis("put_along_axis", x0, indices, axis)
    pieces[ax] = (_wrap_negative(pieces[ax][0], x.shape[ax]), pieces[ax][1])
    n = x.ndim
    g = _Gather(x.shape, pieces, out, (), range(n), range(n), (1,) * n)
    v = asarray_any(values)
    v = lax.convert_element_type(v, x.dtype, weak_type=x.weak_type)
    y = g.scatter(x, _broadcast_values("put_along_axis", v, out), "set", mode)
    return y if y.shape == x0.shape else lax.reshape(y, x0.shape)


def choose(a, choices, mode="raise"):
    """`choices[a[i]][i]` for each i (all broadcast together).

    mode: "raise" (concrete `a` only), "clip" or "wrap".
    """
    idx = _arr(a)
    cs = promote_dtypes("choose", *[asarray_any(c) for c in choices])
    n = len(cs)
    if mode == "raise":
        v = _concrete(idx)
        if v is None:
            raise ConcretizationTypeError(
                "choose: mode='raise' needs a concrete index array; use mode='clip' or "
                "mode='wrap' under a transformation"
            )
        if v.size and (v.min() < 0 or v.max() >= n):
            raise user_error(ValueError, "choose: invalid entry in choice array")
    idx = _as_index(idx)
    if mode == "wrap":
        idx = _modulo(idx, n)
    elif mode == "clip":
        idx = lax.clamp(0, idx, n - 1)
    elif mode != "raise":
        raise user_error(ValueError,
                         f"choose: mode must be 'raise', 'clip' or 'wrap', got {mode!r}")
    from mytorch.numpy._promote import broadcast_shapes

    shape = broadcast_shapes("choose", idx.shape, *[c.shape for c in cs])
    return lax.select_n(broadcast_to_shape(idx, shape),
                        *[broadcast_to_shape(c, shape) for c in cs])


def _static_mask(name, condition):
    v = _concrete(condition) if isinstance(condition, Array) else np.asarray(condition)
    if v is None:
        raise ConcretizationTypeError(
            f"{name}: the condition must be concrete (the result's shape depends on it), but "
            f"got a traced {_s(condition)}; pass size= to get a fixed-size result"
        )
    return v.astype(bool)


def _sized_positions(cond, size):
    """The first `size` positions where the 1-D bool `cond` is true; n where none is left."""
    n = cond.shape[0]
    c = lax.convert_element_type(cond, _IDX)
    slot = lax.sub(lax.cumsum(c, 0), 1)
    slot = lax.select(cond, slot, lax.broadcast_in_dim(from_numpy(np.asarray(size, np.int32)),
                                                       (n,), ()))
    base = lax.broadcast_in_dim(from_numpy(np.asarray(n, np.int32)), (size,), ())
    dnums = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                        scatter_dims_to_operand_dims=(0,))
    return lax.scatter(base, lax.reshape(slot, (n, 1)), lax.iota(_IDX, n), dnums,
                       mode="drop")


def compress(condition, a, axis=None, *, size=None, fill_value=0):
    """The slices of `a` along `axis` where the 1-D `condition` is true.

    A static (or concrete) condition gives exactly those slices; with `size=` the condition
    may be traced and the result has `size` slices, padded with `fill_value`.
    """
    x = _arr(a)
    if axis is None:
        x, axis = _ravel(x), 0
    axis = _axis("compress", axis, x)
    n = x.shape[axis]
    if size is None:
        cond = _static_mask("compress", condition).reshape(-1)
        idx = np.nonzero(cond)[0]
        if idx.size and idx[-1] >= n:
            raise user_error(IndexError,
                             f"compress: condition has {cond.size} entries but axis {axis} "
                             f"of {_s(x)} has only {n}")
        return take(x, idx, axis=axis)
    cond = _arr(condition)
    cond = _ravel(cond if dtypes.is_bool(cond.dtype) else lax.ne(cond, 0))
    if cond.shape[0] > n:
        cond = lax.slice(cond, (0,), (n,))
    pos = _sized_positions(cond, operator.index(size))
    return take(x, pos, axis=axis, mode="fill", fill_value=fill_value)


def extract(condition, arr, *, size=None, fill_value=0):
    """The elements of the flattened `arr` where the flattened `condition` is true."""
    return compress(_ravel(_arr(condition)) if isinstance(condition, Array) else
                    np.ravel(condition), _ravel(_arr(arr)), size=size, fill_value=fill_value)


def ix_(*args):
    """Open-mesh index arrays: the k-th of n 1-D inputs reshaped to 1s except axis k."""
    out = []
    for k, a in enumerate(args):
        if not isinstance(a, Array):
            a = np.asarray(a)
            a = a.astype(np.int32) if a.size == 0 else a
        v = asarray_any(a)
        if v.ndim != 1:
            raise user_error(ValueError, f"ix_: each input must be 1-D, got {_s(v)}")
        if dtypes.is_bool(v.dtype):
            v = from_numpy(np.nonzero(_static_mask("ix_", v))[0].astype(np.int32))
        shape = [1] * len(args)
        shape[k] = v.shape[0]
        out.append(lax.reshape(v, tuple(shape)))
    return tuple(out)


def unravel_index(indices, shape):
    """Coordinates (a tuple of arrays) of flat `indices` in an array of `shape` (C order).

    Out-of-range indices are clipped into [-size, size) and negative ones count from the end.
    """
    idx = _as_index(_arr(indices))
    if not isinstance(shape, (tuple, list)):
        shape = (shape,)
    shape = tuple(operator.index(d) for d in shape)
    total = math.prod(shape)
    if total == 0:
        raise user_error(ValueError, f"unravel_index: cannot unravel into the empty shape {shape}")
    idx = lax.clamp(-total, idx, total - 1)
    idx = _wrap_negative(idx, total)
    out = []
    for d in shape[::-1]:
        out.append(lax.rem(idx, d))
        idx = lax.div(idx, d)
    return tuple(out[::-1])


def ravel_multi_index(multi_index, dims, mode="raise", order="C"):
    """Flat indices of the coordinate arrays `multi_index` in an array of shape `dims`.

    mode: "raise" (concrete indices only), "clip" or "wrap".
    """
    dims = tuple(operator.index(d) for d in dims)
    if len(multi_index) != len(dims):
        raise user_error(ValueError, f"ravel_multi_index: {len(multi_index)} index arrays for "
                         f"{len(dims)} dims")
    if order not in ("C", "F"):
        raise user_error(ValueError, f"ravel_multi_index: order must be 'C' or 'F', got {order!r}")
    arrays = [_as_index(_arr(i)) for i in multi_index]
    if mode == "raise":
        for a, d in zip(arrays, dims, strict=True):
            v = _concrete(a)
            if v is None:
                raise ConcretizationTypeError(
                    "ravel_multi_index: mode='raise' needs concrete indices; use mode='clip' "
                    "or 'wrap' under a transformation"
                )
            if v.size and (v.min() < 0 or v.max() >= d):
                raise user_error(ValueError,
                                 "ravel_multi_index: invalid entry in coordinates array")
    elif mode == "clip":
        arrays = [lax.clamp(0, a, max(d - 1, 0)) for a, d in zip(arrays, dims, strict=True)]
    elif mode == "wrap":
        arrays = [_modulo(a, d) for a, d in zip(arrays, dims, strict=True)]
    else:
        raise user_error(ValueError,
                         f"ravel_multi_index: mode must be 'raise', 'clip' or 'wrap', got "
                         f"{mode!r}")
    strides = [math.prod(dims[k + 1:]) for k in range(len(dims))] if order == "C" else \
        [math.prod(dims[:k]) for k in range(len(dims))]
    from mytorch.numpy._promote import promote_args

    total = None
    for a, s in zip(arrays, strides, strict=True):
        term = lax.mul(a, s)
        total = term if total is None else lax.add(*promote_args("ravel_multi_index", total,
                                                                 term))
    return total


def place(arr, mask, vals, *, inplace=False):
    """A copy of `arr` with the elements where `mask` is true replaced by `vals` (repeated
    cyclically), like np.place. The mask may be traced (then `vals` must not be empty).

    Args:
      arr: an array.
      mask: a bool array of `arr`'s shape.
      vals: values; the k-th true position of the flattened mask gets vals[k % len(vals)].

    Returns:
      An array of `arr`'s shape and dtype.
    """
    if inplace:
        raise user_error(ValueError, "place: mytorch arrays are immutable; pass inplace=False")
    x = _arr(arr)
    m = _concrete(mask) if isinstance(mask, Array) else np.asarray(mask)
    shape = tuple(np.shape(mask)) if m is None else m.shape
    if shape != x.shape:
        raise user_error(ValueError, f"place: mask of shape {shape} does not match {_s(x)}")
    v = _ravel(_arr(vals))
    if m is None:  # traced: the true positions first, then x.size (dropped), as JAX does
        if v.size == 0:
            raise user_error(ValueError, "place: cannot insert from an empty vals array")
        cond = _ravel(mask if dtypes.is_bool(mask.dtype) else lax.ne(mask, 0))
        pos = _sized_positions(cond, x.size)
        n = x.size
    else:
        pos = np.nonzero(m.astype(bool).reshape(-1))[0]
        n = pos.size
        if n and v.size == 0:
            raise user_error(ValueError, "place: cannot insert from an empty vals array")
    if n == 0:
        return x
    v = take(v, np.arange(n) % v.shape[0])
    # sorted either way; unique unless traced (every unused slot holds x.size)
    return lax.reshape(_update("place", _ravel(x), pos, v, "set", None, True, m is not None),
                       x.shape)


def _clamp(p, lo, hi):
    if isinstance(p, np.ndarray):
        return np.clip(p, lo, max(hi, lo))
    return lax.clamp(lo, _as_index(p), max(hi, lo))


def put(a, ind, v, mode=None, *, inplace=False):
    """A copy of `a` with the flat positions `ind` set to `v` (repeated cyclically).

    mode: None (JAX's default: negative positions count from the end once, then every
    position is clamped into [0, size-1]), "clip" (clamped, no negative positions, as
    NumPy), "wrap" (modulo size), or "fill"/"drop" (out-of-bounds positions are dropped).
    """
    if inplace:
        raise user_error(ValueError, "put: mytorch arrays are immutable; pass inplace=False")
    x = _arr(a)
    p = _index_array("put", ind)
    p = _ravel(p) if isinstance(p, Array) else p.reshape(-1)
    # x.at[] wraps negative positions once: clamp so that it sees what JAX's put does
    if mode == "wrap":
        p, mode = _modulo(p, x.size), "clip"
    elif mode in (None, "clip"):
        p = _clamp(p, 0 if mode else -x.size, x.size - 1)
        mode = "clip"
    vals = _ravel(_arr(v))
    if vals.shape[0] != p.shape[0] and p.shape[0]:
        if vals.size == 0:
            raise user_error(ValueError, "put: cannot put an empty v")
        vals = take(vals, np.arange(p.shape[0]) % vals.shape[0])
    flat = _update("put", _ravel(x), (p,), vals, "set", mode, False, False)
    return lax.reshape(flat, x.shape)
