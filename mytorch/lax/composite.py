"""lax functions composed from other lax functions, with no primitive of their own:
associative_scan over pytrees, reduce with any monoid, collapse, population_count and clz.
They differentiate, batch and compile through the primitives they are built from."""

import operator

import numpy as np

from mytorch.core import dtypes
from mytorch.core.tree_util import tree_flatten, tree_unflatten
from mytorch.lax import elementwise as ew
from mytorch.lax import reductions as red
from mytorch.lax import structural as st
from mytorch.lax._utils import asarray
from mytorch.lax.reductions_rules import associative_scan as _scan_one

__all__ = ["associative_scan", "reduce", "collapse", "population_count", "clz"]


def associative_scan(fn, elems, reverse=False, axis=0):
    """The inclusive scan of `elems` (an array or a pytree of arrays sharing the length of
    `axis`) under the associative function `fn`, which maps two such pytrees of slices to
    one. Element i of the result combines elements 0..i (i..n-1 with `reverse`).

    A single array goes through a depth-O(log n) parallel scan; a pytree through
    log2(n) rounds of shifted combination. Both differentiate and batch through `fn`.
    """
    leaves, tree = tree_flatten(elems)
    if not leaves:
        raise ValueError("associative_scan: elems has no arrays")
    leaves = [asarray(x) for x in leaves]
    nd = leaves[0].ndim
    axis = operator.index(axis)
    if not -nd <= axis < nd:
        raise ValueError(f"associative_scan: axis {axis} is out of bounds for "
                         f"{leaves[0].aval.str_short()}")
    axis %= nd
    n = leaves[0].shape[axis]
    for x in leaves:
        if x.ndim != nd or x.shape[axis] != n:
            raise ValueError(f"associative_scan: every array must have the same length "
                             f"along axis {axis}; got {leaves[0].aval.str_short()} and "
                             f"{x.aval.str_short()}")
    if len(leaves) == 1 and tree.num_leaves == 1 and tree == tree_flatten(0)[1]:
        return _scan_one(fn, leaves[0], axis, reverse)
    if reverse:
        leaves = [st.rev(x, (axis,)) for x in leaves]
    shift = 1
    while shift < n:
        prev = tree_unflatten(tree, [st.slice_in_dim(x, 0, n - shift, axis=axis) for x in leaves])
        cur = tree_unflatten(tree, [st.slice_in_dim(x, shift, n, axis=axis) for x in leaves])
        combined, _ = tree_flatten(fn(prev, cur))
        leaves = [st.concatenate([st.slice_in_dim(x, 0, shift, axis=axis), asarray(c)], axis)
                  for x, c in zip(leaves, combined, strict=True)]
        shift *= 2
    if reverse:
        leaves = [st.rev(x, (axis,)) for x in leaves]
    return tree_unflatten(tree, leaves)


_MONOIDS = [  # (lax function, the identity's test, the primitive reduction)
    (ew.add, lambda v, dt: v == 0, red.reduce_sum),
    (ew.mul, lambda v, dt: v == 1, red.reduce_prod),
    (ew.max, lambda v, dt: v == (-np.inf if dtypes.is_float(dt) else _lowest(dt)),
     red.reduce_max),
    (ew.min, lambda v, dt: v == (np.inf if dtypes.is_float(dt) else _highest(dt)),
     red.reduce_min),
]


def _lowest(dt):
    return False if dtypes.is_bool(dt) else np.iinfo(dt).min


def _highest(dt):
    return True if dtypes.is_bool(dt) else np.iinfo(dt).max


def _concrete(v):
    try:
        return np.asarray(v).item()
    except Exception:  # noqa: BLE001  (a traced init value: take the general path)
        return None


def reduce(operands, init_values, computation, dimensions):
    """Reduce `operands` (an array or a pytree of arrays of one shape) over `dimensions`
    with the binary `computation`, starting from `init_values` (same structure, scalars).

    A computation that is lax's (or mytorch.numpy's) add, mul, max or min with its
    identity as the initial value lowers to the matching reduction primitive; any other
    associative, commutative computation is applied as a pairwise tree (as XLA may).
    """
    leaves, tree = tree_flatten(operands)
    inits, init_tree = tree_flatten(init_values)
    if init_tree != tree:
        raise TypeError(f"reduce: operands and init_values must have the same structure, "
                        f"got {tree} and {init_tree}")
    leaves = [asarray(x) for x in leaves]
    dims = tuple(sorted(operator.index(d) % max(leaves[0].ndim, 1) for d in dimensions))
    if len(leaves) == 1:
        fast = _monoid(computation, inits[0], leaves[0].dtype)
        if fast is not None:
            return tree_unflatten(tree, [fast(leaves[0], dims)])
    return tree_unflatten(tree, _tree_reduce(leaves, inits, tree, computation, dims))


