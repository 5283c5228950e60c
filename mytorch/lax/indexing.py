"""Indexing primitives: dynamic slices and XLA's gather and scatter (`jax.lax` names).

`dynamic_slice` / `dynamic_update_slice` take their start indices as separate 0-d integer
operands. Like JAX, the binders wrap negative starts once (`i + dim`), and the primitives
clamp every start so that the whole slice stays in bounds (XLA's semantics):

    dynamic_slice(f32[10], (8,), (4,)) -> f32[4] holding x[6:10]

`gather` and `scatter` follow XLA, with the index vector always on the last axis of the
indices. Given `indices` of shape `batch + (k,)`:

* gather: each batch position `G` reads a slice of `slice_sizes` from `operand`, starting
  at `indices[G]` (entry j for operand dim `start_index_map[j]`; 0 for unmapped dims). The
  slice dims in `collapsed_slice_dims` (size 1) are dropped; the others become the output
  dims `offset_dims` (in operand order); the batch dims fill the remaining output dims in
  order. Operand dim `operand_batching_dims[i]` is indexed by the batch position along
  indices dim `start_indices_batching_dims[i]` (an elementwise batch, as vmap makes).
* scatter: the mirror image: `updates` has the batch dims of the indices and the window
  dims `update_window_dims`; `inserted_window_dims` are operand dims of window size 1 that
  the updates lack; each update window is combined into the operand at its start.

Examples (what mytorch.numpy expresses with them):

    x[idx] for x f32[5,3], idx i32[4]        indices idx[:, None]: i32[4,1]
        GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
                               start_index_map=(0,)), slice_sizes=(1, 3) -> f32[4,3]
    take_along_axis(x f32[5,3], idx i32[5,2], axis=1)   indices i32[5,2,1]
        GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(1,),
                               start_index_map=(1,), operand_batching_dims=(0,),
                               start_indices_batching_dims=(0,)), slice_sizes=(1, 1)
        -> f32[5,2]
    x.at[idx].add(v) for v f32[4,3]: scatter_add with
        ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                scatter_dims_to_operand_dims=(0,))

Out-of-bounds starts (`mode`): "clip" clamps them so that the whole window is in bounds
(gather's default); gather "fill" returns `fill_value` for every window that is not wholly
in bounds; scatter "drop" (scatter's default) skips every such update window;
"promise_in_bounds" promises in-bounds starts (the kernels then clamp gathers and drop
scatters). NumPy kernels live in mytorch/backends/numpy/indexing.py.
"""

import operator
from typing import NamedTuple

import numpy as np

from mytorch.core import dtypes
from mytorch.core.array import Array, ArrayImpl, from_numpy
from mytorch.core.aval import ShapedArray
from mytorch.core.primitive import Primitive
from mytorch.core.trace import aval_of
from mytorch.lax._utils import asarray, coerce_operands, short
from mytorch.lax.elementwise import add, convert_element_type, lt, select
from mytorch.lax.structural import (
    broadcasted_iota, concatenate, int_tuple, normalize_axis, reshape, slice_in_dim,
)

__all__ = [
    "dynamic_slice", "dynamic_update_slice", "dynamic_slice_in_dim", "dynamic_index_in_dim",
    "dynamic_update_slice_in_dim", "dynamic_update_index_in_dim", "gather", "scatter",
    "scatter_add", "scatter_mul", "scatter_min", "scatter_max", "GatherDimensionNumbers",
    "ScatterDimensionNumbers", "GatherScatterMode",
    "dynamic_slice_p", "dynamic_update_slice_p", "gather_p", "scatter_p", "scatter_add_p",
    "scatter_mul_p", "scatter_min_p", "scatter_max_p",
]


# ---- dynamic_slice, dynamic_update_slice -------------------------------------------------
def _check_starts(op, x, starts):
    if len(starts) != x.ndim:
        raise TypeError(f"{op} needs one start index per dim of {short(x)}, got {len(starts)}")
    for s in starts:
        if s.ndim != 0 or not dtypes.is_int(s.dtype):
            raise TypeError(f"{op} needs 0-d integer start indices, got {short(s)}")


