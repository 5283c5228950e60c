"""`cond` and `switch`: choose one of several functions by a run-time index.

    y = cond(x.sum() > 0, lambda x: x * 2, lambda x: -x, x)
    y = switch(i, [f0, f1, f2], x, w)              # i clamped into [0, 2]

Both bind one primitive, `cond`, whose operands are `[index, *consts, *operands]`: an int32
0-d index (a bool predicate becomes 0 for false, 1 for true, so `branches` is
`(false_fun, true_fun)`), the values the branches capture (those of every branch, merged),
then the operands. Its `branches` param is a tuple of constant-free jaxprs that all take the
same inputs (each ignores the other branches' captured values) and return outputs of one
tree structure, shape and dtype.

Rules: JVP is a cond of the branches' JVPs; linearize splits every branch with the same
unknown inputs and lets each branch return the residuals of all of them (zeros for the ones
it does not produce); the transpose is a cond of the branches' transposes with the same
index. Under vmap an unbatched index batches each branch; a batched index becomes a cond
that runs only the common branch when every example takes the same one, and otherwise
evaluates every branch and selects per example; there an example that did not take a
branch feeds it the operands of one that did, with a zero derivative (`_masking`), so that
neither the values nor the derivatives of a branch where it was not taken (log(0),
sqrt(0)) reach a result or a gradient.
"""

import numpy as np

from mytorch.core import dtypes, tree_util
from mytorch.core.ad_util import Zero, instantiate, is_differentiable, is_undefined, zeros_p
from mytorch.core.aval import ShapedArray
from mytorch.core.jaxpr import Jaxpr, JaxprEqn, Var, eval_jaxpr
from mytorch.core.primitive import Primitive
from mytorch.core.source_info import where
from mytorch.core.staging import StagingTrace
from mytorch.core.trace import aval_of, set_current_trace
from mytorch.lax._batching import batch_call_jaxpr, bdim_at_front, not_mapped
from mytorch.lax._masking import fed_dims, feed, keep_like
from mytorch.lax._utils import asarray
from mytorch.transforms.closure import trace_closed_over
from mytorch.transforms.jvp import jvp_call_jaxpr
from mytorch.transforms.partial_eval import partial_eval_jaxpr
from mytorch.transforms.transpose import backward_pass

__all__ = ["cond", "switch", "cond_p"]

cond_p = Primitive("cond", multiple_results=True, kind="call")


# ---- the user-level functions ------------------------------------------------------------
def cond(pred, true_fun, false_fun, *operands):
    """`true_fun(*operands)` if `pred` else `false_fun(*operands)`, staged as one `cond`.

    pred: a 0-d bool or number (nonzero is true). operands: pytrees of arrays.
    Both functions must return pytrees of the same structure, shapes and dtypes.
    """
    p = asarray(pred)
    _check_scalar("cond", "predicate", p)
    if not dtypes.is_bool(p.dtype):
        from mytorch.lax.elementwise import ne

        p = ne(p, 0)
    from mytorch.lax.elementwise import convert_element_type

    index = convert_element_type(p, np.int32)
    return _bind_branches("cond", index, (false_fun, true_fun), ("false_fun", "true_fun"),
                          operands)


def switch(index, branches, *operands):
    """`branches[index](*operands)`, staged as one `cond`; `index` (a 0-d integer) is
    clamped into [0, len(branches) - 1]. All branches must return pytrees of the same
    structure, shapes and dtypes."""
    branches = tuple(branches)
    if not branches:
        raise ValueError("switch: `branches` must contain at least one function")
    for i, b in enumerate(branches):
        if not callable(b):
            raise TypeError(f"switch: branches[{i}] is not callable: {b!r:.80}")
    idx = asarray(index)
    _check_scalar("switch", "index", idx)
    if not dtypes.is_int(idx.dtype):
        raise TypeError(f"switch: the index must be an integer, got {idx.aval.str_short()}"
                        f"{where()}")
    from mytorch.lax.elementwise import clamp, convert_element_type

    idx = clamp(np.int32(0), convert_element_type(idx, np.int32), np.int32(len(branches) - 1))
    names = tuple(f"branches[{i}]" for i in range(len(branches)))
    return _bind_branches("switch", idx, branches, names, operands)


