"""Dead-code elimination over jaxprs."""

from mytorch.core.jaxpr import Jaxpr, Var


def dce_jaxpr(jaxpr):
    """`jaxpr` without the equations whose results no output needs. Primitives are pure,
    so any unused equation can go."""
    live = {v for v in jaxpr.outvars if type(v) is Var}
    kept = []
    for eqn in reversed(jaxpr.eqns):
        if any(type(v) is Var and v in live for v in eqn.outvars):
            kept.append(eqn)
            live.update(v for v in eqn.invars if type(v) is Var)
    kept.reverse()
    return Jaxpr(jaxpr.constvars, jaxpr.invars, kept, jaxpr.outvars, jaxpr.debug_name)
