"""NumPy 2's (the array API's) named forms of `unique`: `unique_values`, `unique_counts`,
`unique_inverse` and `unique_all`, over `mnp.unique` with `equal_nan=False` (every NaN is
its own value, as NumPy's). Values are sorted (NumPy leaves their order unspecified);
under a transformation pass a static `size=` (and optionally `fill_value=`), as for
`unique`."""

from typing import NamedTuple

from mytorch.core.array import Array
from mytorch.numpy.sorting import unique

__all__ = ["unique_values", "unique_counts", "unique_inverse", "unique_all"]


class UniqueAllResult(NamedTuple):
    """`unique_all`'s result: values, first indices, inverse indices (x's shape), counts."""

    values: Array
    indices: Array
    inverse_indices: Array
    counts: Array


class UniqueCountsResult(NamedTuple):
    """`unique_counts`'s result: the unique values and how often each occurs."""

    values: Array
    counts: Array


class UniqueInverseResult(NamedTuple):
    """`unique_inverse`'s result: the unique values and, for each element of x (x's
    shape), the index of its value."""

    values: Array
    inverse_indices: Array


def unique_values(x, /, *, size=None, fill_value=None):
    """The sorted unique values of the flattened `x` (1-D).

    Args:
      x: an array-like.
      size: the static number of values (needed under transformations): extras are
        dropped, missing ones take `fill_value` (default: the smallest value).

    >>> mnp.unique_values(mnp.array([3, 1, 3, 2])).tolist()
    [1, 2, 3]
    """
    return unique(x, equal_nan=False, size=size, fill_value=fill_value)


def unique_counts(x, /, *, size=None, fill_value=None):
    """`UniqueCountsResult(values, counts)` of the flattened `x`; padded entries count 0."""
    values, counts = unique(x, return_counts=True, equal_nan=False, size=size,
                            fill_value=fill_value)
    return UniqueCountsResult(values, counts)


def unique_inverse(x, /, *, size=None, fill_value=None):
    """`UniqueInverseResult(values, inverse_indices)`: `values[inverse_indices]` is `x`
    (inverse_indices has x's shape)."""
    values, inverse = unique(x, return_inverse=True, equal_nan=False, size=size,
                             fill_value=fill_value)
    return UniqueInverseResult(values, inverse)


def unique_all(x, /, *, size=None, fill_value=None):
    """`UniqueAllResult(values, indices, inverse_indices, counts)`: the sorted unique
    values, the index of each one's first occurrence in the flattened `x`, the inverse
    indices (x's shape) and the counts; padded entries have index 0 and count 0."""
    values, indices, inverse, counts = unique(
        x, return_index=True, return_inverse=True, return_counts=True, equal_nan=False,
        size=size, fill_value=fill_value)
    return UniqueAllResult(values, indices, inverse, counts)
