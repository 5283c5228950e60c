"""How each interpreter runs a `custom_jvp` / `custom_vjp` function, and the call
primitives that stand for one in a jaxpr.

A custom function reaches the current trace as a *call*: flat Python functions for the
primal (`fun`) and its rule (`jvp`, or `fwd` and `bwd`), and the operands. As in JAX, the
trace decides which of them runs:

    eager            fun
    jvp / grad       only the rule, one level down, on the primals (concrete when the
                     inputs are, so Python control flow on values works there)
    vmap             fun and the rule wrapped to run vectorised, handed one level down
    partial eval     a call on known values goes one level down; on unknown (linear)
                     values fun is inlined, as nothing will differentiate it again
    make_jaxpr, jit  fun is traced into a `custom_jvp_call` / `custom_vjp_call` equation
                     that carries the rule, run when the jaxpr is differentiated

so each function is called once per transformation. While a rule runs one level down the
differentiating trace is suspended: a rule (or fun) that closes over a value being
differentiated gets a TypeError saying so instead of a wrong derivative.

Flat signatures: fun(*xs) -> list; jvp(primals, tangents) -> (list, list);
fwd(*primals) -> (outs, residuals, res_tree); bwd(res_tree, residuals, cts) -> one
cotangent (array or `Zero`) per operand.
"""

import contextlib
from collections.abc import Callable
from typing import NamedTuple

from mytorch.core.ad_util import Zero, instantiate, is_undefined
from mytorch.core.aval import ShapedArray
from mytorch.core.jaxpr import eval_jaxpr
from mytorch.core.primitive import Primitive
from mytorch.core.staging import StagingTrace
from mytorch.core.trace import (
    EvalTrace,
    Suspended,
    Tracer,
    aval_of,
    current_trace,
    new_trace,
    set_current_trace,
)
from mytorch.lax._batching import batch_call_jaxpr, bdim_at_front, bdim_to, moveaxis
from mytorch.lax.reductions import reduce_sum
from mytorch.transforms.batching import BatchTrace, BatchTracer, batch_flat, batched_aval
from mytorch.transforms.closure import trace_closed_over
from mytorch.transforms.jvp import JVPTrace
from mytorch.transforms.partial_eval import PartialEvalTrace

__all__ = [
    "CustomJVPCall",
    "CustomVJPCall",
    "bind_custom",
    "custom_jvp_call_p",
    "custom_lin_p",
    "custom_vjp_call_p",
]


def _name(fun):
    return getattr(fun, "__name__", type(fun).__name__)


class CustomJVPCall(NamedTuple):
    name: str
    fun: Callable
    jvp: Callable
    kind = "custom_jvp"


class CustomVJPCall(NamedTuple):
    name: str
    fun: Callable
    fwd: Callable
    bwd: Callable
    kind = "custom_vjp"


def bind_custom(call, args):
    """Run the custom function `call` on `args` under the current trace: a list."""
    trace = current_trace()
    for cls in type(trace).__mro__:
        process = _PROCESS.get(cls)
        if process is not None:
            return process(trace, call, list(args))
    raise TypeError(f"{call.kind} function {call.name} cannot run under {trace.name}")


def closure_message(call):
    return (f"{call.kind} function {call.name} closes over a value that is being "
            "differentiated; pass that value as an argument instead")


@contextlib.contextmanager
def _suspended(trace, call):
    """`trace`'s tracers raise the closure error while the block runs."""
    prev = trace.alive
    trace.alive = Suspended(closure_message(call))
    try:
        yield
    finally:
        trace.alive = prev


def _one_level_down(trace, call, args):
    with _suspended(trace, call), set_current_trace(trace.parent):
        return bind_custom(call, args)


# ---- eager, partial evaluation, staging --------------------------------------------------
def _process_eval(trace, call, args):
    return call.fun(*args)


def _process_partial_eval(trace, call, args):
    if any(trace.is_unknown(x) for x in args):
        # only linear functions are built here: no rule is needed any more
        return call.fun(*args)
    return _one_level_down(trace, call, args)


