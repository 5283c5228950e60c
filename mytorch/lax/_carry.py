"""The type rule of a loop's carry (scan, fori_loop, while_loop), as JAX states it.

A loop body is traced with the abstract values of the initial carry. A carry that starts
weakly typed (a Python scalar) takes the dtype the body gives it: where the body returns it
with another dtype, the initial value is converted (strongly typed) to the dtype both
promote to and the body is traced again. Any other carry must come back with its shape and
dtype unchanged. The loop's results have the types of the body's outputs, weak types
included, so `fori_loop(0, 3, lambda i, a: a + 1, 0) + int8_array` is int8.
"""

from dataclasses import dataclass

from mytorch.core import dtypes, tree_util
from mytorch.core.array import Array
from mytorch.core.trace import aval_of
from mytorch.lax.elementwise import convert_element_type

__all__ = ["LoopNames", "promote_weak_carries", "check_carry_tree", "check_carry_types",
           "describe_value"]


@dataclass(frozen=True)
class LoopNames:
    """How a loop front end names itself and its arguments in errors."""

    op: str     # the function the user called: "scan", "fori_loop", "while_loop", "map"
    fun: str    # its body argument: "f", "body_fun"
    init: str   # its initial carry argument: "init", "init_val"


def promote_weak_carries(init, trace_body):
    """Trace a loop body until its carry types are settled.

    `trace_body(carry_avals) -> (traced, carry_out_avals)` traces the body at the given
    carry types. A weakly typed initial carry that the body returns with another dtype (of
    the same shape) is converted to the promoted dtype (strongly typed) and the body traced
    again; each carry changes at most once, so this ends. Returns (init, traced).
    """
    for _ in range(len(init) + 1):
        traced, out_avals = trace_body([aval_of(x) for x in init])
        new = []
        for x, out in zip(init, out_avals, strict=True):
            a = aval_of(x)
            if a.weak_type and a.shape == out.shape and a.dtype != out.dtype:
                dtype = dtypes.promote(a.dtype, True, out.dtype, out.weak_type)[0]
                x = convert_element_type(x, dtype, weak_type=False)
            new.append(x)
        if all(x is y for x, y in zip(new, init)):
            return init, traced
        init = new
    raise AssertionError("promote_weak_carries: the carry types did not settle")


def _listing(avals):
    return f"[{', '.join(a.str_short() for a in avals)}]"


def _paths(names, tree):
    """`init_val[0]['w']` for each leaf of the carry tree."""
    dummy = tree_util.tree_unflatten(tree, [0] * tree.num_leaves)
    pairs, _ = tree_util.tree_flatten_with_path(dummy)
    return [names.init + tree_util.keystr(p) for p, _ in pairs]


def check_carry_tree(names, in_tree, in_avals, out_tree, out_avals, call_site):
    """The body's carry output must have the tree structure of its carry input."""
    if in_tree == out_tree:
        return
    raise TypeError(
        f"{names.op}: {names.fun} must return a carry with the same tree structure as "
        f"{names.init}, but they differ:\n"
        f"  carry input ({names.init}): {in_tree} with leaves {_listing(in_avals)}\n"
        f"  carry output ({names.fun}): {out_tree} with leaves {_listing(out_avals)}\n"
        f"{call_site.strip()}\nRevise {names.fun} so that it returns the carry in the "
        f"structure of {names.init}.")


def check_carry_types(names, in_tree, in_avals, out_avals, call_site):
    """Each carry output must have its input's shape and dtype (weak types aside: a weak
    carry whose dtype changed was promoted already by `promote_weak_carries`)."""
    diffs = []
    for path, a, b in zip(_paths(names, in_tree), in_avals, out_avals, strict=True):
        what = [w for w, bad in (("dtypes", a.dtype != b.dtype), ("shapes", a.shape != b.shape))
                if bad]
        if what:
            diffs.append((path, a, b, what))
    if not diffs:
        return
    lines = "\n".join(f"  {path} has type {a.str_short()} but {names.fun} returns "
                      f"{b.str_short()} for it (the {' and '.join(w)} differ)"
                      for path, a, b, w in diffs)
    path, a, b, what = diffs[0]
    if "shapes" in what:
        fix = f"keep the shape of each carry leaf ({path} is {a.str_short()})"
    else:
        fix = (f"cast the new value, e.g. `.astype(mnp.{a.dtype.name})`, or start {path} "
               f"with the dtype the body computes, e.g. "
               f"`mnp.zeros({a.shape}, mnp.{b.dtype.name})`")
    raise TypeError(
        f"{names.op}: {names.fun} must return a carry with the same shapes and dtypes as "
        f"{names.init}, but they differ:\n"
        f"  carry input ({names.init}):  {_listing(in_avals)}\n"
        f"  carry output ({names.fun}): {_listing(out_avals)}\n{lines}\n"
        f"{call_site.strip()}\nRevise {names.fun}: {fix}.")


def describe_value(x):
    """`f32[3]` for an array, `a tuple of 3 values (f32[], i32[], str)` for a sequence, the
    type's name otherwise: how errors show a value the user's function returned."""
    if isinstance(x, Array):
        return aval_of(x).str_short()
    if isinstance(x, (tuple, list)):
        parts = ", ".join(describe_value(v) for v in x)
        return f"a {type(x).__name__} of {len(x)} values ({parts})"
    if isinstance(x, (bool, int, float, complex)):
        return f"a Python {type(x).__name__} ({x!r})"
    return type(x).__name__
