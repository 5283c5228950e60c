"""How mytorch.numpy.indexing lowers an index (its docstring gives the rules): parsing into
canonical entries, then the slices, dynamic slices, gather or scatter that read or update
`x[idx]`. The take family (take_family.py) builds its gathers and scatters here too."""

import math
import operator

import numpy as np

from mytorch import lax
from mytorch.core import dtypes
from mytorch.core.array import Array, ArrayImpl, from_numpy
from mytorch.core.source_info import where
from mytorch.core.trace import Tracer
from mytorch.errors import NonConcreteBooleanIndexError, TracedSliceError
from mytorch.lax.elementwise import convert_to_existing
from mytorch.numpy._promote import asarray_any, broadcast_to_shape

_IDX = dtypes.int32
_INVALID = ("only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and "
            "integer or boolean arrays are valid indices")


def _arr(x):
    return x if isinstance(x, Array) else asarray_any(x)


def _s(x):
    return x.aval.str_short()


def _concrete(a):
    """The NumPy value of a concrete array (or of a tracer that knows it), else None."""
    if isinstance(a, ArrayImpl):
        return np.asarray(a)
    if isinstance(a, Tracer):
        v = a.concrete_value()
        return None if v is None else np.asarray(v)
    return None


# ---- parsing an index ---------------------------------------------------------------------
# Entries: ("int", i) static int, ("cint", i) int read from a concrete array or an
# out-of-bounds static int (clamps/drops like a traced one; _canonical turns in-bounds
# ones into "int"), ("dyn", a) traced 0-d int, ("slice", s), ("none",), ("ell",),
# ("arr", a) int array (NumPy int64 or Array), ("mask", m) static bool array,
# ("newb", b) a 0-d bool (a new axis of length 1 or 0).
def _mask_error(a):
    return NonConcreteBooleanIndexError(
        f"boolean mask indexing needs a concrete mask, but got a traced {_s(a)}{where()}: the "
        "result's shape would depend on its values. Use mnp.where(mask, x, fill) to keep the "
        "shape, or mnp.nonzero(mask, size=n) to get a fixed number of indices."
    )


def _parse_array(a):
    if dtypes.is_bool(a.dtype):
        v = _concrete(a)
        if v is None:
            raise _mask_error(a)
        return ("newb", bool(v)) if v.ndim == 0 else ("mask", v)
    if not dtypes.is_int(a.dtype):
        raise IndexError(f"{_INVALID}; got an array of dtype {_s(a)}")
    if isinstance(a, ArrayImpl):
        v = np.asarray(a).astype(np.int64)
        return ("cint", int(v)) if v.ndim == 0 else ("arr", v)
    return ("dyn", a) if a.ndim == 0 else ("arr", a)


def _slice_part(v):
    if v is None:
        return None
    if isinstance(v, Tracer) and v.concrete_value() is None:
        raise TracedSliceError(
            f"slice bounds must be static, but got a traced {_s(v)}{where()}. Use "
            "lax.dynamic_slice(x, starts, sizes) for a slice of static size at a traced "
            "start, or mark the bound static with static_argnums"
        )
    try:
        return operator.index(v)
    except TypeError:
        raise IndexError(f"slice indices must be integers or None, got {v!r:.60}") from None


def _parse_one(i):
    if i is None:
        return ("none",)
    if i is Ellipsis:
        return ("ell",)
    if isinstance(i, slice):
        return ("slice", slice(_slice_part(i.start), _slice_part(i.stop), _slice_part(i.step)))
    if isinstance(i, (bool, np.bool_)):
        return ("newb", bool(i))
    if isinstance(i, (int, np.integer)):
        return ("int", int(i))
    if isinstance(i, Array):
        return _parse_array(i)
    if isinstance(i, (list, tuple)) and any(isinstance(e, Array) for e in _leaves(i)):
        return _parse_array(asarray_any(i))
    if isinstance(i, (list, tuple, np.ndarray)):
        a = np.asarray(i)
        if isinstance(i, (list, tuple)) and a.size == 0:
            a = a.astype(np.int64)
        if a.dtype.kind not in "iub":
            raise IndexError(f"{_INVALID}; got {type(i).__name__} of dtype {a.dtype}")
        if a.dtype == np.bool_:
            return ("newb", bool(a)) if a.ndim == 0 else ("mask", a)
        return ("int", int(a)) if a.ndim == 0 else ("arr", a.astype(np.int64))
    raise IndexError(f"{_INVALID}; got {type(i).__name__}: {i!r:.60}")


