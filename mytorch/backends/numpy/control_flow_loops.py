"""The inlined loops of the NumPy code generator (see control_flow_inline.py): one generated
function per `scan` over stacked xs, `scan` over a tape's rows, `while` and `while_tape`.

Stacked outputs (a scan's ys, a tape's rows) live in arrays with a leading step axis; a step
computes each of them straight into its slice where a ufunc or matmul produces it
(`out=_ys_3[_lp_i]`, `_write_into`), else copies it there. A while loop's tape (not
vectorised) keeps its rows that way, preallocated for 16 steps and doubled when full, so
no aliasing check runs per step; the tape-sourced scan that reads them back slices those
arrays by step. With `checkpoint_every=k` the forward loop computes the carries alone and
keeps a copy of the carry every k steps, and a second generated function replays k steps
from it, computing the rows and only the carries they need.
"""

import functools
import re

import numpy as np

from mytorch.backends.numpy.control_flow_inline import LoopSource, Section, final
from mytorch.backends.numpy.control_flow_sink import hoist_products, sink_accumulators
from mytorch.backends.numpy.peephole import prepare
from mytorch.backends.numpy.tape import Tape, box, grow, tape_segments
from mytorch.core.jaxpr import Jaxpr
from mytorch.lax.while_tape import TAPE_DTYPE
from mytorch.transforms.dce import dce_jaxpr

__all__ = ["scan_loop", "tape_scan_loop", "while_loop", "while_tape_loop", "stackable"]

_FIRST_CAPACITY = 16  # rows a tape's arrays hold before they first double
# sum accumulators after a scan and take products of xs with consts before it
# (control_flow_sink.py); tests switch it off to compare
SINK = True


def _finals(names, avals):
    """`names` (a loop's results) as arrays, comma-separated."""
    return ", ".join(final(n, a) for n, a in zip(names, avals, strict=True))


def _reads(lines, name):
    """Whether any of `lines` reads the name `name`."""
    pattern = re.compile(rf"\b{name}\b")
    return any(pattern.search(text) for text in lines)


def _tuple(names):
    """Source of a tuple of `names`."""
    return f"({''.join(n + ', ' for n in names)})"


def _stack_buffers(src, avals, length):
    """Lines allocating one array of `length` steps per aval; returns their names."""
    names = []
    for a in avals:
        name = src.fresh("ys")
        dt = src.glob(np.dtype(a.dtype), "dt")
        shape = "".join(f"{d}, " for d in (length, *a.shape))
        src.line(f"{name} = np.empty(({shape}), {dt})")
        names.append(name)
    return names


# a line computing a result by a ufunc or matmul: `v7 = np_tanh(v6, out=v6)`
_DEF = re.compile(r"^(?P<name>v\d+) = (?P<call>np_\w+|np\.matmul)\((?P<args>.*?)"
                  r"(?:, out=\w+)?\)$")


# a compiled fused loop's call (fusion.py) and the lines giving its output buffers: a fresh
# array, or a dying operand's buffer written over
_LOOP_CALL = re.compile(r"^_(?:nat|run)\w*\(.*, out=\((?P<outs>[\w, ]+),\)(?:, axes=\w+)?\)$")
_BUFFER = re.compile(r"^(?P<name>v\d+) = (?:np\.empty\(.*\)|v\d+)$")


def _balanced(text):
    """Whether the parentheses of `text` nest (so `f(<text>)` ends at its last `)`)."""
    depth = 0
    for c in text:
        depth += (c == "(") - (c == ")")
        if depth < 0:
            return False
    return depth == 0


