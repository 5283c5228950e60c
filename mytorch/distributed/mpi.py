"""The MPI communicator: one replica per process, through mpi4py's buffer API.

`MpiCommunicator(comm)` implements `Communicator` on NumPy buffers with MPI's
non-blocking collectives (Iallreduce, Iallgather, Ireduce_scatter_block, Ialltoall, Isend
and Irecv for permute, Ibarrier), polled until they complete or `collective_timeout()`
passes: then the rank reports a CollectiveError naming itself and the collective and aborts
the whole job (MPI_Abort), so that no peer waits forever on it. `mpi_endpoints(devices)`
gives pmap this process's endpoint for a set of global devices, one per process.

mpi4py is imported only here, and this module only once a run is initialized.
"""

import sys
import os
import time

import numpy as np
from mpi4py import MPI
from mpi4py.util.dtlib import from_numpy_dtype

from mytorch.core.source_info import user_error
from mytorch.distributed.communicator import (
    Communicator,
    check_schedule_by_gather,
    collective_timeout,
)
from mytorch.errors import CollectiveError

__all__ = ["MpiCommunicator", "gather_shards", "mpi_endpoints", "release_communicators"]

_OPS = {"sum": MPI.SUM, "max": MPI.MAX, "min": MPI.MIN}
# a bool buffer reduces as bytes: sum and max are "or", min is "and"
_BOOL_OPS = {"sum": MPI.MAX, "max": MPI.MAX, "min": MPI.MIN}
_PERMUTE_TAG = 7001
# polling: for _SPIN_S, test again as soon as the OS has let others run (a peer still
# computing its half of a step arrives within milliseconds, and MPI progresses only
# while tested); then sleep at most _MAX_SLEEP_S between tests
_SPIN_S, _MAX_SLEEP_S = 0.05, 0.001


def _contiguous(x):
    """`x` as a C-contiguous array of its own shape (0-d stays 0-d, unlike
    np.ascontiguousarray)."""
    x = np.asarray(x)
    return x if x.flags.c_contiguous else x.copy(order="C")


def _as_bytes(a):
    """The bytes of a C-contiguous array, as a flat uint8 view."""
    return a.reshape(-1).view(np.uint8)


