"""The NCCL communicator's Python logic, on a FAKE nccl (tests/distributed/fake_nccl.py):
NumPy buffers in host memory and worker threads stand in for GPU buffers, streams and
NCCL's kernels. No GPU and no NCCL run in this file; what is checked is what the
communicator asks of NCCL (datatypes, ops, counts, pointers, grouped send/recv), the
results it assembles (against the thread communicator's), its schedule check, timeouts,
failure propagation, the unique-id exchange over MPI and how pmap picks it. The same
operations on real GPUs are in test_nccl_gpu.py (gpu-marked)."""

import inspect
import os
import re
import subprocess
import sys
import threading
import time

import ml_dtypes
import numpy as np
import pytest

from mytorch.core.backend import Device
from mytorch.distributed import groups, nccl, nccl_lib
from mytorch.distributed.threads import ThreadCommunicator, ThreadGroup
from mytorch.errors import CollectiveError

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fake_nccl import SIGNATURES, FakeComm, FakeLib, FakeNccl  # noqa: E402  (the fake, beside us)

_HERE = os.path.dirname(os.path.abspath(__file__))

DTYPES = [np.float32, np.float64, np.int8, np.uint8, np.int32, np.uint32, np.int64,
          np.uint64, np.float16, ml_dtypes.bfloat16, np.bool_, np.complex64, np.complex128,
          np.int16]
SHAPES = [(), (3,), (2, 3, 4)]
REDUCE = {"sum": np.add, "max": np.maximum, "min": np.minimum}
PAIRS = [[(0, 1), (1, 2), (2, 0)], [(0, 1)], [(1, 1)], [(2, 0), (0, 2)], []]


