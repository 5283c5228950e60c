"""`while_tape` and `tape_scan`: reverse mode of a while loop whose trip count is only known
when the program runs (the loop is staged under jit, or nested in a cond/scan body).

    final carries, tape = while_tape(cond consts, body consts, carries)   # known part
    tangent carries = tape_scan(tape, consts, tangent carries)            # linear part

`while_tape`'s body maps (body consts, carries) to (carries, residual rows[, mask]); each
iteration pushes its rows on the tape (a value of `tape_aval`, an array of the opaque host
dtype whose buffer each backend defines: the NumPy one in `mytorch.backends.numpy.tape`).
`tape_scan` is a scan whose xs are the tape's rows, read in order (or reversed): its
`jaxpr` maps (consts, carries, rows [, mask]) to carries. Its transpose is a `tape_scan` in the opposite direction over the
same tape, so `jit(grad(f))` of a `while_loop` runs the forward loop once, recording, and
the backward loop once over the records. `batch_shape` is the shape of the tape operand:
() for one loop; under vmap the loop runs once for the whole batch, and each step's rows
carry the batch axes in front, followed by the mask of elements still running.

Differentiating these again (jit(grad(grad(f)))) is not supported: the rows are values of
the forward pass on a host-side tape, not differentiable arrays; the JVP of `while_tape`
says so rather than dropping their derivatives.
"""

import numpy as np

from mytorch.core.ad_util import (
    Zero, instantiate, is_differentiable, is_undefined, tangent_aval, zeros,
)
from mytorch.core.aval import ShapedArray
from mytorch.core.jaxpr import Jaxpr, eval_jaxpr
from mytorch.core.primitive import Primitive
from mytorch.core.source_info import where
from mytorch.core.trace import aval_of
from mytorch.lax._batching import bdim_at_front, not_mapped
from mytorch.lax._loop_rules import (
    ScanOperands, TapeScanOperands, WhileOperands, batched_pred, carry_cotangents, masked,
    scan_batch_body, scan_jvp_body, transpose_body, while_carry_dims,
)
from mytorch.lax._masking import fed_dims, feed, guard_linear
from mytorch.lax.structural import broadcast_in_dim, full
from mytorch.transforms.batching import batch_flat
from mytorch.transforms.closure import trace_closed_over
from mytorch.transforms.dce import dce_jaxpr
from mytorch.transforms.fixpoint import fixpoint

__all__ = ["while_tape_p", "tape_scan_p", "TAPE_DTYPE", "tape_aval"]

while_tape_p = Primitive("while_tape", multiple_results=True, kind="call")
tape_scan_p = Primitive("tape_scan", multiple_results=True, kind="call")


# a tape's type: the opaque host dtype (core.dtypes.is_opaque), of the batch shape (its
# buffers are the backend's business)
TAPE_DTYPE = np.dtype(object)


def tape_aval(batch_shape=()):
    """The abstract value of a tape (of `batch_shape` tapes)."""
    return ShapedArray(batch_shape, TAPE_DTYPE)


# ---- while_tape ------------------------------------------------------------------------------
@while_tape_p.def_abstract_eval
def _while_tape_abstract_eval(*avals, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts,
                              num_carry, batch_shape, every):
    carry = WhileOperands.split(avals, cond_consts=cond_nconsts,
                                body_consts=body_nconsts).carry
    return [a.strip_weak() for a in carry] + [tape_aval(batch_shape)]


def _while_tape_jvp(primals, tangents, **params):
    if any(type(t) is not Zero and is_differentiable(aval_of(p))
           for p, t in zip(primals, tangents)):
        raise TypeError(
            "while_loop: the reverse-mode derivative of a while_loop whose trip count is only "
            "known at run time (under jit, or inside cond/scan) cannot be differentiated "
            "again: its residuals live on a host-side tape. Take the higher derivative "
            "outside jit, where the loop runs eagerly (grad(grad(f)) works there), or use "
            f"lax.fori_loop/lax.scan with a static trip count{where()}.")
    outs = while_tape_p.bind(*primals, **params)
    return outs, [Zero(aval_of(o)) for o in outs]


while_tape_p.def_jvp(_while_tape_jvp)


