"""Filtering pytrees that mix arrays with other leaves (Equinox's names): `filter`,
`partition`/`combine`, `tree_at`, and `filter_jit`/`filter_grad` built on them."""

import functools
import inspect

import numpy as np

from mytorch.autodiff import grad, value_and_grad
from mytorch.core.array import Array
from mytorch.core.source_info import user_error
from mytorch.core.tree_util import (
    tree_flatten,
    tree_leaves,
    tree_map,
    tree_unflatten,
    treedef_is_leaf,
)
from mytorch.jit import jit
from mytorch.nn.module import Module, _fields
from mytorch.random.keys import KeyArray

_INEXACT = ("f", "c", "V")  # V: ml_dtypes' bfloat16 reports kind 'V'


def is_array(x):
    """True for arrays (mt.Array, traced values included, NumPy arrays/scalars and typed
    PRNG key arrays)."""
    return isinstance(x, (Array, np.ndarray, np.generic, KeyArray))


def is_inexact_array(x):
    """True for floating or complex arrays: the leaves `filter_grad` differentiates."""
    if not isinstance(x, (Array, np.ndarray, np.generic)):
        return False
    return np.issubdtype(np.dtype(x.dtype), np.inexact) or "bfloat16" in str(x.dtype)


def _with_keys(is_leaf):
    """`is_leaf` extended so that a typed key array is one leaf (as in JAX), not a node."""
    if is_leaf is None:
        return lambda x: isinstance(x, KeyArray)
    return lambda x: isinstance(x, KeyArray) or is_leaf(x)


def _filter_tree(filter_spec, pytree, is_leaf):
    is_leaf = _with_keys(is_leaf)
    def expand(mask, sub):
        if isinstance(mask, bool):
            return tree_map(lambda _: mask, sub, is_leaf=is_leaf)
        if callable(mask):
            return tree_map(mask, sub, is_leaf=is_leaf)
        raise user_error(TypeError, "filter: the leaves of filter_spec must be bools or "
                         f"callables (leaf -> bool), got {type(mask).__name__}: {mask!r:.60}")
    return tree_map(expand, filter_spec, pytree)


def filter(pytree, filter_spec, inverse=False, replace=None, is_leaf=None):
    """Keep the leaves of `pytree` that `filter_spec` selects; put `replace` elsewhere.

    Args:
        pytree: any pytree.
        filter_spec: a bool, a callable `leaf -> bool` (e.g. `is_array`), or a pytree whose
            structure is a prefix of `pytree`'s with bools/callables as leaves.
        inverse: keep the leaves that are not selected instead.
        replace: the value put in place of dropped leaves (default None).
        is_leaf: optional predicate marking extra leaves of `pytree`.
    Returns:
        A pytree of the same structure (Nones are empty subtrees, so they vanish from
        `tree_leaves`).

    Example:
        >>> filter([mnp.ones(2), 3, "a"], is_array)
        [Array([1., 1.], dtype=float32), None, None]
    """
    mask = _filter_tree(filter_spec, pytree, is_leaf)
    return tree_map(lambda m, x: x if bool(m) ^ inverse else replace, mask, pytree)


def partition(pytree, filter_spec, replace=None, is_leaf=None):
    """Split `pytree` into `(selected, rest)`, each holding None where the other has a leaf;
    `combine(selected, rest)` restores it. E.g. `params, static = partition(model,
    is_inexact_array)`."""
    mask = _filter_tree(filter_spec, pytree, is_leaf)
    left = tree_map(lambda m, x: x if m else replace, mask, pytree)
    right = tree_map(lambda m, x: replace if m else x, mask, pytree)
    return left, right


def combine(*pytrees, is_leaf=None):
    """Merge pytrees of the same structure, taking at each leaf the first value that is
    not None (the inverse of `partition`)."""
    if not pytrees:
        raise user_error(TypeError, "combine: needs at least one pytree")

    def leaf(x):
        return x is None or isinstance(x, KeyArray) or (is_leaf is not None and is_leaf(x))

    def pick(*xs):
        for x in xs:
            if x is not None:
                return x
        return None
    return tree_map(pick, *pytrees, is_leaf=leaf)


# tree_at -------------------------------------------------------------------------------------

class _Marker:
    """A stand-in leaf with its own identity, so `where` can be traced to positions."""

    __slots__ = ()


def _children(x, is_leaf):
    """One level of `x`: (children, treedef), or None when `x` is a leaf."""
    if is_leaf is not None and is_leaf(x):
        return None
    kids, treedef = tree_flatten(x, is_leaf=lambda y: y is not x)
    if treedef_is_leaf(treedef):
        return None
    return kids, treedef


def _marked(x, pos, positions, keep, is_leaf):
    split = _children(x, is_leaf)
    if split is None:
        out = _Marker()
    else:
        kids, treedef = split
        out = tree_unflatten(treedef, [_marked(c, pos + (i,), positions, keep, is_leaf)
                                       for i, c in enumerate(kids)])
    keep.append(out)
    positions.setdefault(id(out), pos)
    return out


