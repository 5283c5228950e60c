"""The `scan` primitive: a loop carrying the loop body's jaxpr (the user-facing `scan`,
`fori_loop` and `map` that bind it are in loops.py).

    carry, ys = scan(f, init, xs)          # f(carry, x) -> (carry, y), ys stacked on axis 0

The `scan` equation's params: `jaxpr` (constant-free body: consts, carry, x-slices -> new
carry, y-slice), `num_consts`, `num_carry`, `length`, `reverse`, `unroll` (semantics
only) and `tape`. Its operands are consts, the initial carry and the stacked xs; its
results are the final carry and the stacked ys, of the types the body returns (weak types
included).

Each step's xs come from one of two sources, which `tape` names:

- `tape=None`: slices of the stacked xs operands, `length` of them;
- `tape=batch_shape`: the rows a `while_tape` recorded on a run-time tape (while_tape.py),
  read in order (or reversed). The operands are `[tape, *consts, *carry]` and
  `length=None`: the trip count is known only when the program runs, so there are no
  stacked xs and the body returns no ys. For a batched tape (`batch_shape` not `()`: a
  vectorised loop's) the rows carry the batch axes in front and the body's last x is the
  mask of the elements that ran the step. This is the linear half of a while loop's
  reverse mode (while_loop.py), and the rows are residuals: they have no tangent.

Rules: JVP is a scan of the JVP body (carry tangents that become nonzero are found by a
fixpoint); linearize splits a scan into a known scan that also stacks each step's residuals
as extra ys and a linear scan reading them; the transpose of the linear scan runs in the
opposite direction over the stacked residuals (nothing is recomputed); batching keeps the
scanned axis at 0 (batched xs and ys carry their batch dimension at 1). A tape-sourced scan
shares these rules (its rows are non-linear xs: the transpose reads the same tape in the
opposite direction); it has no partial evaluation of its own (it appears only in linear
programs, where the whole equation is staged), and batching a batched tape masks the
elements that did not run a step.
"""

import dataclasses

import numpy as np

from mytorch.core.ad_util import (
    Zero, instantiate, is_differentiable, is_undefined, tangent_aval, zeros,
)
from mytorch.core.aval import ShapedArray
from mytorch.core.jaxpr import Jaxpr, Literal, Var, eval_jaxpr
from mytorch.core.primitive import Primitive
from mytorch.core.staging import StagingTrace
from mytorch.core.trace import aval_of, set_current_trace
from mytorch.lax._batching import bdim_at_front, bdim_to, not_mapped
from mytorch.lax._loop_rules import (
    ScanOperands, carry_cotangents, masked, scan_batch_body, scan_jvp_body, transpose_body,
)
from mytorch.lax._masking import guard_linear
from mytorch.lax.while_tape import tape_aval
from mytorch.transforms.batching import batch_flat
from mytorch.transforms.closure import trace_closed_over
from mytorch.transforms.fixpoint import fixpoint
from mytorch.transforms.inline import rename_all, renamed
from mytorch.transforms.partial_eval import partial_eval_jaxpr

__all__ = ["scan_p"]


# ---- the primitive -----------------------------------------------------------------------
scan_p = Primitive("scan", multiple_results=True, kind="call")


def _operands(args, num_consts, num_carry, tape):
    """A scan's operands (or flags, dims ...) as (source, ScanOperands): source is [] for
    stacked xs, [the tape] for a tape-sourced scan (whose ScanOperands have no xs)."""
    n_tape = 0 if tape is None else 1
    return (list(args[:n_tape]),
            ScanOperands.split(args[n_tape:], consts=num_consts, carry=num_carry))


def _n_xs(jaxpr, num_consts, num_carry):
    """How many xs the body takes (for a tape-sourced scan: the rows, and the mask)."""
    return len(jaxpr.invars) - num_consts - num_carry


