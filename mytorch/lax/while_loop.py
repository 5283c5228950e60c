"""`while_loop`: a loop with a traced predicate, as the `while` primitive.

    x = lax.while_loop(lambda c: c[0] < 10, lambda c: (c[0] + 1, c[1] * 2.0), (0, x0))

The equation carries two constant-free jaxprs: `cond_jaxpr` (cond consts + carries -> a
scalar bool) and `body_jaxpr` (body consts + carries -> carries). Its operands are the cond
consts, the body consts (values the functions closed over), then the initial carries.

Rules: eager evaluation loops in Python over the jaxprs; the JVP is a `while` over
(primal, tangent) carries whose predicate reads only the primals; batching with an
unbatched predicate batches the body, and with a batched predicate runs until every
element is done, keeping each finished element's carry with `select_n` (a finished element
runs the body on a running one's operands: see `_masking`). Reverse mode:
see the section at the end (the tangent loop is a `scan` over the residuals, stacked or
read from a run-time tape).
"""

import numpy as np

from mytorch.core import tree_util
from mytorch.core.ad_util import Zero, instantiate, is_differentiable, tangent_aval
from mytorch.core.array import ArrayImpl
from mytorch.core.aval import ShapedArray
from mytorch.core.dtypes import is_opaque
from mytorch.core.jaxpr import Jaxpr, Var, eval_jaxpr
from mytorch.core.primitive import Primitive
from mytorch.core.source_info import user_frame, where
from mytorch.core.staging import StagingTrace
from mytorch.core.trace import (
    aval_of, is_differentiated, is_known, known_value, set_current_trace,
)
from mytorch.lax._batching import bdim_at_front, not_mapped
from mytorch.lax._carry import (
    LoopNames, check_carry_tree, check_carry_types, describe_value, promote_weak_carries,
)
from mytorch.lax._loop_rules import (
    WhileOperands, batched_pred, masked, while_carry_dims,
)
from mytorch.lax._masking import fed_dims, feed, guard, guard_linear
from mytorch.lax._utils import asarray, leaves_as_arrays
from mytorch.lax.elementwise import select_n
from mytorch.lax.scan import scan_p
from mytorch.lax.structural import broadcast_in_dim, concatenate, expand_dims, full
from mytorch.lax.while_tape import tape_aval, while_tape_p
from mytorch.transforms.batching import batch_flat
from mytorch.transforms.closure import trace_closed_over
from mytorch.transforms.fixpoint import fixpoint
from mytorch.transforms.jvp import jvp_jaxpr
from mytorch.transforms.partial_eval import partial_eval_jaxpr

__all__ = ["while_loop", "while_p", "named_while_loop"]

while_p = Primitive("while", multiple_results=True, kind="call")


# ---- the user-facing function --------------------------------------------------------------
def _at(info):
    return f" (at {info})" if info is not None else ""


def _same_avals(a, b):
    return len(a) == len(b) and all(
        x.shape == y.shape and x.dtype == y.dtype for x, y in zip(a, b))


_WHILE = LoopNames("while_loop", "body_fun", "init_val")


def while_loop(cond_fun, body_fun, init_val, *, checkpoint_every=None):
    """Repeat `val = body_fun(val)` while `cond_fun(val)` is true; return the final `val`.

    Args:
      cond_fun: carry -> scalar bool array.
      body_fun: carry -> carry, of the same tree structure, shapes and dtypes (a
        Python-scalar leaf of `init_val` takes the dtype `body_fun` gives it, as in JAX).
      init_val: a pytree of arrays (the initial carry).
      checkpoint_every: for reverse mode, keep only every k-th carry and recompute the
        other iterations' residuals segment by segment in the backward pass (memory
        O(N/k + k) instead of O(N) for N iterations); None keeps every iteration's.

    Returns:
      The final carry (same structure, shapes and dtypes as `init_val`; weak types as
      `body_fun` returns them).

    Raises:
      TypeError: `body_fun` changes the carry's structure/shape/dtype, or `cond_fun` does
      not return a scalar bool.

    >>> while_loop(lambda c: c < 10, lambda c: c * 2, 1)   # 16
    """
    if checkpoint_every is not None and (not isinstance(checkpoint_every, int)
                                         or isinstance(checkpoint_every, bool)
                                         or checkpoint_every < 1):
        raise ValueError(f"while_loop: checkpoint_every must be a positive int or None, got "
                         f"{checkpoint_every!r}{_at(user_frame())}")
    return named_while_loop(cond_fun, body_fun, init_val, checkpoint_every, _WHILE)


