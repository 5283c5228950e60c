"""The `scan` primitive: a loop carrying the loop body's jaxpr (the user-facing `scan`,
`fori_loop` and `map` that bind it are in loops.py).

    carry, ys = scan(f, init, xs)          # f(carry, x) -> (carry, y), ys stacked on axis 0

The `scan` equation's params: `jaxpr` (constant-free body: consts, carry, x-slices -> new
carry, y-slice), `num_consts`, `num_carry`, `length`, `reverse`, `unroll` (semantics
only). Its operands are consts, the initial carry and the stacked xs; its results are the
final carry and the stacked ys, of the types the body returns (weak types included).

Rules: JVP is a scan of the JVP body (carry tangents that become nonzero are found by a
fixpoint); linearize splits a scan into a known scan that also stacks each step's residuals
as extra ys and a linear scan reading them; the transpose of the linear scan runs in the
opposite direction over the stacked residuals (nothing is recomputed); batching keeps the
scanned axis at 0 (batched xs and ys carry their batch dimension at 1).
"""

from mytorch.core.ad_util import (
    Zero, add_tangents, instantiate, is_differentiable, is_undefined, tangent_aval, zeros,
)
from mytorch.core.aval import ShapedArray
from mytorch.core.jaxpr import Jaxpr, Var
from mytorch.core.primitive import Primitive
from mytorch.core.staging import StagingTrace
from mytorch.core.trace import aval_of, set_current_trace
from mytorch.lax._batching import bdim_at_front, bdim_to, not_mapped
from mytorch.transforms.closure import trace_closed_over
from mytorch.transforms.fixpoint import fixpoint
from mytorch.transforms.jvp import jvp_jaxpr
from mytorch.transforms.partial_eval import partial_eval_jaxpr
from mytorch.transforms.transpose import backward_pass

__all__ = ["scan", "fori_loop", "map", "scan_p", "transpose_body",
           "carry_cotangents"]


# ---- the primitive -----------------------------------------------------------------------
scan_p = Primitive("scan", multiple_results=True, kind="call")


def _groups(args, num_consts, num_carry):
    return (list(args[:num_consts]), list(args[num_consts:num_consts + num_carry]),
            list(args[num_consts + num_carry:]))


@scan_p.def_abstract_eval
def _scan_abstract_eval(*avals, jaxpr, num_consts, num_carry, length, reverse, unroll):
    if len(avals) != len(jaxpr.invars):
        raise TypeError(f"scan has {len(avals)} operands but its body takes "
                        f"{len(jaxpr.invars)}")
    consts, carry, xs = _groups(avals, num_consts, num_carry)
    body_in = [v.aval for v in jaxpr.invars]
    body_out = [v.aval for v in jaxpr.outvars]
    _, carry_in, x_in = _groups(body_in, num_consts, num_carry)
    carry_out = body_out[:num_carry]
    for a, b in zip(carry_in, carry_out, strict=True):
        if a.shape != b.shape or a.dtype != b.dtype:
            raise TypeError(
                "scan body: carry output must match carry input, got input "
                f"[{', '.join(x.str_short() for x in carry_in)}] and output "
                f"[{', '.join(x.str_short() for x in carry_out)}]")
    for a, b in zip(carry, carry_in):
        if a.shape != b.shape or a.dtype != b.dtype:
            raise TypeError(f"scan: initial carry {a.str_short()} does not match the body's "
                            f"carry {b.str_short()}")
    for a, b in zip(xs, x_in):
        if a.shape != (length, *b.shape) or a.dtype != b.dtype:
            raise TypeError(f"scan: xs operand {a.str_short()} does not match the body's "
                            f"slice {b.str_short()} with length {length}")
    # the loop's results have the body's types, weak types included (as in JAX)
    ys = [ShapedArray((length, *a.shape), a.dtype, a.weak_type) for a in body_out[num_carry:]]
    return list(carry_out) + ys


