"""The NumPy code generator's lowering of `scan`: one generated loop function per scan.

The body jaxpr (optimised with the program: `optimize` recurses into it) is pruned to the
outputs the program reads (`prune_scan`); accumulators the body only adds products or sums
into are summed after the loop (control_flow_sink.py), and the rest is inlined into a
Python `for` loop (control_flow_loops.py): the xs are read as slices of the stacks, the ys
written into buffers preallocated with `np.empty`, a tape-sourced scan walks the tape's
stacked rows. Nothing is retraced per iteration. A scan over a tape of another layout (a
vmapped while loop's rows) keeps the body a function of its own (`g.subfunction`) that
`runtime.scan_tape_loop` calls once per step. Profiled code times each equation of the
inlined body where it runs.
"""

import numpy as np

from mytorch.backends.numpy import control_flow_loops as loops
from mytorch.backends.numpy.emitters import EMITTERS
from mytorch.backends.numpy.runtime import scan_tape_loop
from mytorch.core.jaxpr import Jaxpr, Var
from mytorch.lax.scan import scan_p
from mytorch.transforms.dce import dce_jaxpr
from mytorch.transforms.fixpoint import fixpoint

__all__ = ["prune_scan"]


def _read_vars(jaxpr):
    return {v for e in jaxpr.eqns for v in e.invars if type(v) is Var} | {
        v for v in jaxpr.outvars if type(v) is Var}


def prune_scan(params, used_outs):
    """Dead-code elimination of a scan: (new params, used-operand flags) computing only the
    outputs flagged in `used_outs`. A carry stays when its result is used or when the body
    reads it to compute something that stays (a fixpoint); unread consts and xs go. A
    tape-sourced scan keeps its tape and every row input (the body takes each row the tape
    holds: the tape-rows pass of `optimize` prunes rows at both ends)."""
    jaxpr, nc, ncar = params["jaxpr"], params["num_consts"], params["num_carry"]
    keep_ys = list(used_outs[ncar:])

    def step(keep_carry):
        outs = [v for v, k in zip(jaxpr.outvars, keep_carry + keep_ys) if k]
        body = dce_jaxpr(Jaxpr([], jaxpr.invars, jaxpr.eqns, outs, jaxpr.debug_name))
        read = _read_vars(body)
        new = [k or v in read for k, v in zip(keep_carry, jaxpr.invars[nc:nc + ncar])]
        return new, (body, read)

    keep_carry, (body, read) = fixpoint(step, used_outs[:ncar], name="prune_scan")
    from_tape = params["tape"] is not None
    used_in = ([v in read for v in jaxpr.invars[:nc]] + keep_carry
               + [from_tape or v in read for v in jaxpr.invars[nc + ncar:]])
    body = Jaxpr([], [v for v, u in zip(jaxpr.invars, used_in) if u], body.eqns, body.outvars,
                 jaxpr.debug_name)
    new_params = dict(params, jaxpr=body, num_consts=sum(used_in[:nc]),
                      num_carry=sum(keep_carry))
    # the operands: the tape (kept) then consts and carries, or consts, carries and xs
    used_ops = [True, *used_in[:nc + ncar]] if from_tape else used_in
    return new_params, used_ops, keep_carry + keep_ys


def _expand(outs, mask):
    """The loop's results at the positions of the used outputs, None elsewhere."""
    it = iter(outs)
    return [next(it) if m else None for m in mask]


def _emit_scan(g, eqn, args):
    """A call of the scan's generated loop (stacked xs, or a tape's stacked rows), or of
    `scan_tape_loop(<compiled body>, ...)` (a tape of another layout): a list of the final
    carry and the stacked ys."""
    used = [type(v) is Var and g.is_read(v) for v in eqn.outvars]
    p, used_in, kept = prune_scan(eqn.params, used)
    args = [a for a, u in zip(args, used_in) if u]
    if p["tape"] is None:
        call = f"{loops.scan_loop(g, p)}({', '.join(args)})"
    elif p["tape"] == ():
        call = f"{loops.tape_scan_loop(g, p)}({', '.join(args)})"
    else:  # a tape of another layout (a vmapped while loop's): rows of the tape's own type
        fn = g.subfunction(p["jaxpr"], name="scan_body")
        n_xs = len(p["jaxpr"].invars) - p["num_consts"] - p["num_carry"]
        n_rows = n_xs - (1 if p["tape"] else 0)  # a batched tape's steps end with the mask
        loop = g.hoist(scan_tape_loop, "scan_tape_loop")
        call = (f"{loop}({fn}, {p['num_consts']}, {p['reverse']}, {tuple(p['tape'])!r}, "
                f"{n_rows}, [{', '.join(args)}])")
    if all(kept):
        return call
    return f"{g.hoist(_expand, 'scan_expand')}({call}, {g.hoist(tuple(kept), 'scan_kept')})"


EMITTERS[scan_p] = _emit_scan
