"""The backend-independent optimisation pipeline that `jit` runs before code generation,
and the trace-time check for Python loops that unrolled into huge programs.

    inline calls (all but prevent_cse ones: checkpoint)
      -> simplify -> fold constants -> simplify -> CSE -> DCE
      -> inline the remaining calls -> DCE
      -> the same pipeline on every jaxpr held in an equation's params, recursively
      -> prune the tape rows nothing reads (then optimise the bodies that changed)

Simplification and folding apply the rules that the primitives register ("simplify",
"splat"); the passes themselves know no primitive.

Simplification runs again after folding: folding turns computed constants into literals
(`maxval - minval` of a uniform draw becomes 1.0), which exposes new no-ops (`x * 1.0`).

Tape-row pruning (`tape_rows.py`) runs on each jaxpr once the jaxprs it holds are
optimised, so that the rows a reader's step reads are those its optimised step reads.

Checkpointed blocks are inlined only after CSE, so their recomputation in the backward
pass is not merged back into the forward pass (which would keep the intermediates alive:
the memory that checkpoint was asked to save); a checkpoint with `prevent_cse=False` is
inlined with the other calls.

The jaxprs that calls and loops hold (cond branches, while cond and body, scan bodies, tape
loops' bodies, calls that could not be inlined) keep their signature: the primitive that
holds one relies on its constvars, invars and outvars (a loop's carries), so inside them
folding makes Literals only (no new constants) and DCE keeps every output. Dropping unread
loop outputs or operands is the lowering's business (it knows the loop's invariants).
"""

import collections
import os

from mytorch.core import staging
from mytorch.core.backend import set_call_pipeline
from mytorch.core.jaxpr import ClosedJaxpr, Jaxpr, check_jaxpr
from mytorch.transforms.cse import cse
from mytorch.transforms.dce import dce_closed, dce_jaxpr
from mytorch.transforms.fold import fold_constants
from mytorch.transforms.inline import inline_all, inline_calls, rebuilt
from mytorch.transforms.simplify import simplify
from mytorch.transforms.tape_rows import prune_tape_rows

UNROLL_THRESHOLD = 1000
# a line's equations must also form a dependency chain this long: an unrolled loop feeds
# each iteration into the next, while a tree_map over many parameters (an optimiser's
# update called on one line) makes many short, independent chains
UNROLL_CHAIN = 500


def inline_early(eqn):
    """The calls inlined before CSE: those that do not ask to be kept apart from it."""
    return not eqn.params.get("prevent_cse", False)


def optimize(closed):
    """Run the optimisation pipeline on a traced program.

    Args:
      closed: a ClosedJaxpr (not modified).

    Returns:
      A new ClosedJaxpr with the same inputs and outputs (same avals) computing the same
      values, without inlinable calls, dead code, duplicated work, foldable constants and
      algebraic no-ops, at the top level and inside the jaxprs its equations hold. With
      `staging.CHECK_EVERY_JAXPR` on, the result is type-checked.

    >>> import mytorch as mt, mytorch.numpy as mnp
    >>> f = lambda x: mnp.sin(x) * 1.0 + mnp.sin(x)
    >>> print(optimize(mt.make_jaxpr(f)(mnp.ones(3))))
    { lambda ; a:f32[3]. let
        b:f32[3] = sin a
        c:f32[3] = add b b
      in (c,) }
    """
    if not isinstance(closed, ClosedJaxpr):
        raise TypeError(f"optimize needs a ClosedJaxpr, got {type(closed).__name__}")
    out = inline_calls(closed, inline_early)
    out = simplify(out)
    out = simplify(fold_constants(out))
    out = cse(out)
    out = dce_closed(out)
    out = dce_closed(inline_calls(out, inline_all))
    memo = {}
    inner = _pruned(_optimize_held(out.jaxpr, memo), memo)
    if inner is not out.jaxpr:
        out = ClosedJaxpr(inner, out.consts)
    if staging.CHECK_EVERY_JAXPR:
        check_jaxpr(out)
    return out


set_call_pipeline(optimize)  # eagerly run call primitives are optimised like jit's programs


def optimize_body(body, memo=None):
    """The optimisation pipeline on a jaxpr that an equation holds, keeping its signature.

    Args:
      body: a Jaxpr or ClosedJaxpr (a branch, a loop body ...).
      memo: {id(jaxpr): (jaxpr, optimised)} shared across one program, so that a jaxpr
        held twice is optimised once and stays one object.

    Returns:
      A value of `body`'s kind with the same constvars (and consts), invars and outvars
      (same avals), computing the same values; `body` itself when nothing changed. With
      `staging.CHECK_EVERY_JAXPR` on, a changed body is type-checked.
    """
    memo = {} if memo is None else memo
    hit = memo.get(id(body))
    if hit is None:
        hit = memo[id(body)] = (body, _optimize_body(body, memo))
    return hit[1]


