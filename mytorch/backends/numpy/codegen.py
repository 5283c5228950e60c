"""The NumPy backend's compiler: one generated Python function per jaxpr.

    def f(a0, a1):
        _tok = _errset(_IGNORE)
        try:
            v0 = np.matmul(a0, a1)
            v1 = np_tanh(v0, out=v0)          # v0 dies here: its buffer is reused
            return [v1]
        finally:
            _errreset(_tok)

Variables are locals, scalar literals are inlined, constants (and the ufuncs, as
`np_<name>`) are module globals of the generated code, and each primitive is one NumPy call
where an emitter exists (emitters.py), else a call of its eager kernel. Emitters return
what they emitted (a `planner.Emitted`: fresh buffer, view of an operand, or unknown), and
the backend-independent `BufferPlanner` (mytorch/backends/planner.py) decides from that
which buffers are reused: a dead intermediate (one that nothing else views) is written again
through `out=`, in place when an elementwise op's operand dies at that op; donated inputs
that nothing else references join that pool. Reshapes, transposes, slices and broadcasts
are NumPy views.

Compiled with `options.profile` (for `mt.profiler`), each equation's or fused block's lines
are wrapped as `_t = _clock()` ... `_record(_site7, _t, (v3, ))` and the function as a
whole is timed too (see core/profiling.py); without it the code has no profiling line.
"""

import dataclasses
import functools
import itertools
import re

import numpy as np

from mytorch.backends.numpy import aligned
from mytorch.backends.numpy.emitters import EMITTERS, RUNTIME, inline_ok
from mytorch.backends.numpy.fusion import emit_run, find_runs
from mytorch.backends.numpy.fusion_c import loop_comment
from mytorch.backends.numpy.peephole import prepare
from mytorch.backends.planner import BufferPlanner, emitted
from mytorch.core import profiling
from mytorch.core.jaxpr import Literal, Var

try:  # NumPy's floating-point error state, set without np.errstate's Python overhead
    from numpy._core._multiarray_umath import _make_extobj
    from numpy._core._ufunc_config import _extobj_contextvar

    _IGNORE = _make_extobj(all="ignore")
    _errset, _errreset = _extobj_contextvar.set, _extobj_contextvar.reset
except ImportError:  # pragma: no cover - other NumPy versions
    _IGNORE = None

    def _errset(_):
        state = np.seterr(all="ignore")
        return state

    def _errreset(state):
        np.seterr(**state)


