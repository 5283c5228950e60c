"""Descriptions of a jitted function's call signature, for the warning that explains why
it traces again (`JitFunction._explain_miss`)."""

from mytorch.core import tree_util
from mytorch.core.trace import aval_of


def describe_signature(fn, args, kwargs, static_nums):
    """{argument path: description} of a call of the jitted function `fn`, for explaining
    retraces."""
    out = {}
    for i, a in enumerate(args):
        name = fn._param_name(i)
        if i in static_nums:
            out[name] = f"static value {a!r:.60}"
            continue
        describe_tree(out, name, a)
    for k in sorted(kwargs):
        if k in fn._static_names:
            out[k] = f"static value {kwargs[k]!r:.60}"
        else:
            describe_tree(out, k, kwargs[k])
    return out


def describe_tree(out, name, tree):
    """Add a description of each leaf of `tree` (an argument named `name`) to `out`."""
    pairs, _ = tree_util.tree_flatten_with_path(tree)
    if not pairs:
        out[name] = f"empty {type(tree).__name__}"
    for path, leaf in pairs:
        try:
            desc = aval_of(leaf).str_short()
            if aval_of(leaf).weak_type:
                desc += " (weakly typed Python scalar)"
        except TypeError:
            desc = type(leaf).__name__
        out[name + tree_util.keystr(path)] = desc


def difference(old, new):
    """What changed between two described signatures (at most three changes named), or
    None when nothing did."""
    changes = []
    for k in new:
        if k not in old:
            changes.append(f"argument `{k}` is new ({new[k]})")
        elif old[k] != new[k]:
            changes.append(f"argument `{k}` changed from {old[k]} to {new[k]}")
    changes += [f"argument `{k}` ({old[k]}) is gone" for k in old if k not in new]
    if not changes:
        return None
    more = f" (and {len(changes) - 3} more)" if len(changes) > 3 else ""
    return "; ".join(changes[:3]) + more
