"""Derivative rules of the indexing primitives (defined in indexing.py).

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
from mytorch.lax._utils import weak_scalar
from mytorch.lax.elementwise import add, div, eq, mul, select, sub
from mytorch.lax.indexing import (
    GatherDimensionNumbers, ScatterDimensionNumbers, dynamic_slice_p, dynamic_update_slice_p,
    gather, gather_p, scatter, scatter_add, scatter_add_p, scatter_mul, scatter_mul_p,
    scatter_p,
)
from mytorch.lax.structural import broadcast_in_dim, full, full_like, iota, reshape
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
        raise NotImplementedError(
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

__all__ = []
