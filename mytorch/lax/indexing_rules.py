"""Derivative and batching rules of the indexing primitives (defined in indexing.py).

Start indices and index arrays are integers: they never have tangents. In the other operands:

    dynamic_slice         linear in the operand; transpose: dynamic_update_slice into zeros
    dynamic_update_slice  linear in (operand, update); transpose: the operand gets ct with the
                          block zeroed, the update the block of ct
    gather                linear in the operand; transpose: scatter_add into zeros
    scatter_add           linear in (operand, updates); transpose: ct, and gather(ct)
    scatter               JAX's rule: with unique_indices the tangents are scattered (and
                          the transpose is defined); otherwise ids scattered and gathered
                          back say which update won each element, and the masked tangents
                          are combined with scatter_add
    scatter_mul           d(x * prod y) = dx * prod y + x * sum_k dy_k prod_{j != k} y_j:
                          JAX's rule with unique_indices; repeated indices (which JAX
                          rejects) take the exclusive products without dividing by a zero.
                          Linear in the operand; transpose: scatter_mul(ct, y)
    scatter_min/max       JAX's rule: the tangent of the winner; ties (between updates or
                          with the operand) share it equally

Out-of-bounds windows are handled consistently between a gather and its scatter
counterpart: "clip" maps to "clip" (both clamp the same way); gather "fill" maps to scatter
"drop" and back (filling with 0). "promise_in_bounds" maps to what the kernels do with it:
a gather clamps (so its transpose is a "clip" scatter), a scatter drops (so the gathers
that undo it fill with 0); JAX passes it through, which agrees for in-bounds indices.
"""

import math

import numpy as np

from mytorch.core import dtypes
from mytorch.core.trace import aval_of
from mytorch.lax import indexing as ix
from mytorch.lax._ad import Zero, instantiate, is_differentiable, is_undefined, zero_out
from mytorch.lax._batching import bdim_to, broadcast_batched, moveaxis, not_mapped, shift_dims
from mytorch.lax._utils import weak_scalar
from mytorch.lax.elementwise import add, convert_element_type, div, eq, mul, select, sub
from mytorch.lax.elementwise import max as lax_max
from mytorch.lax.elementwise import min as lax_min
from mytorch.lax.indexing import (
    GatherDimensionNumbers, ScatterDimensionNumbers, dynamic_slice_p, dynamic_update_slice_p,
    gather, gather_p, scatter, scatter_add, scatter_add_p, scatter_mul, scatter_mul_p,
    scatter_p,
)
from mytorch.lax.structural import broadcast_in_dim, concatenate, full, full_like, iota, reshape
from mytorch.lax.structural_rules import _fit


def _aval(x):
    return x.aval if is_undefined(x) else aval_of(x)


def _zeros(like, shape=None):
    """Zeros with the dtype and weak type of `like` (an array or aval), of its shape or
    `shape`."""
    return full_like(like, 0, shape=shape)


def _ones(like):
    return full_like(like, 1)


def _c(x, value):
    """A weakly typed 0-d constant of `x`'s dtype."""
    return weak_scalar(value, aval_of(x).dtype)


# ---- modes --------------------------------------------------------------------------------
def _scatter_mode_of_gather(mode):
    """The scatter mode that is the adjoint of a gather in `mode`."""
    return "drop" if mode == "fill" else "clip"


def _gather_mode_of_scatter(mode):
    """The gather mode (filling with 0) that reads what a scatter in `mode` wrote."""
    return "clip" if mode == "clip" else "fill"


# ---- dimension numbers --------------------------------------------------------------------
def _scatter_dnums_of(dn):
    return ScatterDimensionNumbers(
        update_window_dims=dn.offset_dims,
        inserted_window_dims=dn.collapsed_slice_dims,
        scatter_dims_to_operand_dims=dn.start_index_map,
        operand_batching_dims=dn.operand_batching_dims,
        scatter_indices_batching_dims=dn.start_indices_batching_dims)


def _gather_dnums_of(dn):
    return GatherDimensionNumbers(
        offset_dims=dn.update_window_dims,
        collapsed_slice_dims=dn.inserted_window_dims,
        start_index_map=dn.scatter_dims_to_operand_dims,
        operand_batching_dims=dn.operand_batching_dims,
        start_indices_batching_dims=dn.scatter_indices_batching_dims)


