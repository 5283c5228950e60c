"""`custom_jvp` and `custom_vjp`: functions whose derivative rule is stated by hand.

Outside any transformation the function simply runs. Under a transformation the call goes
to the current trace (mytorch/custom_calls.py), which runs what JAX runs:

* jvp and grad call only the rule: custom_jvp's `jvp`, or custom_vjp's `fwd` (its
  tangents go through a `custom_lin` equation whose transpose calls `bwd`), on the primal
  values, so a primal with Python control flow on values is never traced abstractly;
* reverse mode is, as everywhere, linearize + transpose: custom_jvp's tangent computation
  is staged and transposed like any other, custom_lin transposes to `bwd`;
* vmap runs the function and its rules vectorised;
* staging (make_jaxpr, jit) records a `custom_jvp_call` / `custom_vjp_call` equation that
  carries the traced function and the rule.
"""

import functools
import sys
import inspect

from mytorch.core import dtypes, tree_util
from mytorch.core.ad_util import Zero, is_differentiable
from mytorch.core.jaxpr import eval_jaxpr
from mytorch.core.staging import StagingTracer, trace_to_jaxpr
from mytorch.core.trace import EvalTrace, Tracer, aval_of, current_trace
from mytorch.custom_calls import (  # noqa: F401
    CustomJVPCall,
    CustomVJPCall,
    bind_custom,
    custom_jvp_call_p,
    custom_lin_p,
    custom_vjp_call_p,
)
from mytorch.lax._utils import asarray
from mytorch.lax.elementwise import convert_element_type
from mytorch.transforms.batching import BatchTracer

__all__ = ["closure_convert", "custom_jvp", "custom_vjp"]


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

    def __reduce_ex__(self, protocol):
        """Pickled by reference when it is a module-level name (as plain functions are), so
        a model holding `mt.nn.relu` pickles; otherwise field by field."""
        owner = sys.modules.get(getattr(self, "__module__", None))
        found = owner
        for part in getattr(self, "__qualname__", "<>").split("."):
            found = getattr(found, part, None)
        if found is self:
            return self.__qualname__
        return super().__reduce_ex__(protocol)

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

    def _flat_fun(self, nondiff, in_tree, spec):
        def fun(*xs):
            out = self.fun(*_merge(self.nondiff_argnums, nondiff,
                                   tree_util.tree_unflatten(in_tree, xs)))
            leaves, tree = _flatten_out(out, "output")
            spec.check("the function", tree, leaves)
            return leaves

        fun.__name__ = _name(self.fun)
        return fun


class _OutSpec:
    """The output structure and shapes of a custom function, learnt from whichever of the
    function and its rule runs first; what runs later must agree."""

    def __init__(self, name):
        self.name, self.tree, self.avals, self.who = name, None, None, None

    def check(self, who, tree, leaves):
        avals = [aval_of(x) for x in leaves]
        if self.tree is None:
            self.tree, self.avals, self.who = tree, avals, who
            return
        if tree != self.tree:
            raise TypeError(f"{who} of {self.name} returned an output of structure {tree}, "
                            f"but {self.who} returned {self.tree}")
        for a, b in zip(self.avals, avals):
            if a.shape != b.shape:
                raise TypeError(f"{who} of {self.name} returned a primal output "
                                f"{b.str_short()} where {self.who} returned {a.str_short()}")


def _check_pair(res, who, name, what):
    if not (isinstance(res, (tuple, list)) and len(res) == 2):
        raise TypeError(f"the {who} of {name} must return a pair ({what}), got "
                        f"{type(res).__name__}")
    return res


def _tangents_like(name, p_out, p_tree, t_out, t_tree):
    """The custom JVP's tangent outputs, checked against its primal outputs."""
    if t_tree != p_tree:
        raise TypeError(f"the custom JVP of {name} returned a tangent output of structure "
                        f"{t_tree} for a primal output of structure {p_tree}")
    out = []
    for p, t in zip(p_out, t_out):
        a, b = aval_of(p), aval_of(t)
        if a.shape != b.shape:
            raise TypeError(f"the custom JVP of {name} returned a tangent output "
                            f"{b.str_short()} for a primal output {a.str_short()}")
        if a.dtype != b.dtype and dtypes.is_inexact(a.dtype) and dtypes.is_inexact(b.dtype):
            t = convert_element_type(t, a.dtype)
        out.append(t)
    return out