def _leaves(seq):
    for e in seq:
        if isinstance(e, (list, tuple)):
            yield from _leaves(e)
        else:
            yield e


def _consumed(e):
    kind = e[0]
    if kind == "mask":
        return e[1].ndim
    return 0 if kind in ("none", "ell", "newb", "sep") else 1


def _canonical(idx, shape):
    """Entries over the axes of `x` (after inserting the axes of 0-d bools), and where
    those new axes go."""
    entries = [_parse_one(i) for i in (idx if isinstance(idx, tuple) else (idx,))]
    n_ell = sum(e[0] == "ell" for e in entries)
    if n_ell > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = sum(_consumed(e) for e in entries)
    if used > len(shape):
        raise IndexError(
            f"too many indices for array: array is {len(shape)}-dimensional, but {used} were "
            "indexed"
        )
    fill = [("slice", slice(None))] * (len(shape) - used)
    if n_ell:  # an empty Ellipsis still separates advanced indices (NumPy's rule)
        k = next(k for k, e in enumerate(entries) if e[0] == "ell")
        entries = entries[:k] + (fill or [("sep",)]) + entries[k + 1:]
    else:
        entries = entries + fill
    out, new_axes, ax = [], [], 0
    for e in entries:
        kind = e[0]
        if kind == "sep":
            out.append(e)
            continue
        if kind == "newb":
            new_axes.append(ax + len(new_axes))
            out.append(("arr", np.zeros(1 if e[1] else 0, np.int64)))
            continue
        if kind == "mask":
            _check_mask(e[1], shape, ax)
            out.extend(("arr", nz.astype(np.int64)) for nz in np.nonzero(e[1]))
        elif kind in ("int", "cint"):
            out.append(_int_entry(e[1], shape[ax], ax))
        else:
            out.append(e)
        ax += _consumed(e)
    return out, new_axes


def _int_entry(i, n, ax):
    """A static int index on an axis of size n: ("int", i) in [0, n) when in bounds, else
    ("cint", i), which clamps (gathers) or drops (scatters) like a traced index does. Only
    an empty axis raises, as it does for traced indices: there is nothing to clamp to."""
    if n == 0:
        raise _empty_axis_error(ax, i)
    return ("int", i % n) if -n <= i < n else ("cint", i)


def _empty_axis_error(ax, i=None):
    what = "index" if i is None else f"index {i}"
    return IndexError(f"{what} is out of bounds for axis {ax} with size 0{where()}: an empty "
                      "axis has no element to read or update")


def _check_mask(m, shape, ax):
    for j, d in enumerate(m.shape):
        if shape[ax + j] != d and d != 0:  # NumPy lets an empty mask dim pass
            raise IndexError(
                f"boolean index did not match indexed array along axis {ax + j}; size of axis "
                f"is {shape[ax + j]} but size of corresponding boolean axis is {d}"
            )


def _slice_bounds(s, n):
    """(start, limit, stride, reverse) of a lax.slice (+ rev) equal to `x[s]` on size n."""
    start, stop, step = s.indices(n)
    length = len(range(start, stop, step))
    if length == 0:
        return 0, 0, 1, False
    if step > 0:
        return start, start + (length - 1) * step + 1, step, False
    lo = start + (length - 1) * step
    return lo, start + 1, -step, length > 1


# ---- index arrays -------------------------------------------------------------------------
def _as_index(a):
    return lax.convert_element_type(a, _IDX)  # a no-op for strong int32


def _wrap_negative(p, n):
    """Negative indices count from the end (once)."""
    if isinstance(p, np.ndarray):
        return np.where(p < 0, p + n, p)
    p = _as_index(p)
    return lax.select(lax.lt(p, 0), lax.add(p, n), p)


def _modulo(p, n):
    if isinstance(p, np.ndarray):
        return np.mod(p, n)
    p = _as_index(p)
    r = lax.rem(p, n)
    return lax.select(lax.lt(r, 0), lax.add(r, n), r)


