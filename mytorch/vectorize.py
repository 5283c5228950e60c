"""`vmap`: vectorise a function over a leading (or any) axis of its arguments.

The function runs once, on `BatchTracer`s (`transforms/batching.py`); each primitive's
batching rule turns the per-example operation into one batched operation, so no Python
loop over the batch is ever run.
"""

import functools
import inspect

from mytorch.core import tree_util
from mytorch.core.source_info import user_frame
from mytorch.core.trace import aval_of
from mytorch.core.tree_paths import SequenceKey
from mytorch.lax._batching import bdim_to
from mytorch.lax._utils import asarray
from mytorch.transforms.batching import BatchAxis, batch_flat, not_mapped

__all__ = ["vmap"]


def _name(fun):
    return getattr(fun, "__name__", None) or type(fun).__name__


def _at():
    info = user_frame()
    return f" (at {info})" if info is not None else ""


def _is_none(x):
    return x is None


def _check_axes_spec(spec, what, fun):
    """in_axes/out_axes leaves must be ints or None."""
    for leaf in tree_util.tree_leaves(spec, is_leaf=_is_none):
        if leaf is not None and (not isinstance(leaf, int) or isinstance(leaf, bool)):
            raise TypeError(
                f"vmap({_name(fun)}): {what} must be built of ints and None, got "
                f"{type(leaf).__name__} {leaf!r:.40} in {what}={spec!r:.80}"
            )


def vmap(fun, in_axes=0, out_axes=0, axis_name=None, axis_size=None):
    """Vectorise `fun` over one axis of its arguments.

    Args:
      fun: a function of arrays (pytrees of arrays) returning arrays.
      in_axes: the axis of each argument to map over: an int, None (not mapped: the same
        value for every example), or a tuple with one entry per positional argument, each
        an int/None or a pytree prefix of that argument. Negative axes count from the end.
        Keyword arguments are always mapped over axis 0.
      out_axes: where the mapped axis goes in each output: int, None (the output must not
        depend on the mapped axis) or a pytree prefix of the output.
      axis_name: a name for the mapped axis, so that collectives (`lax.psum`,
        `lax.axis_index`, ...) inside `fun` can refer to it.
      axis_size: the size of the mapped axis; needed only when no argument is mapped.

    Returns:
      A function taking arguments with the extra axis, e.g. for in_axes=0 an argument of
      shape (n, *s) where `fun` takes shape s; its outputs gain an axis of size n at
      `out_axes`.
    """
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    if not (in_axes is None or isinstance(in_axes, (int, tuple))) or isinstance(in_axes, bool):
        raise TypeError(
            f"vmap({_name(fun)}): in_axes must be an int, None, or a tuple with one entry "
            f"per positional argument, got {type(in_axes).__name__} {in_axes!r:.80}"
        )
    _check_axes_spec(in_axes, "in_axes", fun)
    _check_axes_spec(out_axes, "out_axes", fun)
    if axis_size is not None and (not isinstance(axis_size, int) or axis_size < 0):
        raise TypeError(f"vmap({_name(fun)}): axis_size must be a non-negative int, "
                        f"got {axis_size!r}")

    @functools.wraps(fun)
    def vmapped(*args, **kwargs):
        leaves, dims, paths, in_tree = _flatten_args(fun, in_axes, args, kwargs)
        size = _batch_size(fun, leaves, dims, paths, axis_size)
        store = {}

        def flat(*xs):
            a, kw = tree_util.tree_unflatten(in_tree, xs)
            out = fun(*a, **kw)
            out_leaves, store["out_tree"] = tree_util.tree_flatten(out)
            return [_as_output(x, fun) for x in out_leaves]

        outs, out_dims = batch_flat(flat, leaves, dims, BatchAxis(size, axis_name),
                                    f"vmap({_name(fun)})")
        out_tree = store["out_tree"]
        moved = _place_outputs(fun, outs, out_dims, out_tree, out_axes, size)
        return tree_util.tree_unflatten(out_tree, moved)

    return vmapped


def _as_output(x, fun):
    try:
        return asarray(x)
    except TypeError:
        raise TypeError(
            f"vmap({_name(fun)}): outputs must be arrays or scalars, got "
            f"{type(x).__name__}{_at()}"
        ) from None


