"""Loops compiled as one generated function each, their bodies inlined.

A loop's cond and body jaxprs are compiled by the code generator into lines (`Section`, a
`codegen.Generator` whose names are numbered from its own start, so the sections of one
loop never share a name) and `LoopSource` writes them into a Python `for`/`while` loop of
one generated function:

    def f_scan_body(a0, a1, a2, _ci_0, _xs_1):      # consts, initial carry, stacked xs
        _lp_owners = _buffer_owners((a0, a1, a2, _ci_0, _xs_1, ))
        _hv_2 = a2.reshape((1, 32))                  # a view of a const: once per loop
        a3, = _ci_0,
        _ys_3 = np.empty((1000, 8, 32, ), _dt_4)
        for _lp_i in range(1000):
            a4 = _xs_1[_lp_i]
            v5 = np.matmul(a4, a0)
            v6 = np.matmul(a3, a1)
            v7 = np_add(v5, v6, out=v5)
            v9 = np_add(v7, _hv_2, out=v7)
            v10 = np_tanh(v9, out=_ys_3[_lp_i])      # a y computed into its stack
            a3, = v10,
        return [*_unaliased([np.array(a3)], _lp_owners), _ys_3]

so a step costs its NumPy calls and nothing else: no function call, no argument list, no
floating-point-state switch (the caller set it), no per-step allocation but the body's own.
The loop's carries are the body's parameters, assigned at the end of each step; a y that a
ufunc or matmul computes is written straight into its step's slice of the stack
(control_flow_loops.py), others are copied there.
Views the body takes of loop-invariant operands (`np.reshape`/`np.transpose` of a const)
are taken once before the loop, and transposes of a step's slice of stacked xs are taken
once of the whole stack (`LoopSource.hoist_views`).

The final carries are copied where they share memory with an operand (`unaliased`, as
every loop runner's results: the caller owns them).
"""

import dataclasses
import functools
import itertools
import math
import re

import numpy as np

from mytorch.backends.numpy import fusion
from mytorch.backends.numpy.codegen import Generator
from mytorch.backends.numpy.peephole import prepare
from mytorch.backends.numpy.runtime import buffer_owners, unaliased
from mytorch.backends.planner import fresh
from mytorch.core import profiling
from mytorch.core.jaxpr import Literal, Var
from mytorch.lax import elementwise as ew

__all__ = ["Section", "LoopSource", "final"]

_STRIDE = 1_000_000  # a secondary section's names are numbered from k * _STRIDE
_sections = itertools.count(1)
# views the body takes: np.transpose(x, (1, 0)), np.reshape(x, (1, 32)), x.reshape((1, 32)),
# x.transpose((1, 0)), x.T, _lp_full(x, (8, 32)) (Section.ufunc_args) and _broadcast(x, ...)
_TUPLE = r"\([0-9, ]*\)"
_VIEWS = (
    re.compile(rf"np\.(?P<fn>transpose|reshape)\((?P<name>\w+), (?P<arg>{_TUPLE})\)"),
    re.compile(rf"\b(?P<name>[A-Za-z_]\w*)\.(?P<fn>transpose|reshape)\((?P<arg>{_TUPLE})\)"),
    re.compile(r"\b(?P<name>[A-Za-z_]\w*)\.(?P<fn>T)\b"),
    re.compile(rf"(?P<fn>_lp_full)\((?P<name>\w+), (?P<arg>{_TUPLE})\)"),
    # a broadcast read by a compiled loop (fusion.py): _broadcast(x, shape, ...)
    re.compile(rf"(?P<fn>_broadcast)\((?P<name>\w+), (?P<arg>{_TUPLE}(?:, {_TUPLE}){{3}})\)"))
_FULL_MAX = 1 << 14  # broadcasts of invariant inputs up to this size are made in full
# binary ops on 0-d values written as Python operators: on NumPy scalars (what reductions
# and these operators return) they take NumPy's scalar fast path, same dtype rules as the
# ufunc (NEP 50), about 20x cheaper than a ufunc call
_SCALAR_OPS = {ew.add_p: "+", ew.sub_p: "-", ew.mul_p: "*", ew.lt_p: "<", ew.le_p: "<=",
               ew.gt_p: ">", ew.ge_p: ">=", ew.eq_p: "==", ew.ne_p: "!=", ew.and_p: "&",
               ew.or_p: "|", ew.xor_p: "^"}
_SCALAR_DTYPES = frozenset(np.dtype(t) for t in (
    np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
    np.uint64, np.float32, np.float64))


