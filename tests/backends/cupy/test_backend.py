"""The GPU backend's Python logic without a GPU: the probe and its error, configuration,
device placement and transfers, eager dispatch (on the CPU twin: NumPy buffers, generated
kernels built by g++). What CuPy itself does is checked only on a GPU (tests/gpu)."""

import builtins

import numpy as np
import pytest

import mytorch as mt
import mytorch.numpy as mnp
from mytorch.backends import cupy as gpu_backend
from mytorch.core import backend as core_backend


@pytest.fixture
def no_gpu_backend(monkeypatch):
    """The "gpu" platform unregistered and its probe re-armed (restored afterwards)."""
    monkeypatch.setattr(core_backend, "_BACKENDS", dict(core_backend._BACKENDS))
    monkeypatch.setattr(core_backend, "_PROBES", dict(core_backend._PROBES))
    monkeypatch.setattr(core_backend, "_UNAVAILABLE", {})
    core_backend._BACKENDS.pop("gpu", None)
    core_backend.register_probe("gpu", gpu_backend._probe)


def test_without_cupy_the_error_says_to_install_the_gpu_extra(no_gpu_backend, monkeypatch):
    real_import = builtins.__import__

    def no_cupy(name, *args, **kwargs):
        if name == "cupy" or name.startswith("cupy."):
            raise ImportError("No module named 'cupy'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_cupy)
    with pytest.raises(RuntimeError, match=r"no 'gpu' backend is available \(available: "
                                           r"cpu\): CuPy is not installed .*mytorch\[gpu\]"):
        mt.devices("gpu")


def test_cupy_without_a_device_quotes_cupys_reason(no_gpu_backend):
    cupy = pytest.importorskip("cupy", reason="CuPy is not installed")
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # the case under test: CuPy imports, the device call fails
        reason = f"{type(e).__name__}: {e}"
    else:
        pytest.skip(f"CuPy sees {count} GPU(s): the no-device path cannot be taken here")
    with pytest.raises(RuntimeError) as info:
        mt.devices("gpu")
    assert "CuPy cannot reach a GPU" in str(info.value) and reason in str(info.value)
    # said once: the probe does not run again, the reason is kept
    assert core_backend._PROBES.get("gpu") is None
    with pytest.raises(RuntimeError, match="CuPy cannot reach a GPU"):
        mt.devices("gpu")
    # and arrays stay on the CPU under the default "auto" backend
    with mt.config.override(default_backend="auto"):
        assert mnp.ones(2).device.platform == "cpu"
        assert [d.platform for d in mt.devices()] == ["cpu"]


def test_probe_runs_only_when_the_gpu_is_asked_for(no_gpu_backend):
    import subprocess
    import sys

    code = ("import sys, mytorch as mt, mytorch.numpy as mnp; "
            "mt.config.update('default_backend', 'cpu'); mnp.ones(2) + 1; "
            "print('cupy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


def test_default_device_option(twin):
    cpu = mt.devices("cpu")[0]
    with mt.config.override(default_device=twin):
        x = mnp.arange(4.0)
        assert x.device is twin
    assert mnp.ones(2).device.platform == "cpu" or mt.config.default_backend == "auto"
    with mt.config.override(default_device="cpu"):
        assert mnp.ones(2).device is cpu
    with pytest.raises(ValueError, match="default_device.*takes a Device"):
        mt.config.update("default_device", 3)


def test_placement_follows_operands(twin):
    x = mt.device_put(np.arange(6, dtype=np.float32).reshape(2, 3), twin)
    assert x.device is twin and x.devices() == {twin}
    y = mnp.sin(x) * 2.0 + x.sum(axis=0)
    assert y.device is twin
    np.testing.assert_allclose(np.asarray(y), np.sin(np.asarray(x)) * 2 + np.asarray(x).sum(0),
                               rtol=1e-6)
    assert isinstance(mt.device_get(y), np.ndarray)
    back = mt.device_put(y, mt.devices("cpu")[0])
    assert back.device.platform == "cpu"
    np.testing.assert_array_equal(np.asarray(back), np.asarray(y))
    assert y.block_until_ready() is y and mt.block_until_ready([y]) == [y]


def test_operands_on_two_devices_raise_naming_both(twin):
    x = mt.device_put(np.ones(3, np.float32), twin)
    y = mt.device_put(np.ones(3, np.float32), mt.devices("cpu")[0])
    with pytest.raises(ValueError, match=r"add: its operands are on different devices: "
                                         r"f32\[3\] on CudaDevice\(id=0\) and f32\[3\] on "
                                         r"CpuDevice\(id=0\)"):
        x + y


def test_scalars_made_on_the_cpu_follow_a_gpu_operand(twin):
    x = mt.device_put(np.arange(3, dtype=np.int32), twin)
    y = x * mnp.asarray(2, dtype=np.int32)  # a 0-d CPU array beside a GPU operand
    assert y.device is twin
    np.testing.assert_array_equal(np.asarray(y), [0, 2, 4])


def test_memory_stats():
    assert mt.devices("cpu")[0].memory_stats() is None


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_, np.float16])
def test_eager_elementwise_matches_the_cpu(twin, dtype):
    rng = np.random.default_rng(0)
    a = (rng.standard_normal((3, 4)) * 4).astype(dtype)
    b = (rng.standard_normal((4,)) * 4).astype(dtype)
    ga, gb = mt.device_put(a, twin), mt.device_put(b, twin)
    for f in (lambda u, v: u + v, lambda u, v: mnp.maximum(u, v), lambda u, v: u == v):
        got, want = f(ga, gb), f(mnp.asarray(a), mnp.asarray(b))
        assert got.device is twin and got.dtype == want.dtype
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_a_primitive_without_a_gpu_kernel_runs_on_the_host(twin):
    from mytorch.backends.cupy.kernels import KERNELS
    from mytorch.lax import linalg_eig

    prim = linalg_eig.eig_p
    saved = KERNELS.pop(prim, None)  # the backend notices: its wrapper is rebuilt
    try:
        a = np.array([[2.0, 1.0], [0.0, 3.0]], np.float32)
        w = mnp.linalg.eigvals(mt.device_put(a, twin))
        assert w.device is twin
        np.testing.assert_allclose(np.sort_complex(np.asarray(w)), [2, 3], rtol=1e-6)
    finally:
        if saved is not None:
            KERNELS[prim] = saved


