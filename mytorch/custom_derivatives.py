"""`custom_jvp` and `custom_vjp`: functions whose derivative rule is stated by hand.

Outside any transformation the function simply runs. Under a transformation it is traced
to a jaxpr and bound as a call primitive (`custom_jvp_call` / `custom_vjp_call`) that
carries the jaxpr and the user's rule, so:

* forward mode calls the user's JVP (custom_jvp) or, for custom_vjp, runs `fwd` and emits
  a `custom_lin` equation, linear in the tangents, whose transpose calls `bwd`;
* reverse mode is, as everywhere, linearize + transpose: custom_jvp's tangent computation
  is staged and transposed like any other, custom_lin transposes to `bwd`;
* staging (make_jaxpr, and later jit) records the call with its jaxpr.
"""

import functools
import inspect

from mytorch.core import tree_util
from mytorch.core.ad_util import Zero, instantiate, is_undefined
from mytorch.core.aval import ShapedArray
from mytorch.core.jaxpr import eval_jaxpr
from mytorch.core.primitive import Primitive
from mytorch.core.trace import EvalTrace, aval_of, current_trace
from mytorch.lax._batching import batch_call_jaxpr, bdim_at_front, moveaxis
from mytorch.lax._utils import asarray
from mytorch.lax.reductions import reduce_sum
from mytorch.transforms.batching import batch_flat, batched_aval
from mytorch.transforms.closure import trace_closed_over

__all__ = ["custom_jvp", "custom_vjp"]


def _name(fun):
    return getattr(fun, "__name__", type(fun).__name__)


def _resolve_args(fun, args, kwargs):
    """Keyword arguments bound to positions, as custom rules take positional arguments."""
    if not kwargs:
        return tuple(args)
    try:
        bound = inspect.signature(fun).bind(*args, **kwargs)
    except TypeError as err:
        raise TypeError(f"{_name(fun)}: {err}") from None
    bound.apply_defaults()
    return tuple(bound.arguments.values())


def _split_nondiff(args, nondiff_argnums):
    nondiff = tuple(args[i] for i in nondiff_argnums)
    diff = tuple(a for i, a in enumerate(args) if i not in nondiff_argnums)
    return nondiff, diff


def _merge(nondiff_argnums, nondiff, diff):
    out, it_n, it_d = [], iter(nondiff), iter(diff)
    for i in range(len(nondiff) + len(diff)):
        out.append(next(it_n) if i in nondiff_argnums else next(it_d))
    return out


def _flatten_out(out, what):
    leaves, tree = tree_util.tree_flatten(out)
    return [asarray(x) for x in leaves], tree


class _CustomBase:
    def __init__(self, fun, nondiff_argnums=()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)

    def __get__(self, obj, objtype=None):  # usable as a method
        return self if obj is None else functools.partial(self, obj)

    def _prepare(self, args, kwargs):
        args = _resolve_args(self.fun, args, kwargs)
        for i in self.nondiff_argnums:
            if i >= len(args):
                raise TypeError(
                    f"{_name(self.fun)}: nondiff_argnums {self.nondiff_argnums} out of range "
                    f"for {len(args)} arguments"
                )
        nondiff, diff = _split_nondiff(args, self.nondiff_argnums)
        leaves, in_tree = tree_util.tree_flatten(diff)
        return nondiff, [asarray(x) for x in leaves], in_tree

    def _trace_fun(self, nondiff, leaves, in_tree, store):
        def flat(*xs):
            diff = tree_util.tree_unflatten(in_tree, xs)
            out = self.fun(*_merge(self.nondiff_argnums, nondiff, diff))
            outs, store["out_tree"] = _flatten_out(out, _name(self.fun))
            return outs

        return trace_closed_over(flat, [aval_of(x) for x in leaves], _name(self.fun))

    def _stage(self, args, kwargs):
        """(nondiff args, flat diff args, their treedef, jaxpr, consts, output treedef)."""
        nondiff, leaves, in_tree = self._prepare(args, kwargs)
        store = {}
        jaxpr, consts = self._trace_fun(nondiff, leaves, in_tree, store)
        return nondiff, leaves, in_tree, jaxpr, consts, store["out_tree"]


