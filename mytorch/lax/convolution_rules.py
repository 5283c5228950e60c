"""Derivative rules of the windowed primitives (defined in convolution.py).

conv_general_dilated is bilinear (linear in each operand separately, not jointly, so it is
not marked linear): its JVP applies the primitive to each operand's tangent with the other
operand's primal, and its transpose rule handles one linear operand, as JAX's
_conv_general_dilated_transpose_lhs/_rhs do:

  * w.r.t. lhs: a convolution of the cotangent with the spatially reversed kernel (its O
    and I dims swapped), the forward strides becoming the input dilation and the forward
    input dilation the strides, padded so the result has the lhs's shape;
  * w.r.t. rhs: a convolution of lhs with the cotangent as kernel (batch and feature dims
    swapped), the forward strides becoming the kernel dilation;

feature groups of the forward convolution become batch groups of the rhs transpose (and
the reverse), after moving the group axis of the kernel between its O and I dims for the
lhs transpose.

reduce_window_sum is linear; its transpose pads the cotangent (interior padding undoes the
strides) and sums it over the same windows. reduce_window_max/min have no
select_and_gather_add primitive here: their JVP visits the window taps in row-major order
(one strided slice of the padded operand each) and keeps, per window, the tangent at the
first tap holding the extreme value. Rules use lax operations only, so they differentiate
again.

Batching folds the vmapped dim into one the convolution already maps over (lhs batch,
kernel output features, or feature/batch groups when both operands are batched), so a
batched convolution is one convolution plus reshapes; window reductions give the batch dim
a window of 1.
"""

import itertools
import math

from mytorch.core.ad_util import is_differentiable
from mytorch.core.aval import ShapedArray
from mytorch.core.trace import aval_of
from mytorch.lax import elementwise as _ew
from mytorch.lax._ad import (
    Zero,
    defjvp_bilinear,
    deflinear,
    is_undefined,
    to_aval,
    zero_out,
)
from mytorch.lax.convolution import (
    ConvDimensionNumbers,
    conv_general_dilated_p,
    reduce_window_max_p,
    reduce_window_min_p,
    reduce_window_sum_p,
)
from mytorch.lax.structural import full_like, pad, reshape, rev, slice, transpose

__all__ = []


def _dilate(n, r):
    return 0 if n == 0 else (n - 1) * r + 1


