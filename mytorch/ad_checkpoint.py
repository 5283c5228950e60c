"""`mytorch.ad_checkpoint`: rematerialisation, the names its policies read, and a look at
what reverse mode keeps.

    from mytorch.ad_checkpoint import checkpoint, checkpoint_name, checkpoint_policies
    h = checkpoint_name(h @ w, "proj")
    block = checkpoint(block, policy=checkpoint_policies.save_only_these_names("proj"))
    print_saved_residuals(loss, params, x)
"""

import inspect

from mytorch.checkpoint import checkpoint, checkpoint_name, checkpoint_policies, name_p, remat
from mytorch.core import tree_util
from mytorch.core.jaxpr import Var
from mytorch.core.staging import trace_to_jaxpr
from mytorch.core.trace import aval_of
from mytorch.lax._utils import asarray
from mytorch.transforms.partial_eval import linearize_flat

__all__ = ["checkpoint", "checkpoint_name", "checkpoint_policies", "print_saved_residuals",
           "remat", "saved_residuals"]


def saved_residuals(fun, *args, **kwargs):
    """What reverse mode of `fun` at `args` keeps for the backward pass.

    Args:
      fun: a function of arrays (pytrees allowed) returning arrays.
      *args, **kwargs: its arguments.

    Returns:
      A list of (ShapedArray, description): one per residual, described as an argument of
      `fun`, a value labelled by `checkpoint_name`, or the output of a primitive at a line.
    """
    leaves, in_tree = tree_util.tree_flatten((args, kwargs))
    leaves = [asarray(x) for x in leaves]

    def flat(*xs):
        a, kw = tree_util.tree_unflatten(in_tree, xs)
        return [asarray(o) for o in tree_util.tree_leaves(fun(*a, **kw))]

    def residuals(*xs):  # traced, so each residual is a variable with a producer
        _, linear, _ = linearize_flat(flat, list(xs))
        return list(linear.consts)

    closed = trace_to_jaxpr(residuals, [aval_of(x) for x in leaves], "saved_residuals")
    names = dict(zip(closed.jaxpr.invars, _arg_names(fun, args, kwargs), strict=True))
    return [(v.aval, _describe(closed.jaxpr, v, names)) for v in closed.jaxpr.outvars]


def print_saved_residuals(fun, *args, **kwargs):
    """Print `saved_residuals(fun, *args, **kwargs)`, one residual a line."""
    for aval, what in saved_residuals(fun, *args, **kwargs):
        print(f"{aval.str_short()} {what}")


def _arg_names(fun, args, kwargs):
    try:
        params = list(inspect.signature(fun).parameters)
    except (TypeError, ValueError):
        params = []
    names = []
    for i, a in enumerate(args):
        base = params[i] if i < len(params) else f"args[{i}]"
        names += [base + tree_util.keystr(p) for p, _ in tree_util.tree_flatten_with_path(a)[0]]
    for k, a in kwargs.items():
        names += [k + tree_util.keystr(p) for p, _ in tree_util.tree_flatten_with_path(a)[0]]
    return names


def _describe(jaxpr, v, names):
    """Where variable `v` of `jaxpr` comes from, looking into the calls that produce it."""
    while True:
        if type(v) is not Var or v in jaxpr.constvars:
            return "a constant"
        if v in names:
            return f"from the argument {names[v]}"
        eqn = next((e for e in jaxpr.eqns if v in e.outvars), None)
        if eqn is None:
            return "from an input of a call"
        param = eqn.primitive.inline_param
        if param is None:
            where = f" from {eqn.source_info}" if eqn.source_info is not None else ""
            if eqn.primitive is name_p:
                return f"named {eqn.params['name']!r}{where}"
            return f"output of {eqn.primitive.name}{where}"
        inner = eqn.params[param]
        w = inner.outvars[eqn.outvars.index(v)]
        if type(w) is Var and w in inner.invars:  # passed through: back to the operand
            v = eqn.invars[inner.invars.index(w)]
            continue
        return _describe(inner, w, {})
