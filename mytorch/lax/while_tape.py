"""`while_tape`: the known half of the reverse mode of a while loop whose trip count is
only known when the program runs (the loop is staged under jit, or nested in a cond/scan
body).

    final carries, tape = while_tape(cond consts, body consts, carries)        # known part
    tangent carries = scan(tape, consts, tangent carries, tape=batch_shape)    # linear part

`while_tape`'s body maps (body consts, carries) to (carries, residual rows[, mask]); each
iteration pushes its rows on the tape (a value of `tape_aval`, an array of the opaque host
dtype whose buffer each backend defines: the NumPy one in `mytorch.backends.numpy.tape`).
The linear part is a tape-sourced `scan` (scan.py): its xs are the tape's rows, read in
order (or reversed), and its body maps (consts, carries, rows [, mask]) to carries. Its
transpose is the same kind of scan in the opposite direction over the same tape, so
`jit(grad(f))` of a `while_loop` runs the forward loop once, recording, and the backward
loop once over the records. `batch_shape` is the shape of the tape: () for one loop; under
vmap the loop runs once for the whole batch, and each step's rows carry the batch axes in
front, followed by the mask of elements still running.

Differentiating these again (jit(grad(grad(f)))) is not supported: the rows are values of
the forward pass on a host-side tape, not differentiable arrays; the JVP of `while_tape`
says so rather than dropping their derivatives.
"""

import numpy as np

from mytorch.core.ad_util import Zero, is_differentiable
from mytorch.core.aval import ShapedArray
from mytorch.core.jaxpr import Jaxpr, eval_jaxpr
from mytorch.core.primitive import Primitive
from mytorch.core.source_info import where
from mytorch.core.trace import aval_of
from mytorch.lax._batching import bdim_at_front, not_mapped
from mytorch.lax._loop_rules import WhileOperands, batched_pred, masked, while_carry_dims
from mytorch.lax._masking import fed_dims, feed
from mytorch.lax.structural import broadcast_in_dim, full
from mytorch.transforms.batching import batch_flat
from mytorch.transforms.closure import trace_closed_over
from mytorch.transforms.dce import dce_jaxpr

__all__ = ["while_tape_p", "TAPE_DTYPE", "tape_aval"]

while_tape_p = Primitive("while_tape", multiple_results=True, kind="call")


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


while_tape_p.def_rule("tape_record", _recorded_rows)