# ---- forward mode ------------------------------------------------------------------------
def _jvp_body(jaxpr, num_consts, num_carry, nonzero, carry_nz):
    """Trace the JVP of the body in scan layout: consts + const tangents, carry + carry
    tangents (those flagged in carry_nz, instantiated), xs + xs tangents -> carry, carry
    tangents (of the carry_nz carries and any the body makes nonzero), ys, nonzero ys
    tangents. Returns (jaxpr, consts, out_nonzero)."""
    nz = [*nonzero[:num_consts], *carry_nz, *nonzero[num_consts + num_carry:]]
    n_ys = len(jaxpr.outvars) - num_carry
    body, consts, out_nz = jvp_jaxpr(jaxpr, nz, [*carry_nz, *[False] * n_ys], "scan_jvp")
    n_c, n = len(consts), len(jaxpr.invars)
    primals, t_in = body.invars[n_c:n_c + n], iter(body.invars[n_c + n:])
    tangents = [next(t_in) if f else None for f in nz]
    invars = list(body.invars[:n_c])
    n_ck = num_consts + num_carry
    for lo, hi in ((0, num_consts), (num_consts, n_ck), (n_ck, n)):
        invars += [*primals[lo:hi], *[t for t in tangents[lo:hi] if t is not None]]
    m = len(jaxpr.outvars)
    t_out = iter(body.outvars[m:])
    t_outs = [next(t_out) if f else None for f in out_nz]
    outvars = []
    for lo, hi in ((0, num_carry), (num_carry, m)):
        outvars += [*body.outvars[lo:hi], *[t for t in t_outs[lo:hi] if t is not None]]
    return Jaxpr([], invars, body.eqns, outvars, body.debug_name), consts, out_nz


def _scan_jvp(primals, tangents, *, jaxpr, num_consts, num_carry, length, reverse, unroll):
    nonzero = [type(t) is not Zero and is_differentiable(aval_of(p))
               for p, t in zip(primals, tangents)]

    def step(carry_nz):  # a carry tangent that the body makes nonzero must be carried
        body, body_consts, out_nz = _jvp_body(jaxpr, num_consts, num_carry, nonzero, carry_nz)
        return [a or b for a, b in zip(carry_nz, out_nz)], (body, body_consts, out_nz)

    carry_nz, (body, body_consts, out_nz) = fixpoint(
        step, nonzero[num_consts:num_consts + num_carry], name="scan_jvp")
    consts, init, xs = _groups(primals, num_consts, num_carry)
    c_t, k_t, x_t = _groups(tangents, num_consts, num_carry)
    c_nz, _, x_nz = _groups(nonzero, num_consts, num_carry)
    const_t = [t for t, f in zip(c_t, c_nz) if f]
    init_t = [instantiate(t) if type(t) is Zero else t
              for t, f in zip(k_t, carry_nz) if f]
    xs_t = [t for t, f in zip(x_t, x_nz) if f]
    outs = scan_p.bind(*body_consts, *consts, *const_t, *init, *init_t, *xs, *xs_t,
                       jaxpr=body, num_consts=len(body_consts) + len(consts) + len(const_t),
                       num_carry=num_carry + len(init_t), length=length, reverse=reverse,
                       unroll=unroll)
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


def _split_body(jaxpr, num_consts, num_carry, unknowns):
    """Split the body into a known body and a staged (unknown) body.

    The carries that are unknown are found by a fixpoint (an unknown carry output makes the
    carry unknown). Residuals that are known consts are passed to the staged scan as its
    consts; every other residual is stacked: an extra y of the known scan, an extra x of
    the staged one. Returns (known, staged, carry_unknown, ys_unknown, const_res, n_stacked)
    where `const_res` are the indices of the consts passed on, `known` maps known consts,
    carry, xs -> known carry, known ys, stacked residuals, and `staged` takes
    [const residuals, unknown consts], [unknown carry], [stacked residuals, unknown xs].
    """
    c_unk, k_unk, x_unk = _groups(unknowns, num_consts, num_carry)

    def step(k_unk):
        split = partial_eval_jaxpr(jaxpr, [*c_unk, *k_unk, *x_unk], _save_all)
        return [a or b for a, b in zip(k_unk, split[2])], split

    k_unk, (known, staged, out_unk, num_res) = fixpoint(step, k_unk, name="scan_split")
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
    const_pos = {v: i for i, v in enumerate(jaxpr.invars[:num_consts])}
    xs_pos = {v: i for i, v in enumerate(jaxpr.invars[num_consts + num_carry:])}
    const_res = [(const_pos[v], r) for v, r in zip(residuals, res_in)
                 if type(v) is Var and v in const_pos]
    xs_res = [(xs_pos[v], r) for v, r in zip(residuals, res_in)
              if type(v) is Var and v in xs_pos]
    stacked = [(v, r) for v, r in zip(residuals, res_in)
               if not (type(v) is Var and (v in const_pos or v in xs_pos))]
    known = Jaxpr([], known.invars, known.eqns, new_known_out + [v for v, _ in stacked],
                  known.debug_name)
    u_in = staged.invars[num_res:]
    n_uc = sum(c_unk)
    n_uk = sum(k_unk)
    staged_in = ([r for _, r in const_res] + u_in[:n_uc] + u_in[n_uc:n_uc + n_uk]
                 + [r for _, r in xs_res] + [r for _, r in stacked] + u_in[n_uc + n_uk:])
    staged = Jaxpr([], staged_in, staged.eqns, new_staged_out, staged.debug_name)
    return (known, staged, k_unk, out_unk[num_carry:], [i for i, _ in const_res],
            len(stacked), [i for i, _ in xs_res])


