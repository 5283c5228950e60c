"""The `jit` call primitive: compilation of its jaxpr, and its rules.

`jit` carries `jaxpr` (no constvars; constants are leading operands), `name` and `donated`
(one flag per operand). Bound eagerly it runs the jaxpr compiled by the device's backend.
Its JVP, partial-evaluation, transpose and batching rules transform the jaxpr as a whole
and bind `jit` again, so derivatives and batches of a jitted function run compiled too.
Each rule's traced result is cached per (jaxpr, pattern), so repeated eager calls of
`grad(jit(f))` or `vmap(jit(f))` hit the compilation cache instead of retracing.
"""

import functools
import time
from collections import OrderedDict

from mytorch.core.ad_util import Zero, instantiate, is_differentiable, is_undefined
from mytorch.core.array import ArrayImpl
from mytorch.core.backend import CompileOptions, default_device
from mytorch.core.config import config
from mytorch.core.jaxpr import ClosedJaxpr, eval_jaxpr, sub_jaxprs
from mytorch.core.primitive import Primitive
from mytorch.core.staging import StagingTrace
from mytorch.core.trace import aval_of, set_current_trace
from mytorch.core.tree_util import tree_structure, tree_unflatten
from mytorch.lax._batching import batch_call_jaxpr
from mytorch.transforms.closure import trace_closed_over
from mytorch.transforms.jvp import jvp_call_jaxpr, look_through
from mytorch.transforms.partial_eval import partial_eval_jaxpr, split_call_eqn
from mytorch.transforms.transpose import backward_pass

jit_p = Primitive("jit", multiple_results=True, kind="call")
jit_p.inline_param = "jaxpr"

_CACHE_SIZE = 512
_caches = []


class _LRU(OrderedDict):
    """A bounded dict; values keep their key's jaxpr alive, so ids stay unique."""

    def get_or(self, key, make):
        hit = self.get(key)
        if hit is not None:
            self.move_to_end(key)
            return hit
        value = self[key] = make()
        if len(self) > _CACHE_SIZE:
            self.popitem(last=False)
        return value


def _cache():
    c = _LRU()
    _caches.append(c)
    return c


def clear_rule_caches():
    for c in _caches:
        c.clear()


# ---- compilation ---------------------------------------------------------------------------
class _DonatedBuffer:
    """Stands in for the buffer of an array donated to a jitted function."""

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __getattr__(self, attr):
        raise RuntimeError(
            f"this array was donated to jit({self.name}) (donate_argnums) and its buffer may "
            "have been overwritten: use the function's result instead")


class Executable:
    """A compiled jaxpr: `call(arrays) -> arrays`, plus its generated text and timings."""

    def __init__(self, fn, text, jaxpr, options, timings):
        self.fn, self.text, self.jaxpr, self.options = fn, text, jaxpr, options
        self.device, self.name = options.device, options.name
        self.donated = options.donated_flags(len(jaxpr.jaxpr.invars))
        self.timings = timings
        self.out_weak = tuple(a.weak_type for a in jaxpr.out_avals)
        self._donate = self.device.backend.donate

    def call(self, args):
        if any(self.donated):
            bufs = [_take(a, self.name, self._donate) if d else a._buf
                    for a, d in zip(args, self.donated)]
        else:
            bufs = [a._buf for a in args]
        outs = self.fn(*bufs)
        dev = self.device
        return [ArrayImpl(o, w, dev) for o, w in zip(outs, self.out_weak)]

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
                bufs.append(f"{a}._buf")
        lines.append(f"    r = fn({', '.join(bufs)})")
        wraps = [f"AI(r[{j}], {w}, dev)" for j, w in enumerate(self.out_weak)]
        n_out = len(wraps)
        if out_tree.num_nodes == 1 and out_tree.num_leaves == 1:
            lines.append(f"    return {wraps[0]}")
        elif out_tree == _flat_structure(tuple, n_out):
            lines.append(f"    return ({', '.join(wraps)}{',' if n_out == 1 else ''})")
        elif out_tree == _flat_structure(list, n_out):
            lines.append(f"    return [{', '.join(wraps)}]")
        else:
            lines.append(f"    return unflatten(tree, [{', '.join(wraps)}])")
        ns = {"fn": self.fn, "AI": ArrayImpl, "dev": self.device, "_take": _take,
              "_donate": self._donate, "_name": self.name, "unflatten": tree_unflatten,
              "tree": out_tree}
        exec(compile("\n".join(lines), f"<jit runner {self.name}>", "exec"), ns)
        return ns["run"]