class MpiCommunicator(Communicator):
    """One process's endpoint in an MPI communicator `comm` (rank and size are `comm`'s).

    `abort_on_timeout=False` raises the CollectiveError of a timed-out collective instead
    of aborting the job (the communicator is unusable afterwards)."""

    def __init__(self, comm, abort_on_timeout=True):
        self.comm = comm
        self.rank, self.size = comm.Get_rank(), comm.Get_size()
        self.abort_on_timeout = abort_on_timeout
        self._broken = None

    # ---- the operations -----------------------------------------------------------------
    def allreduce(self, x, op):
        """The elementwise `op` ("sum", "max", "min") of every rank's `x` (shape S)."""
        x, out, send, recv, mpi_op, back = self._reduction(x, x.shape, op, "allreduce")
        self._run(lambda: self.comm.Iallreduce(send, recv, op=mpi_op),
                  f"allreduce({op}) of {_describe(x)}")
        return back(out)

    def allgather(self, x):
        """(n, *S): rank r's `x` at index r."""
        x = _contiguous(x)
        out = np.empty((self.size, *x.shape), x.dtype)
        self._run(lambda: self.comm.Iallgather(_as_bytes(x), _as_bytes(out)),
                  f"allgather of {_describe(x)}")
        return out

    def reduce_scatter(self, x, op):
        """S[1:] for `x` of shape (n, *S[1:]): the reduction over ranks of x[rank]."""
        self._check_leading(x, "reduce_scatter")
        x, out, send, recv, mpi_op, back = self._reduction(x, x.shape[1:], op,
                                                           "reduce_scatter")
        self._run(lambda: self.comm.Ireduce_scatter_block(send, recv, op=mpi_op),
                  f"reduce_scatter({op}) of {_describe(x)}")
        return back(out)

    def all_to_all(self, x):
        """(n, *S[1:]) for `x` of shape (n, *S[1:]): index j of the result is what rank j
        sent to this rank (its x[rank])."""
        self._check_leading(x, "all_to_all")
        x = _contiguous(x)
        out = np.empty_like(x)
        self._run(lambda: self.comm.Ialltoall(_as_bytes(x), _as_bytes(out)),
                  f"all_to_all of {_describe(x)}")
        return out

    def permute(self, x, pairs):
        """S: the `x` of the rank sending to this one under `pairs` ((source, destination)
        ranks), zeros where none does."""
        pairs = [(int(s), int(d)) for s, d in pairs]
        for k, name in ((0, "source"), (1, "destination")):
            seen = [p[k] for p in pairs]
            if len(set(seen)) != len(seen) or not all(0 <= r < self.size for r in seen):
                raise ValueError(f"MpiCommunicator.permute: pairs {pairs} must name each rank "
                                 f"of [0, {self.size}) at most once as a {name}")
        x = _contiguous(x)
        source = next((s for s, d in pairs if d == self.rank), None)
        dest = next((d for s, d in pairs if s == self.rank), None)
        if source is None:
            out = np.zeros_like(x)
        elif source == self.rank:
            out = x.copy()
        else:
            out = np.empty_like(x)
        what = f"permute {pairs} of {_describe(x)}"
        if source == self.rank or (source is None and dest is None):
            self._check_usable(what)
            return out
        requests = []
        if source is not None:
            requests.append(self.comm.Irecv(_as_bytes(out), source=source, tag=_PERMUTE_TAG))
        if dest is not None:
            requests.append(self.comm.Isend(_as_bytes(x), dest=dest, tag=_PERMUTE_TAG))
        self._wait(lambda: MPI.Request.Testall(requests), what)
        return out

    def barrier(self):
        """Returns once every rank has called it."""
        self._run(self.comm.Ibarrier, "barrier")

    def check_schedule(self, digest, describe):
        """Raise CollectiveError on every rank, with a diff of this rank's schedule and the
        first rank's whose digest differs, unless every rank passed the same digest."""
        check_schedule_by_gather(self.rank, self.size, digest, describe,
                                 lambda a: self._gather_bytes(a, "check_schedule"))

    def close(self):
        """Free the MPI communicator (not COMM_WORLD itself)."""
        if self.comm != MPI.COMM_WORLD and self.comm != MPI.COMM_NULL:
            self.comm.Free()

    # ---- helpers ------------------------------------------------------------------------
    def _gather_bytes(self, data, what):
        """(n, len(data)) uint8: every rank's `data` (the same length on every rank)."""
        out = np.empty((self.size, data.size), np.uint8)
        self._run(lambda: self.comm.Iallgather(data, out), what)
        return out

    def _check_leading(self, x, name):
        if x.ndim == 0 or x.shape[0] != self.size:
            raise ValueError(f"MpiCommunicator.{name}: the operand's leading axis must be the "
                             f"group size {self.size}, got shape {tuple(x.shape)}")

    def _reduction(self, x, out_shape, op, name):
        """(x, out, send, recv, MPI op, back): the buffers of a reduction of `x` into a
        result of `out_shape`, in a type MPI reduces (bool as bytes; a type MPI lacks,
        such as bfloat16, in float32), and `back(out)` the result in `x`'s dtype."""
        if op not in _OPS:
            raise ValueError(f"MpiCommunicator.{name}: op must be one of {sorted(_OPS)}, got "
                             f"{op!r}")
        x = _contiguous(x)
        dtype, mpi_op, back = x.dtype, _OPS[op], lambda out: out
        if dtype == np.bool_:
            work, mpi_op = x.view(np.uint8), _BOOL_OPS[op]
            back = lambda out: out.view(np.bool_)  # noqa: E731
        else:
            try:
                from_numpy_dtype(dtype)
                work = x
            except (KeyError, ValueError, TypeError):
                work = x.astype(np.float32)
                back = lambda out: out.astype(dtype)  # noqa: E731
        out = np.empty(out_shape, work.dtype)
        return x, out, work, out, mpi_op, back

    def _run(self, start, what):
        """Start a non-blocking call (`start()` -> Request) and wait for it."""
        self._check_usable(what)
        request = start()
        self._wait(request.Test, what)

    def _check_usable(self, what):
        if self._broken is not None:
            raise CollectiveError(f"rank {self.rank} of {self.size}: cannot run the {what}: "
                                  f"an earlier collective failed ({self._broken})")

    def _wait(self, test, what):
        """Poll `test()` until it is true; past the timeout, fail (see `_timed_out`)."""
        if test():
            return
        start = time.monotonic()
        timeout = collective_timeout()
        sleep = 0.0
        while not test():
            waited = time.monotonic() - start
            if waited > timeout:
                self._timed_out(what, timeout)
            if waited > _SPIN_S:
                sleep = min(_MAX_SLEEP_S, sleep * 1.5 + 1e-5)
                time.sleep(sleep)
            else:
                os.sched_yield()

    def _timed_out(self, what, timeout):
        """The collective `what` did not complete in `timeout` s: raise, or report and
        abort the job (the peers may be blocked where no timeout reaches them)."""
        world = MPI.COMM_WORLD.Get_rank()
        who = f"rank {self.rank} of {self.size}" + (
            f" (process {world})" if world != self.rank or self.size != MPI.COMM_WORLD.Get_size()
            else "")
        error = CollectiveError(
            f"{who}: the {what} did not complete within {timeout:g} s "
            f"(MYTORCH_COLLECTIVE_TIMEOUT): a peer process died, hangs, or runs a different "
            f"sequence of collectives")
        self._broken = str(error)
        if not self.abort_on_timeout:
            raise error
        from mytorch.distributed.worker import report_failure

        print(f"mytorch.distributed: CollectiveError: {error}; aborting the job",
              file=sys.stderr, flush=True)
        report_failure(f"CollectiveError: {error}")
        self.comm.Abort(1)