def named_while_loop(cond_fun, body_fun, init_val, checkpoint_every, names):
    """while_loop, naming `names.op` (while_loop or fori_loop) in its errors."""
    call_site = where()
    for what, fn in (("cond_fun", cond_fun), ("body_fun", body_fun)):
        if not callable(fn):
            raise TypeError(f"{names.op}: {what} must be callable, got "
                            f"{describe_value(fn)}{call_site}")
    leaves, in_tree = leaves_as_arrays(init_val, f"{names.op}: {names.init}")

    def trace_body(avals):
        def flat_body(*xs):
            out = body_fun(tree_util.tree_unflatten(in_tree, xs))
            out_leaves, tree = leaves_as_arrays(out, f"{names.op}: {names.fun}'s carry")
            check_carry_tree(names, in_tree, avals, tree, [aval_of(x) for x in out_leaves],
                             call_site)
            return out_leaves

        body_jaxpr, body_consts = trace_closed_over(flat_body, avals,
                                                    f"lax.{names.op} body_fun")
        return (body_jaxpr, body_consts), [v.aval for v in body_jaxpr.outvars]

    leaves, (body_jaxpr, body_consts) = promote_weak_carries(leaves, trace_body)
    avals = [aval_of(x) for x in leaves]
    check_carry_types(names, in_tree, avals, [v.aval for v in body_jaxpr.outvars], call_site)

    def flat_cond(*xs):
        out = cond_fun(tree_util.tree_unflatten(in_tree, xs))
        out_leaves, tree = tree_util.tree_flatten(out)
        if len(out_leaves) != 1:
            raise TypeError(f"{names.op}: cond_fun must return one scalar bool, got "
                            f"{describe_value(out)}{call_site}")
        return [asarray(out_leaves[0])]

    cond_jaxpr, cond_consts = trace_closed_over(flat_cond, avals, f"lax.{names.op} cond_fun")
    pred = cond_jaxpr.outvars[0].aval
    if pred.shape != () or pred.dtype != np.bool_:
        raise TypeError(f"{names.op}: cond_fun must return a scalar bool, got "
                        f"{pred.str_short()}{call_site}. Reduce it with .all() or .any(), "
                        "or compare (c < n)")
    outs = while_p.bind(*cond_consts, *body_consts, *leaves, cond_jaxpr=cond_jaxpr,
                        body_jaxpr=body_jaxpr, cond_nconsts=len(cond_consts),
                        body_nconsts=len(body_consts), checkpoint_every=checkpoint_every)
    return tree_util.tree_unflatten(in_tree, outs)


# ---- abstract evaluation --------------------------------------------------------------------
def _operands(args, cond_nconsts, body_nconsts):
    """A `while` equation's operands (or flags, dims, ...) as WhileOperands."""
    return WhileOperands.split(args, cond_consts=cond_nconsts, body_consts=body_nconsts)


@while_p.def_abstract_eval
def _while_abstract_eval(*avals, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts,
                         checkpoint_every):
    carry = _operands(avals, cond_nconsts, body_nconsts).carry
    pred = [v.aval for v in cond_jaxpr.outvars]
    if len(pred) != 1 or pred[0].shape != () or pred[0].dtype != np.bool_:
        raise TypeError("while: cond_jaxpr must return one scalar bool, got "
                        f"[{', '.join(a.str_short() for a in pred)}]")
    body_out = [v.aval for v in body_jaxpr.outvars]
    if not _same_avals(carry, body_out) or len(body_jaxpr.invars) != body_nconsts + len(carry):
        raise TypeError(
            "while: body_jaxpr must map the carries to carries of the same shapes and dtypes;"
            f" carries [{', '.join(a.str_short() for a in carry)}], body outputs "
            f"[{', '.join(a.str_short() for a in body_out)}]")
    return body_out  # the body's types, weak types included (as in JAX)


