"""What an example feeds control flow that vmap turns into "run everything, then select".

A batched predicate makes `cond`/`switch` evaluate every branch for every example and
`while_loop` keep running the body for examples that have finished; a select then keeps
each example's own result. The select alone is not enough: an example that did not take a
branch (or has finished) would run it on its own operands, where the branch may be
undefined (log(-1), sqrt(-1): NaN values) or have an infinite derivative (log(0),
sqrt(0), 1/0, arcsin(1)); its zero cotangent times that derivative is NaN, which the sum
over examples (an unbatched weight's cotangent) spreads to every gradient.

So such an example feeds the branch the batched operands of an example that takes it:

    fed = select_n(keep, broadcast(stop_gradient(x)[donor]), x)      # `feed`

and computes exactly what that example computes, values and derivatives, which are finite
where the result is; its derivative is zero, and the output select drops what it
computes. Unbatched operands (shared weights) need nothing: they are the same for every
example. A donor always exists where `feed` is used: the select path of a cond runs when
examples disagree (of more than two branches, one that no example takes is not run), and
a loop body runs while some example is running.

Where no other example can be reached (a loop run under a vmap one example at a time: the
stacked reverse form), the operands are guarded instead, as JAX's batched cond does:

    guarded = select_n(keep, stop_gradient(x), x)                    # `guard`

equal to `x`, with JVP `select_n(keep, 0, x_dot)` and transpose `select_n(keep, 0, ct)`:
the non-finite values an unselected example computes are cut off at both ends by selects,
also when differentiated again. Linear bodies (a loop's tangent step) guard their linear
inputs with zeros (`guard_linear`).
"""

import numpy as np

from mytorch.core import dtypes
from mytorch.core.trace import aval_of
from mytorch.lax._batching import bdim_at_front
from mytorch.lax.elementwise import select_n, stop_gradient
from mytorch.lax.indexing import dynamic_index_in_dim
from mytorch.lax.reductions import reduce_min
from mytorch.lax.structural import broadcast_in_dim, full, iota

__all__ = ["fed_dims", "feed", "first_true", "guard", "guard_linear", "keep_like",
           "substitute"]


def keep_like(keep, x):
    """The bool `keep` (0-d, or the leading dims of `x`) broadcast to `x`'s shape."""
    k_shape, shape = aval_of(keep).shape, aval_of(x).shape
    if k_shape == () or k_shape == shape:
        return keep
    return broadcast_in_dim(keep, shape, tuple(range(len(k_shape))))


def guard(keep, x):
    """`x` where `keep` holds, else `x` with a zero derivative (same value); non-float `x`
    is returned as it is."""
    if not dtypes.is_inexact(aval_of(x).dtype):
        return x
    return select_n(keep_like(keep, x), stop_gradient(x), x)


def guard_linear(keep, x):
    """`x` where `keep` holds, else zero: the guard of a linear input (whose transpose
    cannot pass through stop_gradient)."""
    a = aval_of(x)
    if not dtypes.is_inexact(a.dtype):
        return x
    return select_n(keep_like(keep, x), full(a.shape, 0, a.dtype), x)


def first_true(keep):
    """The first index where the (B,) bool `keep` holds (B where it holds nowhere): an
    int32 scalar."""
    n = aval_of(keep).shape[0]
    i32 = np.dtype(np.int32)
    return reduce_min(select_n(keep, full((n,), n, i32), iota(i32, n)), (0,))


def substitute(keep, x, donor):
    """`x` (batched along 0) where the (B,) `keep` holds, else example `donor`'s value
    (clamped into range) with a zero derivative."""
    a = aval_of(x)
    if a.shape[0] == 0:  # no examples: none to substitute
        return x
    src = stop_gradient(x) if dtypes.is_inexact(a.dtype) else x
    one = dynamic_index_in_dim(src, donor, 0, keepdims=False)
    return select_n(keep_like(keep, x), broadcast_in_dim(one, a.shape, tuple(range(1, a.ndim))),
                    x)


def feed(keep, xs, dims, size):
    """The operands `xs` (batch dims `dims`, None for unbatched) of a branch or body that
    every example runs but only those where the (B,) `keep` holds use: a batched operand
    takes, where `keep` is false, the value of an example where it holds (`substitute`),
    batched along 0; an unbatched one is passed as it is. Then an example that skips the
    branch computes exactly what one that takes it computes, values and derivatives
    (finite where theirs are), and its zero cotangent makes no NaN of them."""
    donor = first_true(keep)
    return [x if d is None else substitute(keep, bdim_at_front(x, d, size), donor)
            for x, d in zip(xs, dims, strict=True)]


def fed_dims(dims):
    """The batch dims of `feed`'s results."""
    return [None if d is None else 0 for d in dims]
