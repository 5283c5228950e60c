"""NumPy kernels of the indexing primitives: dynamic slices, gather and scatter.

gather and scatter are vectorised. For every operand dim, one integer array broadcastable
to the output (gather) or to the updates (scatter) says which operand position each element
reads or writes: the start from the index vectors (clamped, or checked for "fill"/"drop"),
plus an arange over the window for window dims, or an arange over the batch positions for
batching dims. These combine into one array of flat positions, so a gather is one `np.take`
and a scatter one `ufunc.at` (or one fancy assignment). Python loops run over dims only,
never over index rows. Kernels return fresh buffers, never views of their inputs.

gather and scatter are written for any array module (`xp=`, NumPy by default); the GPU
backend registers them with CuPy's (backends/cupy/kernels_indexing.py) and, for scatter,
its own combining write (`scatter_kernel(kind, combine)`: CuPy has no `ufunc.at`).
"""

import ml_dtypes
import numpy as np

from mytorch.backends.numpy import numpy_backend
from mytorch.lax import indexing as ix

_HALF = (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16))


# ---- dynamic slices -------------------------------------------------------------------------
def _clamped(shape, starts, sizes):
    """XLA's clamp: each start in [0, dim - size]."""
    return tuple(min(max(int(s), 0), n - k) for s, n, k in zip(starts, shape, sizes,
                                                               strict=True))


@numpy_backend.register(ix.dynamic_slice_p)
def _dynamic_slice(x, *starts, slice_sizes):
    begin = _clamped(x.shape, starts, slice_sizes)
    return x[tuple(slice(b, b + k) for b, k in zip(begin, slice_sizes, strict=True))].copy()


@numpy_backend.register(ix.dynamic_update_slice_p)
def _dynamic_update_slice(x, update, *starts):
    begin = _clamped(x.shape, starts, update.shape)
    out = x.copy()
    out[tuple(slice(b, b + k) for b, k in zip(begin, update.shape, strict=True))] = update
    return out


# ---- positions of windows -------------------------------------------------------------------
def _strides(shape):
    """C-order element strides of `shape`, as Python ints."""
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= n
    return out[::-1]


def flat_positions(xp, operand_shape, indices, index_map, dropped, obatch, ibatch,
                   window_sizes, target_rank, window_pos, check_bounds):
    """Flat operand positions of every element of the target (the gather output or the
    updates), as an int64 array of module `xp` broadcastable to the target's shape, and
    (when `check_bounds`) a bool array, also broadcastable, that is False for the elements
    of windows not wholly in bounds. Unchecked starts are clamped into bounds.

    `dropped`: the operand dims absent from the target (collapsed or inserted, and the
    batching dims); `window_pos`: the target dims of the other operand dims, in order.
    """
    batch_shape = indices.shape[:-1]
    batch_pos = [d for d in range(target_rank) if d not in window_pos]

    def along(size_by_pos):
        shape = [1] * target_rank
        for p, n in size_by_pos:
            shape[p] = n
        return shape

    at_batch = along(zip(batch_pos, batch_shape, strict=True))
    idx = indices.astype(np.int64, copy=False)
    starts, ok = {}, None
    for k, d in enumerate(index_map):
        s = idx[..., k]
        hi = operand_shape[d] - window_sizes[d]
        if check_bounds:
            fits = (s >= 0) & (s <= hi)
            ok = fits if ok is None else ok & fits
        starts[d] = xp.clip(s, 0, max(hi, 0)).reshape(at_batch)
    for o, i in zip(obatch, ibatch, strict=True):
        starts[o] = xp.arange(batch_shape[i], dtype=np.int64).reshape(
            along([(batch_pos[i], batch_shape[i])]))
    flat = xp.zeros((1,) * target_rank, dtype=np.int64)
    window = iter(window_pos)
    for d, stride in enumerate(_strides(operand_shape)):
        pos = starts.get(d, 0)
        if d not in dropped:
            p = next(window)
            pos = pos + xp.arange(window_sizes[d], dtype=np.int64).reshape(
                along([(p, window_sizes[d])]))
        flat = flat + pos * stride
    return flat, (None if ok is None else ok.reshape(at_batch))


