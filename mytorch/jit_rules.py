"""The `jit` call primitive: compilation of its jaxpr, and its rules.

`jit` carries `jaxpr` (no constvars; constants are leading operands), `name` and `donated`
(one flag per operand). Bound eagerly it runs the jaxpr compiled by the device's backend.
Its JVP, partial-evaluation, transpose, batching and DCE rules are the generic call rules
(`transforms/call_rules.py`): each transforms the jaxpr as a whole and binds `jit` again
(named `jvp(f)`, `transpose(f)`, `vmap(f)`, donating nothing), so derivatives and batches
of a jitted function run compiled too. Each rule's traced result is cached per (jaxpr,
pattern), so repeated eager calls of `grad(jit(f))` or `vmap(jit(f))` hit the compilation
cache instead of retracing; `clear_rule_caches` forgets them.
"""

import functools
import time

from mytorch.core.array import ArrayImpl, DonatedBuffer
from mytorch.core.backend import CompileOptions, default_device
from mytorch.core.config import config
from mytorch.core.dtypes import is_opaque
from mytorch.core.jaxpr import ClosedJaxpr
from mytorch.core.primitive import Primitive
from mytorch.core.trace import is_differentiated, is_known
from mytorch.core.tree_util import tree_structure
from mytorch.jit_trees import tree_expression
from mytorch.transforms.call_rules import clear_rule_caches, def_call_rules, rule_cache
from mytorch.transforms.partial_eval import partial_eval_jaxpr

jit_p = Primitive("jit", multiple_results=True, kind="call")
jit_p.inline_param = "jaxpr"

# `clear_rule_caches` (of call_rules) is re-exported: `jit.clear_caches` calls it
__all__ = ["Executable", "clear_rule_caches", "compile_closed", "jit_p"]


# ---- compilation ---------------------------------------------------------------------------
class Executable:
    """A compiled jaxpr: `call(arrays) -> arrays`, plus its generated text and timings."""

    def __init__(self, fn, text, jaxpr, options, timings):
        self.fn, self._text, self.jaxpr, self.options = fn, text, jaxpr, options
        self.device, self.name = options.device, options.name
        self.donated = options.donated_flags(len(jaxpr.jaxpr.invars))
        self.timings = timings
        self.out_weak = tuple(a.weak_type for a in jaxpr.out_avals)
        self._donate = self.device.backend.donate

    @property
    def text(self):
        """The generated source (a backend may give a function making it on demand)."""
        if callable(self._text):
            self._text = self._text()
        return self._text

    def call(self, args):
        dev = self.device
        if any(self.donated):
            bufs = [_take(a, self.name, self._donate) if d else _buffer(a, dev)
                    for a, d in zip(args, self.donated)]
        else:
            bufs = [_buffer(a, dev) for a in args]
        committed = any(a._committed for a in args)
        outs = self.fn(*bufs)
        return [ArrayImpl(o, w, dev, committed) for o, w in zip(outs, self.out_weak)]

    def make_runner(self, out_tree):
        """A function of the positional arrays returning the output pytree, as tight as
        Python allows: what a jit cache hit runs."""
        n = len(self.donated)
        names = [f"a{i}" for i in range(n)]
        lines = ["def run(args):"] + ([f"    {', '.join(names)}, = args"] if n else [])
        bufs = []
        for i, (a, d) in enumerate(zip(names, self.donated)):
            if d:
                lines.append(f"    b{i} = _take({a}, _name, _donate)")
                bufs.append(f"b{i}")
            else:
                bufs.append(f"({a}._buf if {a}._device is dev else _buffer({a}, dev))")
        lines.append(f"    r = fn({', '.join(bufs)})")
        committed = " or ".join(f"{a}._committed" for a in names) or "False"
        lines.append(f"    c = {committed}")
        wraps = [f"AI(r[{j}], {w}, dev, c)" for j, w in enumerate(self.out_weak)]
        n_out = len(wraps)
        ns = {"fn": self.fn, "AI": ArrayImpl, "dev": self.device, "_take": _take,
              "_buffer": _buffer, "_donate": self._donate, "_name": self.name}
        if out_tree.num_nodes == 1 and out_tree.num_leaves == 1:
            lines.append(f"    return {wraps[0]}")
        elif out_tree == _flat_structure(tuple, n_out):
            lines.append(f"    return ({', '.join(wraps)}{',' if n_out == 1 else ''})")
        elif out_tree == _flat_structure(list, n_out):
            lines.append(f"    return [{', '.join(wraps)}]")
        else:  # the structure written out (jit_trees.tree_expression)
            lines.append(f"    return {tree_expression(out_tree, wraps, ns)}")
        exec(compile("\n".join(lines), f"<jit runner {self.name}>", "exec"), ns)
        return ns["run"]


