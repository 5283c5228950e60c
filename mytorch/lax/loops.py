"""The user-facing loops over the `scan` primitive: `scan`, `fori_loop` and `map`.

    carry, ys = scan(f, init, xs)          # f(carry, x) -> (carry, y), ys stacked on axis 0
    val = fori_loop(0, n, body_fun, init_val)
    ys = map(f, xs, batch_size=8)

Each traces its body once per carry type (see _carry.py: a Python-scalar carry takes the
dtype the body gives it) and binds `scan_p` (scan.py); `fori_loop` with traced bounds is a
`while_loop` (while_loop.py). Errors name the function the user called, the types and the
user's line.
"""

import operator

import numpy as np

from mytorch.core import dtypes, tree_util
from mytorch.core.aval import ShapedArray
from mytorch.core.source_info import where
from mytorch.core.trace import Tracer, aval_of
from mytorch.lax._batching import bdim_at_front
from mytorch.lax._carry import (
    LoopNames, check_carry_tree, check_carry_types, describe_value, promote_weak_carries,
)
from mytorch.lax._utils import asarray, leaves_as_arrays
from mytorch.lax.elementwise import convert_element_type
from mytorch.lax.scan import scan_p
from mytorch.lax.structural import concatenate, iota, reshape, slice_in_dim
from mytorch.lax.while_loop import named_while_loop
from mytorch.transforms.batching import BatchAxis, batch_flat
from mytorch.transforms.closure import trace_closed_over

__all__ = ["scan", "fori_loop", "map"]


# ---- the user-facing functions -----------------------------------------------------------
_SCAN = LoopNames("scan", "f", "init")


def _scan_length(names, xs_leaves, length):
    """The trip count: the common leading dimension of the xs (and `length`, if given)."""
    op, at = names.op, where()
    sizes = {aval_of(x).shape[0] if aval_of(x).ndim else None for x in xs_leaves}
    if None in sizes:
        shapes = [aval_of(x).str_short() for x in xs_leaves]
        raise ValueError(f"{op}: every leaf of xs needs a leading axis to scan over, got "
                         f"{shapes}{at}")
    if len(sizes) > 1:
        raise ValueError(f"{op}: the leaves of xs have different leading sizes "
                         f"{sorted(sizes)}{at}")
    if length is not None:
        length = operator.index(length)
        if sizes and sizes != {length}:
            raise ValueError(f"{op}: length={length} but xs have leading size "
                             f"{sizes.pop()}{at}")
        return length
    if not sizes:
        raise ValueError(f"{op}: with no xs, pass length= for the trip count{at}")
    return sizes.pop()


def _unroll_steps(names, unroll, length):
    """`unroll` as a step count (True: the whole loop, False: 1), as in JAX."""
    if isinstance(unroll, (bool, np.bool_)):
        return max(length, 1) if unroll else 1
    return _non_negative_int(unroll, f"{names.op}: unroll", "a bool or an int",
                             "a bool or a non-negative int")


def _non_negative_int(value, what, type_words, sign_words):
    """`value` as an int >= 0; else a TypeError ("`what` must be `type_words`") or a
    ValueError ("... must be `sign_words`") with the user's line."""
    try:
        value = operator.index(value)
    except TypeError:
        raise TypeError(f"{what} must be {type_words}, got {describe_value(value)}"
                        f"{where()}") from None
    if value < 0:
        raise ValueError(f"{what} must be {sign_words}, got {value}{where()}")
    return value


def scan(f, init, xs=None, length=None, reverse=False, unroll=1):
    """Loop `f(carry, x) -> (carry, y)` over the leading axis of `xs`.

    Args:
      f: (carry, x) -> (carry, y); the carry it returns has the tree structure, shapes and
        dtypes of `init` (a Python-scalar carry takes the dtype `f` gives it, as in JAX).
      init: pytree of arrays, the initial carry.
      xs: pytree of arrays of shape (length, ...), or None.
      length: the trip count, needed when `xs` is None.
      reverse: run from the last slice to the first (ys stay in xs order).
      unroll: steps per loop iteration when compiled (an int, or True for all).

    Returns:
      (final carry, ys), ys stacking the per-step y's along a new leading axis of size
      `length`.

    >>> scan(lambda c, x: (c + x, c), 0.0, mnp.arange(3.0))[0]   # 3.0
    """
    return _scan(f, init, xs, length, reverse, unroll, _SCAN)


