"""The rules of a call primitive, written once: JVP, partial evaluation (eager and of a
nested equation), transpose, batching and dead-code elimination.

A call primitive carries in a param (`jaxpr` by default) a constant-free Jaxpr whose
invars are the call's operands, and runs it. Each rule transforms that jaxpr as a whole
and binds the primitive again on the new one, so a derivative or a batch of a call is
itself one call (compiled, for `jit`). What differs between call primitives is passed in:

    rebind(params, jaxpr, role, operands, results) -> params
        the params of a new call of `jaxpr`; `role` says which rule makes it: "jvp",
        "known", "staged", "transpose", "vmap" or "dce" (jit derives its name and resets
        donation; checkpoint keeps its policy; pmap its axis). `operands` and `results`
        give the origin of each of the new call's operands and results (see "Origins"
        below), so params with one entry per operand or result (pmap's mapped flags,
        donation) can be derived.
    saveable(params) -> policy
        which intermediates linearization keeps as residuals: policy(prim, *avals, **params).
    name(params) -> str
        the call's name: traced jaxprs are named "jvp(name)", "transpose(name)", "vmap(name)".
    transpose="call" | "inline"
        "call" traces the transposed jaxpr and binds it as a call (jit: the backward pass
        runs compiled); "inline" runs the backward pass on the current trace (checkpoint:
        its recomputation happens inside the enclosing backward pass).
    cache
        whether each traced result is kept per (jaxpr, pattern): repeated eager calls of
        `grad(jit(f))` or `vmap(jit(f))` then rebind the same jaxprs (so they hit the
        compilation cache) instead of tracing again. The entries keep their jaxpr alive, so
        ids stay unique; `clear_rule_caches` empties them.
    linearize_here(jaxpr, args, unknowns) -> bool
        when true, eager partial evaluation evaluates the call's equations one by one on the
        current trace instead of splitting it (see `jit_rules`).
    hooks
        a `CallHooks` for a call whose operands and results are not its body's values
        (pmap: mapped ones carry the replica axis the body does not see); the default
        changes nothing.

Origins: each operand or result of a call a rule makes is one of
    ("operand", i)  the original call's operand i, its tangent or its cotangent
    ("result", j)   the original call's result j, its tangent or its cotangent
    CONST           a constant the rule's tracing captured (read whole by the body)
    RESIDUAL        a value the known half of a split computes for the staged half
so, for example, the transpose of a call takes CONSTs, the ("operand", i) of its non-linear
operands and the ("result", j) of its nonzero cotangents, and returns ("operand", i) for
each linear operand.

The avals of a split's residuals, as the staged equation reads them, are the known call's
result avals (its abstract evaluation), which need not be its body's (pmap stacks them).
"""

from collections import OrderedDict

from mytorch.core.ad_util import Zero, instantiate, is_differentiable, is_undefined
from mytorch.core.jaxpr import Jaxpr, Var, eval_jaxpr
from mytorch.core.staging import StagingTrace
from mytorch.core.trace import aval_of, set_current_trace
from mytorch.transforms.batching import batch_jaxpr
from mytorch.transforms.closure import trace_closed_over
from mytorch.transforms.dce import dce_live
from mytorch.transforms.jvp import jvp_call_jaxpr
from mytorch.transforms.partial_eval import partial_eval_jaxpr, split_call_eqn
from mytorch.transforms.transpose import backward_pass

__all__ = ["CONST", "RESIDUAL", "CallHooks", "clear_rule_caches", "def_call_rules",
           "rule_cache"]

CONST = ("const", None)
RESIDUAL = ("residual", None)

_CACHE_SIZE = 512
_caches = []


class _LRU(OrderedDict):
    """A bounded dict; values keep their key's jaxpr alive, so ids stay unique."""

    def get_or(self, key, make):
        hit = self.get(key)
        if hit is not None:
            self.move_to_end(key)
            return hit
        value = self[key] = make()
        if len(self) > _CACHE_SIZE:
            self.popitem(last=False)
        return value