# ---- custom_jvp -------------------------------------------------------------------------
class custom_jvp(_CustomBase):
    """A function with a hand-written JVP.

        @mt.custom_jvp
        def f(x): ...
        @f.defjvp
        def f_jvp(primals, tangents):       # tuples like f's arguments
            return f(*primals), tangent_out   # tangent_out like f's output

    `nondiff_argnums` name arguments passed first to the rule and not differentiated.
    Reverse mode transposes the rule's (linear) tangent computation.
    """

    def __init__(self, fun, nondiff_argnums=()):
        super().__init__(fun, nondiff_argnums)
        self.jvp = None

    def defjvp(self, jvp):
        self.jvp = jvp
        return jvp

    def defjvps(self, *jvps):
        """One function per argument: jvps[i](t_i, ans, *primals) -> its tangent term."""

        def jvp(primals, tangents):
            ans = self(*primals)
            total = None
            for fn, t in zip(jvps, tangents):
                if fn is None:
                    continue
                term = fn(t, ans, *primals)
                total = term if total is None else tree_util.tree_map(
                    lambda a, b: a + b, total, term)
            return ans, total

        self.defjvp(jvp)

    def __call__(self, *args, **kwargs):
        if self.jvp is None:
            raise AttributeError(
                f"no JVP defined for custom_jvp function {_name(self.fun)}; use defjvp"
            )
        if type(current_trace()) is EvalTrace:  # nothing to transform: just run it
            return self.fun(*args, **kwargs)
        nondiff, leaves, in_tree, jaxpr, consts, out_tree = self._stage(args, kwargs)

        def flat_jvp(primals, tangents):
            p = tree_util.tree_unflatten(in_tree, primals)
            t = tree_util.tree_unflatten(in_tree, tangents)
            res = self.jvp(*nondiff, tuple(p), tuple(t))
            if not (isinstance(res, (tuple, list)) and len(res) == 2):
                raise TypeError(
                    f"the custom JVP of {_name(self.fun)} must return a pair "
                    f"(primal_out, tangent_out), got {type(res).__name__}"
                )
            p_out, p_tree = _flatten_out(res[0], "primal_out")
            t_out, t_tree = _flatten_out(res[1], "tangent_out")
            _check_rule_out(self.fun, "custom JVP", out_tree, jaxpr, p_tree, p_out, "primal")
            _check_rule_out(self.fun, "custom JVP", out_tree, jaxpr, t_tree, t_out, "tangent")
            return p_out, t_out

        flat_jvp.__name__ = _name(self.jvp)
        outs = custom_jvp_call_p.bind(*consts, *leaves, call_jaxpr=jaxpr, jvp=flat_jvp,
                                      num_consts=len(consts))
        return tree_util.tree_unflatten(out_tree, outs)


def _check_rule_out(fun, rule, out_tree, jaxpr, tree, leaves, what):
    if tree != out_tree:
        raise TypeError(
            f"the {rule} of {_name(fun)} returned a {what} output of structure {tree}, but "
            f"{_name(fun)} returns {out_tree}"
        )
    for x, a in zip(leaves, jaxpr.out_avals):
        b = aval_of(x)
        if b.shape != a.shape:
            raise TypeError(
                f"the {rule} of {_name(fun)} returned a {what} output {b.str_short()} where "
                f"{_name(fun)} returns {a.str_short()}"
            )


custom_jvp_call_p = Primitive("custom_jvp_call", multiple_results=True, kind="call")
custom_jvp_call_p.inline_param = "call_jaxpr"  # compiled code runs the primal function


@custom_jvp_call_p.def_abstract_eval
def _custom_jvp_call_abstract_eval(*avals, call_jaxpr, jvp, num_consts):
    return call_jaxpr.out_avals


