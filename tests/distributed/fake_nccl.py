"""A FAKE of `cupy.cuda.nccl` and of the CuPy calls `NcclCommunicator` makes (`FakeLib`
stands in for `mytorch.distributed.nccl_lib.CupyLib`), for testing the communicator's
Python logic on a machine without a GPU. NOTHING HERE RUNS NCCL OR A GPU: buffers are NumPy arrays
in host memory, "device pointers" are their host addresses, and the collectives are
computed with NumPy by worker threads.

What it models of the real thing, so that the communicator's use of it is exercised:

* the calls take raw pointers, element counts and NCCL datatype/op codes (the names are
  those of cupy.cuda.nccl, checked against it by test_nccl_fake_matches_cupy);
* each device has a stream (a worker thread running its calls in order); a call returns
  at once and runs later, and an event recorded on the stream is `done` once the calls
  before it have run, so a result is valid only once the communicator has waited;
* a collective of rank r waits in its stream until every rank of its clique has issued
  the same-numbered collective (as an NCCL kernel waits for its peers), send/recv pairs
  match in order per (source, destination); `groupStart`/`groupEnd` hold a thread's calls
  back until the outermost `groupEnd`, then hand them to their streams;
* `abort()` releases the calls waiting in the communicator; `check_async_error()` raises
  `FakeNcclError` once `inject_error` has set an error.
"""

import collections
import contextlib
import ctypes
import itertools
import queue
import threading
import types

import ml_dtypes
import numpy as np

# the datatype codes, as names of cupy.cuda.nccl (the values are the fake's own)
_TYPES = {"NCCL_INT8": np.int8, "NCCL_UINT8": np.uint8, "NCCL_INT32": np.int32,
          "NCCL_UINT32": np.uint32, "NCCL_INT64": np.int64, "NCCL_UINT64": np.uint64,
          "NCCL_FLOAT16": np.float16, "NCCL_FLOAT32": np.float32, "NCCL_FLOAT64": np.float64,
          "NCCL_BFLOAT16": ml_dtypes.bfloat16}
_OPS = {"NCCL_SUM": np.add, "NCCL_PROD": np.multiply, "NCCL_MAX": np.maximum,
        "NCCL_MIN": np.minimum}
# the methods the communicator calls, with their arguments after self, as cupy documents them
SIGNATURES = {
    "allReduce": "sendbuf, recvbuf, count, datatype, op, stream",
    "allGather": "sendbuf, recvbuf, count, datatype, stream",
    "reduceScatter": "sendbuf, recvbuf, recvcount, datatype, op, stream",
    "send": "sendbuf, count, datatype, peer, stream",
    "recv": "recvbuf, count, datatype, peer, stream",
}


class FakeNcclError(RuntimeError):
    """The fake's NcclError (an error code and a text)."""

    def __init__(self, status, text="fake NCCL error"):
        super().__init__(f"FAKE_NCCL_ERROR {status}: {text}")
        self.status = status


def _view(ptr, count, dtype):
    """The `count` elements of `dtype` at host address `ptr`, as a NumPy array (no copy)."""
    dtype = np.dtype(dtype)
    raw = (ctypes.c_char * (count * dtype.itemsize)).from_address(ptr)
    return np.frombuffer(raw, dtype)


class _Stream:
    """A device's stream: a worker thread running the calls put on it, in order."""

    def __init__(self, name):
        self.calls = queue.Queue()
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.thread.start()

    def _run(self):
        while True:
            call = self.calls.get()
            if call is None:
                return
            call()


class _Event:
    def __init__(self):
        self._done = threading.Event()

    @property
    def done(self):
        return self._done.is_set()


class _Clique:
    """The ranks of one fake communicator: the posted operands of each numbered
    collective and the mailboxes of send/recv."""

    def __init__(self, size):
        self.size = size
        self.cond = threading.Condition()
        self.posted = collections.defaultdict(dict)  # collective number -> {rank: bytes}
        self.readers = collections.Counter()  # collective number -> ranks done reading
        self.mail = collections.defaultdict(collections.deque)  # (src, dst) -> [bytes]
        self.error = None