class _NoCache:
    """The cache of a primitive that asked for none: every lookup makes its value."""

    @staticmethod
    def get_or(key, make):
        return make()


def rule_cache():
    """A new bounded cache, `get_or(key, make)`, emptied by `clear_rule_caches`."""
    c = _LRU()
    _caches.append(c)
    return c


def clear_rule_caches():
    """Forget every traced result kept by call rules (and other `rule_cache`s)."""
    for c in _caches:
        c.clear()


class CallHooks:
    """What a call primitive adds to the generic rules when its operands and results are
    not the values its body sees (pmap: a mapped operand is the stack of the replicas'
    values). Every method receives the original call's params; the defaults change
    nothing (jit, checkpoint)."""

    def operand_aval(self, params, aval, origin):
        """The aval the body of a new call sees for an operand of aval `aval` coming from
        `origin` (the transpose traces its body on these)."""
        return aval

    def result_cotangent(self, params, j, ct):
        """In the transposed body: the cotangent of the body's result j, from `ct`, the
        body's share of the call's result cotangent."""
        return ct

    def operand_cotangent(self, params, i, ct):
        """In the transposed body: what the body returns as the cotangent of operand i,
        from `ct`, the cotangent of the body's operand i."""
        return ct

    def batch_in(self, params, args, dims):
        """(args, dims) as the body sees them, from the call's batched operands `args` and
        their batch dimensions `dims` (ints or not_mapped)."""
        return args, dims

    def batch_out(self, params, dims):
        """The batch dimensions of the call's results, from those of the body's."""
        return dims


_NO_HOOKS = CallHooks()


def _operands(n):
    return [("operand", i) for i in range(n)]


def _results(n):
    return [("result", j) for j in range(n)]