@custom_jvp_call_p.def_impl
def _custom_jvp_call_impl(*args, call_jaxpr, jvp, num_consts):
    return eval_jaxpr(call_jaxpr, [], *args)


def _custom_jvp_call_jvp(primals, tangents, *, call_jaxpr, jvp, num_consts):
    for t in tangents[:num_consts]:
        if type(t) is not Zero:
            raise TypeError(
                f"a custom_jvp function ({_name(jvp)}) closes over a value that is being "
                "differentiated; pass that value as an argument instead"
            )
    args, ts = primals[num_consts:], tangents[num_consts:]
    return jvp(list(args), [instantiate(t) for t in ts])


custom_jvp_call_p.def_jvp(_custom_jvp_call_jvp)


# ---- custom_vjp -------------------------------------------------------------------------
class custom_vjp(_CustomBase):
    """A function with a hand-written VJP.

        @mt.custom_vjp
        def f(x): ...
        def f_fwd(x): return f(x), residuals
        def f_bwd(residuals, g): return (cotangent_for_x,)   # a tuple, one per argument
        f.defvjp(f_fwd, f_bwd)

    With `nondiff_argnums`, those arguments come first in fwd's and bwd's arguments.
    Forward mode (jvp) of a custom_vjp function is an error, as in JAX.
    """

    def __init__(self, fun, nondiff_argnums=()):
        super().__init__(fun, nondiff_argnums)
        self.fwd = self.bwd = None

    def defvjp(self, fwd, bwd):
        self.fwd, self.bwd = fwd, bwd

    def __call__(self, *args, **kwargs):
        if self.fwd is None:
            raise AttributeError(
                f"no VJP defined for custom_vjp function {_name(self.fun)}; use defvjp"
            )
        if type(current_trace()) is EvalTrace:  # nothing to transform: just run it
            return self.fun(*args, **kwargs)
        nondiff, leaves, in_tree, jaxpr, consts, out_tree = self._stage(args, kwargs)
        in_avals = [aval_of(x) for x in leaves]
        fun = self.fun

        def flat_fwd(*primals):
            p = tree_util.tree_unflatten(in_tree, primals)
            res = self.fwd(*_merge(self.nondiff_argnums, nondiff, p))
            if not (isinstance(res, (tuple, list)) and len(res) == 2):
                raise TypeError(
                    f"the fwd of custom_vjp function {_name(fun)} must return a pair "
                    f"(output, residuals), got {type(res).__name__}"
                )
            outs, tree = _flatten_out(res[0], "output")
            _check_rule_out(fun, "custom VJP fwd", out_tree, jaxpr, tree, outs, "primal")
            res_leaves, res_tree = tree_util.tree_flatten(res[1])
            return outs, [asarray(r) for r in res_leaves], res_tree

        def flat_bwd(res_tree, residuals, cts):
            res = tree_util.tree_unflatten(res_tree, residuals)
            ct = tree_util.tree_unflatten(out_tree, cts)
            got = self.bwd(*nondiff, res, ct)
            return _check_bwd_out(fun, got, in_tree, in_avals)

        flat_bwd.__name__ = _name(self.bwd)
        outs = custom_vjp_call_p.bind(*consts, *leaves, call_jaxpr=jaxpr, fwd=flat_fwd,
                                      bwd=flat_bwd, num_consts=len(consts))
        return tree_util.tree_unflatten(out_tree, outs)