@scan_p.def_abstract_eval
def _scan_abstract_eval(*avals, jaxpr, num_consts, num_carry, length, reverse, unroll, tape):
    if tape is None and len(avals) != len(jaxpr.invars):
        raise TypeError(f"scan has {len(avals)} operands but its body takes "
                        f"{len(jaxpr.invars)}")
    source, ops = _operands(avals, num_consts, num_carry, tape)
    if tape is not None:
        _check_tape_source(source, ops, len(jaxpr.outvars) - num_carry, length, tape)
    sizes = dict(consts=num_consts, carry=num_carry)
    body_in = ScanOperands.split([v.aval for v in jaxpr.invars], **sizes)
    body_out = [v.aval for v in jaxpr.outvars]
    carry_in, x_in = body_in.carry, body_in.xs
    carry_out = body_out[:num_carry]
    for a, b in zip(carry_in, carry_out, strict=True):
        if a.shape != b.shape or a.dtype != b.dtype:
            raise TypeError(
                "scan body: carry output must match carry input, got input "
                f"[{', '.join(x.str_short() for x in carry_in)}] and output "
                f"[{', '.join(x.str_short() for x in carry_out)}]")
    for a, b in zip(ops.carry, carry_in):
        if a.shape != b.shape or a.dtype != b.dtype:
            raise TypeError(f"scan: initial carry {a.str_short()} does not match the body's "
                            f"carry {b.str_short()}")
    if tape is not None:  # the carries, without weak types
        return [ShapedArray(a.shape, a.dtype) for a in carry_out]
    for a, b in zip(ops.xs, x_in):
        if a.shape != (length, *b.shape) or a.dtype != b.dtype:
            raise TypeError(f"scan: xs operand {a.str_short()} does not match the body's "
                            f"slice {b.str_short()} with length {length}")
    # the loop's results have the body's types, weak types included (as in JAX)
    ys = [ShapedArray((length, *a.shape), a.dtype, a.weak_type) for a in body_out[num_carry:]]
    return list(carry_out) + ys


def _check_tape_source(source, ops, n_ys, length, tape):
    """Raise a TypeError unless a tape-sourced scan reads a tape of its `tape` batch shape
    and has no stacked xs, no length and no ys."""
    expected = tape_aval(tuple(tape))
    if not source or source[0].shape != expected.shape or source[0].dtype != expected.dtype:
        got = source[0].str_short() if source else "no operand"
        raise TypeError(f"scan: a tape-sourced scan reads its xs from a tape of type "
                        f"{expected.str_short()} (its first operand), got {got}")
    if ops.xs or length is not None:
        raise TypeError("scan: a tape-sourced scan takes no stacked xs and no length (its "
                        f"trip count is known only at run time), got {len(ops.xs)} xs "
                        f"operands and length={length}")
    if n_ys:
        raise TypeError("scan: a tape-sourced scan has no ys (its length is known only at "
                        f"run time), but its body returns {n_ys} besides the carries")


# ---- forward mode ------------------------------------------------------------------------
def _scan_jvp(primals, tangents, *, jaxpr, num_consts, num_carry, length, reverse, unroll,
              tape):
    """A scan of the body's JVP. A tape's rows are residuals: xs whose tangents are zero."""
    source, ops = _operands(primals, num_consts, num_carry, tape)
    _, tan = _operands(tangents, num_consts, num_carry, tape)
    nz = ScanOperands(*[[type(t) is not Zero and is_differentiable(aval_of(p))
                         for p, t in zip(ps, ts)] for ps, ts in zip(ops, tan)])
    if tape is not None:
        nz = nz.replace(xs=[False] * _n_xs(jaxpr, num_consts, num_carry))

    def step(carry_nz):  # a carry tangent that the body makes nonzero must be carried
        body, body_consts, out_nz = scan_jvp_body(jaxpr, num_consts, num_carry, nz.flat(),
                                                  carry_nz)
        return [a or b for a, b in zip(carry_nz, out_nz)], (body, body_consts, out_nz)

    carry_nz, (body, body_consts, out_nz) = fixpoint(step, nz.carry, name="scan_jvp")
    const_t = [t for t, f in zip(tan.consts, nz.consts) if f]
    init_t = [instantiate(t) if type(t) is Zero else t
              for t, f in zip(tan.carry, carry_nz) if f]
    xs_t = [t for t, f in zip(tan.xs, nz.xs) if f]
    outs = scan_p.bind(*source, *body_consts, *ops.consts, *const_t, *ops.carry, *init_t,
                       *ops.xs, *xs_t, jaxpr=body,
                       num_consts=len(body_consts) + num_consts + len(const_t),
                       num_carry=num_carry + len(init_t), length=length, reverse=reverse,
                       unroll=unroll, tape=tape)
    carry, rest = outs[:num_carry], outs[num_carry:]
    carry_t_it = iter(rest[:len(init_t)])
    rest = rest[len(init_t):]
    n_ys = len(jaxpr.outvars) - num_carry
    ys, ys_t_it = rest[:n_ys], iter(rest[n_ys:])
    carry_t = [next(carry_t_it) if f else Zero(tangent_aval(aval_of(c)))
               for c, f in zip(carry, carry_nz)]
    ys_t = [next(ys_t_it) if f else Zero(tangent_aval(aval_of(y)))
            for y, f in zip(ys, out_nz[num_carry:])]
    return [*carry, *ys], [*carry_t, *ys_t]