def _start_indices(op, x, start_indices):
    """0-d integer arrays, one per dim of `x`, with negative starts wrapped once (JAX's
    convention; the primitives then clamp)."""
    if isinstance(start_indices, Array) or isinstance(start_indices, np.ndarray):
        arr = asarray(start_indices)
        if arr.ndim != 1:
            raise TypeError(f"{op}: start_indices must be a sequence of scalars or a 1-d "
                            f"array, got {short(arr.aval)}")
        start_indices = [reshape(slice_in_dim(arr, k, k + 1), ()) for k in range(arr.shape[0])]
    starts = list(start_indices)
    if len(starts) != x.ndim:
        raise TypeError(f"{op} needs one start index per dim of {short(x.aval)}, got "
                        f"{len(starts)}")
    return [_wrap_start(op, i, n) for i, n in zip(starts, x.shape, strict=True)]


def _wrap_start(op, i, n):
    if isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_)):
        i = operator.index(i)
        return asarray(i + n if i < 0 else i)
    i = asarray(i)
    if i.ndim != 0 or not dtypes.is_int(i.dtype):
        raise TypeError(f"{op} needs 0-d integer start indices, got {short(i.aval)}")
    if dtypes.is_unsigned_int(i.dtype):
        return i
    wide = n > np.iinfo(i.dtype).max  # then `i + n` must not wrap in the index's own type
    if isinstance(i, ArrayImpl):  # concrete: wrap now rather than bind three more ops
        value = int(i)
        if value >= 0:
            return i
        return from_numpy(np.asarray(value + n, dtypes.default_int() if wide else i.dtype))
    if wide:
        i = convert_element_type(i, dtypes.default_int())
    return select(lt(i, 0), add(i, n), i)


dynamic_slice_p = Primitive("dynamic_slice", kind="indexing")


@dynamic_slice_p.def_abstract_eval
def _dynamic_slice_abstract_eval(x, *starts, slice_sizes):
    _check_starts("dynamic_slice", x, starts)
    if not isinstance(slice_sizes, tuple) or len(slice_sizes) != x.ndim or any(
            type(s) is not int for s in slice_sizes):
        raise ValueError(f"dynamic_slice: slice_sizes must be a tuple of one int per dim of "
                         f"{short(x)}, got {slice_sizes!r}")
    if any(not 0 <= s <= n for s, n in zip(slice_sizes, x.shape, strict=True)):
        raise TypeError(f"dynamic_slice: slice_sizes {slice_sizes} must lie in [0, dim] for "
                        f"every dim of {short(x)}")
    return ShapedArray(slice_sizes, x.dtype, x.weak_type)


def dynamic_slice(operand, start_indices, slice_sizes):
    """The slice of `slice_sizes` starting at `start_indices` (which may be traced).

    Args:
      operand: an array of rank r.
      start_indices: r scalar integers (ints or 0-d integer arrays), or a 1-d integer array.
        Negative starts count from the end; starts are then clamped to [0, dim - size], so
        the slice always lies within `operand`.
      slice_sizes: r static ints, 0 <= size <= dim.

    Returns:
      An array of shape `slice_sizes`.

    >>> import numpy as np
    >>> from mytorch import lax
    >>> lax.dynamic_slice(lax.iota(np.int32, 10), (8,), (4,))   # the start is clamped to 6
    Array([6, 7, 8, 9], dtype=int32)
    """
    x = asarray(operand)
    sizes = int_tuple(slice_sizes, "slice_sizes", "dynamic_slice")
    starts = _start_indices("dynamic_slice", x, start_indices)
    return dynamic_slice_p.bind(x, *starts, slice_sizes=sizes)


dynamic_update_slice_p = Primitive("dynamic_update_slice", kind="indexing")


