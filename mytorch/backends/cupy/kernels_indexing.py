"""GPU eager kernels of the indexing primitives: dynamic slices, gather and scatter.

The plan is backends/numpy/indexing.py's: for every operand dim, an integer array
broadcastable to the target (the gather output or the updates) gives the operand position
each element reads or writes; they add up to one array of flat positions, so a gather is
one `take` and a scatter one combining write. Python loops run over dims, never over index
rows. Dynamic-slice starts held on the device stay there: the window is an open mesh of
index arrays (`ix_`), not slices read from the host.

The scatter's combining write (NumPy's `ufunc.at` applies duplicates one after another, in
order):
- scatter_add on CuPy: `cupyx.scatter_add` (atomic adds; float sums in an unspecified
  order, so they may differ from NumPy's in rounding). int64/uint64 add as uint64 (the same
  bits modulo 2**64); 8- and 16-bit integers in 32 bits, wrapped back; a dtype CuPy's
  atomics lack (complex, bool) goes the ranked way below.
- scatter (replace) everywhere, and scatter_mul/min/max on CuPy: the ranked way (NumPy
  arrays take NumPy's own `ufunc.at` for the combining scatters). A stable sort of the
  positions numbers each write by how many earlier writes hit the same position (its
  rank); round r applies every write of rank r, whose positions are distinct, as one
  fancy-index update. There are as many rounds as the largest
  multiplicity, and each position sees its writes in NumPy's order, so the result is
  NumPy's bit for bit (last write wins for replace, products in order).
float16/bfloat16 targets of combining scatters accumulate in float32 and round once.
"""

import numpy as np

from mytorch.backends.cupy.kernels import register, xp_of
from mytorch.backends.cupy.kernels_common import BF16, F16, F32, log_scan, stable_argsort
from mytorch.lax import indexing as ix

_HALF = (F16, BF16)


# ---- dynamic slices -------------------------------------------------------------------------
def _clamped(shape, starts, sizes):
    """XLA's clamp: each start in [0, dim - size] (host starts)."""
    return tuple(min(max(int(s), 0), n - k) for s, n, k in zip(starts, shape, sizes,
                                                               strict=True))


def window_index(xp, shape, starts, sizes):
    """The index of the window of `sizes` at `starts` (clamped as XLA does) in an array of
    `shape`: plain slices when every start is a host value (Python or NumPy), else an open
    mesh of device index arrays (`ix_`), so a start computed on the device (a loop counter)
    is never read back to the host."""
    if xp is np or all(type(v).__module__ in ("builtins", "numpy") for v in starts):
        begin = _clamped(shape, starts, sizes)
        return tuple(slice(b, b + k) for b, k in zip(begin, sizes, strict=True))
    return device_window(xp, shape, starts, sizes)


def device_window(xp, shape, starts, sizes):
    """`window_index` as an open mesh of index arrays computed from the (device) starts."""
    axes = [xp.clip(xp.asarray(v).astype(np.int64), 0, n - k) + xp.arange(k, dtype=np.int64)
            for v, n, k in zip(starts, shape, sizes, strict=True)]
    return xp.ix_(*axes)


@register(ix.dynamic_slice_p)
def _dynamic_slice(x, *starts, slice_sizes):
    xp = xp_of(x)
    return x[window_index(xp, x.shape, starts, slice_sizes)].copy()


@register(ix.dynamic_update_slice_p)
def _dynamic_update_slice(x, update, *starts):
    xp = xp_of(x, update)
    out = x.copy()
    out[window_index(xp, x.shape, starts, update.shape)] = update
    return out


# ---- positions of windows -------------------------------------------------------------------
def _strides(shape):
    """C-order element strides of `shape`, as Python ints."""
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= n
    return out[::-1]


def _flat_positions(xp, operand_shape, indices, index_map, dropped, obatch, ibatch,
                    window_sizes, target_rank, window_pos, check_bounds):
    """Flat operand positions of every element of the target, as an int64 array
    broadcastable to the target's shape, and (when `check_bounds`) a bool array, also
    broadcastable, False for the elements of windows not wholly in bounds; unchecked starts
    are clamped (backends/numpy/indexing.py's _flat_positions, for any array module)."""
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
@register(ix.gather_p)
def _gather(operand, indices, *, dimension_numbers, slice_sizes, mode, fill_value,
            indices_are_sorted, unique_indices):
    xp = xp_of(operand, indices)
    dn = dimension_numbers
    dropped = set(dn.collapsed_slice_dims) | set(dn.operand_batching_dims)
    window = [s for d, s in enumerate(slice_sizes) if d not in dropped]
    rank = len(window) + indices.ndim - 1
    batch, win = iter(indices.shape[:-1]), iter(window)
    out_shape = tuple(next(win) if d in dn.offset_dims else next(batch) for d in range(rank))
    if 0 in out_shape:
        return xp.empty(out_shape, operand.dtype)
    flat, ok = _flat_positions(
        xp, operand.shape, indices, dn.start_index_map, dropped, dn.operand_batching_dims,
        dn.start_indices_batching_dims, slice_sizes, rank, dn.offset_dims, mode == "fill")
    out = xp.take(operand.reshape(-1), xp.broadcast_to(flat, out_shape))
    if ok is not None:
        fill = xp.full((), fill_value, dtype=operand.dtype)
        out = xp.where(ok, out, fill)
    return out