def _split_params(params, split, unknowns):
    """Params of the known and staged scans; returns (known, staged) params dicts."""
    known, staged, k_unk, _, const_res, n_stacked, _ = split
    nc = params["num_consts"]
    n_uc = sum(unknowns[:nc])
    known_p = dict(params, jaxpr=known, num_consts=nc - n_uc,
                   num_carry=params["num_carry"] - sum(k_unk))
    staged_p = dict(params, jaxpr=staged, num_consts=len(const_res) + n_uc,
                    num_carry=sum(k_unk))
    return known_p, staged_p


def _known_unknown_operands(args, params, split, unknowns):
    """(known operands, function(stacked residuals) -> staged operands)."""
    _, _, k_unk, _, const_res, _, xs_res = split
    nc, ncar = params["num_consts"], params["num_carry"]
    c, k, x = _groups(args, nc, ncar)
    cu, _, xu = _groups(unknowns, nc, ncar)
    known_ops = ([a for a, u in zip(c, cu) if not u] + [a for a, u in zip(k, k_unk) if not u]
                 + [a for a, u in zip(x, xu) if not u])

    def staged_ops(stacked):
        return ([c[i] for i in const_res] + [a for a, u in zip(c, cu) if u]
                + [a for a, u in zip(k, k_unk) if u] + [x[i] for i in xs_res] + list(stacked)
                + [a for a, u in zip(x, xu) if u])

    return known_ops, staged_ops


def _merge_outs(params, k_unk, ys_unk, known_outs, staged_outs):
    known_it, staged_it = iter(known_outs), iter(staged_outs)
    return [next(staged_it) if u else next(known_it) for u in [*k_unk, *ys_unk]]


def _scan_partial_eval(trace, args, params):
    """linearize: a known scan run now (stacking residuals) and a staged linear scan."""
    unknowns = [trace.is_unknown(x) for x in args]
    if not any(unknowns):
        with set_current_trace(trace.parent):
            return scan_p.bind(*args, **params)
    nc, ncar = params["num_consts"], params["num_carry"]
    split = _split_body(params["jaxpr"], nc, ncar, unknowns)
    known_p, staged_p = _split_params(params, split, unknowns)
    known_ops, staged_ops = _known_unknown_operands(args, params, split, unknowns)
    n_stacked = split[5]
    with set_current_trace(trace.parent):
        known_outs = scan_p.bind(*known_ops, **known_p)
    n_known = len(known_outs) - n_stacked
    stacked = known_outs[n_known:]
    staged_outs = StagingTrace.process_primitive(trace, scan_p, staged_ops(stacked), staged_p)
    return _merge_outs(params, split[2], split[3], known_outs[:n_known], staged_outs)


def _scan_partial_eval_jaxpr(eqn, unknowns, saveable):
    """A scan nested in a jaxpr being split (e.g. inside jit under grad)."""
    params = eqn.params
    split = _split_body(params["jaxpr"], params["num_consts"], params["num_carry"], unknowns)
    known_p, staged_p = _split_params(params, split, unknowns)
    known_ops, staged_ops = _known_unknown_operands(eqn.invars, params, split, unknowns)
    _, _, k_unk, ys_unk, _, n_stacked, _ = split
    outs_unknown = [*k_unk, *ys_unk]
    stacked = [Var(ShapedArray((params["length"], *v.aval.shape), v.aval.dtype))
               for v in split[0].outvars[len(split[0].outvars) - n_stacked:]]
    known_eqn = eqn.replace(
        invars=known_ops, params=known_p,
        outvars=[v for v, u in zip(eqn.outvars, outs_unknown) if not u] + stacked)
    staged_eqn = eqn.replace(
        invars=staged_ops(stacked), params=staged_p,
        outvars=[v for v, u in zip(eqn.outvars, outs_unknown) if u])
    return known_eqn, staged_eqn, outs_unknown


