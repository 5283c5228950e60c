"""The gpu-marked suite: results on a GPU against the NumPy (CPU) backend, values and
gradients.

    python -m pytest -m gpu tests/gpu -q                      # where CuPy sees a GPU
    MYTORCH_GPU_TWIN=1 python -m pytest -m gpu tests/gpu -q   # the GPU backend on its CPU
                                                              # twin (kernels built by g++);
                                                              # =2: two twin devices (pmap)

`MYTORCH_GPU_TESTS_QUICK=1` samples the elementwise rows of the primitive table (see
test_primitives.py) where device time is short.

Without a GPU every test skips with one reason (CuPy missing, or CuPy's own error text).
`MYTORCH_GPU_TESTS_DRY=1` checks the tests themselves where no GPU exists: two more
virtual CPU devices stand in for the GPUs, so every comparison is CPU against CPU. It
exercises the tests' logic, never the GPU backend; tests that need GPU-only behaviour
(CUDA source, memory statistics) skip there.
"""

import os

import pytest

import mytorch as mt

_TWIN = os.environ.get("MYTORCH_GPU_TWIN", "")
TWIN = int(_TWIN) if _TWIN.isdigit() else 0  # how many twin devices (0: a real GPU)
DRY = os.environ.get("MYTORCH_GPU_TESTS_DRY") == "1"
_FOUND = []  # the (kind, devices) or the skip reason, looked up once per session


def _lookup():
    """("cuda" | "twin" | "dry", [Device, ...]) or a str: why there is no GPU."""
    if DRY:
        mt.config.update("num_cpu_devices", 3)
        return "dry", mt.devices("cpu")[1:]
    try:
        import cupy  # noqa: F401
    except ImportError as e:
        return f"CuPy is not installed ({e}); pip install mytorch[gpu]"
    if TWIN:
        from mytorch.backends.cupy import use_twin

        use_twin(TWIN)
    try:
        found = mt.devices("gpu")
    except RuntimeError as e:
        return f"no GPU: {e}"
    if not found:
        return "no GPU: mt.devices('gpu') is empty"
    return ("twin" if TWIN else "cuda"), list(found)


def gpu_target():
    """(kind, devices) of this session; skips the calling test where there is no GPU."""
    if not _FOUND:
        _FOUND.append(_lookup())
    found = _FOUND[0]
    if isinstance(found, str):
        pytest.skip(found)
    return found


@pytest.fixture
def gpu():
    """The first GPU (`mt.devices('gpu')[0]`); skips the test without one."""
    return gpu_target()[1][0]


@pytest.fixture
def gpus():
    """Every GPU of this process; skips the test without one."""
    return gpu_target()[1]


@pytest.fixture
def gpu_kind():
    """"cuda" on a real GPU, "twin" on the CPU twin, "dry" in a dry run of the tests."""
    return gpu_target()[0]


@pytest.fixture
def real_gpu(gpu_kind):
    """Skips the test unless the GPU backend runs (on CUDA or on its twin), not a dry run."""
    if gpu_kind == "dry":
        pytest.skip("needs the GPU backend (dry run: CPU devices stand in for the GPU)")


@pytest.fixture
def cpu():
    """The CPU device the reference results are computed on."""
    return mt.devices("cpu")[0]


def placed_on(device):
    """New arrays (constants, iota, random keys) go to `device` inside the block."""
    return mt.config.override(default_device=device)


@pytest.fixture(autouse=True)
def _restore_default_device():
    old = getattr(mt.config, "default_device", None)
    yield
    if getattr(mt.config, "default_device", None) is not old:
        mt.config.update("default_device", old)