def run_ranks(comms, fn, timeout=30):
    """[fn(comm) for each comm], each on its own thread (as pmap runs its replicas);
    re-raises the first exception."""
    results, errors = [None] * len(comms), [None] * len(comms)

    def go(r):
        try:
            results[r] = fn(comms[r])
        except BaseException as e:  # noqa: BLE001 (re-raised below)
            errors[r] = e

    threads = [threading.Thread(target=go, args=(r,)) for r in range(len(comms))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
        assert not t.is_alive(), "a rank hung"
    for e in errors:
        if e is not None:
            raise e
    return results


def draw(rng, dtype, shape):
    if np.dtype(dtype) == np.bool_:
        return rng.normal(size=shape) > 0
    if np.dtype(dtype).kind == "c":
        return (rng.normal(size=shape) + 1j * rng.normal(size=shape)).astype(dtype)
    if np.dtype(dtype).kind == "u":
        return rng.integers(0, 9, size=shape).astype(dtype)
    return (rng.normal(size=shape) * 4).astype(dtype)


def reducible(dtype, op):
    name = np.dtype(dtype).name
    return name != "int16" and (np.dtype(dtype).kind != "c" or op == "sum")


def operations(comm, dtype, seed=0):
    """Every collective on rank comm.rank's draws: a list of (label, result)."""
    n, r = comm.size, comm.rank
    rng = np.random.default_rng(seed)  # the same draws on every rank
    out = []
    for shape in SHAPES:
        xs = draw(rng, dtype, (n, *shape))
        full = draw(rng, dtype, (n, n, *shape))
        x, mine = xs[r].copy(), full[r].copy()
        for op in ("sum", "max", "min"):
            if reducible(dtype, op):
                out.append((f"allreduce {op} {shape}", comm.allreduce(x, op)))
                if shape == () and isinstance(comm, ThreadCommunicator):
                    # ThreadCommunicator.reduce_scatter cannot make a 0-d result (its
                    # ufunc's out= is a NumPy scalar there): NumPy's answer instead
                    got = REDUCE[op].reduce(full[:, r], axis=0)
                    got = np.asarray(got.astype(dtype) if op == "sum" else got)
                else:
                    got = comm.reduce_scatter(mine, op)
                out.append((f"reduce_scatter {op} {shape}", got))
        out.append((f"allgather {shape}", comm.allgather(x)))
        out.append((f"all_to_all {shape}", comm.all_to_all(mine)))
        for pairs in PAIRS:
            out.append((f"permute {pairs} {shape}", comm.permute(x, pairs)))
        np.testing.assert_array_equal(x, xs[r])  # arguments are left unchanged
        np.testing.assert_array_equal(mine, full[r])
    comm.barrier()
    return out


@pytest.fixture
def lib():
    fake = FakeLib()
    yield fake
    fake.close()


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_operations_match_thread_communicator(lib, dtype):
    comms = nccl.NcclCommunicator.create_local([0, 1, 2], lib=lib)
    got = run_ranks(comms, lambda c: operations(c, dtype))
    want = run_ranks(ThreadGroup(3).communicators, lambda c: operations(c, dtype))
    low = np.dtype(dtype).name in ("float16", "bfloat16")
    for r in range(3):
        assert [label for label, _ in got[r]] == [label for label, _ in want[r]]
        for (label, g), (_, w) in zip(got[r], want[r], strict=True):
            assert g.dtype == w.dtype and g.shape == w.shape, (label, g.dtype, g.shape)
            if low and "sum" in label:  # the order of a sum is NCCL's (here the fake's)
                np.testing.assert_allclose(g.astype(np.float32), w.astype(np.float32),
                                           rtol=2e-2, atol=1e-2, err_msg=label)
            else:
                np.testing.assert_array_equal(g, w, err_msg=f"rank {r}: {label}")


def test_datatypes_and_counts_given_to_nccl(lib):
    """What NCCL is asked: bool as bytes with max/max/min, complex sums as pairs of reals,
    movement as bytes."""
    (comm,) = nccl.NcclCommunicator.create_local([0], lib=lib)
    seen = []
    real = comm.comm
    comm.comm = type("Spy", (), {
        "allReduce": lambda self, s, d, count, t, op, st: seen.append((count, t, op)),
        "allGather": lambda self, s, d, count, t, st: seen.append((count, t)),
        "check_async_error": lambda self: None})()
    f = lib.nccl
    comm.allreduce(np.zeros(3, np.bool_), "sum")
    comm.allreduce(np.zeros(3, np.bool_), "min")
    comm.allreduce(np.zeros(3, np.complex64), "sum")
    comm.allreduce(np.zeros(3, ml_dtypes.bfloat16), "max")
    comm.allgather(np.zeros((2, 3), np.float64))
    assert seen == [(3, f.NCCL_UINT8, f.NCCL_MAX), (3, f.NCCL_UINT8, f.NCCL_MIN),
                    (6, f.NCCL_FLOAT32, f.NCCL_SUM), (3, f.NCCL_BFLOAT16, f.NCCL_MAX),
                    (48, f.NCCL_UINT8)]
    comm.comm = real


def test_reduction_errors_name_the_collective_and_dtype(lib):
    (comm,) = nccl.NcclCommunicator.create_local([0], lib=lib)
    with pytest.raises(TypeError, match=r"allreduce\(sum\): NCCL cannot reduce int16"):
        comm.allreduce(np.zeros(3, np.int16), "sum")
    with pytest.raises(TypeError, match=r"reduce_scatter\(max\).*complex64.*no order"):
        comm.reduce_scatter(np.zeros((1, 3), np.complex64), "max")
    with pytest.raises(ValueError, match="op must be one of"):
        comm.allreduce(np.zeros(3, np.float32), "prod")
    with pytest.raises(ValueError, match=r"all_to_all: .*leading axis.*size 1, got float32\[3\]"):
        comm.all_to_all(np.zeros(3, np.float32))
    with pytest.raises(ValueError, match="at most once as a source"):
        comm.permute(np.zeros(3, np.float32), [(0, 0), (0, 0)])
    # data movement takes any dtype
    np.testing.assert_array_equal(comm.allgather(np.arange(3, dtype=np.int16)),
                                  [np.arange(3)])


def test_all_to_all_and_permute_are_grouped_send_recv(lib):
    comms = nccl.NcclCommunicator.create_local([0, 1, 2], lib=lib)
    x = np.zeros((3, 2), np.float32)
    run_ranks(comms, lambda c: c.all_to_all(x))
    for r, c in enumerate(comms):
        calls = c.comm.calls
        assert all(depth >= 1 for _, _, depth in calls), calls  # inside ncclGroupStart/End
        peers = [j for j in range(3) if j != r]
        assert [(m, p) for m, p, _ in calls] == [
            (m, j) for j in peers for m in ("send", "recv")]
        c.comm.calls.clear()
    run_ranks(comms, lambda c: c.permute(x, [(0, 1), (2, 2)]))
    assert [(m, p) for m, p, _ in comms[0].comm.calls] == [("send", 1)]
    assert [(m, p) for m, p, _ in comms[1].comm.calls] == [("recv", 0)]
    assert comms[2].comm.calls == []  # its own x: a copy, no NCCL call


def test_one_thread_drives_a_group_only_between_group_start_and_end(lib, monkeypatch):
    comms = nccl.NcclCommunicator.create_local([0, 1, 2], lib=lib)
    xs = [np.full(4, r + 1.0, np.float32) for r in range(3)]
    comms[0].group_start()
    outs = [c.allreduce(x, "sum") for c, x in zip(comms, xs, strict=True)]
    gathered = [c.allgather(x) for c, x in zip(comms, xs, strict=True)]
    comms[0].group_end()  # launches the six calls together and waits for them
    for out, g in zip(outs, gathered, strict=True):
        np.testing.assert_array_equal(out, np.full(4, 6.0))
        np.testing.assert_array_equal(g, np.stack(xs))
    # ungrouped, the first call waits for peers this thread never reaches: a timeout
    monkeypatch.setenv("MYTORCH_COLLECTIVE_TIMEOUT", "0.2")
    with pytest.raises(CollectiveError, match=r"rank 0 of 3 \(GPU 0\): the allreduce\(sum\) "
                                              r"of float32\[4\] did not complete within 0.2 s"):
        comms[0].allreduce(xs[0], "sum")


def test_check_schedule(lib):
    comms = nccl.NcclCommunicator.create_local([0, 1, 2], lib=lib)
    run_ranks(comms, lambda c: c.check_schedule(b"same", lambda: ["never called"]))
    schedules = [["psum i f32[3]", "all_gather i f32[3]"],
                 ["psum i f32[3]", "all_gather i f32[3]"],
                 ["psum i f32[3]", "ppermute i f32[3]"]]
    errors = []

    def check(c):
        lines = schedules[c.rank]
        try:
            c.check_schedule("\n".join(lines).encode(), lambda: lines)
        except CollectiveError as e:
            errors.append((c.rank, str(e)))

    run_ranks(comms, check)
    assert sorted(r for r, _ in errors) == [0, 1, 2]  # every rank raises, none hangs
    text = dict(errors)
    assert "rank 0 of 3: the replicas' sequences of collectives differ (rank 0 and rank 2)" \
        in text[0]
    assert "-all_gather i f32[3]\n+ppermute i f32[3]" in text[0]
    assert "(rank 2 and rank 0)" in text[2] and "+all_gather i f32[3]" in text[2]


def test_timeout_aborts_and_names_rank_and_collective(lib, monkeypatch):
    monkeypatch.setenv("MYTORCH_COLLECTIVE_TIMEOUT", "0.2")
    comms = nccl.NcclCommunicator.create_local([0, 1], lib=lib)
    x = np.ones(3, np.float32)
    with pytest.raises(CollectiveError) as info:
        comms[0].allreduce(x, "sum")  # rank 1 never calls
    message = str(info.value)
    assert "rank 0 of 2 (GPU 0): the allreduce(sum) of float32[3] did not complete within " \
           "0.2 s (MYTORCH_COLLECTIVE_TIMEOUT)" in message
    assert "ranks [1] never reached it" in message and "aborted" in message
    assert lib.nccl.aborted == [0]
    # the peer arriving later raises at once instead of waiting for an aborted group
    start = time.monotonic()
    with pytest.raises(CollectiveError, match=r"rank 1 of 2 \(GPU 1\): cannot run the "
                                              r"allreduce\(sum\).*rank 0 failed: the allreduce"):
        comms[1].allreduce(x, "sum")
    assert time.monotonic() - start < 0.2
    # pmap resets the group once every replica has returned: new NCCL communicators
    comms[0].group.reset()
    assert len(lib.nccl.comms) == 4
    got = run_ranks(comms, lambda c: c.allreduce(x * (c.rank + 1), "sum"))
    np.testing.assert_array_equal(got[0], np.full(3, 3.0))


def test_a_failed_replica_stops_its_peers(lib, monkeypatch):
    monkeypatch.setenv("MYTORCH_COLLECTIVE_TIMEOUT", "30")
    comms = nccl.NcclCommunicator.create_local([0, 1, 2], lib=lib)
    start = time.monotonic()

    def replica(c):
        if c.rank == 1:
            time.sleep(0.05)  # the others are waiting in the collective by now
            c.fail(ValueError("boom"))  # what pmap does for a replica that raised
            return None
        with pytest.raises(CollectiveError) as info:
            c.all_to_all(np.zeros((3, 2), np.float32))
        return str(info.value)

    messages = run_ranks(comms, replica)
    assert time.monotonic() - start < 5  # not the 30 s timeout
    for r in (0, 2):
        assert messages[r].startswith(f"rank {r} of 3 (GPU {r}): ")
        assert "all_to_all of float32[3,2]" in messages[r]
        assert "rank 1 raised ValueError: boom" in messages[r]
    assert sorted(lib.nccl.aborted) == [0, 2]


def test_an_asynchronous_nccl_error_is_a_collective_error(lib, monkeypatch):
    monkeypatch.setenv("MYTORCH_COLLECTIVE_TIMEOUT", "30")
    comms = nccl.NcclCommunicator.create_local([0, 1], lib=lib)
    comms[0].comm.clique.error = (0, 6)  # as NCCL reports a peer's broken connection
    with pytest.raises(CollectiveError, match=r"rank 0 of 2 \(GPU 0\): NCCL reported an "
                                              r"error during the allgather of int32\[2\]"):
        comms[0].allgather(np.zeros(2, np.int32))
    assert lib.nccl.aborted == [0]


def test_pmap_gets_nccl_endpoints_for_gpu_devices(lib, monkeypatch):
    monkeypatch.setattr(nccl_lib, "cupy_lib", lambda: lib)
    monkeypatch.setattr(nccl, "_COMMS", {})
    gpus = [Device("gpu", 0, None), Device("gpu", 1, None)]
    found = groups.endpoints(gpus, "i")
    assert list(found) == gpus
    assert [(c.rank, c.size, c.device_id) for c in found.values()] == [(0, 2, 0), (1, 2, 1)]
    assert all(isinstance(c, nccl.NcclCommunicator) for c in found.values())
    assert groups.endpoints(gpus, "j") == found  # built once per device set
    cpus = [Device("cpu", 0, None), Device("cpu", 1, None)]
    assert type(groups.endpoints(cpus, "i")[cpus[0]]).__name__ == "ThreadCommunicator"
    nccl.release_communicators()
    assert all(c.destroyed for c in lib.nccl.comms) and nccl._COMMS == {}


def test_cpu_pmap_never_loads_nccl():
    """(The GPU backend's probe may import cupy; NCCL and this module load only for GPUs.)"""
    code = ("import sys, mytorch as mt, numpy as np\n"
            "mt.config.update('num_cpu_devices', 2)\n"
            "print(mt.pmap(lambda x: mt.lax.psum(x, 'i'), axis_name='i')(np.ones(2)))\n"
            "print(sorted(m for m in sys.modules if 'nccl' in m))\n")
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(_HERE)))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "[]", done.stdout