scan_p.def_jvp(_scan_jvp)


# ---- reverse mode: partial evaluation and transpose ------------------------------------
def _save_all(prim, *avals, **params):
    return True


@dataclasses.dataclass(frozen=True)
class _ScanSplit:
    """A scan body split into a known body and a staged (unknown) body (see _split_body).

    known: known consts, carry, xs -> known carry, known ys, stacked residuals.
    staged: [const residuals, unknown consts], [unknown carry], [xs residuals, stacked
      residuals, unknown xs] -> unknown carry, unknown ys.
    carry_unknown, ys_unknown: flags of the carries and ys the staged scan computes.
    const_res, xs_res: the indices of the consts and xs passed on as residuals.
    n_stacked: how many residuals the known scan stacks (its last ys).
    """

    known: Jaxpr
    staged: Jaxpr
    carry_unknown: list
    ys_unknown: list
    const_res: list
    xs_res: list
    n_stacked: int

    def outs_unknown(self):
        """Flags of the scan's results (carries, then ys) that the staged scan computes."""
        return [*self.carry_unknown, *self.ys_unknown]


def _split_body(jaxpr, num_consts, num_carry, unknowns):
    """Split the body into a known body and a staged (unknown) body: a _ScanSplit.

    The carries that are unknown are found by a fixpoint (an unknown carry output makes the
    carry unknown). Residuals that are known consts or xs are passed to the staged scan as
    its consts or xs; every other residual is stacked: an extra y of the known scan, an
    extra x of the staged one.
    """
    sizes = dict(consts=num_consts, carry=num_carry)
    unk = ScanOperands.split(unknowns, **sizes)

    def step(k_unk):
        split = partial_eval_jaxpr(jaxpr, unk.replace(carry=k_unk).flat(), _save_all)
        return [a or b for a, b in zip(k_unk, split[2])], split

    k_unk, (known, staged, out_unk, num_res) = fixpoint(step, unk.carry, name="scan_split")
    n_known_out = len(known.outvars) - num_res
    known_out, residuals = list(known.outvars[:n_known_out]), list(known.outvars[n_known_out:])
    res_in = list(staged.invars[:num_res])  # the staged body's variables for the residuals
    staged_out, forced = iter(staged.outvars), []
    new_staged_out, new_known_out, known_it = [], [], iter(known_out)
    for j, u in enumerate(out_unk):
        if u:
            new_staged_out.append(next(staged_out))
        elif j < num_carry and k_unk[j]:  # known value of an unknown carry: a residual
            v = next(known_it)
            r = Var(v.aval)
            forced.append((v, r))
            new_staged_out.append(r)
        else:
            new_known_out.append(next(known_it))
    residuals += [v for v, _ in forced]
    res_in += [r for _, r in forced]
    body_in = ScanOperands.split(jaxpr.invars, **sizes)
    const_pos = {v: i for i, v in enumerate(body_in.consts)}
    xs_pos = {v: i for i, v in enumerate(body_in.xs)}
    const_res = [(const_pos[v], r) for v, r in zip(residuals, res_in)
                 if type(v) is Var and v in const_pos]
    xs_res = [(xs_pos[v], r) for v, r in zip(residuals, res_in)
              if type(v) is Var and v in xs_pos]
    stacked = [(v, r) for v, r in zip(residuals, res_in)
               if not (type(v) is Var and (v in const_pos or v in xs_pos))]
    known = Jaxpr([], known.invars, known.eqns, new_known_out + [v for v, _ in stacked],
                  known.debug_name)
    u_in = ScanOperands.split(staged.invars[num_res:], consts=sum(unk.consts),
                              carry=sum(k_unk))
    staged_in = ([r for _, r in const_res] + u_in.consts + u_in.carry
                 + [r for _, r in xs_res] + [r for _, r in stacked] + u_in.xs)
    staged = Jaxpr([], staged_in, staged.eqns, new_staged_out, staged.debug_name)
    return _ScanSplit(known, staged, k_unk, out_unk[num_carry:], [i for i, _ in const_res],
                      [i for i, _ in xs_res], len(stacked))