def _window_sizes(operand_ndim, updates_shape, dn):
    """The slice sizes of the gather that reads back the windows of a scatter."""
    sizes, window = [], iter(dn.update_window_dims)
    for d in range(operand_ndim):
        if d in dn.inserted_window_dims or d in dn.operand_batching_dims:
            sizes.append(1)
        else:
            sizes.append(updates_shape[next(window)])
    return tuple(sizes)


def _undo_scatter(x, indices, updates_shape, dn, mode, sorted_=False, unique=False):
    """The windows a scatter of `dn` and `mode` wrote, read back from `x` (0 for dropped
    windows): an array of `updates_shape`."""
    if 0 in aval_of(x).shape:
        # nothing was written; no gather can express this (a size-0 dim cannot be
        # collapsed or indexed by a batching dim: those take slices of size 1)
        return _zeros(aval_of(x), updates_shape)
    return gather(x, indices, _gather_dnums_of(dn), _window_sizes(aval_of(x).ndim,
                                                                  updates_shape, dn),
                  mode=_gather_mode_of_scatter(mode), fill_value=0,
                  indices_are_sorted=sorted_, unique_indices=unique)


# ---- dynamic_slice, dynamic_update_slice ---------------------------------------------------
def _dynamic_slice_jvp(primals, tangents, *, slice_sizes):
    x, *starts = primals
    ans = dynamic_slice_p.bind(x, *starts, slice_sizes=slice_sizes)
    t = tangents[0]
    if type(t) is Zero or not is_differentiable(aval_of(ans)):
        return ans, zero_out(ans)
    return ans, dynamic_slice_p.bind(t, *starts, slice_sizes=slice_sizes)


def _dynamic_slice_transpose(ct, x, *starts, slice_sizes):
    if any(is_undefined(s) for s in starts):
        raise TypeError("dynamic_slice: start indices cannot be linear")
    return [dynamic_update_slice_p.bind(_zeros(x.aval), ct, *starts)] + [None] * len(starts)


dynamic_slice_p.def_jvp(_dynamic_slice_jvp)
dynamic_slice_p.def_transpose(_dynamic_slice_transpose)


def _dynamic_update_slice_jvp(primals, tangents):
    x, update, *starts = primals
    t_x, t_u = tangents[:2]
    ans = dynamic_update_slice_p.bind(x, update, *starts)
    if (type(t_x) is Zero and type(t_u) is Zero) or not is_differentiable(aval_of(ans)):
        return ans, zero_out(ans)
    return ans, dynamic_update_slice_p.bind(instantiate(t_x), instantiate(t_u), *starts)


def _dynamic_update_slice_transpose(ct, x, update, *starts):
    if any(is_undefined(s) for s in starts):
        raise TypeError("dynamic_update_slice: start indices cannot be linear")
    u_aval = _aval(update)
    t_x = t_u = None
    if is_undefined(x):
        # the block was overwritten: the operand's elements there do not reach the result
        t_x = _fit(dynamic_update_slice_p.bind(ct, _zeros(ct, u_aval.shape), *starts), x.aval)
    if is_undefined(update):
        t_u = _fit(dynamic_slice_p.bind(ct, *starts, slice_sizes=u_aval.shape), u_aval)
    return [t_x, t_u] + [None] * len(starts)


dynamic_update_slice_p.def_jvp(_dynamic_update_slice_jvp)
dynamic_update_slice_p.def_transpose(_dynamic_update_slice_transpose)


# ---- gather -------------------------------------------------------------------------------
def _gather_jvp(primals, tangents, *, dimension_numbers, slice_sizes, mode, fill_value,
                indices_are_sorted, unique_indices):
    x, indices = primals
    params = {"dimension_numbers": dimension_numbers, "slice_sizes": slice_sizes, "mode": mode,
              "indices_are_sorted": indices_are_sorted, "unique_indices": unique_indices}
    ans = gather_p.bind(x, indices, fill_value=fill_value, **params)
    t = tangents[0]
    if type(t) is Zero or not is_differentiable(aval_of(ans)):
        return ans, zero_out(ans)
    # filled windows are constants: their tangent is 0
    return ans, gather_p.bind(t, indices, fill_value=0 if mode == "fill" else None, **params)


