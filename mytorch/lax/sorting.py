"""Sorting: a multi-operand stable sort along one dimension, and top_k over the last axis.

    sort((keys f32[3,5], values i32[3,5]), dimension=1) -> (f32[3,5], i32[3,5])
    top_k(f32[3,5], 2) -> (f32[3,2], i32[3,2])

Floats sort in NumPy's order: NaNs last, -0.0 equal to 0.0 (so a stable sort keeps their
order). The NumPy kernels live in mytorch/backends/numpy/sorting.py.
"""

import operator

import numpy as np

from mytorch.core.aval import ShapedArray, describe
from mytorch.core.primitive import Primitive
from mytorch.lax._utils import asarray, short

__all__ = ["sort", "sort_key_val", "top_k", "sort_p", "top_k_p"]


def _is_int(a):
    return isinstance(a, (int, np.integer)) and not isinstance(a, (bool, np.bool_))


# ---- sort --------------------------------------------------------------------------------
sort_p = Primitive("sort", multiple_results=True, kind="sort")


@sort_p.def_abstract_eval
def _sort_abstract_eval(*operands, dimension, is_stable, num_keys):
    if not operands:
        raise ValueError("sort needs at least one operand")
    shape = operands[0].shape
    if any(o.shape != shape for o in operands[1:]):
        raise TypeError(f"sort needs operands of one shape, got {describe(operands)}; "
                        "broadcast them first with lax.broadcast_in_dim")
    if type(num_keys) is not int or not 1 <= num_keys <= len(operands):
        raise ValueError(f"sort: num_keys must be an int in [1, {len(operands)}] (the number "
                         f"of operands), got {num_keys!r}")
    if not isinstance(is_stable, bool):
        raise ValueError(f"sort: is_stable must be a bool, got {is_stable!r}")
    first = operands[0]
    if not shape:
        raise ValueError(f"sort needs operands of rank >= 1, got the 0-d {short(first)}")
    n = len(shape)
    if type(dimension) is not int or not 0 <= dimension < n:
        raise ValueError(f"sort: dimension {dimension!r} is out of bounds for {short(first)}: "
                         f"it must be an int in [{-n}, {n})")
    return list(operands)


def sort(operand, dimension=-1, is_stable=True, num_keys=1):
    """Stable sort of one array, or of several arrays by their first `num_keys` arrays.

    With several operands, the first `num_keys` are the keys, compared lexicographically
    (the first key first); the remaining operands are permuted along with them. NaNs sort
    to the end, and -0.0 and 0.0 compare equal (NumPy's order). The sort is always stable.

    Args:
      operand: an array of rank >= 1, or a sequence of arrays of one shape (any dtypes).
      dimension: the dimension to sort along (negative counts from the end).
      is_stable: accepted for JAX compatibility; the sort is stable either way.
      num_keys: how many leading operands are sort keys.

    Returns:
      The sorted array when `operand` is an array; a tuple of sorted arrays when it is a
      sequence.

    Raises:
      TypeError: operands of different shapes. ValueError: a bad `dimension` or `num_keys`.

    >>> from mytorch import lax
    >>> lax.sort(np.array([3.0, np.nan, 1.0, 2.0], np.float32))
    Array([ 1.,  2.,  3., nan], dtype=float32)
    """
    single = not isinstance(operand, (tuple, list))
    operands = [asarray(operand)] if single else [asarray(o) for o in operand]
    if not operands:
        raise ValueError("sort needs at least one operand, got an empty sequence")
    if not _is_int(dimension):
        raise TypeError(f"sort: dimension must be an int, got {dimension!r}")
    if not _is_int(num_keys):
        raise TypeError(f"sort: num_keys must be an int, got {num_keys!r}")
    dimension, ndim = int(dimension), operands[0].ndim
    if -ndim <= dimension < 0:
        dimension += ndim
    out = sort_p.bind(*operands, dimension=dimension, is_stable=bool(is_stable),
                      num_keys=int(num_keys))
    return out[0] if single else tuple(out)


def sort_key_val(keys, values, dimension=-1, is_stable=True):
    """Sort `keys` along `dimension` and permute `values` (same shape) with them.

    Returns:
      (sorted keys, values in the keys' sorted order).

    >>> from mytorch import lax
    >>> k, v = lax.sort_key_val(np.array([2, 0, 1], np.int32), np.array([10, 20, 30], np.int32))
    >>> v
    Array([20, 30, 10], dtype=int32)
    """
    return sort((keys, values), dimension=dimension, is_stable=is_stable, num_keys=1)


# ---- top_k -------------------------------------------------------------------------------
top_k_p = Primitive("top_k", multiple_results=True, kind="sort")


@top_k_p.def_abstract_eval
def _top_k_abstract_eval(x, *, k):
    if not x.shape:
        raise ValueError(f"top_k needs an operand of rank >= 1, got the 0-d {short(x)}")
    if type(k) is not int:
        raise TypeError(f"top_k: k must be a Python int, got {k!r}")
    if k < 0:
        raise ValueError(f"top_k: k must be non-negative, got {k}")
    if k > x.shape[-1]:
        raise ValueError(f"top_k: k={k} is larger than the last axis of {short(x)} "
                         f"(size {x.shape[-1]}); use k <= {x.shape[-1]}")
    shape = (*x.shape[:-1], k)
    return [ShapedArray(shape, x.dtype, x.weak_type), ShapedArray(shape, np.int32, False)]


def top_k(operand, k):
    """The `k` largest entries along the last axis, in descending order, and their indices.

    Ties go to the lower index first; NaN counts as larger than every number (as in JAX).

    Args:
      operand: an array of rank >= 1, shape `[..., n]`.
      k: how many entries to keep, 0 <= k <= n.

    Returns:
      (values `[..., k]` of `operand`'s dtype, indices `[..., k]` int32).

    Raises:
      ValueError: a 0-d operand, or `k` negative or larger than n.

    >>> from mytorch import lax
    >>> values, indices = lax.top_k(np.array([1.0, 3.0, 2.0, 3.0], np.float32), 3)
    >>> indices
    Array([1, 3, 2], dtype=int32)
    """
    try:
        k = operator.index(k)
    except TypeError:
        raise TypeError(f"top_k: k must be an int, got {k!r}") from None
    values, indices = top_k_p.bind(asarray(operand), k=int(k))
    return values, indices