@functools.lru_cache(maxsize=64)
def _flat_structure(kind, n):
    """The tree structure of a tuple (or list) of `n` leaves."""
    return tree_structure(kind(range(n)))


def _take(array, name, donate):
    """The buffer of a donated array, which the compiled code may overwrite: the array
    itself is invalidated, and its device's backend decides whether the buffer can be
    reused or must be copied first (`donate`, given the only reference left)."""
    buf = array._buf
    array._buf = _DonatedBuffer(name)
    return donate(buf)


def compile_closed(closed, donated, name, device):
    """Optimise `closed` and compile it for `device`: an Executable."""
    options = CompileOptions(device=device, donated=donated, debug_nans=config.debug_nans,
                             name=name)
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


_executables = _cache()


@jit_p.def_impl
def _jit_impl(*args, jaxpr, name, donated):
    device = args[0].device if args else default_device()
    key = (id(jaxpr), donated, device, config.values())

    def make():
        return jaxpr, compile_closed(ClosedJaxpr(jaxpr, []), donated, name, device)

    return _executables.get_or(key, make)[1].call(list(args))


def _bind(args, jaxpr, consts, name):
    return jit_p.bind(*consts, *args, jaxpr=jaxpr, name=name,
                      donated=(False,) * (len(consts) + len(args)))


_jvp_jaxprs = _cache()


def _jit_jvp(primals, tangents, *, jaxpr, name, donated):
    nonzero = tuple(type(t) is not Zero and is_differentiable(aval_of(p))
                    for p, t in zip(primals, tangents))
    n_out = len(jaxpr.outvars)

    def make():
        return (jaxpr, *jvp_call_jaxpr(jaxpr, jaxpr.in_avals, nonzero, f"jvp({name})"))

    t_key = tuple(aval_of(t) if nz else None for t, nz in zip(tangents, nonzero))
    _, jvp_jaxpr, consts = _jvp_jaxprs.get_or((id(jaxpr), nonzero, t_key), make)
    ts = [t for t, nz in zip(tangents, nonzero) if nz]
    outs = _bind([*primals, *ts], jvp_jaxpr, consts, f"jvp({name})")
    return outs[:n_out], outs[n_out:]


def _everything_saveable(prim, *avals, **params):
    return True


_splits = _cache()


def _runs_to_differentiate_again(jaxpr):
    """Whether `jaxpr` (or a jaxpr it calls) has an equation whose primitive must run
    while being linearized to be differentiated again (while_loop)."""
    return any(eqn.primitive.runs_to_differentiate_again
               or any(_runs_to_differentiate_again(getattr(j, "jaxpr", j))
                      for j in sub_jaxprs(eqn.params)) for eqn in jaxpr.eqns)


_runs = _cache()


def _linearize_here(jaxpr, args, unknowns):
    """Whether to linearize a jit's body equation by equation (not compiled) instead of
    splitting it: e.g. hessian(jit(f)) of a while loop, where an enclosing jvp
    differentiates the residuals so the loop must run now (see while_loop)."""
    if not _runs.get_or(id(jaxpr), lambda: (jaxpr, _runs_to_differentiate_again(jaxpr)))[1]:
        return False
    known = [look_through(x) for x, u in zip(args, unknowns) if not u]
    return any(d for _, d in known) and all(v is not None for v, _ in known)