@dynamic_update_slice_p.def_abstract_eval
def _dynamic_update_slice_abstract_eval(x, update, *starts):
    op = "dynamic_update_slice"
    if update.dtype != x.dtype:
        raise TypeError(f"{op} needs an update of the operand's dtype: operand {short(x)}, "
                        f"update {short(update)}")
    _check_starts(op, x, starts)
    if update.ndim != x.ndim or any(u > n for u, n in zip(update.shape, x.shape, strict=True)):
        raise TypeError(f"{op} needs an update of the operand's rank that fits inside it: "
                        f"operand {short(x)}, update {short(update)}")
    return ShapedArray(x.shape, x.dtype, x.weak_type and update.weak_type)


def dynamic_update_slice(operand, update, start_indices):
    """`operand` with the block at `start_indices` replaced by `update`.

    Args:
      operand: an array of rank r.
      update: an array of the same dtype and rank, no larger than `operand` in any dim.
      start_indices: r scalar integers, as for `dynamic_slice` (wrapped, then clamped so
        that the update lies within `operand`).

    Returns:
      An array of `operand`'s shape and dtype.
    """
    x, upd = coerce_operands("dynamic_update_slice", operand, update)
    starts = _start_indices("dynamic_update_slice", x, start_indices)
    return dynamic_update_slice_p.bind(x, upd, *starts)


def dynamic_slice_in_dim(operand, start_index, slice_size, axis=0):
    """`dynamic_slice` along one `axis` (negative counts from the end): the full extent of
    every other axis."""
    x = asarray(operand)
    axis = normalize_axis(axis, x.ndim, "dynamic_slice_in_dim")
    starts = [0] * x.ndim
    starts[axis] = start_index
    sizes = list(x.shape)
    sizes[axis] = operator.index(slice_size)
    return dynamic_slice(x, starts, sizes)


def dynamic_index_in_dim(operand, index, axis=0, keepdims=True):
    """Element `index` (may be traced; clamped) along `axis`, keeping the axis with size 1
    unless `keepdims` is False."""
    x = asarray(operand)
    axis = normalize_axis(axis, x.ndim, "dynamic_index_in_dim")
    out = dynamic_slice_in_dim(x, index, 1, axis)
    if keepdims:
        return out
    return reshape(out, x.shape[:axis] + x.shape[axis + 1:])


def dynamic_update_slice_in_dim(operand, update, start_index, axis):
    """`dynamic_update_slice` at `start_index` along `axis`, 0 along the other axes."""
    x = asarray(operand)
    axis = normalize_axis(axis, x.ndim, "dynamic_update_slice_in_dim")
    starts = [0] * x.ndim
    starts[axis] = start_index
    return dynamic_update_slice(x, update, starts)


def dynamic_update_index_in_dim(operand, update, index, axis):
    """Replace element `index` along `axis` by `update` (which may lack that axis)."""
    x = asarray(operand)
    axis = normalize_axis(axis, x.ndim, "dynamic_update_index_in_dim")
    upd = asarray(update)
    if upd.ndim == x.ndim - 1:
        upd = reshape(upd, upd.shape[:axis] + (1,) + upd.shape[axis:])
    return dynamic_update_slice_in_dim(x, upd, index, axis)


# ---- dimension numbers and modes ---------------------------------------------------------
class GatherDimensionNumbers(NamedTuple):
    """How the dims of `operand`, `start_indices` and the output of `gather` relate.

    Attributes (tuples of ints):
      offset_dims: output dims that hold the slice dims not collapsed (sorted).
      collapsed_slice_dims: operand dims of slice size 1 dropped from the output (sorted).
      start_index_map: the operand dim that each entry of an index vector starts.
      operand_batching_dims: operand dims indexed by a batch position (sorted).
      start_indices_batching_dims: the indices dim giving each of those batch positions.
    """

    offset_dims: tuple
    collapsed_slice_dims: tuple
    start_index_map: tuple
    operand_batching_dims: tuple = ()
    start_indices_batching_dims: tuple = ()


