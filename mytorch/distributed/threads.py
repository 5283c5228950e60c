"""Replicas on threads of one process: `ThreadGroup(size)` gives one `Communicator` per rank.

The ranks of a group share two lists of slots (one slot per rank each, used by alternate
collectives) and one reusable barrier. A collective on a small buffer is one barrier wait:

    post:    rank r puts a copy of its operand in its slot of this collective's list
    wait:    every operand is posted
    compute: rank r reads the slots it needs and makes its own result

The next collective posts into the other list, and the one after that can only post into
this list again once every rank has passed the next wait, that is, has finished reading
here. The copy is what makes one wait enough: the caller may overwrite its operand as
soon as the collective returns, while another rank still reads it. A collective on a
large buffer posts the operand itself (no copy) and waits a second time, after computing,
until every rank is done reading (allreduce of a large buffer: rank r reduces its share
of the elements and writes it into every rank's result, so each element is reduced
once). A wait that does not complete within `collective_timeout()` seconds breaks the
barrier for everyone; a replica that raises calls `fail(exc)` (pmap does), which breaks it
as well. Either way every rank waiting, or arriving later, raises `CollectiveError`
naming itself, the collective and the rank that failed first (or the ranks that never
arrived). `reset()` makes a broken group usable again once every rank has returned.
"""

import difflib
import threading

import numpy as np

from mytorch.distributed.communicator import Communicator, collective_timeout
from mytorch.errors import CollectiveError

__all__ = ["ThreadGroup", "ThreadCommunicator"]

# buffers with fewer elements than this are copied when posted (one barrier wait per
# collective), and in allreduce each rank reduces all of them itself (splitting them among
# the ranks costs more in Python than it saves)
_SPLIT_ABOVE = 1 << 15
_REDUCERS = {"sum": np.add, "max": np.maximum, "min": np.minimum}


class ThreadGroup:
    """`size` ranks on threads of this process; `group.communicators[r]` is rank r's
    endpoint (a `ThreadCommunicator`)."""

    def __init__(self, size):
        if type(size) is not int or size < 1:
            raise ValueError(f"ThreadGroup: size must be a positive int, got {size!r}")
        self.size = size
        self.slots = [[None] * size, [None] * size]  # alternate collectives use alternate lists
        self.barrier = threading.Barrier(size)
        self.lock = threading.Lock()
        self.failure = None  # (rank, reason) of the first failure, until reset()
        self.progress = [0] * size  # collectives each rank has entered
        self.communicators = [ThreadCommunicator(self, r) for r in range(size)]

    def fail(self, rank, reason):
        """Record that `rank` failed (first failure wins) and break the barrier, so every
        waiting rank raises instead of hanging."""
        with self.lock:
            if self.failure is None:
                self.failure = (rank, reason)
        self.barrier.abort()

    def reset(self):
        """Make the group usable again after a failure (every rank must have returned)."""
        with self.lock:
            self.failure = None
            self.slots = [[None] * self.size, [None] * self.size]
            self.progress = [0] * self.size
            self.barrier.reset()

    def __repr__(self):
        return f"ThreadGroup(size={self.size})"


