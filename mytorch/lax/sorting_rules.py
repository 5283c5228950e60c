"""Derivative and batching rules of sort and top_k (defined in sorting.py).

As in JAX, a sort permutes its operands, so each output's tangent is the operand's tangent
gathered with the same permutation: sort carries an iota along to learn it, and top_k
returns it as its indices. Index outputs (and other integer or bool outputs) have zero
tangents. The gathers are lax operations, so the rules differentiate again. Batching (at
the end) puts every sort operand's batch dim in one place, and keeps top_k's off the last
axis.
"""

import numpy as np

from mytorch.core.ad_util import is_differentiable
from mytorch.core.trace import aval_of
from mytorch.lax import sorting as so
from mytorch.lax import structural as st
from mytorch.lax._ad import Zero, zero_out
from mytorch.lax._batching import bdim_to, moveaxis, not_mapped
from mytorch.lax.indexing import take_along_axis


def _no_tangent(t, out):
    """Whether `out`'s tangent is a symbolic zero: no input tangent, an integer or bool
    output, or an empty one (a gather from an empty operand is not even valid)."""
    aval = aval_of(out)
    return type(t) is Zero or not is_differentiable(aval) or aval.size == 0


def _index_dtype(n):
    return np.int32 if n < np.iinfo(np.int32).max else np.int64


def _sort_jvp(primals, tangents, *, dimension, is_stable, num_keys):
    shape = aval_of(primals[0]).shape
    iota = st.broadcasted_iota(_index_dtype(shape[dimension]), shape, dimension)
    # the iota rides along as a payload: it does not change the order, and comes out as
    # the permutation that was applied
    *outs, perm = so.sort_p.bind(*primals, iota, dimension=dimension, is_stable=is_stable,
                                 num_keys=num_keys)
    tangents_out = [
        zero_out(out) if _no_tangent(t, out) else take_along_axis(t, perm, dimension)
        for out, t in zip(outs, tangents, strict=True)
    ]
    return outs, tangents_out


so.sort_p.def_jvp(_sort_jvp)


def _top_k_jvp(primals, tangents, *, k):
    (x,), (t,) = primals, tangents
    values, indices = so.top_k_p.bind(x, k=k)
    if _no_tangent(t, values):
        return [values, indices], [zero_out(values), zero_out(indices)]
    return [values, indices], [take_along_axis(t, indices, aval_of(x).ndim - 1),
                               zero_out(indices)]


so.top_k_p.def_jvp(_top_k_jvp)


# ---- batching -----------------------------------------------------------------------------
def _sort_batching(axis, args, dims, *, dimension, is_stable, num_keys):
    """Operands sort together, so they must share a shape: every operand gets its batch
    dim at the first batched operand's position (unbatched ones are broadcast there), and
    the sort dimension is renumbered past it."""
    target = next(d for d in dims if d is not not_mapped)
    xs = [bdim_to(x, d, target, axis.size) for x, d in zip(args, dims, strict=True)]
    outs = so.sort_p.bind(*xs, dimension=dimension + (dimension >= target),
                          is_stable=is_stable, num_keys=num_keys)
    return outs, [target] * len(outs)


def _top_k_batching(axis, args, dims, *, k):
    """top_k works on the last axis, which must stay the example's last axis: a batch dim
    found there moves to the front."""
    (x,), (d,) = args, dims
    if d == aval_of(x).ndim - 1:
        x, d = moveaxis(x, d, 0), 0
    values, indices = so.top_k_p.bind(x, k=k)
    return [values, indices], [d, d]


so.sort_p.def_batching(_sort_batching)
so.top_k_p.def_batching(_top_k_batching)