def _gather_transpose(ct, x, indices, *, dimension_numbers, slice_sizes, mode, fill_value,
                      indices_are_sorted, unique_indices):
    if is_undefined(indices):
        raise TypeError("gather: the indices cannot be linear")
    out = scatter_add_p.bind(
        _zeros(x.aval), indices, ct, dimension_numbers=_scatter_dnums_of(dimension_numbers),
        mode=_scatter_mode_of_gather(mode), indices_are_sorted=indices_are_sorted,
        unique_indices=unique_indices)
    return [out, None]


gather_p.def_jvp(_gather_jvp)
gather_p.def_transpose(_gather_transpose)


# ---- scatter_add --------------------------------------------------------------------------
def _scatter_add_jvp(primals, tangents, **params):
    x, indices, updates = primals
    t_x, _, t_u = tangents
    ans = scatter_add_p.bind(x, indices, updates, **params)
    if (type(t_x) is Zero and type(t_u) is Zero) or not is_differentiable(aval_of(ans)):
        return ans, zero_out(ans)
    return ans, scatter_add_p.bind(instantiate(t_x), indices, instantiate(t_u), **params)


def _scatter_add_transpose(ct, x, indices, updates, *, dimension_numbers, mode,
                           indices_are_sorted, unique_indices):
    if is_undefined(indices):
        raise TypeError("scatter_add: the indices cannot be linear")
    t_x = _fit(ct, x.aval) if is_undefined(x) else None
    t_u = None
    if is_undefined(updates):
        t_u = _fit(_undo_scatter(ct, indices, updates.aval.shape, dimension_numbers, mode,
                                 indices_are_sorted, unique_indices), updates.aval)
    return [t_x, None, t_u]


scatter_add_p.def_jvp(_scatter_add_jvp)
scatter_add_p.def_transpose(_scatter_add_transpose)


# ---- scatter (replace) --------------------------------------------------------------------
def _scatter_jvp(primals, tangents, *, dimension_numbers, mode, indices_are_sorted,
                 unique_indices):
    x, indices, updates = primals
    t_x, _, t_u = tangents
    dn = dimension_numbers
    params = {"dimension_numbers": dn, "mode": mode,
              "indices_are_sorted": indices_are_sorted, "unique_indices": unique_indices}
    ans = scatter_p.bind(x, indices, updates, **params)
    if (type(t_x) is Zero and type(t_u) is Zero) or not is_differentiable(aval_of(ans)):
        return ans, zero_out(ans)
    t_x, t_u = instantiate(t_x), instantiate(t_u)
    if unique_indices:
        # no two windows overlap: the tangents are scattered like the values
        return ans, scatter_p.bind(t_x, indices, t_u, **params)
    # Overlapping windows: which one wins is up to the kernel. Scatter an id for each
    # update window (1, 2, ...; 0 means "no update") and read it back: an update element
    # won where it reads its own id; an operand element survived where the id is 0.
    u_shape = aval_of(updates).shape
    ids_shape = tuple(1 if d in dn.update_window_dims else n for d, n in enumerate(u_shape))
    n_ids = math.prod(ids_shape)
    id_dtype = np.dtype(np.int32) if n_ids < np.iinfo(np.int32).max else dtypes.default_int()
    ids = add(reshape(iota(id_dtype, n_ids), ids_shape), weak_scalar(1, id_dtype))
    ids = broadcast_in_dim(ids, u_shape, tuple(range(len(u_shape))))
    x_aval = aval_of(x)
    scattered = scatter(full(x_aval.shape, 0, id_dtype), indices, ids, dn, mode=mode,
                        indices_are_sorted=indices_are_sorted, unique_indices=False)
    won = eq(ids, _undo_scatter(scattered, indices, u_shape, dn, mode, indices_are_sorted))
    kept = eq(scattered, weak_scalar(0, id_dtype))
    t_x = select(kept, t_x, _zeros(aval_of(t_x)))
    t_u = select(won, t_u, _zeros(aval_of(t_u)))
    return ans, scatter_add_p.bind(t_x, indices, t_u, **params)


