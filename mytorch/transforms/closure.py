"""Closure conversion: trace a Python function to a jaxpr whose captured values are
explicit inputs, so that call-like primitives can pass them as operands (and enclosing
transformations see them)."""

from mytorch.core.jaxpr import Jaxpr
from mytorch.core.staging import trace_to_jaxpr


def trace_closed_over(fun, in_avals, name):
    """Trace `fun(*values) -> list` at `in_avals`.

    Returns (jaxpr, consts): `jaxpr` has no constvars; its invars are the captured values
    (`consts`, in order) followed by the arguments.
    """
    closed = trace_to_jaxpr(fun, in_avals, name)
    j = closed.jaxpr
    return Jaxpr([], [*j.constvars, *j.invars], j.eqns, j.outvars, j.debug_name), closed.consts
