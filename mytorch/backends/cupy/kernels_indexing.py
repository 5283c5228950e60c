"""GPU eager kernels of the indexing primitives: dynamic slices, gather and scatter.

gather and scatter are backends/numpy/indexing.py's kernels, written for any array module,
run with CuPy's: for every operand dim, an integer array broadcastable to the target (the
gather output or the updates) gives the operand position each element reads or writes; they
add up to one array of flat positions, so a gather is one `take` and a scatter one
combining write, which is this module's `_combine`. Python loops run over dims, never over index
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
from mytorch.backends.cupy.kernels_common import any_module, log_scan, stable_argsort
from mytorch.backends.numpy import indexing as cpu
from mytorch.backends.numpy.indexing import _clamped
from mytorch.lax import indexing as ix


# ---- dynamic slices -------------------------------------------------------------------------
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
    at positions `flat` with `updates` (both of the updates' shape), in place: the NumPy
    kernel's write becomes the module docstring's (NumPy operands keep `ufunc.at` for the
    combining kinds; replace goes the ranked way everywhere, so the tests run it)."""
    flat, updates = flat.reshape(-1), updates.reshape(-1)
    if kind == "add" and xp is not np and _atomic_add(xp, target, flat, updates):
        return
    if kind == "replace":
        _ranked_update(xp, None, target, flat, updates)
    elif xp is np:  # NumPy's own ufunc.at: the CPU kernel's call
        cpu.combine(xp, kind, target, flat, updates)
    else:
        _ranked_update(xp, getattr(xp, _OPS[kind]), target, flat, updates)


register(ix.gather_p)(any_module(cpu._gather))
for _prim, _kind in ((ix.scatter_p, "replace"), (ix.scatter_add_p, "add"),
                     (ix.scatter_mul_p, "mul"), (ix.scatter_min_p, "min"),
                     (ix.scatter_max_p, "max")):
    register(_prim)(any_module(cpu.scatter_kernel(_kind, _combine)))
