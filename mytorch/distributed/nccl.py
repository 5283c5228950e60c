"""The NCCL communicator: pmap's replicas on NVIDIA GPUs, through CuPy's `cupy.cuda.nccl`.

`NcclCommunicator` is one replica's endpoint on one GPU. Its buffers are CuPy arrays on
that GPU; every collective is enqueued on the current CuPy stream of the device (the
compute stream the replica's kernels run on, so no extra synchronisation is needed
between a kernel and the collective reading its result), into a new buffer, leaving the
argument unchanged. The host then waits for it: it records an event after the call and
polls it, and the communicator's asynchronous error, until it completes; past
`collective_timeout()` seconds it aborts the NCCL communicator (ncclCommAbort, which frees
the GPU kernels waiting in it) and raises `CollectiveError` naming the rank and the
collective. So, as on the CPU, a collective has completed on the device when its call
returns, and no replica hangs forever.

Two set-ups:

* One process driving several GPUs (pmap over local GPUs): `NcclLocalGroup(device_ids)`
  makes one endpoint per device with ncclCommInitAll. pmap runs each replica on its own
  thread, as for CPU devices, so each thread drives one GPU and needs no grouping. A
  replica that raises calls `fail(exc)` (pmap does): every other rank waiting in a
  collective, or arriving at one later, aborts its communicator and raises
  CollectiveError naming the rank that failed; `group.reset()` (pmap calls it once every
  replica has returned) rebuilds the communicators. One thread may also drive several
  endpoints of a group, provided each collective is issued on every endpoint between
  `group_start()` and `group_end()` (ncclGroupStart/End: NCCL launches them together, and
  the thread waits for all of them at the outermost `group_end`); results are valid once
  `group_end` returns.
* One process per GPU (the launcher, `python -m mytorch.distributed -n N`, or mpiexec):
  the first process of the device set makes the NCCL unique id (`nccl.get_unique_id()`),
  which travels to the others over MPI (a broadcast on the sub-communicator of
  `mytorch.distributed.mpi.mpi_endpoints`), and each then makes
  `NcclCommunicator(n, unique_id, rank, device)`. A failed peer shows up as NCCL's
  asynchronous error where NCCL detects it, and as a timeout otherwise.

Reductions need a type NCCL reduces (`nccl_lib.reduction`: bool as bytes, complex sums as
pairs of reals; a TypeError naming the collective and the dtype for int16, uint16 and
complex max/min). Data movement (allgather, all_to_all, permute) moves bytes, so it takes
every dtype.

`cupy` and `cupy.cuda.nccl` are imported only when a communicator is made
(`nccl_lib.cupy_lib()`), so CPU users never import them. Everything the communicator asks
of CuPy goes through that one small object (`nccl_lib.CupyLib`), which the tests replace
by a fake that runs on NumPy buffers.
"""

import os
import threading
import time

import numpy as np

from mytorch.distributed import nccl_lib
from mytorch.distributed.communicator import (
    Communicator,
    check_schedule_by_gather,
    collective_timeout,
)
from mytorch.distributed.nccl_lib import reduction
from mytorch.errors import CollectiveError

__all__ = ["NcclCommunicator", "NcclLocalGroup", "nccl_endpoints", "release_communicators"]

# polling: for _SPIN_S, test again as soon as the OS lets us (most collectives end within
# microseconds of the last peer's arrival); then sleep at most _MAX_SLEEP_S between tests
_SPIN_S, _MAX_SLEEP_S = 0.05, 0.001


# ---- state shared by the endpoints a thread drives ------------------------------------------
_THREAD = threading.local()  # depth: group_start nesting; pending: [(endpoint, what)]


def _pending():
    if not hasattr(_THREAD, "pending"):
        _THREAD.depth, _THREAD.pending = 0, []
    return _THREAD.pending


def _describe(x):
    return f"{np.dtype(x.dtype).name}[{','.join(map(str, x.shape))}]"