# ---- forward mode --------------------------------------------------------------------------
def _jvp_body(body_jaxpr, avals, nz_consts, nz_carry):
    """Trace the JVP of the body with tangents for `nz_consts` and `nz_carry`.

    Returns (jaxpr, consts, out_nonzero): the jaxpr takes consts, body consts, nonzero
    const tangents, carries, nonzero carry tangents, and returns carries followed by the
    tangents of the `nz_carry` carries; `out_nonzero` flags those outputs and any whose
    tangent the body makes nonzero.
    """
    nb = len(nz_consts)
    body, consts, out_nz = jvp_jaxpr(body_jaxpr, [*nz_consts, *nz_carry], nz_carry,
                                     "while_body_jvp", avals)
    n_c, n = len(consts), len(avals)
    primals, tangents = body.invars[n_c:n_c + n], body.invars[n_c + n:]
    n_bt = sum(nz_consts)
    invars = [*body.invars[:n_c], *primals[:nb], *tangents[:n_bt], *primals[nb:],
              *tangents[n_bt:]]
    m = len(nz_carry)
    t_out = iter(body.outvars[m:])
    t_outs = [next(t_out) if f else None for f in out_nz]  # out_nz holds every nz_carry
    outvars = [*body.outvars[:m], *[t for t, nz in zip(t_outs, nz_carry) if nz]]
    return Jaxpr([], invars, body.eqns, outvars, body.debug_name), consts, out_nz


def _jvp_fixpoint(body_jaxpr, avals, nz_consts, nz_carry):
    """Grow the set of carries with nonzero tangents until the body preserves it."""
    diff = [is_differentiable(a) for a in avals[len(nz_consts):]]

    def step(nz_carry):
        jaxpr, consts, out_nz = _jvp_body(body_jaxpr, avals, nz_consts, nz_carry)
        return [(a or b) and d for a, b, d in zip(nz_carry, out_nz, diff)], (jaxpr, consts)

    nz_carry, (jaxpr, consts) = fixpoint(step, [nz and d for nz, d in zip(nz_carry, diff)],
                                         name="while_jvp")
    return jaxpr, consts, nz_carry


def _with_unused(jaxpr, extra_avals):
    """`jaxpr` taking further inputs of `extra_avals` at the end, which it ignores."""
    invars = [*jaxpr.invars, *[Var(a) for a in extra_avals]]
    return Jaxpr([], invars, jaxpr.eqns, jaxpr.outvars, jaxpr.debug_name)


def _while_jvp(primals, tangents, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts,
               checkpoint_every):
    cc, bc, carry = _operands(primals, cond_nconsts, body_nconsts)
    _, bc_t, carry_t = _operands(tangents, cond_nconsts, body_nconsts)
    nz_consts = [type(t) is not Zero and is_differentiable(aval_of(p))
                 for p, t in zip(bc, bc_t)]
    nz_init = [type(t) is not Zero for t in carry_t]
    avals = [aval_of(x) for x in bc + carry]
    jaxpr, consts, nz_carry = _jvp_fixpoint(body_jaxpr, avals, nz_consts, nz_init)
    carry_dots = [instantiate(t) if type(t) is not Zero else instantiate(Zero(
        tangent_aval(aval_of(p)))) for p, t, nz in zip(carry, carry_t, nz_carry) if nz]
    t_avals = [tangent_aval(aval_of(p)) for p, nz in zip(carry, nz_carry) if nz]
    new_cond = _with_unused(cond_jaxpr, t_avals)
    body_consts = [*consts, *bc, *[t for t, nz in zip(bc_t, nz_consts) if nz]]
    outs = while_p.bind(*cc, *body_consts, *carry, *carry_dots, cond_jaxpr=new_cond,
                        body_jaxpr=jaxpr, cond_nconsts=cond_nconsts,
                        body_nconsts=len(body_consts), checkpoint_every=checkpoint_every)
    n = len(carry)
    dots = iter(outs[n:])
    t_out = [next(dots) if nz else Zero(tangent_aval(aval_of(p)))
             for p, nz in zip(carry, nz_carry)]
    return outs[:n], t_out