def _process_staging(trace, call, args):
    jaxpr, consts = trace_closed_over(call.fun, [aval_of(x) for x in args], call.name)
    if type(call) is CustomJVPCall:
        return custom_jvp_call_p.bind(*consts, *args, call_jaxpr=jaxpr,
                                      jvp=_suspending(call.jvp, trace, call),
                                      num_consts=len(consts))
    return custom_vjp_call_p.bind(*consts, *args, call_jaxpr=jaxpr,
                                  fwd=_suspending(call.fwd, trace, call),
                                  bwd=_suspending(call.bwd, trace, call), num_consts=len(consts))


# ---- forward mode -------------------------------------------------------------------------
def _process_jvp(trace, call, args):
    pairs = [trace.to_primal_tangent(x) for x in args]
    if all(t is None for _, t in pairs):
        return _one_level_down(trace, call, [p for p, _ in pairs])
    primals = [p for p, _ in pairs]
    with _suspended(trace, call), set_current_trace(trace.parent):
        tangents = [instantiate(Zero.like(p)) if t is None else t for p, t in pairs]
        if type(call) is CustomJVPCall:
            outs, t_outs = call.jvp(primals, tangents)
        else:
            outs, t_outs = fwd_and_lin(call.fwd, _suspending(call.bwd, trace, call),
                                       primals, tangents)
    for x in (*outs, *t_outs):
        if isinstance(x, Tracer) and x._trace is trace:
            raise TypeError(closure_message(call))
    return [trace.wrap(p, t) for p, t in zip(outs, t_outs, strict=True)]


def _suspending(fn, trace, call):
    """`fn`, run with `trace` suspended: a rule that runs after the trace has ended (bwd;
    the rules of a staged call) and closes over one of its values gets the closure error
    rather than a leak."""

    def run(*args):
        with _suspended(trace, call):
            return fn(*args)

    run.__name__ = _name(fn)
    return run


def fwd_and_lin(fwd, bwd, primals, tangents):
    """custom_vjp under jvp: run fwd; the tangents go through a `custom_lin` equation
    whose transpose calls bwd."""
    outs, residuals, res_tree = fwd(*primals)
    if all(type(t) is Zero for t in tangents):
        return outs, [Zero(aval_of(o)) for o in outs]
    tangents = [instantiate(t) for t in tangents]
    out_avals = tuple(aval_of(o) for o in outs)
    t_outs = custom_lin_p.bind(*residuals, *tangents, num_res=len(residuals), bwd=bwd,
                               res_tree=res_tree, out_avals=out_avals)
    return outs, t_outs


# ---- vmap ---------------------------------------------------------------------------------
class _RuleBatchTrace(BatchTrace):
    """A vmap over the axis of `outer` that takes the tracers of `outer` (and of the traces
    `outer` stands in for) as its own: the vectorised functions of a custom call run under
    it, so they may close over values of the vmap that called them."""

    __slots__ = ("aliases",)

    def __init__(self, parent, outer):
        super().__init__(parent, outer.name, outer.axis)
        self.aliases = (outer, *getattr(outer, "aliases", ()))

    def to_val_dim(self, x):
        if isinstance(x, BatchTracer) and x._trace.alive and any(
                x._trace is t for t in self.aliases):
            return x.val, x.bdim
        return super().to_val_dim(x)


def _run_vectorised(trace, fn, args, dims):
    """fn(*args) -> (list, aux) run vectorised over `trace`'s axis: (outs, dims, aux)."""
    with new_trace(lambda parent: _RuleBatchTrace(parent, trace)) as sub:
        outs, aux = fn(*[sub.wrap(a, d) for a, d in zip(args, dims, strict=True)])
        pairs = [sub.to_val_dim(o) for o in outs]
    return [v for v, _ in pairs], [d for _, d in pairs], aux


def _to_dim(x, dim, want, size):
    """`x` (batched along `dim` or not) batched along `want` (0) or left unbatched."""
    if type(x) is Zero:
        return x
    if want is None:
        assert dim is None
        return x
    return bdim_to(x, dim, want, size)