def _check_scalar(op, what, x):
    if x.ndim != 0:
        raise TypeError(f"{op}: the {what} must be a 0-d (scalar) value, got "
                        f"{x.aval.str_short()}{where()}")


def _bind_branches(op, index, funs, names, operands):
    """Trace each of `funs` on the flattened operands, check the outputs agree, bind."""
    leaves, in_tree = tree_util.tree_flatten(operands)
    leaves = [asarray(x) for x in leaves]
    avals = [aval_of(x) for x in leaves]
    traced, out_trees = [], []
    for fun in funs:
        store = {}

        def flat(*xs, fun=fun, store=store):
            out = fun(*tree_util.tree_unflatten(in_tree, xs))
            out_leaves, store["tree"] = tree_util.tree_flatten(out)
            return [asarray(x) for x in out_leaves]

        name = f"lax.cond branch {getattr(fun, '__name__', '')}".rstrip()
        traced.append(trace_closed_over(flat, avals, name))
        out_trees.append(store["tree"])
    for i in range(1, len(funs)):
        _check_same_outputs(op, names[0], names[i], out_trees[0], out_trees[i],
                            traced[0][0].out_avals, traced[i][0].out_avals)
    branches, consts = merge_branches(traced)
    outs = cond_p.bind(index, *consts, *leaves, branches=branches)
    return tree_util.tree_unflatten(out_trees[0], outs)


def _describe(tree, avals):
    return f"{tree} with leaves [{', '.join(a.str_short() for a in avals)}]"


def _check_same_outputs(op, name_a, name_b, tree_a, tree_b, avals_a, avals_b):
    """Raise a TypeError showing both sides when two branches' outputs disagree."""
    problem = fix = None
    if tree_a != tree_b:
        problem = "different tree structures"
        fix = "return the same pytree (tuple/list/dict layout) from every branch"
    else:
        for k, (a, b) in enumerate(zip(avals_a, avals_b)):
            if a.shape != b.shape or a.dtype != b.dtype:
                problem = (f"different types at leaf {k}: {a.str_short()} vs "
                           f"{b.str_short()}")
                fix = (f"make {name_b} return {a.str_short()} there (e.g. with "
                       f".astype(mnp.{a.dtype.name}), or mnp.broadcast_to for the shape)")
                break
    if problem is not None:
        raise TypeError(
            f"{op}: the branches must return the same tree structure, shapes and dtypes, "
            f"but {name_a} and {name_b} have {problem}{where()}:\n"
            f"  {name_a} returns {_describe(tree_a, avals_a)}\n"
            f"  {name_b} returns {_describe(tree_b, avals_b)}\nRevise the branches: {fix}.")


def merge_branches(traced):
    """Branches `[(jaxpr_i, consts_i)]` (jaxpr_i takes consts_i then common inputs) as
    (tuple of jaxprs taking *all* consts then the common inputs, all consts)."""
    all_consts = [c for _, cs in traced for c in cs]
    pads = [[Var(aval_of(c)) for c in cs] for _, cs in traced]
    out = []
    for i, (j, cs) in enumerate(traced):
        n = len(cs)
        const_vars = [v for k, p in enumerate(pads) for v in (j.invars[:n] if k == i else p)]
        out.append(Jaxpr([], [*const_vars, *j.invars[n:]], j.eqns, j.outvars, j.debug_name))
    return tuple(out), all_consts


# ---- abstract evaluation and eager evaluation ---------------------------------------------
@cond_p.def_abstract_eval
def _cond_abstract_eval(index, *avals, branches):
    if index.shape != () or index.dtype != np.int32:
        raise TypeError(f"cond: the index must be a 0-d int32, got {index.str_short()}")
    for k, b in enumerate(branches):
        ins = b.in_avals
        if len(ins) != len(avals) or any(
                a.shape != x.shape or a.dtype != x.dtype for a, x in zip(ins, avals)):
            raise TypeError(
                f"cond: branch {k} takes ({', '.join(a.str_short() for a in ins)}) but the "
                f"operands are ({', '.join(a.str_short() for a in avals)})")
    return branches[0].out_avals