def _check_bwd_out(fun, got, in_tree, in_avals):
    """bwd's tuple (one cotangent pytree or None per argument) as flat cotangents."""
    per_arg = tree_util.tree_unflatten(in_tree, in_avals)
    if not isinstance(got, (tuple, list)) or len(got) != len(per_arg):
        raise TypeError(
            f"the bwd of custom_vjp function {_name(fun)} must return a tuple with one "
            f"cotangent per differentiable argument ({len(per_arg)}), got "
            f"{len(got) if isinstance(got, (tuple, list)) else type(got).__name__}"
        )
    out = []
    for i, (arg, ct) in enumerate(zip(per_arg, got)):
        avals = tree_util.tree_leaves(arg)
        if ct is None:
            out.extend(Zero(a) for a in avals)
            continue
        cts = tree_util.tree_leaves(ct, is_leaf=lambda x: x is None)
        if len(cts) != len(avals):
            raise TypeError(
                f"the bwd of custom_vjp function {_name(fun)} returned a cotangent for "
                f"argument {i} with {len(cts)} leaves; the argument has {len(avals)}"
            )
        for c, a in zip(cts, avals):
            if c is None:
                out.append(Zero(a))
                continue
            c = asarray(c)
            if aval_of(c).shape != a.shape:
                raise TypeError(
                    f"the bwd of custom_vjp function {_name(fun)} returned a cotangent "
                    f"{aval_of(c).str_short()} for argument {i}, a {a.str_short()}"
                )
            out.append(c)
    return out


custom_vjp_call_p = Primitive("custom_vjp_call", multiple_results=True, kind="call")
custom_vjp_call_p.inline_param = "call_jaxpr"


@custom_vjp_call_p.def_abstract_eval
def _custom_vjp_call_abstract_eval(*avals, call_jaxpr, fwd, bwd, num_consts):
    return call_jaxpr.out_avals


@custom_vjp_call_p.def_impl
def _custom_vjp_call_impl(*args, call_jaxpr, fwd, bwd, num_consts):
    return eval_jaxpr(call_jaxpr, [], *args)


def _custom_vjp_call_jvp(primals, tangents, *, call_jaxpr, fwd, bwd, num_consts):
    args, ts = primals[num_consts:], tangents[num_consts:]
    outs, residuals, res_tree = fwd(*args)
    if all(type(t) is Zero for t in ts):
        return outs, [Zero(aval_of(o)) for o in outs]
    ts = [instantiate(t) for t in ts]
    out_avals = tuple(aval_of(o) for o in outs)
    t_outs = custom_lin_p.bind(*residuals, *ts, num_res=len(residuals), bwd=bwd,
                               res_tree=res_tree, out_avals=out_avals)
    return outs, t_outs


custom_vjp_call_p.def_jvp(_custom_vjp_call_jvp)

# custom_lin: the tangent map of a custom_vjp function. It only ever exists to be
# transposed (into a call of bwd); evaluating it means forward mode was requested.
custom_lin_p = Primitive("custom_lin", multiple_results=True, kind="call")


@custom_lin_p.def_abstract_eval
def _custom_lin_abstract_eval(*avals, num_res, bwd, res_tree, out_avals):
    return [ShapedArray(a.shape, a.dtype, a.weak_type) for a in out_avals]


@custom_lin_p.def_impl
def _custom_lin_impl(*args, num_res, bwd, res_tree, out_avals):
    raise TypeError(
        f"cannot use forward-mode differentiation (jvp, jacfwd) on a custom_vjp function "
        f"(its bwd is {_name(bwd)}); use reverse mode (grad, vjp, jacrev), or custom_jvp"
    )


def _custom_lin_transpose(cts, *args, num_res, bwd, res_tree, out_avals):
    residuals = args[:num_res]
    if any(is_undefined(r) for r in residuals):
        raise TypeError("custom_lin: residuals cannot be linear")
    cts_in = bwd(res_tree, list(residuals), list(cts))
    return [None] * num_res + [None if type(c) is Zero else c for c in cts_in]


custom_lin_p.def_transpose(_custom_lin_transpose)


# ---- batching ---------------------------------------------------------------------------
# A vectorised custom function is again a custom function: its jaxpr is batched, and its
# rules (jvp; fwd and bwd) are wrapped to run vectorised. Every output, residual and
# tangent of the batched function carries the batch dimension first, so the wrapped rules
# agree with the batched jaxpr without tracking where each batch dimension went.
def _to_front(args, dims):
    """Batched args moved to dimension 0 (unbatched ones left alone), and their dims."""
    return ([x if d is None else moveaxis(x, d, 0) for x, d in zip(args, dims)],
            [None if d is None else 0 for d in dims])