while_p.def_jvp(_while_jvp)


# ---- batching ------------------------------------------------------------------------------
def _batched_body(body_jaxpr, axis, bc_dims, dims, bc, carry):
    """The body of the batched loop: outputs of batched carries at dim 0."""
    outs, od = batch_flat(lambda *a: eval_jaxpr(body_jaxpr, [], *a), [*bc, *carry],
                          [*bc_dims, *dims], axis, "while_body")
    return [o if d is not_mapped and cd is not_mapped else bdim_at_front(o, d, axis.size)
            for o, d, cd in zip(outs, od, dims)]


def _while_batching(axis, args, dims, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts,
                    checkpoint_every):
    cc, bc, carry = _operands(args, cond_nconsts, body_nconsts)
    cc_dims, bc_dims, carry_dims = _operands(dims, cond_nconsts, body_nconsts)
    batched, pred_batched = while_carry_dims(axis, body_jaxpr, cond_jaxpr, cc_dims, bc_dims,
                                        carry_dims)
    carry = [bdim_at_front(x, d, axis.size) if b else x
             for x, d, b in zip(carry, carry_dims, batched)]
    cdims = [0 if b else not_mapped for b in batched]
    avals = [aval_of(x) for x in carry]
    n_cc, n_bc = len(cc), len(bc)

    def new_cond(*xs):
        return [batched_pred(cond_jaxpr, axis, cc_dims, cdims, xs[:n_cc], xs[n_cc:],
                              pred_batched)]

    # a finished element keeps running the body: it feeds the body a running element's
    # batched consts and carries (with a zero derivative), so it computes nothing, value
    # or derivative, that the running element does not (see `_masking`)
    body_dims = fed_dims(bc_dims)

    def new_body(*xs):
        c, b, old = WhileOperands.split(xs, cond_consts=n_cc if pred_batched else 0,
                                        body_consts=n_bc)
        if not pred_batched:
            return _batched_body(body_jaxpr, axis, bc_dims, cdims, b, old)
        pred = batched_pred(cond_jaxpr, axis, cc_dims, cdims, c, old, False)
        fed = feed(pred, [*b, *old], [*bc_dims, *cdims], axis.size)
        new = _batched_body(body_jaxpr, axis, body_dims, cdims, fed[:n_bc], fed[n_bc:])
        return masked(pred, new, old)

    cj, cj_consts = trace_closed_over(new_cond, [aval_of(x) for x in cc] + avals,
                                      "while_cond_vmap")
    body_in = cc + bc if pred_batched else bc
    bj, bj_consts = trace_closed_over(new_body, [aval_of(x) for x in body_in] + avals,
                                      "while_body_vmap")
    outs = while_p.bind(*cj_consts, *cc, *bj_consts, *body_in, *carry, cond_jaxpr=cj,
                        body_jaxpr=bj, cond_nconsts=len(cj_consts) + n_cc,
                        body_nconsts=len(bj_consts) + len(body_in),
                        checkpoint_every=checkpoint_every)
    return outs, cdims


while_p.def_batching(_while_batching)


# ---- reverse mode --------------------------------------------------------------------------
# Linearize splits a `while` with unknown (tangent) carries into a known loop, which also
# yields each iteration's residual rows, and a tangent step over those rows, a `scan` in
# both forms (they differ in where its per-step rows come from):
# - the tape form: the known loop is a `while_tape` pushing its rows on a run-time tape and
#   the tangent part a scan reading them from it (see while_tape.py); both loops run compiled
#   bodies, eagerly or under jit, and the trip count need not be known while tracing;
# - the stacked form, where an enclosing jvp differentiates the residuals themselves
#   (grad(grad), hessian): the known loop runs now on the parent trace, so its trip count
#   N is found by running it, and the tangent part is a `scan` of N steps over the stacked
#   rows, which transposes, differentiates again and compiles like any scan.
def _everything(prim, *avals, **params):
    return True