def _scatter_transpose(ct, x, indices, updates, *, dimension_numbers, mode,
                       indices_are_sorted, unique_indices):
    if is_undefined(indices):
        raise TypeError("scatter: the indices cannot be linear")
    if not unique_indices:
        raise TypeError(
            "scatter: the transpose of a replacing scatter is only defined with "
            "unique_indices=True (the JVP of a scatter with possibly repeated indices uses "
            "scatter_add, which transposes)")
    u_aval = _aval(updates)
    t_x = t_u = None
    if is_undefined(x):
        # overwritten elements of the operand do not reach the result
        t_x = _fit(scatter_p.bind(ct, indices, _zeros(ct, u_aval.shape),
                                  dimension_numbers=dimension_numbers, mode=mode,
                                  indices_are_sorted=indices_are_sorted,
                                  unique_indices=unique_indices), x.aval)
    if is_undefined(updates):
        t_u = _fit(_undo_scatter(ct, indices, u_aval.shape, dimension_numbers, mode,
                                 indices_are_sorted, unique_indices), u_aval)
    return [t_x, None, t_u]


scatter_p.def_jvp(_scatter_jvp)
scatter_p.def_transpose(_scatter_transpose)


# ---- scatter_mul --------------------------------------------------------------------------
def _scatter_mul_jvp(primals, tangents, *, dimension_numbers, mode, indices_are_sorted,
                     unique_indices):
    x, indices, updates = primals
    t_x, _, t_u = tangents
    dn = dimension_numbers
    params = {"dimension_numbers": dn, "mode": mode,
              "indices_are_sorted": indices_are_sorted, "unique_indices": unique_indices}
    ans = scatter_mul_p.bind(x, indices, updates, **params)
    if (type(t_x) is Zero and type(t_u) is Zero) or not is_differentiable(aval_of(ans)):
        return ans, zero_out(ans)
    out = Zero(aval_of(ans))
    if type(t_x) is not Zero:
        out = scatter_mul_p.bind(t_x, indices, updates, **params)
    if type(t_u) is not Zero:
        if not unique_indices:
            # each update's tangent is scaled by the product of the other updates of its
            # element (JAX's rule assumes there are none)
            t_u = mul(t_u, _exclusive_products(x, indices, updates, dn, mode,
                                               indices_are_sorted))
        zeros = _zeros(aval_of(x))
        d_u = mul(x, scatter_add_p.bind(zeros, indices, t_u, **params))
        out = d_u if type(out) is Zero else add(out, d_u)
    return ans, out


def _exclusive_products(x, indices, updates, dn, mode, sorted_):
    """For each update element, the product of the other updates scattered to the same
    operand element, without dividing by a zero.

    Split the updates of an element into the set Z of those that are exactly 0 and the
    rest, of product P. The split is fixed near the point, so the products below are
    exact polynomials and differentiate correctly: for y not in Z the result is
    prod(Z) * P / y; for y in Z it is P times the product of the other zeros, which is 1
    (|Z| = 1), sum(Z) - y (|Z| = 2: the other zero, whose derivative is 1) or 0 with a zero
    first derivative (|Z| >= 3). So the result and its first derivative are exact
    everywhere (second derivatives of scatter_mul are).
    """
    u_aval, x_aval = aval_of(updates), aval_of(x)
    zero_u, one_u = _zeros(u_aval), _ones(u_aval)
    is_zero = eq(updates, _c(updates, 0))

    def per_update(combine, init, values):
        total = combine(init, indices, values, dn, mode=mode, indices_are_sorted=sorted_)
        return _undo_scatter(total, indices, u_aval.shape, dn, mode, sorted_)

    safe = select(is_zero, one_u, updates)
    n_zero = per_update(scatter_add, _zeros(x_aval), select(is_zero, one_u, zero_u))
    p_rest = per_update(scatter_mul, _ones(x_aval), safe)
    p_zero = per_update(scatter_mul, _ones(x_aval), select(is_zero, updates, one_u))
    s_zero = per_update(scatter_add, _zeros(x_aval), select(is_zero, updates, zero_u))
    other_zeros = select(eq(n_zero, _c(n_zero, 1)), one_u,
                         select(eq(n_zero, _c(n_zero, 2)), sub(s_zero, updates), zero_u))
    return select(is_zero, mul(p_rest, other_zeros), mul(p_zero, div(p_rest, safe)))