def def_call_rules(prim, *, rebind, saveable, name=None, param="jaxpr", transpose="call",
                   cache=True, linearize_here=None, hooks=_NO_HOOKS):
    """Register the jvp, partial_eval, partial_eval_jaxpr, transpose, batching and dce rules
    of the call primitive `prim` (see the module docstring for the arguments)."""
    if transpose not in ("call", "inline"):
        raise ValueError(f"def_call_rules({prim.name}): transpose must be 'call' or "
                         f"'inline', got {transpose!r}")
    name = name or (lambda params: params[param].debug_name)

    def new_cache():
        return rule_cache() if cache else _NoCache()

    def bind(args, jaxpr, consts, params, role, operands, results):
        """`prim` of `jaxpr` on the captured `consts` followed by `args` (of origins
        `operands`), with results of origins `results`: a list."""
        return prim.bind(*consts, *args, **rebind(params, jaxpr, role,
                                                   [CONST] * len(consts) + operands, results))

    jvps = new_cache()

    def jvp(primals, tangents, **params):
        jaxpr = params[param]
        nonzero = tuple(type(t) is not Zero and is_differentiable(aval_of(p))
                        for p, t in zip(primals, tangents))
        t_key = tuple(aval_of(t) if nz else None for t, nz in zip(tangents, nonzero))

        def make():
            return (jaxpr, *jvp_call_jaxpr(jaxpr, jaxpr.in_avals, nonzero,
                                           f"jvp({name(params)})"))

        _, jvp_jaxpr, consts = jvps.get_or((id(jaxpr), nonzero, t_key), make)
        ts = [t for t, nz in zip(tangents, nonzero) if nz]
        n_out = len(jaxpr.outvars)
        operands = _operands(len(primals)) + [("operand", i) for i, nz in enumerate(nonzero)
                                              if nz]
        outs = bind([*primals, *ts], jvp_jaxpr, consts, params, "jvp", operands,
                    _results(n_out) * 2)
        return outs[:n_out], outs[n_out:]

    splits = new_cache()

    def partial_eval(trace, args, params):
        jaxpr = params[param]
        unknowns = tuple(trace.is_unknown(x) for x in args)
        if not any(unknowns):
            with set_current_trace(trace.parent):
                return prim.bind(*args, **params)
        if linearize_here is not None and linearize_here(jaxpr, args, unknowns):
            return eval_jaxpr(jaxpr, [], *args)
        policy = saveable(params)

        def make():
            return (jaxpr, *partial_eval_jaxpr(jaxpr, list(unknowns), policy))

        _, known, staged, out_unknowns, num_res = splits.get_or((id(jaxpr), unknowns, policy),
                                                                make)
        known_args = [x for x, u in zip(args, unknowns) if not u]
        known_in = [("operand", i) for i, u in enumerate(unknowns) if not u]
        known_res = [("result", j) for j, u in enumerate(out_unknowns) if not u]
        with set_current_trace(trace.parent):
            known_outs = bind(known_args, known, [], params, "known", known_in,
                              known_res + [RESIDUAL] * num_res)
        n_known = len(known_outs) - num_res
        operands = [*known_outs[n_known:], *[x for x, u in zip(args, unknowns) if u]]
        origins = [RESIDUAL] * num_res + [("operand", i) for i, u in enumerate(unknowns) if u]
        staged_res = [("result", j) for j, u in enumerate(out_unknowns) if u]
        staged_outs = StagingTrace.process_primitive(
            trace, prim, operands, rebind(params, staged, "staged", origins, staged_res))
        known_it, staged_it = iter(known_outs[:n_known]), iter(staged_outs)
        return [next(staged_it) if u else next(known_it) for u in out_unknowns]

    def partial_eval_jaxpr_rule(eqn, unknowns, _saveable):
        # the call's own policy decides its residuals, whatever the enclosing split saves
        known_eqn, staged_eqn, outs_unknown = split_call_eqn(eqn, unknowns,
                                                             saveable(eqn.params), param=param)
        n_known_out = sum(not u for u in outs_unknown)
        n_res = len(staged_eqn.invars) - sum(unknowns)
        # a residual is a fresh result of the known call, or one of the call's known operands
        res_origins = []
        for r in staged_eqn.invars[:n_res]:
            pos = next((i for i, (v, u) in enumerate(zip(eqn.invars, unknowns))
                        if v is r and not u), None)
            res_origins.append(RESIDUAL if pos is None else ("operand", pos))
        known_in = [("operand", i) for i, u in enumerate(unknowns) if not u]
        known_res = [("result", j) for j, u in enumerate(outs_unknown) if not u]
        fresh_res = known_eqn.outvars[n_known_out:]
        known_params = rebind(eqn.params, known_eqn.params[param], "known", known_in,
                              known_res + [RESIDUAL] * len(fresh_res))
        staged_params = rebind(
            eqn.params, staged_eqn.params[param], "staged",
            res_origins + [("operand", i) for i, u in enumerate(unknowns) if u],
            [("result", j) for j, u in enumerate(outs_unknown) if u])
        # the fresh residuals have the avals of the known call's results (pmap stacks them)
        avals = prim.abstract_eval(*[v.aval for v in known_eqn.invars], **known_params)
        fresh = {v: Var(a) for v, a in zip(fresh_res, avals[n_known_out:]) if a != v.aval}
        if fresh:
            known_eqn = known_eqn.replace(outvars=[fresh.get(v, v)
                                                   for v in known_eqn.outvars])
            staged_eqn = staged_eqn.replace(invars=[
                fresh.get(v, v) if type(v) is Var else v for v in staged_eqn.invars])
        return (known_eqn.replace(params=known_params),
                staged_eqn.replace(params=staged_params), outs_unknown)

    transposes = new_cache()

    def transpose_call(cts, *args, **params):
        jaxpr = params[param]
        linear = tuple(is_undefined(a) for a in args)
        residuals = [a for a, lin in zip(args, linear) if not lin]
        ct_zero = tuple(type(c) is Zero for c in cts)
        nz_cts = [c for c, z in zip(cts, ct_zero) if not z]

        def make():
            n_res = len(residuals)

            def transpose_fun(*xs):
                res, ct_it = iter(xs[:n_res]), iter(xs[n_res:])
                values = [None if lin else next(res) for lin in linear]
                cts_out = [Zero(v.aval) if z else hooks.result_cotangent(params, j, next(ct_it))
                           for j, (v, z) in enumerate(zip(jaxpr.outvars, ct_zero))]
                cts_in = backward_pass(jaxpr, [], list(linear), values, cts_out)
                return [hooks.operand_cotangent(params, i, instantiate(c))
                        for i, (c, lin) in enumerate(zip(cts_in, linear)) if lin]

            avals = [hooks.operand_aval(params, aval_of(x), o)
                     for x, o in zip([*residuals, *nz_cts], origins)]
            return (jaxpr, *trace_closed_over(transpose_fun, avals,
                                              f"transpose({name(params)})"))

        origins = ([("operand", i) for i, lin in enumerate(linear) if not lin]
                   + [("result", j) for j, z in enumerate(ct_zero) if not z])
        r_key = tuple(aval_of(r) for r in residuals)
        _, t_jaxpr, consts = transposes.get_or((id(jaxpr), linear, ct_zero, r_key), make)
        outs = iter(bind([*residuals, *nz_cts], t_jaxpr, consts, params, "transpose", origins,
                         [("operand", i) for i, lin in enumerate(linear) if lin]))
        return [next(outs) if lin else None for lin in linear]

    def transpose_inline(cts, *args, **params):
        linear = [is_undefined(a) for a in args]
        values = [None if lin else a for a, lin in zip(args, linear)]
        cts_in = backward_pass(params[param], [], linear, values, list(cts))
        return [ct if lin else None for ct, lin in zip(cts_in, linear)]

    batched = new_cache()

    def batching(axis, args, dims, **params):
        jaxpr = params[param]
        args, dims = hooks.batch_in(params, list(args), list(dims))

        def make():
            return (jaxpr, *batch_jaxpr(jaxpr, axis, list(dims), None,
                                        f"vmap({name(params)})"))

        key = (id(jaxpr), tuple(dims), axis.size, axis.name)
        _, b_jaxpr, consts, out_dims = batched.get_or(key, make)
        outs = bind(args, b_jaxpr, consts, params, "vmap", _operands(len(args)),
                    _results(len(out_dims)))
        return outs, hooks.batch_out(params, out_dims)

    def dce(eqn, used_outputs):
        jaxpr = eqn.params[param]
        outvars = [v for v, u in zip(jaxpr.outvars, used_outputs) if u]
        eqns, live = dce_live(Jaxpr([], jaxpr.invars, jaxpr.eqns, outvars))
        used_inputs = [v in live for v in jaxpr.invars]
        pruned = Jaxpr([], [v for v, u in zip(jaxpr.invars, used_inputs) if u], eqns,
                       outvars, jaxpr.debug_name)
        invars = [v for v, u in zip(eqn.invars, used_inputs) if u]
        return eqn.replace(
            invars=invars, outvars=[v for v, u in zip(eqn.outvars, used_outputs) if u],
            params=rebind(eqn.params, pruned, "dce",
                          [("operand", i) for i, u in enumerate(used_inputs) if u],
                          [("result", j) for j, u in enumerate(used_outputs) if u]))

    prim.def_jvp(jvp)
    prim.def_rule("partial_eval", partial_eval)
    prim.def_rule("partial_eval_jaxpr", partial_eval_jaxpr_rule)
    prim.def_transpose(transpose_call if transpose == "call" else transpose_inline)
    prim.def_batching(batching)
    prim.def_rule("dce", dce)