def _scan(f, init, xs, length, reverse, unroll, names):
    call_site = where()
    init_leaves, init_tree = leaves_as_arrays(init, f"{names.op}: {names.init}")
    xs_leaves, xs_tree = leaves_as_arrays(xs, f"{names.op}: xs")
    length = _scan_length(names, xs_leaves, length)
    unroll = _unroll_steps(names, unroll, length)
    x_avals = [ShapedArray(a.shape[1:], a.dtype, a.weak_type)
               for a in (aval_of(x) for x in xs_leaves)]
    n_carry = len(init_leaves)
    name = f"lax.{names.op} body {getattr(f, '__name__', '')}".rstrip()  # names leaks

    def trace_body(carry_avals):
        trees = []

        def body(*args):
            carry = tree_util.tree_unflatten(init_tree, args[:n_carry])
            out = f(carry, tree_util.tree_unflatten(xs_tree, args[n_carry:]))
            if not isinstance(out, tuple) or len(out) != 2:
                raise TypeError(f"{names.op}: {names.fun} must return a pair (carry, y), got "
                                f"{describe_value(out)}{call_site}")
            c_leaves, c_tree = leaves_as_arrays(out[0], f"{names.op}: {names.fun}'s carry")
            check_carry_tree(names, init_tree, carry_avals, c_tree,
                             [aval_of(c) for c in c_leaves], call_site)
            y_leaves, y_tree = leaves_as_arrays(out[1], f"{names.op}: {names.fun}'s output")
            trees.append(y_tree)
            return [*c_leaves, *y_leaves]

        jaxpr, consts = trace_closed_over(body, [*carry_avals, *x_avals], name)
        return (jaxpr, consts, trees[0]), [v.aval for v in jaxpr.outvars[:n_carry]]

    init_leaves, (jaxpr, consts, y_tree) = promote_weak_carries(init_leaves, trace_body)
    check_carry_types(names, init_tree, [aval_of(x) for x in init_leaves],
                      [v.aval for v in jaxpr.outvars[:n_carry]], call_site)
    outs = scan_p.bind(*consts, *init_leaves, *xs_leaves, jaxpr=jaxpr, num_consts=len(consts),
                       num_carry=n_carry, length=length, reverse=bool(reverse), unroll=unroll,
                       tape=None)
    carry = tree_util.tree_unflatten(init_tree, outs[:n_carry])
    return carry, tree_util.tree_unflatten(y_tree, outs[n_carry:])


_FORI = LoopNames("fori_loop", "body_fun", "init_val")


def fori_loop(lower, upper, body_fun, init_val, *, unroll=None):
    """`val = body_fun(i, val)` for i in range(lower, upper), starting from `init_val`.

    Args:
      lower, upper: int bounds (Python ints, or 0-d integer arrays).
      body_fun: (i, val) -> val, of the tree structure, shapes and dtypes of `init_val`
        (a Python-scalar `init_val` takes the dtype `body_fun` gives it, as in JAX).
      init_val: pytree of arrays.
      unroll: steps per loop iteration when compiled (an int, or True for all); only with
        concrete bounds.

    Returns:
      The final `val`. With concrete bounds this is a scan over the trip count
      (reverse-differentiable), with traced bounds a while_loop.

    >>> fori_loop(0, 3, lambda i, acc: acc + i, 0)   # 3
    """
    if not callable(body_fun):
        raise TypeError(f"fori_loop: body_fun must be callable, got "
                        f"{describe_value(body_fun)}{where()}")
    lo, hi = _concrete_int(lower), _concrete_int(upper)
    if lo is None or hi is None:
        if unroll not in (None, False, 1):
            raise ValueError(f"fori_loop: unroll={unroll!r} needs bounds known while "
                             f"tracing; lower/upper are traced here{where()}. Pass Python "
                             "ints, or leave unroll out.")
        return _fori_while(lower, upper, body_fun, init_val)
    n = max(hi - lo, 0)
    idx = iota(np.dtype(np.int32), n)
    if lo:
        idx = idx + np.int32(lo)
    idx = convert_element_type(idx, np.int32, weak_type=True)  # i is a Python int in JAX

    def step(val, i):
        return body_fun(i, val), None

    return _scan(step, init_val, idx, n, False, 1 if unroll is None else unroll, _FORI)[0]