def _reshape_axis_out_of(src, size1, x):
    """Split dim `src` of `x` into (size1, size // size1)."""
    shape = list(aval_of(x).shape)
    shape[src:src + 1] = [size1, shape[src] // size1]
    return reshape(x, tuple(shape))


def _reshape_axis_into(src, dst, x):
    """Merge dim `src` of `x` into dim `dst` (numbered after removing `src`), `src` being
    the major part."""
    shape = aval_of(x).shape
    perm = [i for i in range(len(shape)) if i != src]
    perm.insert(dst, src)
    new_shape = [shape[i] for i in range(len(shape)) if i != src]
    new_shape[dst] *= shape[src]
    if perm != list(range(len(shape))):
        x = transpose(x, tuple(perm))
    return reshape(x, tuple(new_shape))


def _spec_transpose(spec):
    return (spec[1], spec[0]) + tuple(spec[2:])


def _take(shape, dims):
    return [shape[d] for d in dims]


# ---- conv_general_dilated ----------------------------------------------------------------
def _vjp_lhs_padding(in_shape, window, strides, out_shape, padding, lhs_dilation,
                     rhs_dilation):
    """Padding of the dilated cotangent so that sliding the dilated window over it with
    stride lhs_dilation gives exactly `in_shape`."""
    pads = []
    for n, w, s, m, (lo, _), ld, rd in zip(in_shape, window, strides, out_shape, padding,
                                           lhs_dilation, rhs_dilation, strict=True):
        before = _dilate(w, rd) - lo - 1
        after = _dilate(n, ld) + _dilate(w, rd) - 1 - _dilate(m, s) - before
        pads.append((before, after))
    return tuple(pads)


def _vjp_rhs_padding(in_shape, window, strides, out_shape, padding, lhs_dilation,
                     rhs_dilation):
    """Padding of the (dilated) lhs so that sliding the stride-dilated cotangent over it
    with stride rhs_dilation gives exactly the kernel's spatial shape."""
    pads = []
    for n, w, s, m, (lo, _), ld, rd in zip(in_shape, window, strides, out_shape, padding,
                                           lhs_dilation, rhs_dilation, strict=True):
        hi = (_dilate(m, s) - _dilate(n, ld)) + (_dilate(w, rd) - lo - 1)
        pads.append((lo, hi))
    return tuple(pads)


def _conv_transpose_lhs(ct, lhs_aval, rhs, *, window_strides, padding, lhs_dilation,
                        rhs_dilation, dimension_numbers, feature_group_count,
                        batch_group_count, precision, preferred_element_type):
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    rhs_shape = aval_of(rhs).shape
    groups = feature_group_count
    if feature_group_count > 1 or batch_group_count > 1:
        # the group axis leaves the kernel's O dim and becomes the major part of its I dim
        # (which the transposed convolution reads as its output features)
        g = max(feature_group_count, batch_group_count)
        rhs = _reshape_axis_out_of(rhs_spec[0], g, rhs)
        rhs = _reshape_axis_into(rhs_spec[0], rhs_spec[1], rhs)
        groups = g
    trans_dnums = ConvDimensionNumbers(out_spec, _spec_transpose(rhs_spec), lhs_spec)
    pads = _vjp_lhs_padding(
        _take(lhs_aval.shape, lhs_spec[2:]), _take(rhs_shape, rhs_spec[2:]), window_strides,
        _take(aval_of(ct).shape, out_spec[2:]), padding, lhs_dilation, rhs_dilation)
    out = conv_general_dilated_p.bind(
        ct, rev(rhs, tuple(rhs_spec[2:])), window_strides=lhs_dilation, padding=pads,
        lhs_dilation=window_strides, rhs_dilation=rhs_dilation,
        dimension_numbers=trans_dnums, feature_group_count=groups, batch_group_count=1,
        precision=precision, preferred_element_type=preferred_element_type)
    if batch_group_count > 1:
        # the batch groups came out as the major part of the feature dim: move them back
        out = _reshape_axis_out_of(lhs_spec[1], batch_group_count, out)
        out = _reshape_axis_into(lhs_spec[1], lhs_spec[0], out)
    return to_aval(out, lhs_aval)


def _conv_transpose_rhs(ct, lhs, rhs_aval, *, window_strides, padding, lhs_dilation,
                        rhs_dilation, dimension_numbers, feature_group_count,
                        batch_group_count, precision, preferred_element_type):
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    # feature groups of the forward pass are batch groups here, and the reverse
    fgc, bgc = batch_group_count, feature_group_count
    trans_dnums = ConvDimensionNumbers(_spec_transpose(lhs_spec), _spec_transpose(out_spec),
                                       _spec_transpose(rhs_spec))
    pads = _vjp_rhs_padding(
        _take(aval_of(lhs).shape, lhs_spec[2:]), _take(rhs_aval.shape, rhs_spec[2:]),
        window_strides, _take(aval_of(ct).shape, out_spec[2:]), padding, lhs_dilation,
        rhs_dilation)
    out = conv_general_dilated_p.bind(
        lhs, ct, window_strides=rhs_dilation, padding=pads, lhs_dilation=lhs_dilation,
        rhs_dilation=window_strides, dimension_numbers=trans_dnums, feature_group_count=fgc,
        batch_group_count=bgc, precision=precision,
        preferred_element_type=preferred_element_type)
    return to_aval(out, rhs_aval)


def _conv_transpose(ct, lhs, rhs, **params):
    if is_undefined(lhs) and is_undefined(rhs):
        raise TypeError("conv_general_dilated: cannot transpose a convolution of two linear "
                        "values (it is linear in each operand separately, not jointly)")
    if is_undefined(lhs):
        if lhs.aval.size == 0 or aval_of(ct).size == 0:
            return [Zero(lhs.aval), None]  # nothing reaches the output
        return [_conv_transpose_lhs(ct, lhs.aval, rhs, **params), None]
    if rhs.aval.size == 0 or aval_of(ct).size == 0:
        return [None, Zero(rhs.aval)]
    return [None, _conv_transpose_rhs(ct, lhs, rhs.aval, **params)]


defjvp_bilinear(conv_general_dilated_p)
conv_general_dilated_p.def_transpose(_conv_transpose)


# ---- reduce_window_sum -------------------------------------------------------------------
def _reduce_window_sum_transpose(ct, operand, *, window_dimensions, window_strides, padding,
                                 base_dilation, window_dilation):
    in_shape = operand.aval.shape
    if operand.aval.size == 0 or aval_of(ct).size == 0:
        return [Zero(operand.aval)]
    pads = _vjp_lhs_padding(in_shape, window_dimensions, window_strides, aval_of(ct).shape,
                            padding, base_dilation, window_dilation)
    # interior padding puts each cotangent back at its window's start (undoing the
    # strides); then every input element sums the windows that covered it
    config = tuple((lo, hi, s - 1) for (lo, hi), s in zip(pads, window_strides, strict=True))
    padded = pad(ct, 0, config)
    ones = (1,) * len(in_shape)
    out = reduce_window_sum_p.bind(
        padded, window_dimensions=window_dimensions, window_strides=base_dilation,
        padding=((0, 0),) * len(in_shape), base_dilation=ones, window_dilation=window_dilation)
    return [out]


deflinear(reduce_window_sum_p, _reduce_window_sum_transpose)


# ---- reduce_window_max / reduce_window_min ------------------------------------------------
def _chooser_jvp(prim, better, identity):
    """JVP of a window max/min: per window, the tangent at the first tap (in row-major
    window order) holding the extreme value. `better(a, b)` is True where a strictly beats
    b; `identity` is the padding value."""

    def rule(primals, tangents, *, window_dimensions, window_strides, padding, base_dilation,
             window_dilation):
        (x,), (t,) = primals, tangents
        ans = prim.bind(x, window_dimensions=window_dimensions, window_strides=window_strides,
                        padding=padding, base_dilation=base_dilation,
                        window_dilation=window_dilation)
        out_aval = aval_of(ans)
        if type(t) is Zero or not is_differentiable(out_aval):
            return ans, zero_out(ans)
        if out_aval.size == 0:
            return ans, Zero(out_aval)
        if out_aval.ndim == 0:  # a window over no dims: the operand itself
            return ans, to_aval(t, out_aval)
        config = tuple((lo, hi, b - 1) for (lo, hi), b in zip(padding, base_dilation,
                                                              strict=True))
        # padding and dilation holes hold the identity, so they never win (and give a
        # zero tangent only when a window holds nothing else)
        xp = pad(x, identity, config)
        tp = pad(t, 0, config)
        out_shape = out_aval.shape
        best = best_t = None
        for tap in itertools.product(*(range(w) for w in window_dimensions)):
            start = tuple(k * r for k, r in zip(tap, window_dilation, strict=True))
            limit = tuple(s0 + (m - 1) * s + 1 for s0, m, s in zip(start, out_shape,
                                                                  window_strides, strict=True))
            xs = slice(xp, start, limit, window_strides)
            ts = slice(tp, start, limit, window_strides)
            if best is None:
                best, best_t = xs, ts
                continue
            # strict comparison: the first tap holding the extreme value keeps it
            wins = better(xs, best)
            best = _ew.select(wins, xs, best)
            best_t = _ew.select(wins, ts, best_t)
        return ans, to_aval(best_t, out_aval)

    prim.def_jvp(rule)
    return rule


_chooser_jvp(reduce_window_max_p, _ew.gt, -math.inf)
_chooser_jvp(reduce_window_min_p, _ew.lt, math.inf)


# ---- batching ----------------------------------------------------------------------------
# conv_general_dilated: the vmap batch is folded into a dim the convolution already maps
# over, and split out of the output again (operand specs keep their ranks, so the dimension
# numbers do not change). Sizes of grouped dims are group-major (group, size / groups), as
# the kernel reads them; a folded batch goes right after the group index so that groups
# stay contiguous:
#   * lhs only: into the lhs batch dim N (after the batch group index) -> output N;
#   * rhs only: into the kernel's output features O (after the feature/batch group index)
#     -> output features;
#   * both, batch_group_count == 1: into lhs features C (major) with feature_group_count
#     multiplied by B, and into O (major) -> output features;
#   * both, batch_group_count > 1: into N (major) and O (major) with batch_group_count
#     multiplied by B (each example's batch groups pair with its kernel groups).
def _split_dim(x, dim, sizes):
    """Dim `dim` of `x` split into dims of `sizes` (explicit, so that 0-sized dims work)."""
    shape = list(aval_of(x).shape)
    shape[dim:dim + 1] = list(sizes)
    return reshape(x, tuple(shape))


def _fold_after_group(x, bdim, dim, groups):
    """Fold batch dim `bdim` of `x` into `dim` (numbered without the batch dim), which is
    group-major with `groups` groups: (groups, B, size / groups) in that order."""
    if groups == 1:
        return _reshape_axis_into(bdim, dim, x)
    d = dim + (dim >= bdim)  # `dim` in x's numbering
    size = aval_of(x).shape[d]
    x = _split_dim(x, d, (groups, size // groups))
    bdim = bdim + (bdim > d)
    x = _reshape_axis_into(bdim, dim + 1, x)  # B becomes the major part of size / groups
    return _reshape_axis_into(dim, dim, x)


def _unfold_after_group(x, dim, groups, size, b):
    """Split dim `dim` of `x` ((groups, B, size / groups) merged) into B at `dim` and the
    unbatched dim (size `size`) at `dim + 1`."""
    if groups == 1:
        return _split_dim(x, dim, (b, size))
    x = _split_dim(x, dim, (groups, b, size // groups))
    return _reshape_axis_into(dim, dim + 1, x)  # the group index back into size / groups


def _unbatched_out_aval(args, dims, params):
    """The abstract result of one example (the operands without their batch dims)."""
    avals = []
    for x, d in zip(args, dims, strict=True):
        a = aval_of(x)
        if d is not None:
            a = ShapedArray(a.shape[:d] + a.shape[d + 1:], a.dtype, a.weak_type)
        avals.append(a)
    return conv_general_dilated_p.abstract_eval(*avals, **params)[0]


def _conv_batching(axis, args, dims, **params):
    lhs, rhs = args
    lbd, rbd = dims
    lhs_spec, rhs_spec, out_spec = params["dimension_numbers"]
    fgc, bgc = params["feature_group_count"], params["batch_group_count"]
    b = axis.size
    out_aval = _unbatched_out_aval(args, dims, params)
    if b == 0:  # no examples (and a group count of 0 would be invalid): an empty result
        return full_like(out_aval, 0, shape=(0, *out_aval.shape)), 0
    out_shape = out_aval.shape
    if lbd is not None and rbd is not None:
        if bgc == 1:
            lhs = _reshape_axis_into(lbd, lhs_spec[1], lhs)
            params = dict(params, feature_group_count=b * fgc)
        else:
            lhs = _reshape_axis_into(lbd, lhs_spec[0], lhs)
            params = dict(params, batch_group_count=b * bgc)
        rhs = _reshape_axis_into(rbd, rhs_spec[0], rhs)
        out = conv_general_dilated_p.bind(lhs, rhs, **params)
        return _split_dim(out, out_spec[1], (b, out_shape[out_spec[1]])), out_spec[1]
    if lbd is not None:
        lhs = _fold_after_group(lhs, lbd, lhs_spec[0], bgc)
        out = conv_general_dilated_p.bind(lhs, rhs, **params)
        # the output batch is N / bgc: (B, N / bgc) once the group index is reduced away
        return _split_dim(out, out_spec[0], (b, out_shape[out_spec[0]])), out_spec[0]
    rhs = _fold_after_group(rhs, rbd, rhs_spec[0], fgc * bgc)
    out = conv_general_dilated_p.bind(lhs, rhs, **params)
    dim = out_spec[1]
    return _unfold_after_group(out, dim, fgc * bgc, out_shape[dim], b), dim


conv_general_dilated_p.def_batching(_conv_batching)


# reduce_window_*: the batch dim gets a trivial window (size 1, stride 1, no padding or
# dilation), so every example is reduced on its own by one call.
def _reduce_window_batching(prim):
    def rule(axis, args, dims, *, window_dimensions, window_strides, padding, base_dilation,
             window_dilation):
        (x,), (d,) = args, dims

        def ins(values, value):
            return values[:d] + (value,) + values[d:]

        out = prim.bind(x, window_dimensions=ins(window_dimensions, 1),
                        window_strides=ins(window_strides, 1), padding=ins(padding, (0, 0)),
                        base_dilation=ins(base_dilation, 1),
                        window_dilation=ins(window_dilation, 1))
        return out, d

    prim.def_batching(rule)
    return rule


for _prim in (reduce_window_sum_p, reduce_window_max_p, reduce_window_min_p):
    _reduce_window_batching(_prim)