def _jit_partial_eval(trace, args, params):
    jaxpr, name = params["jaxpr"], params["name"]
    unknowns = tuple(trace.is_unknown(x) for x in args)
    if not any(unknowns):
        with set_current_trace(trace.parent):
            return jit_p.bind(*args, **params)
    if _linearize_here(jaxpr, args, unknowns):
        return eval_jaxpr(jaxpr, [], *args)
    def make():
        return (jaxpr, *partial_eval_jaxpr(jaxpr, list(unknowns), _everything_saveable))

    _, known, staged, out_unknowns, num_res = _splits.get_or((id(jaxpr), unknowns), make)
    known_args = [x for x, u in zip(args, unknowns) if not u]
    with set_current_trace(trace.parent):
        known_outs = _bind(known_args, known, [], name)
    n_known = len(known_outs) - num_res
    residuals = known_outs[n_known:]
    unknown_args = [x for x, u in zip(args, unknowns) if u]
    operands = [*residuals, *unknown_args]
    staged_outs = StagingTrace.process_primitive(
        trace, jit_p, operands,
        dict(jaxpr=staged, name=name, donated=(False,) * len(operands)))
    known_it, staged_it = iter(known_outs[:n_known]), iter(staged_outs)
    return [next(staged_it) if u else next(known_it) for u in out_unknowns]


_transposes = _cache()


def _jit_transpose(cts, *args, jaxpr, name, donated):
    linear = tuple(is_undefined(a) for a in args)
    residuals = [a for a, lin in zip(args, linear) if not lin]
    ct_zero = tuple(type(c) is Zero for c in cts)
    nz_cts = [c for c, z in zip(cts, ct_zero) if not z]

    def make():
        n_res = len(residuals)

        def transpose_fun(*xs):
            res, ct_it = iter(xs[:n_res]), iter(xs[n_res:])
            values = [None if lin else next(res) for lin in linear]
            cts_out = [Zero(v.aval) if z else next(ct_it)
                       for v, z in zip(jaxpr.outvars, ct_zero)]
            cts_in = backward_pass(jaxpr, [], list(linear), values, cts_out)
            return [instantiate(c) for c, lin in zip(cts_in, linear) if lin]

        avals = [aval_of(r) for r in residuals] + [aval_of(c) for c in nz_cts]
        return (jaxpr, *trace_closed_over(transpose_fun, avals, f"transpose({name})"))

    r_key = tuple(aval_of(r) for r in residuals)
    _, t_jaxpr, consts = _transposes.get_or((id(jaxpr), linear, ct_zero, r_key), make)
    outs = iter(_bind([*residuals, *nz_cts], t_jaxpr, consts, f"transpose({name})"))
    return [next(outs) if lin else None for lin in linear]


_batched = _cache()


def _jit_batching(axis, args, dims, *, jaxpr, name, donated):
    key = (id(jaxpr), tuple(dims), axis.size, axis.name)

    def make():
        return (jaxpr, *batch_call_jaxpr(jaxpr, axis, list(dims), name=f"vmap({name})"))

    _, batched, consts, out_dims = _batched.get_or(key, make)
    return _bind(list(args), batched, consts, f"vmap({name})"), out_dims


def _no_donation(params, n):
    return dict(params, donated=(False,) * n)


def _jit_partial_eval_jaxpr(eqn, unknowns, saveable):
    """A jit nested in a jaxpr being split: its known part runs with the known values."""
    return split_call_eqn(eqn, unknowns, _everything_saveable, extra=_no_donation)


jit_p.def_jvp(_jit_jvp)
jit_p.def_rule("partial_eval_jaxpr", _jit_partial_eval_jaxpr)
jit_p.def_rule("partial_eval", _jit_partial_eval)
jit_p.def_transpose(_jit_transpose)
jit_p.def_batching(_jit_batching)