# ---- scatter --------------------------------------------------------------------------------
def ranks(xp, flat):
    """(order, rank): `order` sorts the 1-D positions `flat` stably; rank[i] counts the
    earlier entries of the sorted positions equal to entry i (each write's turn at its
    position)."""
    order = stable_argsort(xp, flat)
    ordered = flat[order]
    i = xp.arange(flat.shape[0], dtype=np.int64)
    first = xp.ones(flat.shape[0], dtype=bool)
    first[1:] = ordered[1:] != ordered[:-1]
    start = xp.where(first, i, 0)
    return order, i - log_scan(xp, xp.maximum, start, 0)


def _ranked_update(xp, op, target, flat, updates):
    """Apply `op(target[p], u)` (or replace where `op` is None) for every write, in NumPy's
    order: one round per rank (module docstring)."""
    if flat.shape[0] == 0:
        return
    order, rank = ranks(xp, flat)
    flat, updates = flat[order], updates[order]
    if op is None:  # the last write of each position wins: one round
        last = xp.ones(flat.shape[0], dtype=bool)
        last[:-1] = flat[1:] != flat[:-1]
        target[flat[last]] = updates[last]
        return
    rounds = int(rank.max()) + 1  # one read to the host: the largest multiplicity
    for r in range(rounds):
        sel = rank == r
        p = flat[sel]
        target[p] = op(target[p], updates[sel])


def _atomic_add(xp, target, flat, updates):
    """cupyx.scatter_add where CuPy's atomics take the dtype (after the lossless integer
    reinterpretations of the module docstring); False where they do not."""
    import cupyx

    dt = target.dtype
    if dt in (np.int64, np.uint64):
        cupyx.scatter_add(target.view(np.uint64), flat, updates.astype(dt).view(np.uint64))
        return True
    if dt.kind in "iu" and dt.itemsize < 4:
        wide = np.dtype(np.int32 if dt.kind == "i" else np.uint32)
        acc = target.astype(wide)
        cupyx.scatter_add(acc, flat, updates.astype(wide))
        target[...] = acc.astype(dt)
        return True
    if dt.kind == "c" or dt == np.bool_:
        return False
    try:
        cupyx.scatter_add(target, flat, updates)
    except TypeError:  # no atomicAdd for this dtype in this CuPy
        return False
    return True


_OPS = {"add": "add", "mul": "multiply", "min": "minimum", "max": "maximum"}


def _combine(xp, kind, target, flat, updates):
    """Apply the scatter `kind` ("replace", "add", "mul", "min", "max") to the 1-D `target`
    at positions `flat` (1-D int64) with `updates` (1-D), in place."""
    if kind == "add" and xp is not np and _atomic_add(xp, target, flat, updates):
        return
    if kind == "replace":
        _ranked_update(xp, None, target, flat, updates)
    elif xp is np:  # NumPy's own ufunc.at: the CPU kernel's call
        getattr(xp, _OPS[kind]).at(target, flat, updates)
    else:
        _ranked_update(xp, getattr(xp, _OPS[kind]), target, flat, updates)


def _scatter_kernel(kind):
    def kernel(operand, indices, updates, *, dimension_numbers, mode, indices_are_sorted,
               unique_indices):
        xp = xp_of(operand, indices, updates)
        dn = dimension_numbers
        out = operand.copy()
        if operand.size == 0 or updates.size == 0:
            return out
        dropped = set(dn.inserted_window_dims) | set(dn.operand_batching_dims)
        sizes = [1] * operand.ndim
        window_dims = [d for d in range(operand.ndim) if d not in dropped]
        for d, u in zip(window_dims, dn.update_window_dims, strict=True):
            sizes[d] = updates.shape[u]
        flat, ok = _flat_positions(
            xp, operand.shape, indices, dn.scatter_dims_to_operand_dims, dropped,
            dn.operand_batching_dims, dn.scatter_indices_batching_dims, sizes, updates.ndim,
            dn.update_window_dims, mode != "clip")
        flat = xp.broadcast_to(flat, updates.shape)
        if ok is not None:
            keep = xp.broadcast_to(ok, updates.shape)
            flat, updates = flat[keep], updates[keep]
        flat, updates = flat.reshape(-1), updates.reshape(-1)
        target = out.reshape(-1)  # a view: out is a fresh contiguous copy
        if kind != "replace" and out.dtype in _HALF:  # accumulate in float32, round once
            wide = target.astype(F32)
            with np.errstate(all="ignore"):
                _combine(xp, kind, wide, flat, updates.astype(F32))
                return wide.astype(out.dtype).reshape(out.shape)
        with np.errstate(all="ignore"):
            _combine(xp, kind, target, flat, updates)
        return out

    kernel.__name__ = f"scatter_{kind}"
    return kernel


for _prim, _kind in ((ix.scatter_p, "replace"), (ix.scatter_add_p, "add"),
                     (ix.scatter_mul_p, "mul"), (ix.scatter_min_p, "min"),
                     (ix.scatter_max_p, "max")):
    register(_prim)(_scatter_kernel(_kind))