def _scatter_mul_transpose(ct, x, indices, updates, *, dimension_numbers, mode,
                           indices_are_sorted, unique_indices):
    # The JVP emits scatter_mul linear in the operand only: x -> x * (product of the
    # updates of each element) is diagonal, so it is its own transpose.
    if is_undefined(indices):
        raise TypeError("scatter_mul: the indices cannot be linear")
    if is_undefined(updates):
        if is_undefined(x) or not unique_indices:
            raise TypeError(
                "scatter_mul: not linear in the updates unless the operand is known and "
                "unique_indices=True, so it cannot be transposed in them")
        t_u = _undo_scatter(mul(ct, x), indices, updates.aval.shape, dimension_numbers,
                            mode, indices_are_sorted, unique_indices)
        return [None, None, _fit(t_u, updates.aval)]
    t_x = scatter_mul_p.bind(ct, indices, updates, dimension_numbers=dimension_numbers,
                             mode=mode, indices_are_sorted=indices_are_sorted,
                             unique_indices=unique_indices)
    return [_fit(t_x, x.aval), None, None]


scatter_mul_p.def_jvp(_scatter_mul_jvp)
scatter_mul_p.def_transpose(_scatter_mul_transpose)


# ---- scatter_min, scatter_max -------------------------------------------------------------
def _scatter_extremal_jvp(prim):
    def rule(primals, tangents, *, dimension_numbers, mode, indices_are_sorted,
             unique_indices):
        x, indices, updates = primals
        t_x, _, t_u = tangents
        dn = dimension_numbers
        params = {"dimension_numbers": dn, "mode": mode,
                  "indices_are_sorted": indices_are_sorted, "unique_indices": unique_indices}
        ans = prim.bind(x, indices, updates, **params)
        if (type(t_x) is Zero and type(t_u) is Zero) or not is_differentiable(aval_of(ans)):
            return ans, zero_out(ans)
        t_x, t_u = instantiate(t_x), instantiate(t_u)
        u_aval, x_aval = aval_of(updates), aval_of(x)
        u_shape = u_aval.shape

        def undo(v):
            return _undo_scatter(v, indices, u_shape, dn, mode, indices_are_sorted)

        def count(v):
            return undo(scatter_add(_zeros(x_aval), indices, v, dn, mode=mode,
                                    indices_are_sorted=indices_are_sorted))

        # The winner's tangent; where several values tie for an element (updates, and
        # possibly the operand's own value), each gets an equal share.
        initial, target = undo(x), undo(ans)
        one_u, zero_u = _ones(u_aval), _zeros(u_aval)
        won = eq(updates, target)
        retained = eq(initial, target)
        n_won = count(select(won, one_u, zero_u))
        n_refs = count(one_u)
        one = _c(n_won, 1)
        # n_won + 1 >= 1; n_won may be 0 only where the coefficient is not used
        safe_won = select(eq(n_won, _c(n_won, 0)), one_u, n_won)
        share_u = select(retained, div(one, add(n_won, one)), div(one, safe_won))
        coef_u = select(won, share_u, zero_u)
        share_x = select(retained, div(one, add(n_won, one)), zero_u)
        # every window on an element takes back its part of the operand's tangent; n_refs
        # is 0 only for dropped windows, whose contributions the scatter_add drops
        safe_refs = select(eq(n_refs, _c(n_refs, 0)), one_u, n_refs)
        coef_x = div(sub(share_x, one), safe_refs)
        t_updates = add(mul(undo(t_x), coef_x), mul(t_u, coef_u))
        return ans, scatter_add_p.bind(t_x, indices, t_updates, **params)

    prim.def_jvp(rule)
    return rule


_scatter_extremal_jvp(ix.scatter_min_p)
_scatter_extremal_jvp(ix.scatter_max_p)


# ---- batching -----------------------------------------------------------------------------
# Every rule is one primitive call on the batched operands (plus moves and broadcasts):
#
#   dynamic_slice         starts unbatched: one more start (0) and a full-size slice along the
#                         batch dim; a batched start: a "clip" gather (clamps like
#                         dynamic_slice) of one index row per example
#   dynamic_update_slice  starts unbatched: the same, with operand and update sharing a batch
#                         dim; a batched start: a "clip" scatter of one window per example
#   gather                operand batched only: the batch dim is one more full-size window
#                         dim; indices batched only: one more batch dim of the indices; both:
#                         one more operand/indices batching dim pair
#   scatter*              indices unbatched: the batch dim is one more full-size window dim
#                         (updates broadcast if unbatched); indices batched: one more batching
#                         dim pair (operand and updates broadcast if unbatched)
#
# Per example, the update elements keep their relative (row-major) order, and examples write
# disjoint parts of the operand, so a replacing scatter with repeated indices keeps the
# winner the eager kernel picks for each example alone.
def _ndim(x, dim):
    """The rank of one example of `x` (batched along `dim`, or not at all)."""
    return aval_of(x).ndim - (dim is not not_mapped)


