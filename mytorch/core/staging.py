"""The staging trace: records primitives applied to abstract values into a jaxpr.

`trace_to_jaxpr(fun, in_avals, name)` runs `fun` on tracers that carry only avals; every
`bind` appends an equation. Values from outside (concrete arrays, or tracers of enclosing
transformations) become constants: 0-d concrete ones are inlined as literals, the rest are
constvars of the resulting ClosedJaxpr.
"""

from mytorch.core.array import ArrayImpl
from mytorch.core.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var
from mytorch.core.source_info import user_frame
from mytorch.core.trace import Trace, Tracer, leaked_tracer_error, new_trace, to_concrete


class StagingTracer(Tracer):
    """A traced value of a staging trace: stands for a jaxpr variable."""

    __slots__ = ("_var",)

    def __init__(self, trace, var):
        self._trace = trace
        self._var = var

    @property
    def aval(self):
        return self._var.aval


class StagingTrace(Trace):
    """Builds a jaxpr from the primitives bound while it is current."""

    __slots__ = ("eqns", "const_vars", "consts", "tracers_by_var")

    def __init__(self, parent, name):
        super().__init__(parent, name)
        self.eqns = []
        self.const_vars = {}  # id(value) -> Var
        self.consts = []  # (value, var), in order of first use

    def new_arg(self, aval):
        return StagingTracer(self, Var(aval))

    def to_var(self, x):
        if isinstance(x, StagingTracer) and x._trace is self:
            return x._var
        if isinstance(x, Tracer):
            if not x._trace.alive:
                raise leaked_tracer_error(x)
        elif not isinstance(x, ArrayImpl):
            x = to_concrete(x)
        if type(x) is ArrayImpl and x._buf.ndim == 0:
            return Literal(x, x.aval)
        var = self.const_vars.get(id(x))
        if var is None:
            var = self.const_vars[id(x)] = Var(x.aval)
            self.consts.append((x, var))
        return var

    def process_primitive(self, prim, args, params):
        invars = [self.to_var(x) for x in args]
        out_avals = prim.abstract_eval(*[v.aval for v in invars], **params)
        outvars = [Var(a) for a in out_avals]
        self.eqns.append(JaxprEqn(prim, invars, params, outvars, user_frame()))
        return [StagingTracer(self, v) for v in outvars]

    def to_jaxpr(self, in_tracers, out_values, debug_name=None):
        """Close the recording into a ClosedJaxpr over `in_tracers` -> `out_values`."""
        outvars = [self.to_var(x) for x in out_values]
        constvars = [v for _, v in self.consts]
        jaxpr = Jaxpr(constvars, [t._var for t in in_tracers], self.eqns, outvars, debug_name)
        return ClosedJaxpr(jaxpr, [c for c, _ in self.consts])


# The test suite turns this on so that every traced program is type-checked.
CHECK_EVERY_JAXPR = False


def trace_to_jaxpr(fun, in_avals, name):
    """Trace `fun(*tracers) -> list of values` at `in_avals`; returns a ClosedJaxpr."""
    with new_trace(lambda parent: StagingTrace(parent, name)) as trace:
        in_tracers = [trace.new_arg(a) for a in in_avals]
        outs = fun(*in_tracers)
        closed = trace.to_jaxpr(in_tracers, outs, debug_name=name)
    if CHECK_EVERY_JAXPR:
        from mytorch.core.jaxpr import check_jaxpr

        check_jaxpr(closed)
    return closed
