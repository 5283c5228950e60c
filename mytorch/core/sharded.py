"""`ShardedArray`: a concrete array held as one shard per device (pmap's results).

A pmap over n devices returns its mapped results as a ShardedArray of global shape
(n, *shard shape): shard i lives on device i. It is an `ArrayImpl`, so every eager
operation, `np.asarray`, indexing and `mt.device_get` work on it: the first use of its
buffer gathers the shards into one host buffer (kept, so it gathers once). A pmap over the
same devices that maps it at axis 0 reads the shards in place, without gathering.

When its devices span processes (a pmap over the global devices of an MPI run), each
process holds only its own devices' shards; gathering is then an allgather over those
processes (the `gather` the pmap passes), so it is a collective: every process must read
the array (as every process ran the pmap that made it), or the readers wait for the others
until the collective timeout. Its `device`, where eager operations on the gathered value
run, is then this process's first device of it.
"""

import numpy as np

from mytorch.core.array import ArrayImpl
from mytorch.core.aval import ShapedArray

__all__ = ["ShardedArray", "sharded_aval"]


class ShardedArray(ArrayImpl):
    """One buffer per device (`shards[i]` on `devices[i]`, each of shape aval.shape[1:])
    standing for their stack, of abstract value `aval`.

    `shards[i]` is None for a device of another process; `gather(devices, shards)` then
    returns the stacked host buffer, exchanging the shards with the other processes."""

    __slots__ = ("_shards", "_devices", "_aval", "_gathered", "_gather")

    def __init__(self, shards, devices, aval, gather=None):
        self._shards, self._devices, self._aval = list(shards), tuple(devices), aval
        self._gathered, self._gather = None, gather
        self._weak = aval.weak_type
        self._device = next(d for d, s in zip(self._devices, self._shards) if s is not None)
        self._committed = True

    def _on(self, device):
        """The stacked value as a buffer of `device` (the gathered buffer is on the host)."""
        buf = self._buf
        return buf if device.platform == "cpu" else device.backend.put(buf, device)

    # the gathered buffer stands in for ArrayImpl's: computed on first use
    @property
    def _buf(self):
        if self._gathered is None:
            if self._gather is not None:
                self._gathered = self._gather(self._devices, self._shards)
            else:
                self._gathered = np.stack([d.backend.to_numpy(s)
                                           for d, s in zip(self._devices, self._shards)])
        return self._gathered

    @_buf.setter
    def _buf(self, value):  # jit's donation replaces the buffer: the shards go with it
        self._gathered, self._shards = value, None

    @property
    def shape(self):
        return self._aval.shape

    @property
    def dtype(self):
        return self._aval.dtype

    @property
    def aval(self):
        return self._aval

    def devices(self):
        """The devices holding a shard."""
        return set(self._devices)

    @property
    def sharding_devices(self):
        """The devices in shard order: shard i lives on `sharding_devices[i]`."""
        return self._devices

    @property
    def shards(self):
        """The shards this process holds as arrays, in shard order, each on its device (of
        shape `shape[1:]`): all of them in a single process."""
        if self._shards is None:
            raise RuntimeError("this sharded array was donated: use the function's result "
                               "instead")
        return [ArrayImpl(s, self._weak, d) for s, d in zip(self._shards, self._devices)
                if s is not None]

    def is_gathered(self):
        """Whether the shards have been gathered into one buffer (by a use of the whole)."""
        return self._gathered is not None

    def shard_buffers(self, devices):
        """The shard buffers when they lie on `devices` in that order (else None): what a
        pmap over those devices reads in place (None for another process's device)."""
        if self._shards is None or self._devices != tuple(devices):
            return None
        return self._shards

    def __repr__(self):
        return super().__repr__().replace("Array(", "ShardedArray(", 1)


def sharded_aval(shard_aval, n):
    """The abstract value of n shards of `shard_aval` stacked."""
    return ShapedArray((n, *shard_aval.shape), shard_aval.dtype, shard_aval.weak_type)
