"""Rule helpers shared by the loop primitives (scan, while, while_tape).

The loop primitives' modules import these; none of them imports another loop module for
its helpers, so the loops form no import circle.

    ScanOperands              a scan's operand layout (operand_groups)
    WhileOperands             a while's (and a while_tape's) operand layout
    scan_jvp_body(...)        a scan-layout body's JVP
    scan_batch_body(...)      a scan-layout body batched
    transpose_body(...)       a linear scan-layout body's transpose
    carry_cotangents(...)     the initial carries' cotangents of such a transpose
    while_carry_dims(...)     which carries of a batched while loop are batched
    batched_pred(...)         a while predicate under vmap
    masked(pred, new, old)    per-element choice between new and old carries
"""

from mytorch.core.ad_util import Zero, add_tangents, instantiate
from mytorch.core.jaxpr import Jaxpr, eval_jaxpr
from mytorch.core.trace import aval_of
from mytorch.lax._batching import bdim_at_front, not_mapped
from mytorch.lax.elementwise import select_n
from mytorch.lax.reductions import reduce_or
from mytorch.lax.structural import broadcast_in_dim
from mytorch.transforms.batching import batch_flat, batch_jaxpr
from mytorch.transforms.closure import trace_closed_over
from mytorch.transforms.fixpoint import fixpoint
from mytorch.transforms.jvp import jvp_jaxpr
from mytorch.transforms.operands import operand_groups
from mytorch.transforms.transpose import backward_pass

__all__ = [
    "ScanOperands", "WhileOperands", "scan_jvp_body", "scan_batch_body",
    "transpose_body", "carry_cotangents", "while_carry_dims", "batched_pred", "masked",
]

# a scan's operands, and its body's inputs (xs: one slice of each)
ScanOperands = operand_groups("ScanOperands", "consts carry xs")
# a while's (and a while_tape's) operands
WhileOperands = operand_groups("WhileOperands", "cond_consts body_consts carry")


# ---- scan-layout bodies: (consts, carries, xs) -> (carries, ys) -----------------------------
def scan_jvp_body(jaxpr, num_consts, num_carry, nonzero, carry_nz):
    """Trace the JVP of the body in scan layout: consts + const tangents, carry + carry
    tangents (those flagged in carry_nz, instantiated), xs + xs tangents -> carry, carry
    tangents (of the carry_nz carries and any the body makes nonzero), ys, nonzero ys
    tangents. Returns (jaxpr, consts, out_nonzero)."""
    sizes = dict(consts=num_consts, carry=num_carry)
    nz_in = ScanOperands.split(nonzero, **sizes).replace(carry=carry_nz)
    nz = nz_in.flat()
    n_ys = len(jaxpr.outvars) - num_carry
    body, consts, out_nz = jvp_jaxpr(jaxpr, nz, [*carry_nz, *[False] * n_ys], "scan_jvp")
    n_c, n = len(consts), len(jaxpr.invars)
    t_in = iter(body.invars[n_c + n:])
    primals = ScanOperands.split(body.invars[n_c:n_c + n], **sizes)
    tangents = ScanOperands.split([next(t_in) if f else None for f in nz], **sizes)
    invars = list(body.invars[:n_c])
    for p, t in zip(primals, tangents):  # each group followed by its tangents
        invars += [*p, *[x for x in t if x is not None]]
    m = len(jaxpr.outvars)
    t_out = iter(body.outvars[m:])
    t_outs = [next(t_out) if f else None for f in out_nz]
    outvars = []
    for lo, hi in ((0, num_carry), (num_carry, m)):  # carries, then ys
        outvars += [*body.outvars[lo:hi], *[t for t in t_outs[lo:hi] if t is not None]]
    return Jaxpr([], invars, body.eqns, outvars, body.debug_name), consts, out_nz


def scan_batch_body(jaxpr, axis, num_consts, num_carry, const_dims, carry_b, xs_b):
    """Batch the body: carries flagged in carry_b and batched ys at dimension 0.
    Returns (jaxpr, consts, carry_out_batched, ys_batched)."""

    def finish(outs, dims):
        k_dims, y_dims = dims[:num_carry], dims[num_carry:]
        k_out = [bdim_at_front(o, d, axis.size) if b else o
                 for o, d, b in zip(outs[:num_carry], k_dims, carry_b)]
        y_out = [o if d is not_mapped else bdim_at_front(o, d, axis.size)
                 for o, d in zip(outs[num_carry:], y_dims)]
        k_d = [0 if b else d for d, b in zip(k_dims, carry_b)]
        y_d = [not_mapped if d is not_mapped else 0 for d in y_dims]
        return [*k_out, *y_out], [*k_d, *y_d]

    in_dims = [*const_dims, *[0 if b else not_mapped for b in carry_b],
               *[0 if b else not_mapped for b in xs_b]]
    new, consts, out_dims = batch_jaxpr(jaxpr, axis, in_dims, finish, "scan_vmap")
    k_b = [d is not not_mapped for d in out_dims[:num_carry]]
    y_b = [d is not not_mapped for d in out_dims[num_carry:]]
    return new, consts, k_b, y_b