class NcclCommunicator(Communicator):
    """Rank `rank` of `ndev` replicas, one per GPU, on GPU `device` (default: the current
    CuPy device): `ncclCommInitRank(ndev, unique_id, rank)`, where every rank passes the
    same `unique_id` (the bytes of `nccl.get_unique_id()`, made by one of them). It blocks
    until every rank has joined. See the module docstring for the semantics.

    Args:
        ndev: int, the number of ranks.
        unique_id: bytes, the NCCL unique id of the group.
        rank: int in [0, ndev).
        device: int, the CUDA ordinal of this rank's GPU, or None for the current one.
        lib: what the communicator calls of CuPy (`cupy_lib()` by default).
    """

    def __init__(self, ndev, unique_id, rank, device=None, *, lib=None):
        lib = nccl_lib.cupy_lib() if lib is None else lib
        if device is None:
            device = lib.current_device()
        if not (isinstance(rank, int) and isinstance(ndev, int) and 0 <= rank < ndev):
            raise ValueError(f"NcclCommunicator: rank must be an int in [0, ndev), got "
                             f"rank={rank!r}, ndev={ndev!r}")
        with lib.on_device(device):
            comm = lib.nccl.NcclCommunicator(ndev, unique_id, rank)
        self._setup(lib, comm, rank, ndev, device, None)

    @classmethod
    def create_local(cls, devices, *, lib=None):
        """One endpoint per GPU of `devices` (CUDA ordinals, or Devices with `.id`), rank i
        on devices[i], made together by ncclCommInitAll; the endpoints share an
        `NcclLocalGroup` (their `.group`)."""
        return NcclLocalGroup(devices, lib=lib).communicators

    @classmethod
    def _wrap(cls, lib, comm, rank, size, device, group):
        self = cls.__new__(cls)
        self._setup(lib, comm, rank, size, device, group)
        return self

    def _setup(self, lib, comm, rank, size, device, group):
        self.lib, self.comm, self.rank, self.size = lib, comm, rank, size
        self.device_id, self._group = device, group
        self._broken = None  # why the communicator cannot be used any more
        self._closed = False

    @property
    def group(self):
        """The `NcclLocalGroup` of an endpoint made by `create_local` (pmap resets it after a
        failure); an endpoint of a multi-process group has none (AttributeError)."""
        if self._group is None:
            raise AttributeError("a multi-process NcclCommunicator has no local group")
        return self._group

    def __repr__(self):
        return f"NcclCommunicator(rank={self.rank}, size={self.size}, device={self.device_id})"

    # ---- the collectives ------------------------------------------------------------------
    def allreduce(self, x, op):
        """S: the elementwise `op` ("sum", "max", "min") of every rank's x (shape S)."""
        x = self._operand(x, "allreduce")
        what = f"allreduce({op}) of {_describe(x)}"
        dtype, nccl_op, scale = reduction(self.lib.nccl, x.dtype, op, "allreduce")
        out = self._empty(x.shape, x.dtype)
        self._launch(what, lambda c, s: c.allReduce(
            self.lib.ptr(x), self.lib.ptr(out), x.size * scale, dtype, nccl_op, s), x.size)
        return out

    def allgather(self, x):
        """(n, *S): rank r's x (shape S) at index r."""
        x = self._operand(x, "allgather")
        out = self._empty((self.size, *x.shape), x.dtype)
        self._launch(f"allgather of {_describe(x)}", lambda c, s: c.allGather(
            self.lib.ptr(x), self.lib.ptr(out), x.nbytes, self.lib.nccl.NCCL_UINT8, s),
            x.size)
        return out

    def reduce_scatter(self, x, op):
        """S: x of shape (n, *S) on every rank; rank r gets the `op` over ranks of x[r]."""
        x = self._operand(x, "reduce_scatter", leading=True)
        what = f"reduce_scatter({op}) of {_describe(x)}"
        dtype, nccl_op, scale = reduction(self.lib.nccl, x.dtype, op, "reduce_scatter")
        out = self._empty(x.shape[1:], x.dtype)
        self._launch(what, lambda c, s: c.reduceScatter(
            self.lib.ptr(x), self.lib.ptr(out), out.size * scale, dtype, nccl_op, s), x.size)
        return out

    def all_to_all(self, x):
        """(n, *S): x of shape (n, *S); block j goes to rank j, and the result's block j is
        what rank j sent here. Grouped sends and receives, one pair per peer."""
        x = self._operand(x, "all_to_all", leading=True)
        out = self._empty(x.shape, x.dtype)
        what, r = f"all_to_all of {_describe(x)}", self.rank
        block = x.nbytes // self.size
        self._enter(what)
        if block:
            with self.lib.on_device(self.device_id):  # this rank's own block
                self.lib.copy_bytes(out, r * block, x, r * block, block)
        self.group_start()
        try:
            for j in range(self.size):
                if j != r:
                    self._send_recv(what, x, j * block, out, j * block, block, j, j)
        finally:
            self.group_end()
        return out

    def permute(self, x, pairs):
        """S: the x of the rank that `pairs` ((source, destination), ...: each rank at most
        once as a source and once as a destination) sends here, zeros where none does."""
        pairs = _check_pairs(pairs, self.size)
        x = self._operand(x, "permute")
        what = f"permute {pairs} of {_describe(x)}"
        source = next((s for s, d in pairs if d == self.rank), None)
        dest = next((d for s, d in pairs if s == self.rank), None)
        with self.lib.on_device(self.device_id):
            if source is None:
                out = self.lib.xp.zeros(x.shape, x.dtype)
            else:
                out = self.lib.xp.empty(x.shape, x.dtype)
                if source == self.rank and x.nbytes:
                    self.lib.copy_bytes(out, 0, x, 0, x.nbytes)
        self._enter(what)
        if source == self.rank or (source is None and dest is None):
            return out
        self.group_start()
        try:
            self._send_recv(what, x, 0, out, 0, x.nbytes,
                            None if dest == self.rank else dest,
                            None if source == self.rank else source)
        finally:
            self.group_end()
        return out

    def barrier(self):
        """Returns once every rank has called it (a 1-element allreduce, waited for)."""
        with self.lib.on_device(self.device_id):
            one = self.lib.xp.ones((1,), np.int32)
        self.allreduce(one, "sum")

    def check_schedule(self, digest, describe):
        """Raise CollectiveError on every rank, with a diff of this rank's schedule and the
        first rank's whose digest differs, unless every rank passed the same `digest`
        (bytes); `describe()` gives this rank's schedule as lines, called on a mismatch."""
        check_schedule_by_gather(self.rank, self.size, digest, describe, self._gather_host)

    # ---- groups, failure, release ---------------------------------------------------------
    def group_start(self):
        """Start a group of NCCL calls (ncclGroupStart; groups nest, per thread)."""
        _pending()
        self.lib.nccl.groupStart()
        _THREAD.depth += 1

    def group_end(self):
        """End a group (ncclGroupEnd). At the outermost end, NCCL launches the group's
        calls and this thread waits for all of them, on every endpoint it issued them to:
        their results are valid from then on."""
        pending = _pending()
        _THREAD.depth -= 1
        try:
            self.lib.nccl.groupEnd()
        except self.lib.nccl.NcclError as e:
            if _THREAD.depth == 0:
                pending.clear()
            raise self._failed(f"the group of NCCL calls failed to launch: {e}") from e
        if _THREAD.depth == 0 and pending:
            calls = list(pending)
            pending.clear()
            _wait(calls)

    def fail(self, exc):
        """This replica raised `exc` (pmap calls it): the other ranks of a local group
        raise CollectiveError instead of waiting for it."""
        if self._group is not None:
            self._group.fail(self.rank, f"raised {type(exc).__name__}: {exc}")

    def abort(self):
        """Abort the NCCL communicator (ncclCommAbort): collectives waiting in it end; it
        cannot be used again (a local group's `reset()` makes new ones)."""
        if not self._closed:
            self._closed = True
            with self.lib.on_device(self.device_id):
                self.comm.abort()

    def close(self):
        """Destroy the NCCL communicator (ncclCommDestroy), unless already aborted."""
        if not self._closed:
            self._closed = True
            with self.lib.on_device(self.device_id):
                self.comm.destroy()
            self._broken = self._broken or "it was closed"

    # ---- helpers --------------------------------------------------------------------------
    def _who(self):
        return f"rank {self.rank} of {self.size} (GPU {self.device_id})"

    def _operand(self, x, name, leading=False):
        """`x` as a C-contiguous array on this rank's GPU, checked."""
        xp = self.lib.xp
        where = self.lib.device_of(x)
        if where is not None and where != self.device_id:
            raise ValueError(f"NcclCommunicator.{name}: {self._who()} got a buffer on GPU "
                             f"{where}; the replica's buffers live on GPU {self.device_id}")
        with self.lib.on_device(self.device_id):
            x = xp.asarray(x)
            if not x.flags.c_contiguous:
                x = x.copy(order="C")
        if leading and (x.ndim == 0 or x.shape[0] != self.size):
            raise ValueError(f"NcclCommunicator.{name}: the operand's leading axis must be the "
                             f"group size {self.size}, got {_describe(x)}")
        return x

    def _empty(self, shape, dtype):
        with self.lib.on_device(self.device_id):
            return self.lib.xp.empty(shape, dtype)

    def _check_usable(self, what):
        if self._broken is None and self._group is not None and self._group.failure:
            self._abandon(self._group.failure_text())
        if self._broken is not None:
            raise CollectiveError(f"{self._who()}: cannot run the {what}: {self._broken}")

    def _enter(self, what):
        """Start collective `what`: raise if the endpoint or its group has failed; count it."""
        self._check_usable(what)
        if self._group is not None:
            self._group.progress[self.rank] += 1

    def _launch(self, what, call, size=1, enter=True):
        """Enqueue `call(nccl communicator, stream)` on this device's current stream; wait
        for it unless inside a group (then the outermost `group_end` waits). `enter`: the
        call is a whole collective (not one part of all_to_all's or permute's)."""
        if enter:
            self._enter(what)
        if size == 0:
            return  # nothing moves (every rank has the same shape): no NCCL call
        nccl = self.lib.nccl
        with self.lib.on_device(self.device_id):
            try:
                call(self.comm, self.lib.stream_ptr())
            except nccl.NcclError as e:
                raise self._failed(f"NCCL refused the {what}: {e}") from e
        pending = _pending()
        pending.append((self, what))
        if _THREAD.depth == 0:
            calls = list(pending)
            pending.clear()
            _wait(calls)

    def _send_recv(self, what, x, x_at, out, out_at, nbytes, dest, source):
        """Enqueue a send of `nbytes` of x from byte `x_at` to rank `dest` and a receive
        into `out` at byte `out_at` from rank `source` (None: no send / no receive)."""
        uint8 = self.lib.nccl.NCCL_UINT8

        def call(comm, stream):
            if dest is not None:
                comm.send(self.lib.ptr(x) + x_at, nbytes, uint8, dest, stream)
            if source is not None:
                comm.recv(self.lib.ptr(out) + out_at, nbytes, uint8, source, stream)

        self._launch(what, call, nbytes, enter=False)

    def _gather_host(self, data):
        """(n, len(data)) uint8 on the host: every rank's host bytes `data` (the same length
        on every rank), through an allgather on the GPU."""
        with self.lib.on_device(self.device_id):
            device_data = self.lib.xp.asarray(data)
        return np.asarray(self.lib.to_host(self.allgather(device_data)))

    def _failed(self, reason):
        """Abort, record why and tell the group; the CollectiveError to raise."""
        text = f"{self._who()}: {reason}"
        if self._group is not None:
            self._group.fail(self.rank, f"failed: {reason}")
        self._abandon(text)
        return CollectiveError(text)

    def _abandon(self, why):
        """Abort the communicator (it stays unusable, with `why`)."""
        if self._broken is None:
            self._broken = why
        try:
            self.abort()
        except Exception:  # noqa: BLE001 (an abort that fails leaves it broken all the same)
            pass