def _while_tape_batching(axis, args, dims, *, cond_jaxpr, body_jaxpr, cond_nconsts,
                         body_nconsts, num_carry, batch_shape, every):
    """One loop for the whole batch: the carries are masked as in `while`'s batching, and
    each step's rows get the batch axis in front, followed by the mask of elements that
    ran the step."""
    sizes = dict(cond_consts=cond_nconsts, body_consts=body_nconsts)
    cc, bc, carry = WhileOperands.split(args, **sizes)
    cc_dims, bc_dims, carry_dims = WhileOperands.split(dims, **sizes)
    carry_only = Jaxpr([], body_jaxpr.invars, body_jaxpr.eqns,
                       body_jaxpr.outvars[:num_carry], "while_tape_carry")
    batched, pred_batched = while_carry_dims(axis, carry_only, cond_jaxpr, cc_dims, bc_dims,
                                        carry_dims)
    carry = [bdim_at_front(x, d, axis.size) if b else x
             for x, d, b in zip(carry, carry_dims, batched)]
    cdims = [0 if b else not_mapped for b in batched]
    n_cc, n_bc, size = len(cc), len(bc), axis.size

    def new_cond(*xs):
        return [batched_pred(cond_jaxpr, axis, cc_dims, cdims, xs[:n_cc], xs[n_cc:], True)]

    def new_body(*xs):
        c, b, old = WhileOperands.split(xs, cond_consts=n_cc, body_consts=n_bc)
        ins, in_dims = [*b, *old], [*bc_dims, *cdims]
        if pred_batched:  # a finished element runs the body on a running one's operands,
            # so the rows it records are values a real step computed (see `_masking`)
            pred = batched_pred(cond_jaxpr, axis, cc_dims, cdims, c, old, False)
            ins, in_dims = feed(pred, ins, in_dims, size), fed_dims(in_dims)
        outs, od = batch_flat(lambda *a: eval_jaxpr(body_jaxpr, [], *a), ins, in_dims, axis,
                              "while_tape_body")
        new = [o if d is not_mapped and cd is not_mapped else bdim_at_front(o, d, size)
               for o, d, cd in zip(outs[:num_carry], od, cdims)]
        rows = [bdim_at_front(o, d, size) for o, d in zip(outs[num_carry:], od[num_carry:])]
        if not batch_shape:  # this axis adds the mask
            rows.append(full((size,), True, np.dtype(np.bool_)))
        if not pred_batched:  # every element of this axis runs every step
            return [*new, *rows]
        # an element of this axis that is done keeps its carry; the mask (already per
        # element of the inner axes, whose own masking runs inside) says so too
        rows[-1] = rows[-1] & broadcast_in_dim(pred, (size, *batch_shape), (0,))
        return [*masked(pred, new, old), *rows]

    avals = [aval_of(x) for x in carry]
    cj, cj_consts = trace_closed_over(new_cond, [aval_of(x) for x in cc] + avals,
                                      "while_tape_cond_vmap")
    bj, bj_consts = trace_closed_over(new_body, [aval_of(x) for x in cc + bc] + avals,
                                      "while_tape_body_vmap")
    outs = while_tape_p.bind(*cj_consts, *cc, *bj_consts, *cc, *bc, *carry, cond_jaxpr=cj,
                             body_jaxpr=bj, cond_nconsts=len(cj_consts) + n_cc,
                             body_nconsts=len(bj_consts) + n_cc + n_bc, num_carry=num_carry,
                             batch_shape=(size, *batch_shape), every=every)
    return outs, [*cdims, 0]


while_tape_p.def_batching(_while_tape_batching)


# ---- tape_scan -----------------------------------------------------------------------------
def _n_rows(jaxpr, num_consts, num_carry, batch_shape):
    return len(jaxpr.invars) - num_consts - num_carry - (1 if batch_shape else 0)


@tape_scan_p.def_abstract_eval
def _tape_scan_abstract_eval(tape, *avals, jaxpr, num_consts, num_carry, reverse,
                             batch_shape):
    if tape.dtype != TAPE_DTYPE or tape.shape != tuple(batch_shape):
        raise TypeError(f"tape_scan reads a tape of shape {tuple(batch_shape)}, got "
                        f"{tape.str_short()}")
    if len(avals) != num_consts + num_carry:
        raise TypeError(f"tape_scan has {len(avals)} consts and carries, its step takes "
                        f"{num_consts} + {num_carry}")
    return [ShapedArray(v.aval.shape, v.aval.dtype) for v in jaxpr.outvars]


