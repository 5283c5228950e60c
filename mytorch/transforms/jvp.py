"""Forward mode: the JVP interpreter.

A `JVPTracer` carries a primal value and a tangent of the parent trace (or a symbolic
`Zero`). Each primitive runs its "jvp" rule with the parent trace current:

    rule(primals, tangents, **params) -> (primal_out, tangent_out)

with lists for primitives of several results; tangents may be `Zero`. A primitive whose
tangents are all zero is bound on the primals alone, so stopped and unused values cost
nothing, and results with a zero tangent leave the JVP trace (they are constants to it).
"""

from mytorch.core import ad_util
from mytorch.core.ad_util import (
    Zero, add_tangents, instantiate, is_differentiable, tangent_aval,
)
from mytorch.core.trace import (
    Trace, Tracer, aval_of, is_known, known_value, leaked_tracer_error, new_trace,
    set_current_trace,
)


class JVPTracer(Tracer):
    """A primal value together with its tangent."""

    __slots__ = ("primal", "tangent")

    def __init__(self, trace, primal, tangent):
        self._trace = trace
        self.primal = primal
        self.tangent = tangent

    @property
    def aval(self):
        return aval_of(self.primal)

    def concrete_value(self):
        primal = self.primal
        if isinstance(primal, Tracer):
            return primal.concrete_value()
        return primal._host()

    def known_value(self):
        return known_value(self.primal)

    def is_known(self):
        return is_known(self.primal)

    def is_differentiated(self):
        return True


class JVPTrace(Trace):
    """The trace of one forward-mode differentiation."""

    __slots__ = ()

    def to_primal_tangent(self, x):
        if isinstance(x, JVPTracer) and x._trace is self:
            return x.primal, x.tangent
        if isinstance(x, Tracer) and not x._trace.alive:
            raise leaked_tracer_error(x)
        return x, None

    def process_primitive(self, prim, args, params):
        primals, tangents, any_tangent = [], [], False
        for x in args:
            p, t = self.to_primal_tangent(x)
            primals.append(p)
            if t is None:
                t = Zero.like(p)
            else:
                any_tangent = True
            tangents.append(t)
        with set_current_trace(self.parent):
            if not any_tangent:
                out = prim.bind(*primals, **params)
                return list(out) if prim.multiple_results else [out]
            primal_out, tangent_out = prim.rule("jvp", "differentiation")(
                primals, tangents, **params
            )
        if not prim.multiple_results:
            return [self.wrap(primal_out, tangent_out)]
        return [self.wrap(p, t) for p, t in zip(primal_out, tangent_out, strict=True)]

    def wrap(self, primal, tangent):
        """A tracer for (primal, tangent), or the bare primal when the tangent is zero."""
        if type(tangent) is Zero or tangent is None:
            return primal
        return JVPTracer(self, primal, tangent)


def jvp_flat(fun, primals, tangents, name="jvp"):
    """Run `fun(*primals) -> list` under a new JVP trace; tangents may be `Zero`.

    Returns (primal outputs, tangent outputs) where a tangent output may be `Zero`.
    """
    with new_trace(lambda parent: JVPTrace(parent, name)) as trace:
        ins = [trace.wrap(p, t) for p, t in zip(primals, tangents, strict=True)]
        outs = fun(*ins)
        pairs = [trace.to_primal_tangent(x) for x in outs]
    primals_out = [p for p, _ in pairs]
    tangents_out = [Zero.like(p) if t is None else t for p, t in pairs]
    return primals_out, tangents_out


__all__ = ["JVPTrace", "JVPTracer", "jvp_flat", "jvp_jaxpr", "Zero", "add_tangents",
           "instantiate", "is_differentiable"]


def jvp_jaxpr(jaxpr, nonzeros, instantiate, name="jvp", avals=None):
    """The JVP of a constant-free `jaxpr`, traced to a new one.

    Args:
      jaxpr: a Jaxpr without constvars, of n inputs and m outputs.
      nonzeros: n flags: whether an input's tangent is an input of the result (else zero).
      instantiate: a bool, or m flags: whether an output's tangent is an output of the
        result even when it is symbolically zero (then as zeros).
      name: the debug name of the result.
      avals: the n primal input avals (default: those of `jaxpr.invars`).

    Returns:
      (jvp, consts, out_nonzeros): `jvp` takes the captured `consts`, the n primals, then
      the tangents flagged in `nonzeros` (tangent avals, in input order); it returns the m
      primal outputs, then the tangents of the outputs flagged in `out_nonzeros` (those
      with a nonzero tangent or `instantiate`d), in output order.
    """
    from mytorch.core.jaxpr import eval_jaxpr
    from mytorch.transforms.closure import trace_closed_over

    avals = [v.aval for v in jaxpr.invars] if avals is None else list(avals)
    n, m = len(avals), len(jaxpr.outvars)
    inst = [instantiate] * m if isinstance(instantiate, bool) else list(instantiate)
    store = {}

    def jvp_fun(*xs):
        ts_in = iter(xs[n:])
        ts = [next(ts_in) if nz else Zero(tangent_aval(a)) for a, nz in zip(avals, nonzeros)]
        outs, t_outs = jvp_flat(lambda *a: eval_jaxpr(jaxpr, [], *a), list(xs[:n]), ts)
        out_nz = [type(t) is not Zero or i for t, i in zip(t_outs, inst, strict=True)]
        store["out_nz"] = out_nz
        return [*outs, *[ad_util.instantiate(t) for t, f in zip(t_outs, out_nz) if f]]

    t_avals = [tangent_aval(a) for a, nz in zip(avals, nonzeros, strict=True) if nz]
    new, consts = trace_closed_over(jvp_fun, [*avals, *t_avals], name)
    return new, consts, store["out_nz"]


def jvp_call_jaxpr(jaxpr, avals, nonzero, name):
    """`jvp_jaxpr` of a call primitive's `jaxpr` with every output tangent instantiated:
    (jaxpr, consts), the new jaxpr taking consts, the primals (of `avals`), then the
    `nonzero` tangents, and returning the primal outputs followed by one tangent each."""
    new, consts, _ = jvp_jaxpr(jaxpr, nonzero, True, name, avals)
    return new, consts