class _OutDims:
    """The batch dimensions of a vectorised custom call's outputs (0, or None where an
    output does not vary along the axis), fixed by whichever of its functions runs first,
    so that a rule that runs later (a staged call being differentiated) agrees."""

    def __init__(self, trace, call):
        self.trace, self.call, self.dims = trace, call, None

    def fix(self, groups):
        """groups: lists of (value, dim) that must share their dims (primal and tangent
        outputs); returns the lists with every value at the call's output dims."""
        n = len(groups[0])
        want = [0 if any(g[i][1] is not None for g in groups) else None for i in range(n)]
        if self.dims is None:
            self.dims = want
        for i, (w, d) in enumerate(zip(want, self.dims)):
            if w is not None and d is None:
                raise ValueError(
                    f"vmap of {self.call.kind} function {self.call.name}: its rule returns "
                    f"output {i} varying along the mapped axis where the function's does "
                    f"not; make the function's output depend on the same inputs")
        size = self.trace.axis.size
        return [[_to_dim(v, dim, d, size) for (v, dim), d in zip(g, self.dims)]
                for g in groups]


def _process_batch(trace, call, args):
    pairs = [trace.to_val_dim(x) for x in args]
    vals, in_dims = [v for v, _ in pairs], [d for _, d in pairs]
    out = _OutDims(trace, call)

    def fun_b(*xs):
        outs, dims, _ = _run_vectorised(trace, lambda *a: (call.fun(*a), None), xs, in_dims)
        return out.fix([list(zip(outs, dims))])[0]

    fun_b.__name__ = call.name
    if type(call) is CustomJVPCall:
        batched = CustomJVPCall(call.name, fun_b, _batched_jvp(trace, call, in_dims, out))
    else:
        fwd_b, bwd_b = _batched_fwd_bwd(trace, call, vals, in_dims, out)
        batched = CustomVJPCall(call.name, fun_b, fwd_b, bwd_b)
    with set_current_trace(trace.parent):
        outs = bind_custom(batched, vals)
    return [trace.wrap(o, d) for o, d in zip(outs, out.dims or [], strict=True)]


def _batched_jvp(trace, call, in_dims, out):
    def jvp_b(primals, tangents):
        n = len(primals)

        def both(*xs):
            p, t = call.jvp(list(xs[:n]), list(xs[n:]))
            return [*p, *t], len(p)

        # a tangent has its primal's shape, so it is batched exactly where the primal is
        outs, dims, k = _run_vectorised(trace, both, [*primals, *tangents], [*in_dims] * 2)
        pairs = list(zip(outs, dims))
        p, t = out.fix([pairs[:k], pairs[k:]])
        return p, t

    jvp_b.__name__ = _name(call.jvp)
    return jvp_b


def _batched_fwd_bwd(trace, call, vals, in_dims, out):
    size = trace.axis.size
    in_avals = [aval_of(v) for v in vals]

    def fwd_b(*primals):
        def fn(*xs):
            outs, residuals, res_tree = call.fwd(*xs)
            return [*outs, *residuals], (len(outs), res_tree)

        values, dims, (k, res_tree) = _run_vectorised(trace, fn, primals, in_dims)
        outs = out.fix([list(zip(values[:k], dims[:k]))])[0]
        res_dims = tuple(None if d is None else 0 for d in dims[k:])
        residuals = [_to_dim(r, d, w, size) for r, d, w in zip(values[k:], dims[k:], res_dims)]
        return outs, residuals, (res_tree, res_dims)

    def bwd_b(res_info, residuals, cts):
        res_tree, res_dims = res_info
        cts = [instantiate(c) for c in cts]
        n = len(residuals)

        def fn(*xs):
            return call.bwd(res_tree, list(xs[:n]), list(xs[n:])), None

        got, dims, _ = _run_vectorised(trace, fn, [*residuals, *cts], [*res_dims, *out.dims])
        result = []
        for ct, d, d_in, aval in zip(got, dims, in_dims, in_avals, strict=True):
            if type(ct) is Zero:
                result.append(Zero(aval))
            elif d_in is None:  # an unbatched operand collects the whole batch's cotangent
                result.append(ct if d is None else reduce_sum(ct, (d,)))
            else:
                result.append(bdim_to(ct, d, d_in, size))
        return result

    fwd_b.__name__, bwd_b.__name__ = _name(call.fwd), _name(call.bwd)
    return fwd_b, bwd_b


_PROCESS = {
    EvalTrace: _process_eval,
    JVPTrace: _process_jvp,
    BatchTrace: _process_batch,
    PartialEvalTrace: _process_partial_eval,
    StagingTrace: _process_staging,
}


# ---- the staged call primitives ---------------------------------------------------------
custom_jvp_call_p = Primitive("custom_jvp_call", multiple_results=True, kind="call")
custom_jvp_call_p.inline_param = "call_jaxpr"  # compiled code runs the primal function


