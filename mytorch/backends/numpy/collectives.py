"""Collectives in compiled NumPy code: each calls the replica's communicator.

pmap compiles its body once per device with `CompileOptions(communicators=((axis name,
Communicator), ...))`: the emitters below hoist this replica's communicator into the
generated code and call it on the operand, moving and reshaping axes to and from the
communicator's leading-axis layout (see `mytorch.distributed.communicator`). A collective
over several names (psum(x, ('i', 'j'))) runs over each name's communicator in turn.

Results are never reused by the buffer planner (the communicator's buffers and the views
taken of them are plain expressions to it).

A pmap inside a pmap's body runs SPMD-flattened (see `pmap_rules._Replicas`): where the
code has a communicator for the inner pmap's axis, the inner pmap is its body, compiled as
a sub-function, run on this device's slice of the mapped operands (its rank along the inner
axis); each mapped result is put back together by an all_gather over the inner axis, so
the code after it sees the whole value (a copy of the n2 slices on every device of the
row: the cost of flattening). Elsewhere (an eager pmap under jit) its kernel runs it.
"""

import functools

import numpy as np

from mytorch.backends.numpy.emitters import emitter
from mytorch.core.source_info import user_error
from mytorch.lax import parallel as par
from mytorch.pmap_rules import pmap_p

__all__ = []


def _communicators(g, eqn):
    """The communicators of the equation's axis names, in order."""
    comms = dict(g.options.communicators)
    names = eqn.params["axis_name"]
    missing = [n for n in names if n not in comms]
    if missing:
        raise user_error(ValueError, f"{eqn.primitive.name} over axis {missing[0]!r} compiled "
                                     f"without a communicator for it (the axes with one: "
                                     f"{list(comms)}); collectives run inside pmap")
    return tuple(comms[n] for n in names)


def _call(g, eqn, args, fn, **params):
    """`fn(comms, x, **params)` hoisted into the generated code, on operand 0."""
    f = g.hoist(functools.partial(fn, _communicators(g, eqn), **params), eqn.primitive.name)
    return f"{f}(np.asarray({args[0]}))"


def _allreduce(comms, x, op):
    for c in comms:
        x = c.allreduce(x, op)
    return x


@emitter(par.psum_p)
def _psum(g, eqn, args):
    return _call(g, eqn, args, _allreduce, op="sum")


@emitter(par.pmax_p)
def _pmax(g, eqn, args):
    return _call(g, eqn, args, _allreduce, op="max")


@emitter(par.pmin_p)
def _pmin(g, eqn, args):
    return _call(g, eqn, args, _allreduce, op="min")


@emitter(par.axis_index_p)
def _axis_index(g, eqn, args):
    (comm,) = _communicators(g, eqn)
    return g.hoist(np.asarray(comm.rank, np.int32), "rank")


def _all_gather(comms, x, axis, tiled):
    (comm,) = comms
    out = np.moveaxis(comm.allgather(x), 0, axis)
    if tiled:  # the gathered axis becomes the major part of `axis`
        shape = out.shape
        out = out.reshape(*shape[:axis], shape[axis] * shape[axis + 1], *shape[axis + 2:])
    return out


@emitter(par.all_gather_p)
def _all_gather_emit(g, eqn, args):
    p = eqn.params
    return _call(g, eqn, args, _all_gather, axis=p["axis"], tiled=p["tiled"])


def _psum_scatter(comms, x, dim, tiled):
    (comm,) = comms
    if tiled:  # blocks of the scatter dimension, block index first
        n = comm.size
        x = x.reshape(*x.shape[:dim], n, x.shape[dim] // n, *x.shape[dim + 1:])
    return comm.reduce_scatter(np.moveaxis(x, dim, 0), "sum")


@emitter(par.psum_scatter_p)
def _psum_scatter_emit(g, eqn, args):
    p = eqn.params
    return _call(g, eqn, args, _psum_scatter, dim=p["scatter_dimension"], tiled=p["tiled"])


def _all_to_all(comms, x, split, concat):
    (comm,) = comms
    n = comm.size
    # the split axis cut into (destination, chunk), destinations first
    blocks = np.moveaxis(x.reshape(*x.shape[:split], n, x.shape[split] // n,
                                   *x.shape[split + 1:]), split, 0)
    got = np.moveaxis(comm.all_to_all(blocks), 0, concat)  # (..., sender, concat dim, ...)
    shape = got.shape
    return got.reshape(*shape[:concat], shape[concat] * shape[concat + 1], *shape[concat + 2:])


@emitter(par.all_to_all_p)
def _all_to_all_emit(g, eqn, args):
    p = eqn.params
    return _call(g, eqn, args, _all_to_all, split=p["split_axis"], concat=p["concat_axis"])


def _ppermute(comms, x, perm):
    (comm,) = comms
    return comm.permute(x, perm)


@emitter(par.ppermute_p)
def _ppermute_emit(g, eqn, args):
    return _call(g, eqn, args, _ppermute, perm=eqn.params["perm"])


def _nested_pmap(comm, body, in_mapped, out_mapped, *bufs):
    r = comm.rank
    outs = body(*[b[r] if m else b for b, m in zip(bufs, in_mapped)])
    return [comm.allgather(o) if m else o for o, m in zip(outs, out_mapped)]


@emitter(pmap_p)
def _pmap_emit(g, eqn, args):
    p = eqn.params
    comm = dict(g.options.communicators).get(p["axis_name"])
    if comm is None:
        return None
    body = g.ns[g.subfunction(p["jaxpr"], (), "pmap")]
    f = g.hoist(functools.partial(_nested_pmap, comm, body, p["in_mapped"], p["out_mapped"]),
                "nested_pmap")
    return f"{f}({', '.join(args)})"