def _split_params(params, split, unknowns):
    """Params of the known and staged scans; returns (known, staged) params dicts."""
    nc = params["num_consts"]
    n_uc = sum(unknowns[:nc])
    n_uk = sum(split.carry_unknown)
    known_p = dict(params, jaxpr=split.known, num_consts=nc - n_uc,
                   num_carry=params["num_carry"] - n_uk)
    staged_p = dict(params, jaxpr=split.staged, num_consts=len(split.const_res) + n_uc,
                    num_carry=n_uk)
    return known_p, staged_p


def _known_unknown_operands(args, params, split, unknowns):
    """(known operands, function(stacked residuals) -> staged operands)."""
    sizes = dict(consts=params["num_consts"], carry=params["num_carry"])
    ops = ScanOperands.split(args, **sizes)
    unk = ScanOperands.split(unknowns, **sizes).replace(carry=split.carry_unknown)
    known_ops = ops.select(unk, False).flat()
    u = ops.select(unk, True)

    def staged_ops(stacked):
        return ([ops.consts[i] for i in split.const_res] + u.consts + u.carry
                + [ops.xs[i] for i in split.xs_res] + list(stacked) + u.xs)

    return known_ops, staged_ops


def _merge_outs(split, known_outs, staged_outs):
    known_it, staged_it = iter(known_outs), iter(staged_outs)
    return [next(staged_it) if u else next(known_it) for u in split.outs_unknown()]


def _scan_partial_eval(trace, args, params):
    """linearize: a known scan run now (stacking residuals) and a staged linear scan."""
    unknowns = [trace.is_unknown(x) for x in args]
    if not any(unknowns):
        with set_current_trace(trace.parent):
            return scan_p.bind(*args, **params)
    if params["tape"] is not None:  # only in linear programs: staged whole
        return StagingTrace.process_primitive(trace, scan_p, args, params)
    split = _split_body(params["jaxpr"], params["num_consts"], params["num_carry"], unknowns)
    known_p, staged_p = _split_params(params, split, unknowns)
    known_ops, staged_ops = _known_unknown_operands(args, params, split, unknowns)
    with set_current_trace(trace.parent):
        known_outs = scan_p.bind(*known_ops, **known_p)
    n_known = len(known_outs) - split.n_stacked
    stacked = known_outs[n_known:]
    staged_outs = StagingTrace.process_primitive(trace, scan_p, staged_ops(stacked), staged_p)
    return _merge_outs(split, known_outs[:n_known], staged_outs)


def _scan_partial_eval_jaxpr(eqn, unknowns, saveable):
    """A scan nested in a jaxpr being split (e.g. inside jit under grad); None (the
    equation is unknown) for a tape-sourced scan."""
    params = eqn.params
    if params["tape"] is not None:
        return None
    split = _split_body(params["jaxpr"], params["num_consts"], params["num_carry"], unknowns)
    known_p, staged_p = _split_params(params, split, unknowns)
    known_ops, staged_ops = _known_unknown_operands(eqn.invars, params, split, unknowns)
    outs_unknown = split.outs_unknown()
    known_outvars = split.known.outvars
    stacked = [Var(ShapedArray((params["length"], *v.aval.shape), v.aval.dtype))
               for v in known_outvars[len(known_outvars) - split.n_stacked:]]
    known_eqn = eqn.replace(
        invars=known_ops, params=known_p,
        outvars=[v for v, u in zip(eqn.outvars, outs_unknown) if not u] + stacked)
    staged_eqn = eqn.replace(
        invars=staged_ops(stacked), params=staged_p,
        outvars=[v for v, u in zip(eqn.outvars, outs_unknown) if u])
    return known_eqn, staged_eqn, outs_unknown


scan_p.def_rule("partial_eval", _scan_partial_eval)
scan_p.def_rule("partial_eval_jaxpr", _scan_partial_eval_jaxpr)


