"""mt.nn.Module: Equinox-style modules, immutable dataclasses that are pytrees.

    class Affine(mt.nn.Module):
        weight: mt.Array
        bias: mt.Array
        name: str = mt.nn.field(static=True, default="affine")

        def __call__(self, x):
            return x * self.weight + self.bias

A subclass declares its fields with annotations. Its `__init__` (written by hand, or generated
from the fields as a dataclass would) sets each field once; after it returns the instance is
frozen. Non-static fields are the pytree's children (key paths `.name`); static fields go into
the treedef and must be hashable. Filtering, state and the filtered transformations are
re-exported here from `_filtering` and `_state`.
"""

import abc
import dataclasses
import threading

import numpy as np

from mytorch.core.array import Array
from mytorch.core.source_info import user_error
from mytorch.core.trace import Tracer
from mytorch.core.tree_nodes import declare_fields
from mytorch.core.tree_util import GetAttrKey, register_pytree_with_keys, tree_flatten

__all__ = [
    "Module", "State", "StateIndex", "StatefulLayer", "combine", "count_params",
    "delete_init_state", "field", "filter", "filter_grad", "filter_jit",
    "filter_value_and_grad", "inference_mode", "is_array", "is_inexact_array",
    "make_with_state", "parameter_count", "partition", "static_field", "tree_at", "tree_equal",
]


def field(*, static=False, converter=None, **kwargs):
    """A module field, as `dataclasses.field` (same keyword arguments: `default`,
    `default_factory`, `init`, `repr`, ...).

    Args:
        static: keep the value in the treedef instead of as a child: it is not a leaf, is
            not traced by `jit`/`grad`/`vmap`, and must be hashable (sizes, activation
            functions, flags).
        converter: a function applied to the value once `__init__` has returned (e.g.
            `converter=mnp.asarray`).
    Returns:
        A `dataclasses.Field` for the class body.
    """
    metadata = dict(kwargs.pop("metadata", None) or {})
    metadata["static"] = bool(static)
    if converter is not None:
        metadata["converter"] = converter
    return dataclasses.field(metadata=metadata, **kwargs)


def static_field(**kwargs):
    """`field(static=True, **kwargs)`: a hyperparameter kept in the treedef."""
    return field(static=True, **kwargs)


class _Initialising(threading.local):
    def __init__(self):
        self.ids = set()


_initialising = _Initialising()


def _is_static(f):
    return f.metadata.get("static", False)


def _fields(cls):
    return cls.__dict__.get("_mt_fields", ())


class _ModuleMeta(abc.ABCMeta):
    """Runs `__init__` with assignment allowed, then converts, checks and freezes."""

    def __call__(cls, *args, **kwargs):
        self = cls.__new__(cls)
        _initialising.ids.add(id(self))
        try:
            cls.__init__(self, *args, **kwargs)
        finally:
            _initialising.ids.discard(id(self))
        _finish_init(cls, self)
        return self


def _finish_init(cls, self):
    for f in _fields(cls):
        if f.name not in self.__dict__ and f.default is not dataclasses.MISSING:
            object.__setattr__(self, f.name, f.default)
        elif f.name not in self.__dict__ and f.default_factory is not dataclasses.MISSING:
            object.__setattr__(self, f.name, f.default_factory())
        if f.name not in self.__dict__:
            raise user_error(TypeError, f"{cls.__name__}.__init__ did not set the field "
                             f"{f.name!r}: every field must be given a value")
        conv = f.metadata.get("converter")
        if conv is not None:
            object.__setattr__(self, f.name, conv(self.__dict__[f.name]))
        if _is_static(f):
            try:
                hash(self.__dict__[f.name])
            except TypeError:
                raise user_error(TypeError, f"{cls.__name__}: static field {f.name!r} must be "
                                 f"hashable (it is part of the treedef), got "
                                 f"{type(self.__dict__[f.name]).__name__}; store arrays as "
                                 "ordinary fields, or convert lists to tuples") from None
    for klass in reversed(cls.__mro__):
        check = klass.__dict__.get("__check_init__")
        if check is not None:
            check(self)


def _flatten_with_keys(fields):
    data = [f.name for f in fields if not _is_static(f)]
    meta = [f.name for f in fields if _is_static(f)]

    def flatten(x):
        d = x.__dict__
        return [d[n] for n in data], tuple([d[n] for n in meta])

    def flatten_with_keys(x):
        d = x.__dict__
        return [(GetAttrKey(n), d[n]) for n in data], tuple([d[n] for n in meta])

    return data, meta, flatten, flatten_with_keys


def _register(cls):
    data, meta, flatten, flatten_with_keys = _flatten_with_keys(_fields(cls))

    def unflatten(aux, children):
        # rebuilt without running __init__ (which may need a key), as Equinox does
        self = object.__new__(cls)
        d = self.__dict__
        d.update(zip(meta, aux))
        d.update(zip(data, children))
        return self

    register_pytree_with_keys(cls, flatten_with_keys, unflatten, flatten)
    declare_fields(cls, data, meta)  # jit's generated flatteners read __dict__ directly


