"""Where pmap gets its communicators: `endpoints(devices, axis_name)`."""

from mytorch.distributed.threads import ThreadGroup

__all__ = ["endpoints"]


def endpoints(devices, axis_name):
    """{device: Communicator} for this process's devices among `devices` (the replicas of
    one pmap axis, rank i for devices[i]).

    GPU devices: NCCL endpoints (`mytorch.distributed.nccl.nccl_endpoints`, which imports
    CuPy). Devices all local: a new `ThreadGroup` (replicas on threads, one per device).
    Devices spanning processes: the MPI endpoints (`mytorch.distributed.mpi.mpi_endpoints`,
    one device per process)."""
    devices = tuple(devices)
    if devices and all(d.platform == "gpu" and getattr(d.backend, "uses_nccl", True)
                       for d in devices):
        from mytorch.distributed.nccl import nccl_endpoints

        return nccl_endpoints(devices)
    if all(getattr(d, "process_index", 0) == _process_index() for d in devices):
        group = ThreadGroup(len(devices))
        return dict(zip(devices, group.communicators))
    from mytorch.distributed.mpi import mpi_endpoints

    return mpi_endpoints(devices)


def _process_index():
    """This process's index among the processes of a multi-process run (0 alone)."""
    try:
        from mytorch.distributed import process_index
    except ImportError:
        return 0
    return process_index()