def _assemble(pieces, batch):
    """Stack index pieces along a new last axis after broadcasting each into `batch`.

    A piece is (values, dims): `values` (NumPy int array, Array, or ("iota", d)) maps its
    axes to the batch dims `dims`.
    """
    batch = tuple(batch)
    if all(not isinstance(p, Array) for p, _ in pieces):
        cols = []
        for p, dims in pieces:
            if isinstance(p, tuple):
                p, dims = np.arange(batch[p[1]]), (p[1],)
            shape = [1] * len(batch)
            for j, d in enumerate(dims):
                shape[d] = p.shape[j]
            cols.append(np.broadcast_to(np.reshape(p, shape), batch))
        info = np.iinfo(np.int32)
        return from_numpy(np.clip(np.stack(cols, -1), info.min, info.max).astype(np.int32))
    cols = []
    for p, dims in pieces:
        if isinstance(p, tuple):
            cols.append(lax.broadcasted_iota(_IDX, batch + (1,), p[1]))
            continue
        if isinstance(p, np.ndarray):
            p = from_numpy(np.clip(p, -2**31, 2**31 - 1).astype(np.int32))
        cols.append(lax.broadcast_in_dim(_as_index(p), batch + (1,), tuple(dims)))
    return cols[0] if len(cols) == 1 else lax.concatenate(cols, len(batch))


def _zeros(shape, dtype, weak=False):
    return lax.broadcast_in_dim(from_numpy(np.zeros((), dtype), weak_type=weak), tuple(shape), ())


class _Gather:
    """One gather/scatter: index pieces, batch shape and dimension numbers."""

    def __init__(self, shape, pieces, batch, offset_dims, collapsed, start_map, slice_sizes,
                 newaxis_dims=()):
        self.shape, self.pieces, self.batch = tuple(shape), pieces, tuple(batch)
        self.offset_dims, self.collapsed = tuple(offset_dims), tuple(sorted(collapsed))
        self.start_map, self.slice_sizes = tuple(start_map), tuple(slice_sizes)
        self.newaxis_dims = tuple(newaxis_dims)
        rank = len(self.batch) + len(self.offset_dims)
        windows = iter(s for d, s in enumerate(self.slice_sizes) if d not in self.collapsed)
        batch_it = iter(self.batch)
        self.out_shape = tuple(next(windows) if d in self.offset_dims else next(batch_it)
                               for d in range(rank))
        full = list(self.out_shape)
        for d in self.newaxis_dims:
            full.insert(d, 1)
        self.indexed_shape = tuple(full)
        bad = [d for d, s in enumerate(self.slice_sizes) if s > self.shape[d]]
        self.empty = bool(bad) or math.prod(self.out_shape) == 0
        # indices into an empty axis: a gather has nothing to read (an error), while a
        # scatter drops every update (all positions are out of bounds), leaving x as it is
        self.reads_empty_axis = bad[0] if bad and math.prod(self.out_shape) else None

    def gather(self, x, mode=None, fill_value=None, sorted_=False, unique=False):
        if self.reads_empty_axis is not None:
            raise _empty_axis_error(self.reads_empty_axis)
        if self.empty:
            y = _zeros(self.out_shape, x.dtype, x.weak_type)
        else:
            dnums = lax.GatherDimensionNumbers(
                offset_dims=self.offset_dims, collapsed_slice_dims=self.collapsed,
                start_index_map=self.start_map)
            y = lax.gather(x, _assemble(self.pieces, self.batch), dnums, self.slice_sizes,
                           indices_are_sorted=sorted_, unique_indices=unique,
                           mode=mode, fill_value=fill_value)
        return lax.expand_dims(y, self.newaxis_dims) if self.newaxis_dims else y

    def scatter(self, x, values, op, mode=None, sorted_=False, unique=False):
        """`values` has `indexed_shape` and x's dtype."""
        if self.empty:
            return x
        if self.newaxis_dims:
            values = lax.squeeze(values, self.newaxis_dims)
        dnums = lax.ScatterDimensionNumbers(
            update_window_dims=self.offset_dims, inserted_window_dims=self.collapsed,
            scatter_dims_to_operand_dims=self.start_map)
        fn = {"set": lax.scatter, "add": lax.scatter_add, "mul": lax.scatter_mul,
              "min": lax.scatter_min, "max": lax.scatter_max}[op]
        return fn(x, _assemble(self.pieces, self.batch), values, dnums,
                  indices_are_sorted=sorted_, unique_indices=unique, mode=mode)