def _check_pairs(pairs, size):
    pairs = tuple((int(s), int(d)) for s, d in pairs)
    for k, name in ((0, "source"), (1, "destination")):
        seen = [p[k] for p in pairs]
        if len(set(seen)) != len(seen) or not all(0 <= r < size for r in seen):
            raise ValueError(f"NcclCommunicator.permute: pairs {list(pairs)} must name each "
                             f"rank of [0, {size}) at most once as a {name}")
    return pairs


def _wait(calls):
    """Wait for the NCCL calls `calls` ([(endpoint, what)]) just launched: an event on each
    endpoint's current stream, polled with the endpoints' asynchronous errors and their
    group's failures until done. On an error, or past the timeout, every endpoint still
    waiting aborts, and the first one's CollectiveError is raised."""
    endpoints = list({id(e): e for e, _ in calls}.values())
    what = {id(e): w for e, w in calls}  # an endpoint's last call names the wait
    events = []
    for e in endpoints:
        with e.lib.on_device(e.device_id):
            events.append(e.lib.record_event())
    timeout = collective_timeout()
    start, sleep = time.monotonic(), 0.0
    while True:
        left = [(e, ev) for e, ev in zip(endpoints, events, strict=True) if not ev.done]
        if not left:
            return
        try:
            for e, _ in left:
                _check_progress(e, what[id(e)])
        except CollectiveError as err:
            for e, _ in left:  # one thread driving several endpoints: stop them all
                e._abandon(str(err))
            raise
        waited = time.monotonic() - start
        if waited > timeout:
            error = None
            for e, _ in left:
                behind = e._group.behind() if e._group is not None else ""
                err = e._failed(f"the {what[id(e)]} did not complete within {timeout:g} s "
                                f"(MYTORCH_COLLECTIVE_TIMEOUT): a peer died, hangs, or runs "
                                f"a different sequence of collectives{behind}; the NCCL "
                                f"communicator was aborted")
                error = error or err
            raise error
        if waited > _SPIN_S:
            sleep = min(_MAX_SLEEP_S, sleep * 1.5 + 1e-5)
            time.sleep(sleep)
        else:
            os.sched_yield()