class ScatterDimensionNumbers(NamedTuple):
    """How the dims of `operand`, `scatter_indices` and `updates` of a scatter relate.

    Attributes (tuples of ints):
      update_window_dims: the dims of `updates` that are window dims (sorted).
      inserted_window_dims: operand dims of window size 1 absent from `updates` (sorted).
      scatter_dims_to_operand_dims: the operand dim that each entry of an index vector
        starts.
      operand_batching_dims: operand dims indexed by a batch position (sorted).
      scatter_indices_batching_dims: the indices dim giving each of those batch positions.
    """

    update_window_dims: tuple
    inserted_window_dims: tuple
    scatter_dims_to_operand_dims: tuple
    operand_batching_dims: tuple = ()
    scatter_indices_batching_dims: tuple = ()


class GatherScatterMode:
    """Out-of-bounds handling of gather and scatter; the primitives' `mode` parameter is
    one of these strings (gathers say "fill", scatters "drop" for FILL_OR_DROP)."""

    CLIP = "clip"
    FILL_OR_DROP = "fill"
    PROMISE_IN_BOUNDS = "promise_in_bounds"

    @staticmethod
    def from_any(mode, op="gather", default="fill"):
        """The canonical mode string of `op` ("gather" or a scatter) for `mode` (a string, a
        constant of this class, or None for `default`)."""
        mode = default if mode is None else getattr(mode, "value", mode)
        if mode in ("fill", "drop", "fill_or_drop", "FILL_OR_DROP"):
            return "fill" if op == "gather" else "drop"
        if mode in ("clip", "CLIP"):
            return "clip"
        if mode in ("promise_in_bounds", "PROMISE_IN_BOUNDS"):
            return "promise_in_bounds"
        raise ValueError(f"{op}: unknown mode {mode!r}; use 'clip', "
                         f"'{'fill' if op == 'gather' else 'drop'}' or 'promise_in_bounds'")


def _dnums(cls, dimension_numbers, op):
    if isinstance(dimension_numbers, dict):
        dimension_numbers = cls(**dimension_numbers)
    try:
        fields = tuple(dimension_numbers)
        dn = cls(*fields)
    except TypeError:
        raise TypeError(f"{op}: dimension_numbers must be a {cls.__name__}, got "
                        f"{dimension_numbers!r}") from None
    return cls(*(int_tuple(f, name, op) for f, name in zip(dn, cls._fields, strict=True)))


# ---- shared validation --------------------------------------------------------------------
def _sorted_unique_in(op, name, dims, bound, what):
    if any(type(d) is not int for d in dims):
        raise ValueError(f"{op}: {name} must hold Python ints, got {dims}")
    if list(dims) != sorted(set(dims)):
        raise ValueError(f"{op}: {name} {dims} must be sorted and distinct")
    _in_range(op, name, dims, bound, what)


def _unique_in(op, name, dims, bound, what):
    if any(type(d) is not int for d in dims) or len(set(dims)) != len(dims):
        raise ValueError(f"{op}: {name} {dims} must be distinct ints")
    _in_range(op, name, dims, bound, what)


def _in_range(op, name, dims, bound, what):
    if any(not 0 <= d < bound for d in dims):
        raise ValueError(f"{op}: {name} {dims} must lie in [0, {bound}) ({what})")


