"""NumPy indexing (`x[idx]`), functional updates (`x.at[idx].set(v)`) and the take family.

An index is first put in a canonical form (Ellipsis expanded, static boolean masks turned
into integer arrays, bounds of Python ints checked), then lowered:

- basic indexing (ints, slices, None, Ellipsis) to `lax.slice` / `lax.rev` / `lax.squeeze` /
  `lax.expand_dims`, and traced scalar ints to `lax.dynamic_slice`;
- anything with integer arrays to a single `lax.gather` (and updates to one `lax.scatter*`),
  with NumPy's rules: index arrays broadcast together, and their dims replace the indexed
  axes in place when the advanced indices are adjacent, else go to the front.

As in JAX: out-of-bounds array indices clamp on reads and are dropped on updates; negative
ones count from the end (once). Python ints out of range raise IndexError, as in NumPy.
"""

import math
import operator

import numpy as np

from mytorch import lax
from mytorch.core import dtypes
from mytorch.core.array import Array, ArrayImpl, from_numpy
from mytorch.core.trace import Tracer
from mytorch.errors import ConcretizationTypeError
from mytorch.numpy._promote import asarray_any, broadcast_to_shape, promote_dtypes

__all__ = [
    "getitem", "IndexUpdateHelper", "IndexUpdateRef", "take", "take_along_axis",
    "put_along_axis", "choose", "compress", "extract", "ix_", "unravel_index",
    "ravel_multi_index", "place", "put",
]

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
# Entries: ("int", i) static int, ("cint", i) int read from a concrete array (clamps/drops
# like a traced one), ("dyn", a) traced 0-d int, ("slice", s), ("none",), ("ell",),
# ("arr", a) int array (NumPy int64 or Array), ("mask", m) static bool array,
# ("newb", b) a 0-d bool (a new axis of length 1 or 0).
def _mask_error(a):
    return ConcretizationTypeError(
        f"boolean mask indexing needs a concrete mask, but got a traced {_s(a)}: the result's "
        "shape would depend on its values. Use mnp.where(mask, x, fill) to keep the shape, or "
        "mnp.nonzero(mask, size=n) to get a fixed number of indices."
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
        raise ConcretizationTypeError(
            f"slice bounds must be static, but got a traced {_s(v)}. Use "
            "lax.dynamic_slice(x, starts, sizes) for a slice of static size at a traced start"
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
        elif kind == "int":
            n = shape[ax]
            if not -n <= e[1] < n:
                raise IndexError(f"index {e[1]} is out of bounds for axis {ax} with size {n}")
            out.append(("int", e[1] % n))
        else:
            out.append(e)
        ax += _consumed(e)
    return out, new_axes


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
        if bad and math.prod(self.out_shape):
            raise IndexError(f"index is out of bounds for axis {bad[0]} with size 0")

    def gather(self, x, mode=None, fill_value=None, sorted_=False, unique=False):
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
                raise IndexError(f"index is out of bounds for axis {x_ax} with size 0")
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


# ---- x[idx] -------------------------------------------------------------------------------
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
                raise IndexError(f"index is out of bounds for axis {ax} with size 0")
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
        raise IndexError(f"index is out of bounds for axis {ax} with size 0")
    return min(max(i + n if i < 0 else i, 0), n - 1)


def _prepare(arr, idx):
    x = _arr(arr)
    entries, new_axes = _canonical(idx, x.shape)
    if new_axes:
        x = lax.expand_dims(x, tuple(new_axes))
    return x, entries, tuple(new_axes)


def getitem(arr, idx, *, mode=None, fill_value=None, indices_are_sorted=False,
            unique_indices=False):
    """`arr[idx]` with NumPy's indexing rules (what `Array.__getitem__` calls).

    Args:
      arr: an array.
      idx: ints, slices, None, Ellipsis, integer arrays (mytorch, NumPy or lists; traced
        ones too) and static boolean masks, alone or in a tuple.
      mode: for out-of-bounds array indices: None/"clip" clamp, "fill" returns
        `fill_value` (NaN, or the dtype's min for ints, by default).

    Returns:
      The selected elements, in NumPy's result shape.

    Raises:
      IndexError: a Python int out of range, too many indices, mismatched masks.
      ConcretizationTypeError: a traced boolean mask.

    >>> getitem(mnp.arange(6).reshape(2, 3), (slice(None), [2, 0]))  # doctest: +SKIP
    Array([[2, 0], [5, 3]], dtype=int32)
    """
    x, entries, _ = _prepare(arr, idx)
    kinds = {e[0] for e in entries}
    if "arr" not in kinds and ("dyn" not in kinds or mode not in ("fill", "drop")):
        return _basic_get(x, entries)
    return _indexer(x.shape, entries).gather(x, mode, fill_value, indices_are_sorted,
                                             unique_indices)


# ---- x.at[idx] ----------------------------------------------------------------------------
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
    x, entries, new_axes = _prepare(arr, idx)
    v = asarray_any(values)
    if v.dtype != x.dtype or v.weak_type != x.weak_type:
        v = lax.convert_element_type(v, x.dtype, weak_type=x.weak_type)
    if _is_basic_static(entries):
        out = _basic_update(name, x, entries, v, op)
    else:
        g = _indexer(x.shape, entries)
        out = g.scatter(x, _broadcast_values(name, v, g.indexed_shape), op, mode, sorted_,
                        unique)
    return lax.squeeze(out, new_axes) if new_axes else out


def _ones(x):
    return lax.broadcast_in_dim(from_numpy(np.ones((), x.dtype), weak_type=x.weak_type),
                                x.shape, ())


class IndexUpdateRef:
    """`x.at[idx]`: functional updates of the elements `x[idx]` (each returns a new array).

    Update values broadcast to the shape of `x[idx]` and are cast to x's dtype. Repeated
    indices accumulate for add/multiply/min/max; `set` keeps one of the values. Out-of-bounds
    array indices are dropped (mode=None/"drop"/"fill") or clamped (mode="clip").
    """

    __slots__ = ("array", "index")

    def __init__(self, array, index):
        self.array, self.index = array, index

    def __repr__(self):
        return f"_IndexUpdateRef({self.array!r}, {self.index!r})"

    def _do(self, name, values, op, mode, sorted_, unique):
        return _update(f"at[].{name}", self.array, self.index, values, op, mode, sorted_,
                       unique)

    def get(self, *, indices_are_sorted=False, unique_indices=False, mode=None,
            fill_value=None):
        """`x[idx]` (with `mode`/`fill_value` for out-of-bounds indices)."""
        return getitem(self.array, self.index, mode=mode, fill_value=fill_value,
                       indices_are_sorted=indices_are_sorted, unique_indices=unique_indices)

    def set(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """`x[idx] = values`."""
        return self._do("set", values, "set", mode, indices_are_sorted, unique_indices)

    def add(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """`x[idx] += values` (repeated indices accumulate, like np.add.at)."""
        return self._do("add", values, "add", mode, indices_are_sorted, unique_indices)

    def subtract(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """`x[idx] -= values`."""
        x = _arr(self.array)
        if dtypes.is_bool(x.dtype):
            raise TypeError(f"at[].subtract: not defined for bool arrays ({_s(x)})")
        v = lax.convert_element_type(asarray_any(values), x.dtype, weak_type=x.weak_type)
        return self._do("subtract", lax.neg(v), "add", mode, indices_are_sorted,
                        unique_indices)

    def multiply(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """`x[idx] *= values` (repeated indices multiply together)."""
        return self._do("multiply", values, "mul", mode, indices_are_sorted, unique_indices)

    mul = multiply

    def _scaled(self, name, values, mode):
        """ones(x.shape) with the values multiplied in at the index (for divide/power)."""
        x = _arr(self.array)
        return x, _update(f"at[].{name}", _ones(x), self.index, values, "mul", mode, False,
                          False)

    def divide(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """`x[idx] /= values` (floating-point arrays)."""
        x = _arr(self.array)
        if not dtypes.is_float(x.dtype):
            raise TypeError(
                f"at[].divide needs a floating-point array, got {_s(x)}; convert it first "
                "with .astype(float)"
            )
        x, denom = self._scaled("divide", values, mode)
        return lax.div(x, denom)

    def power(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """`x[idx] **= values` (repeated indices multiply their exponents)."""
        x, expo = self._scaled("power", values, mode)
        if dtypes.is_float(x.dtype):
            return lax.pow(x, expo)
        from mytorch.numpy import ufuncs

        return lax.convert_element_type(ufuncs.power(x, expo), x.dtype, weak_type=x.weak_type)

    def min(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """`x[idx] = minimum(x[idx], values)`."""
        return self._do("min", values, "min", mode, indices_are_sorted, unique_indices)

    def max(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """`x[idx] = maximum(x[idx], values)`."""
        return self._do("max", values, "max", mode, indices_are_sorted, unique_indices)

    def apply(self, func, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """`x[idx] = func(x[idx])`; each selected element once (repeated indices are not
        applied repeatedly, unlike NumPy's ufunc.at)."""
        new = func(self.get(mode=mode))
        return self._do("apply", new, "set", mode, indices_are_sorted, unique_indices)


class IndexUpdateHelper:
    """`x.at`: index it (`x.at[idx]`) to get an `IndexUpdateRef`."""

    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array

    def __getitem__(self, index):
        return IndexUpdateRef(self.array, index)

    def __repr__(self):
        return f"_IndexUpdateHelper({self.array!r})"


# ---- take family --------------------------------------------------------------------------
def _axis(name, axis, x):
    try:
        ax = operator.index(axis)
    except TypeError:
        raise TypeError(f"{name}: axis must be an int, got {axis!r}") from None
    if not -x.ndim <= ax < x.ndim:
        raise ValueError(f"{name}: axis {ax} is out of bounds for {_s(x)} (rank {x.ndim})")
    return ax % x.ndim


def _index_array(name, indices):
    """A static NumPy int64 array or an int Array."""
    if isinstance(indices, Array) and _concrete(indices) is None:
        if not (dtypes.is_int(indices.dtype) or dtypes.is_bool(indices.dtype)):
            raise TypeError(f"{name}: indices must be integers, got {_s(indices)}")
        return indices
    v = _concrete(indices) if isinstance(indices, Array) else np.asarray(indices)
    if v.dtype.kind not in "iub" and not (v.size == 0 and v.dtype.kind == "f"):
        raise TypeError(f"{name}: indices must be integers, got dtype {v.dtype}")
    return v.astype(np.int64)


def _take_mode(name, p, n, mode):
    """Index values for gather mode "clip"/"fill" following take's `mode`."""
    if mode in (None, "fill"):
        return _wrap_negative(p, n), "fill" if mode else "clip"
    if mode == "clip":
        return p, "clip"
    if mode == "wrap":
        return (_modulo(p, n) if n else p), "clip"
    raise ValueError(
        f"{name}: mode must be None, 'clip', 'wrap' or 'fill', got {mode!r} (indices may be "
        "traced, so 'raise' is not available)"
    )


def _ravel(x):
    return x if x.ndim == 1 else lax.reshape(x, (x.size,))


def take(a, indices, axis=None, mode=None, fill_value=None, *, unique_indices=False,
         indices_are_sorted=False):
    """Elements of `a` at `indices` along `axis` (the flattened `a` when axis is None).

    Args:
      indices: an int array (static or traced) of any shape.
      mode: None (negative indices count from the end, out-of-bounds clamp), "clip" (clamp
        into [0, n-1], no negative indexing, as NumPy), "wrap" (modulo n) or "fill"
        (out-of-bounds give `fill_value`).

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
            raise ValueError(f"{name}: with axis=None the indices must be 1-D, got shape "
                             f"{tuple(p.shape)}")
        x, axis = _ravel(x), 0
    if p.ndim != x.ndim:
        raise ValueError(
            f"{name}: indices and arr must have the same number of dimensions, got indices "
            f"of shape {tuple(p.shape)} and {_s(x)}"
        )
    axis = _axis(name, axis, x)
    out = []
    for d, (s, t) in enumerate(zip(x.shape, p.shape, strict=True)):
        if d != axis and s != t and 1 not in (s, t):
            raise ValueError(
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

    Returns:
      The broadcast shape of `arr` and `indices`, with `indices`' size along `axis`.
    """
    x = _arr(arr)
    x, ax, pieces, out = _along_axis("take_along_axis", x, indices, axis)
    p, gmode = _take_mode("take_along_axis", pieces[ax][0], x.shape[ax], mode)
    pieces[ax] = (p, pieces[ax][1])
    n = x.ndim
    g = _Gather(x.shape, pieces, out, (), range(n), range(n), (1,) * n)
    return g.gather(x, gmode, fill_value)


def put_along_axis(arr, indices, values, axis, inplace=False, *, mode=None):
    """A copy of `arr` with `values` written at `indices` along `axis` (functional)."""
    if inplace:
        raise ValueError("put_along_axis: mytorch arrays are immutable; pass inplace=False "
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
            raise ValueError("choose: invalid entry in choice array")
    idx = _as_index(idx)
    if mode == "wrap":
        idx = _modulo(idx, n)
    elif mode == "clip":
        idx = lax.clamp(0, idx, n - 1)
    elif mode != "raise":
        raise ValueError(f"choose: mode must be 'raise', 'clip' or 'wrap', got {mode!r}")
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
            raise IndexError(f"compress: condition has {cond.size} entries but axis {axis} "
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
            raise ValueError(f"ix_: each input must be 1-D, got {_s(v)}")
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
        raise ValueError(f"unravel_index: cannot unravel into the empty shape {shape}")
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
        raise ValueError(f"ravel_multi_index: {len(multi_index)} index arrays for "
                         f"{len(dims)} dims")
    if order not in ("C", "F"):
        raise ValueError(f"ravel_multi_index: order must be 'C' or 'F', got {order!r}")
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
                raise ValueError("ravel_multi_index: invalid entry in coordinates array")
    elif mode == "clip":
        arrays = [lax.clamp(0, a, max(d - 1, 0)) for a, d in zip(arrays, dims, strict=True)]
    elif mode == "wrap":
        arrays = [_modulo(a, d) for a, d in zip(arrays, dims, strict=True)]
    else:
        raise ValueError(f"ravel_multi_index: mode must be 'raise', 'clip' or 'wrap', got "
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
    """A copy of `arr` with the elements where the static `mask` is true replaced by `vals`
    (repeated cyclically), like np.place."""
    if inplace:
        raise ValueError("place: mytorch arrays are immutable; pass inplace=False")
    x = _arr(arr)
    m = _static_mask("place", mask)
    if m.shape != x.shape:
        raise ValueError(f"place: mask of shape {m.shape} does not match {_s(x)}")
    pos = np.nonzero(m.reshape(-1))[0]
    v = _ravel(_arr(vals))
    if pos.size and v.size == 0:
        raise ValueError("place: cannot insert from an empty vals array")
    if pos.size == 0:
        return x
    v = take(v, np.arange(pos.size) % v.shape[0])
    return lax.reshape(_update("place", _ravel(x), pos, v, "set", None, True, True), x.shape)


def put(a, ind, v, mode=None, *, inplace=False):
    """A copy of `a` with the flat positions `ind` set to `v` (repeated cyclically).

    mode: None/"fill"/"drop" (out-of-bounds are dropped), "clip" or "wrap".
    """
    if inplace:
        raise ValueError("put: mytorch arrays are immutable; pass inplace=False")
    x = _arr(a)
    p = _index_array("put", ind)
    p = _ravel(p) if isinstance(p, Array) else p.reshape(-1)
    if mode == "wrap":
        p, mode = _modulo(p, x.size), "clip"
    vals = _ravel(_arr(v))
    if vals.shape[0] != p.shape[0] and p.shape[0]:
        if vals.size == 0:
            raise ValueError("put: cannot put an empty v")
        vals = take(vals, np.arange(p.shape[0]) % vals.shape[0])
    flat = _update("put", _ravel(x), (p,), vals, "set", mode, False, False)
    return lax.reshape(flat, x.shape)