# ---- forward mode ----------------------------------------------------------------------
def _cond_jvp(primals, tangents, *, branches):
    index, args = primals[0], primals[1:]
    nonzero = [type(t) is not Zero and is_differentiable(aval_of(p))
               for p, t in zip(args, tangents[1:])]
    avals = [aval_of(p) for p in args]
    traced = [jvp_call_jaxpr(b, avals, nonzero, f"{b.debug_name}_jvp") for b in branches]
    new_branches, consts = merge_branches(traced)
    ts = [t for t, nz in zip(tangents[1:], nonzero) if nz]
    outs = cond_p.bind(index, *consts, *args, *ts, branches=new_branches)
    n_out = len(branches[0].outvars)
    return outs[:n_out], outs[n_out:]


cond_p.def_jvp(_cond_jvp)


# ---- reverse mode: partial evaluation and transpose --------------------------------------
def split_branches(branches, unknowns, saveable):
    """Partially evaluate every branch with the same unknown inputs.

    Returns (known, staged, out_unknowns, res_avals): `known[i]` takes the known inputs and
    returns the known outputs then every branch's residuals (zeros for the other branches'
    ones); `staged[i]` takes all residuals then the unknown inputs and returns the unknown
    outputs; an output is unknown when it is in any branch.
    """
    splits = [partial_eval_jaxpr(b, unknowns, saveable) for b in branches]
    out_unknowns = [any(s[2][k] for s in splits) for k in range(len(branches[0].outvars))]
    parts = [_force_unknown(known, staged, outs_u, num_res, out_unknowns)
             for known, staged, outs_u, num_res in splits]
    res_avals = [[v.aval for v in res] for _, _, res in parts]
    all_res = [a for r in res_avals for a in r]
    known_out, staged_out = [], []
    for i, (known, staged, res) in enumerate(parts):
        eqns, outs = list(known.eqns), []
        for k, r in enumerate(res_avals):
            if k == i:
                outs += known.outvars[len(known.outvars) - len(res):]
                continue
            for aval in r:  # another branch's residual: zeros of its type
                v = Var(aval)
                eqns.append(JaxprEqn(zeros_p, [], _zeros_params(aval), [v]))
                outs.append(v)
        n_known = len(known.outvars) - len(res)
        known_out.append(Jaxpr([], known.invars, eqns, [*known.outvars[:n_known], *outs],
                               known.debug_name))
        pads = [v for k, r in enumerate(res_avals)
                for v in (staged.invars[:len(res)] if k == i else [Var(a) for a in r])]
        staged_out.append(Jaxpr([], [*pads, *staged.invars[len(res):]], staged.eqns,
                                staged.outvars, staged.debug_name))
    return tuple(known_out), tuple(staged_out), out_unknowns, all_res


def _zeros_params(aval):
    return dict(shape=aval.shape, dtype=aval.dtype, weak_type=aval.weak_type)


def _force_unknown(known, staged, outs_u, num_res, out_unknowns):
    """Make the known outputs that another branch has unknown outputs of `staged`, passed
    through as extra residuals. Returns (known, staged, residual vars of known)."""
    n_known = len(known.outvars) - num_res
    known_outs, res = known.outvars[:n_known], list(known.outvars[n_known:])
    res_in = list(staged.invars[:num_res])
    keep, k_it, s_it, staged_outs = [], iter(known_outs), iter(staged.outvars), []
    for u_here, u_all in zip(outs_u, out_unknowns):
        if u_here:
            staged_outs.append(next(s_it))
        elif u_all:  # known here, unknown elsewhere: a residual the staged part returns
            v = next(k_it)
            res.append(v)
            w = Var(v.aval)
            res_in.append(w)
            staged_outs.append(w)
        else:
            keep.append(next(k_it))
    known = Jaxpr([], known.invars, known.eqns, [*keep, *res], known.debug_name)
    staged = Jaxpr([], [*res_in, *staged.invars[num_res:]], staged.eqns, staged_outs,
                   staged.debug_name)
    return known, staged, res


def _everything(*_, **__):
    return True