def _check_index_dims(op, operand, indices, dn, names):
    """Checks shared by gather and scatter. `names` are the fields' names in `dn`'s
    order: (window dims, collapsed/inserted, index map, operand batching, index batching)."""
    _, collapsed, index_map, obatch, ibatch = dn
    if not dtypes.is_int(indices.dtype):
        raise TypeError(f"{op} needs integer indices, got {short(indices)}")
    if indices.ndim == 0:
        raise TypeError(f"{op} needs indices whose last dim is the index vector, got the 0-d "
                        f"{short(indices)}; add a trailing dim")
    n = operand.ndim
    _sorted_unique_in(op, names[1], collapsed, n, f"the dims of {short(operand)}")
    _sorted_unique_in(op, names[3], obatch, n, f"the dims of {short(operand)}")
    if set(collapsed) & set(obatch):
        raise ValueError(f"{op}: {names[1]} {collapsed} and {names[3]} {obatch} overlap")
    _unique_in(op, names[2], index_map, n, f"the dims of {short(operand)}")
    if set(index_map) & set(obatch):
        raise ValueError(f"{op}: {names[2]} {index_map} and {names[3]} {obatch} overlap")
    if len(index_map) != indices.shape[-1]:
        raise TypeError(f"{op}: {names[2]} {index_map} has {len(index_map)} entries, but "
                        f"the index vectors of {short(indices)} (its last dim) have "
                        f"{indices.shape[-1]}")
    _unique_in(op, names[4], ibatch, indices.ndim - 1,
               f"the dims of {short(indices)} before the index vector dim")
    if len(ibatch) != len(obatch):
        raise ValueError(f"{op}: {names[3]} {obatch} and {names[4]} {ibatch} must have the "
                         "same length")
    for o, i in zip(obatch, ibatch, strict=True):
        if operand.shape[o] != indices.shape[i]:
            raise TypeError(f"{op}: operand batching dim {o} of {short(operand)} and indices "
                            f"batching dim {i} of {short(indices)} differ in size")


# ---- gather -------------------------------------------------------------------------------
gather_p = Primitive("gather", kind="indexing")
_GATHER_NAMES = GatherDimensionNumbers._fields


@gather_p.def_abstract_eval
def _gather_abstract_eval(operand, indices, *, dimension_numbers, slice_sizes, mode,
                          fill_value, indices_are_sorted, unique_indices):
    op, dn = "gather", dimension_numbers
    if not isinstance(dn, GatherDimensionNumbers):
        raise TypeError(f"gather: dimension_numbers must be a GatherDimensionNumbers, got "
                        f"{dn!r}")
    _check_index_dims(op, operand, indices, dn, _GATHER_NAMES)
    if mode not in ("clip", "fill", "promise_in_bounds"):
        raise ValueError(f"gather: mode must be 'clip', 'fill' or 'promise_in_bounds', got "
                         f"{mode!r}")
    if not isinstance(slice_sizes, tuple) or len(slice_sizes) != operand.ndim or any(
            type(s) is not int for s in slice_sizes):
        raise ValueError(f"gather: slice_sizes must be a tuple of one int per dim of "
                         f"{short(operand)}, got {slice_sizes!r}")
    for d, (s, n) in enumerate(zip(slice_sizes, operand.shape, strict=True)):
        if not 0 <= s <= n:
            raise TypeError(f"gather: slice_sizes {slice_sizes} must lie in [0, dim] for every "
                            f"dim of {short(operand)} (dim {d})")
    for d in dn.collapsed_slice_dims:
        if slice_sizes[d] != 1:
            raise TypeError(f"gather: collapsed_slice_dims {dn.collapsed_slice_dims} must have "
                            f"slice size 1, but slice_sizes[{d}] is {slice_sizes[d]}")
    for d in dn.operand_batching_dims:
        if slice_sizes[d] > 1:
            raise TypeError(f"gather: operand_batching_dims {dn.operand_batching_dims} must "
                            f"have slice size 0 or 1, but slice_sizes[{d}] is {slice_sizes[d]}")
    dropped = set(dn.collapsed_slice_dims) | set(dn.operand_batching_dims)
    window = [s for d, s in enumerate(slice_sizes) if d not in dropped]
    out_rank = len(window) + indices.ndim - 1
    if len(dn.offset_dims) != len(window):
        raise TypeError(f"gather: offset_dims {dn.offset_dims} must name one output dim for "
                        f"each of the {len(window)} operand dims that are neither collapsed nor "
                        "batching")
    _sorted_unique_in(op, "offset_dims", dn.offset_dims, out_rank, "the output dims")
    batch, window = iter(indices.shape[:-1]), iter(window)
    shape = tuple(next(window) if d in dn.offset_dims else next(batch) for d in range(out_rank))
    return ShapedArray(shape, operand.dtype, operand.weak_type)


