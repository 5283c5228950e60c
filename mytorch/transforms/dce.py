"""Dead-code elimination over jaxprs.

An equation stays when an output of the jaxpr needs one of its results, or when its
primitive is `effectful` (a debug callback must run even though nobody reads its result);
the operands of kept equations are live in turn. Sub-jaxprs held in params are left as
they are.
"""

from mytorch.core.jaxpr import ClosedJaxpr, Jaxpr, Var


def dce_jaxpr(jaxpr):
    """`jaxpr` (a Jaxpr) without the equations whose results no output needs, keeping
    effectful ones. Returns a new Jaxpr with the same constvars, invars and outvars.

    >>> import mytorch as mt, mytorch.numpy as mnp
    >>> closed = mt.make_jaxpr(lambda x: (mnp.sin(x), mnp.cos(x))[0])(mnp.ones(3))
    >>> len(closed.eqns), len(dce_jaxpr(closed.jaxpr).eqns)
    (2, 1)
    """
    live = {v for v in jaxpr.outvars if type(v) is Var}
    kept = []
    for eqn in reversed(jaxpr.eqns):
        if eqn.primitive.effectful or any(v in live for v in eqn.outvars):
            kept.append(eqn)
            live.update(v for v in eqn.invars if type(v) is Var)
    kept.reverse()
    return Jaxpr(jaxpr.constvars, jaxpr.invars, kept, jaxpr.outvars, jaxpr.debug_name)


def dce_closed(closed):
    """`dce_jaxpr` of a ClosedJaxpr that also drops the constants nothing reads.

    Returns:
      A new ClosedJaxpr with the same invars and outvars.
    """
    jaxpr = dce_jaxpr(closed.jaxpr)
    used = {v for v in jaxpr.outvars if type(v) is Var}
    for eqn in jaxpr.eqns:
        used.update(v for v in eqn.invars if type(v) is Var)
    pairs = [(v, c) for v, c in zip(jaxpr.constvars, closed.consts, strict=True) if v in used]
    jaxpr = Jaxpr([v for v, _ in pairs], jaxpr.invars, jaxpr.eqns, jaxpr.outvars,
                  jaxpr.debug_name)
    return ClosedJaxpr(jaxpr, [c for _, c in pairs])