def _cond_partial_eval(trace, args, params):
    """Linearize: the index is known; known outputs and residuals are computed now, the
    unknown outputs are staged as a cond of the branches' unknown parts."""
    unknowns = [trace.is_unknown(x) for x in args]
    if not any(unknowns):
        with set_current_trace(trace.parent):
            return cond_p.bind(*args, **params)
    if unknowns[0]:  # an unknown index: stage the whole cond
        return StagingTrace.process_primitive(trace, cond_p, args, params)
    known, staged, out_unknowns, res_avals = split_branches(
        params["branches"], unknowns[1:], _everything)
    known_args = [x for x, u in zip(args, unknowns) if not u]
    with set_current_trace(trace.parent):
        known_outs = cond_p.bind(*known_args, branches=known)
    n_known = len(known_outs) - len(res_avals)
    residuals = known_outs[n_known:]
    unknown_args = [x for x, u in zip(args, unknowns) if u]
    staged_outs = StagingTrace.process_primitive(
        trace, cond_p, [args[0], *residuals, *unknown_args], dict(branches=staged))
    known_it, staged_it = iter(known_outs[:n_known]), iter(staged_outs)
    return [next(staged_it) if u else next(known_it) for u in out_unknowns]


def _cond_partial_eval_jaxpr(eqn, unknowns, saveable):
    """Split a cond equation inside a jaxpr being split (e.g. by jit under grad)."""
    if unknowns[0]:
        return _stage_whole(eqn)
    known, staged, out_unknowns, res_avals = split_branches(
        eqn.params["branches"], unknowns[1:], saveable)
    res = [Var(a) for a in res_avals]
    known_in = [v for v, u in zip(eqn.invars, unknowns) if not u]
    known_eqn = eqn.replace(
        invars=known_in, outvars=[v for v, u in zip(eqn.outvars, out_unknowns) if not u] + res,
        params=dict(branches=known))
    staged_in = [eqn.invars[0], *res, *[v for v, u in zip(eqn.invars, unknowns) if u]]
    staged_eqn = eqn.replace(
        invars=staged_in, outvars=[v for v, u in zip(eqn.outvars, out_unknowns) if u],
        params=dict(branches=staged))
    return known_eqn, staged_eqn, out_unknowns


def _stage_whole(eqn):
    """(known, staged) when the index is unknown: nothing is known (the known equation is
    an empty cond on a literal index, which dead-code elimination removes)."""
    from mytorch.core.jaxpr import Literal

    n = len(eqn.outvars)
    empty = tuple(Jaxpr([], [], [], [], b.debug_name) for b in eqn.params["branches"])
    zero = Literal(asarray(np.int32(0)), ShapedArray((), np.dtype(np.int32)))
    known_eqn = eqn.replace(invars=[zero], outvars=[], params=dict(branches=empty))
    return known_eqn, eqn, [True] * n


def _cond_transpose(cts, index, *args, branches):
    """A cond of the branches' transposes, with the same (known) index. Symbolic zero
    cotangents (unused results) stay zeros inside the branches: they are not operands."""
    if is_undefined(index):
        raise TypeError("cond: cannot transpose with respect to the index")
    linear = [is_undefined(a) for a in args]
    values = [a for a, lin in zip(args, linear) if not lin]
    val_avals = [aval_of(v) for v in values]
    nz_cts = [c for c in cts if type(c) is not Zero]
    ct_avals = [aval_of(c) for c in nz_cts]
    n_val = len(values)

    def transposer(b):
        def fun(*xs):
            it, ct_it = iter(xs[:n_val]), iter(xs[n_val:])
            full = [None if lin else next(it) for lin in linear]
            cts_out = [c if type(c) is Zero else next(ct_it) for c in cts]
            cts_in = backward_pass(b, [], linear, full, cts_out)
            return [instantiate(c) for c, lin in zip(cts_in, linear) if lin]
        return trace_closed_over(fun, [*val_avals, *ct_avals], f"{b.debug_name}_transpose")

    new_branches, consts = merge_branches([transposer(b) for b in branches])
    outs = cond_p.bind(index, *consts, *values, *nz_cts, branches=new_branches)
    out_it = iter(outs)
    return [None, *[next(out_it) if lin else None for lin in linear]]