def _scan_transpose(cts, *args, jaxpr, num_consts, num_carry, length, reverse, unroll, tape):
    """A scan in the opposite direction over the non-linear (residual) operands: it carries
    the carry cotangent and accumulates the cotangents of the linear consts. Zero carry
    cotangents that stay zero through the body are not carried (see transpose_body). A
    tape's rows are residual xs: the transpose reads the same tape the other way."""
    source, ops = _operands(args, num_consts, num_carry, tape)
    # every carry of a linear scan is linear; one with a known value (a zero tangent that
    # was instantiated) just gets no cotangent
    init_lin = [is_undefined(c) for c in ops.carry]
    c_lin = [is_undefined(c) for c in ops.consts]
    x_lin = [is_undefined(x) for x in ops.xs]
    res_c = [c for c, lin in zip(ops.consts, c_lin) if not lin]
    res_x = [x for x, lin in zip(ops.xs, x_lin) if not lin]
    lin_c_avals = [c.aval for c, lin in zip(ops.consts, c_lin) if lin]
    carry_avals = [c.aval if lin else aval_of(c) for c, lin in zip(ops.carry, init_lin)]
    ct_ys = [instantiate(c) for c in cts[num_carry:]]
    body_x_lin = x_lin if tape is None else [False] * _n_xs(jaxpr, num_consts, num_carry)
    t_jaxpr, t_consts, zero = transpose_body(
        jaxpr, num_consts, num_carry, c_lin, body_x_lin, [aval_of(c) for c in res_c],
        carry_avals, [type(c) is Zero for c in cts[:num_carry]])
    ct_carry = [instantiate(c) for c, z in zip(cts[:num_carry], zero) if not z]
    n_lc, n_k = len(lin_c_avals), len(ct_carry)
    acc0 = [zeros(a) for a in lin_c_avals]
    outs = scan_p.bind(*source, *t_consts, *res_c, *acc0, *ct_carry, *res_x, *ct_ys,
                       jaxpr=t_jaxpr, num_consts=len(t_consts) + len(res_c),
                       num_carry=n_lc + n_k, length=length, reverse=not reverse,
                       unroll=unroll, tape=tape)
    ct_consts_it = iter(outs[:n_lc])
    ct_init = iter(outs[n_lc:n_lc + n_k])
    ct_xs_it = iter(outs[n_lc + n_k:])
    return ([None] * len(source)
            + [next(ct_consts_it) if lin else None for lin in c_lin]
            + carry_cotangents(ct_init, init_lin, zero)
            + [next(ct_xs_it) if lin else None for lin in x_lin])


scan_p.def_transpose(_scan_transpose)


# ---- batching ----------------------------------------------------------------------------
def _scan_batching(axis, args, dims, *, jaxpr, num_consts, num_carry, length, reverse,
                   unroll, tape):
    """The scanned axis stays 0: batched xs and ys have their batch dimension at 1; the
    batched carries (a fixpoint: a carry the body batches is batched) at 0. An unbatched
    tape's rows are unbatched xs; a batched tape is `_scan_batched_tape`'s."""
    source, ops = _operands(args, num_consts, num_carry, tape)
    source_dims, op_dims = _operands(dims, num_consts, num_carry, tape)
    if any(d is not not_mapped for d in source_dims):
        return _scan_batched_tape(axis, source[0], source_dims[0], ops, op_dims, jaxpr,
                                  num_consts, num_carry, reverse, tape)
    xs_b = ([d is not not_mapped for d in op_dims.xs] if tape is None
            else [False] * _n_xs(jaxpr, num_consts, num_carry))

    def step(carry_b):
        out = scan_batch_body(jaxpr, axis, num_consts, num_carry, op_dims.consts, carry_b,
                              xs_b)
        return [a or b for a, b in zip(carry_b, out[2])], out

    carry_b, (body, consts, _, y_b) = fixpoint(
        step, [d is not not_mapped for d in op_dims.carry], name="scan_batching")
    init = [bdim_at_front(a, d, axis.size) if b else a
            for a, d, b in zip(ops.carry, op_dims.carry, carry_b)]
    xs = [a if d is not_mapped else bdim_to(a, d, 1, axis.size)
          for a, d in zip(ops.xs, op_dims.xs)]
    outs = scan_p.bind(*source, *consts, *ops.consts, *init, *xs, jaxpr=body,
                       num_consts=len(consts) + num_consts, num_carry=num_carry,
                       length=length, reverse=reverse, unroll=unroll, tape=tape)
    out_dims = [0 if b else not_mapped for b in carry_b] + [1 if b else not_mapped for b in y_b]
    return outs, out_dims