# ---- gather ---------------------------------------------------------------------------------
@numpy_backend.register(ix.gather_p)
def _gather(operand, indices, *, dimension_numbers, slice_sizes, mode, fill_value,
            indices_are_sorted, unique_indices, xp=np):
    dn = dimension_numbers
    dropped = set(dn.collapsed_slice_dims) | set(dn.operand_batching_dims)
    window = [s for d, s in enumerate(slice_sizes) if d not in dropped]
    rank = len(window) + indices.ndim - 1
    batch, win = iter(indices.shape[:-1]), iter(window)
    out_shape = tuple(next(win) if d in dn.offset_dims else next(batch) for d in range(rank))
    if 0 in out_shape:
        return xp.empty(out_shape, operand.dtype)
    flat, ok = flat_positions(
        xp, operand.shape, indices, dn.start_index_map, dropped, dn.operand_batching_dims,
        dn.start_indices_batching_dims, slice_sizes, rank, dn.offset_dims, mode == "fill")
    out = xp.take(operand.reshape(-1), xp.broadcast_to(flat, out_shape))
    if ok is not None:
        fill = xp.asarray(host_value(fill_value, operand.dtype))
        out = xp.where(ok, out, fill)
    return out


def host_value(value, dtype):
    """The Python scalar `value` as a 0-d NumPy array of `dtype`, cast on the host as NumPy
    casts (out-of-range integers wrap): the same fill value for every array module."""
    return np.asarray(value).astype(dtype)


# ---- scatter --------------------------------------------------------------------------------
_UFUNCS = {"add": np.add, "mul": np.multiply, "min": np.minimum, "max": np.maximum}


def combine(xp, kind, target, flat, updates):
    """Apply the scatter `kind` ("replace", "add", "mul", "min", "max") to the NumPy 1-D
    `target` at positions `flat` with `updates` (both broadcast to the updates' shape), in
    place: a fancy assignment (the last write wins) or the ufunc's `at` (duplicates applied
    one after another, in order)."""
    if kind == "replace":
        target[flat] = updates
    else:
        _UFUNCS[kind].at(target, flat, updates)


def scatter_kernel(kind, combine=combine):
    """The kernel of the scatter `kind` (for any array module: `xp=`), whose combining
    write into the flat output is `combine(xp, kind, target, flat, updates)`."""

    def kernel(operand, indices, updates, *, dimension_numbers, mode, indices_are_sorted,
               unique_indices, xp=np):
        dn = dimension_numbers
        out = operand.copy()
        if operand.size == 0 or updates.size == 0:
            return out
        dropped = set(dn.inserted_window_dims) | set(dn.operand_batching_dims)
        sizes = [1] * operand.ndim
        window_dims = [d for d in range(operand.ndim) if d not in dropped]
        for d, u in zip(window_dims, dn.update_window_dims, strict=True):
            sizes[d] = updates.shape[u]
        flat, ok = flat_positions(
            xp, operand.shape, indices, dn.scatter_dims_to_operand_dims, dropped,
            dn.operand_batching_dims, dn.scatter_indices_batching_dims, sizes, updates.ndim,
            dn.update_window_dims, mode != "clip")
        flat = xp.broadcast_to(flat, updates.shape)
        if ok is not None:
            keep = xp.broadcast_to(ok, updates.shape)
            flat, updates = flat[keep], updates[keep]
        target = out.reshape(-1)  # a view: out is a fresh contiguous copy
        if kind == "replace":
            combine(xp, kind, target, flat, updates)
            return out
        if out.dtype in _HALF:  # accumulate half precision in float32, round once
            wide = target.astype(np.float32)
            combine(xp, kind, wide, flat, updates.astype(np.float32))
            return wide.astype(out.dtype).reshape(out.shape)
        with np.errstate(all="ignore"):
            combine(xp, kind, target, flat, updates)
        return out

    kernel.__name__ = f"scatter_{kind}"
    return kernel


for _prim, _kind in ((ix.scatter_p, "replace"), (ix.scatter_add_p, "add"),
                     (ix.scatter_mul_p, "mul"), (ix.scatter_min_p, "min"),
                     (ix.scatter_max_p, "max")):
    numpy_backend.register(_prim)(scatter_kernel(_kind))
