"""NumPy indexing (`x[idx]`), functional updates (`x.at[idx].set(v)`) and the take family.

An index is first put in a canonical form (Ellipsis expanded, static boolean masks turned
into integer arrays, bounds of Python ints checked), then lowered:

- basic indexing (ints, slices, None, Ellipsis) to `lax.slice` / `lax.rev` / `lax.squeeze` /
  `lax.expand_dims`, and traced scalar ints to `lax.dynamic_slice`;
- anything with integer arrays to a single `lax.gather` (and updates to one `lax.scatter*`),
  with NumPy's rules: index arrays broadcast together, and their dims replace the indexed
  axes in place when the advanced indices are adjacent, else go to the front.

As in JAX: out-of-bounds integer indices (Python ints, NumPy or mytorch arrays, static or
traced alike) clamp on reads and are dropped on updates, unless `mode=` says otherwise;
negative ones count from the end (once). Only an integer index into an empty axis raises
IndexError. Slices keep NumPy's semantics (their bounds are clipped to the axis).

Parsing and lowering live in _index_lowering.py and the take family in take_family.py
(re-exported here); `getitem` and the `x.at[idx]` helpers are defined here.
"""

import numpy as np

from mytorch import lax
from mytorch.core import dtypes
from mytorch.core.array import from_numpy
from mytorch.core.source_info import user_error
from mytorch.numpy._index_lowering import _arr, _basic_get, _indexer, _prepare, _s, _update
from mytorch.numpy._promote import asarray_any
from mytorch.numpy.take_family import (
    choose,
    compress,
    extract,
    ix_,
    place,
    put,
    put_along_axis,
    ravel_multi_index,
    take,
    take_along_axis,
    unravel_index,
)

__all__ = [
    "getitem", "IndexUpdateHelper", "IndexUpdateRef", "take", "take_along_axis",
    "put_along_axis", "choose", "compress", "extract", "ix_", "unravel_index",
    "ravel_multi_index", "place", "put",
]


# ---- x[idx] -------------------------------------------------------------------------------
def getitem(arr, idx, *, mode=None, fill_value=None, indices_are_sorted=False,
            unique_indices=False):
    """`arr[idx]` with NumPy's indexing rules (what `Array.__getitem__` calls).

    Args:
      arr: an array.
      idx: ints, slices, None, Ellipsis, integer arrays (mytorch, NumPy or lists; traced
        ones too) and static boolean masks, alone or in a tuple.
      mode: for out-of-bounds integer indices (static or traced alike): None/"clip"/
        "promise_in_bounds" clamp, "fill"/"drop" return `fill_value` (NaN for inexact
        dtypes, the minimum of signed and the maximum of unsigned ints, True for bools, by
        default). Negative indices first count from the end, once. Slices are clipped to
        the axis as in NumPy.

    Returns:
      The selected elements, in NumPy's result shape.

    Raises:
      IndexError: an integer index into an empty axis, too many indices, mismatched masks.
      NonConcreteBooleanIndexError (an IndexError): a traced boolean mask.

    >>> getitem(mnp.arange(6).reshape(2, 3), (slice(None), [2, 0]))  # doctest: +SKIP
    Array([[2, 0], [5, 3]], dtype=int32)
    """
    mode = lax.GatherScatterMode.from_any(mode, "gather", "clip")
    x, entries, _ = _prepare(arr, idx)
    kinds = {e[0] for e in entries}
    # scalar indices that may be out of bounds (traced, or static ones found out of bounds)
    # honour mode="fill" as a gather; otherwise they clamp, and a slice or dynamic_slice is
    # enough
    maybe_out = kinds & {"dyn", "cint"}
    if "arr" not in kinds and (not maybe_out or mode != "fill"):
        return _basic_get(x, entries)
    return _indexer(x.shape, entries).gather(x, mode, fill_value, indices_are_sorted,
                                             unique_indices)


# ---- x.at[idx] ----------------------------------------------------------------------------
def _ones(x):
    return lax.broadcast_in_dim(from_numpy(np.ones((), x.dtype), weak_type=x.weak_type),
                                x.shape, ())


class IndexUpdateRef:
    """`x.at[idx]`: functional updates of the elements `x[idx]` (each returns a new array).

    Update values broadcast to the shape of `x[idx]` and are cast to x's dtype. Repeated
    indices accumulate for add/multiply/min/max; `set` keeps one of the values. Out-of-bounds
    integer indices (static or traced) are dropped (mode=None/"drop"/"fill"/
    "promise_in_bounds") or clamped (mode="clip"); `get` clamps them unless mode="fill".
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
            raise user_error(TypeError, f"at[].subtract: not defined for bool arrays ({_s(x)})")
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
        if not dtypes.is_inexact(x.dtype):
            raise user_error(TypeError, 
                f"at[].divide needs a floating-point array, got {_s(x)}; convert it first "
                "with .astype(float)"
            )
        x, denom = self._scaled("divide", values, mode)
        return lax.div(x, denom)

    def power(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
        """`x[idx] **= values` (repeated indices multiply their exponents)."""
        x, expo = self._scaled("power", values, mode)
        if dtypes.is_inexact(x.dtype):
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
