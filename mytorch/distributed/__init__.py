"""Multi-process runs: one process per group of devices, joined through MPI.

    import mytorch as mt
    mt.distributed.initialize()        # under `python -m mytorch.distributed.launch -n 2`
    mt.process_index(), mt.process_count()   # 0 or 1, 2
    mt.devices()                       # every process's devices; mt.local_devices(): ours

`initialize` is `jax.distributed.initialize`'s counterpart: the rank and the number of
processes come from MPI (mpi4py's COMM_WORLD, as started by mpiexec or the launcher), which
also does the rendezvous, so no coordinator is needed. Importing mytorch does not import
mpi4py; only `initialize` does.
"""

import os
import sys

from mytorch.core.backend import Device, get_backend

__all__ = ["initialize", "shutdown", "is_initialized", "process_index", "process_count",
           "global_devices", "local_devices", "world_communicator"]

# the state of an initialized run: {"comm", "rank", "size", "counts": [{platform: n}],
# "remote": {(platform, process, id): Device}}; empty when not initialized
_STATE = {}


def initialize(coordinator_address=None, num_processes=None, process_id=None):
    """Join this process to the multi-process run it was started in (by mpiexec or
    `python -m mytorch.distributed.launch`); a no-op when already initialized with the same
    arguments.

    The rank and size come from MPI's COMM_WORLD; `num_processes` and `process_id`, and the
    launcher's MYTORCH_NUM_PROCESSES / MYTORCH_PROCESS_ID, are checked against them.
    `coordinator_address` is accepted for JAX compatibility and unused: MPI does the
    rendezvous. Every process then learns how many devices each other process has, so
    `mt.devices()` lists the global devices."""
    if _STATE:
        _check_args(num_processes, process_id, _STATE["rank"], _STATE["size"])
        return
    try:
        from mpi4py import MPI
    except ImportError:
        raise ImportError("mytorch.distributed.initialize needs mpi4py and an MPI library: "
                          "pip install 'mytorch[distributed]' (mpi4py and the mpich wheel)"
                          ) from None
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    for var, value in (("MYTORCH_NUM_PROCESSES", size), ("MYTORCH_PROCESS_ID", rank)):
        raw = os.environ.get(var)
        if raw is not None and raw.strip() != str(value):
            raise RuntimeError(f"mytorch.distributed.initialize: {var}={raw} but MPI says "
                               f"{value}: the process was not started by the launcher that "
                               f"set it")
    _check_args(num_processes, process_id, rank, size)
    counts = comm.allgather(_local_counts())
    _STATE.update(comm=comm, rank=rank, size=size, counts=counts, remote={})
    _stamp_local()


def _check_args(num_processes, process_id, rank, size):
    if num_processes is not None and num_processes != size:
        raise RuntimeError(
            f"mytorch.distributed.initialize(num_processes={num_processes}): MPI started "
            f"{size} process{'es' if size != 1 else ''}; run the script under "
            f"`python -m mytorch.distributed.launch -n {num_processes}` (or mpiexec)")
    if process_id is not None and process_id != rank:
        raise RuntimeError(f"mytorch.distributed.initialize(process_id={process_id}): MPI "
                           f"gives this process rank {rank}")


def _local_counts():
    """{platform: number of devices} of this process's available backends."""
    from mytorch.core import backend as _backend

    return {platform: len(b.devices()) for platform, b in _backend._BACKENDS.items()}


def _stamp_local(index=None):
    """Set the process_index of this process's devices (created lazily by the backends)."""
    from mytorch.core import backend as _backend

    index = _STATE.get("rank", 0) if index is None else index
    for b in _backend._BACKENDS.values():
        for d in b.devices():
            d.process_index = index


def shutdown():
    """Leave the multi-process run: release the communicators built for it; afterwards
    this process is process 0 of 1 again. A no-op when not initialized."""
    if not _STATE:
        return
    from mytorch.distributed import mpi

    nccl = sys.modules.get("mytorch.distributed.nccl")  # loaded only if GPUs were used
    if nccl is not None:
        nccl.release_communicators()
    mpi.release_communicators()
    _STATE.clear()
    _stamp_local(0)


def is_initialized():
    """Whether `initialize` has run (and `shutdown` has not)."""
    return bool(_STATE)


def process_index():
    """This process's index in [0, process_count()) (0 when not initialized)."""
    return _STATE.get("rank", 0)


def process_count():
    """How many processes take part in the run (1 when not initialized)."""
    return _STATE.get("size", 1)


def global_devices(platform=None):
    """Every process's devices of `platform` (None: the default backend's), ordered by
    process then id: this process's own Device objects, and for the others Devices
    without a backend whose `process_index` names their process."""
    backend = get_backend(platform)
    if not _STATE:
        return list(backend.devices())
    _stamp_local()
    out = []
    for p, counts in enumerate(_STATE["counts"]):
        if p == _STATE["rank"]:
            out.extend(backend.devices())
            continue
        for i in range(counts.get(backend.platform, 0)):
            key = (backend.platform, p, i)
            device = _STATE["remote"].get(key)
            if device is None:
                device = _STATE["remote"][key] = Device(backend.platform, i, None, p)
            out.append(device)
    return out


def local_devices(platform=None):
    """This process's devices of `platform` (None: the default backend's)."""
    devices = list(get_backend(platform).devices())
    if _STATE:
        _stamp_local()
    return devices


def world_communicator():
    """mpi4py's COMM_WORLD of the initialized run (an error naming `initialize` if not)."""
    if not _STATE:
        raise RuntimeError("mytorch.distributed: the run is not initialized: call "
                           "mytorch.distributed.initialize() first (under `python -m "
                           "mytorch.distributed.launch -n N script.py`)")
    return _STATE["comm"]