def _write_into(lines, writes):
    """`lines` with the results that `writes` ((expression, aval, target) for each
    stacked output: `target` a step's slice such as `_ys_3[_lp_i]`) are computed by a ufunc
    or matmul written there directly (`out=target`), or by a compiled fused loop into that
    slice as its output buffer, instead of copied after. Returns (the lines, the (target,
    expression) copies still needed, the names now views of a stack)."""
    where, loop_outs = {}, set()
    for text in lines:
        m = _LOOP_CALL.match(text)
        if m is not None:
            loop_outs.update(n.strip() for n in m["outs"].split(","))
    for k, text in enumerate(lines):
        m = _DEF.match(text)
        if m is not None and _balanced(m["args"]):  # the call is the whole expression
            where[m["name"]] = k, m
        m = _BUFFER.match(text)
        if m is not None and m["name"] in loop_outs and m["name"] not in where:
            where[m["name"]] = k, None
    lines, copies, moved = list(lines), [], set()
    for out, aval, target in writes:
        hit = where.get(out) if aval.shape and out not in moved else None
        if hit is None:
            copies.append((target, out))
            continue
        k, m = hit
        if m is None:  # a fused loop's output buffer: the stack's slice instead
            lines[k] = f"{out} = {target}"
        else:
            lines[k] = f"{m['name']} = {m['call']}({m['args']}, out={target})"
        moved.add(out)
    return lines, copies, moved


def _step(src, body, sliced, index, writes=()):
    """Emit the body's lines for one step (as `_prepare` left them), xs read as slices
    `stack[index]` of `sliced` (body param -> stack name) where the lines still read them,
    and the stacked outputs `writes` ((expression, aval, target), see `_write_into`)
    stored. Returns the names of results that are views of a stack (a carry among them is
    copied when the loop ends: the stack is returned too)."""
    _, per_step, lines = body.hoisted
    lines, copies, moved = _write_into(lines, writes)
    for x, s in sliced.items():
        if _reads(lines + per_step + body.outs, x):
            src.line(f"{x} = {s}[{index}]")
    src.paste(per_step)
    src.paste(lines)
    for target, out in copies:
        src.line(f"{target} = {out}")
    return moved


def _owned(carry, outs, moved):
    """`carry` names, those whose last value may be a view of a stack (`moved`) copied."""
    return [f"np.array({c})" if o in moved else c for c, o in zip(carry, outs, strict=True)]


def _prepare(src, body, invariant, sliced, index):
    """Hoist the views `body` takes of `invariant` names and of the stacks in `sliced`:
    emits the invariant ones now, keeps the rest on `body.hoisted`."""
    before, stacked, per_step, lines = src.hoist_views(
        body.lines, invariant, {x: (s, index) for x, s in sliced.items()})
    src.paste(before)
    body.hoisted = (stacked, per_step, lines)


def _sink(p, hoist=False):
    """(body jaxpr, kept carry flags, `Sunk`s, `Hoisted`s) of the scan of params `p`: the
    products of xs with consts taken out of the body first when `hoist`."""
    nc, ncar = p["num_consts"], p["num_carry"]
    body, hoisted = p["jaxpr"], []
    if not SINK:
        return body, [True] * ncar, [], hoisted
    body = prepare(body)
    if hoist:
        body, hoisted = hoist_products(body, nc, ncar) or (body, [])
    plan = sink_accumulators(body, nc, ncar)
    return (*(plan or (body, [True] * ncar, [])), hoisted)


def _sunk_terms(sunk, stacks, new_ys):
    """{carry position: NumPy source of its summed term}."""
    pick = {"xs": stacks, "ys": new_ys}
    return {s.carry: s.expr([pick[kind][j] for kind, j in s.operands]) for s in sunk}