def _host_any(p):
    """Whether any element of the concrete predicate `p` (possibly batched) is true."""
    value = known_value(p)
    if value is None:  # the loop's operands were concrete: so must its predicate be
        raise AssertionError("while_loop: the predicate of a concrete loop is traced")
    return bool(np.any(np.asarray(value)))


def _split_body(body_jaxpr, n_bc, bc_uk, carry_uk):
    """Partially evaluate the body for unknown consts/carries, growing the unknown carries
    to a fixpoint.

    Returns (known, staged, carry_uk, const_res, n_rows):
      known:  known consts + known carries -> known carries' outputs + the n_rows residual
              rows of an iteration;
      staged: const residuals + rows + unknown consts + unknown carries -> unknown carries'
              outputs, where the const residuals are the known consts at `const_res`
              (indices among the known consts: passed once, not stacked per iteration).
    """
    def step(carry_uk):
        split = partial_eval_jaxpr(body_jaxpr, [*bc_uk, *carry_uk], _everything)
        return [a or b for a, b in zip(carry_uk, split[2])], split

    carry_uk, (known, staged, out_uk, nres) = fixpoint(step, carry_uk, name="while_split")
    n_out = len(known.outvars) - nres
    outs, res = iter(known.outvars[:n_out]), known.outvars[n_out:]
    known_carry, forced = [], []  # forced: unknown carries the known part computes
    for uk_in, uk_out in zip(carry_uk, out_uk):
        if not uk_out:
            (forced if uk_in else known_carry).append(next(outs))
    n_kbc = n_bc - sum(bc_uk)
    const_pos = {v: i for i, v in enumerate(known.invars[:n_kbc])}
    res_in = staged.invars[:nres]
    is_const = [type(v) is Var and v in const_pos for v in res]
    const_res = [const_pos[v] for v, c in zip(res, is_const) if c]
    rows = [v for v, c in zip(res, is_const) if not c] + forced
    known = Jaxpr([], known.invars, known.eqns, [*known_carry, *rows], "while_known")
    forced_in = [Var(v.aval) for v in forced]
    staged_outs, forced_it = iter(staged.outvars), iter(forced_in)
    outvars = [next(staged_outs) if uk_out else next(forced_it)
               for uk_in, uk_out in zip(carry_uk, out_uk) if uk_in]
    invars = [*[v for v, c in zip(res_in, is_const) if c],
              *[v for v, c in zip(res_in, is_const) if not c], *forced_in,
              *staged.invars[nres:]]
    staged = Jaxpr([], invars, staged.eqns, outvars, "while_staged")
    return known, staged, carry_uk, const_res, len(rows)


def _step(staged, n_const, n_rows):
    """The staged part in scan layout: (const residuals, unknown consts, carries, rows) ->
    carries (the same equations, inputs reordered)."""
    v = staged.invars
    rows, rest = v[n_const:n_const + n_rows], v[n_const + n_rows:]
    return Jaxpr([], [*v[:n_const], *rest, *rows], staged.eqns, staged.outvars, "while_step")


def _masked_step(step, n_lin_at, n_lin, n_carry):
    """`step` with a last input, a predicate: false keeps the carries (the last n_carry of
    the n_lin linear inputs at positions n_lin_at..) and feeds the step zeros for the
    linear inputs, so that a finished element's rows never meet a cotangent. Returns
    (jaxpr, captured consts)."""
    def fun(*xs):
        p, lin = xs[-1], range(n_lin_at, n_lin_at + n_lin)
        new = eval_jaxpr(step, [], *[guard_linear(p, x) if k in lin else x
                                     for k, x in enumerate(xs[:-1])])
        n_carry_at = n_lin_at + n_lin - n_carry
        return [select_n(xs[-1], old, x)
                for old, x in zip(xs[n_carry_at:n_carry_at + n_carry], new)]

    avals = [v.aval for v in step.invars] + [ShapedArray((), np.dtype(np.bool_))]
    return trace_closed_over(fun, avals, "while_step")


