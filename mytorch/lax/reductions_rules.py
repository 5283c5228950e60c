"""Derivative and batching rules of the reductions (defined in reductions.py).

Conventions follow JAX:
  * reduce_sum and cumsum are linear; their transposes broadcast back to the operand's
    shape and run the cumulative sum the other way;
  * reduce_max/reduce_min average the tangent over every position equal to the result
    (ties share it equally);
  * reduce_prod differentiates a tree of pairwise products, and cumprod, cummax, cummin
    and cumlogsumexp differentiate a parallel prefix scan of their binary operation, so the
    derivatives are exact when the operand holds zeros (one or several) and at every order;
  * the logical reductions and argmax/argmin have zero derivative.

Rules are written with lax operations, so they differentiate again. Batching (at the end)
renumbers the reduced or scanned axes around the batch dimension, which stays in place.
"""

import math

from mytorch.core.ad_util import is_differentiable
from mytorch.core.trace import aval_of
from mytorch.lax import elementwise as ew
from mytorch.lax import reductions as red
from mytorch.lax import structural as st
from mytorch.lax._ad import Zero, defjvp_zero, deflinear, zero_out
from mytorch.lax._batching import shift_dims
from mytorch.lax.elementwise import add, convert_element_type, div, eq, exp, log, mul, select, sub
from mytorch.transforms.jvp import jvp_flat
from mytorch.transforms.simplify import same

__all__ = ["associative_scan"]


def _c(x, value):
    """A weakly typed 0-d constant of `x`'s dtype."""
    from mytorch.lax._utils import weak_scalar

    return weak_scalar(value, aval_of(x).dtype)


def _kept(ndim, axes):
    return tuple(i for i in range(ndim) if i not in axes)


def _no_tangent(t, ans):
    """Whether the rule can answer with a symbolic zero (no tangent, or integer results)."""
    return type(t) is Zero or not is_differentiable(aval_of(ans))


# ---- reduce_sum ----------------------------------------------------------------------------
def _reduce_sum_transpose(ct, x, *, axes):
    # every operand element feeds one sum: its cotangent is that sum's cotangent
    shape = x.aval.shape
    return [st.broadcast_in_dim(ct, shape, _kept(len(shape), axes))]


deflinear(red.reduce_sum_p, _reduce_sum_transpose)


# ---- reduce_max / reduce_min ---------------------------------------------------------------
def _chooser_jvp(prim):
    """JAX's _reduce_chooser_jvp_rule: the mean tangent over the positions of the extremum.

    An empty reduced axis or a NaN result gives a NaN tangent (0 / 0), as in JAX.
    """

    def rule(primals, tangents, *, axes):
        (x,), (t,) = primals, tangents
        ans = prim.bind(x, axes=axes)
        if _no_tangent(t, ans):
            return ans, zero_out(ans)
        shape = aval_of(x).shape
        at_extremum = eq(x, st.broadcast_in_dim(ans, shape, _kept(len(shape), axes)))
        indicators = convert_element_type(at_extremum, aval_of(t).dtype)
        counts = red.reduce_sum(indicators, axes)
        return ans, div(red.reduce_sum(mul(t, indicators), axes), counts)

    prim.def_jvp(rule)
    return rule


_chooser_jvp(red.reduce_max_p)
_chooser_jvp(red.reduce_min_p)


# ---- reduce_prod ---------------------------------------------------------------------------
def _product_tree(v):
    """The product of `v` over axis 0 (of size >= 1) by halving: pairwise products only,
    so differentiating it never divides by an element (exact with zeros)."""
    while v.shape[0] > 1:
        n = v.shape[0]
        half = n // 2
        prod = mul(st.slice_in_dim(v, 0, half), st.slice_in_dim(v, half, 2 * half))
        if n % 2:  # the odd one out rides along to the next level
            prod = st.concatenate([prod, st.slice_in_dim(v, 2 * half, n)], 0)
        v = prod
    return st.reshape(v, v.shape[1:])


def _reduce_prod_jvp(primals, tangents, *, axes):
    (x,), (t,) = primals, tangents
    ans = red.reduce_prod_p.bind(x, axes=axes)
    if _no_tangent(t, ans):
        return ans, zero_out(ans)
    shape = aval_of(x).shape
    kept = _kept(len(shape), axes)
    n = math.prod(shape[a] for a in axes)
    if n == 0:  # the empty product is the constant 1
        return ans, zero_out(ans)
    # the reduced axes, moved to the front and flattened into one
    flat_shape = (n, *(shape[i] for i in kept))

    def flatten(v):
        return st.reshape(st.transpose(v, tuple(axes) + kept), flat_shape)

    _, (t_out,) = jvp_flat(lambda v: [_product_tree(v)], [flatten(x)], [flatten(t)])
    return ans, t_out


red.reduce_prod_p.def_jvp(_reduce_prod_jvp)


# ---- zero derivatives ----------------------------------------------------------------------
for _p in (red.reduce_and_p, red.reduce_or_p, red.reduce_xor_p, red.argmax_p, red.argmin_p):
    defjvp_zero(_p)


# ---- cumulative reductions -----------------------------------------------------------------
def _cumsum_transpose(ct, x, *, axis, reverse):
    # each output sums a prefix, so each input's cotangent sums the matching suffix
    return [red.cumsum(ct, axis, reverse=not reverse)]


deflinear(red.cumsum_p, _cumsum_transpose)


