"""The NCCL communicator on real GPUs (gpu-marked: skipped without CuPy, NCCL and at least
2 GPUs): every collective and dtype against the thread communicator on the same inputs,
one thread driving a group, the schedule check, a timeout with abort and reset, a peer's
failure, one process per GPU under the launcher, and pmap's psum on GPUs against the CPU.
The same logic on a fake NCCL, without a GPU, is test_nccl.py."""

import os
import sys
import time

import numpy as np
import pytest

from mytorch.distributed import nccl
from mytorch.distributed.threads import ThreadGroup
from mytorch.errors import CollectiveError

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_nccl import DTYPES, operations, run_ranks  # noqa: E402  (shared with the fake's)

pytestmark = pytest.mark.gpu


def _gpu_count():
    """How many GPUs CuPy sees with NCCL loadable, or the reason there are none to use."""
    try:
        import cupy
        from cupy.cuda import nccl as cuda_nccl
    except ImportError as e:
        return f"no CuPy: {e}"
    if not cuda_nccl.available:
        return "CuPy cannot load NCCL (pip install nvidia-nccl-cu13)"
    try:
        return cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # noqa: BLE001 (CUDARuntimeError without a driver)
        return f"no GPU: {type(e).__name__}: {e}"


_COUNT = _gpu_count()
if isinstance(_COUNT, str) or _COUNT < 2:
    pytest.skip(f"needs at least 2 GPUs with CuPy and NCCL ({_COUNT})",
                allow_module_level=True)

import cupy  # noqa: E402

N = min(_COUNT, 4)


class OnGpu:
    """An NcclCommunicator fed NumPy operands: each is copied to the rank's GPU, and each
    result back to the host (checking that it was made on that GPU)."""

    def __init__(self, comm):
        self.comm, self.rank, self.size = comm, comm.rank, comm.size

    def _call(self, name, x, *args):
        with cupy.cuda.Device(self.comm.device_id):
            out = getattr(self.comm, name)(cupy.asarray(x), *args)
            assert out.device.id == self.comm.device_id
            return cupy.asnumpy(out)

    def allreduce(self, x, op):
        return self._call("allreduce", x, op)

    def allgather(self, x):
        return self._call("allgather", x)

    def reduce_scatter(self, x, op):
        return self._call("reduce_scatter", x, op)

    def all_to_all(self, x):
        return self._call("all_to_all", x)

    def permute(self, x, pairs):
        return self._call("permute", x, pairs)

    def barrier(self):
        self.comm.barrier()


@pytest.fixture(scope="module")
def comms():
    group = nccl.NcclLocalGroup(range(N))
    yield group.communicators
    group.close()


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_gpu_operations_match_thread_communicator(comms, dtype):
    got = run_ranks([OnGpu(c) for c in comms], lambda c: operations(c, dtype), timeout=120)
    want = run_ranks(ThreadGroup(N).communicators, lambda c: operations(c, dtype))
    low = np.dtype(dtype).name in ("float16", "bfloat16")
    for r in range(N):
        for (label, g), (_, w) in zip(got[r], want[r], strict=True):
            assert g.dtype == w.dtype and g.shape == w.shape, (label, g.dtype, g.shape)
            if "sum" in label and (low or np.dtype(dtype).kind in "fc"):
                # NCCL sums in its own order (and float16/bfloat16 round at each step)
                tol, wide = (2e-2, np.float64) if low else (1e-5, np.complex128)
                np.testing.assert_allclose(g.astype(wide), w.astype(wide), rtol=tol, atol=tol,
                                           err_msg=f"rank {r}: {label}")
            else:
                np.testing.assert_array_equal(g, w, err_msg=f"rank {r}: {label}")


def test_gpu_collectives_run_on_the_current_stream(comms):
    def go(c):
        with cupy.cuda.Device(c.device_id):
            stream = cupy.cuda.Stream(non_blocking=True)
            with stream:
                x = cupy.full(1 << 20, c.rank + 1.0, cupy.float32)
                out = c.allreduce(x * 2, "sum")  # the product is made on `stream` too
            return float(out[-1])

    assert run_ranks(comms, go) == [float(N * (N + 1))] * N


def test_gpu_one_thread_drives_the_group_in_a_group_call(comms):
    xs = []
    for c in comms:
        with cupy.cuda.Device(c.device_id):
            xs.append(cupy.full(1000, c.rank + 1.0, cupy.float64))
    comms[0].group_start()
    outs = [c.allreduce(x, "sum") for c, x in zip(comms, xs, strict=True)]
    comms[0].group_end()
    for c, out in zip(comms, outs, strict=True):
        with cupy.cuda.Device(c.device_id):
            np.testing.assert_array_equal(cupy.asnumpy(out), np.full(1000, N * (N + 1) / 2))


