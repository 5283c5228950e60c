"""The communicator interface: how the replicas of a pmap exchange buffers.

A `Communicator` is one replica's endpoint in a group of `size` replicas (its `rank` in
[0, size)): the replicas of one named axis of a pmap. Compiled code calls it with the
backend's buffers (NumPy arrays on the CPU; CuPy arrays, on the compute stream, for NCCL).
Every replica of the group calls the same collectives in the same order (the schedule,
fixed by the jaxpr); each call returns a new buffer and leaves its argument unchanged.

Implementations: `mytorch.distributed.threads` (replicas on threads of one process: shared
buffers and barriers), `mytorch.distributed.mpi` (one replica per process, through
mpi4py) and `mytorch.distributed.nccl` (one replica per GPU). All raise
`mytorch.errors.CollectiveError`, naming the rank and the collective, when a peer fails or
a call does not complete within the timeout (`MYTORCH_COLLECTIVE_TIMEOUT` seconds, default
300).

The operations, for a buffer `x` of shape S on every rank (`size` = n):

    allreduce(x, op)        -> S, the elementwise reduction (op: "sum", "max", "min")
                               of every rank's x
    allgather(x)            -> (n, *S), rank r's x at index r
    reduce_scatter(x, op)   -> S[1:], x of shape (n, *S[1:]) on every rank: rank r gets
                               the reduction over ranks of x[r]
    all_to_all(x)           -> (n, *S[1:]), x of shape (n, *S[1:]): rank r sends x[j] to
                               rank j and returns what rank j sent it at index j
    permute(x, pairs)       -> S, pairs of (source, destination) ranks, each rank at most
                               once as a source and once as a destination: the result is
                               the x of the rank sending to this one, zeros where none does
    barrier()               -> None, returns once every rank has called it
    check_schedule(digest, describe)
                            -> None: every rank passes the digest (bytes) of the sequence
                               of collectives its compiled program will run; if the
                               digests differ, every rank raises CollectiveError showing
                               the difference (`describe()` gives this rank's schedule as
                               lines of text, called only on a mismatch)
    group_start(), group_end()
                            -> bracket calls that may be issued together (NCCL's grouped
                               calls); the CPU implementations run them in order

`close()` releases what the group holds.
"""

import abc
import difflib
import hashlib
import os

import numpy as np

from mytorch.errors import CollectiveError

__all__ = ["Communicator", "collective_timeout", "check_schedule_by_gather"]

_DEFAULT_TIMEOUT = 300.0


def collective_timeout():
    """Seconds a collective may wait for its peers (`MYTORCH_COLLECTIVE_TIMEOUT`, default
    300), as a positive float."""
    raw = os.environ.get("MYTORCH_COLLECTIVE_TIMEOUT")
    if raw is None:
        return _DEFAULT_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"MYTORCH_COLLECTIVE_TIMEOUT must be a number of seconds, got "
                         f"{raw!r}") from None
    if not value > 0:
        raise ValueError(f"MYTORCH_COLLECTIVE_TIMEOUT must be positive, got {raw!r}")
    return value


class Communicator(abc.ABC):
    """One replica's endpoint in a group of replicas; see the module docstring for the
    semantics of each operation. Subclasses implement every abstract method."""

    rank: int
    size: int

    @abc.abstractmethod
    def allreduce(self, x, op):
        ...

    @abc.abstractmethod
    def allgather(self, x):
        ...

    @abc.abstractmethod
    def reduce_scatter(self, x, op):
        ...

    @abc.abstractmethod
    def all_to_all(self, x):
        ...

    @abc.abstractmethod
    def permute(self, x, pairs):
        ...

    @abc.abstractmethod
    def barrier(self):
        ...

    @abc.abstractmethod
    def check_schedule(self, digest, describe):
        ...

    def group_start(self):
        """Start a group of calls that may be issued together (a no-op on the CPU)."""

    def group_end(self):
        """End the group started by `group_start` (a no-op on the CPU)."""

    def close(self):
        """Release what the endpoint holds (a no-op by default)."""

    def __repr__(self):
        return f"{type(self).__name__}(rank={self.rank}, size={self.size})"


def check_schedule_by_gather(rank, size, digest, describe, gather):
    """The schedule check of a communicator that can gather bytes: `gather(a)` takes this
    rank's 1-D uint8 array (the same length on every rank) and returns every rank's, stacked
    (size, len). Every rank gathers the SHA-256 of its `digest`; where they differ, every
    rank gathers the schedules' text (`describe()`) and raises CollectiveError with a diff
    of its own and the first differing rank's."""
    mine = np.frombuffer(hashlib.sha256(bytes(digest)).digest(), np.uint8)
    digests = gather(mine)
    differs = [r for r in range(size) if not np.array_equal(digests[r], mine)]
    if not differs:
        return
    text = describe()
    lines = text.splitlines() if isinstance(text, str) else [str(s) for s in text]
    data = np.frombuffer("\n".join(lines).encode(), np.uint8)
    lengths = gather(np.array([data.size], np.int64).view(np.uint8)).view(np.int64)[:, 0]
    padded = np.zeros(max(1, int(lengths.max())), np.uint8)
    padded[:data.size] = data
    texts = gather(padded)
    other = differs[0]
    theirs = bytes(texts[other, :lengths[other]]).decode().splitlines()
    diff = "\n".join(difflib.unified_diff(lines, theirs, f"rank {rank}", f"rank {other}",
                                          lineterm=""))
    raise CollectiveError(
        f"rank {rank} of {size}: the replicas' sequences of collectives differ (rank {rank} "
        f"and rank {other}): they would wait in different collectives and hang. Each line "
        f"is one collective (primitive, axes, shapes, dtypes), in order:\n{diff}")
