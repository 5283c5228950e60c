"""Derivative and batching rules of the collectives (defined in parallel.py).

Derivatives (under vmap, each example is a device; reverse mode sums the per-example
losses, as JAX does):
  * psum is linear and its own transpose: y_k = sum_j x_j for every k, so
    ct_x_k = sum_j ct_y_j, i.e. psum of the cotangent; an unbatched (equal) cotangent c
    gives n * c;
  * pmax/pmin: the tangent is the mean tangent over the examples holding the extremum
    (psum(t * mask) / psum(mask)), so ties share it;
  * all_gather and psum_scatter are linear and each other's transposes;
  * ppermute is linear; its transpose sends the cotangents back (the inverse pairs);
  * all_to_all is linear; its transpose swaps split_axis and concat_axis;
  * axis_index has a zero derivative.

Batching: a collective over the vmap's own axis name becomes an ordinary array operation
over the batch dimension (a reduction, a move of the batch axis, a gather), after which the
names left in `axis_name` (outer vmaps) are handled by binding the collective again on the
parent; a collective over other names just follows the operand's batch dimension.
"""

import numpy as np

from mytorch.core.array import from_numpy
from mytorch.core.trace import aval_of
from mytorch.lax import parallel as par
from mytorch.lax import reductions as red
from mytorch.lax import structural as st
from mytorch.lax._ad import Zero, defjvp_zero, deflinear, is_differentiable, zero_out
from mytorch.lax._batching import bdim_at_front, broadcast_batched, moveaxis, not_mapped
from mytorch.lax._utils import weak_scalar
from mytorch.lax.elementwise import convert_element_type, div, eq, mul
from mytorch.lax.indexing import GatherDimensionNumbers, gather

__all__ = []


# ---- derivatives ---------------------------------------------------------------------------
def _psum_transpose(ct, x, *, axis_name):
    return [par.psum_p.bind(ct, axis_name=axis_name)]


deflinear(par.psum_p, _psum_transpose)


def _chooser_jvp(prim):
    """The mean tangent over the examples that hold the extremum (ties share it)."""

    def rule(primals, tangents, *, axis_name):
        (x,), (t,) = primals, tangents
        ans = prim.bind(x, axis_name=axis_name)
        if type(t) is Zero or not is_differentiable(aval_of(ans)):
            return ans, zero_out(ans)
        mask = convert_element_type(eq(x, ans), aval_of(t).dtype)
        count = par.psum_p.bind(mask, axis_name=axis_name)
        return ans, div(par.psum_p.bind(mul(t, mask), axis_name=axis_name), count)

    prim.def_jvp(rule)
    return rule


_chooser_jvp(par.pmax_p)
_chooser_jvp(par.pmin_p)


def _all_gather_transpose(ct, x, *, axis_name, axis, tiled, axis_size):
    # example k's value lands in block k of every example's result
    return [par.psum_scatter_p.bind(ct, axis_name=axis_name, scatter_dimension=axis,
                                    tiled=tiled, axis_size=axis_size)]


def _psum_scatter_transpose(ct, x, *, axis_name, scatter_dimension, tiled, axis_size):
    return [par.all_gather_p.bind(ct, axis_name=axis_name, axis=scatter_dimension,
                                  tiled=tiled, axis_size=axis_size)]


def _ppermute_transpose(ct, x, *, axis_name, perm, axis_size):
    inverse = tuple((dst, src) for src, dst in perm)
    return [par.ppermute_p.bind(ct, axis_name=axis_name, perm=inverse, axis_size=axis_size)]


def _all_to_all_transpose(ct, x, *, axis_name, split_axis, concat_axis, axis_size):
    # block j of example i's concat axis came from block i of example j's split axis
    return [par.all_to_all_p.bind(ct, axis_name=axis_name, split_axis=concat_axis,
                                  concat_axis=split_axis, axis_size=axis_size)]


deflinear(par.all_gather_p, _all_gather_transpose)
deflinear(par.psum_scatter_p, _psum_scatter_transpose)
deflinear(par.ppermute_p, _ppermute_transpose)
deflinear(par.all_to_all_p, _all_to_all_transpose)
defjvp_zero(par.axis_index_p)


# ---- batching ------------------------------------------------------------------------------
# Over the vmap's own name (size n), with the operand batched along d (or unbatched):
#     psum/pmax/pmin  reduce over d (an unbatched x: n * x, or x); the result is unbatched
#     axis_index      iota(n), batched along 0
#     all_gather      the batch dim moved to the gather axis (merged into it when tiled);
#                     the result is unbatched
#     psum_scatter    reduce over d; the scatter dimension becomes the batch dim
#     ppermute        a gather of the sources along d (0 where no source)
#     all_to_all      the chunk index and the batch index trade places (reshape/transpose)
def _ours(batch_axis, axis_name):
    return batch_axis.name is not None and batch_axis.name in axis_name


def _others(axis_name, name):
    return tuple(n for n in axis_name if n != name)


def _check_size(prim, batch_axis, axis_size):
    if axis_size != batch_axis.size:
        raise ValueError(f"{prim.name}: the axis_size parameter ({axis_size}) differs from "
                         f"the size {batch_axis.size} of axis {batch_axis.name!r}")


def _times(x, n):
    """x * n in x's dtype (integers wrap as a sum of n copies would)."""
    dtype = aval_of(x).dtype
    value = np.array(n).astype(dtype).item()
    return mul(x, weak_scalar(value, dtype))


def _reducer_batching(prim, reduce, unbatched):
    def rule(batch_axis, args, dims, *, axis_name):
        (x,), (d,) = args, dims
        if not _ours(batch_axis, axis_name):
            return prim.bind(x, axis_name=axis_name), d
        out = unbatched(x, batch_axis.size) if d is not_mapped else reduce(x, (d,))
        rest = _others(axis_name, batch_axis.name)
        if rest:
            out = prim.bind(out, axis_name=rest)
        return out, not_mapped

    prim.def_batching(rule)
    return rule


