"""User-defined primitives on the GPU backend, checked on its CPU twin (the CUDA source of
`bias_gelu` compiled by the host C++ compiler with the twin's shim, NumPy buffers) and by
`nvcc --ptx`. Nothing here ran on a GPU."""

import shutil
import subprocess

import numpy as np
import pytest

import mytorch as mt
import mytorch.numpy as mnp
from tests.twin_fixtures import twin_devices
from tests.extend.ops import (
    BIAS_GELU_CUDA, GPU_CALLS, bias_gelu, bias_gelu_ref, top_k_indices, top_k_ref,
)


@pytest.fixture(scope="module")
def twin(tmp_path_factory):
    """The twin's device 0 for this module (one compile of the CUDA source)."""
    with twin_devices(1, tmp_path_factory.getbasetemp() / "twin") as devices:
        yield devices[0]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("x_shape,b_shape", [((4, 37), (37,)), ((3, 1), (1, 5)),
                                             ((0, 3), (3,)), ((513,), ())])
def test_cuda_kernel_on_the_twin_matches_numpy(twin, dtype, x_shape, b_shape):
    mt.config.update("enable_x64", dtype == np.float64)  # (reset after each test)
    GPU_CALLS.clear()
    rng = np.random.default_rng(0)
    x = rng.standard_normal(x_shape).astype(dtype) * 3
    b = rng.standard_normal(b_shape).astype(dtype)
    want = bias_gelu_ref(x.astype(np.float64), b.astype(np.float64))
    xd, bd = mt.device_put(x, twin), mt.device_put(b, twin)
    eager = bias_gelu(xd, bd)
    jitted = mt.jit(lambda x, b: bias_gelu(x, b))(xd, bd)
    tol = 2e-6 if dtype == np.float32 else 1e-14
    for got in (eager, jitted):
        assert got.device is twin and got.dtype == dtype and got.shape == want.shape
        np.testing.assert_allclose(np.asarray(got), want, rtol=tol, atol=tol)
    # the CUDA kernel ran eagerly and in compiled code
    assert GPU_CALLS == [("bias_gelu", np.dtype(dtype))] * 2


def test_grad_and_vmap_on_the_twin(twin):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 8)).astype(np.float32)
    b = rng.standard_normal(8).astype(np.float32)

    def loss(x, b):
        return mnp.sum(bias_gelu(x, b) ** 2)

    g = mt.jit(mt.grad(loss, argnums=(0, 1)))
    on_twin = g(mt.device_put(x, twin), mt.device_put(b, twin))
    on_cpu = g(x, b)
    for t, c in zip(on_twin, on_cpu, strict=True):
        assert t.device is twin
        np.testing.assert_allclose(np.asarray(t), np.asarray(c), rtol=1e-5, atol=1e-6)
    rows = mt.vmap(bias_gelu, in_axes=(None, 0))(mt.device_put(x[0], twin),
                                                 mt.device_put(x, twin))
    np.testing.assert_allclose(np.asarray(rows), bias_gelu_ref(x[0], x), rtol=2e-6, atol=2e-6)


def test_half_precision_falls_back_to_the_numpy_kernel(twin):
    x = np.linspace(-2, 2, 6).astype(np.float16)
    got = bias_gelu(mt.device_put(x, twin), mt.device_put(np.ones(6, np.float16), twin))
    assert got.device is twin and got.dtype == np.float16
    np.testing.assert_allclose(np.asarray(got, np.float64), bias_gelu_ref(x, 1.0), atol=4e-3)


def test_array_module_generic_kernel_on_the_twin(twin):
    GPU_CALLS.clear()
    x = np.random.default_rng(2).integers(-3, 4, (4, 6)).astype(np.float32)
    got = mt.jit(lambda x: top_k_indices(x, 3))(mt.device_put(x, twin))
    assert got.device is twin
    np.testing.assert_array_equal(np.asarray(got), top_k_ref(x, 3))
    assert GPU_CALLS == [("top_k_indices", np.float32)]


def test_cuda_source_compiles_with_nvcc(tmp_path):
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is not on PATH")
    src = tmp_path / "bias_gelu.cu"
    src.write_text(BIAS_GELU_CUDA)
    out = subprocess.run([nvcc, "--ptx", "-arch=sm_90", str(src), "-o",
                          str(tmp_path / "bias_gelu.ptx")], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    ptx = (tmp_path / "bias_gelu.ptx").read_text()
    assert ".entry bias_gelu_f32" in ptx and ".entry bias_gelu_f64" in ptx