def test_missing_cupy_or_nccl_says_to_install_the_gpu_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)
    with pytest.raises(ImportError, match=r"needs CuPy: pip install 'mytorch\[gpu\]'"):
        nccl_lib.CupyLib()
    monkeypatch.undo()
    cuda_nccl = pytest.importorskip("cupy.cuda.nccl")
    monkeypatch.setattr(cuda_nccl, "available", False)
    with pytest.raises(ImportError, match=r"needs NCCL.*'mytorch\[gpu\]'.*nvidia-nccl-cu13"):
        nccl_lib.CupyLib()


def test_fake_matches_cupy_nccl():
    """The fake's names and the calls the communicator makes exist in CuPy's nccl module
    with the arguments CuPy documents (read from its docstrings; no GPU needed)."""
    real = pytest.importorskip("cupy.cuda.nccl")
    if not real.available:
        pytest.skip("CuPy cannot load NCCL here (nvidia-nccl-cu13 missing)")
    fake = FakeNccl(FakeLib())
    names = [n for n in vars(fake) if n.startswith("NCCL_")]
    assert names and [n for n in names if not hasattr(real, n)] == []
    for name in ("get_unique_id", "groupStart", "groupEnd", "NcclError"):
        assert hasattr(real, name)
    comm = real.NcclCommunicator
    for name in ("initAll", "abort", "destroy", "check_async_error"):
        assert hasattr(comm, name)
    for method, args in SIGNATURES.items():
        doc = getattr(comm, method).__doc__.splitlines()[0]
        params = re.search(r"\((.*)\)", doc).group(1).split(", ")
        assert [p.split()[-1] for p in params] == ["self", *args.split(", ")], doc
        # and the fake's method takes the same arguments
        assert list(inspect.signature(getattr(FakeComm, method)).parameters)[1:] == \
            args.split(", ")


