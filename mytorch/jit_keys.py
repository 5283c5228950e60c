"""Cache keys of jit's fast paths: what a cache hit computes from the arguments instead of
flattening them and building their avals (see JitFunction.__call__).

A positional key is each array argument's (shape, dtype, weak type, device); a listed key
(arguments that are arrays or plain lists/tuples of arrays, as an optimiser step's
parameter lists) starts with a marker and the arguments' structure, then the same four
fields per leaf.
"""

from mytorch.core.array import ArrayImpl


def fast_key(args):
    """The positional key of `args`, all arrays."""
    key = []
    for a in args:
        b = a._buf
        key += (b.shape, b.dtype, a._weak, a._device)
    return tuple(key)


def list_leaves(args, static):
    """The leaves of `args` when each is an array or a plain list or tuple of arrays (as an
    optimiser step's parameter lists), in tree_flatten's order; None otherwise, or when
    some arguments are static."""
    if static:
        return None
    leaves = []
    for a in args:
        t = type(a)
        if t is ArrayImpl:
            leaves.append(a)
        elif t is list or t is tuple:
            for x in a:
                if type(x) is not ArrayImpl:
                    return None
            leaves += a
        else:
            return None
    return leaves


def list_key(args, leaves):
    """The key of `list_leaves` arguments: a marker (so it never equals a
    positional key, which starts with a shape), each argument's structure, then every
    leaf's shape, dtype, weak type and device."""
    key = [LISTED, tuple(None if type(a) is ArrayImpl else (type(a), len(a)) for a in args)]
    for x in leaves:
        b = x._buf
        key += (b.shape, b.dtype, x._weak, x._device)
    return tuple(key)


LISTED = object()