class FakeComm:
    """The fake NcclCommunicator of one rank (see the module docstring)."""

    def __init__(self, nccl, clique, rank, device):
        self.nccl, self.clique, self.rank, self.device = nccl, clique, rank, device
        self.issued = 0  # collectives issued
        self.aborted = self.destroyed = False
        self.calls = []  # (method, peer or None, group depth) in the order issued

    # --- the fake's machinery ---
    def _issue(self, stream, method, peer, run):
        self.calls.append((method, peer, self.nccl.depth()))
        if self.aborted or self.destroyed:
            raise FakeNcclError(5, f"{method} on an aborted/destroyed communicator")
        call = (self.nccl.streams[stream], run)
        if self.nccl.depth() > 0:
            self.nccl.held().append(call)
        else:
            call[0].calls.put(call[1])

    def _wait_for(self, ready):
        """In a stream: wait until `ready()` (under the clique's lock) or an abort."""
        c = self.clique
        while not ready():
            if self.aborted:
                return False
            c.cond.wait(0.02)
        return True

    def _collective(self, stream, method, send, compute):
        """Post `send` (a copy) as collective #k of this rank; once every rank has posted,
        `compute(posted by rank)` writes the result."""
        k, self.issued = self.issued, self.issued + 1
        c = self.clique

        def run():
            with c.cond:
                c.posted[k][self.rank] = send.copy()
                c.cond.notify_all()
                if not self._wait_for(lambda: len(c.posted[k]) == c.size):
                    return
                compute([c.posted[k][r] for r in range(c.size)])
                c.readers[k] += 1
                if c.readers[k] == c.size:
                    del c.posted[k], c.readers[k]

        self._issue(stream, method, None, run)

    # --- the NCCL calls ---
    def allReduce(self, sendbuf, recvbuf, count, datatype, op, stream):
        t, f = self.nccl.type_of(datatype), self.nccl.op_of(op)
        send, recv = _view(sendbuf, count, t), _view(recvbuf, count, t)
        self._collective(stream, "allReduce", send, lambda posted: recv.__setitem__(
            slice(None), f.reduce(np.stack(posted), axis=0)))

    def allGather(self, sendbuf, recvbuf, count, datatype, stream):
        t = self.nccl.type_of(datatype)
        send, recv = _view(sendbuf, count, t), _view(recvbuf, count * self.clique.size, t)
        self._collective(stream, "allGather", send,
                         lambda posted: recv.__setitem__(slice(None), np.concatenate(posted)))

    def reduceScatter(self, sendbuf, recvbuf, recvcount, datatype, op, stream):
        t, f, r = self.nccl.type_of(datatype), self.nccl.op_of(op), self.rank
        send = _view(sendbuf, recvcount * self.clique.size, t)
        recv = _view(recvbuf, recvcount, t)
        block = slice(r * recvcount, (r + 1) * recvcount)
        self._collective(stream, "reduceScatter", send, lambda posted: recv.__setitem__(
            slice(None), f.reduce(np.stack([p[block] for p in posted]), axis=0)))

    def send(self, sendbuf, count, datatype, peer, stream):
        data, c = _view(sendbuf, count, self.nccl.type_of(datatype)), self.clique

        def run():
            with c.cond:
                c.mail[(self.rank, peer)].append(data.copy())
                c.cond.notify_all()

        self._issue(stream, "send", peer, run)

    def recv(self, recvbuf, count, datatype, peer, stream):
        out, c = _view(recvbuf, count, self.nccl.type_of(datatype)), self.clique
        box = c.mail[(peer, self.rank)]

        def run():
            with c.cond:
                if self._wait_for(lambda: len(box) > 0):
                    out[:] = box.popleft()

        self._issue(stream, "recv", peer, run)

    def check_async_error(self):
        if self.clique.error is not None and self.clique.error[0] in (None, self.rank):
            raise FakeNcclError(self.clique.error[1], "injected by the test")

    def abort(self):
        self.aborted = True
        self.nccl.aborted.append(self.rank)
        with self.clique.cond:
            self.clique.cond.notify_all()

    def destroy(self):
        self.destroyed = True

    def rank_id(self):
        return self.rank

    def size(self):
        return self.clique.size