def _interleave(even, odd, axis):
    """Elements of `even` at positions 0, 2, 4, ... and of `odd` at 1, 3, ... along `axis`
    (`even` has as many elements as `odd` or one more)."""
    n_odd = odd.shape[axis]
    head = st.slice_in_dim(even, 0, n_odd, axis=axis) if even.shape[axis] > n_odd else even
    pair_shape = (*odd.shape[:axis], n_odd, 1, *odd.shape[axis + 1:])
    pairs = st.concatenate([st.reshape(head, pair_shape), st.reshape(odd, pair_shape)],
                           axis + 1)
    out = st.reshape(pairs, (*odd.shape[:axis], 2 * n_odd, *odd.shape[axis + 1:]))
    if even.shape[axis] > n_odd:
        out = st.concatenate([out, st.slice_in_dim(even, n_odd, n_odd + 1, axis=axis)], axis)
    return out


def _prefix_scan(fn, x, axis):
    n = x.shape[axis]
    if n < 2:
        return x
    # combine neighbours (0, 1), (2, 3), ...; scanning those gives the odd positions
    pairs = fn(st.slice_in_dim(x, 0, n - 1, stride=2, axis=axis),
               st.slice_in_dim(x, 1, n, stride=2, axis=axis))
    odd = _prefix_scan(fn, pairs, axis)
    # each even position (past the first) extends the odd position before it
    rest = st.slice_in_dim(x, 2, n, stride=2, axis=axis)
    before = odd if n % 2 else st.slice_in_dim(odd, 0, odd.shape[axis] - 1, axis=axis)
    even = st.concatenate([st.slice_in_dim(x, 0, 1, axis=axis), fn(before, rest)], axis)
    return _interleave(even, odd, axis)


def associative_scan(fn, x, axis=0, reverse=False):
    """The inclusive prefix scan of `x` along `axis` under the associative binary `fn`
    (a parallel scan of depth O(log n) built from slices and elementwise `fn` calls: it
    differentiates with the rules of `fn` and of the structural primitives).

    Args:
      fn: an associative elementwise function of two arrays of one shape.
      x: an array of rank >= 1.
      axis: a non-negative axis of `x`.
      reverse: scan from the end of the axis.

    Returns:
      An array of `x`'s shape: element i combines elements 0..i (i..n-1 with `reverse`).
    """
    if reverse:
        return st.rev(_prefix_scan(fn, st.rev(x, (axis,)), axis), (axis,))
    return _prefix_scan(fn, x, axis)


def _logaddexp(a, b):
    """log(exp(a) + exp(b)) shifted by the larger operand, which the derivative treats as
    a constant (the expression is exact for any finite shift), so the derivatives are
    exp(a - out) and exp(b - out) at every order, ties included. Two -inf operands give
    -inf with a zero derivative rather than NaN."""
    m = ew.stop_gradient(ew.max(a, b))
    zeros = st.full_like(m, 0)
    shift = select(ew.is_finite(m), m, zeros)
    total = add(exp(sub(a, shift)), exp(sub(b, shift)))
    both_neg_inf = eq(m, _c(m, -math.inf))
    total = select(both_neg_inf, add(zeros, _c(m, 1)), total)
    return select(both_neg_inf, m, add(shift, log(total)))


def _cumulative_jvp(prim, combine):
    """JAX's rule: the tangent of `prim` is the JVP of a prefix scan of `combine`."""

    def rule(primals, tangents, *, axis, reverse):
        (x,), (t,) = primals, tangents
        ans = prim.bind(x, axis=axis, reverse=reverse)
        if _no_tangent(t, ans):
            return ans, zero_out(ans)
        _, (t_out,) = jvp_flat(lambda v: [associative_scan(combine, v, axis, reverse)],
                               [x], [t])
        return ans, t_out

    prim.def_jvp(rule)
    return rule


_cumulative_jvp(red.cumprod_p, mul)
_cumulative_jvp(red.cummax_p, ew.max)
_cumulative_jvp(red.cummin_p, ew.min)
_cumulative_jvp(red.cumlogsumexp_p, _logaddexp)


# ---- batching -----------------------------------------------------------------------------
# A reduction acts on each example independently: the batch dimension stays where it is
# and the reduced axes are renumbered around it.
def _reducer_batching(prim):
    """Reductions over `axes` (and argmax/argmin): the result's batch dim moves left by the
    number of reduced axes before it."""

    def rule(axis, args, dims, *, axes, **params):
        (x,), (d,) = args, dims
        out_dim = d - sum(a < d for a in axes)
        return prim.bind(x, axes=shift_dims(axes, d), **params), out_dim

    prim.def_batching(rule)
    return rule


def _cumulative_batching(prim):
    """Scans along one `axis` keep the shape: the batch dim stays put. (The primitive's
    parameter is called `axis`, so the rule names the batch axis `batch_axis`.)"""

    def rule(batch_axis, args, dims, *, axis, reverse):
        (x,), (d,) = args, dims
        return prim.bind(x, axis=axis + (axis >= d), reverse=reverse), d

    prim.def_batching(rule)
    return rule


for _p in (red.reduce_sum_p, red.reduce_prod_p, red.reduce_max_p, red.reduce_min_p,
           red.reduce_and_p, red.reduce_or_p, red.reduce_xor_p, red.argmax_p, red.argmin_p):
    _reducer_batching(_p)
for _p in (red.cumsum_p, red.cumprod_p, red.cummax_p, red.cummin_p, red.cumlogsumexp_p):
    _cumulative_batching(_p)


# ---- simplification (read by mytorch.transforms.simplify) ----------------------------------
def _reduce_simplify(eqn, defs):
    """A reduction over no axes -> its operand."""
    return same(eqn, eqn.invars[0]) if eqn.params["axes"] == () else None


for _p in (red.reduce_sum_p, red.reduce_prod_p, red.reduce_max_p, red.reduce_min_p,
           red.reduce_and_p, red.reduce_or_p, red.reduce_xor_p):
    _p.def_rule("simplify", _reduce_simplify)
