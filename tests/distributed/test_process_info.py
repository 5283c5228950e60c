"""`mytorch.distributed.initialize` and what it changes: process_index/process_count,
global and local devices, communicators for device sets; and the single-process defaults."""

import subprocess
import sys

import pytest

import mytorch as mt
import mytorch.distributed as dist


def test_single_process_defaults():
    assert not dist.is_initialized()
    assert mt.process_index() == dist.process_index() == 0
    assert mt.process_count() == dist.process_count() == 1
    assert mt.devices() == mt.local_devices() == dist.local_devices()
    assert all(d.process_index == 0 for d in mt.devices())
    assert mt.device_count() == mt.local_device_count() == len(mt.devices())
    assert repr(mt.devices()[0]) == "CpuDevice(id=0)"
    dist.shutdown()  # a no-op when not initialized
    with pytest.raises(RuntimeError, match="call mytorch.distributed.initialize"):
        dist.world_communicator()


def test_importing_mytorch_does_not_import_mpi4py():
    code = "import sys, mytorch; assert 'mpi4py' not in sys.modules, 'imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.mpi
def test_initialize_on_two_processes(launch_script):
    run = launch_script("""
        import os, sys
        import numpy as np
        import mytorch as mt
        import mytorch.distributed as dist

        mt.config.update("num_cpu_devices", 2)
        assert "mpi4py" not in sys.modules
        assert (mt.process_index(), mt.process_count()) == (0, 1)
        try:
            dist.initialize(num_processes=3)
        except RuntimeError as e:
            print("error:", e)
        dist.initialize(process_id=int(os.environ["MYTORCH_PROCESS_ID"]))
        dist.initialize()  # idempotent
        me = mt.process_index()
        print("index", me, "count", mt.process_count(), dist.is_initialized())
        print("devices", mt.devices())
        print("local", mt.local_devices(), mt.local_devices(process_index=1 - me))
        print("counts", mt.device_count(), mt.local_device_count())
        assert mt.devices() == mt.devices()  # the same Device objects each time
        local = mt.local_devices()
        assert all(d.backend is not None for d in local)
        assert all(d.backend is None for d in mt.devices() if d.process_index != me)
        x = mt.device_put(np.arange(3.0), local[1])
        assert x.device is local[1] and float((x * 2).sum()) == 6.0

        from mytorch.distributed.mpi import mpi_endpoints
        world = [mt.local_devices(process_index=p)[0] for p in range(2)]
        (device, comm), = mpi_endpoints(world).items()
        assert device is local[0] and comm.rank == me and comm.size == 2
        assert mpi_endpoints(world)[device] is comm  # cached per device set
        print("psum", comm.allreduce(np.float32(me + 1), "sum"))
        swapped = world[::-1]  # rank r is the replica of devices[r]
        print("swapped rank", mpi_endpoints(swapped)[device].rank)
        # a device set of process 0 alone: built by process 0 without process 1
        if me == 0:
            (d, solo), = mpi_endpoints(world[:1]).items()
            print("solo", solo.size, solo.allgather(np.ones(2)).shape)
        for bad in ([local[0], local[1]], world[1 - me:2 - me]):
            try:
                mpi_endpoints(bad)
            except ValueError as e:
                print("error:", str(e).split(" at ")[0])
        dist.shutdown()
        print("after", mt.process_index(), mt.process_count(), mt.devices())
    """)
    assert run.returncode == 0, run
    for me in (0, 1):
        out = run.lines(me)
        assert out[0].startswith("error: mytorch.distributed.initialize(num_processes=3): MPI "
                                 "started 2 processes"), run
        assert out[1] == f"index {me} count 2 True", run
        assert out[2] == ("devices [CpuDevice(id=0), CpuDevice(id=1), "
                          "CpuDevice(id=0, process_index=1), CpuDevice(id=1, process_index=1)]")
        mine = ", process_index=1" if me else ""
        theirs = "" if me else ", process_index=1"
        assert out[3] == (f"local [CpuDevice(id=0{mine}), CpuDevice(id=1{mine})] "
                          f"[CpuDevice(id=0{theirs}), CpuDevice(id=1{theirs})]"), run
        assert out[4] == "counts 4 2", run
        assert out[5] == "psum 3.0", run
        assert out[6] == f"swapped rank {1 - me}", run
        rest = out[8:] if me == 0 else out[7:]
        assert rest[0].startswith("error: pmap over the devices of several processes needs one "
                                  f"device per process, but process {me} own"), run
        assert rest[1].startswith(f"error: pmap over [CpuDevice(id=0{theirs})]: this process "
                                  f"({me}) owns none of them"), run
        assert rest[2] == "after 0 1 [CpuDevice(id=0), CpuDevice(id=1)]", run
    assert run.lines(0)[7] == "solo 1 (1, 2)", run