def scan_loop(g, p):
    """The global name of a generated function running the scan of params `p` (xs
    stacked): (consts, initial carries, stacked xs) -> [*final carries, *stacked ys]."""
    jaxpr, kept, sunk, hoisted = _sink(p, hoist=True)
    ns = {}  # the loop's globals
    body = Section(g, jaxpr, "scan_body", ns, p["num_consts"], primary=True)
    src = LoopSource(g, "scan_body", ns)
    src.add_section(body)
    nc, ncar, length = p["num_consts"], sum(kept), p["length"]
    consts, carry, xs = body.params[:nc], body.params[nc:nc + ncar], body.params[nc + ncar:]
    init = [src.fresh("ci") for _ in kept]
    stacks = [src.fresh("xs") for _ in xs[:len(xs) - len(hoisted)]]
    params = [*consts, *init, *stacks]
    main = src.begin("", params)
    src.line(f"_lp_owners = _buffer_owners({_tuple(params)})")
    for h in hoisted:  # products of xs with consts, for every step at once
        stacks.append(src.fresh("pre"))
        src.line(f"{stacks[-1]} = {h.expr(stacks[h.xs], consts[h.const])}")
    sliced = dict(zip(xs, stacks, strict=True))
    _prepare(src, body, consts, sliced, "_lp_i")
    src.paste(body.hoisted[0])
    src.assign(carry, [i for i, k in zip(init, kept) if k])
    ys = _stack_buffers(src, [v.aval for v in body.jaxpr.outvars[ncar:]], length)
    order = f"range({length - 1}, -1, -1)" if p["reverse"] else f"range({length})"
    moved = _scan_steps(src, body, sliced, order, carry, ys, ncar)
    n_ys = len(p["jaxpr"].outvars) - p["num_carry"]
    terms = _sunk_terms(sunk, stacks, ys[n_ys:])
    it = iter(_owned(carry, body.outs[:ncar], moved))
    finals = [next(it) if k else f"np.add({init[j]}, {terms[j]})" for j, k in enumerate(kept)]
    finals = _finals(finals, [v.aval for v in p["jaxpr"].outvars[:len(kept)]])
    src.line(f"return [*_unaliased([{finals}], _lp_owners), {', '.join(ys[:n_ys])}]")
    return src.compile(main, "scan_loop")


def _scan_steps(src, body, sliced, order, carry, ys, ncar):
    """`for _lp_i in <order>:` one step of a scan body: each y written into row _lp_i of its
    stack, the carries assigned at the end; returns what `_step` moved."""
    src.indent(f"for _lp_i in {order}:")
    avals = [v.aval for v in body.jaxpr.outvars[ncar:]]
    moved = _step(src, body, sliced, "_lp_i", [
        (out, a, f"{y}[_lp_i]") for y, out, a in zip(ys, body.outs[ncar:], avals, strict=True)])
    src.assign(carry, body.outs[:ncar])
    src.dedent()
    return moved


def tape_scan_loop(g, p):
    """The global name of a generated function running the tape-sourced scan of params `p`
    (a tape of batch shape ()): (tape, consts, initial carries) -> final carries."""
    jaxpr, kept, sunk, hoisted = _sink(p, hoist=True)
    ns = {}  # the loop's globals
    body = Section(g, jaxpr, "scan_body", ns, p["num_consts"], primary=True)
    src = LoopSource(g, "scan_body", ns)
    src.add_section(body)
    src.ns["_tape_segments"] = tape_segments
    nc, ncar = p["num_consts"], sum(kept)
    consts, carry, rows = body.params[:nc], body.params[nc:nc + ncar], body.params[nc + ncar:]
    init = [src.fresh("ci") for _ in kept]
    params = ["_lp_tape", *consts, *init]
    main = src.begin("", params)
    src.line(f"_lp_owners = _buffer_owners({_tuple(params)})")
    stacks = [src.fresh("rows") for _ in rows]
    sliced = dict(zip(rows, stacks, strict=True))
    _prepare(src, body, consts, sliced, "_lp_i")
    src.assign(carry, [i for i, k in zip(init, kept) if k])
    acc = {s.carry: src.fresh("acc") for s in sunk}
    src.assign(list(acc.values()), [init[k] for k in acc])
    src.indent(f"for _lp_rows, _lp_n in _tape_segments(_lp_tape, {p['reverse']}):")
    n_rows = len(rows) - len(hoisted)
    src.assign(stacks[:n_rows], [f"_lp_rows[{j}]" for j in range(n_rows)])
    for stack, h in zip(stacks[n_rows:], hoisted, strict=True):  # per stretch of steps
        src.line(f"{stack} = {h.expr(stacks[h.xs], consts[h.const])}")
    src.paste(body.hoisted[0])
    ys = _stack_buffers(src, [v.aval for v in body.jaxpr.outvars[ncar:]], "_lp_n")
    order = "range(_lp_n - 1, -1, -1)" if p["reverse"] else "range(_lp_n)"
    moved = _scan_steps(src, body, sliced, order, carry, ys, ncar)
    for k, term in _sunk_terms(sunk, stacks, ys).items():
        src.line(f"{acc[k]} = np.add({acc[k]}, {term})")
    src.dedent()
    it = iter(_owned(carry, body.outs[:ncar], moved))
    finals = [next(it) if k else acc[j] for j, k in enumerate(kept)]
    finals = _finals(finals, [v.aval for v in p["jaxpr"].outvars[:len(kept)]])
    src.line(f"return _unaliased([{finals}], _lp_owners)")
    return src.compile(main, "scan_tape_loop")