class _CommFactory:
    """`nccl.NcclCommunicator(ndev, unique_id, rank)` and `.initAll(devices)`."""

    def __init__(self, nccl):
        self.nccl = nccl

    def __call__(self, ndev, unique_id, rank):
        nccl = self.nccl
        with nccl.lock:
            clique = nccl.cliques.setdefault(bytes(unique_id), _Clique(ndev))
        comm = FakeComm(nccl, clique, rank, nccl.lib.current_device())
        nccl.comms.append(comm)
        return comm

    def initAll(self, devices):
        clique = _Clique(len(devices))
        comms = [FakeComm(self.nccl, clique, r, d) for r, d in enumerate(devices)]
        self.nccl.comms.extend(comms)
        return comms


class FakeNccl(types.SimpleNamespace):
    """The fake `cupy.cuda.nccl` module: its constants, NcclCommunicator (with initAll),
    get_unique_id, groupStart/groupEnd and NcclError."""

    def __init__(self, lib):
        super().__init__()
        self.lib, self.available, self.NcclError = lib, True, FakeNcclError
        codes = itertools.count(100)
        self._types, self._ops = {}, {}
        for name, t in _TYPES.items():
            setattr(self, name, next(codes))
            self._types[getattr(self, name)] = t
        for name, f in _OPS.items():
            setattr(self, name, next(codes))
            self._ops[getattr(self, name)] = f
        self.streams, self.cliques, self.aborted = {}, {}, []
        self.lock = threading.Lock()
        self._local, self._ids = threading.local(), itertools.count()
        self.comms = []  # every FakeComm made, in order
        self.NcclCommunicator = _CommFactory(self)

    def type_of(self, code):
        return self._types[code]

    def op_of(self, code):
        return self._ops[code]

    def get_unique_id(self):
        return f"fake-unique-id-{next(self._ids)}".encode().ljust(128, b"\0")

    # --- groups, per thread as NCCL's ---
    def depth(self):
        return getattr(self._local, "depth", 0)

    def held(self):
        if not hasattr(self._local, "held"):
            self._local.held = []
        return self._local.held

    def groupStart(self):
        self._local.depth = self.depth() + 1

    def groupEnd(self):
        if self.depth() == 0:
            raise FakeNcclError(5, "groupEnd without groupStart")
        self._local.depth -= 1
        if self._local.depth == 0:
            held, self._local.held = self.held(), []
            for stream, run in held:
                stream.calls.put(run)


class FakeLib:
    """Stands in for `mytorch.distributed.nccl_lib.CupyLib`: NumPy as the array module, the
    fake nccl, one fake stream per device, host addresses as pointers."""

    def __init__(self):
        self.xp, self.nccl = np, FakeNccl(self)
        self._local = threading.local()

    def current_device(self):
        return getattr(self._local, "device", 0)

    @contextlib.contextmanager
    def on_device(self, device_id):
        before = self.current_device()
        self._local.device = device_id
        try:
            yield
        finally:
            self._local.device = before

    def _stream(self):
        device = self.current_device()
        key = ("stream", device)
        with self.nccl.lock:
            if key not in self.nccl.streams:
                self.nccl.streams[key] = _Stream(f"fake-stream-{device}")
        return key

    def stream_ptr(self):
        return self._stream()

    def record_event(self):
        event = _Event()
        self.nccl.streams[self._stream()].calls.put(event._done.set)
        return event

    def ptr(self, a):
        return a.ctypes.data

    def device_of(self, a):
        return None

    def copy_bytes(self, dst, dst_at, src, src_at, nbytes):
        dst.reshape(-1).view(np.uint8)[dst_at:dst_at + nbytes] = \
            src.reshape(-1).view(np.uint8)[src_at:src_at + nbytes]

    def to_host(self, a):
        return np.asarray(a)

    def close(self):
        """End the fake streams' worker threads."""
        for stream in self.nccl.streams.values():
            stream.calls.put(None)