def _run_known(cond, body, cc, bc, carry):
    """Run the known loop under the current trace; returns (final carries, residual rows
    per iteration, predicates per iteration). Each finished batch element keeps its carry."""
    rows, preds, n = [], [], len(carry)
    while True:
        p = eval_jaxpr(cond, [], *cc, *carry)[0]
        if not _host_any(p):
            return carry, rows, preds
        if type(p) is ArrayImpl:
            outs = eval_jaxpr(body, [], *bc, *carry)
            new = outs[:n]
        else:  # batched (or traced): finished elements stay put, and feed the body
            # guarded values (their rows' derivatives must not reach ours)
            outs = eval_jaxpr(body, [], *[guard(p, x) for x in [*bc, *carry]])
            new = [select_n(p, old, x) for old, x in zip(carry, outs[:n])]
        carry = new
        rows.append(outs[n:])
        preds.append(p)


def _stack(values, aval):
    """`values` (each of `aval`) stacked along a new leading axis (length may be 0)."""
    if not values:
        return full((0, *aval.shape), 0, aval.dtype)
    if len(values) == 1:
        return broadcast_in_dim(values[0], (1, *aval.shape), tuple(range(1, aval.ndim + 1)))
    return concatenate([expand_dims(v, (0,)) for v in values], 0)


class _Split:
    """A `while` equation's operands and jaxprs split for linearize (see _split_body)."""

    def __init__(self, params, unknowns):
        ncc, nbc = params["cond_nconsts"], params["body_nconsts"]
        self.cc_uk, self.bc_uk, carry_uk = _operands(unknowns, ncc, nbc)
        self.known, self.staged, self.carry_uk, self.const_res, self.n_rows = _split_body(
            params["body_jaxpr"], nbc, self.bc_uk, carry_uk)
        cond = params["cond_jaxpr"]
        used = {v for e in cond.eqns for v in e.invars} | set(cond.outvars)
        self.pred_unknown = any(self.cc_uk) or any(
            u and v in used for u, v in zip(self.carry_uk, cond.invars[ncc:]))
        self.cond = Jaxpr([], [*cond.invars[:ncc], *[
            v for v, u in zip(cond.invars[ncc:], self.carry_uk) if not u]], cond.eqns,
            cond.outvars, "cond")
        self.step = _step(self.staged, len(self.const_res), self.n_rows)
        self.ncc, self.nbc = ncc, nbc

    def operands(self, args):
        """(cond consts, known body consts, known carries, const residuals, unknown body
        consts, unknown carries) among `args` (values or variables)."""
        cc, bc, carry = _operands(args, self.ncc, self.nbc)
        known_bc = [x for x, u in zip(bc, self.bc_uk) if not u]
        return (cc, known_bc, [x for x, u in zip(carry, self.carry_uk) if not u],
                [known_bc[i] for i in self.const_res], [x for x, u in zip(bc, self.bc_uk) if u],
                [x for x, u in zip(carry, self.carry_uk) if u])

    def tape_params(self, every):
        """(forward params, tangent params) of the tape form: a `while_tape` recording the
        rows and a scan reading them from its tape."""
        fwd = dict(cond_jaxpr=self.cond, body_jaxpr=self.known, cond_nconsts=self.ncc,
                   body_nconsts=self.nbc - sum(self.bc_uk),
                   num_carry=len(self.carry_uk) - sum(self.carry_uk), batch_shape=(),
                   every=every)
        lin = dict(jaxpr=self.step, num_consts=len(self.const_res) + sum(self.bc_uk),
                   num_carry=sum(self.carry_uk), length=None, reverse=False, unroll=1,
                   tape=())
        return fwd, lin

    def merge(self, known, staged):
        known_it, staged_it = iter(known), iter(staged)
        return [next(staged_it) if u else next(known_it) for u in self.carry_uk]