@custom_jvp_call_p.def_abstract_eval
def _custom_jvp_call_abstract_eval(*avals, call_jaxpr, jvp, num_consts):
    return call_jaxpr.out_avals


@custom_jvp_call_p.def_impl
def _custom_jvp_call_impl(*args, call_jaxpr, jvp, num_consts):
    return eval_jaxpr(call_jaxpr, [], *args)


def _check_consts(kind, call_jaxpr, const_tangents):
    """A staged call's captured values must not be differentiated: its rule cannot say how."""
    for t in const_tangents:
        if type(t) is not Zero:
            raise TypeError(
                f"{kind} function {call_jaxpr.debug_name} closes over a value that is being "
                "differentiated; pass that value as an argument instead")


def _custom_jvp_call_jvp(primals, tangents, *, call_jaxpr, jvp, num_consts):
    _check_consts("custom_jvp", call_jaxpr, tangents[:num_consts])
    args, ts = primals[num_consts:], tangents[num_consts:]
    return jvp(list(args), [instantiate(t) for t in ts])


custom_jvp_call_p.def_jvp(_custom_jvp_call_jvp)

custom_vjp_call_p = Primitive("custom_vjp_call", multiple_results=True, kind="call")
custom_vjp_call_p.inline_param = "call_jaxpr"


@custom_vjp_call_p.def_abstract_eval
def _custom_vjp_call_abstract_eval(*avals, call_jaxpr, fwd, bwd, num_consts):
    return call_jaxpr.out_avals


@custom_vjp_call_p.def_impl
def _custom_vjp_call_impl(*args, call_jaxpr, fwd, bwd, num_consts):
    return eval_jaxpr(call_jaxpr, [], *args)


def _custom_vjp_call_jvp(primals, tangents, *, call_jaxpr, fwd, bwd, num_consts):
    _check_consts("custom_vjp", call_jaxpr, tangents[:num_consts])
    return fwd_and_lin(fwd, bwd, primals[num_consts:], tangents[num_consts:])


custom_vjp_call_p.def_jvp(_custom_vjp_call_jvp)

# custom_lin: the tangent map of a custom_vjp function. It only ever exists to be
# transposed (into a call of bwd); evaluating it means forward mode was requested.
custom_lin_p = Primitive("custom_lin", multiple_results=True, kind="call")


@custom_lin_p.def_abstract_eval
def _custom_lin_abstract_eval(*avals, num_res, bwd, res_tree, out_avals):
    return [ShapedArray(a.shape, a.dtype, a.weak_type) for a in out_avals]


@custom_lin_p.def_impl
def _custom_lin_impl(*args, num_res, bwd, res_tree, out_avals):
    raise TypeError(
        f"cannot use forward-mode differentiation (jvp, jacfwd) on a custom_vjp function "
        f"(its bwd is {_name(bwd)}); use reverse mode (grad, vjp, jacrev), or custom_jvp"
    )


def _custom_lin_transpose(cts, *args, num_res, bwd, res_tree, out_avals):
    residuals = args[:num_res]
    if any(is_undefined(r) for r in residuals):
        raise TypeError("custom_lin: residuals cannot be linear")
    # the user's bwd takes arrays: unused outputs' symbolic zero cotangents become zeros
    cts_in = bwd(res_tree, list(residuals), [instantiate(c) for c in cts])
    return [None] * num_res + [None if type(c) is Zero else c for c in cts_in]


custom_lin_p.def_transpose(_custom_lin_transpose)


# ---- batching of staged calls -----------------------------------------------------------
# A vectorised staged call is again a custom call: its jaxpr is batched, and its rules
# (jvp; fwd and bwd) are wrapped to run vectorised. Every output, residual and tangent of
# the batched call carries the batch dimension first, so the wrapped rules agree with the
# batched jaxpr without tracking where each batch dimension went.
def _to_front(args, dims):
    """Batched args moved to dimension 0 (unbatched ones left alone), and their dims."""
    return ([x if d is None else moveaxis(x, d, 0) for x, d in zip(args, dims)],
            [None if d is None else 0 for d in dims])