def _indexer(shape, entries):
    """The gather for canonical `entries` over an operand of `shape` (JAX's scheme)."""
    adv = [k for k, e in enumerate(entries) if e[0] in ("int", "cint", "dyn", "arr")]
    contiguous = adv == list(range(adv[0], adv[0] + len(adv))) if adv else True
    pieces, batch, offset_dims, collapsed, start_map, newaxis = [], [], [], [], [], []
    sizes, x_ax, y_ax, cy_ax = list(shape), 0, 0, 0
    group = _advanced_group(entries, adv, shape)
    for pos, e in enumerate(entries):
        if adv and pos == (adv[0] if contiguous else 0):
            b_shape, members = group
            start = len(batch)
            end = start + len(b_shape)
            for p, ax in members:  # right-aligned in the broadcast shape
                pieces.append((p, tuple(range(end - p.ndim, end))))
                start_map.append(ax)
                collapsed.append(ax)
            batch += b_shape
            y_ax += len(b_shape)
            cy_ax += len(b_shape)
        kind = e[0]
        if kind == "sep":
            continue
        if kind == "none":
            newaxis.append(y_ax)
            y_ax += 1
            continue
        if pos in adv:
            sizes[x_ax] = 1
            x_ax += 1
            continue
        n = shape[x_ax]
        start, stop, step = e[1].indices(n)
        length = len(range(start, stop, step))
        if step == 1:
            if length != n:
                pieces.append((np.asarray(start), ()))
                start_map.append(x_ax)
            sizes[x_ax] = length
            offset_dims.append(cy_ax)
        else:
            pieces.append((np.arange(length) * step + start, (len(batch),)))
            batch.append(length)
            start_map.append(x_ax)
            collapsed.append(x_ax)
            sizes[x_ax] = 1
        cy_ax += 1
        y_ax += 1
        x_ax += 1
    return _Gather(shape, pieces, batch, offset_dims, collapsed, start_map, sizes, newaxis)


def _advanced_group(entries, adv, shape):
    """(broadcast shape, [(normalised index, x axis)]) of the advanced indices."""
    members, shapes, x_ax = [], [], 0
    for pos, e in enumerate(entries):
        if e[0] in ("none", "sep"):
            continue
        if pos in adv:
            n = shape[x_ax]
            p = np.asarray(e[1]) if e[0] in ("int", "cint") else e[1]
            if e[0] == "dyn" and n == 0:
                raise _empty_axis_error(x_ax)
            members.append((_wrap_negative(p, n), x_ax))
            shapes.append(tuple(np.shape(p)) if isinstance(p, np.ndarray) else p.shape)
        x_ax += 1
    try:
        b_shape = np.broadcast_shapes(*shapes) if shapes else ()
    except ValueError:
        raise IndexError(
            "shape mismatch: indexing arrays could not be broadcast together with shapes "
            + " ".join(str(s) for s in shapes)
        ) from None
    return tuple(b_shape), members


# ---- lowering x[idx] ----------------------------------------------------------------------
def _basic_get(x, entries):
    """Ints, slices and None: slice, rev, dynamic_slice, squeeze, expand_dims."""
    starts, limits, strides, rev, drop, dyn, new = [], [], [], [], [], [], []
    ax = out = 0
    for e in entries:
        kind = e[0]
        if kind == "sep":
            continue
        if kind == "none":
            new.append(out)
            out += 1
            continue
        n = x.shape[ax]
        if kind in ("int", "cint"):
            i = e[1] if kind == "int" else _clamped(e[1], n, ax)
            bounds = (i, i + 1, 1, False)
            drop.append(ax)
        elif kind == "dyn":
            if n == 0:
                raise _empty_axis_error(ax)
            bounds = (0, n, 1, False)
            drop.append(ax)
            dyn.append((ax, e[1]))
        else:
            bounds = _slice_bounds(e[1], n)
            out += 1
        starts.append(bounds[0])
        limits.append(bounds[1])
        strides.append(bounds[2])
        if bounds[3]:
            rev.append(ax)
        ax += 1
    if starts != [0] * x.ndim or limits != list(x.shape) or any(s != 1 for s in strides):
        x = lax.slice(x, tuple(starts), tuple(limits),
                      tuple(strides) if any(s != 1 for s in strides) else None)
    if rev:
        x = lax.rev(x, tuple(rev))
    if dyn:  # dynamic_slice wraps negative starts once and clamps
        begin, sizes = [0] * x.ndim, list(x.shape)
        for a, i in dyn:
            begin[a], sizes[a] = i, 1
        x = lax.dynamic_slice(x, begin, tuple(sizes))
    if drop:
        x = lax.squeeze(x, tuple(drop))
    return lax.expand_dims(x, tuple(new)) if new else x