class ThreadCommunicator(Communicator):
    """Rank `rank` of a `ThreadGroup`; see `mytorch.distributed.communicator`."""

    def __init__(self, group, rank):
        self.group, self.rank, self.size = group, rank, group.size

    # ---- the exchange ------------------------------------------------------------------------
    def fail(self, exc):
        """This rank failed with `exc`: the other ranks raise instead of waiting for it."""
        self.group.fail(self.rank, f"raised {type(exc).__name__}: {exc}")

    def _wait(self, name):
        g = self.group
        timeout = collective_timeout()
        try:
            g.barrier.wait(timeout)
        except threading.BrokenBarrierError:
            with g.lock:
                if g.failure is None:  # nobody failed: the wait timed out
                    behind = [r for r, k in enumerate(g.progress) if k < max(g.progress)]
                    g.failure = (None, f"did not complete within {timeout:g} s "
                                       f"(MYTORCH_COLLECTIVE_TIMEOUT); ranks {behind} never "
                                       "reached it")
                rank, reason = g.failure
            who = "" if rank is None else f": rank {rank} {reason}"
            what = reason if rank is None else ""
            raise CollectiveError(f"rank {self.rank}: {name} (collective "
                                  f"#{g.progress[self.rank]}) failed{who}{what}") from None

    def _exchange(self, name, posted, compute, owned=True):
        """Post `posted`, wait for every rank and return `compute(slots)`. `owned`: no rank
        changes what it posted once the collective returns (a copy, or a value nobody
        writes), so one wait is enough; otherwise wait again until every rank has read."""
        g = self.group
        slots = g.slots[g.progress[self.rank] % 2]
        g.progress[self.rank] += 1
        slots[self.rank] = posted
        self._wait(name)
        try:
            result = compute(slots)
        except Exception as e:
            self.fail(e)
            raise CollectiveError(f"rank {self.rank}: {name} failed: "
                                  f"{type(e).__name__}: {e}") from e
        if not owned:
            self._wait(name)
        return result

    def _post(self, x):
        """(what to post of operand `x`, whether it is the collective's own): a copy of a
        small buffer, the buffer itself otherwise."""
        return (x.copy(), True) if x.size < _SPLIT_ABOVE else (x, False)

    # ---- the collectives ---------------------------------------------------------------------
    def allreduce(self, x, op):
        """The elementwise `op` ("sum", "max", "min") of every rank's x: a new buffer."""
        ufunc = _REDUCERS[op]
        x = np.asarray(x)
        if self.size == 1:
            return x.copy()
        out = np.empty(x.shape, x.dtype)
        if x.size < _SPLIT_ABOVE:
            def compute(slots):
                np.copyto(out, slots[0][0])
                for s, _ in slots[1:]:
                    ufunc(out, s, out=out)
                return out

            return self._exchange(f"allreduce({op})", (x.copy(), out), compute)
        flat = np.ascontiguousarray(x).reshape(-1)
        lo = self.rank * flat.size // self.size
        hi = (self.rank + 1) * flat.size // self.size

        def compute_share(slots):
            mine = out.reshape(-1)[lo:hi]
            np.copyto(mine, slots[0][0][lo:hi])
            for s, _ in slots[1:]:
                ufunc(mine, s[lo:hi], out=mine)
            for r, (_, o) in enumerate(slots):
                if r != self.rank:
                    o.reshape(-1)[lo:hi] = mine
            return out

        return self._exchange(f"allreduce({op})", (flat, out), compute_share, owned=False)

    def allgather(self, x):
        """(size, *x.shape): rank r's x at index r."""
        x = np.asarray(x)
        if self.size == 1:
            return x[None].copy()
        posted, owned = self._post(x)
        return self._exchange("allgather", posted, np.stack, owned)

    def reduce_scatter(self, x, op):
        """x of shape (size, *S) on every rank: rank r gets the `op` over ranks of x[r]."""
        ufunc, x, r = _REDUCERS[op], np.asarray(x), self.rank
        _leading("reduce_scatter", x, self.size)
        if self.size == 1:
            return np.array(x[0])

        def compute(slots):
            out = np.array(slots[0][r])  # an array even where x[r] is 0-d
            for s in slots[1:]:
                ufunc(out, s[r], out=out)
            return out

        posted, owned = self._post(x)
        return self._exchange(f"reduce_scatter({op})", posted, compute, owned)

    def all_to_all(self, x):
        """x of shape (size, *S): block j goes to rank j; the result's block j is what
        rank j sent here."""
        x, r = np.asarray(x), self.rank
        _leading("all_to_all", x, self.size)
        if self.size == 1:
            return x.copy()
        posted, owned = self._post(x)
        return self._exchange("all_to_all", posted,
                              lambda slots: np.stack([s[r] for s in slots]), owned)

    def permute(self, x, pairs):
        """The x of the rank that `pairs` ((source, destination), ...) sends here, or
        zeros where none does."""
        x = np.asarray(x)
        source = next((s for s, d in pairs if d == self.rank), None)
        if self.size == 1:
            return x.copy() if source is not None else np.zeros_like(x)

        def compute(slots):
            return slots[source].copy() if source is not None else np.zeros_like(x)

        posted, owned = self._post(x)
        return self._exchange("permute", posted, compute, owned)

    def barrier(self):
        """Return once every rank has called it."""
        if self.size > 1:
            self._exchange("barrier", None, lambda slots: None)

    def check_schedule(self, digest, describe):
        """Raise CollectiveError on every rank, with a diff of the schedules, unless every
        rank passes the same `digest`."""
        if self.size == 1:
            return
        r = self.rank

        def compute(slots):
            other = next((k for k, (d, _) in enumerate(slots) if d != digest), None)
            if other is None:
                return None
            mine, theirs = list(describe()), list(slots[other][1]())
            diff = difflib.unified_diff(mine, theirs, f"rank {r}", f"rank {other}",
                                        lineterm="")
            return (other, "\n".join(diff))

        mismatch = self._exchange("check_schedule", (digest, describe), compute)
        if mismatch is not None:
            other, diff = mismatch
            raise CollectiveError(
                f"rank {r}: the collectives of rank {r} and rank {other} differ, so they "
                f"would wait for each other forever; their schedules:\n{diff}")


def _leading(name, x, size):
    if x.ndim == 0 or x.shape[0] != size:
        raise ValueError(f"{name}: the buffer's leading axis must have the group size "
                         f"{size}, got shape {x.shape}")
