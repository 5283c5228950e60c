"""Set operations on 1-D arrays: isin, in1d, intersect1d, union1d, setdiff1d, setxor1d.

Results whose length depends on the values take a static `size=` under jit, vmap and grad
(as `unique` and `nonzero` do): extra entries are dropped and missing ones are filled with
`fill_value` (JAX's defaults: 0 for setdiff1d, the smallest result otherwise, and 0 when
the result is empty).
"""

from mytorch import lax
from mytorch.numpy.creation import arange, asarray, full
from mytorch.numpy.joining import concatenate
from mytorch.numpy.shapes import ravel, reshape
from mytorch.numpy.sorting import lexsort, nonzero, searchsorted, sort, unique

__all__ = ["isin", "in1d", "intersect1d", "union1d", "setdiff1d", "setxor1d"]


def isin(element, test_elements, assume_unique=False, invert=False, *, method="auto"):
    """Whether each element of `element` occurs in `test_elements` (any shape), as a bool
    array of `element`'s shape. NaN is in no set. `assume_unique` and `method` are
    accepted for compatibility; the membership test sorts `test_elements` once and
    searches it.
    """
    del assume_unique, method
    x, t = asarray(element), ravel(asarray(test_elements))
    if t.shape[0] == 0:
        found = full(x.shape, False, dtype=bool)
    else:
        st = sort(t)
        idx = searchsorted(st, ravel(x))
        idx = lax.min(idx, full(idx.shape, t.shape[0] - 1, dtype=idx.dtype))
        found = reshape(st[idx] == ravel(x), x.shape)
    return ~found if invert else found


def in1d(ar1, ar2, assume_unique=False, invert=False, *, method="auto"):
    """`isin` of the flattened `ar1`: a 1-D bool array (NumPy's older name)."""
    return isin(ravel(asarray(ar1)), ar2, assume_unique, invert, method=method)


def _select(values, keep, size, fill_value, name):
    """The entries of the 1-D `values` where `keep`, in order; padded to `size` with
    `fill_value` (default: the smallest kept value, as `unique` pads)."""
    if size is None:
        return values[nonzero(keep)[0]]
    (idx,) = nonzero(keep, size=size, fill_value=0)
    n_kept = keep.astype("int32").sum()
    out = values[idx] if values.shape[0] else full((size,), 0, dtype=values.dtype)
    if fill_value is None:  # the smallest result, or 0 when there is none
        fill_value = lax.select_n(n_kept > 0, full((), 0, out.dtype), out[0]) if size else 0
    return lax.select_n(arange(size) < n_kept, full((size,), fill_value, dtype=out.dtype), out)


def setdiff1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
    """The sorted unique values of `ar1` that are not in `ar2` (1-D). Under a
    transformation pass `size`; padding defaults to 0."""
    u, real = _unique_padded(ravel(asarray(ar1)), assume_unique, size)
    keep = isin(u, ar2, invert=True) & real
    return _select(u, keep, size, 0 if fill_value is None else fill_value, "setdiff1d")


def _unique_padded(a, assume_unique, size, return_index=False):
    """unique(a) (a itself when `assume_unique`), padded to a's length when `size` is given
    (so the shape is static), with a mask of the real entries (and the first indices)."""
    if assume_unique and not return_index:
        return a, full(a.shape, True, dtype=bool)
    pad = None if size is None or a.shape[0] == 0 else a.max()  # keeps the result sorted
    u, *idx, counts = unique(a, return_index=return_index, return_counts=True,
                             size=None if size is None else a.shape[0], fill_value=pad)
    return (u, counts > 0, *idx)


def union1d(ar1, ar2, *, size=None, fill_value=None):
    """The sorted unique values in either array (1-D); `size` under a transformation."""
    both = concatenate([ravel(asarray(ar1)), ravel(asarray(ar2))])
    return unique(both, size=size, fill_value=fill_value)


def intersect1d(ar1, ar2, assume_unique=False, return_indices=False, *, size=None,
                fill_value=None):
    """The sorted values in both arrays (1-D); with `return_indices`, also the index of
    each value's first occurrence in `ar1` and in `ar2`. `size` under a transformation."""
    a, b = ravel(asarray(ar1)), ravel(asarray(ar2))
    ua, real_a, *ia = _unique_padded(a, assume_unique, size, return_indices)
    ub, _, *ib = _unique_padded(b, assume_unique, size, return_indices)
    keep = isin(ua, ub) & real_a  # padding repeats a real value, so isin is unaffected
    vals = _select(ua, keep, size, fill_value, "intersect1d")
    if not return_indices:
        return vals
    pos_b = searchsorted(ub, ua)
    pos_b = lax.min(pos_b, full(pos_b.shape, max(ub.shape[0] - 1, 0), dtype=pos_b.dtype))
    # padding indices are the arrays' lengths (out of range), as JAX pads them
    return vals, _select(ia[0], keep, size, a.shape[0], "intersect1d"), \
        _select(ib[0][pos_b] if ub.shape[0] else pos_b, keep, size, b.shape[0], "intersect1d")


def setxor1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
    """The sorted values in exactly one of the arrays (1-D); `size` under a
    transformation."""
    ua, real_a = _unique_padded(ravel(asarray(ar1)), assume_unique, size)
    ub, real_b = _unique_padded(ravel(asarray(ar2)), assume_unique, size)
    vals = concatenate([ua, ub])
    keep = concatenate([real_a & isin(ua, ub, invert=True), real_b & isin(ub, ua, invert=True)])
    order = lexsort((vals, ~keep))  # kept values first, in ascending order
    return _select(vals[order], keep[order], size, fill_value, "setxor1d")