def _slot_after(marks, k):
    """The position at which a new dim lands right after the k-th of the sorted dims
    `marks` (at 0 when k is 0): inserted there, it has exactly k of them before it."""
    return marks[k - 1] + 1 if k else 0


def _insert_sorted(dims, new):
    """`dims` (already shifted past `new`) with `new` inserted in order."""
    return tuple(sorted((*dims, new)))


def _insert_at(values, pos, value):
    return (*values[:pos], value, *values[pos:])


def _index_bdim(indices, dim):
    """Batched indices whose last dim is still the index vector (batch dim moved to the front
    if it came after it)."""
    if dim == aval_of(indices).ndim - 1:
        return moveaxis(indices, dim, 0), 0
    return indices, dim


def _batch_slot(window_dims, rank, k):
    """The output position of a new k-th batch dim of the indices, in a gather output (or
    updates) of `rank` dims whose window dims are `window_dims`."""
    others = [d for d in range(rank) if d not in window_dims]
    return _slot_after(others, k)


def _window_rank_before(dim, n_dims, dropped):
    """How many window dims (dims not in `dropped`) of an example come before `dim`."""
    return sum(1 for d in range(min(dim, n_dims)) if d not in dropped)


def _with_batching_pair(obatch, ibatch, odim, idim):
    """The (operand, indices) batching dims with the pair (odim, idim) added, the operand's
    list kept sorted; both lists must already be shifted past the new dims."""
    new_obatch = _insert_sorted(obatch, odim)
    j = new_obatch.index(odim)
    return new_obatch, _insert_at(ibatch, j, idim)


# ---- gather --------------------------------------------------------------------------------
def _gather_batching(axis, args, dims, *, dimension_numbers, slice_sizes, mode, fill_value,
                     indices_are_sorted, unique_indices):
    (x, indices), (x_dim, i_dim) = args, dims
    dn = dimension_numbers
    params = {"mode": mode, "fill_value": fill_value}
    if i_dim is not_mapped:
        # the operand's batch dim is a window dim, read whole from 0 by every index vector
        dropped = set(dn.collapsed_slice_dims) | set(dn.operand_batching_dims)
        k = _window_rank_before(x_dim, len(slice_sizes), dropped)
        out_dim = _slot_after(dn.offset_dims, k)
        new_dn = GatherDimensionNumbers(
            offset_dims=_insert_sorted(shift_dims(dn.offset_dims, out_dim), out_dim),
            collapsed_slice_dims=shift_dims(dn.collapsed_slice_dims, x_dim),
            start_index_map=shift_dims(dn.start_index_map, x_dim),
            operand_batching_dims=shift_dims(dn.operand_batching_dims, x_dim),
            start_indices_batching_dims=dn.start_indices_batching_dims)
        out = gather_p.bind(x, indices, dimension_numbers=new_dn,
                            slice_sizes=_insert_at(slice_sizes, x_dim, axis.size),
                            indices_are_sorted=indices_are_sorted,
                            unique_indices=unique_indices, **params)
        return out, out_dim
    indices, i_dim = _index_bdim(indices, i_dim)
    out_rank = len(dn.offset_dims) + _ndim(indices, i_dim) - 1
    out_dim = _batch_slot(dn.offset_dims, out_rank, i_dim)
    offset_dims = shift_dims(dn.offset_dims, out_dim)
    ibatch = shift_dims(dn.start_indices_batching_dims, i_dim)
    if x_dim is not_mapped:
        # each example's index vectors become more batch positions of one gather; two
        # examples may read the same slice
        new_dn = dn._replace(offset_dims=offset_dims, start_indices_batching_dims=ibatch)
        out = gather_p.bind(x, indices, dimension_numbers=new_dn, slice_sizes=slice_sizes,
                            indices_are_sorted=False, unique_indices=False, **params)
        return out, out_dim
    # example b's index vectors read example b of the operand: a batching dim pair
    obatch, ibatch = _with_batching_pair(shift_dims(dn.operand_batching_dims, x_dim), ibatch,
                                         x_dim, i_dim)
    new_dn = GatherDimensionNumbers(
        offset_dims=offset_dims,
        collapsed_slice_dims=shift_dims(dn.collapsed_slice_dims, x_dim),
        start_index_map=shift_dims(dn.start_index_map, x_dim),
        operand_batching_dims=obatch, start_indices_batching_dims=ibatch)
    # batching dims take slice size 1 (0 for an empty batch, which has no slice to read)
    sizes = _insert_at(slice_sizes, x_dim, min(axis.size, 1))
    out = gather_p.bind(x, indices, dimension_numbers=new_dn, slice_sizes=sizes,
                        indices_are_sorted=False, unique_indices=unique_indices, **params)
    return out, out_dim