def test_gpu_check_schedule(comms):
    errors = []

    def check(c):
        lines = ["psum i f32[3]"] + (["ppermute i f32[3]"] if c.rank == N - 1 else [])
        try:
            c.check_schedule("\n".join(lines).encode(), lambda: lines)
        except CollectiveError as e:
            errors.append((c.rank, str(e)))

    run_ranks(comms, check)
    assert sorted(r for r, _ in errors) == list(range(N))
    assert "+ppermute i f32[3]" in dict(errors)[0]


def test_gpu_timeout_aborts_then_reset(comms, monkeypatch):
    monkeypatch.setenv("MYTORCH_COLLECTIVE_TIMEOUT", "2")
    with cupy.cuda.Device(comms[0].device_id):
        x = cupy.ones(3, cupy.float32)
    start = time.monotonic()
    with pytest.raises(CollectiveError, match=r"rank 0 of \d+ \(GPU \d+\): the allreduce\(sum\) "
                                              r"of float32\[3\] did not complete within 2 s"):
        comms[0].allreduce(x, "sum")  # the other ranks never call
    assert time.monotonic() - start < 30  # the abort ended the waiting kernel
    with cupy.cuda.Device(comms[1].device_id):
        with pytest.raises(CollectiveError, match="cannot run the allreduce"):
            comms[1].allreduce(cupy.ones(3, cupy.float32), "sum")
    comms[0].group.reset()

    def go(c):
        with cupy.cuda.Device(c.device_id):
            return float(c.allreduce(cupy.ones(3, cupy.float32), "sum")[0])

    assert run_ranks(comms, go) == [float(N)] * N


def test_gpu_peer_failure_stops_the_others(comms, monkeypatch):
    monkeypatch.setenv("MYTORCH_COLLECTIVE_TIMEOUT", "60")
    start = time.monotonic()

    def replica(c):
        if c.rank == 1:
            time.sleep(0.2)
            c.fail(ValueError("boom"))
            return None
        with cupy.cuda.Device(c.device_id):
            with pytest.raises(CollectiveError, match="rank 1 raised ValueError: boom"):
                c.allreduce(cupy.ones(3, cupy.float32), "sum")

    run_ranks(comms, replica)
    assert time.monotonic() - start < 30
    comms[0].group.reset()


def test_gpu_pmap_psum_matches_cpu():
    import mytorch as mt

    try:
        gpus = mt.devices("gpu")
    except Exception as e:  # noqa: BLE001 (the GPU backend says why it has no devices)
        pytest.skip(f"the GPU backend has no devices: {e}")
    n = min(len(gpus), N)
    x = np.arange(n * 6, dtype=np.float32).reshape(n, 6)

    def f(v):
        return mt.lax.psum(v * 2, "i"), mt.lax.all_gather(v, "i"), mt.lax.ppermute(
            v, "i", [(k, (k + 1) % n) for k in range(n)])

    got = mt.pmap(f, axis_name="i", devices=gpus[:n])(x)
    before = len(mt.devices("cpu"))
    mt.config.update("num_cpu_devices", max(n, before))
    try:
        want = mt.pmap(f, axis_name="i", devices=mt.devices("cpu")[:n])(x)
    finally:
        mt.config.update("num_cpu_devices", before)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6)


@pytest.mark.mpi
def test_gpu_one_process_per_gpu(launch_script):
    run = launch_script("""
        import cupy, numpy as np
        import mytorch.distributed as dist
        from mytorch.core.backend import Device
        from mytorch.distributed import nccl

        dist.initialize()
        me = dist.process_index()
        devices = [Device("gpu", p, None, p) for p in range(2)]  # GPU p for process p
        (device, comm), = nccl.nccl_endpoints(devices).items()
        with cupy.cuda.Device(device.id):
            x = cupy.arange(6, dtype=cupy.float32) + 10 * me
            total = cupy.asnumpy(comm.allreduce(x, "sum"))
            gathered = cupy.asnumpy(comm.allgather(x))
            swapped = cupy.asnumpy(comm.permute(x, [(0, 1), (1, 0)]))
        np.testing.assert_array_equal(total, 2 * np.arange(6) + 10)
        np.testing.assert_array_equal(gathered, np.arange(6) + 10 * np.arange(2)[:, None])
        np.testing.assert_array_equal(swapped, np.arange(6) + 10 * (1 - me))
        comm.check_schedule(b"same", lambda: ["never called"])
        dist.shutdown()
        print("ok", comm.rank, comm.size)
    """, limit=120)
    assert run.returncode == 0, run
    assert run.lines(0) == ["ok 0 2"] and run.lines(1) == ["ok 1 2"]
