"""Explicit state for stateful layers (Equinox's design): a `StateIndex` inside the model
names a slot; a separate `State` pytree holds the values and is threaded through calls."""

import itertools

import numpy as np

from mytorch.core.source_info import user_error
from mytorch.core.tree_util import (
    DictKey,
    register_pytree_with_keys,
    tree_flatten,
    tree_leaves,
)
from mytorch.nn._filtering import map_modules, replace_fields
from mytorch.nn.module import Module, field

_markers = itertools.count()


class StateIndex(Module):
    """A slot in a `State`, holding its initial value until `make_with_state` moves it out.

    Args:
        init: a pytree of arrays, the slot's initial value.
    """

    marker: int = field(static=True)
    init: object

    def __init__(self, init):
        self.marker = next(_markers)
        self.init = init


def _is_index(x):
    return isinstance(x, StateIndex)


class State:
    """The values of every `StateIndex` in a model: a pytree, immutable.

    Args:
        model: the model whose `StateIndex` slots (with their initial values) it holds.

    `state.get(index)` reads a slot; `state.set(index, value)` returns a new State.
    """

    __slots__ = ("_values",)

    def __init__(self, model):
        values = {}
        for leaf in tree_leaves(model, is_leaf=_is_index):
            if _is_index(leaf):
                if leaf.init is None:
                    raise user_error(ValueError, "State: this model's initial state was "
                                     "already moved out (by make_with_state); build the "
                                     "State from the freshly constructed model")
                values[leaf.marker] = leaf.init
        object.__setattr__(self, "_values", values)

    @classmethod
    def _from(cls, values):
        self = object.__new__(cls)
        object.__setattr__(self, "_values", values)
        return self

    def get(self, index):
        """The value of slot `index` (a StateIndex)."""
        if not _is_index(index):
            raise user_error(TypeError, f"State.get: expected a StateIndex, got "
                             f"{type(index).__name__}")
        if index.marker not in self._values:
            raise user_error(KeyError, "State.get: this StateIndex does not belong to the "
                             "model this State was made from")
        return self._values[index.marker]

    def set(self, index, value):
        """A new State with slot `index` holding `value` (same structure, shapes and dtypes
        as before)."""
        old = self.get(index)
        old_leaves, old_def = tree_flatten(old)
        new_leaves, new_def = tree_flatten(value)
        if old_def != new_def:
            raise user_error(ValueError, f"State.set: the new value's structure {new_def} "
                             f"differs from the slot's {old_def}")
        for a, b in zip(old_leaves, new_leaves):
            if np.shape(a) != np.shape(b) or np.dtype(a.dtype) != np.dtype(b.dtype):
                raise user_error(ValueError, f"State.set: the new value {_desc(b)} differs "
                                 f"from the slot's {_desc(a)} in shape or dtype")
        values = dict(self._values)
        values[index.marker] = value
        return State._from(values)

    def __setattr__(self, name, value):
        raise user_error(AttributeError, "State is immutable: use state.set(index, value)")

    def __repr__(self):
        return f"State({len(self._values)} slots)"


def _desc(x):
    return f"{np.dtype(x.dtype).name}{list(np.shape(x))}"


def _state_flatten_with_keys(s):
    keys = tuple(sorted(s._values))
    return [(DictKey(k), s._values[k]) for k in keys], keys


register_pytree_with_keys(State, _state_flatten_with_keys,
                          lambda keys, children: State._from(dict(zip(keys, children))),
                          lambda s: ([s._values[k] for k in sorted(s._values)],
                                     tuple(sorted(s._values))))


class StatefulLayer(Module):
    """Base of layers called as `y, state = layer(x, state)` (BatchNorm); `Sequential`
    threads `state` through the layers whose `is_stateful()` is true."""

    def is_stateful(self):
        """Whether calls take and return a `State` (True for stateful layers)."""
        return True


def delete_init_state(model):
    """`model` with the initial values of its `StateIndex` slots removed (they live in the
    State), so its leaves are only its parameters."""
    return map_modules(lambda m: replace_fields(m, init=None) if _is_index(m) else m, model)


def make_with_state(make_model):
    """Wrap a constructor: `make_with_state(BatchNorm)(3, "batch") -> (model, state)`.

    Returns:
        A function of the constructor's arguments returning the model (its initial state
        moved out) and its `State`.
    """
    def make(*args, **kwargs):
        model = make_model(*args, **kwargs)
        state = State(model)
        return delete_init_state(model), state
    return make