gather_p.def_batching(_gather_batching)


# ---- scatter family ------------------------------------------------------------------------
def _scatter_batching(prim):
    def rule(axis, args, dims, *, dimension_numbers, mode, indices_are_sorted,
             unique_indices):
        (x, indices, updates), (x_dim, i_dim, u_dim) = args, dims
        dn, size = dimension_numbers, axis.size
        u_rank = _ndim(updates, u_dim)
        if x_dim is not_mapped:  # the result is batched: every example starts from x
            x, x_dim = broadcast_batched(x, size, 0), 0
        x_rank = aval_of(x).ndim - 1
        inserted = shift_dims(dn.inserted_window_dims, x_dim)
        to_operand = shift_dims(dn.scatter_dims_to_operand_dims, x_dim)
        obatch = shift_dims(dn.operand_batching_dims, x_dim)
        if i_dim is not_mapped:
            # the operand's batch dim is a window dim, written whole from 0 by every window
            dropped = set(dn.inserted_window_dims) | set(dn.operand_batching_dims)
            k = _window_rank_before(x_dim, x_rank, dropped)
            w_dim = _slot_after(dn.update_window_dims, k)
            updates = bdim_to(updates, u_dim, w_dim, size)
            new_dn = ScatterDimensionNumbers(
                update_window_dims=_insert_sorted(shift_dims(dn.update_window_dims, w_dim),
                                                  w_dim),
                inserted_window_dims=inserted, scatter_dims_to_operand_dims=to_operand,
                operand_batching_dims=obatch,
                scatter_indices_batching_dims=dn.scatter_indices_batching_dims)
            out = prim.bind(x, indices, updates, dimension_numbers=new_dn, mode=mode,
                            indices_are_sorted=indices_are_sorted,
                            unique_indices=unique_indices)
            return out, x_dim
        # example b's windows go to example b of the operand: a batching dim pair
        indices, i_dim = _index_bdim(indices, i_dim)
        s_dim = _batch_slot(dn.update_window_dims, u_rank, i_dim)
        updates = bdim_to(updates, u_dim, s_dim, size)
        obatch, ibatch = _with_batching_pair(
            obatch, shift_dims(dn.scatter_indices_batching_dims, i_dim), x_dim, i_dim)
        new_dn = ScatterDimensionNumbers(
            update_window_dims=shift_dims(dn.update_window_dims, s_dim),
            inserted_window_dims=inserted, scatter_dims_to_operand_dims=to_operand,
            operand_batching_dims=obatch, scatter_indices_batching_dims=ibatch)
        out = prim.bind(x, indices, updates, dimension_numbers=new_dn, mode=mode,
                        indices_are_sorted=False, unique_indices=unique_indices)
        return out, x_dim

    prim.def_batching(rule)
    return rule


for _prim in (scatter_p, scatter_add_p, scatter_mul_p, ix.scatter_min_p, ix.scatter_max_p):
    _scatter_batching(_prim)


# ---- dynamic_slice, dynamic_update_slice ---------------------------------------------------
def _zero_start(starts):
    """A 0-d start of 0, of the starts' dtype (int32 when there are none)."""
    dtype = aval_of(starts[0]).dtype if starts else np.dtype(np.int32)
    return full((), 0, dtype)


def _clamped_start(start, hi):
    """`start` clamped to [0, hi] in its own dtype (so no value wraps on conversion)."""
    dtype = aval_of(start).dtype
    info = np.iinfo(dtype)
    if hi <= info.max:
        start = lax_min(start, weak_scalar(hi, dtype))
    if info.min < 0:
        start = lax_max(start, weak_scalar(0, dtype))
    return start


