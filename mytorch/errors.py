"""Every error type a mytorch user can catch.

This module imports nothing from mytorch, so every layer may raise these.
"""

import numpy as np


class MytorchError(Exception):
    """Base class of the errors mytorch defines itself."""


class ConcretizationTypeError(MytorchError, TypeError):
    """A concrete Python value was needed from an abstract (traced) value.

    Raised by `bool()`, `int()`, `float()`, `.item()`, `if` and friends on a traced value.
    Use `lax.cond` / `lax.while_loop`, or mark the argument static with `static_argnums`.
    """


class TracedSliceError(ConcretizationTypeError, IndexError):
    """A slice bound (`x[:n]`) was traced: the result's shape would depend on its value.

    Both a ConcretizationTypeError (a TypeError) and an IndexError, JAX's class for it. Use
    `lax.dynamic_slice(x, starts, sizes)` for a slice of static size at a traced start.
    """


class NonConcreteBooleanIndexError(MytorchError, IndexError):
    """A boolean mask index was traced: the result's shape would depend on its values.

    Use `mnp.where(mask, x, fill)` to keep the shape, or `mnp.nonzero(mask, size=n)` for a
    fixed number of indices.
    """


class AxisError(MytorchError, np.exceptions.AxisError):
    """An axis argument is out of bounds for the array's rank (`axis=2` of a 2-D array).

    NumPy's `AxisError`, so it is both a `ValueError` and an `IndexError`: `except` clauses
    ported from NumPy or from JAX (which raises either, depending on the function) match.
    """

    def __init__(self, message):
        super().__init__(message)


class UnexpectedTracerError(MytorchError):
    """A traced value was used after the transformation that created it ended."""


class TracerArrayConversionError(MytorchError, TypeError):
    """A traced value was converted to a NumPy array (`np.asarray(tracer)`)."""


class JaxprTypeError(MytorchError, TypeError):
    """`check_jaxpr` found an ill-typed program."""


class NonHashableStaticArgError(MytorchError, ValueError):
    """A static argument of a transformed function is not hashable."""


class X64Warning(UserWarning):
    """A 64-bit dtype was requested while `enable_x64` is off; 32 bits are used instead."""


class RetraceWarning(UserWarning):
    """A jitted function was traced again; the message says which argument changed."""


class CheckpointError(MytorchError, ValueError):
    """A checkpoint file is truncated, corrupted, or does not match the structure asked for.

    The message names the file and what is wrong (for `like=`, the first mismatched leaf by
    its key path).
    """


class CollectiveError(MytorchError, RuntimeError):
    """Replicas of a pmap could not complete a collective: their schedules of collectives
    differ, a peer failed, or a call timed out. The message names the rank and the
    collective."""