@functools.lru_cache(maxsize=64)
def _flat_structure(kind, n):
    """The tree structure of a tuple (or list) of `n` leaves."""
    return tree_structure(kind(range(n)))


def _buffer(array, device):
    """The array's buffer on `device`: its own, or a copy of an array that lives elsewhere
    (an uncommitted argument, a sharded array's host stack)."""
    if array._device is device and type(array) is ArrayImpl:
        return array._buf
    return array._on(device)


def _take(array, name, donate):
    """The buffer of a donated array, which the compiled code may overwrite: the array
    itself is invalidated, and its device's backend decides whether the buffer can be
    reused or must be copied first (`donate`, given the only reference left)."""
    buf = array._buf
    array._buf = DonatedBuffer(f"jit({name})")
    return donate(buf)


def compile_closed(closed, donated, name, device, backend_options=()):
    """Optimise `closed` and compile it for `device`: an Executable."""
    options = CompileOptions(device=device, donated=donated, debug_nans=config.debug_nans,
                             name=name, backend_options=backend_options)
    t0 = time.perf_counter()
    opt = _optimize(closed)
    t1 = time.perf_counter()
    fn, text = device.backend.compile(opt.jaxpr, opt.consts, options)
    t2 = time.perf_counter()
    timings = {"optimize_ms": 1e3 * (t1 - t0), "codegen_ms": 1e3 * (t2 - t1)}
    return Executable(fn, text, opt, options, timings)


def _optimize(closed):
    from mytorch.transforms.optimize import optimize

    return optimize(closed)


# ---- the primitive ---------------------------------------------------------------------------
@jit_p.def_abstract_eval
def _jit_abstract_eval(*avals, jaxpr, name, donated):
    return jaxpr.out_avals


_executables = rule_cache()


@jit_p.def_impl
def _jit_impl(*args, jaxpr, name, donated):
    device = args[0].device if args else default_device()
    key = (id(jaxpr), donated, device, config.values())

    def make():
        return jaxpr, compile_closed(ClosedJaxpr(jaxpr, []), donated, name, device)

    return _executables.get_or(key, make)[1].call(list(args))


def _rebind(params, jaxpr, role, operands, results):
    """The params of a jit derived from `params` by a call rule (see call_rules): it
    donates nothing, and is named after the transformation that made it."""
    name = params["name"]
    if role in ("jvp", "transpose", "vmap"):
        name = f"{role}({name})"
    return dict(jaxpr=jaxpr, name=name, donated=(False,) * len(operands))


def _everything_saveable(params):
    """Linearizing a jit keeps every intermediate the tangent computation reads."""
    return _save_everything


def _save_everything(prim, *avals, **params):
    return True


_opaque_residuals = rule_cache()


def _has_opaque_residual(jaxpr, unknowns):
    """Whether splitting `jaxpr` for `unknowns` makes its known part return a residual of
    the opaque host dtype (a while loop's run-time tape), which cannot be differentiated
    again."""
    def make():
        known, _, _, num_res = partial_eval_jaxpr(jaxpr, list(unknowns), _save_everything)
        res = known.outvars[len(known.outvars) - num_res:]
        return jaxpr, any(is_opaque(v.aval.dtype) for v in res)

    return _opaque_residuals.get_or((id(jaxpr), tuple(unknowns)), make)[1]


def _linearize_here(jaxpr, args, unknowns):
    """Whether to linearize a jit's body equation by equation (not compiled) instead of
    splitting it: when an enclosing jvp differentiates the known operands (grad(grad),
    hessian(jit(f))) and the split would keep an opaque residual (a while loop's tape),
    the equations run now so that each loop takes the form its rules can differentiate
    again (see while_loop)."""
    known = [x for x, u in zip(args, unknowns) if not u]
    if not (any(is_differentiated(x) for x in known) and all(is_known(x) for x in known)):
        return False
    return _has_opaque_residual(jaxpr, unknowns)


def_call_rules(jit_p, rebind=_rebind, saveable=_everything_saveable,
               name=lambda params: params["name"], linearize_here=_linearize_here)