def _while_partial_eval(trace, args, params):
    unknowns = [trace.is_unknown(x) for x in args]
    if not any(unknowns):
        with set_current_trace(trace.parent):
            return while_p.bind(*args, **params)
    sp = _Split(params, unknowns)
    if sp.pred_unknown:  # the predicate itself is unknown: stage the whole loop
        return StagingTrace.process_primitive(trace, while_p, args, params)
    cc, kbc, kcarry, const_res, ubc, inits = sp.operands(args)
    every = params["checkpoint_every"]
    row_avals = [v.aval for v in sp.known.outvars[len(kcarry):]]
    known = [*cc, *kbc, *kcarry]
    # the stacked form only where it is needed: an enclosing jvp (grad(grad), hessian)
    # differentiates the residuals, which a tape cannot offer; the tape form compiles both
    # loops and also serves staged loops, checkpointing and rows holding an inner tape
    stacked = (every is None and any(is_differentiated(x) for x in known)
               and all(is_known(x) for x in known)
               and not any(is_opaque(a.dtype) for a in row_avals))
    if not stacked:
        fwd, lin = sp.tape_params(every)
        with set_current_trace(trace.parent):
            *final, tape = while_tape_p.bind(*cc, *kbc, *kcarry, **fwd)
        outs = StagingTrace.process_primitive(trace, scan_p, [tape, *const_res, *ubc, *inits],
                                              lin)
        return sp.merge(final, outs)
    with set_current_trace(trace.parent):
        final, rows, preds = _run_known(sp.cond, sp.known, cc, kbc, kcarry)
        stacked = [_stack([r[j] for r in rows], a) for j, a in enumerate(row_avals)]
        masked = any(type(p) is not ArrayImpl for p in preds)
        if masked:
            stacked.append(_stack(preds, ShapedArray((), np.dtype(np.bool_))))
    # the tangent loop has a known trip count: a scan over the stacked rows (so it
    # transposes, differentiates again, batches and compiles as a scan does)
    n_consts = len(const_res) + len(ubc)
    step, step_consts = ((sp.step, []) if not masked else
                         _masked_step(sp.step, len(const_res), len(ubc) + len(inits),
                                      len(inits)))
    outs = StagingTrace.process_primitive(
        trace, scan_p, [*step_consts, *const_res, *ubc, *inits, *stacked],
        dict(jaxpr=step, num_consts=len(step_consts) + n_consts, num_carry=len(inits),
             length=len(rows), reverse=False, unroll=1, tape=None))
    return sp.merge(final, outs)


def _while_partial_eval_jaxpr(eqn, unknowns, saveable):
    """A `while` nested in a jaxpr being split (under jit, or in a cond/scan/checkpoint
    body): a `while_tape` equation (known) and a `scan` equation reading its tape."""
    sp = _Split(eqn.params, unknowns)
    if sp.pred_unknown:
        return None
    cc, kbc, kcarry, const_res, ubc, inits = sp.operands(eqn.invars)
    fwd, lin = sp.tape_params(eqn.params["checkpoint_every"])
    tape = Var(tape_aval())
    known_out = [v for v, u in zip(eqn.outvars, sp.carry_uk) if not u]
    known_eqn = eqn.replace(primitive=while_tape_p, invars=[*cc, *kbc, *kcarry],
                            outvars=[*known_out, tape], params=fwd)
    staged_eqn = eqn.replace(primitive=scan_p, invars=[tape, *const_res, *ubc, *inits],
                             outvars=[v for v, u in zip(eqn.outvars, sp.carry_uk) if u],
                             params=lin)
    return known_eqn, staged_eqn, list(sp.carry_uk)


while_p.def_rule("partial_eval", _while_partial_eval)
while_p.def_rule("partial_eval_jaxpr", _while_partial_eval_jaxpr)
