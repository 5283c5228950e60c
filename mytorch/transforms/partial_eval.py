"""Partial evaluation, and linearize built on it.

A `PartialEvalTrace` splits a computation into a *known* part, computed now by the parent
trace, and an *unknown* part, staged into a jaxpr. Its own tracers are the unknowns;
everything else is known. A primitive with only known operands is bound on the parent
right away; one with an unknown operand becomes an equation, and the known values it reads
become constants of the staged jaxpr (the residuals).

`linearize_flat` runs the JVP interpreter with known primals and unknown tangents: every
primal computation happens immediately and only the (linear) tangent computation is
staged, so the result is a linear jaxpr over the tangents that closes over exactly the
residuals the tangent computation needs. Reverse mode transposes that jaxpr.
"""

from mytorch.core import staging
from mytorch.core.ad_util import Zero, instantiate, is_differentiable, tangent_aval
from mytorch.core.staging import StagingTrace, StagingTracer
from mytorch.core.trace import aval_of, new_trace, set_current_trace
from mytorch.transforms.jvp import jvp_flat


class PartialEvalTrace(StagingTrace):
    """Stages the primitives that read an unknown value; forwards the others."""

    __slots__ = ()

    def is_unknown(self, x):
        return isinstance(x, StagingTracer) and x._trace is self

    def process_primitive(self, prim, args, params):
        custom = prim.rules.get("partial_eval")
        if custom is not None:
            return custom(self, args, params)
        if not any(self.is_unknown(x) for x in args):
            with set_current_trace(self.parent):
                out = prim.bind(*args, **params)
            return list(out) if prim.multiple_results else [out]
        return super().process_primitive(prim, args, params)


def linearize_flat(fun, primals, name="linearize"):
    """Linearize `fun(*primals) -> list` at `primals`.

    Returns (primal outputs, linear ClosedJaxpr mapping input tangents to output tangents,
    output-is-zero flags). Outputs whose tangent is symbolically zero still get an output
    in the jaxpr (a zero array), flagged so callers can skip them.
    """
    with new_trace(lambda parent: PartialEvalTrace(parent, name)) as pe:
        avals = [aval_of(p) for p in primals]
        tangents_in = [pe.new_arg(tangent_aval(a)) for a in avals]
        # integer and boolean inputs have no tangent: their invars stay unused
        jvp_tangents = [t if is_differentiable(a) else Zero(a) for t, a in zip(tangents_in, avals)]
        primals_out, tangents_out = jvp_flat(fun, primals, jvp_tangents, name)
        zero_out = [type(t) is Zero for t in tangents_out]
        with set_current_trace(pe):
            tangents_out = [instantiate(t) for t in tangents_out]
        linear = pe.to_jaxpr(tangents_in, tangents_out, debug_name=name)
    if staging.CHECK_EVERY_JAXPR:
        from mytorch.core.jaxpr import check_jaxpr

        check_jaxpr(linear)
    return primals_out, linear, zero_out