def _check_progress(e, what):
    """Raise CollectiveError if NCCL reports an asynchronous error on endpoint `e` or a rank
    of its local group failed (aborting `e`)."""
    nccl = e.lib.nccl
    try:
        e.comm.check_async_error()
    except nccl.NcclError as err:
        raise e._failed(f"NCCL reported an error during the {what}: {err} (a peer failed "
                        f"or the connection broke); the NCCL communicator was aborted"
                        ) from None
    if e._group is not None and e._group.failure is not None:
        e._abandon(e._group.failure_text())
        raise CollectiveError(f"{e._who()}: the {what} failed: {e._group.failure_text()}")


class NcclLocalGroup:
    """One endpoint per GPU of this process, made together by ncclCommInitAll:
    `group.communicators[r]` is rank r's `NcclCommunicator`, on GPU device_ids[r].

    Args:
        devices: CUDA ordinals (ints) or Devices (their `.id`), distinct.
        lib: what the communicators call of CuPy (`cupy_lib()` by default).
    """

    def __init__(self, devices, *, lib=None):
        ids = [d if isinstance(d, int) else d.id for d in devices]
        if not ids or len(set(ids)) != len(ids):
            raise ValueError(f"NcclLocalGroup: devices must be distinct GPUs, got {ids}")
        self.lib = nccl_lib.cupy_lib() if lib is None else lib
        self.device_ids, self.size = tuple(ids), len(ids)
        self.lock = threading.Lock()
        self.communicators = []
        self._build()

    def _build(self):
        comms = self.lib.nccl.NcclCommunicator.initAll(list(self.device_ids))
        self.failure = None  # (rank, reason) of the first failure, until reset()
        self.progress = [0] * self.size  # collectives each rank has entered
        if not self.communicators:
            self.communicators = [
                NcclCommunicator._wrap(self.lib, c, r, self.size, d, self)
                for r, (c, d) in enumerate(zip(comms, self.device_ids, strict=True))]
            return
        for endpoint, c in zip(self.communicators, comms, strict=True):
            endpoint._setup(self.lib, c, endpoint.rank, self.size, endpoint.device_id, self)

    def fail(self, rank, reason):
        """Record that `rank` failed (the first failure wins): the other ranks' waits and
        later calls raise CollectiveError naming it."""
        with self.lock:
            if self.failure is None:
                self.failure = (rank, reason)

    def failure_text(self):
        rank, reason = self.failure
        return f"rank {rank} {reason}"

    def behind(self):
        """'; ranks [...] never reached it' for the ranks that entered fewer collectives."""
        top = max(self.progress)
        late = [r for r, k in enumerate(self.progress) if k < top]
        return f"; ranks {late} never reached it" if late else ""

    def reset(self):
        """Make the group usable again after a failure (every rank must have returned):
        the aborted communicators are replaced by new ones."""
        if self.failure is None and not any(c._broken for c in self.communicators):
            return
        for c in self.communicators:
            c._abandon("the group was reset")
        self._build()

    def close(self):
        """Destroy every endpoint's communicator."""
        for c in self.communicators:
            c.close()

    def __repr__(self):
        return f"NcclLocalGroup(devices={list(self.device_ids)})"


