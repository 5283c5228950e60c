"""Batching rules for user-defined primitives: `def_batching` and two ready-made rules.

A batching rule says how to run a primitive on operands that carry an extra (vmapped)
axis. `def_batching` takes one in JAX's form, `rule(args, dims, **params) -> (out, out_dim)`,
where `dims[i]` is the position of the batch axis in `args[i]` or `mx.not_mapped` (None).
Two common cases need no rule of their own:

- `def_broadcasting_batching(prim)`: the primitive follows NumPy broadcasting over its
  operands (its result has their broadcast shape), like `bias_gelu(x [..., n], b [n])`;
- `def_vectorized_batching(prim)`: the kernel treats leading axes as independent
  examples (it reads only trailing axes), like `top_k_indices(x [..., n], k)`.
"""

from mytorch.core.trace import aval_of
from mytorch.lax import structural as st
from mytorch.lax._batching import bdim_at_front, moveaxis
from mytorch.transforms.batching import not_mapped

__all__ = ["def_batching", "def_broadcasting_batching", "def_vectorized_batching",
           "not_mapped"]


def def_batching(prim, rule=None):
    """Define `prim`'s batching rule, used by vmap (usable as a decorator).

    Args:
      prim: an `ExtensionPrimitive`.
      rule: `rule(args, dims, **params) -> (out, out_dim)`: `args` are the operands, some
        with a batch axis at `dims[i]` (an int), the others unbatched (`dims[i]` is
        `mx.not_mapped`); at least one is batched. It returns the batched result and the
        position of its batch axis (lists of both for several results). Write it with
        mytorch operations, binding `prim` on operands with the batch folded in.

    Returns:
      `rule`.
    """
    if rule is None:
        return lambda r: def_batching(prim, r)

    def batching(axis, args, dims, **params):
        return rule(list(args), list(dims), **params)

    prim.def_batching(batching)
    return rule


def def_broadcasting_batching(prim):
    """`prim` follows NumPy broadcasting: its result has the broadcast shape of its
    operands, and each result element depends on the operand elements at its position.
    The batch axis goes first in every batched operand (padded with size-1 axes to the
    result's rank); unbatched operands broadcast as they did."""

    def rule(axis, args, dims, **params):
        rank = max(aval_of(a).ndim - (d is not not_mapped) for a, d in zip(args, dims,
                                                                            strict=True))
        ins = []
        for x, d in zip(args, dims, strict=True):
            if d is not_mapped:
                ins.append(x)
                continue
            x = moveaxis(x, d, 0)
            shape = aval_of(x).shape
            pad = rank - (len(shape) - 1)
            if pad:
                x = st.reshape(x, (shape[0],) + (1,) * pad + shape[1:])
            ins.append(x)
        out = prim.bind(*ins, **params)
        if prim.multiple_results:
            return out, [0] * len(out)
        return out, 0

    prim.def_batching(rule)


def def_vectorized_batching(prim):
    """`prim`'s kernel maps over leading axes: operands of one more leading axis give
    results of one more leading axis. The batch axis goes first in every operand
    (unbatched operands are broadcast along it) and the result is batched on axis 0."""

    def rule(axis, args, dims, **params):
        ins = [bdim_at_front(x, d, axis.size) for x, d in zip(args, dims, strict=True)]
        out = prim.bind(*ins, **params)
        if prim.multiple_results:
            return out, [0] * len(out)
        return out, 0

    prim.def_batching(rule)
