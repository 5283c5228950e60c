"""Named operand groups of call and loop primitives, in place of index arithmetic.

A loop equation's flat operand list is made of consecutive groups (scan: consts, carry,
xs; while: cond consts, body consts, carry). `operand_groups` makes a small tuple type for
one such layout:

    ScanOperands = operand_groups("ScanOperands", "consts carry xs")
    ops = ScanOperands.split(args, consts=num_consts, carry=num_carry)  # xs: the rest
    ops.carry                          # a list
    unknown = ScanOperands.split(flags, **ops.sizes())
    ops.select(unknown, False).flat()  # the known operands, in order

The same type splits avals, variables, tracers or per-operand flags, so a rule reads
`ops.xs` where it used to read `args[num_consts + num_carry:]`.
"""

import collections

__all__ = ["operand_groups"]


def operand_groups(name, fields):
    """A tuple type of consecutive named groups (lists); the last group takes the rest.

    Args:
      name: the type's name (shown in its repr and errors).
      fields: the group names, in operand order (a space-separated str or a sequence).

    Returns:
      A namedtuple subclass with `split(seq, **sizes)` (a classmethod; every group but the
      last needs its size), `flat()`, `sizes()`, `select(flags, keep=True)` and
      `replace(**groups)`.
    """
    base = collections.namedtuple(name, fields)

    class Groups(base):
        __slots__ = ()

        @classmethod
        def split(cls, seq, **sizes):
            """`seq` cut into the groups: sizes for all but the last group, as keywords."""
            seq, *heads = list(seq), *cls._fields[:-1]
            unknown = set(sizes) - set(cls._fields)
            missing = [f for f in heads if f not in sizes]
            if unknown or missing:
                raise TypeError(f"{name}.split: needs sizes for {', '.join(heads)}"
                                f"{'' if not unknown else f'; unknown {sorted(unknown)}'}")
            parts, at = [], 0
            for f in heads:
                n = sizes[f]
                if not isinstance(n, int) or n < 0:
                    raise ValueError(f"{name}.split: size of {f} must be a non-negative "
                                     f"int, got {n!r}")
                parts.append(seq[at:at + n])
                at += n
            if at > len(seq):
                raise ValueError(f"{name}.split: {len(seq)} operands, but the leading groups "
                                 f"need {at} ({', '.join(f'{f}={sizes[f]}' for f in heads)})")
            return cls(*parts, seq[at:])

        def flat(self):
            """The groups concatenated back into one list."""
            return [x for group in self for x in group]

        def sizes(self):
            """{group: length} of every group but the last (what `split` takes)."""
            return {f: len(g) for f, g in zip(self._fields[:-1], self)}

        def select(self, flags, keep=True):
            """The same groups holding only the entries whose flag (in `flags`, groups of
            bools of the same lengths) equals `keep`."""
            return type(self)(*[[x for x, f in zip(g, fg, strict=True) if bool(f) == keep]
                                for g, fg in zip(self, flags)])

        def replace(self, **groups):
            """A copy with the named groups replaced (as lists)."""
            return self._replace(**{k: list(v) for k, v in groups.items()})

    Groups.__name__ = Groups.__qualname__ = name
    return Groups