def _describe(x):
    return f"{x.dtype}[{', '.join(map(str, x.shape))}]"


# (process indices of the group's devices, in order) -> MpiCommunicator
_COMMS = {}


def mpi_endpoints(devices):
    """{this process's device: MpiCommunicator} for a pmap over `devices`, global devices
    of distinct processes (one device per process, this process owning one of them); the
    communicator's rank r is the replica of devices[r]. Communicators are built once per
    device set (collectively over its processes only, so processes outside it need not
    take part) and cached."""
    from mytorch import distributed

    world = distributed.world_communicator()
    devices = list(devices)
    owners = [d.process_index for d in devices]
    shared = sorted({p for p in owners if owners.count(p) > 1})
    if shared:
        raise user_error(ValueError, f"pmap over the devices of several processes needs one "
                                     f"device per process, but process"
                                     f"{'es' if len(shared) > 1 else ''} "
                                     f"{', '.join(map(str, shared))} own several of {devices}")
    me = distributed.process_index()
    if me not in owners:
        raise user_error(ValueError, f"pmap over {devices}: this process ({me}) owns none of "
                                     f"them; every process running it must own one")
    key = tuple(owners)
    endpoint = _COMMS.get(key)
    if endpoint is None:
        group = world.Get_group().Incl(list(owners))
        try:
            comm = world.Create_group(group)
        finally:
            group.Free()
        endpoint = _COMMS[key] = MpiCommunicator(comm)
    return {devices[owners.index(me)]: endpoint}


def gather_shards(devices, shards):
    """(n, *S) on the host: the stack of an array's n shards over `devices` (global devices
    of distinct processes, as for `mpi_endpoints`), `shards[i]` the buffer on devices[i]
    where this process owns it (None elsewhere). An allgather over the devices' processes,
    through the communicator of a pmap over them: every one of them must call it."""
    (device, endpoint), = mpi_endpoints(devices).items()
    mine = device.backend.to_numpy(shards[list(devices).index(device)])
    return endpoint.allgather(mine)


def release_communicators():
    """Free the communicators `mpi_endpoints` built (`mytorch.distributed.shutdown`)."""
    for endpoint in _COMMS.values():
        endpoint.close()
    _COMMS.clear()