def _clamped(i, n, ax):
    if n == 0:
        raise _empty_axis_error(ax, i)
    return min(max(i + n if i < 0 else i, 0), n - 1)


def _prepare(arr, idx):
    x = _arr(arr)
    entries, new_axes = _canonical(idx, x.shape)
    if new_axes:
        x = lax.expand_dims(x, tuple(new_axes))
    return x, entries, tuple(new_axes)


# ---- lowering x.at[idx] -------------------------------------------------------------------
def _broadcast_values(name, v, shape):
    if v.shape == tuple(shape):
        return v
    extra = v.ndim - len(shape)
    if extra > 0 and all(d == 1 for d in v.shape[:extra]):
        v = lax.reshape(v, v.shape[extra:])
    ok = v.ndim <= len(shape) and all(
        d in (1, s) for d, s in zip(v.shape[::-1], tuple(shape)[::-1], strict=False))
    if not ok:
        raise ValueError(
            f"{name}: cannot broadcast the update values {_s(v)} to the indexed shape "
            f"{tuple(shape)}"
        )
    return broadcast_to_shape(v, tuple(shape))


def _combine(op, old, new):
    if dtypes.is_bool(old.dtype) and op in ("add", "mul"):
        return lax.bitwise_or(old, new) if op == "add" else lax.bitwise_and(old, new)
    return {"set": lambda a, b: b, "add": lax.add, "mul": lax.mul, "min": lax.min,
            "max": lax.max}[op](old, new)


def _is_basic_static(entries):
    return all(e[0] in ("int", "none", "sep") or e[0] == "slice" and e[1].step in (None, 1)
               for e in entries)


def _basic_update(name, x, entries, values, op):
    """Static ints and unit-step slices: one dynamic_update_slice of the region."""
    starts, limits, region, indexed, ax = [], [], [], [], 0
    for e in entries:
        if e[0] == "none":
            indexed.append(1)
        if e[0] in ("none", "sep"):
            continue
        n = x.shape[ax]
        if e[0] == "int":
            lo, hi = e[1], e[1] + 1
        else:
            lo, hi, _, _ = _slice_bounds(e[1], n)
            indexed.append(hi - lo)
        starts.append(lo)
        limits.append(hi)
        region.append(hi - lo)
        ax += 1
    v = _broadcast_values(name, values, indexed)
    v = v if v.shape == tuple(region) else lax.reshape(v, tuple(region))
    whole = tuple(region) == x.shape
    if op != "set":
        old = x if whole else lax.slice(x, tuple(starts), tuple(limits))
        v = _combine(op, old, v)
    if whole:
        return v
    if math.prod(region) == 0:
        return x
    return lax.dynamic_update_slice(x, v, starts)


def _update(name, arr, idx, values, op, mode, sorted_, unique):
    mode = lax.GatherScatterMode.from_any(mode, name, "drop")
    x, entries, new_axes = _prepare(arr, idx)
    v = asarray_any(values)
    if v.dtype != x.dtype or v.weak_type != x.weak_type:  # x's dtype, even a 64-bit one
        v = convert_to_existing(v, x.dtype, weak_type=x.weak_type)
    if _is_basic_static(entries):
        out = _basic_update(name, x, entries, v, op)
    else:
        g = _indexer(x.shape, entries)
        out = g.scatter(x, _broadcast_values(name, v, g.indexed_shape), op, mode, sorted_,
                        unique)
    return lax.squeeze(out, new_axes) if new_axes else out