def _cond_then(src, cond, body_carry, ncc):
    """The cond's lines on the body's carries; breaks out of the loop when false."""
    src.assign(cond.params[ncc:], body_carry)
    src.paste(cond.hoisted[2])
    src.line(f"if not {cond.outs[0]}:")
    src.line("    break")


def while_loop(g, p):
    """The global name of a generated function running the while loop of params `p`:
    (cond consts, body consts, initial carries) -> final carries."""
    ns = {}
    cond = Section(g, p["cond_jaxpr"], "while_cond", ns, p["cond_nconsts"])
    body = Section(g, p["body_jaxpr"], "while_body", ns, p["body_nconsts"], primary=True)
    src = LoopSource(g, "while_body", ns)
    src.add_section(cond)
    src.add_section(body)
    ncc, nbc = p["cond_nconsts"], p["body_nconsts"]
    carry = body.params[nbc:]
    init = [src.fresh("ci") for _ in carry]
    params = [*cond.params[:ncc], *body.params[:nbc], *init]
    main = src.begin("", params)
    src.line(f"_lp_owners = _buffer_owners({_tuple(params)})")
    _prepare(src, cond, cond.params[:ncc], {}, None)
    _prepare(src, body, body.params[:nbc], {}, None)
    src.assign(carry, init)
    src.indent("while True:")
    _cond_then(src, cond, carry, ncc)
    src.paste(body.hoisted[2])
    src.assign(carry, body.outs[:len(carry)])
    src.dedent()
    finals = _finals(carry, [v.aval for v in body.jaxpr.outvars[:len(carry)]])
    src.line(f"return _unaliased([{finals}], _lp_owners)")
    return src.compile(main, "while")


def stackable(p):
    """Whether the rows of the while_tape of params `p` can be kept stacked (one loop, rows
    of array dtypes)."""
    rows = p["body_jaxpr"].outvars[p["num_carry"]:]
    return not p["batch_shape"] and all(np.dtype(v.aval.dtype) != TAPE_DTYPE for v in rows)


def _replay_body(p):
    """The body of `while_tape` params `p` computing its rows and the carries they need
    (a fixpoint: a carry stays when a row or a kept carry reads it), and the kept flags."""
    bj, nbc, ncar = p["body_jaxpr"], p["body_nconsts"], p["num_carry"]
    carry_in, rows = bj.invars[nbc:], bj.outvars[ncar:]
    kept = [False] * ncar
    while True:
        outs = [o for o, k in zip(bj.outvars[:ncar], kept) if k] + list(rows)
        body = dce_jaxpr(Jaxpr([], bj.invars, bj.eqns, outs, bj.debug_name))
        read = {v for e in body.eqns for v in e.invars} | set(outs)
        new = [k or c in read for k, c in zip(kept, carry_in)]
        if new == kept:
            return body, kept
        kept = new