class Generator:
    """Generates the source of one function computing `jaxpr`; see the module docstring."""

    native_min_size = None  # of a compiled fused run (fusion.find_runs' default)

    def __init__(self, jaxpr, consts, options, backend):
        donated, debug_nans = options.donated_flags(len(jaxpr.invars)), options.debug_nans
        self.jaxpr, self.name, self.debug_nans = jaxpr, _identifier(options.name), debug_nans
        self.options, self.backend = options, backend
        self.ns = {"np": np, "_errset": _errset, "_errreset": _errreset, "_IGNORE": _IGNORE,
                   **RUNTIME}
        self.lines, self.names = [], {}
        self._ids = itertools.count()
        self.scalar_of = {}  # broadcasts of 0-d values -> the 0-d value
        self.expand_of = {}  # other broadcasts -> (source, its shape with size-1 axes)
        self.pending = {}  # such broadcasts not emitted until something reads them in full
        if debug_nans:  # every equation is checked on its own: no fused blocks
            self.order, self.runs = list(range(len(jaxpr.eqns))), {}
        else:
            self.order, self.runs = find_runs(jaxpr.eqns, self.native_min_size)
        self.planner = BufferPlanner(jaxpr, self.order, self.runs, reuse=not debug_nans)
        self.blocks = []
        self._full = {}  # (fill bytes, shape, dtype) -> name of a constant array
        self._scalars = {}  # (bytes, dtype) -> name of a 0-d literal read by ufuncs
        self.sub_texts = []  # generated source of sub-functions (shown by as_text)
        for v, c in zip(jaxpr.constvars, consts, strict=True):
            name = self._bind(v, "c")
            self.ns[name] = np.asarray(c, dtype=v.aval.dtype)
            self.planner.constant(v, name)
        self.params = [self._bind(v, "a") for v in jaxpr.invars]
        for v, d, name in zip(jaxpr.invars, donated, self.params, strict=True):
            self.planner.input(v, name, donated=bool(d))

    # ---- names and values ------------------------------------------------------------------
    def _bind(self, v, prefix="v"):
        name = f"{prefix}{next(self._ids)}"
        self.names[v] = name
        return name

    def hoist(self, value, prefix="k"):
        """A global of the generated code holding `value`."""
        name = f"_{prefix}{next(self._ids)}"
        self.ns[name] = value
        return name

    def full_constant(self, value, shape, dtype):
        """A global of the generated code: a read-only array of `shape` and `dtype` filled
        with `value` (one per distinct value, sign of zero and NaN payload included)."""
        fill = np.asarray(value, dtype=dtype)
        key = (fill.tobytes(), tuple(shape), fill.dtype)
        name = self._full.get(key)
        if name is None:
            arr = np.full(shape, fill, dtype=dtype)
            arr.flags.writeable = False
            name = self._full[key] = self.hoist(arr, "full")
        return name

    def subfunction(self, jaxpr, consts=(), name="body"):
        """Compile `jaxpr` (its constvars bound to `consts`) into its own generated function
        and return the global name it has in this code: control-flow emitters call it (in
        a loop, or per branch) on NumPy buffers; it returns a list of buffers."""
        options = dataclasses.replace(self.options, donated=(), name=f"{self.name}_{name}")
        fn, text = generate(jaxpr, list(consts), options, self.backend)
        glob = self.hoist(fn, name)
        self.sub_texts.append(text() if callable(text) else text)
        return glob

    def ufunc(self, name):
        """The generated code's global name for NumPy's ufunc `name`."""
        glob = f"np_{name}"
        self.ns[glob] = getattr(np, name)
        return glob

    def dtype(self, dt):
        return self.hoist(np.dtype(dt), "dt")

    def src(self, v, scalar_ok, flush=True):
        """Source for reading operand `v`: a name, or a literal. A literal is a global holding
        a 0-d array of the literal's dtype, or, where `scalar_ok` (the operand goes straight
        into a ufunc beside an array of its dtype, see `emitters.inline_ok`), a Python
        scalar, which NumPy's weak-scalar rule gives that same dtype."""
        if type(v) is Literal:
            value = np.asarray(v.val, dtype=v.aval.dtype)
            if not scalar_ok:
                return self.hoist(value, "l")
            # beside an array of its dtype: one global per value, a 0-d array of that dtype
            # (NumPy computes exactly as with the Python number, which NEP 50 converts to
            # that dtype, but ufuncs take a 0-d array about 0.3 us faster per call)
            key = (value.tobytes(), value.dtype)
            name = self._scalars.get(key)
            if name is None:
                name = self._scalars[key] = self.hoist(value, "s")
            return name
        line = self.pending.pop(v, None) if flush else None
        if line is not None:  # a broadcast, emitted at its first full-size read
            self.lines.append(line)
        return self.names[v]

    # ---- buffers ---------------------------------------------------------------------------
    must_write_out = False  # fused blocks need every result written through out=

    def ufunc_args(self, eqn, args):
        """`args` with broadcasts replaced by their source viewed with size-1 axes, where
        another operand has the full shape: the ufunc broadcasts for free."""
        shape = eqn.outvars[0].aval.shape
        full = [type(v) is Var and v.aval.shape == shape and v not in self.expand_of
                for v in eqn.invars]
        out = list(args)
        for i, v in enumerate(eqn.invars):
            if type(v) is Var and v in self.expand_of and any(
                    f for j, f in enumerate(full) if j != i):
                src, expanded = self.expand_of[v]
                out[i] = f"{self.src(src, False)}.reshape({expanded})"
        return out

    def scalar_arg(self, v, default):
        """Source of the 0-d value that `v` broadcasts, if it is such a broadcast."""
        src = self.scalar_of.get(v) if type(v) is Var else None
        return default if src is None else self.src(src, scalar_ok=False)

    def is_read(self, v):
        """Whether the program reads `v` (a result of the equation being emitted)."""
        return v in self.planner.last_use

    def out_buffer(self, eqn, in_place, only=None):
        """The name of a dead buffer of the result's shape and dtype to pass as `out=`, or
        None: see `BufferPlanner.buffer_for` (`only`: the operand positions the op may write
        over)."""
        return self.planner.buffer_for(eqn, self._index, in_place, only)

    # ---- emission --------------------------------------------------------------------------
    def emit_all(self):
        eqns = self.jaxpr.eqns
        for pos, i in enumerate(self.order):
            self._index = pos
            start = len(self.lines)
            if i in self.runs:
                members = [eqns[k] for k in self.runs[i]]
                outs = emit_run(self, eqns, self.runs[i], pos)
                for v in outs:
                    self.planner.define(v, self.names[v], owned=True)
            else:
                members, outs = [eqns[i]], eqns[i].outvars
                self.emit(eqns[i])
            if self.options.profile:
                self._time_lines(start, members, outs)
            self.planner.release(members, pos)

    def _time_lines(self, start, members, outs):
        """Profiling (options.profile): time the lines emitted since `start` for
        `members` (one equation, or a fused block) and count their results' buffers."""
        if len(self.lines) == start:  # nothing ran (a view or a broadcast not read yet)
            return
        site = (profiling.block_site(members, self.name) if len(members) > 1
                else profiling.eqn_site(members[0], self.name))
        names = [self.names[v] for v in outs
                 if type(v) is Var and v in self.names and v not in self.pending]
        self.lines.insert(start, "_t = _clock()")
        self.lines.append(f"_record({self.hoist(site, 'site')}, _t, "
                          f"({''.join(n + ', ' for n in names)}))")

    def next_id(self):
        return next(self._ids)

    def bind(self, v):
        return self._bind(v)

    def emit(self, eqn):
        prim = eqn.primitive
        out = None
        fn = EMITTERS.get(prim)
        if fn is not None and prim.multiple_results:
            out = emitted(fn(self, eqn, [self.src(v, False) for v in eqn.invars]))
            if out is not None:  # a list of buffers; they may alias operands: never reused
                tmp = f"_r{next(self._ids)}"
                self.lines.append(f"{tmp} = {out.expr}")
                for j, v in enumerate(eqn.outvars):
                    if type(v) is Var:
                        self.lines.append(f"{self._bind(v)} = {tmp}[{j}]")
                self._track(eqn, None)
                return
        if fn is not None and not prim.multiple_results:
            out = emitted(fn(self, eqn, [  # only a literal may be written as a scalar
                self.src(v, type(v) is Literal and inline_ok(eqn, v), flush=False)
                for v in eqn.invars]))
            if out is not None:
                for v in eqn.invars:  # pending broadcasts the expression does read
                    if v in self.pending and re.search(rf"\b{self.names[v]}\b", out.expr):
                        self.lines.append(self.pending.pop(v))
        if out is None:
            self._emit_kernel(eqn)
        else:
            res = eqn.outvars[0]
            target = self._bind(res) if type(res) is Var else "_"
            if out.expanded is not None:
                self._broadcast(eqn, out.expanded)
            if out.expanded is not None and target != "_":
                self.pending[res] = f"{target} = {out.expr}"  # consumers may read the source
            else:
                self.lines.append(f"{target} = {out.expr}")
        self._track(eqn, out)

    def _broadcast(self, eqn, expanded):
        """A broadcast of operand 0, viewed as `expanded` (its shape with size-1 axes):
        consumers may read the source instead (`ufunc_args`, `scalar_arg`), and the
        broadcast itself is emitted only if something reads it in full (`src`)."""
        src, res = eqn.invars[0], eqn.outvars[0]
        if not src.aval.shape:
            self.scalar_of[res] = src
        elif type(src) is Var:
            self.expand_of[res] = (src, expanded)

    def _track(self, eqn, out):
        """Hand the planner what `eqn` produced (`out`: its `Emitted`, None when unknown),
        then check it for NaNs under debug_nans."""
        self.planner.record(eqn, out, self.names)
        if self.debug_nans:
            self._emit_nan_check(eqn)

    def _emit_kernel(self, eqn):
        prim = eqn.primitive
        kernel = self._kernel(prim, eqn.params)
        args = []
        for v in eqn.invars:
            s = self.src(v, scalar_ok=False)
            args.append(f"np.asarray({s})" if type(v) is Var and not v.aval.shape else s)
        call = f"{kernel}({', '.join(args)})"
        outs = [self._bind(v) if type(v) is Var else "_" for v in eqn.outvars]
        coerce = self.hoist(self.backend.coerce, "coerce")
        if not prim.multiple_results:
            dt = self.dtype(eqn.outvars[0].aval.dtype)
            self.lines.append(f"{outs[0]} = {coerce}({call}, {dt})")
            return
        if not outs:
            self.lines.append(call)
            return
        tmp = f"_r{next(self._ids)}"
        self.lines.append(f"{tmp} = {call}")
        for j, (name, v) in enumerate(zip(outs, eqn.outvars, strict=True)):
            if name != "_":
                self.lines.append(f"{name} = {coerce}({tmp}[{j}], {self.dtype(v.aval.dtype)})")

    def _kernel(self, prim, params):
        try:
            fn = self.backend.kernel(prim)
        except NotImplementedError:
            if prim.impl is None:
                raise
            fn = _impl_kernel(prim)
        return self.hoist(functools.partial(fn, **params) if params else fn,
                          _identifier(prim.name))

    def _emit_nan_check(self, eqn):
        outs = [self.names[v] for v in eqn.outvars if type(v) is Var
                and v.aval.dtype.kind == "f" and v not in self.pending]
        if not outs:
            return
        ins = [self.src(v, False) for v in eqn.invars]
        where = self.hoist(_describe(eqn), "where")
        self.lines.append(f"_nan_check({where}, ({''.join(o + ', ' for o in outs)}), "
                          f"({''.join(i + ', ' for i in ins)}))")  # () when no inputs
        self.ns["_nan_check"] = _nan_check

    # ---- the function ----------------------------------------------------------------------
    def source(self):
        outs = []
        for v in self.jaxpr.outvars:
            s = self.src(v, scalar_ok=False)
            outs.append(f"np.asarray({s})" if not v.aval.shape else s)
        body = [*self.lines, f"return [{', '.join(outs)}]"]
        head = "".join(t + "\n" for t in self.sub_texts)
        head += "".join(b + "\n" for b in self.blocks)
        head += f"def {self.name}({', '.join(self.params)}):"
        if self._scalars:  # what the 0-d literal globals hold, for the reader
            head += "\n    # " + ", ".join(
                f"{name} = {self.ns[name].item()!r} ({self.ns[name].dtype})"
                for name in self._scalars.values())
        inner = "\n".join("        " + line for line in body)
        enter, leave = "", ""
        if self.options.profile:  # the function as a whole, and its arguments' buffers
            site = self.hoist(profiling.Site("function", self.name, profiling.shapes_of(
                self.jaxpr.invars, self.jaxpr.outvars), scope=self.name), "site")
            args = "".join(p + ", " for p in self.params)
            enter = f"    _tf = _clock()\n    _track(({args}))\n"
            leave = f"\n        _record({site}, _tf)"
            self.ns.update(_clock=profiling.clock, _record=profiling.record,
                           _track=profiling.track)
        if self._allocates_large():  # 64-byte aligned buffers (aligned.py)
            enter += "    _atok = _aligned_enter()\n"
            leave = f"\n        _aligned_leave(_atok){leave}"
            self.ns["_aligned_enter"], self.ns["_aligned_leave"] = aligned.bound()
        return (f"{head}\n{enter}    _tok = _errset(_IGNORE)\n    try:\n{inner}\n"
                f"    finally:\n        _errreset(_tok){leave}\n")

    def _allocates_large(self):
        """Whether the function computes arrays of `aligned.LARGE_BYTES` or more, which it
        then allocates 64-byte aligned (where the aligned allocator is available)."""
        return aligned.available() and any(
            v.aval.size * v.aval.dtype.itemsize >= aligned.LARGE_BYTES
            for e in self.jaxpr.eqns for v in e.outvars if hasattr(v.aval, "shape"))