def _rebuilt(x, pos, chosen, is_leaf):
    if pos in chosen:
        return chosen[pos](x)
    split = _children(x, is_leaf)
    if split is None:
        return x
    kids, treedef = split
    return tree_unflatten(treedef, [_rebuilt(c, pos + (i,), chosen, is_leaf)
                                    for i, c in enumerate(kids)])


_MISSING = object()


def tree_at(where, pytree, replace=_MISSING, replace_fn=_MISSING, is_leaf=None):
    """A copy of `pytree` with the nodes `where` selects replaced (how frozen modules are
    changed).

    Args:
        where: `pytree -> node` or `-> sequence of nodes`, e.g. `lambda m: m.layers[0].weight`
            or `lambda m: (m.weight, m.bias)`; the nodes may be leaves or subtrees.
        pytree: the tree to copy.
        replace: the new value (a sequence of values when `where` returns several nodes).
        replace_fn: or a function `old node -> new node`.
        is_leaf: optional predicate; needed to select a None (e.g. `is_leaf=lambda x: x is
            None`), which otherwise is an empty subtree with no identity.
    Returns:
        The new pytree; `pytree` is unchanged.
    Raises:
        TypeError: unless exactly one of `replace`/`replace_fn` is given.
        ValueError: when `where` returns something that is not a node of the tree, or the
            number of replacements differs.

    Example:
        >>> tree_at(lambda t: t[1], (1, 2, 3), replace=20)
        (1, 20, 3)
    """
    if (replace is _MISSING) == (replace_fn is _MISSING):
        raise user_error(TypeError, "tree_at: pass exactly one of replace= and replace_fn=")
    positions, keep = {}, []
    marked = _marked(pytree, (), positions, keep, is_leaf)
    picked = where(marked)
    if id(picked) in positions:  # a node of the tree (even a list or tuple) is one node
        nodes, single = [picked], True
    else:
        try:
            nodes, single = list(picked), False
        except TypeError:
            nodes, single = [picked], True
    pos = []
    for n in nodes:
        if id(n) not in positions:
            raise user_error(ValueError, "tree_at: `where` must return nodes of the pytree it "
                             f"is given (or a sequence of them), got {type(n).__name__} "
                             f"{n!r:.60}; to select a None leaf pass is_leaf=lambda x: x is "
                             "None")
        pos.append(positions[id(n)])
    if replace_fn is not _MISSING:
        fns = [replace_fn] * len(pos)
    else:
        values = [replace] if single else list(replace)
        if len(values) != len(pos):
            raise user_error(ValueError, f"tree_at: `where` selected {len(pos)} nodes but "
                             f"replace holds {len(values)} values")
        fns = [functools.partial(lambda v, _: v, v) for v in values]
    chosen = dict(zip(pos, fns, strict=True))
    return _rebuilt(pytree, (), chosen, is_leaf)


# Walking modules -----------------------------------------------------------------------------

def _is_module(x):
    return isinstance(x, Module)


def map_modules(fn, pytree):
    """Rebuild `pytree` with every Module `m` (innermost first) replaced by `fn(m)`; static
    fields are walked too, so a flag like `inference` can be changed."""
    def visit(x):
        if not isinstance(x, Module):
            return x
        new = object.__new__(type(x))
        for f in _fields(type(x)):
            v = x.__dict__[f.name]
            new.__dict__[f.name] = tree_map(visit, v, is_leaf=_is_module)
        return fn(new)
    return tree_map(visit, pytree, is_leaf=_is_module)


def replace_fields(module, **changes):
    """A copy of `module` with some fields changed, without running its `__init__`."""
    new = object.__new__(type(module))
    new.__dict__.update(module.__dict__)
    new.__dict__.update(changes)
    return new


def inference_mode(pytree, value=True):
    """Set the `inference` field of every module in `pytree` (Dropout, BatchNorm, ...) to
    `value`; as `eqx.nn.inference_mode`. Returns the new pytree.

    Example:
        >>> model = inference_mode(model)      # dropout off, batch norm uses running stats
    """
    def flip(m):
        if any(f.name == "inference" for f in _fields(type(m))):
            return replace_fields(m, inference=value)
        return m
    return map_modules(flip, pytree)


def count_params(tree, filter_spec=is_array):
    """The number of array elements in `tree` (e.g. a model) whose leaves `filter_spec`
    selects: `count_params(model)`, or `count_params(trainable, is_inexact_array)`."""
    kept = tree_leaves(filter(tree, filter_spec), is_leaf=_with_keys(None))
    return int(sum(int(np.prod(x.shape)) if hasattr(x, "shape") else 1 for x in kept))


parameter_count = count_params


# Filtered transformations --------------------------------------------------------------------

