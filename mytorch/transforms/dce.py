"""Dead-code elimination over jaxprs.

An equation stays when an output of the jaxpr needs one of its results, or when it has
an effect: its primitive is `effectful` (a debug callback must run even though nobody
reads its result), or it is a call (a primitive with an `inline_param`) whose jaxpr holds
an effectful equation. The operands of kept equations are live in turn.

A primitive may register a "dce" rule, `rule(eqn, used_outputs) -> eqn`, called for a
kept equation with a result nobody reads; the equation it returns has only the used
outputs, and operands that become dead are dropped from it. Call primitives (see
`call_rules`) return the call of their jaxpr pruned to the used outputs, without the
operands that pruned jaxpr no longer reads. Other sub-jaxprs held in params are not
pruned here: `optimize` runs `dce_jaxpr` on each, which keeps every output (a loop body's
carries), so their signatures never change.
"""

from mytorch.core.jaxpr import ClosedJaxpr, Jaxpr, sub_jaxprs


def dce_jaxpr(jaxpr):
    """`jaxpr` (a Jaxpr) without the equations whose results no output needs, keeping
    effectful ones. Returns a new Jaxpr with the same constvars, invars and outvars.

    >>> import mytorch as mt, mytorch.numpy as mnp
    >>> closed = mt.make_jaxpr(lambda x: (mnp.sin(x), mnp.cos(x))[0])(mnp.ones(3))
    >>> len(closed.eqns), len(dce_jaxpr(closed.jaxpr).eqns)
    (2, 1)
    """
    kept, _ = dce_live(jaxpr)
    return Jaxpr(jaxpr.constvars, jaxpr.invars, kept, jaxpr.outvars, jaxpr.debug_name)


def dce_closed(closed):
    """`dce_jaxpr` of a ClosedJaxpr that also drops the constants nothing reads.

    Returns:
      A new ClosedJaxpr with the same invars and outvars.
    """
    jaxpr = closed.jaxpr
    kept, live = dce_live(jaxpr)
    pairs = [(v, c) for v, c in zip(jaxpr.constvars, closed.consts, strict=True) if v in live]
    jaxpr = Jaxpr([v for v, _ in pairs], jaxpr.invars, kept, jaxpr.outvars, jaxpr.debug_name)
    return ClosedJaxpr(jaxpr, [c for _, c in pairs])


def dce_live(jaxpr):
    """(the equations of `jaxpr` to keep, in order, some replaced by their "dce" rule; the
    set of values they and the outputs read)."""
    live = set(jaxpr.outvars)  # Literals and DropVars in the set are harmless: never bound
    kept = []
    for eqn in reversed(jaxpr.eqns):
        outs = eqn.outvars
        if len(outs) == 1:
            if outs[0] in live or has_effects(eqn):
                kept.append(eqn)
                live.update(eqn.invars)
            continue
        used = [v in live for v in outs]
        if any(used):
            prune = eqn.primitive.rules.get("dce") if not all(used) else None
            if prune is not None:
                eqn = prune(eqn, used)
            kept.append(eqn)
            live.update(eqn.invars)
        elif has_effects(eqn):
            kept.append(eqn)
            live.update(eqn.invars)
    kept.reverse()
    return kept, live


def has_effects(eqn):
    """Whether running `eqn` has a side effect: an effectful primitive, or a call whose
    jaxpr (or a call inside it) has an effectful equation."""
    if eqn.primitive.effectful:
        return True
    return any(has_effects(e) for j in sub_jaxprs(eqn.params)
               for e in getattr(j, "jaxpr", j).eqns)