def _impl_kernel(prim):
    """A kernel running a primitive's eager `impl` (call primitives) on NumPy buffers."""
    from mytorch.core.array import ArrayImpl
    from mytorch.core.trace import EVAL_TRACE, set_current_trace

    def kernel(*bufs, **params):
        with set_current_trace(EVAL_TRACE):
            outs = prim.impl(*[ArrayImpl(b) for b in bufs], **params)
        bufs = [o._buf for o in outs]
        return bufs if prim.multiple_results else bufs[0]

    return kernel


def _describe(eqn):
    where = f" at {eqn.source_info}" if eqn.source_info is not None else ""
    ins = ", ".join(v.aval.str_short() for v in eqn.invars)
    return f"{eqn.primitive.name}({ins}){where}"


def _nan_check(where, outs, ins):
    for o in outs:
        if np.isnan(np.asarray(o, dtype=np.float32 if o.dtype.kind == "V" else None)).any():
            for a in ins:
                a = np.asarray(a)
                if a.dtype.kind == "f" and np.isnan(a).any():
                    return
            raise FloatingPointError(
                f"debug_nans: {where} produced a NaN from NaN-free inputs (in jit-compiled "
                "code)")


def generate(jaxpr, consts, options, backend):
    """(python function of NumPy buffers -> list of buffers, its source) for `jaxpr`,
    compiled as `options` (a CompileOptions) say; sub-functions inherit them, donating
    nothing."""
    jaxpr = prepare(jaxpr, options.donated_flags(len(jaxpr.invars)))
    gen = Generator(jaxpr, consts, options, backend)
    gen.emit_all()
    src = gen.source()
    code = compile(src, f"<jit {options.name}>", "exec")
    exec(code, gen.ns)
    # the C++ of compiled loops is shown by as_text (formatted when it is asked for), not
    # compiled as Python comments
    loops = gen.__dict__.get("loop_texts", ())
    if not loops:
        return gen.ns[gen.name], src
    return gen.ns[gen.name], lambda: "".join(loop_comment(*t) for t in loops) + src


def _identifier(name):
    ident = "".join(c if c.isalnum() or c == "_" else "_" for c in name or "f")
    return ident if ident and not ident[0].isdigit() else "f_" + ident