class _Static:
    """The non-array leaves of a call and where they go: hashable, a jit static argument."""

    __slots__ = ("_hash", "leaves", "mask", "treedef")

    def __init__(self, treedef, leaves, mask, fname):
        self.treedef, self.leaves, self.mask = treedef, leaves, mask
        try:
            self._hash = hash((treedef, leaves, mask))
        except TypeError:
            bad = next(x for x in leaves if not _hashable(x))
            raise user_error(TypeError, f"{fname}: every non-array argument must be hashable "
                             f"(it is a compile-time constant), got {type(bad).__name__} "
                             f"{bad!r:.60}") from None

    def __hash__(self):
        return self._hash

    def __eq__(self, other):
        return (isinstance(other, _Static) and self.treedef == other.treedef
                and self.mask == other.mask and len(self.leaves) == len(other.leaves)
                and all(a is b or (type(a) is type(b) and a == b)
                        for a, b in zip(self.leaves, other.leaves)))


def _hashable(x):
    try:
        hash(x)
    except TypeError:
        return False
    return True


def _split_call(fun):
    """A callable as (pytree, caller): a module's bound method exposes its module."""
    if inspect.ismethod(fun) and isinstance(fun.__self__, Module):
        return (fun.__func__, fun.__self__), lambda t, a, k: t[0](t[1], *a, **k)
    return fun, lambda f, a, k: f(*a, **k)


def _weak(x):
    return bool(getattr(getattr(x, "aval", None), "weak_type", False))


class _FilterJit:
    def __init__(self, fun):
        self._fun_tree, self._call = _split_call(fun)
        self._out = {}
        self._jitted = jit(self._run, static_argnums=(1, 2))
        functools.update_wrapper(self, fun, updated=())

    def _run(self, dynamic, static, signature):
        leaves = [d if m else s for d, s, m in zip(dynamic, static.leaves, static.mask)]
        fun_tree, args, kwargs = tree_unflatten(static.treedef, leaves)
        out = self._call(fun_tree, args, kwargs)
        out_leaves, out_def = tree_flatten(out)
        mask = tuple(is_array(x) for x in out_leaves)
        # the non-array outputs may depend on shapes: keep them per (static, signature)
        out_static = [None if m else x for x, m in zip(out_leaves, mask)]
        self._out[static, signature] = (out_def, out_static, mask)
        return [x if m else None for x, m in zip(out_leaves, mask)]

    def __call__(self, *args, **kwargs):
        leaves, treedef = tree_flatten((self._fun_tree, args, kwargs))
        mask = tuple(is_array(x) for x in leaves)
        static = _Static(treedef, tuple(None if m else x for x, m in zip(leaves, mask)), mask,
                         "filter_jit")
        dynamic = [x if m else None for x, m in zip(leaves, mask)]
        signature = tuple(None if x is None else (np.shape(x), str(x.dtype), _weak(x))
                          for x in dynamic)
        out_dyn = self._jitted(dynamic, static, signature)
        out_def, out_static, out_mask = self._out[static, signature]
        merged = [d if m else s for d, s, m in zip(out_dyn, out_static, out_mask)]
        return tree_unflatten(out_def, merged)

    def __get__(self, instance, owner):
        return self if instance is None else functools.partial(self, instance)


def filter_jit(fun=None, *, donate="none"):
    """`jit` for functions of arbitrary pytrees: array leaves are traced, every other leaf
    (ints, strings, functions, modules' static parts) is a compile-time constant; outputs may
    hold non-array leaves too. `filter_jit(model.__call__)` traces the model's arrays.

    Args:
        fun: the function (or a module, or a module's bound method).
        donate: only "none" (buffers are never donated).
    Returns:
        The wrapped function.
    """
    if donate != "none":
        raise user_error(ValueError, f"filter_jit: donate={donate!r} is not supported; only "
                         "'none' (use mt.jit(..., donate_argnums=...) to donate buffers)")
    if fun is None:
        return functools.partial(filter_jit, donate=donate)
    return _FilterJit(fun)


def _diff_split(fname, x):
    diff, nondiff = partition(x, is_inexact_array)
    if not tree_leaves(diff):
        raise user_error(TypeError, f"{fname}: the first argument has no floating-point arrays "
                         "to differentiate")
    return diff, nondiff


def filter_grad(fun, *, has_aux=False):
    """`grad` with respect to the floating-point arrays of the first argument (any pytree,
    e.g. a model); its other leaves and the other arguments are held constant.

    Returns:
        A function returning a pytree shaped like the first argument, with the gradients at
        its inexact arrays and None elsewhere (`(grads, aux)` with `has_aux`).

    Example:
        >>> grads = filter_grad(lambda m, x, y: mnp.mean((m(x) - y) ** 2))(model, x, y)
    """
    @functools.wraps(fun)
    def wrapper(x, *args, **kwargs):
        diff, nondiff = _diff_split("filter_grad", x)
        return grad(lambda d: fun(combine(d, nondiff), *args, **kwargs), has_aux=has_aux)(diff)
    return wrapper


def filter_value_and_grad(fun, *, has_aux=False):
    """`value_and_grad` over the inexact arrays of the first argument, as `filter_grad`:
    returns `(value, grads)` (`((value, aux), grads)` with `has_aux`)."""
    @functools.wraps(fun)
    def wrapper(x, *args, **kwargs):
        diff, nondiff = _diff_split("filter_value_and_grad", x)
        return value_and_grad(lambda d: fun(combine(d, nondiff), *args, **kwargs),
                              has_aux=has_aux)(diff)
    return wrapper