def while_tape_loop(g, p):
    """The global name of a generated function running the recording loop of `while_tape`
    params `p` (`stackable`): (cond consts, body consts, initial carries) -> [*final
    carries, tape]."""
    ncc, nbc, ncar, every = p["cond_nconsts"], p["body_nconsts"], p["num_carry"], p["every"]
    ns = {}
    cond = Section(g, p["cond_jaxpr"], "while_tape_cond", ns, p["cond_nconsts"])
    src = LoopSource(g, "while_tape_body", ns)
    src.add_section(cond)
    src.ns.update(_box=box, _Tape=Tape, _grow=grow, _partial=functools.partial)
    row_avals = [v.aval for v in p["body_jaxpr"].outvars[ncar:]]
    rows = [src.fresh("r") for _ in row_avals]
    replay = None
    if every is not None:  # (body consts, carry at a segment's start, steps) -> rows
        rj, kept = _replay_body(p)
        rb = Section(g, rj, "while_tape_replay", ns, nbc)
        src.add_section(rb)
        carry = [c for c, k in zip(rb.params[nbc:], kept) if k]
        replay = src.begin("_replay", ["_lp_bc", "_lp_start", "_lp_steps"])
        src.assign(rb.params[:nbc], [f"_lp_bc[{j}]" for j in range(nbc)])
        _prepare(src, rb, rb.params[:nbc], {}, None)
        src.assign(carry, [f"_lp_start[{j}]" for j, k in enumerate(kept) if k])
        src.assign(rows, _stack_buffers(src, row_avals, "_lp_steps"))
        src.indent("for _lp_i in range(_lp_steps):")
        _step(src, rb, {}, None, [(out, a, f"{r}[_lp_i]") for r, out, a in zip(
            rows, rb.outs[len(carry):], row_avals, strict=True)])
        src.assign(carry, rb.outs[:len(carry)])
        src.dedent()
        src.line(f"return [{', '.join(rows)}]")
    bj = p["body_jaxpr"]
    if every is not None:  # the forward loop computes the carries alone
        bj = dce_jaxpr(Jaxpr([], bj.invars, bj.eqns, bj.outvars[:ncar], bj.debug_name))
    run = Section(g, bj, "while_tape_body", ns, nbc, primary=True)
    src.add_section(run)
    carry, bconsts = run.params[nbc:], run.params[:nbc]
    init = [src.fresh("ci") for _ in carry]
    params = [*cond.params[:ncc], *bconsts, *init]
    main = src.begin("", params)
    src.line(f"_lp_owners = _buffer_owners({_tuple(params)})")
    _prepare(src, cond, cond.params[:ncc], {}, None)
    _prepare(src, run, bconsts, {}, None)
    src.assign(carry, init)
    src.line("_lp_n = 0")
    if every is None:
        src.line(f"_lp_cap = {_FIRST_CAPACITY}")
        src.assign(rows, _stack_buffers(src, row_avals, _FIRST_CAPACITY))
    else:
        src.line("_lp_snapshots = []")
    src.indent("while True:")
    _cond_then(src, cond, carry, ncc)
    if every is not None:  # copies: the caller may reuse the final carries' buffers
        src.indent(f"if _lp_n % {every} == 0:")
        src.line(f"_lp_snapshots.append([{', '.join(f'np.array({c})' for c in carry)}])")
        src.dedent()
    moved = set()
    if every is None:
        src.indent("if _lp_n == _lp_cap:")
        src.assign(rows, [f"_grow({r}, _lp_n)" for r in rows])
        src.line("_lp_cap *= 2")
        src.dedent()
        moved = _step(src, run, {}, None, [(out, a, f"{r}[_lp_n]") for r, out, a in zip(
            rows, run.outs[ncar:], row_avals, strict=True)])
    else:
        src.paste(run.hoisted[2])
    src.line("_lp_n += 1")
    src.assign(carry, run.outs[:ncar])
    src.dedent()
    if every is None:
        tape = f"_Tape.stacked([{', '.join(rows)}], _lp_n)"
    else:  # the body consts are read again by every replay: copied
        tape = (f"_Tape.stacked(None, _lp_n, {every}, _lp_snapshots, _partial({replay}, "
                f"[{', '.join(f'np.array({b})' for b in bconsts)}]))")
    finals = _finals(_owned(carry, run.outs[:ncar], moved),
                     [v.aval for v in run.jaxpr.outvars[:ncar]])
    src.line(f"return [*_unaliased([{finals}], _lp_owners), _box({tape})]")
    return src.compile(main, "while_tape")
