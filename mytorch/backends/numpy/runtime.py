"""The NumPy backend's loop runners: what the generated code of `cond`, of a scan over a
tape of another layout and of a `while_tape` recording such a tape calls, with compiled
bodies, on NumPy buffers (every other loop is generated inline: control_flow_loops.py).

Every runner returns buffers its caller owns: compiled code treats a loop's results as
buffers of its own, which it overwrites once they die, so a result that shares memory with
an operand (a loop of zero steps, a body passing a carry or a constant through, a branch
returning its input) is copied (`unaliased`).
"""

import numpy as np

from mytorch.backends.numpy.tape import Tape, box, boxed_views, tape_steps

__all__ = ["scan_tape_loop", "run_branch", "run_while_tape",
           "buffer_owners", "unaliased"]


def _owner(a):
    """The object owning the memory of the NumPy array `a` (the end of its .base chain)."""
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a if a.base is None else a.base


def buffer_owners(arrays):
    """The ids of the memory owners of `arrays` (for `unaliased`)."""
    return {id(_owner(a)) for a in arrays if isinstance(a, np.ndarray)}


def unaliased(values, owners):
    """`values` (NumPy buffers a loop produced) with copies of those whose memory belongs
    to one of `owners` (`buffer_owners` of the loop's operands)."""
    out = []
    for v in values:  # (hot: once per loop step) a fresh buffer owns itself: one look-up
        if type(v) is np.ndarray and (id(v) in owners or v.base is not None
                                      and id(_owner(v)) in owners):
            v = np.array(v)
        out.append(v)
    return out


def run_branch(branches, index, args):
    """The results of compiled branch `index` (clamped to the branches) on `args`."""
    outs = branches[min(max(int(index), 0), len(branches) - 1)](*args)
    return unaliased(outs, buffer_owners(args))


def run_while_tape(cond_fn, body_fn, cond_nconsts, body_nconsts, n_carry, batch_shape,
                   every, args):
    """Run the forward loop, pushing each step's residual rows on a `Tape`.

    `cond_fn(*cond consts, *carry) -> [pred]`, `body_fn(*body consts, *carry) -> [*carry,
    *rows]` (rows ending with the mask of running elements when `batch_shape` is not ()).
    Returns [*final carry, tape buffer]."""
    n = cond_nconsts + body_nconsts
    cc, bc, carry = args[:cond_nconsts], args[cond_nconsts:n], list(args[n:])
    # the tape outlives this call, but the operands' buffers may be overwritten or reused
    # once the caller is done with them (compiled code recycles dead buffers): what it
    # keeps that shares their memory is copied
    owners = buffer_owners(args)

    def kept(values):
        return unaliased(values, owners)

    if every is not None:
        bc = [np.array(b) for b in bc]  # read again by every replay

    def replay(start, steps):
        rows, c = [], start
        for _ in range(steps):
            outs = body_fn(*bc, *c)
            c = outs[:n_carry]
            rows.append(outs[n_carry:])
        return rows

    tape = Tape(batch_shape, every, replay)
    while cond_fn(*cc, *carry)[0]:
        outs = body_fn(*bc, *carry)
        tape.push(carry, outs[n_carry:], kept)
        carry = outs[:n_carry]
    return [*unaliased(carry, owners), boxed_views(tape) if batch_shape else box(tape)]


def scan_tape_loop(step_fn, num_consts, reverse, batch_shape, n_rows, args):
    """Run a tape-sourced scan: `args` = (tape, *consts, *carries); `step_fn(*consts,
    *carries, *rows) -> carries` once per step the tape recorded (`rows` ends with the mask
    of the elements that ran it for a tape of `batch_shape` not ()). Returns the final
    carries."""
    consts, carry = args[1:1 + num_consts], list(args[1 + num_consts:])
    for rows in tape_steps(args[0], batch_shape, reverse, n_rows):
        carry = step_fn(*consts, *carry, *rows)
    return unaliased(carry, buffer_owners(args))