def _scan_batched_tape(axis, tape_op, tape_dim, ops, op_dims, jaxpr, num_consts, num_carry,
                       reverse, batch_shape):
    """A scan over a batched tape (a vectorised loop's): the rows and the mask gain the
    batch axis in front, every carry is batched, and an element keeps its carry at steps it
    did not run."""
    size = axis.size
    tape_op = bdim_at_front(tape_op, tape_dim, size)
    carry = [bdim_at_front(a, d, size) for a, d in zip(ops.carry, op_dims.carry)]
    x_avals = ScanOperands.split([v.aval for v in jaxpr.invars], consts=num_consts,
                                 carry=num_carry).xs
    first = not batch_shape  # this axis adds the mask input

    def step(*xs):
        c, k, rows = ScanOperands.split(xs, consts=num_consts, carry=num_carry)
        ins = rows[:-1] if first else rows
        # the step is linear in the carries: an element that did not run it feeds zeros,
        # so the rows it recorded after finishing never meet a (co)tangent
        k_in = [guard_linear(rows[-1], x) for x in k] if first else k
        outs, od = batch_flat(lambda *a: eval_jaxpr(jaxpr, [], *a), [*c, *k_in, *ins],
                              [*op_dims.consts, *[0] * (num_carry + len(ins))], axis,
                              "scan_tape")
        outs = [bdim_at_front(o, d, size) for o, d in zip(outs, od)]
        return masked(rows[-1], outs, k) if first else outs

    row_avals = [ShapedArray((size, *a.shape), a.dtype) for a in x_avals]
    if first:
        row_avals.append(ShapedArray((size,), np.dtype(np.bool_)))
    step_avals = ([aval_of(c) for c in ops.consts] + [aval_of(k) for k in carry] + row_avals)
    body, b_consts = trace_closed_over(step, step_avals, "scan_tape_vmap")
    outs = scan_p.bind(tape_op, *b_consts, *ops.consts, *carry, jaxpr=body,
                       num_consts=len(b_consts) + num_consts, num_carry=num_carry,
                       length=None, reverse=reverse, unroll=1, tape=(size, *batch_shape))
    return outs, [0] * num_carry


scan_p.def_batching(_scan_batching)


# ---- the tape's rows, for the pruning pass (transforms/tape_rows.py) ----------------------
def _read_rows(eqn):
    """The "tape_read" rule of a tape-sourced scan (None for stacked xs): (the tape's
    operand position, the body, its row inputs (the mask excluded), rebuild(body, kept) ->
    the equation whose body is `body` without the row inputs not flagged)."""
    p, body = eqn.params, eqn.params["jaxpr"]
    if p["tape"] is None:
        return None
    start = p["num_consts"] + p["num_carry"]
    n_rows = _n_xs(body, p["num_consts"], p["num_carry"]) - (1 if p["tape"] else 0)
    rows = body.invars[start:start + n_rows]

    def rebuild(new_body, kept):
        dropped = {v for v, k in zip(rows, kept) if not k}
        new_body = Jaxpr([], [v for v in new_body.invars if v not in dropped],
                         new_body.eqns, new_body.outvars, new_body.debug_name)
        return eqn.replace(params=dict(p, jaxpr=new_body))

    return 0, body, rows, rebuild


scan_p.def_rule("tape_read", _read_rows)


# ---- simplification: xs that are the same at every step --------------------------------------
def _scan_simplify(eqn, defs):
    """The "simplify" rule of a scan over stacked xs: an xs operand every element of which
    is one scalar known at compile time (a splat: the ones of a cotangent seed, broadcast
    along the steps) is no operand: the body reads that literal (its 0-d slices) or builds
    the splat itself (larger slices), and then simplifies with it (`x * 1` goes)."""
    from mytorch.transforms.simplify import splat_literal

    p = eqn.params
    if p["tape"] is not None:
        return None
    body, start = p["jaxpr"], p["num_consts"] + p["num_carry"]
    splats = {j: splat_literal(v, defs) for j, v in enumerate(eqn.invars[start:], start)
              if type(v) is Var}
    splats = {j: lit for j, lit in splats.items() if lit is not None}
    if not splats:
        return None
    subst, made = {}, []
    for j, lit in splats.items():
        x = body.invars[j]
        if not x.aval.shape:
            subst[x] = Literal(lit.val, x.aval)
        else:
            made.append(defs[eqn.invars[j]].primitive.rules["splat"].make(
                Literal(lit.val, ShapedArray((), x.aval.dtype)), x, eqn.source_info))
    eqns = made + [renamed(e, subst) for e in body.eqns]
    new_body = Jaxpr([], [v for j, v in enumerate(body.invars) if j not in splats], eqns,
                     rename_all(body.outvars, subst), body.debug_name)
    return eqn.replace(invars=[v for j, v in enumerate(eqn.invars) if j not in splats],
                       params=dict(p, jaxpr=new_body))


scan_p.def_rule("simplify", _scan_simplify)