_reducer_batching(par.psum_p, red.reduce_sum, _times)
_reducer_batching(par.pmax_p, red.reduce_max, lambda x, n: x)
_reducer_batching(par.pmin_p, red.reduce_min, lambda x, n: x)


def _axis_index_batching(batch_axis, args, dims, *, axis_name):
    if not _ours(batch_axis, axis_name):
        return par.axis_index_p.bind(axis_name=axis_name), not_mapped
    return st.iota(np.int32, batch_axis.size), 0


par.axis_index_p.def_batching(_axis_index_batching)


def _merge(x, axis):
    """x with dims `axis` and `axis + 1` merged into one."""
    shape = aval_of(x).shape
    return st.reshape(x, (*shape[:axis], shape[axis] * shape[axis + 1], *shape[axis + 2:]))


def _split(x, axis, n):
    """x with dim `axis` split into (n, size // n)."""
    shape = aval_of(x).shape
    return st.reshape(x, (*shape[:axis], n, shape[axis] // n, *shape[axis + 1:]))


def _all_gather_batching(batch_axis, args, dims, *, axis_name, axis, tiled, axis_size):
    (x,), (d,) = args, dims
    params = {"axis_name": axis_name, "axis": axis, "tiled": tiled, "axis_size": axis_size}
    if not _ours(batch_axis, axis_name):
        if tiled:
            out = par.all_gather_p.bind(x, **{**params, "axis": axis + (axis >= d)})
            return out, d
        # the new axis goes before the batch dim when axis <= d, and pushes it right
        out = par.all_gather_p.bind(x, **{**params, "axis": axis + (axis > d)})
        return out, d + 1 if axis <= d else d
    _check_size(par.all_gather_p, batch_axis, axis_size)
    if d is not_mapped:
        out = broadcast_batched(x, batch_axis.size, axis)
    else:
        out = moveaxis(x, d, axis)
    return (_merge(out, axis) if tiled else out), not_mapped


def _psum_scatter_batching(batch_axis, args, dims, *, axis_name, scatter_dimension, tiled,
                           axis_size):
    (x,), (d,) = args, dims
    sd = scatter_dimension
    params = {"axis_name": axis_name, "tiled": tiled, "axis_size": axis_size}
    if not _ours(batch_axis, axis_name):
        out = par.psum_scatter_p.bind(x, scatter_dimension=sd + (sd >= d), **params)
        return out, d - 1 if not tiled and sd < d else d
    _check_size(par.psum_scatter_p, batch_axis, axis_size)
    total = _times(x, batch_axis.size) if d is not_mapped else red.reduce_sum(x, (d,))
    # example k keeps block k of the sum: the scatter dimension (split into blocks when
    # tiled) is the batch dimension of the result
    return (_split(total, sd, batch_axis.size) if tiled else total), sd


def _zero_fill(dtype):
    return False if np.dtype(dtype) == np.bool_ else 0


def _ppermute_batching(batch_axis, args, dims, *, axis_name, perm, axis_size):
    (x,), (d,) = args, dims
    if not _ours(batch_axis, axis_name):
        return par.ppermute_p.bind(x, axis_name=axis_name, perm=perm, axis_size=axis_size), d
    _check_size(par.ppermute_p, batch_axis, axis_size)
    n = batch_axis.size
    if n == 0:  # no examples: nothing to move
        return x, d
    if d is not_mapped:
        if len(perm) == n:  # every example receives the same x
            return x, not_mapped
        x, d = broadcast_batched(x, n), 0
    # example dst reads example src; an out-of-range source (n) reads the fill value 0
    sources = np.full((n, 1), n, np.int32)
    for src, dst in perm:
        sources[dst, 0] = src
    a = aval_of(x)
    dn = GatherDimensionNumbers(offset_dims=tuple(i for i in range(a.ndim) if i != d),
                                collapsed_slice_dims=(d,), start_index_map=(d,))
    sizes = tuple(1 if i == d else s for i, s in enumerate(a.shape))
    out = gather(x, from_numpy(sources), dn, sizes, mode="fill",
                 fill_value=_zero_fill(a.dtype))
    return out, d


def _all_to_all_batching(batch_axis, args, dims, *, axis_name, split_axis, concat_axis,
                         axis_size):
    (x,), (d,) = args, dims
    split, concat = split_axis, concat_axis
    if not _ours(batch_axis, axis_name):
        out = par.all_to_all_p.bind(x, axis_name=axis_name, split_axis=split + (split >= d),
                                    concat_axis=concat + (concat >= d), axis_size=axis_size)
        return out, d
    _check_size(par.all_to_all_p, batch_axis, axis_size)
    n = batch_axis.size
    # sender j first, then example dims with the split axis cut into (receiver i, chunk c)
    x = _split(bdim_at_front(x, d, n), split + 1, n)
    rank = aval_of(x).ndim - 2

    def pos(k):  # position in x of the example's dim k (k != split)
        return k + 1 if k < split else k + 2

    receiver, chunk = split + 1, split + 2
    order = [receiver]
    for k in range(rank):
        inner = chunk if k == split else pos(k)
        order += [0, inner] if k == concat else [inner]
    out = st.transpose(x, tuple(order))
    # the sender index joins the concat axis as its major part
    return _merge(out, concat + 1), 0


par.all_gather_p.def_batching(_all_gather_batching)
par.psum_scatter_p.def_batching(_psum_scatter_batching)
par.ppermute_p.def_batching(_ppermute_batching)
par.all_to_all_p.def_batching(_all_to_all_batching)