# ---- custom_jvp -------------------------------------------------------------------------
class custom_jvp(_CustomBase):
    """A function with a hand-written JVP.

        @mt.custom_jvp
        def f(x): ...
        @f.defjvp
        def f_jvp(primals, tangents):       # tuples like f's arguments
            return f(*primals), tangent_out   # tangent_out like f's output

    `nondiff_argnums` name arguments passed first to the rule and not differentiated.
    Under jvp and grad only the rule runs (on concrete primals when the inputs are
    concrete), so `f` may use Python control flow on values; under jit both are traced.
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
            if total is None:
                total = tree_util.tree_map(lambda a: a * 0, ans)
            return ans, total

        self.defjvp(jvp)

    def __call__(self, *args, **kwargs):
        if self.jvp is None:
            raise AttributeError(
                f"no JVP defined for custom_jvp function {_name(self.fun)}; use defjvp"
            )
        if type(current_trace()) is EvalTrace:  # nothing to transform: just run it
            return self.fun(*args, **kwargs)
        nondiff, leaves, in_tree = self._prepare(args, kwargs)
        name = _name(self.fun)
        spec = _OutSpec(name)

        def flat_jvp(primals, tangents):
            p = tree_util.tree_unflatten(in_tree, primals)
            t = tree_util.tree_unflatten(in_tree, tangents)
            res = _check_pair(self.jvp(*nondiff, tuple(p), tuple(t)), "custom JVP", name,
                              "primal_out, tangent_out")
            p_out, p_tree = _flatten_out(res[0], "primal_out")
            t_out, t_tree = _flatten_out(res[1], "tangent_out")
            t_out = _tangents_like(name, p_out, p_tree, t_out, t_tree)
            spec.check("the custom JVP", p_tree, p_out)
            return p_out, t_out

        flat_jvp.__name__ = _name(self.jvp)
        call = CustomJVPCall(name, self._flat_fun(nondiff, in_tree, spec), flat_jvp)
        outs = bind_custom(call, leaves)
        return tree_util.tree_unflatten(spec.tree, outs)


# ---- custom_vjp -------------------------------------------------------------------------
class custom_vjp(_CustomBase):
    """A function with a hand-written VJP.

        @mt.custom_vjp
        def f(x): ...
        def f_fwd(x): return f(x), residuals
        def f_bwd(residuals, g): return (cotangent_for_x,)   # a tuple, one per argument
        f.defvjp(f_fwd, f_bwd)

    With `nondiff_argnums`, those arguments come first in fwd's and bwd's arguments.
    Under grad and vjp only fwd and then bwd run (fwd on concrete primals when the inputs
    are concrete). Forward mode (jvp) of a custom_vjp function is an error, as in JAX.
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
        nondiff, leaves, in_tree = self._prepare(args, kwargs)
        in_avals = [aval_of(x) for x in leaves]
        name = _name(self.fun)
        spec = _OutSpec(name)

        def flat_fwd(*primals):
            p = tree_util.tree_unflatten(in_tree, primals)
            res = _check_pair(self.fwd(*_merge(self.nondiff_argnums, nondiff, p)),
                              "fwd of custom_vjp function", name, "output, residuals")
            outs, tree = _flatten_out(res[0], "output")
            spec.check("the fwd", tree, outs)
            res_leaves, res_tree = tree_util.tree_flatten(res[1])
            return outs, [asarray(r) for r in res_leaves], res_tree

        def flat_bwd(res_tree, residuals, cts):
            res = tree_util.tree_unflatten(res_tree, residuals)
            ct = tree_util.tree_unflatten(spec.tree, cts)
            got = self.bwd(*nondiff, res, ct)
            return _check_bwd_out(name, got, in_tree, in_avals)

        flat_fwd.__name__, flat_bwd.__name__ = _name(self.fwd), _name(self.bwd)
        call = CustomVJPCall(name, self._flat_fun(nondiff, in_tree, spec), flat_fwd, flat_bwd)
        outs = bind_custom(call, leaves)
        return tree_util.tree_unflatten(spec.tree, outs)