def _describe_path(fun, path):
    """'argument x[0]' / 'keyword argument y' for a path into (args, kwargs)."""
    first, rest = path[1], path[2:]
    if path[0] == SequenceKey(1):
        return f"keyword argument {first.key}{tree_util.keystr(rest)}"
    i = first.idx
    try:
        params = [p for p in inspect.signature(fun).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        name = params[i].name if i < len(params) else f"args[{i}]"
    except (TypeError, ValueError):
        name = f"args[{i}]"
    return f"argument {name}{tree_util.keystr(rest)}"


def _flatten_args(fun, in_axes, args, kwargs):
    """The leaves of (args, kwargs) with their batch dims (None or non-negative): mapped
    leaves as arrays, unmapped ones as they are."""
    if isinstance(in_axes, tuple):
        if len(in_axes) != len(args):
            raise ValueError(
                f"vmap({_name(fun)}): in_axes has {len(in_axes)} entries but the function "
                f"was called with {len(args)} positional arguments{_at()}; in_axes must be "
                "an int, None, or a tuple with one entry per positional argument"
            )
        axes_args = in_axes
    else:
        axes_args = (in_axes,) * len(args)
    try:
        arg_dims = tree_util.broadcast_prefix_named(
            axes_args, args, _is_none, f"vmap({_name(fun)})", "in_axes", "the arguments")
    except ValueError as err:
        raise ValueError(f"{err}{_at()}; in_axes must be a tree prefix of the arguments") \
            from None
    path_leaves, in_tree = tree_util.tree_flatten_with_path((tuple(args), kwargs))
    dims = arg_dims + [0] * (len(path_leaves) - len(arg_dims))
    leaves, paths, out_dims = [], [], []
    for (path, x), d in zip(path_leaves, dims):
        if d is None:  # not mapped: passed to `fun` untouched (a static value stays one)
            leaves.append(x)
            paths.append(path)
            out_dims.append(d)
            continue
        try:
            x = asarray(x)
        except TypeError:
            raise TypeError(
                f"vmap({_name(fun)}): {_describe_path(fun, path)} is a "
                f"{type(x).__name__}, not an array{_at()}"
            ) from None
        if d is not None:
            ndim = aval_of(x).ndim
            if not -ndim <= d < ndim:
                raise ValueError(
                    f"vmap({_name(fun)}) was asked to map {_describe_path(fun, path)} of "
                    f"type {aval_of(x).str_short()} along axis {d}, which it does not have "
                    f"(it has {ndim} dimension{'s' if ndim != 1 else ''}){_at()}"
                )
            d %= ndim
        leaves.append(x)
        paths.append(path)
        out_dims.append(d)
    return leaves, out_dims, paths, in_tree


def _batch_size(fun, leaves, dims, paths, axis_size):
    sizes = [(aval_of(x).shape[d], x, d, p) for x, d, p in zip(leaves, dims, paths)
             if d is not None]
    found = {s for s, *_ in sizes}
    if axis_size is not None:
        found.add(axis_size)
    if len(found) > 1:
        lines = [f"  {_describe_path(fun, p)} of type {aval_of(x).str_short()} has size "
                 f"{s} along axis {d}" for s, x, d, p in sizes]
        if axis_size is not None:
            lines.append(f"  axis_size={axis_size}")
        raise ValueError(
            f"vmap({_name(fun)}) got inconsistent sizes for the mapped axis{_at()}:\n"
            + "\n".join(lines)
        )
    if not found:
        raise ValueError(
            f"vmap({_name(fun)}) has no argument to map over (in_axes are all None and "
            f"there are no keyword arguments){_at()}; pass axis_size to say how many "
            "examples to produce"
        )
    return found.pop()


def _place_outputs(fun, outs, out_dims, out_tree, out_axes, size):
    skeleton = tree_util.tree_unflatten(out_tree, [0] * len(outs))
    try:
        axes = tree_util.broadcast_prefix_named(
            out_axes, skeleton, _is_none, f"vmap({_name(fun)})", "out_axes", "the output")
    except ValueError as err:
        raise ValueError(f"{err}{_at()}; out_axes must be a tree prefix of the output") \
            from None
    result = []
    paths = [p for p, _ in tree_util.tree_flatten_with_path(skeleton)[0]]
    for x, d, ax, path in zip(outs, out_dims, axes, paths):
        if ax is None:
            if d is not not_mapped:
                raise ValueError(
                    f"vmap({_name(fun)}): output{tree_util.keystr(path)} of type "
                    f"{aval_of(x).str_short()} per example depends on the mapped axis, but "
                    f"out_axes is None for it{_at()}"
                )
            result.append(x)
            continue
        ndim = aval_of(x).ndim + (1 if d is not_mapped else 0)
        if not -ndim <= ax < ndim:
            raise ValueError(
                f"vmap({_name(fun)}): out_axes={ax} is out of range for output"
                f"{tree_util.keystr(path)}, which has {ndim} dimensions with the mapped "
                f"axis{_at()}"
            )
        result.append(bdim_to(x, d, ax % ndim, size))
    return result
