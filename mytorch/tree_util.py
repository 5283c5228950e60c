"""`mytorch.tree_util`: pytree utilities (the implementation lives in mytorch.core), plus the
class decorators JAX offers for registering node types and `Partial`."""

import functools

from mytorch.core.tree_util import *  # noqa: F401,F403
from mytorch.core.tree_util import __all__ as _core_all
from mytorch.core.tree_util import register_pytree_node, register_pytree_with_keys

__all__ = list(_core_all) + ["register_pytree_node_class", "register_pytree_with_keys_class",
                             "Partial"]


def _require(cls, decorator, methods, message):
    """Raise a TypeError naming `decorator` unless `cls` has every one of `methods`."""
    if not all(callable(getattr(cls, m, None)) for m in methods):
        raise TypeError(f"{decorator}: {cls.__name__} must define {message}")


def register_pytree_node_class(cls):
    """Class decorator: register `cls` as a pytree node through its own methods.

    `cls` defines ``tree_flatten(self) -> (children, aux_data)`` and the classmethod
    ``tree_unflatten(cls, aux_data, children) -> instance``; `aux_data` must be hashable.
    Returns `cls`, so it can be used as ``@register_pytree_node_class``.

    Example:
        >>> @register_pytree_node_class
        ... class Pair:
        ...     def __init__(self, a, b): self.a, self.b = a, b
        ...     def tree_flatten(self): return (self.a, self.b), None
        ...     @classmethod
        ...     def tree_unflatten(cls, aux, children): return cls(*children)
        >>> tree_leaves(Pair(1, (2, 3)))
        [1, 2, 3]
    """
    _require(cls, "register_pytree_node_class", ("tree_flatten", "tree_unflatten"),
             "a method tree_flatten(self) -> (children, aux_data) and a classmethod "
             "tree_unflatten(cls, aux_data, children)")
    register_pytree_node(cls, lambda x: x.tree_flatten(), cls.tree_unflatten)
    return cls


def register_pytree_with_keys_class(cls):
    """Class decorator: register `cls` as a pytree node whose children carry path keys.

    `cls` defines ``tree_flatten_with_keys(self) -> ([(key, child), ...], aux_data)`` and
    the classmethod ``tree_unflatten(cls, aux_data, children)``; an optional
    ``tree_flatten(self)`` is used where keys are not needed. Returns `cls`.

    Example:
        >>> @register_pytree_with_keys_class
        ... class P:
        ...     def __init__(self, a): self.a = a
        ...     def tree_flatten_with_keys(self): return [(GetAttrKey('a'), self.a)], None
        ...     @classmethod
        ...     def tree_unflatten(cls, aux, children): return cls(*children)
        >>> keystr(tree_leaves_with_path(P(5))[0][0])
        '.a'
    """
    _require(cls, "register_pytree_with_keys_class", ("tree_flatten_with_keys", "tree_unflatten"),
             "a method tree_flatten_with_keys(self) -> ([(key, child), ...], aux_data) and a "
             "classmethod tree_unflatten(cls, aux_data, children)")
    flatten = (lambda x: x.tree_flatten()) if hasattr(cls, "tree_flatten") else None
    register_pytree_with_keys(cls, lambda x: x.tree_flatten_with_keys(), cls.tree_unflatten,
                              flatten)
    return cls


class Partial(functools.partial):
    """`functools.partial` as a pytree: the bound arguments (positional and keyword) are its
    children, the function its (hashable) aux data. So a function closing over arrays can be
    passed to and returned from jitted functions; `vjp` and `linearize` return one.

    Example:
        >>> p = Partial(max, 1, 2)
        >>> tree_leaves(p), p(3)
        ([1, 2], 3)
    """

    def __new__(cls, func, *args, **kwargs):
        if isinstance(func, functools.partial):
            # functools.partial would merge the arguments of `func` into this one's: only
            # the arguments given here are this pytree's children
            func = _HashableCallable(func)
        return super().__new__(cls, func, *args, **kwargs)


class _HashableCallable:
    """A callable (a functools.partial) as aux data: equal when the callables are."""

    __slots__ = ("fun",)

    def __init__(self, fun):
        self.fun = fun

    def __call__(self, *args, **kwargs):
        return self.fun(*args, **kwargs)

    @property
    def __name__(self):
        return getattr(self.fun, "__name__", None) or getattr(self.fun.func, "__name__", "")

    def __eq__(self, other):
        return isinstance(other, _HashableCallable) and self.fun == other.fun

    def __hash__(self):
        return hash(self.fun)

    def __repr__(self):
        return f"_HashableCallable({self.fun!r})"


register_pytree_node(Partial, lambda p: ((p.args, p.keywords), p.func),
                     lambda func, children: Partial(func, *children[0], **children[1]))