def _optimize_body(body, memo):
    closed = isinstance(body, ClosedJaxpr)
    jaxpr = body.jaxpr if closed else body
    out = simplify(inline_calls(jaxpr, inline_early))
    if closed or not out.constvars:  # a bare Jaxpr's constvars have no known values
        consts = body.consts if closed else []
        out, _ = fold_constants((out, consts), literals_only=True)
        out = simplify(out)
    out = dce_jaxpr(cse(out))
    out = dce_jaxpr(inline_calls(out, inline_all))
    out = _pruned(_optimize_held(out, memo), memo)
    if _same_program(out, jaxpr):
        return body
    out = ClosedJaxpr(out, body.consts) if closed else out
    if staging.CHECK_EVERY_JAXPR:
        check_jaxpr(out)
    return out


def _same_program(a, b):
    return (a is b or (len(a.eqns) == len(b.eqns) and a.outvars == b.outvars
                       and a.constvars == b.constvars
                       and all(x is y for x, y in zip(a.eqns, b.eqns))))


def _pruned(jaxpr, memo):
    """`jaxpr` with its tapes' unread rows pruned, and the bodies that lost them (or whose
    steps now read a literal) optimised again; `jaxpr` itself when nothing was pruned."""
    pruned = prune_tape_rows(jaxpr)
    return jaxpr if pruned is jaxpr else _optimize_held(pruned, memo)


def _optimize_held(jaxpr, memo):
    """`jaxpr` with every jaxpr held in its equations' params optimised (`optimize_body`);
    `jaxpr` itself when none changed."""
    eqns, changed = list(jaxpr.eqns), False
    for i, eqn in enumerate(eqns):
        params = None
        for name, value in eqn.params.items():
            kind = type(value)  # the common params (ints, shapes, dtypes) cost one test
            if kind is tuple and not _HELD.isdisjoint(map(type, value)):
                new = tuple(optimize_body(v, memo) if type(v) in _HELD else v for v in value)
                new = value if all(a is b for a, b in zip(new, value)) else new
            elif kind in _HELD:
                new = optimize_body(value, memo)
            else:
                continue
            if new is not value:
                params = dict(eqn.params) if params is None else params
                params[name] = new
        if params is not None:
            eqns[i], changed = eqn.replace(params=params), True
    return rebuilt(jaxpr, eqns, jaxpr.outvars) if changed else jaxpr


_HELD = frozenset({Jaxpr, ClosedJaxpr})


def unroll_warning(closed, threshold=UNROLL_THRESHOLD, chain=UNROLL_CHAIN):
    """A warning message when one source line produced more than `threshold` equations
    (counting those inside called jaxprs) and they depend on each other in a chain longer
    than `chain`, which is what a Python loop over a traced computation does; None
    otherwise. `jit` passes the message to `warnings.warn`.

    Args:
      closed: a ClosedJaxpr or Jaxpr, as traced.
      threshold: the most equations one line may make without a warning.
      chain: the longest dependency chain of one line's equations allowed without a
        warning (many independent equations, as from a tree_map over parameters, are fine).

    Returns:
      A str naming file:line, the function and the count, or None.
    """
    jaxpr = closed.jaxpr if isinstance(closed, ClosedJaxpr) else closed
    counts = collections.Counter()
    _count_lines(jaxpr, counts)
    for where, n in counts.most_common():
        if n <= threshold:
            return None
        if _longest_chain(jaxpr, where) > chain:
            break
    else:
        return None
    filename, lineno, function = where
    return (
        f"{os.path.basename(filename)}:{lineno} (in {function}) produced {n} equations "
        f"when traced (file {filename}): a Python loop is probably being unrolled, which "
        "makes compilation slow and the program large. Use lax.fori_loop or lax.scan to "
        "keep the loop rolled."
    )


def _line(eqn):
    info = eqn.source_info
    return None if info is None else (info.filename, info.lineno,
                                      getattr(info, "function", "?"))


def _longest_chain(jaxpr, where):
    """The most equations from line `where` on one dependency path through `jaxpr` (a
    call's equations count with the longest such path through its body)."""
    depth, longest = {}, 0
    for eqn in jaxpr.eqns:
        d = max((depth.get(id(v), 0) for v in eqn.invars), default=0)
        d += sum(_longest_chain(sub, where) for sub in _subjaxprs(eqn))
        d += _line(eqn) == where
        for v in eqn.outvars:
            depth[id(v)] = d
        longest = max(longest, d)
    return longest


def _subjaxprs(eqn):
    for value in eqn.params.values():
        for sub in value if isinstance(value, tuple) else (value,):
            if isinstance(sub, ClosedJaxpr):
                sub = sub.jaxpr
            if isinstance(sub, Jaxpr):
                yield sub


def _count_lines(jaxpr, counts):
    for eqn in jaxpr.eqns:
        where = _line(eqn)
        if where is not None:
            counts[where] += 1
        for sub in _subjaxprs(eqn):
            _count_lines(sub, counts)