def _start_rows(starts, dims, his, size):
    """The starts as index rows: an integer array (size, len(starts)) whose row b holds
    example b's starts. Starts of different dtypes are clamped to [0, hi] first (as the
    primitives do), then converted to one dtype that holds every clamped value."""
    dtypes_in = {aval_of(s).dtype for s in starts}
    if len(dtypes_in) > 1:
        wide = max(his, default=0) > np.iinfo(np.int32).max
        target = dtypes.default_int() if wide else np.dtype(np.int32)
        starts = [convert_element_type(_clamped_start(s, hi), target)
                  for s, hi in zip(starts, his, strict=True)]
    cols = [broadcast_in_dim(s, (size, 1), () if d is not_mapped else (0,))
            for s, d in zip(starts, dims, strict=True)]
    return cols[0] if len(cols) == 1 else concatenate(cols, 1)


def _dynamic_slice_batching(axis, args, dims, *, slice_sizes):
    (x, *starts), (x_dim, *s_dims) = args, dims
    size = axis.size
    if all(d is not_mapped for d in s_dims):
        # the batch dim is sliced whole
        starts = _insert_at(tuple(starts), x_dim, _zero_start(starts))
        out = dynamic_slice_p.bind(x, *starts, slice_sizes=_insert_at(slice_sizes, x_dim, size))
        return out, x_dim
    shape = aval_of(x).shape
    if x_dim is not_mapped:
        his = [n - k for n, k in zip(shape, slice_sizes, strict=True)]
    else:
        his = [n - k for n, k in zip(shape[:x_dim] + shape[x_dim + 1:], slice_sizes,
                                     strict=True)]
    rows = _start_rows(starts, s_dims, his, size)
    r = len(slice_sizes)
    # gather's "clip" clamps each start to [0, dim - size], as dynamic_slice does
    if x_dim is not_mapped:
        dn = GatherDimensionNumbers(offset_dims=tuple(range(1, r + 1)),
                                    collapsed_slice_dims=(), start_index_map=tuple(range(r)))
        sizes = slice_sizes
    else:
        dn = GatherDimensionNumbers(
            offset_dims=tuple(range(1, r + 1)), collapsed_slice_dims=(),
            start_index_map=tuple(d for d in range(r + 1) if d != x_dim),
            operand_batching_dims=(x_dim,), start_indices_batching_dims=(0,))
        sizes = _insert_at(slice_sizes, x_dim, min(size, 1))
    out = gather_p.bind(x, rows, dimension_numbers=dn, slice_sizes=sizes, mode="clip",
                        fill_value=None, indices_are_sorted=False, unique_indices=False)
    return out, 0


def _dynamic_update_slice_batching(axis, args, dims):
    (x, update, *starts), (x_dim, u_dim, *s_dims) = args, dims
    size = axis.size
    if all(d is not_mapped for d in s_dims):
        # operand and update share a batch dim, written whole from 0
        dim = u_dim if x_dim is not_mapped else x_dim
        x, update = bdim_to(x, x_dim, dim, size), bdim_to(update, u_dim, dim, size)
        starts = _insert_at(tuple(starts), dim, _zero_start(starts))
        return dynamic_update_slice_p.bind(x, update, *starts), dim
    if x_dim is not_mapped:
        x, x_dim = broadcast_batched(x, size, 0), 0
    update = bdim_to(update, u_dim, 0, size)
    shape = aval_of(x).shape
    u_shape = aval_of(update).shape[1:]
    his = [n - k for n, k in zip(shape[:x_dim] + shape[x_dim + 1:], u_shape, strict=True)]
    rows = _start_rows(starts, s_dims, his, size)
    r = len(u_shape)
    # one window per example, each in its own example of the operand: unique positions;
    # scatter's "clip" clamps each start to [0, dim - size], as dynamic_update_slice does
    dn = ScatterDimensionNumbers(
        update_window_dims=tuple(range(1, r + 1)), inserted_window_dims=(),
        scatter_dims_to_operand_dims=tuple(d for d in range(r + 1) if d != x_dim),
        operand_batching_dims=(x_dim,), scatter_indices_batching_dims=(0,))
    out = scatter_p.bind(x, rows, update, dimension_numbers=dn, mode="clip",
                         indices_are_sorted=False, unique_indices=True)
    return out, x_dim


dynamic_slice_p.def_batching(_dynamic_slice_batching)
dynamic_update_slice_p.def_batching(_dynamic_update_slice_batching)

__all__ = []
