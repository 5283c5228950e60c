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
"""

from mytorch.core import dtypes
from mytorch.core.trace import aval_of

__all__ = ["guard", "guard_linear", "keep_like", "may_differentiate"]


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