scan_p.def_rule("partial_eval", _scan_partial_eval)
scan_p.def_rule("partial_eval_jaxpr", _scan_partial_eval_jaxpr)


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
    body_in = [v.aval for v in jaxpr.invars]
    c_avals, _, x_avals = _groups(body_in, num_consts, num_carry)
    lin_c_avals = [a for a, lin in zip(c_avals, c_lin) if lin]
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
            ct_in = backward_pass(jaxpr, [], linear_in, values, [*ct_k, *ct_y])
            c_ct, k_ct, x_ct = _groups(ct_in, num_consts, num_carry)
            store["out_zero"] = [type(t) is Zero for t in k_ct]
            new_acc = [instantiate(add_tangents(s, t))
                       for s, t in zip(acc, [t for t, lin in zip(c_ct, c_lin) if lin])]
            return [*new_acc, *[instantiate(t) for t, z in zip(k_ct, zero) if not z],
                    *[instantiate(t) for t, lin in zip(x_ct, x_lin) if lin]]

        in_avals = (list(res_c_avals) + lin_c_avals
                    + [a for a, z in zip(carry_avals, zero) if not z]
                    + [a for a, lin in zip(x_avals, x_lin) if not lin]
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


def _scan_transpose(cts, *args, jaxpr, num_consts, num_carry, length, reverse, unroll):
    """A scan in the opposite direction over the non-linear (residual) operands: it carries
    the carry cotangent and accumulates the cotangents of the linear consts."""
    consts, init, xs = _groups(args, num_consts, num_carry)
    # every carry of a linear scan is linear; one with a known value (a zero tangent that
    # was instantiated) just gets no cotangent
    init_lin = [is_undefined(c) for c in init]
    c_lin = [is_undefined(c) for c in consts]
    x_lin = [is_undefined(x) for x in xs]
    res_c = [c for c, lin in zip(consts, c_lin) if not lin]
    res_x = [x for x, lin in zip(xs, x_lin) if not lin]
    lin_c_avals = [c.aval for c, lin in zip(consts, c_lin) if lin]
    carry_avals = [c.aval if lin else aval_of(c) for c, lin in zip(init, init_lin)]
    ct_ys = [instantiate(c) for c in cts[num_carry:]]
    t_jaxpr, t_consts, zero = transpose_body(
        jaxpr, num_consts, num_carry, c_lin, x_lin, [aval_of(c) for c in res_c], carry_avals,
        [type(c) is Zero for c in cts[:num_carry]])
    ct_carry = [instantiate(c) for c, z in zip(cts[:num_carry], zero) if not z]
    n_lc, n_k = len(lin_c_avals), len(ct_carry)
    acc0 = [zeros(a) for a in lin_c_avals]
    outs = scan_p.bind(*t_consts, *res_c, *acc0, *ct_carry, *res_x, *ct_ys, jaxpr=t_jaxpr,
                       num_consts=len(t_consts) + len(res_c), num_carry=n_lc + n_k,
                       length=length, reverse=not reverse, unroll=unroll)
    ct_consts_it = iter(outs[:n_lc])
    ct_init = iter(outs[n_lc:n_lc + n_k])
    ct_xs_it = iter(outs[n_lc + n_k:])
    return ([next(ct_consts_it) if lin else None for lin in c_lin]
            + carry_cotangents(ct_init, init_lin, zero)
            + [next(ct_xs_it) if lin else None for lin in x_lin])


scan_p.def_transpose(_scan_transpose)
scan_p.transpose_zeros = True


# ---- batching ----------------------------------------------------------------------------
def _batch_body(jaxpr, axis, num_consts, num_carry, const_dims, carry_b, xs_b):
    """Batch the body: carries flagged in carry_b and batched ys at dimension 0.
    Returns (jaxpr, consts, carry_out_batched, ys_batched)."""
    from mytorch.transforms.batching import batch_jaxpr

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


def _scan_batching(axis, args, dims, *, jaxpr, num_consts, num_carry, length, reverse,
                   unroll):
    """The scanned axis stays 0: batched xs and ys have their batch dimension at 1; the
    batched carries (a fixpoint: a carry the body batches is batched) at 0."""
    c_args, k_args, x_args = _groups(args, num_consts, num_carry)
    c_dims, k_dims, x_dims = _groups(dims, num_consts, num_carry)
    xs_b = [d is not not_mapped for d in x_dims]

    def step(carry_b):
        out = _batch_body(jaxpr, axis, num_consts, num_carry, c_dims, carry_b, xs_b)
        return [a or b for a, b in zip(carry_b, out[2])], out

    carry_b, (body, consts, _, y_b) = fixpoint(
        step, [d is not not_mapped for d in k_dims], name="scan_batching")
    init = [bdim_at_front(a, d, axis.size) if b else a
            for a, d, b in zip(k_args, k_dims, carry_b)]
    xs = [a if d is not_mapped else bdim_to(a, d, 1, axis.size)
          for a, d in zip(x_args, x_dims)]
    outs = scan_p.bind(*consts, *c_args, *init, *xs, jaxpr=body,
                       num_consts=len(consts) + num_consts, num_carry=num_carry,
                       length=length, reverse=reverse, unroll=unroll)
    out_dims = [0 if b else not_mapped for b in carry_b] + [1 if b else not_mapped for b in y_b]
    return outs, out_dims


scan_p.def_batching(_scan_batching)


# the user-facing functions live in loops.py (imported here last: loops.py needs scan_p)
from mytorch.lax.loops import fori_loop, map, scan  # noqa: E402,F401
