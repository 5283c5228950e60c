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


def partial_eval_jaxpr(jaxpr, in_unknowns, saveable):
    """Split `jaxpr` (no constvars) into a known and an unknown part.

    Equations reading an unknown input are unknown; the rest are known. The unknown part
    reads known values either as residuals (inputs of `jaxpr`, and results of equations
    for which `saveable(primitive, *in_avals, **params)` is true) or by recomputing them
    from residuals, which is how `checkpoint` trades memory for recomputation.

    Returns (known, unknown, out_unknowns, num_res):
      known:   Jaxpr known inputs -> known outputs + residuals
      unknown: Jaxpr residuals + unknown inputs -> unknown outputs
    """
    from mytorch.core.jaxpr import Jaxpr, Var
    from mytorch.transforms.dce import dce_jaxpr

    unknown = {v for v, u in zip(jaxpr.invars, in_unknowns, strict=True) if u}
    known_eqns, unknown_eqns, producer, in_order = [], [], {}, []
    for eqn in jaxpr.eqns:
        ins_unknown = [type(v) is Var and v in unknown for v in eqn.invars]
        split = eqn.primitive.rules.get("partial_eval_jaxpr") if any(ins_unknown) else None
        # a nested call (jit, checkpoint, loops) splits its own jaxpr; its rule may return
        # None (e.g. a while loop whose predicate is unknown): the equation is then unknown
        parts = split(eqn, ins_unknown, saveable) if split is not None else None
        if parts is not None:
            known_eqn, staged_eqn, outs_unknown = parts
            known_eqns.append(known_eqn)
            producer.update((v, known_eqn) for v in known_eqn.outvars if type(v) is Var)
            unknown_eqns.append(staged_eqn)
            unknown.update(v for v, u in zip(eqn.outvars, outs_unknown) if u and type(v) is Var)
            in_order += [known_eqn, staged_eqn]
            continue
        if any(ins_unknown):
            unknown_eqns.append(eqn)
            unknown.update(v for v in eqn.outvars if type(v) is Var)
        else:
            known_eqns.append(eqn)
            producer.update((v, eqn) for v in eqn.outvars if type(v) is Var)
        in_order.append(eqn)
    residuals, seen, recompute = [], set(), set()

    def need(v):
        if v in seen:
            return
        seen.add(v)
        eqn = producer.get(v)
        if eqn is None or saveable(eqn.primitive, *[w.aval for w in eqn.invars], **eqn.params):
            residuals.append(v)
            return
        recompute.add(id(eqn))
        for w in eqn.invars:
            if type(w) is Var:
                need(w)

    for eqn in unknown_eqns:
        for w in eqn.invars:
            if type(w) is Var and w not in unknown:
                need(w)
    out_unknowns = [type(v) is Var and v in unknown for v in jaxpr.outvars]
    known_in = [v for v, u in zip(jaxpr.invars, in_unknowns) if not u]
    unknown_in = [v for v, u in zip(jaxpr.invars, in_unknowns) if u]
    known_out = [v for v, u in zip(jaxpr.outvars, out_unknowns) if not u]
    known = dce_jaxpr(Jaxpr([], known_in, known_eqns, known_out + residuals, jaxpr.debug_name))
    unknown_ids = {id(e) for e in unknown_eqns}
    staged_eqns = [e for e in in_order if id(e) in recompute or id(e) in unknown_ids]
    unknown_out = [v for v, u in zip(jaxpr.outvars, out_unknowns) if u]
    staged = Jaxpr([], residuals + unknown_in, staged_eqns, unknown_out, jaxpr.debug_name)
    return known, staged, out_unknowns, len(residuals)


def split_call_eqn(eqn, unknowns, policy, param="jaxpr"):
    """The split of a call equation whose `param` holds a constant-free jaxpr: (known
    equation, staged equation, output-unknown flags). The known equation also returns the
    residuals the staged one reads first; both keep the other params as they are (the
    call-rule toolkit rebinds them)."""
    from mytorch.core.jaxpr import Jaxpr, Var

    params = eqn.params
    known, staged, outs_unknown, num_res = partial_eval_jaxpr(params[param], unknowns, policy)
    known_in = [v for v, u in zip(eqn.invars, unknowns) if not u]
    # a residual that is one of the call's own known inputs is read from outside directly
    # (so an enclosing loop sees a loop constant, not a new value per iteration)
    n_out = len(known.outvars) - num_res
    position = {v: i for i, v in enumerate(known.invars)}
    res, fresh, inner = [], [], []
    for v in known.outvars[n_out:]:
        if type(v) is Var and v in position:
            res.append(known_in[position[v]])
        else:
            res.append(Var(v.aval))
            fresh.append(res[-1])
            inner.append(v)
    if len(inner) < num_res:
        known = Jaxpr(known.constvars, known.invars, known.eqns,
                      [*known.outvars[:n_out], *inner], known.debug_name)
    staged_in = res + [v for v, u in zip(eqn.invars, unknowns) if u]
    known_params, staged_params = dict(params, **{param: known}), dict(params, **{param: staged})
    known_eqn = eqn.replace(
        invars=known_in, outvars=[v for v, u in zip(eqn.outvars, outs_unknown) if not u] + fresh,
        params=known_params)
    staged_eqn = eqn.replace(
        invars=staged_in, outvars=[v for v, u in zip(eqn.outvars, outs_unknown) if u],
        params=staged_params)
    return known_eqn, staged_eqn, outs_unknown
