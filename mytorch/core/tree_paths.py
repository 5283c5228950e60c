"""Key path entries: how `tree_flatten_with_path` names each step from the root of a pytree
to a leaf (re-exported by mytorch.core.tree_util)."""

import dataclasses

__all__ = ["SequenceKey", "DictKey", "GetAttrKey", "FlattenedIndexKey"]


# Key path entries ----------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True, slots=True)
class SequenceKey:
    """Path entry for child `idx` of a tuple or list: ``str(SequenceKey(0)) == '[0]'``."""

    idx: int

    def __str__(self):
        return f"[{self.idx!r}]"


@dataclasses.dataclass(frozen=True, slots=True)
class DictKey:
    """Path entry for the value under `key` of a dict: ``str(DictKey('a')) == "['a']"``."""

    key: object

    def __str__(self):
        return f"[{self.key!r}]"


@dataclasses.dataclass(frozen=True, slots=True)
class GetAttrKey:
    """Path entry for attribute `name` (namedtuple, dataclass): ``str(GetAttrKey('x')) == '.x'``.
    """

    name: str

    def __str__(self):
        return f".{self.name}"


@dataclasses.dataclass(frozen=True, slots=True)
class FlattenedIndexKey:
    """Path entry for child `key` of a node registered without keys.

    ``str(FlattenedIndexKey(1)) == '[<flat index 1>]'``.
    """

    key: int

    def __str__(self):
        return f"[<flat index {self.key}>]"