@pytest.mark.mpi
def test_unique_id_travels_over_mpi(launch_script):
    """Two processes, one (fake) GPU each: process 0 makes the unique id, both make their
    communicator with it, as ranks 0 and 1 of 2."""
    run = launch_script(f"""
        import os, sys
        sys.path.insert(0, {_HERE!r})
        import mytorch.distributed as dist
        from mytorch.core.backend import Device
        from mytorch.distributed import nccl
        from fake_nccl import FakeLib

        dist.initialize()
        me = dist.process_index()
        lib = FakeLib()
        lib.nccl.get_unique_id = lambda: f"id-of-process-{{me}}".encode()
        devices = [Device("gpu", 0, None, 0), Device("gpu", 0, None, 1)]
        (device, comm), = nccl.nccl_endpoints(devices, lib=lib).items()
        (made,) = lib.nccl.comms
        print("endpoint", device.process_index, comm.rank, comm.size, comm.device_id,
              made.rank, bytes(next(iter(lib.nccl.cliques))).decode())
        dist.shutdown()
        print("destroyed", made.destroyed)
    """)
    assert run.returncode == 0, run
    for r in (0, 1):
        assert run.lines(r) == [f"endpoint {r} {r} 2 0 {r} id-of-process-0", "destroyed True"]


def test_cupy_lib_uses_calls_cupy_has():
    """The CuPy calls CupyLib makes exist with the arguments it passes (read from CuPy's
    docstrings; nothing touches a device)."""
    cupy = pytest.importorskip("cupy")
    cuda = cupy.cuda
    assert "block" in cuda.Event.__doc__ and "disable_timing" in cuda.Event.__doc__
    assert hasattr(cuda.Event, "done") and hasattr(cuda.Event, "record")
    assert cuda.MemoryPointer.copy_from_device_async.__doc__.startswith(
        "MemoryPointer.copy_from_device_async(self, MemoryPointer src, size_t size, "
        "stream=None)")
    assert hasattr(cuda.MemoryPointer, "__add__") and hasattr(cuda.MemoryPointer, "ptr")
    assert callable(cuda.get_current_stream) and "Stream.ptr (intptr_t)" in cuda.Stream.__doc__
    assert callable(cupy.asnumpy) and hasattr(cuda.Device, "id")