# ---- pmap's endpoints -----------------------------------------------------------------------
_COMMS = {}  # key of a device set -> NcclLocalGroup, or {device: NcclCommunicator}
_COMMS_LOCK = threading.Lock()


def nccl_endpoints(devices, *, lib=None):
    """{this process's device: NcclCommunicator} for a pmap over `devices` (GPU Devices,
    rank i on devices[i]), built once per device set and cached.

    All of this process's: one `NcclLocalGroup`. Spread over processes: one device per
    process (as `mpi_endpoints`); the first process makes the unique id and broadcasts it
    over MPI, collectively over the processes of `devices` only.

    Raises:
        ImportError: CuPy or NCCL is missing (install the `gpu` extra).
        ValueError: several devices of one process in a multi-process set, or none of
            this process's.
    """
    from mytorch.distributed.groups import _process_index

    devices = tuple(devices)
    me = _process_index()
    owners = tuple(getattr(d, "process_index", 0) for d in devices)
    key = (owners, tuple(d.id for d in devices))
    with _COMMS_LOCK:
        found = _COMMS.get(key)
        if found is None:
            if all(p == me for p in owners):
                found = NcclLocalGroup(devices, lib=lib)
            else:
                found = _process_endpoint(devices, lib)
            _COMMS[key] = found
    if isinstance(found, NcclLocalGroup):
        return dict(zip(devices, found.communicators, strict=True))
    return found


def _process_endpoint(devices, lib):
    """{mine: NcclCommunicator} of this process's one device among `devices`."""
    from mytorch.distributed.mpi import mpi_endpoints

    lib = nccl_lib.cupy_lib() if lib is None else lib
    (mine, mpi), = mpi_endpoints(devices).items()  # checks one device per process
    unique_id = lib.nccl.get_unique_id() if mpi.rank == 0 else None
    unique_id = mpi.comm.bcast(unique_id, root=0)
    return {mine: NcclCommunicator(len(devices), unique_id, mpi.rank, mine.id, lib=lib)}


def release_communicators():
    """Destroy the communicators `nccl_endpoints` built (`mytorch.distributed.shutdown`)."""
    with _COMMS_LOCK:
        for found in _COMMS.values():
            for c in (found.communicators if isinstance(found, NcclLocalGroup)
                      else found.values()):
                try:
                    c.close()
                except Exception:  # noqa: BLE001 (release what can be released)
                    pass
        _COMMS.clear()