def _tape_scan_transpose(cts, tape, *args, jaxpr, num_consts, num_carry, reverse,
                         batch_shape):
    """A tape_scan in the opposite direction over the same tape, carrying the carry
    cotangents and summing the linear consts' cotangents."""
    consts, init = ScanOperands.split(args, consts=num_consts, carry=num_carry)[:2]
    c_lin = [is_undefined(c) for c in consts]
    init_lin = [is_undefined(c) for c in init]
    res_c = [c for c, lin in zip(consts, c_lin) if not lin]
    lin_c_avals = [c.aval for c, lin in zip(consts, c_lin) if lin]
    carry_avals = [c.aval if lin else aval_of(c) for c, lin in zip(init, init_lin)]
    n_xs = len(jaxpr.invars) - num_consts - num_carry
    t_jaxpr, t_consts, zero = transpose_body(
        jaxpr, num_consts, num_carry, c_lin, [False] * n_xs, [aval_of(c) for c in res_c],
        carry_avals, [type(c) is Zero for c in cts])
    ct_carry = [instantiate(c) for c, z in zip(cts, zero) if not z]
    acc0 = [zeros(a) for a in lin_c_avals]
    outs = tape_scan_p.bind(tape, *t_consts, *res_c, *acc0, *ct_carry,
                            jaxpr=t_jaxpr, num_consts=len(t_consts) + len(res_c),
                            num_carry=len(acc0) + len(ct_carry), reverse=not reverse,
                            batch_shape=batch_shape)
    ct_consts, ct_init = iter(outs[:len(acc0)]), iter(outs[len(acc0):])
    return [None, *[next(ct_consts) if lin else None for lin in c_lin],
            *carry_cotangents(ct_init, init_lin, zero)]


def _tape_scan_jvp(primals, tangents, *, jaxpr, num_consts, num_carry, reverse,
                   batch_shape):
    """A tape_scan of the step's JVP: the tape's rows are constants (no tangent); the
    carries whose tangent the step makes nonzero are found by a fixpoint."""
    sizes = dict(tape=1, consts=num_consts)
    ops = TapeScanOperands.split(primals, **sizes)
    tan = TapeScanOperands.split(tangents, **sizes)
    n_xs = len(jaxpr.invars) - num_consts - num_carry
    nonzero = [type(t) is not Zero and is_differentiable(aval_of(p))
               for p, t in zip([*ops.consts, *ops.carry], [*tan.consts, *tan.carry])]
    nz = ScanOperands.split([*nonzero, *[False] * n_xs], consts=num_consts, carry=num_carry)

    def step(carry_nz):
        body, body_consts, out_nz = scan_jvp_body(jaxpr, num_consts, num_carry, nz.flat(),
                                                  carry_nz)
        return [a or b for a, b in zip(carry_nz, out_nz)], (body, body_consts)

    carry_nz, (body, body_consts) = fixpoint(step, nz.carry, name="tape_scan_jvp")
    const_t = [t for t, f in zip(tan.consts, nz.consts) if f]
    init_t = [instantiate(t) for t, f in zip(tan.carry, carry_nz) if f]
    outs = tape_scan_p.bind(*ops.tape, *body_consts, *ops.consts, *const_t, *ops.carry,
                            *init_t, jaxpr=body,
                            num_consts=len(body_consts) + num_consts + len(const_t),
                            num_carry=num_carry + len(init_t), reverse=reverse,
                            batch_shape=batch_shape)
    carry, carry_t = outs[:num_carry], iter(outs[num_carry:])
    return carry, [next(carry_t) if f else Zero(tangent_aval(aval_of(c)))
                   for c, f in zip(carry, carry_nz)]


tape_scan_p.def_jvp(_tape_scan_jvp)
tape_scan_p.def_transpose(_tape_scan_transpose)