def _fori_while(lower, upper, body_fun, init_val):
    """fori_loop with traced bounds: a while_loop over (i, upper, val)."""
    lower, upper = _fori_bounds(asarray(lower), asarray(upper))

    def cond(state):
        return state[0] < state[1]

    def body(state):
        i, u, v = state
        return i + 1, u, body_fun(i, v)

    return named_while_loop(cond, body, (lower, upper, init_val), None, _FORI)[2]


def _fori_bounds(lower, upper):
    """The bounds in one integer dtype: a weak (Python int) bound takes the other's."""
    a, b = aval_of(lower), aval_of(upper)
    for av in (a, b):
        if av.shape != () or not dtypes.is_int(av.dtype):
            raise TypeError(f"fori_loop: lower and upper must be 0-d integers, got "
                            f"{a.str_short()} and {b.str_short()}{where()}")
    if a.dtype == b.dtype:
        return lower, upper
    if a.weak_type and not b.weak_type:
        return convert_element_type(lower, b.dtype), upper
    if b.weak_type and not a.weak_type:
        return lower, convert_element_type(upper, a.dtype)
    raise TypeError(f"fori_loop: lower and upper must have one dtype, got {a.str_short()} "
                    f"and {b.str_short()}{where()}. Cast one with .astype().")


def _concrete_int(x):
    if isinstance(x, Tracer):
        try:
            x = x.concrete_value()
        except Exception:
            return None
        if x is None:
            return None
    try:
        return operator.index(np.asarray(x).item() if hasattr(x, "shape") else x)
    except TypeError:
        return None


_MAP = LoopNames("map", "f", "init")


def map(f, xs, *, batch_size=None):  # noqa: A001 - the lax name
    """`f` applied to each slice of `xs` along axis 0, results stacked (a scan with no
    carry).

    Args:
      f: x -> y for one slice of `xs`.
      xs: pytree of arrays of shape (n, ...).
      batch_size: if given, `f` runs vmapped over batches of this many slices (a scan over
        n // batch_size batches, the remainder vmapped once), as in JAX.

    Returns:
      The pytree of stacked ys, each of shape (n, ...).

    >>> map(lambda x: x * 2.0, mnp.arange(3.0))   # [0., 2., 4.]
    """
    if batch_size is not None:
        return _batched_map(f, xs, batch_size)
    return _scan(lambda _, x: ((), f(x)), (), xs, None, False, 1, _MAP)[1]


def _vmapped(f, tree, leaves, size):
    """(f vmapped over axis 0 of the leaves, every output leaf batched at 0, its tree)."""
    trees = []

    def flat(*ls):
        out_leaves, out_tree = leaves_as_arrays(f(tree_util.tree_unflatten(tree, ls)),
                                                "map: f's output")
        trees.append(out_tree)
        return out_leaves

    outs, dims = batch_flat(flat, leaves, [0] * len(leaves), BatchAxis(size, None), "lax.map")
    return [bdim_at_front(o, d, size) for o, d in zip(outs, dims)], trees[0]


def _batched_map(f, xs, batch_size):
    """lax.map with batch_size: a scan over full batches of `f` vmapped, then the
    remainder vmapped once (batch_size=0: all of xs vmapped at once), as in JAX."""
    batch_size = _non_negative_int(batch_size, "map: batch_size", "an int", "non-negative")
    leaves, tree = leaves_as_arrays(xs, "map: xs")
    n = _scan_length(_MAP, leaves, None)
    n_batches, rest = divmod(n, batch_size) if batch_size else (0, n)
    full = n_batches * batch_size
    parts = []
    if n_batches:
        batched = [reshape(slice_in_dim(x, 0, full, axis=0),
                           (n_batches, batch_size, *aval_of(x).shape[1:])) for x in leaves]
        trees = []

        def body(_, x_leaves):
            ys, y_tree = _vmapped(f, tree, x_leaves, batch_size)
            trees.append(y_tree)
            return (), ys

        _, ys = _scan(body, (), batched, None, False, 1, _MAP)
        y_tree = trees[-1]
        parts.append([reshape(y, (full, *aval_of(y).shape[2:])) for y in ys])
    if rest or not n_batches:
        ys, y_tree = _vmapped(f, tree, [slice_in_dim(x, full, n, axis=0) for x in leaves],
                              rest)
        parts.append(ys)
    ys = parts[0] if len(parts) == 1 else [concatenate(p, 0) for p in zip(*parts)]
    return tree_util.tree_unflatten(y_tree, ys)