_NAMES = {"add": {"add"}, "mul": {"mul", "multiply"}, "max": {"max", "maximum"},
          "min": {"min", "minimum"}}


def _monoid(computation, init, dt):
    """The reduction primitive `computation` with `init` amounts to, or None."""
    name = getattr(computation, "__name__", None)
    v = _concrete(init)
    if v is None:
        return None
    for fn, is_identity, reducer in _MONOIDS:
        if (computation is fn or name in _NAMES[fn.__name__]) and is_identity(v, dt):
            return reducer
    return None


def _tree_reduce(leaves, inits, tree, computation, dims):
    keep = [i for i in range(leaves[0].ndim) if i not in dims]
    out_shape = tuple(leaves[0].shape[i] for i in keep)
    xs = []
    for x in leaves:
        x = st.transpose(x, tuple(keep) + dims)
        xs.append(st.reshape(x, out_shape + (int(np.prod([leaves[0].shape[d] for d in dims],
                                                         dtype=np.int64)),)))
    inits = [st.broadcast_in_dim(st.convert_element_type(asarray(v), x.dtype), out_shape + (1,),
                                 ()) for v, x in zip(inits, xs, strict=True)]
    xs = [st.concatenate([i, x], len(out_shape)) for i, x in zip(inits, xs, strict=True)]
    ax = len(out_shape)
    while xs[0].shape[ax] > 1:
        n = xs[0].shape[ax]
        half = n // 2
        a = [st.slice_in_dim(x, 0, half, axis=ax) for x in xs]
        b = [st.slice_in_dim(x, half, 2 * half, axis=ax) for x in xs]
        out, _ = tree_flatten(computation(tree_unflatten(tree, a), tree_unflatten(tree, b)))
        rest = [st.slice_in_dim(x, 2 * half, n, axis=ax) for x in xs]
        xs = [st.concatenate([asarray(o), r], ax) if r.shape[ax] else asarray(o)
              for o, r in zip(out, rest, strict=True)]
    return [st.reshape(x, out_shape) for x in xs]


def collapse(operand, start_dimension, stop_dimension=None):
    """`operand` with dimensions [start_dimension, stop_dimension) merged into one."""
    x = asarray(operand)
    lo = operator.index(start_dimension) % max(x.ndim, 1) if x.ndim else 0
    hi = x.ndim if stop_dimension is None else operator.index(stop_dimension)
    if hi < 0:
        hi += x.ndim
    if not 0 <= lo <= hi <= x.ndim:
        raise ValueError(f"collapse: dimensions [{start_dimension}, {stop_dimension}) are "
                         f"not a range of {x.aval.str_short()}")
    merged = int(np.prod(x.shape[lo:hi], dtype=np.int64))
    return st.reshape(x, x.shape[:lo] + (merged,) + x.shape[hi:])


def _unsigned(x, name):
    if not dtypes.is_int(x.dtype):
        raise TypeError(f"{name}: expected an integer array, got {x.aval.str_short()}")
    u = np.dtype(f"uint{x.dtype.itemsize * 8}")
    return ew.bitcast_convert_type(x, u) if x.dtype != u else x


def population_count(x):
    """The number of set bits of each element of an integer array (same dtype)."""
    x = asarray(x)
    u = _unsigned(x, "population_count")
    bits = x.dtype.itemsize * 8
    count = st.full_like(u, 0)
    one = st.full_like(u, 1)
    for i in range(bits):  # bit by bit: exact for every width, fused under jit
        count = ew.add(count, ew.bitwise_and(ew.shift_right_logical(u, st.full_like(u, i)),
                                             one))
    return ew.bitcast_convert_type(count, x.dtype) if count.dtype != x.dtype else count


def clz(x):
    """The number of leading zero bits of each element of an integer array (same dtype)."""
    x = asarray(x)
    u = _unsigned(x, "clz")
    bits = x.dtype.itemsize * 8
    n = st.full_like(u, 0)
    shift = bits // 2
    while shift:  # binary search for the highest set bit
        s = st.full_like(u, shift)
        empty = ew.eq(ew.shift_right_logical(u, s), st.full_like(u, 0))
        n = ew.select_n(empty, n, ew.add(n, s))
        u = ew.select_n(empty, ew.shift_right_logical(u, s), u)
        shift //= 2
    n = ew.add(n, ew.select_n(ew.eq(u, st.full_like(u, 0)), st.full_like(u, 0),
                               st.full_like(u, 1)))
    return ew.bitcast_convert_type(n, x.dtype) if n.dtype != x.dtype else n