def _check_bwd_out(name, got, in_tree, in_avals):
    """bwd's tuple (one cotangent pytree or None per argument) as flat cotangents."""
    per_arg = tree_util.tree_unflatten(in_tree, in_avals)
    if not isinstance(got, (tuple, list)) or len(got) != len(per_arg):
        raise TypeError(
            f"the bwd of custom_vjp function {name} must return a tuple with one "
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
                f"the bwd of custom_vjp function {name} returned a cotangent for "
                f"argument {i} with {len(cts)} leaves; the argument has {len(avals)}"
            )
        for c, a in zip(cts, avals):
            if c is None:
                out.append(Zero(a))
                continue
            c = asarray(c)
            if aval_of(c).shape != a.shape:
                raise TypeError(
                    f"the bwd of custom_vjp function {name} returned a cotangent "
                    f"{aval_of(c).str_short()} for argument {i}, a {a.str_short()}"
                )
            out.append(c)
    return out


# ---- closure_convert --------------------------------------------------------------------
def _maybe_perturbed(x):
    """Whether a captured value may carry a derivative (so it must become an argument)."""
    if not isinstance(x, Tracer):
        return False  # a concrete array is a constant to every transformation
    if isinstance(x, BatchTracer):
        return _maybe_perturbed(x.val)
    if isinstance(x, StagingTracer):  # staged: it may be differentiated later
        return is_differentiable(x.aval)
    return True  # a JVP tracer


def closure_convert(fun, *example_args):
    """`fun` with the traced values it closes over made explicit arguments.

    Custom rules may not close over values being differentiated; closure conversion turns
    them into arguments that a `custom_vjp` / `custom_jvp` function can take.

    Args:
      fun: a function of arrays (pytrees allowed).
      *example_args: arguments of the shapes and dtypes `fun` will be called with.

    Returns:
      (converted, hoisted_consts): `converted(*args, *hoisted_consts)` equals `fun(*args)`;
      `hoisted_consts` is a list of the captured tracers (concrete captured arrays stay
      inside `converted`).

    Example:
        >>> import mytorch as mt, mytorch.numpy as mnp
        >>> f, consts = mt.closure_convert(lambda x: mnp.sin(x), mnp.ones(2))
        >>> consts
        []
    """
    name = _name(fun)
    leaves, in_tree = tree_util.tree_flatten(example_args)
    out_tree = []

    def flat(*xs):
        out_leaves, tree = tree_util.tree_flatten(fun(*tree_util.tree_unflatten(in_tree, xs)))
        out_tree.append(tree)
        return [asarray(x) for x in out_leaves]

    closed = trace_to_jaxpr(flat, [aval_of(asarray(x)) for x in leaves], name)
    hoist = [_maybe_perturbed(c) for c in closed.consts]
    kept = [c for c, h in zip(closed.consts, hoist) if not h]
    hoisted = [c for c, h in zip(closed.consts, hoist) if h]
    n_args = len(example_args)

    def converted(*args):
        if len(args) != n_args + len(hoisted):
            raise TypeError(f"closure_convert({name}) takes {n_args} arguments and "
                            f"{len(hoisted)} hoisted constants, got {len(args)} values")
        flat_args, tree = tree_util.tree_flatten(args[:n_args])
        if tree != in_tree:
            raise TypeError(f"closure_convert({name}): arguments of structure {tree}, but "
                            f"it was converted for {in_tree}")
        kept_it, hoisted_it = iter(kept), iter(args[n_args:])
        consts = [next(hoisted_it) if h else next(kept_it) for h in hoist]
        outs = eval_jaxpr(closed.jaxpr, consts, *[asarray(x) for x in flat_args])
        return tree_util.tree_unflatten(out_tree[0], outs)

    converted.__name__ = name
    return converted, hoisted