def _run_batched(fn, args, dims, axis):
    """fn(*args) -> list, vectorised over `axis`; every output batched along 0."""
    outs, out_dims = batch_flat(lambda *xs: [instantiate(o) for o in fn(*xs)], list(args),
                                list(dims), axis, "vmap of a custom rule")
    return [bdim_at_front(o, d, axis.size) for o, d in zip(outs, out_dims)]


def _custom_jvp_call_batching(axis, args, dims, *, call_jaxpr, jvp, num_consts):
    args, dims = _to_front(args, dims)
    jaxpr, consts, _ = batch_call_jaxpr(call_jaxpr, axis, dims, force_front=True)
    arg_dims = dims[num_consts:]
    n_out = len(call_jaxpr.outvars)

    def batched_jvp(primals, tangents):
        # a tangent has its primal's shape, so it is batched exactly where the primal is
        def fn(*xs):
            p_out, t_out = jvp(list(xs[:len(primals)]), list(xs[len(primals):]))
            return [*p_out, *t_out]

        outs = _run_batched(fn, [*primals, *tangents], [*arg_dims, *arg_dims], axis)
        return outs[:n_out], outs[n_out:]

    batched_jvp.__name__ = _name(jvp)
    outs = custom_jvp_call_p.bind(*consts, *args, call_jaxpr=jaxpr, jvp=batched_jvp,
                                  num_consts=len(consts) + num_consts)
    return outs, [0] * len(outs)


def _batched_bwd(bwd, axis, arg_batched):
    """bwd for residuals and output cotangents batched along 0: cotangents of batched
    arguments come back batched along 0, those of unbatched arguments summed over it."""

    def batched(res_tree, residuals, cts):
        cts = [instantiate(c) for c in cts]
        n = len(residuals)

        def fn(*xs):
            return bwd(res_tree, list(xs[:n]), list(xs[n:]))

        outs = _run_batched(fn, [*residuals, *cts], [0] * (n + len(cts)), axis)
        return [o if b else reduce_sum(o, (0,)) for o, b in zip(outs, arg_batched)]

    batched.__name__ = _name(bwd)
    return batched


def _custom_vjp_call_batching(axis, args, dims, *, call_jaxpr, fwd, bwd, num_consts):
    args, dims = _to_front(args, dims)
    jaxpr, consts, _ = batch_call_jaxpr(call_jaxpr, axis, dims, force_front=True)
    arg_dims = dims[num_consts:]
    n_out = len(call_jaxpr.outvars)

    def batched_fwd(*primals):
        def fn(*xs):
            outs, residuals, res_tree = fwd(*xs)
            return [*outs, *residuals], res_tree

        outs, _, res_tree = _batch_with_aux(fn, primals, arg_dims, axis)
        return outs[:n_out], outs[n_out:], res_tree

    outs = custom_vjp_call_p.bind(
        *consts, *args, call_jaxpr=jaxpr, fwd=batched_fwd,
        bwd=_batched_bwd(bwd, axis, [d is not None for d in arg_dims]),
        num_consts=len(consts) + num_consts)
    return outs, [0] * len(outs)


def _batch_with_aux(fn, args, dims, axis):
    """fn(*args) -> (list, aux) vectorised over `axis`: (outs along 0, dims, aux)."""
    with new_trace(lambda parent: BatchTrace(parent, "vmap of a custom rule", axis)) as t:
        outs, aux = fn(*[t.wrap(a, d) for a, d in zip(args, dims, strict=True)])
        pairs = [t.to_val_dim(instantiate(o)) for o in outs]
    return [bdim_at_front(v, d, axis.size) for v, d in pairs], [0] * len(pairs), aux


def _custom_lin_batching(axis, args, dims, *, num_res, bwd, res_tree, out_avals):
    args = [bdim_at_front(x, d, axis.size) for x, d in zip(args, dims)]
    out_avals = tuple(batched_aval(a, 0, axis.size) for a in out_avals)
    n_tangents = len(args) - num_res
    outs = custom_lin_p.bind(*args, num_res=num_res,
                             bwd=_batched_bwd(bwd, axis, [True] * n_tangents),
                             res_tree=res_tree, out_avals=out_avals)
    return outs, [0] * len(outs)


custom_jvp_call_p.def_batching(_custom_jvp_call_batching)
custom_vjp_call_p.def_batching(_custom_vjp_call_batching)
custom_lin_p.def_batching(_custom_lin_batching)