def _default_fill(dtype):
    if dtypes.is_inexact(dtype):
        return float("nan")
    if dtypes.is_signed_int(dtype):
        return int(np.iinfo(dtype).min)
    if dtypes.is_unsigned_int(dtype):
        return int(np.iinfo(dtype).max)
    return True


def gather(operand, start_indices, dimension_numbers, slice_sizes, *, mode=None,
           fill_value=None, indices_are_sorted=False, unique_indices=False):
    """XLA's Gather: slices of `operand` at the positions in `start_indices`.

    Args:
      operand: an array of rank r.
      start_indices: an integer array `batch + (k,)`: one index vector per batch position.
      dimension_numbers: a `GatherDimensionNumbers` (see the module docstring).
      slice_sizes: r static ints: the slice read at each position.
      mode: "clip" (default: starts are clamped so the slice is in bounds), "fill" (a slice
        not wholly in bounds reads `fill_value`) or "promise_in_bounds".
      fill_value: for "fill": default NaN for floats, the minimum of signed and the maximum
        of unsigned integers, True for bools.
      indices_are_sorted, unique_indices: hints (unused by the NumPy kernel).

    Returns:
      An array of `operand`'s dtype whose `offset_dims` hold the uncollapsed slice dims and
      whose other dims are the batch dims of `start_indices`, in order.
    """
    x, idx = asarray(operand), asarray(start_indices)
    dn = _dnums(GatherDimensionNumbers, dimension_numbers, "gather")
    mode = GatherScatterMode.from_any(mode, "gather", "clip")
    if mode == "fill":
        fill_value = _default_fill(x.dtype) if fill_value is None else fill_value
        fill_value = np.asarray(fill_value).item()
    else:
        fill_value = None
    return gather_p.bind(x, idx, dimension_numbers=dn,
                         slice_sizes=int_tuple(slice_sizes, "slice_sizes", "gather"),
                         mode=mode, fill_value=fill_value,
                         indices_are_sorted=bool(indices_are_sorted),
                         unique_indices=bool(unique_indices))


# ---- scatter ------------------------------------------------------------------------------
_SCATTER_NAMES = ScatterDimensionNumbers._fields


def _scatter_abstract_eval(op):
    def abstract_eval(operand, indices, updates, *, dimension_numbers, mode,
                      indices_are_sorted, unique_indices):
        dn = dimension_numbers
        if not isinstance(dn, ScatterDimensionNumbers):
            raise TypeError(f"{op}: dimension_numbers must be a ScatterDimensionNumbers, got "
                            f"{dn!r}")
        if updates.dtype != operand.dtype:
            raise TypeError(f"{op} needs updates of the operand's dtype: operand "
                            f"{short(operand)}, updates {short(updates)}")
        _check_index_dims(op, operand, indices, dn, _SCATTER_NAMES)
        if mode not in ("clip", "drop", "promise_in_bounds"):
            raise ValueError(f"{op}: mode must be 'clip', 'drop' or 'promise_in_bounds', got "
                             f"{mode!r}")
        _sorted_unique_in(op, "update_window_dims", dn.update_window_dims, updates.ndim,
                          f"the dims of {short(updates)}")
        dropped = set(dn.inserted_window_dims) | set(dn.operand_batching_dims)
        window_dims = [d for d in range(operand.ndim) if d not in dropped]
        if len(window_dims) != len(dn.update_window_dims):
            raise TypeError(f"{op}: update_window_dims {dn.update_window_dims} must name one "
                            f"dim of {short(updates)} for each of the {len(window_dims)} dims of "
                            f"{short(operand)} that are neither inserted nor batching")
        if updates.ndim != len(window_dims) + indices.ndim - 1:
            raise TypeError(f"{op}: updates {short(updates)} must have rank "
                            f"{len(window_dims) + indices.ndim - 1}: the window dims plus the "
                            f"batch dims of the indices {short(indices)}")
        for u, d in zip(dn.update_window_dims, window_dims, strict=True):
            if updates.shape[u] > operand.shape[d]:
                raise TypeError(f"{op}: update window dim {u} of {short(updates)} is larger "
                                f"than operand dim {d} of {short(operand)}")
        scatter_shape = tuple(s for d, s in enumerate(updates.shape)
                              if d not in dn.update_window_dims)
        if scatter_shape != indices.shape[:-1]:
            raise TypeError(f"{op}: the non-window dims of updates {short(updates)} "
                            f"{scatter_shape} must equal the batch dims of the indices "
                            f"{short(indices)}")
        return ShapedArray(operand.shape, operand.dtype, operand.weak_type)

    return abstract_eval


