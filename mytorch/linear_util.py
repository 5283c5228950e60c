"""`linear_transpose`: the transpose of a linear function, without differentiating it.

The function is traced once at the primals' shapes and dtypes; its jaxpr, read as linear
in every input, is transposed by the same backward pass that reverse mode uses. A function
that is not linear (it multiplies two inputs, or applies a primitive with no transpose
rule, such as `sin`, to one) is rejected with the offending equation's line.
"""

import numpy as np

from mytorch.core import dtypes, tree_util
from mytorch.core.ad_util import instantiate
from mytorch.core.aval import ShapedArray
from mytorch.core.jaxpr import Var
from mytorch.core.staging import trace_to_jaxpr
from mytorch.core.trace import aval_of
from mytorch.lax._utils import asarray
from mytorch.transforms.transpose import backward_pass

__all__ = ["linear_transpose"]


def _aval(x):
    if hasattr(x, "shape") and hasattr(x, "dtype") and not isinstance(x, np.ndarray) \
            and type(x).__name__ == "ShapeDtypeStruct":
        return ShapedArray(tuple(x.shape), dtypes.canonicalize(np.dtype(x.dtype)))
    return aval_of(asarray(x))


def _name(fun):
    return getattr(fun, "__name__", type(fun).__name__)


def linear_transpose(fun, *primals, reduce_axes=()):
    """The transpose of the linear function `fun`, as a function of output cotangents.

    Args:
      fun: a function of arrays (pytrees allowed), linear in all its inputs (it may add
        constants: they do not change the transpose).
      *primals: example arguments, or `ShapeDtypeStruct`s; only shapes and dtypes are used.
      reduce_axes: accepted for compatibility; must be empty.

    Returns:
      `fun_t(out_ct) -> tuple`: maps a cotangent shaped like `fun`'s output (one pytree) to
      a tuple with one cotangent per primal, of the primals' shapes and dtypes.

    Raises:
      TypeError: inputs and outputs are not all inexact (or all integer); `fun` is not
      linear; or, on the call, a cotangent of the wrong structure, shape or dtype.

    Example:
        >>> import mytorch as mt, mytorch.numpy as mnp
        >>> f_t = mt.linear_transpose(lambda x: 2.0 * x.sum(), mnp.ones(3))
        >>> f_t(mnp.array(1.0))[0].tolist()
        [2.0, 2.0, 2.0]
    """
    if reduce_axes:
        raise TypeError("linear_transpose: reduce_axes is not supported (it must be ())")
    name = _name(fun)
    leaves, in_tree = tree_util.tree_flatten(primals)
    in_avals = [_aval(x) for x in leaves]
    out_tree = []

    def flat(*xs):
        out = fun(*tree_util.tree_unflatten(in_tree, xs))
        out_leaves, tree = tree_util.tree_flatten(out)
        out_tree.append(tree)
        return [asarray(x) for x in out_leaves]

    closed = trace_to_jaxpr(flat, in_avals, f"linear_transpose({name})")
    out_tree = out_tree[0]
    out_avals = [v.aval for v in closed.jaxpr.outvars]
    _check_dtypes(name, in_avals, out_avals)
    _check_linear(name, closed.jaxpr)

    def transposed(out_ct):
        cts, tree = tree_util.tree_flatten(out_ct)
        if tree != out_tree:
            raise TypeError(f"linear_transpose({name}): the cotangent has structure {tree}, "
                            f"but {name} returns {out_tree}")
        cts = [asarray(c) for c in cts]
        for c, a in zip(cts, out_avals):
            b = aval_of(c)
            if b.shape != a.shape or b.dtype != a.dtype:
                raise TypeError(
                    f"linear_transpose({name}): cotangent {b.str_short()} for an output "
                    f"{a.str_short()}; pass one of the output's shape and dtype")
        in_cts = backward_pass(closed.jaxpr, closed.consts, [True] * len(in_avals),
                               [None] * len(in_avals), cts)
        in_cts = [instantiate(c) for c in in_cts]
        return tuple(tree_util.tree_unflatten(in_tree, in_cts))

    transposed.__name__ = f"transpose({name})"
    return transposed


def _check_dtypes(name, in_avals, out_avals):
    kinds = {"f" if dtypes.is_inexact(a.dtype) else "i" if np.issubdtype(a.dtype, np.integer)
             else "other" for a in [*in_avals, *out_avals]}
    if len(kinds) > 1 or "other" in kinds:
        ins = ", ".join(a.str_short() for a in in_avals)
        outs = ", ".join(a.str_short() for a in out_avals)
        raise TypeError(f"linear_transpose({name}) needs inexact inputs and outputs (or "
                        f"integer ones), got ({ins}) -> ({outs})")


def _check_linear(name, jaxpr):
    """Every equation reading an input must be linear in what it reads."""
    linear = set(jaxpr.invars)
    for eqn in jaxpr.eqns:
        reads = [v for v in eqn.invars if type(v) is Var and v in linear]
        if not reads:
            continue
        prim = eqn.primitive
        products = len(reads) > 1 and not prim.linear
        if "transpose" not in prim.rules or products:
            why = ("multiplies values that depend on the inputs" if products
                   else "is not linear")
            where = f" at {eqn.source_info}" if eqn.source_info is not None else ""
            ins = ", ".join(v.aval.str_short() for v in eqn.invars)
            raise TypeError(
                f"linear_transpose({name}): {name} is not linear: {prim.name}({ins}){where} "
                f"{why}; only linear functions (sums, scalings, reshapes, products with "
                "constants...) can be transposed")
        linear.update(v for v in eqn.outvars if type(v) is Var)