def test_uncommitted_values_follow_committed_operands(twin):
    """Values made on the default device (here the CPU) follow an operand placed on the
    twin on purpose, as JAX's uncommitted arrays do; two placed operands on two devices
    are an error, eagerly and under jit."""
    cpu = mt.devices("cpu")[0]
    with mt.config.override(default_device=cpu):
        x = mt.device_put(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4), twin)
        assert mnp.ones(2).device is cpu and not mnp.ones(2).committed and x.committed
        outs = [mnp.where(x > 0, x, 0.0), x + mnp.ones((3, 4)),
                mt.jvp(lambda a: 0 + mnp.sum(a), (x,), (x,))[0],
                mt.grad(lambda a: 0 + mnp.sum(a * a))(x),
                mt.jit(lambda a, b: a * b)(mnp.ones((3, 4)), x)]
        for out in outs:
            assert out.device is twin and out.committed
        np.testing.assert_allclose(np.asarray(outs[3]), 2 * np.asarray(x), rtol=1e-6)
        y = mt.device_put(np.ones((3, 4), np.float32), cpu)
        with pytest.raises(ValueError, match=r"jit: its arguments are on different devices: "
                                             r"f32\[3,4\] on CudaDevice\(id=0\) and "
                                             r"f32\[3,4\] on CpuDevice\(id=0\)"):
            mt.jit(lambda a, b: a * b)(x, y)


@pytest.mark.parametrize("src,dst", [(np.float32, np.uint8), (np.uint8, np.float32),
                                     (np.complex128, np.int64), (np.float16, np.int16)])
def test_bitcast_on_the_twin_matches_the_cpu(twin, src, dst):
    from mytorch import lax

    rng = np.random.default_rng(0)
    ratio = max(1, np.dtype(dst).itemsize // np.dtype(src).itemsize)  # a wider dst eats
    a = rng.integers(0, 255, (3, ratio * np.dtype(src).itemsize),  # the last axis
                     dtype=np.uint8).view(src)
    with mt.config.override(enable_x64=True):
        got = lax.bitcast_convert_type(mt.device_put(a, twin), dst)
        want = lax.bitcast_convert_type(mt.device_put(a, mt.devices("cpu")[0]), dst)
        assert got.device is twin and got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_array_equal(np.asarray(got).view(np.uint8),
                                      np.asarray(want).view(np.uint8))


def test_eager_elementwise_kernels_are_compiled_once_for_every_shape(twin):
    backend = core_backend.get_backend("gpu")
    before = len(backend._elementwise)
    for shape in [(0,), (1,), (7,), (3, 4), (2, 0, 5), (1000,)]:
        a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
        x = mt.device_put(a, twin)
        got = x * 3.0 - x
        assert got.shape == shape and got.device is twin
        np.testing.assert_array_equal(np.asarray(got), a * 3 - a)
    assert len(backend._elementwise) - before == 2  # mul by a 0-d value, sub of two arrays
    x = mt.device_put(np.float32(2.5), twin)  # 0-d operands only: a kernel of one element
    np.testing.assert_array_equal(np.asarray(x * 3.0 - x), np.float32(5.0))


def test_elementwise_without_a_cuda_expression_runs_on_the_host(twin):
    """Complex inverse trigonometric functions have no CUDA expression: eagerly and under
    jit they run through the NumPy kernel, and the result stays on the device."""
    z = np.array([0.3 + 0.2j, -1.5 + 2j], np.complex64)
    for f in (mnp.arcsin, mt.jit(mnp.arcsin)):
        got = f(mt.device_put(z, twin))
        assert got.device is twin
        np.testing.assert_allclose(np.asarray(got), np.arcsin(z), rtol=1e-5)