def _scatter(name, doc):
    prim = Primitive(name, kind="indexing")
    prim.def_abstract_eval(_scatter_abstract_eval(name))

    def fn(operand, scatter_indices, updates, dimension_numbers, *, indices_are_sorted=False,
           unique_indices=False, mode=None):
        x, upd = coerce_operands(name, operand, updates)
        return prim.bind(x, asarray(scatter_indices), upd,
                         dimension_numbers=_dnums(ScatterDimensionNumbers, dimension_numbers,
                                                  name),
                         mode=GatherScatterMode.from_any(mode, name, "drop"),
                         indices_are_sorted=bool(indices_are_sorted),
                         unique_indices=bool(unique_indices))

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"""{doc}

    Args:
      operand: an array of rank r.
      scatter_indices: an integer array `batch + (k,)`: one index vector per batch position.
      updates: an array of `operand`'s dtype: the batch dims of the indices plus the window
        dims `update_window_dims` (no larger than the matching operand dims).
      dimension_numbers: a `ScatterDimensionNumbers` (see the module docstring).
      mode: "drop" (default: an update window not wholly in bounds is skipped), "clip"
        (starts are clamped so the window is in bounds) or "promise_in_bounds".
      indices_are_sorted, unique_indices: hints (unused by the NumPy kernel).

    Returns:
      An array of `operand`'s shape, dtype and weak type.
    """
    return prim, fn


scatter_p, scatter = _scatter(
    "scatter", "XLA's Scatter that replaces: each update window overwrites the operand; where "
    "windows overlap, which one wins is unspecified.")
scatter_add_p, scatter_add = _scatter(
    "scatter_add", "XLA's Scatter with addition: updates at repeated positions all add up.")
scatter_mul_p, scatter_mul = _scatter(
    "scatter_mul", "XLA's Scatter with multiplication: updates at repeated positions all "
    "multiply in.")
scatter_min_p, scatter_min = _scatter(
    "scatter_min", "XLA's Scatter with minimum: each position keeps the least of its value "
    "and its updates.")
scatter_max_p, scatter_max = _scatter(
    "scatter_max", "XLA's Scatter with maximum: each position keeps the greatest of its value "
    "and its updates.")


# ---- helpers of the rules (not exported) -----------------------------------------------
def take_along_axis(t, idx, axis):
    """`t[..., idx, ...]`: t f[*s] and idx int[*s'] where s' equals s except along
    `axis`; out[i] = t[i with i[axis] replaced by idx[i]] (shape s')."""
    shape = aval_of(idx).shape
    rank = len(shape)
    # one full index vector per output element: iotas along the other axes, idx along axis
    column = (*shape, 1)
    parts = [reshape(idx if d == axis else broadcasted_iota(aval_of(idx).dtype, shape, d),
                        column) for d in range(rank)]
    dnums = GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=tuple(range(rank)),
                                   start_index_map=tuple(range(rank)))
    return gather(t, concatenate(parts, rank), dnums, (1,) * rank, mode="clip")
