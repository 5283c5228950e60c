"""Placement on the GPU: results live where their operands live, operands on two devices
raise an error naming both, device_put/device_get round trips, the default_device option,
block_until_ready, memory statistics, donation and the cuda_graph option."""

import numpy as np
import pytest

import mytorch as mt
import mytorch.numpy as mnp
from tests.gpu.cases import BF16, C64, F16, F32, I32, U8
from tests.gpu.compare import assert_matches
from tests.gpu.conftest import placed_on

pytestmark = pytest.mark.gpu


def _put(x, device):
    return mt.device_put(np.asarray(x), device)


@pytest.mark.parametrize("dtype", [F32, F16, BF16, I32, U8, C64, np.dtype(bool)],
                         ids=str)
def test_device_put_get_round_trip(dtype, gpu, cpu):
    host = (np.arange(-7, 23) * 1.5).reshape(5, 6).astype(dtype)
    on_gpu = mt.device_put(host, gpu)
    assert on_gpu.device == gpu and on_gpu.dtype == host.dtype and on_gpu.shape == host.shape
    back = mt.device_get(on_gpu)
    assert isinstance(back, np.ndarray)
    np.testing.assert_array_equal(back, host)
    on_cpu = mt.device_put(on_gpu, cpu)  # device to device
    assert on_cpu.device == cpu
    np.testing.assert_array_equal(np.asarray(on_cpu), host)
    np.testing.assert_array_equal(np.asarray(mt.device_put(on_cpu, gpu)), host)


def test_device_put_pytree_and_views(gpu):
    base = np.arange(40, dtype=np.float32).reshape(5, 8)
    tree = {"t": base.T, "s": base[1::2, 3:], "n": (np.float32(2.5), base[0])}
    put = mt.device_put(tree, gpu)
    for a, b in zip(mt.tree_util.tree_leaves(put), mt.tree_util.tree_leaves(tree),
                    strict=True):
        assert a.device == gpu
        np.testing.assert_array_equal(np.asarray(a), b)
    got = mt.device_get(put)
    np.testing.assert_array_equal(got["t"], base.T)


def test_results_live_on_operands_device(gpu):
    x = _put(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4), gpu)
    with placed_on(mt.devices("cpu")[0]):  # the default stays on the CPU
        results = [x * 2, mnp.sum(x, axis=0), x @ x.T, mnp.sort(x, axis=1), x[1:, ::2],
                   x.astype(mnp.float16), mt.jit(lambda a: mnp.tanh(a) + 1)(x),
                   mt.grad(lambda a: mnp.sum(a ** 2))(x), mnp.where(x > 0, x, 0.0)]
    for r in results:
        assert r.device == gpu, f"{r.aval} on {r.device}"


def test_mixed_devices_raise_naming_both(gpu, cpu):
    x, y = _put(np.ones(3, np.float32), gpu), _put(np.ones(3, np.float32), cpu)
    with pytest.raises(ValueError) as info:
        x + y
    assert repr(gpu) in str(info.value) and repr(cpu) in str(info.value)


def test_default_device_option(gpu, cpu):
    with placed_on(gpu):
        made = [mnp.zeros(3), mnp.arange(4), mt.random.key(0).data, mnp.asarray([1.0]),
                mt.device_put(np.ones(2))]
        assert all(a.device == gpu for a in made), [a.device for a in made]
    with placed_on(cpu):
        assert mnp.ones(2).device == cpu


def test_block_until_ready(gpu):
    x = _put(np.arange(1 << 20, dtype=np.float32), gpu)
    y = mt.jit(lambda a: mnp.sin(a) * 2)(x)
    assert y.block_until_ready() is y
    tree = {"a": y, "b": [x, 3]}
    assert mt.block_until_ready(tree) is tree
    np.testing.assert_allclose(np.asarray(y)[:5], np.sin(np.arange(5)) * 2, rtol=1e-6)


def test_memory_stats_grow_with_an_allocation(gpu, gpu_kind):
    if gpu_kind != "cuda":
        pytest.skip(f"memory statistics come from CuPy's memory pool ({gpu_kind} run)")
    stats = gpu.memory_stats()
    assert {"bytes_in_use", "peak_bytes_in_use"} <= set(stats)
    before = stats["bytes_in_use"]
    nbytes = 64 << 20
    x = _put(np.ones(nbytes // 4, np.float32), gpu).block_until_ready()
    during = gpu.memory_stats()
    assert during["bytes_in_use"] >= before + nbytes
    assert during["peak_bytes_in_use"] >= during["bytes_in_use"]
    del x
    assert gpu.memory_stats()["bytes_in_use"] <= during["bytes_in_use"] - nbytes


def _step(w, x):
    return w - 0.1 * mt.grad(lambda w: mnp.sum(mnp.tanh(x @ w) ** 2))(w), mnp.mean(x)


def test_donation_gives_the_same_results(gpu, cpu):
    rng = np.random.default_rng(0)
    w, x = rng.standard_normal((16, 8), np.float32), rng.standard_normal((4, 16), np.float32)
    want = mt.jit(_step)(_put(w, cpu), _put(x, cpu))
    donated = mt.jit(_step, donate_argnums=0)
    w_gpu = _put(w, gpu)
    got = donated(w_gpu, _put(x, gpu))
    assert_matches(got, want, device=gpu, tol=(1e-5, 1e-6))
    with pytest.raises(RuntimeError, match="donated"):
        w_gpu + 1
    again = donated(got[0], _put(x, gpu))  # a result donated back in, twice
    again = donated(again[0], _put(x, gpu))
    ref = mt.jit(_step)(mt.jit(_step)(want[0], _put(x, cpu))[0], _put(x, cpu))
    assert_matches(again, ref, device=gpu, tol=(1e-5, 1e-6))


def test_cuda_graph_option_gives_the_same_results(gpu, cpu):
    rng = np.random.default_rng(1)
    plain = mt.jit(_step)
    graphed = mt.jit(_step, backend_options={"cuda_graph": True})
    w = _put(rng.standard_normal((16, 8), np.float32), gpu)
    w_ref = mt.device_put(w, cpu)
    for i in range(4):  # capture, then replays with new values in the same shapes
        x = rng.standard_normal((4, 16), np.float32)
        w, m = graphed(w, _put(x, gpu))
        w_ref, m_ref = plain(w_ref, _put(x, cpu))
        assert_matches((w, m), (w_ref, m_ref), device=gpu, tol=(1e-5, 1e-6),
                       what=f"call {i}")
    x = rng.standard_normal((7, 16), np.float32)  # a new shape: a new capture
    assert_matches(graphed(w, _put(x, gpu)), plain(w_ref, _put(x, cpu)), device=gpu,
                   tol=(1e-5, 1e-6))


def test_lowered_text_shows_a_fused_cuda_kernel(gpu, gpu_kind):
    if gpu_kind == "dry":
        pytest.skip("the CPU backend generates Python, not CUDA (dry run)")
    x = _put(np.ones((8, 33), np.float32), gpu)
    text = mt.jit(lambda a, b: mnp.tanh(a) * b + 1.0).lower(x, x).as_text()
    assert "__global__" in text, text[:2000]
    assert text.count("__global__") == 1, "tanh, mul and add should fuse into one kernel"