def _run_batched(fn, args, dims, axis):
    """fn(*args) -> list, vectorised over `axis`; every output batched along 0."""
    outs, out_dims = batch_flat(lambda *xs: [instantiate(o) for o in fn(*xs)], list(args),
                                list(dims), axis, "vmap of a custom rule")
    return [bdim_at_front(o, d, axis.size) for o, d in zip(outs, out_dims)]


def _custom_jvp_call_batching(axis, args, dims, *, call_jaxpr, jvp, num_consts):
    args, dims = _to_front(args, dims)
    jaxpr, consts, _ = batch_call_jaxpr(call_jaxpr, axis, dims, force_front=True)
    arg_dims = dims[num_consts:]
    n_out = len(call_jaxpr.outvars)

    def batched_jvp(primals, tangents):
        # a tangent has its primal's shape, so it is batched exactly where the primal is
        def fn(*xs):
            p_out, t_out = jvp(list(xs[:len(primals)]), list(xs[len(primals):]))
            return [*p_out, *t_out]

        outs = _run_batched(fn, [*primals, *tangents], [*arg_dims, *arg_dims], axis)
        return outs[:n_out], outs[n_out:]

    batched_jvp.__name__ = _name(jvp)
    outs = custom_jvp_call_p.bind(*consts, *args, call_jaxpr=jaxpr, jvp=batched_jvp,
                                  num_consts=len(consts) + num_consts)
    return outs, [0] * len(outs)


def _batched_bwd(bwd, axis, arg_batched):
    """bwd for residuals and output cotangents batched along 0: cotangents of batched
    arguments come back batched along 0, those of unbatched arguments summed over it."""

    def batched(res_tree, residuals, cts):
        cts = [instantiate(c) for c in cts]
        n = len(residuals)

        def fn(*xs):
            return bwd(res_tree, list(xs[:n]), list(xs[n:]))

        outs = _run_batched(fn, [*residuals, *cts], [0] * (n + len(cts)), axis)
        return [o if b else reduce_sum(o, (0,)) for o, b in zip(outs, arg_batched)]

    batched.__name__ = _name(bwd)
    return batched


def _custom_vjp_call_batching(axis, args, dims, *, call_jaxpr, fwd, bwd, num_consts):
    args, dims = _to_front(args, dims)
    jaxpr, consts, _ = batch_call_jaxpr(call_jaxpr, axis, dims, force_front=True)
    arg_dims = dims[num_consts:]
    n_out = len(call_jaxpr.outvars)
    store = {}

    def batched_fwd(*primals):
        def fn(*xs):
            outs, residuals, store["res_tree"] = fwd(*xs)
            return [*outs, *residuals]

        outs = _run_batched(fn, primals, arg_dims, axis)
        return outs[:n_out], outs[n_out:], store["res_tree"]

    outs = custom_vjp_call_p.bind(
        *consts, *args, call_jaxpr=jaxpr, fwd=batched_fwd,
        bwd=_batched_bwd(bwd, axis, [d is not None for d in arg_dims]),
        num_consts=len(consts) + num_consts)
    return outs, [0] * len(outs)


def _custom_lin_batching(axis, args, dims, *, num_res, bwd, res_tree, out_avals):
    args = [bdim_at_front(x, d, axis.size) for x, d in zip(args, dims)]
    out_avals = tuple(batched_aval(a, 0, axis.size) for a in out_avals)
    n_tangents = len(args) - num_res
    outs = custom_lin_p.bind(*args, num_res=num_res,
                             bwd=_batched_bwd(bwd, axis, [True] * n_tangents),
                             res_tree=res_tree, out_avals=out_avals)
    return outs, [0] * len(outs)


custom_jvp_call_p.def_batching(_custom_jvp_call_batching)
custom_vjp_call_p.def_batching(_custom_vjp_call_batching)
custom_lin_p.def_batching(_custom_lin_batching)