class Section(Generator):
    """The lines computing one jaxpr (no constvars), to be pasted into a loop: `params` are
    the names it reads its inputs from, `outs` the expressions of its outputs, `ns` the
    globals its lines use. The `primary` section of a loop (its body) is named as its own
    generated function would be (a0, v1, ...); the others from a range of their own.

    A 0-d output may be a NumPy scalar rather than a 0-d array (the loop passes it to the
    next step as it is, and wraps the final carries: `final`); binary arithmetic,
    comparisons and bitwise logic on 0-d operands are Python operators (`_SCALAR_OPS`)."""

    native_min_size = fusion.LOOP_NATIVE_MIN_SIZE  # run once per step

    def __init__(self, g, jaxpr, name, ns, invariant=0, primary=False):
        self._start = 0 if primary else next(_sections) * _STRIDE
        options = dataclasses.replace(g.options, donated=(), name=f"{g.name}_{name}")
        super().__init__(prepare(jaxpr), [], options, g.backend)
        if self._start and any(int(p.lstrip("a")) < self._start for p in self.params):
            raise AssertionError("loop codegen: the code generator no longer numbers its "
                                 "names through Generator._ids (see Section)")
        self.invariant = set(self.jaxpr.invars[:invariant])
        _merge(ns, self.ns)  # the loop's globals, shared by its sections from here on
        self.ns = ns
        self.emit_all()
        if self._start and self.blocks:  # fused blocks are numbered per generator
            rename = functools.partial(re.sub, r"\b_blk(\d+)\b", rf"_blk{self._start}_\1")
            self.blocks = [rename(b) for b in self.blocks]
            self.lines = [rename(line) for line in self.lines]
        self.outs = [self.src(v, scalar_ok=False) for v in self.jaxpr.outvars]

    def ufunc_args(self, eqn, args):
        """As the code generator's, but a small broadcast of a loop-invariant input is read
        in full (`_lp_full`, made once before the loop: LoopSource.hoist_views): a ufunc
        over same-shape operands costs less per call than one that broadcasts."""
        out = super().ufunc_args(eqn, args)
        for i, v in enumerate(eqn.invars):
            src = self.expand_of.get(v, (None,))[0] if type(v) is Var else None
            if out[i] != args[i] and src in self.invariant \
                    and math.prod(v.aval.shape) <= _FULL_MAX:
                out[i] = f"_lp_full({self.src(src, False)}, {tuple(v.aval.shape)})"
        return out

    def emit(self, eqn):
        op = _SCALAR_OPS.get(eqn.primitive)
        if op is None or self.debug_nans or not _scalar_operands(eqn):
            return super().emit(eqn)
        x, y = (self._scalar(v) for v in eqn.invars)
        res = eqn.outvars[0]
        out = fresh(f"{x} {op} {y}")
        self.lines.append(f"{self._bind(res) if type(res) is Var else '_'} = {out.expr}")
        self._track(eqn, out)
        return None

    def _scalar(self, v):
        """Source of the 0-d operand `v`: a literal is a NumPy scalar of its dtype."""
        if type(v) is Literal:
            return self.hoist(np.dtype(v.aval.dtype).type(v.val), "l")
        return self.src(v, scalar_ok=False)

    @property
    def _ids(self):  # Generator numbers its names from _ids: this section's own range
        return self._counter

    @_ids.setter
    def _ids(self, _):
        self._counter = itertools.count(self._start)


def _merge(ns, new):
    """Add the globals `new` to `ns` (names never clash: see `Section`)."""
    for k, v in new.items():
        if k in ns and ns[k] is not v:
            raise AssertionError(f"loop codegen: global {k} defined twice")
        ns[k] = v


def _scalar_operands(eqn):
    """Whether `eqn` has two 0-d operands and one 0-d result, all of `_SCALAR_DTYPES`."""
    vs = [*eqn.invars, *eqn.outvars]
    return len(eqn.invars) == 2 and len(eqn.outvars) == 1 and all(
        not v.aval.shape and np.dtype(v.aval.dtype) in _SCALAR_DTYPES for v in vs)


def full(x, shape):
    """`x` broadcast to `shape`, as a contiguous array of its own."""
    return np.ascontiguousarray(np.broadcast_to(x, shape))


def final(name, aval):
    """Source of a loop's result `name` of type `aval` as an array (a 0-d result may be a
    NumPy scalar inside the loop)."""
    return name if aval.shape else f"np.asarray({name})"