class Module(metaclass=_ModuleMeta):
    """Base class of all layers: a frozen dataclass registered as a pytree.

    Fields are declared with annotations; `field(static=True)` keeps a hyperparameter in the
    treedef. Instances are immutable after `__init__` (use `tree_at` to make a changed copy),
    compare equal when their pytrees are equal, and can be passed to and returned from `jit`,
    `grad` and `vmap` like any pytree. An optional `__check_init__(self)` runs after
    `__init__` for validation.

    Example:
        >>> class Scale(Module):
        ...     factor: Array
        ...     def __call__(self, x):
        ...         return self.factor * x
        >>> s = Scale(mnp.array(2.0)); mt.grad(lambda m, x: m(x))(s, 3.0).factor
        Array(3., dtype=float32)
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        own_init = "__init__" in cls.__dict__
        # a class without its own __init__ whose parents' __init__ was generated gets a
        # generated one covering all fields; a hand-written parent __init__ is inherited
        generated = not own_init and all(getattr(b, "_mt_generated_init", True)
                                         for b in cls.__mro__[1:] if issubclass(b, Module)
                                         and b is not Module)
        dataclasses.dataclass(cls, init=generated, repr=False, eq=False)
        cls._mt_generated_init = generated
        cls._mt_fields = tuple(f for f in dataclasses.fields(cls)
                               if f.name not in ("_mt_generated_init", "_mt_fields"))
        _register(cls)

    def __setattr__(self, name, value):
        if id(self) in _initialising.ids:
            if name not in {f.name for f in _fields(type(self))}:
                raise user_error(AttributeError, f"{type(self).__name__}.__init__ set "
                                 f"{name!r}, which is not a field: declare it in the class "
                                 f"body with an annotation (`{name}: ...`)")
            object.__setattr__(self, name, value)
            return
        raise user_error(dataclasses.FrozenInstanceError, f"cannot assign to field {name!r} "
                         f"of {type(self).__name__}: modules are immutable after __init__; use "
                         f"mt.nn.tree_at(lambda m: m.{name}, module, new_value) for a "
                         "changed copy")

    def __delattr__(self, name):
        raise user_error(dataclasses.FrozenInstanceError, f"cannot delete field {name!r} of "
                         f"{type(self).__name__}: modules are immutable")

    def __eq__(self, other):
        return tree_equal(self, other)

    def __hash__(self):
        leaves, treedef = tree_flatten(self)
        try:
            return hash((treedef, tuple(leaves)))
        except TypeError:
            raise user_error(TypeError, f"{type(self).__name__} is unhashable: it holds "
                             "arrays; only modules without array leaves (e.g. Lambda, "
                             "Identity) can be static arguments or dict keys") from None

    def __repr__(self):
        return _pformat(self, 0)


# Equality and printing -----------------------------------------------------------------------

def tree_equal(*pytrees):
    """True when all pytrees have the same structure (static fields included) and equal
    leaves: arrays compare by shape, dtype and values (a traced array only equals itself).
    """
    flat = [tree_flatten(t) for t in pytrees]
    first_leaves, first_def = flat[0]
    for leaves, treedef in flat[1:]:
        if treedef != first_def:
            return False
        for a, b in zip(first_leaves, leaves, strict=True):
            if not _leaf_equal(a, b):
                return False
    return True


def _leaf_equal(a, b):
    if a is b:
        return True
    if _array_like(a) or _array_like(b):
        if not (_array_like(a) and _array_like(b)):
            return False
        if isinstance(a, Tracer) or isinstance(b, Tracer):
            return False
        if np.shape(a) != np.shape(b) or np.asarray(a).dtype != np.asarray(b).dtype:
            return False
        return bool(np.array_equal(np.asarray(a), np.asarray(b)))
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return False


def _array_like(x):
    return isinstance(x, (Array, np.ndarray, np.generic))


_SHORT = {"float": "f", "int": "i", "uint": "u", "complex": "c", "bool": "bool",
          "bfloat": "bf"}


def _array_str(x):
    dt = str(np.dtype(x.dtype)) if not hasattr(x, "aval") else str(x.dtype)
    for long, short in _SHORT.items():
        if dt.startswith(long):
            dt = short + dt[len(long):]
            break
    return f"{dt}[{','.join(str(d) for d in x.shape)}]"


def _pformat(x, indent):
    if _array_like(x) and hasattr(x, "shape"):
        return _array_str(x)
    if isinstance(x, Module):
        parts = [(f.name, x.__dict__[f.name]) for f in _fields(type(x)) if f.repr]
        return _join(type(x).__name__ + "(", [f"{k}={_pformat(v, indent + 2)}"
                                              for k, v in parts], ")", indent)
    if isinstance(x, (list, tuple)) and type(x) in (list, tuple):
        close = "]" if isinstance(x, list) else (",)" if len(x) == 1 else ")")
        opn = "[" if isinstance(x, list) else "("
        return _join(opn, [_pformat(v, indent + 2) for v in x], close, indent)
    if isinstance(x, dict) and type(x) is dict:
        return _join("{", [f"{k!r}: {_pformat(v, indent + 2)}" for k, v in x.items()], "}",
                     indent)
    if callable(x) and hasattr(x, "__qualname__") and not isinstance(x, type):
        return f"<function {x.__qualname__}>"
    return repr(x)


def _join(opn, items, close, indent):
    one = opn + ", ".join(items) + close
    if len(one) + indent <= 100 and "\n" not in one:
        return one
    pad = " " * (indent + 2)
    body = ",\n".join(pad + s for s in items)
    return f"{opn}\n{body}\n{' ' * indent}{close}"


from mytorch.nn._filtering import (
    combine,
    count_params,
    filter,
    filter_grad,
    filter_jit,
    filter_value_and_grad,
    inference_mode,
    is_array,
    is_inexact_array,
    parameter_count,
    partition,
    tree_at,
)
from mytorch.nn._state import (
    State,
    StatefulLayer,
    StateIndex,
    delete_init_state,
    make_with_state,
)