def transpose_body(jaxpr, num_consts, num_carry, c_lin, x_lin, res_c_avals, carry_avals,
                   ct_zero):
    """The body of a linear scan's transpose, in scan layout: (residual consts, linear
    consts' cotangent sums, carry cotangents, residual xs, ys cotangents) -> (new sums,
    carry cotangents, linear xs' cotangents). `c_lin`/`x_lin` flag the linear consts and
    xs; every carry is linear.

    `ct_zero` flags the carries whose incoming cotangent is a symbolic zero (their final
    value is unused). Those whose cotangent stays zero through the body (a fixpoint: e.g.
    a convergence measure only the predicate reads) are not carried at all.
    Returns (jaxpr, captured consts, zero flags of the carries left out)."""
    sizes = dict(consts=num_consts, carry=num_carry)
    body_in = ScanOperands.split([v.aval for v in jaxpr.invars], **sizes)
    lin_c_avals = [a for a, lin in zip(body_in.consts, c_lin) if lin]
    n_rc, n_lc = len(res_c_avals), len(lin_c_avals)
    n_rx = len(x_lin) - sum(x_lin)
    linear_in = [*c_lin, *[True] * num_carry, *x_lin]

    def step(carried):  # the carries with a nonzero cotangent (the rest are left out)
        zero = [not c for c in carried]
        n_k = num_carry - sum(zero)
        store = {}

        def body(*a):
            rc, acc = list(a[:n_rc]), list(a[n_rc:n_rc + n_lc])
            ct_it = iter(a[n_rc + n_lc:n_rc + n_lc + n_k])
            ct_k = [Zero(av) if z else next(ct_it) for av, z in zip(carry_avals, zero)]
            rest = a[n_rc + n_lc + n_k:]
            rx, ct_y = list(rest[:n_rx]), list(rest[n_rx:])
            rc_it, rx_it = iter(rc), iter(rx)
            values = ([None if lin else next(rc_it) for lin in c_lin] + [None] * num_carry
                      + [None if lin else next(rx_it) for lin in x_lin])
            ct_in = ScanOperands.split(
                backward_pass(jaxpr, [], linear_in, values, [*ct_k, *ct_y]), **sizes)
            store["out_zero"] = [type(t) is Zero for t in ct_in.carry]
            new_acc = [instantiate(add_tangents(s, t)) for s, t in
                       zip(acc, [t for t, lin in zip(ct_in.consts, c_lin) if lin])]
            return [*new_acc, *[instantiate(t) for t, z in zip(ct_in.carry, zero) if not z],
                    *[instantiate(t) for t, lin in zip(ct_in.xs, x_lin) if lin]]

        in_avals = (list(res_c_avals) + lin_c_avals
                    + [a for a, z in zip(carry_avals, zero) if not z]
                    + [a for a, lin in zip(body_in.xs, x_lin) if not lin]
                    + [v.aval for v in jaxpr.outvars[num_carry:]])
        t_jaxpr, t_consts = trace_closed_over(body, in_avals, "scan_transpose")
        return [c or not oz for c, oz in zip(carried, store["out_zero"])], (t_jaxpr, t_consts)

    carried, (t_jaxpr, t_consts) = fixpoint(step, [not z for z in ct_zero],
                                            name="scan_transpose")
    return t_jaxpr, t_consts, [not c for c in carried]


def carry_cotangents(carried, init_lin, zero):
    """The cotangents of a linear loop's initial carries: the next of `carried` for each
    carry the transpose carried, None for a zero one (see transpose_body) or one whose
    initial value was not linear."""
    out = []
    for lin, z in zip(init_lin, zero):
        ct = None if z else next(carried)
        out.append(ct if lin else None)
    return out


# ---- batched while loops ----------------------------------------------------------------------
def while_carry_dims(axis, body_jaxpr, cond_jaxpr, cc_dims, bc_dims, carry_dims):
    """Which carries must be batched (fixpoint over the body), and whether the predicate is
    batched. Batched carries are kept at dimension 0."""

    def step(batched):
        dims = [0 if b else not_mapped for b in batched]
        _, _, out_dims = batch_jaxpr(body_jaxpr, axis, [*bc_dims, *dims])
        return [b or d is not not_mapped for b, d in zip(batched, out_dims)], dims

    batched, dims = fixpoint(step, [d is not not_mapped for d in carry_dims],
                             name="while_batching")
    _, _, (pred_dim,) = batch_jaxpr(cond_jaxpr, axis, [*cc_dims, *dims])
    pred_batched = pred_dim is not not_mapped
    return ([True] * len(batched) if pred_batched else batched), pred_batched


def batched_pred(cond_jaxpr, axis, cc_dims, dims, cc, carry, reduce):
    """The predicate of the batched loop: unbatched as it is, else per element (at dim 0),
    or (with `reduce`) whether any element is not done."""
    (p,), (pd,) = batch_flat(lambda *a: eval_jaxpr(cond_jaxpr, [], *a), [*cc, *carry],
                             [*cc_dims, *dims], axis, "while_cond")
    if pd is not_mapped:
        return p
    p = bdim_at_front(p, pd, axis.size)
    return reduce_or(p, (0,)) if reduce else p


def masked(pred, new, old):
    """`new` where the (B,) `pred` holds, else `old`: carries batched at dim 0."""
    out = []
    for n, o in zip(new, old):
        shape = aval_of(o).shape
        p = broadcast_in_dim(pred, shape, (0,)) if len(shape) > 1 else pred
        out.append(select_n(p, o, n))
    return out