class LoopSource:
    """The source of one generated loop function, built line by line (`line`, `indent`,
    `dedent`), with the lines of its sections pasted into it (`paste`); `ns`, its globals,
    is the dict its sections were built with. Its own names are `_lp_<word>` and
    `_<prefix>_<n>` (`fresh`), which the code generator never makes (its fused runs loop over
    `_i`)."""

    def __init__(self, g, name, ns):
        self.g, self.name = g, f"{g.name}_{name}"
        self.ns = ns
        _merge(ns, {"np": np, "_buffer_owners": buffer_owners, "_unaliased": unaliased,
                    "_lp_full": full})
        self.lines, self.defs, self.depth, self._opened = [], [], 0, []
        self._ids = itertools.count()

    def fresh(self, prefix):
        """A new name `_<prefix>_<n>` (a section's names have no `_` before their number)."""
        return f"_{prefix}_{next(self._ids)}"

    def glob(self, value, prefix="k"):
        """A global of the loop's code holding `value`."""
        name = self.fresh(prefix)
        self.ns[name] = value
        return name

    def line(self, text):
        self.lines.append("    " * self.depth + text)

    def indent(self, text):
        """Open a block (`for ...:`, `while ...:`, `def ...:`)."""
        self.line(text)
        self.depth += 1
        self._opened.append(len(self.lines))

    def dedent(self, n=1):
        """Close `n` blocks (an empty one gets a `pass`)."""
        for _ in range(n):
            if self._opened.pop() == len(self.lines):
                self.line("pass")
            self.depth -= 1

    def assign(self, names, values):
        """`a, b = x, y` (nothing when there is nothing to assign)."""
        if names:
            self.line(f"{', '.join(names)}, = {', '.join(values)},")

    def add_section(self, sec):
        """Take `sec`'s fused-block definitions (its globals are the loop's already); the
        source of loops nested in it is shown with the enclosing code's."""
        self.defs.extend(sec.blocks)
        self.g.sub_texts.extend(sec.sub_texts)

    def paste(self, lines):
        for text in lines:
            self.line(text)

    def hoist_views(self, lines, invariant, sliced):
        """`lines` with the views they take of loop-invariant names (`invariant`) replaced
        by names bound once before the loop, and transposes of step slices (`sliced`: name
        -> (stacked array's name, step index)) replaced by slices of one transpose of the
        stack. Returns (lines before the loop, lines where the stacks are known, lines at
        the top of each step, the new lines)."""
        invariant, before, stacked, per_step, memo = set(invariant), [], [], [], {}

        def repl(m):
            fn, name, key = m.group("fn"), m.group("name"), m.group(0)
            arg = m.groupdict().get("arg") or ""
            if key in memo:
                return memo[key]
            if name in invariant:
                new = self.fresh("hv")
                before.append(f"{new} = {key}")
                invariant.add(new)
            elif name in sliced and fn == "transpose":
                stack, index = sliced[name]
                perm = tuple(int(p) for p in re.findall(r"\d+", arg))
                whole, new = self.fresh("hs"), self.fresh("hx")
                stacked.append(f"{whole} = np.transpose({stack}, "
                               f"{(0, *(p + 1 for p in perm))})")
                per_step.append(f"{new} = {whole}[{index}]")
            else:
                return key
            memo[key] = new
            return new

        out = list(lines)
        for _ in range(4):  # nested views (a reshape of a transpose) come out one per round
            new = out
            for pattern in _VIEWS:
                new = [pattern.sub(repl, text) for text in new]
            if new == out:
                break
            out = new
        return before, stacked, per_step, out

    def begin(self, name, params):
        """Start the generated function `name` (a suffix of the loop's name) of `params`;
        returns its full name."""
        full = f"{self.name}{name}"
        self.depth, self._opened = 0, []
        self.indent(f"def {full}({', '.join(params)}):")
        return full

    def compile(self, main, prefix):
        """Compile the functions; returns the global name (`prefix` and a number) function
        `main` (a name `begin` returned) has in the enclosing generated code."""
        head = "".join(d + "\n" for d in self.defs)
        src = head + "\n".join(self.lines) + "\n"
        read = set(re.findall(r"\b_\w+\b", src))
        scalars = [f"{k} = {v.item()!r} ({v.dtype})" for k, v in self.ns.items()
                   if k in read and isinstance(v, (np.ndarray, np.generic)) and v.ndim == 0
                   and v.dtype.kind in "biuf"]
        if scalars:  # what the 0-d literal globals hold, for the reader
            src = f"# {', '.join(scalars)}\n{src}"
        if self.g.options.profile:  # the bodies' equations are timed where they run
            self.ns.update(_clock=profiling.clock, _record=profiling.record)
        exec(compile(src, f"<jit {self.name}>", "exec"), self.ns)
        self.g.sub_texts.append(src)
        return self.g.hoist(self.ns[main], prefix)
