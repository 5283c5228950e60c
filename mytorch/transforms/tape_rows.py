"""Pruning a tape's rows that nothing reads: a pass of `optimize`.

A loop differentiated in reverse mode with a run-time trip count records residual rows on a
tape (an equation with a "tape_record" rule) that other equations of the same jaxpr read
back (equations with a "tape_read" rule). Transposition often leaves rows no reader uses (a
carry whose cotangent is always zero), and a row may be a constant (a literal the body
returns), which each reader can use in place of reading it. This pass drops both kinds from
the recording body and from the readers' steps, so they are neither computed nor stored.

The rules, registered by the primitives that record or read a tape:

    "tape_record": eqn -> (the tape's output position, the rows each step records (the
                   body's outputs: Vars or Literals), rebuild(kept) -> the equation recording
                   only the rows flagged in `kept`)
    "tape_read":   eqn -> (the tape's operand position, the step jaxpr, its row inputs,
                   rebuild(step, kept) -> the equation running `step` without the row
                   inputs not flagged in `kept`)
"""

from mytorch.core.jaxpr import Jaxpr, Literal, Var

__all__ = ["prune_tape_rows"]


def _read_vars(jaxpr):
    return {v for e in jaxpr.eqns for v in e.invars if type(v) is Var} | {
        v for v in jaxpr.outvars if type(v) is Var}


def _substituted(jaxpr, values):
    """`jaxpr` reading `values[v]` (a Literal) wherever it read the Var `v`."""
    def sub(vs):
        return [values.get(v, v) if type(v) is Var else v for v in vs]

    eqns = [e.replace(invars=sub(e.invars)) if any(type(v) is Var and v in values
                                                   for v in e.invars) else e
            for e in jaxpr.eqns]
    return Jaxpr(jaxpr.constvars, jaxpr.invars, eqns, sub(jaxpr.outvars), jaxpr.debug_name)


def prune_tape_rows(jaxpr):
    """`jaxpr` with each tape recording only the rows its readers use.

    Where every reader of a tape is an equation of this jaxpr reading it as a tape, a row
    none of their steps reads is neither computed by the recording body nor stored, and a
    row the body returns as a literal is replaced by that literal in the readers' steps. A
    tape that leaves the jaxpr (a jit residual, a branch's output) or is read otherwise is
    kept whole. Returns `jaxpr` itself when nothing changes (nested jaxprs are not visited:
    `optimize` runs this pass on each)."""
    recorders = {}
    for eqn in jaxpr.eqns:
        rule = eqn.primitive.rules.get("tape_record")
        if rule is not None:
            position, rows, rebuild = rule(eqn)
            tape = eqn.outvars[position]
            if type(tape) is Var:
                recorders[tape] = (eqn, rows, rebuild)
    if not recorders:
        return jaxpr
    readers, escaped = {}, {v for v in jaxpr.outvars if type(v) is Var}
    for eqn in jaxpr.eqns:
        rule = eqn.primitive.rules.get("tape_read")
        read = rule(eqn) if rule is not None else None
        for k, v in enumerate(eqn.invars):
            if type(v) is Var and v in recorders:
                if read is not None and read[0] == k:
                    readers.setdefault(v, []).append((eqn, read))
                else:
                    escaped.add(v)
    new_eqns = {}
    for tape, (fwd, rows, rebuild_fwd) in recorders.items():
        if tape in escaped or tape not in readers:
            continue
        used, steps = [False] * len(rows), []
        for eqn, (_, step, step_rows, rebuild) in readers[tape]:
            consts = {v: r for v, r in zip(step_rows, rows) if type(r) is Literal}
            step = _substituted(step, consts) if consts else step
            read = _read_vars(step)
            used = [u or v in read for u, v in zip(used, step_rows)]
            steps.append((eqn, step, rebuild))
        if all(used):
            continue
        new_eqns[id(fwd)] = rebuild_fwd(used)
        for eqn, step, rebuild in steps:
            new_eqns[id(eqn)] = rebuild(step, used)
    if not new_eqns:
        return jaxpr
    return Jaxpr(jaxpr.constvars, jaxpr.invars, [new_eqns.get(id(e), e) for e in jaxpr.eqns],
                 jaxpr.outvars, jaxpr.debug_name)