def _tape_scan_batching(axis, args, dims, *, jaxpr, num_consts, num_carry, reverse,
                        batch_shape):
    """An unbatched tape: the step is batched like a scan body over unbatched xs. A batched
    tape (a vectorised loop's): the rows and the mask gain the batch axis in front, every
    carry is batched, and an element keeps its carry at steps it did not run."""
    sizes = dict(tape=1, consts=num_consts)
    (tape,), consts, carry = TapeScanOperands.split(args, **sizes)
    (tape_dim,), c_dims, k_dims = TapeScanOperands.split(dims, **sizes)
    n_xs = len(jaxpr.invars) - num_consts - num_carry
    size = axis.size
    if tape_dim is not_mapped:

        def step(carry_b):
            body, b_consts, k_out_b, _ = scan_batch_body(jaxpr, axis, num_consts, num_carry,
                                                         c_dims, carry_b, [False] * n_xs)
            return [a or b for a, b in zip(carry_b, k_out_b)], (body, b_consts)

        carry_b, (body, b_consts) = fixpoint(step, [d is not not_mapped for d in k_dims],
                                             name="tape_scan_batching")
        init = [bdim_at_front(a, d, size) if b else a
                for a, d, b in zip(carry, k_dims, carry_b)]
        outs = tape_scan_p.bind(tape, *b_consts, *consts, *init, jaxpr=body,
                                num_consts=len(b_consts) + num_consts, num_carry=num_carry,
                                reverse=reverse, batch_shape=batch_shape)
        return outs, [0 if b else not_mapped for b in carry_b]
    tape = bdim_at_front(tape, tape_dim, size)
    carry = [bdim_at_front(a, d, size) for a, d in zip(carry, k_dims)]
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
                              [*c_dims, *[0] * (num_carry + len(ins))], axis, "tape_scan")
        outs = [bdim_at_front(o, d, size) for o, d in zip(outs, od)]
        return masked(rows[-1], outs, k) if first else outs

    row_avals = [ShapedArray((size, *a.shape), a.dtype) for a in x_avals]
    if first:
        row_avals.append(ShapedArray((size,), np.dtype(np.bool_)))
    step_avals = ([aval_of(c) for c in consts] + [aval_of(k) for k in carry] + row_avals)
    body, b_consts = trace_closed_over(step, step_avals, "tape_scan_vmap")
    outs = tape_scan_p.bind(tape, *b_consts, *consts, *carry, jaxpr=body,
                            num_consts=len(b_consts) + num_consts, num_carry=num_carry,
                            reverse=reverse, batch_shape=(size, *batch_shape))
    return outs, [0] * num_carry


tape_scan_p.def_batching(_tape_scan_batching)


# ---- the tape's rows, for the pruning pass (transforms/tape_rows.py) ----------------------
def _recorded_rows(eqn):
    """The "tape_record" rule: (the tape's output position, the rows each step records:
    body outputs, rebuild(kept) -> the equation recording only the rows flagged)."""
    p, body = eqn.params, eqn.params["body_jaxpr"]
    n_carry, n_mask = p["num_carry"], 1 if p["batch_shape"] else 0
    rows = body.outvars[n_carry:len(body.outvars) - n_mask]

    def rebuild(kept):
        outs = [*body.outvars[:n_carry], *[v for v, k in zip(rows, kept) if k],
                *body.outvars[n_carry + len(rows):]]
        new = dce_jaxpr(Jaxpr([], body.invars, body.eqns, outs, body.debug_name))
        return eqn.replace(params=dict(p, body_jaxpr=new))

    return len(eqn.outvars) - 1, rows, rebuild


def _read_rows(eqn):
    """The "tape_read" rule: (the tape's operand position, the step jaxpr, its row inputs
    (the mask excluded), rebuild(step, kept) -> the equation whose step is `step` without
    the row inputs not flagged)."""
    p, step = eqn.params, eqn.params["jaxpr"]
    start = p["num_consts"] + p["num_carry"]
    rows = step.invars[start:start + _n_rows(step, p["num_consts"], p["num_carry"],
                                             p["batch_shape"])]

    def rebuild(new_step, kept):
        dropped = {v for v, k in zip(rows, kept) if not k}
        new_step = Jaxpr([], [v for v in new_step.invars if v not in dropped], new_step.eqns,
                         new_step.outvars, new_step.debug_name)
        return eqn.replace(params=dict(p, jaxpr=new_step))

    return 0, step, rows, rebuild


while_tape_p.def_rule("tape_record", _recorded_rows)
tape_scan_p.def_rule("tape_read", _read_rows)