cond_p.def_rule("partial_eval", _cond_partial_eval)
cond_p.def_rule("partial_eval_jaxpr", _cond_partial_eval_jaxpr)
cond_p.def_transpose(_cond_transpose)


# ---- batching ------------------------------------------------------------------------------
def _batch_branches(branches, axis, dims):
    """Every branch vectorised with all outputs batched along 0: (jaxprs, consts)."""
    traced = []
    for b in branches:
        j, consts, _ = batch_call_jaxpr(b, axis, dims, force_front=True,
                                        name=f"{b.debug_name}_vmap")
        traced.append((j, consts))
    return merge_branches(traced)


def _cond_batching(axis, args, dims, *, branches):
    """An unbatched index batches each branch; a batched one selects per example."""
    index, ops, op_dims = args[0], list(args[1:]), list(dims[1:])
    batched, consts = _batch_branches(branches, axis, op_dims)
    n_out = len(branches[0].outvars)
    if dims[0] is not_mapped:
        outs = cond_p.bind(index, *consts, *ops, branches=batched)
        return outs, [0] * n_out
    idx = bdim_at_front(index, dims[0], axis.size)
    every = _EveryBranch(branches, axis, op_dims)
    return _select_batched(idx, batched, consts, ops, every), [0] * n_out


class _EveryBranch:
    """Every branch run by every example, where an example that did not take a branch
    feeds it the batched operands of one that did, with a zero derivative
    (`_masking.feed`)."""

    def __init__(self, branches, axis, dims):
        self.size, self.dims = axis.size, dims
        new_dims = fed_dims(dims)
        self.batched = [batch_call_jaxpr(b, axis, new_dims, force_front=True,
                                         name=f"{b.debug_name}_vmap")[:2] for b in branches]

    def outputs(self, i, ops):
        """Each branch's outputs (batched at 0) given the batched (B,) index `i`. With more
        than two branches, one that no example takes is not run (zeros stand in): it has
        no example whose operands it could safely be fed."""
        from mytorch.core.ad_util import zeros
        from mytorch.lax.elementwise import eq
        from mytorch.lax.reductions import reduce_or

        outs = []
        for n, (j, consts) in enumerate(self.batched):
            def run(i, *ops, n=n, j=j, consts=consts):
                fed = feed(eq(i, np.int32(n)), list(ops), self.dims, self.size)
                return eval_jaxpr(j, [], *consts, *fed)

            def skip(i, *ops, j=j):  # zeros of a tape type read as an empty tape
                return [zeros(v.aval) for v in j.outvars]

            if len(self.batched) == 2:  # both are taken, or this cond is not run
                outs.append(run(i, *ops))
            else:
                outs.append(cond(reduce_or(eq(i, np.int32(n)), (0,)), run, skip, i, *ops))
        return outs


def _select_batched(idx, batched, consts, ops, every):
    """Per-example branch choice by the (B,) int32 `idx`: a cond that runs branch k alone
    when every example takes k, else every branch with a select_n per output."""
    from mytorch.lax.elementwise import eq, select_n
    from mytorch.lax.reductions import reduce_max, reduce_min

    operands = [idx, *consts, *ops]
    avals = [aval_of(x) for x in operands]
    n_consts = len(consts)

    def one(b):
        return lambda i, *xs: eval_jaxpr(b, [], *xs)

    def select_all(i, *xs):
        per_branch = every.outputs(i, xs[n_consts:])
        return [select_n(keep_like(i, o[0]), *o) for o in zip(*per_branch, strict=True)]

    funs = [one(b) for b in batched] + [select_all]
    outer, outer_consts = merge_branches(
        [trace_closed_over(f, avals, "vmap_select") for f in funs])
    lo, hi = reduce_min(idx, (0,)), reduce_max(idx, (0,))
    outer_index = select_n(eq(lo, hi), np.int32(len(batched)), lo)
    return cond_p.bind(outer_index, *outer_consts, *operands, branches=outer)


cond_p.def_batching(_cond_batching)
