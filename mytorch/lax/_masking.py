"""Guards for control flow that vmap turns into "run everything, then select".

A batched predicate makes `cond`/`switch` evaluate every branch for every example and
`while_loop` keep running the body for examples that have finished; a select then keeps
each example's own result. The select alone is not enough for derivatives: an example
that did not take a branch (or has finished) still runs it, and where the branch's
derivative is infinite there (log(0), sqrt(0), 1/0, arcsin(1)), its zero cotangent times
that derivative is NaN, which the sum over examples (of an unbatched weight's cotangent)
spreads to all of them.

So the operands such an example feeds the branch are guarded:

    guarded = select_n(keep, stop_gradient(x), x)

equal to `x` in value, with a zero derivative where `keep` is false. Its JVP is
`select_n(keep, 0, x_dot)` and its transpose `select_n(keep, 0, ct)`, so whatever
non-finite values the unselected examples compute inside the branch, in the value, the
tangent or the cotangent, are cut off at both ends by selects, also when differentiated
again. (JAX's batched cond does the same.) Linear bodies (a loop's tangent step) guard
their linear inputs with zeros instead.

Where the batch axis is explicit (a batching rule's own select), the batched operands of
an example that skips the branch are moreover replaced by those of an example that takes
it (`substitute`), so that the branch computes nothing there that the examples taking it
do not also compute: no made-up NaN or inf in the values either (debug_nans stays quiet).
"""

from mytorch.core import dtypes
from mytorch.core.trace import aval_of

__all__ = ["fed_dims", "feed", "first_true", "guard", "guard_linear", "keep_like",
           "may_differentiate", "substitute"]


def may_differentiate(x):
    """Whether a derivative may be taken with respect to `x`, a value of the trace that a
    batching rule emits to: a float that an enclosing jvp carries, or that is staged (a
    jit, checkpoint or loop body that may be differentiated later). Concrete values, also
    seen through other vmaps, never are."""
    from mytorch.transforms.jvp import look_through

    if not dtypes.is_float(aval_of(x).dtype):
        return False
    value, differentiated = look_through(x)
    return differentiated or value is None


def keep_like(keep, x):
    """The bool `keep` (0-d, or the leading dims of `x`) broadcast to `x`'s shape."""
    from mytorch.lax.structural import broadcast_in_dim

    k_shape, shape = aval_of(keep).shape, aval_of(x).shape
    if k_shape == () or k_shape == shape:
        return keep
    return broadcast_in_dim(keep, shape, tuple(range(len(k_shape))))


def guard(keep, x):
    """`x` where `keep` holds, else `x` with a zero derivative (same value); non-float `x`
    is returned as it is."""
    from mytorch.lax.elementwise import select_n, stop_gradient

    if not dtypes.is_float(aval_of(x).dtype):
        return x
    return select_n(keep_like(keep, x), stop_gradient(x), x)


def guard_linear(keep, x):
    """`x` where `keep` holds, else zero: the guard of a linear input (whose transpose
    cannot pass through stop_gradient)."""
    from mytorch.lax.elementwise import select_n
    from mytorch.lax.structural import full

    a = aval_of(x)
    if not dtypes.is_float(a.dtype):
        return x
    return select_n(keep_like(keep, x), full(a.shape, 0, a.dtype), x)


def first_true(keep):
    """The first index where the (B,) bool `keep` holds (B where it holds nowhere): an
    int32 scalar."""
    import numpy as np

    from mytorch.lax.elementwise import select_n
    from mytorch.lax.reductions import reduce_min
    from mytorch.lax.structural import full, iota

    n = aval_of(keep).shape[0]
    i32 = np.dtype(np.int32)
    return reduce_min(select_n(keep, full((n,), n, i32), iota(i32, n)), (0,))


def substitute(keep, x, donor):
    """`x` (batched along 0) where the (B,) `keep` holds, else example `donor`'s value
    (clamped into range) with a zero derivative."""
    from mytorch.lax.elementwise import select_n, stop_gradient
    from mytorch.lax.indexing import dynamic_index_in_dim
    from mytorch.lax.structural import broadcast_in_dim

    a = aval_of(x)
    if a.shape[0] == 0:  # no examples: none to substitute
        return x
    src = stop_gradient(x) if dtypes.is_float(a.dtype) else x
    one = dynamic_index_in_dim(src, donor, 0, keepdims=False)
    return select_n(keep_like(keep, x), broadcast_in_dim(one, a.shape, tuple(range(1, a.ndim))),
                    x)


def feed(keep, xs, dims, differentiated, size):
    """The operands `xs` (batch dims `dims`, None for unbatched) of a branch or body that
    every example runs but only those where the (B,) `keep` holds use: a batched operand
    takes, where `keep` is false, the value of an example where it holds (`substitute`);
    an unbatched one flagged in `differentiated` is broadcast and guarded; the others are
    passed as they are. Operands that change are batched along 0 (see `fed_dims`)."""
    from mytorch.lax._batching import bdim_at_front

    donor = first_true(keep)
    return [substitute(keep, bdim_at_front(x, d, size), donor) if d is not None else
            guard(keep, bdim_at_front(x, d, size)) if g else x
            for x, d, g in zip(xs, dims, differentiated, strict=True)]


def fed_dims(dims, differentiated):
    """The batch dims of `feed`'s results."""
    return [0 if d is not None or g else d for d, g in zip(dims, differentiated, strict=True)]
