"""Arrays and index pairs built from an index grid: `fromfunction` and `mask_indices`."""

from mytorch.numpy.creation import indices, ones
from mytorch.numpy.sorting import nonzero

__all__ = ["fromfunction", "mask_indices"]


def fromfunction(function, shape, *, dtype=float, **kwargs):
    """`function(*mnp.indices(shape, dtype), **kwargs)`, as NumPy: the function gets one
    coordinate array per axis (each of `shape`) and is traced like any mnp code.

    Args:
      function: called with `len(shape)` arrays and `kwargs`.
      shape: a static tuple of ints.
      dtype: the coordinates' dtype (default: the default float).

    Returns:
      Whatever `function` returns (an array of `shape` for elementwise functions).

    >>> mnp.fromfunction(lambda i, j: i + 2 * j, (2, 2), dtype=int).tolist()
    [[0, 2], [1, 3]]
    """
    return function(*indices(shape, dtype=dtype), **kwargs)


def mask_indices(n, mask_func, k=0, *, size=None):
    """The (row, column) indices where `mask_func(ones((n, n)), k)` is nonzero, as NumPy:
    `mask_indices(n, mnp.triu, 1)` are the indices above the diagonal.

    Args:
      n: the static size of the square mask.
      mask_func: a function of an (n, n) array and `k`, such as `mnp.triu`, `mnp.tril`.
      k: passed on to `mask_func`.
      size: the static number of indices (needed under transformations when `mask_func`'s
        result is traced), as for `nonzero`.

    Returns:
      Two 1-D default-int arrays, in row-major order.
    """
    return nonzero(mask_func(ones((n, n), int), k), size=size)
