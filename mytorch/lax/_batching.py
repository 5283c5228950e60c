"""Helpers for writing the batching rules that sit next to each primitive.

A batching rule has the signature (see mytorch/transforms/batching.py)

    rule(axis, args, dims, **params) -> (out, out_dim)      # lists for several results

where `axis.size` is the batch size and `dims[i]` is args[i]'s batch dimension or None.

    moveaxis(x, src, dst)           move one dimension (no-op when src == dst)
    bdim_at_front(x, dim, size)     the batch dimension at 0; unbatched x is broadcast
    bdim_to(x, dim, dst, size)      the batch dimension at dst; unbatched x is broadcast
    broadcast_batched(x, size)      a new leading batch dimension of `size`
    defvectorized(prim)             unary ops that act on each element (out dim = in dim)
    defbroadcasting(prim)           n-ary elementwise ops (operands share a shape or are 0-d)
    batch_call_jaxpr(...)           a call primitive's jaxpr, vectorised
"""

from mytorch.core.ad_util import add_any_p, zeros_p
from mytorch.core.trace import aval_of
from mytorch.lax.structural import broadcast_in_dim, transpose
from mytorch.transforms.batching import batch_jaxpr, not_mapped

__all__ = [
    "not_mapped", "moveaxis", "bdim_at_front", "bdim_to", "broadcast_batched",
    "defvectorized", "defbroadcasting", "batch_call_jaxpr", "shift_dims",
]


def moveaxis(x, src, dst):
    """`x` with dimension `src` moved to position `dst` (both non-negative)."""
    if src == dst:
        return x
    perm = [i for i in range(aval_of(x).ndim) if i != src]
    perm.insert(dst, src)
    return transpose(x, tuple(perm))


def broadcast_batched(x, size, dim=0):
    """`x` with a new batch dimension of `size` inserted at `dim`."""
    shape = aval_of(x).shape
    out = shape[:dim] + (size,) + shape[dim:]
    keep = tuple(i for i in range(len(out)) if i != dim)
    return broadcast_in_dim(x, out, keep)


def bdim_to(x, dim, dst, size):
    """`x` with its batch dimension at `dst`; an unbatched `x` is broadcast to `size`."""
    if dim is not_mapped:
        return broadcast_batched(x, size, dst)
    return moveaxis(x, dim, dst)


def bdim_at_front(x, dim, size):
    """`x` with its batch dimension first; an unbatched `x` is broadcast to `size`."""
    return bdim_to(x, dim, 0, size)


def shift_dims(dims, bdim):
    """Unbatched dimension numbers `dims` of an operand, renumbered for the operand with
    its batch dimension at `bdim`."""
    return tuple(d + 1 if d >= bdim else d for d in dims)


def defvectorized(prim):
    """`prim` acts on each element of its single operand independently."""

    def rule(axis, args, dims, **params):
        (x,), (d,) = args, dims
        return prim.bind(x, **params), d

    prim.def_batching(rule)
    return rule


def defbroadcasting(prim):
    """`prim` is elementwise over operands of one shape, where 0-d operands broadcast.

    When the batched operands agree on shape and batch dimension and the others are 0-d,
    the primitive runs as is; otherwise batch dimensions move to the front and operands
    that lack one are broadcast to the batched result shape.
    """

    def rule(axis, args, dims, **params):
        avals = [aval_of(x) for x in args]
        batched = [(a.shape, d) for a, d in zip(avals, dims) if d is not not_mapped]
        same = all(b == batched[0] for b in batched)
        unbatched_0d = all(a.ndim == 0 for a, d in zip(avals, dims) if d is not_mapped)
        if same and unbatched_0d:
            out = prim.bind(*args, **params)
            return out, batched[0][1]
        # the unbatched result shape: the largest operand shape with its batch dim removed
        shapes = [a.shape if d is not_mapped else a.shape[:d] + a.shape[d + 1:]
                  for a, d in zip(avals, dims)]
        out_shape = max(shapes, key=len)
        full = (axis.size, *out_shape)
        new_args = []
        for x, a, d, s in zip(args, avals, dims, shapes):
            if d is not_mapped:
                if a.ndim == 0:
                    new_args.append(x)
                    continue
                new_args.append(broadcast_batched(x, axis.size))
                continue
            x = moveaxis(x, d, 0)
            if len(s) != len(out_shape):  # a batched 0-d operand beside larger ones
                x = broadcast_in_dim(x, full, (0,))
            new_args.append(x)
        return prim.bind(*new_args, **params), 0

    prim.def_batching(rule)
    return rule


def batch_call_jaxpr(jaxpr, axis, in_dims, force_front=False, name="vmap"):
    """Vectorise a call primitive's constant-free jaxpr.

    Returns (jaxpr, consts, out_dims); with `force_front`, every output is batched along
    dimension 0 (unbatched ones are broadcast), so out_dims are all 0.
    """
    finish = None
    if force_front:
        def finish(outs, dims):
            return [bdim_at_front(o, d, axis.size) for o, d in zip(outs, dims)], \
                [0] * len(outs)
    return batch_jaxpr(jaxpr, axis, in_dims, finish, name)


# ---- rules of core's own primitives (they need lax's transpose and broadcast) -----------
def _add_any_batching(axis, args, dims):
    """add_any adds equal-shaped values: batch dims meet at the front."""
    (x, y), (dx, dy) = args, dims
    if dx == dy:
        return add_any_p.bind(x, y), dx
    return add_any_p.bind(bdim_at_front(x, dx, axis.size), bdim_at_front(y, dy, axis.size)), 0


def _zeros_batching(axis, args, dims, **params):
    """zeros has no operands, so it is never batched."""
    return zeros_p.bind(**params), not_mapped


add_any_p.def_batching(_add_any_batching)
zeros_p.def_batching(_zeros_batching)
