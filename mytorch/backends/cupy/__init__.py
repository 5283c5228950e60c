"""The GPU backend, on CuPy: device arrays, eager kernels, a jit compiler that fuses
elementwise chains into generated CUDA kernels, cuBLAS products and NCCL collectives.

Importing this package imports neither CuPy nor the backend: it registers a *probe* that runs
on the first request for the "gpu" platform (`mt.devices("gpu")`, or the first array made
while `default_backend` is "auto"). The probe imports CuPy and asks it for the devices; if
that fails, the reason (CuPy missing, or CuPy's own error, e.g. no driver) is kept and
quoted by the error `mt.devices("gpu")` raises, and arrays stay on the CPU.

`use_twin()` registers the backend on the CPU twin instead: NumPy buffers, every generated
kernel compiled by the host C++ compiler with a shim for the CUDA names (see twin.py). It is
what tests run where there is no GPU; it never stands for a GPU run.
"""

import contextlib

from mytorch.core.backend import (
    _BACKENDS,
    register_backend,
    register_probe,
    unregister_backend,
)

__all__ = ["use_twin", "stop_twin"]


def _probe():
    """Register the CuPy backend if CuPy sees a GPU; else return why not."""
    try:
        import cupy
    except ImportError as e:
        return (f"CuPy is not installed ({e}); install the gpu extra: "
                "pip install 'mytorch[gpu]'")
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # CuPy's CUDARuntimeError without a driver or device
        return f"CuPy cannot reach a GPU: {type(e).__name__}: {e}"
    if count < 1:
        return "CuPy sees no GPU (cudaGetDeviceCount returned 0)"
    from mytorch.backends.cupy.backend import CupyBackend
    from mytorch.backends.cupy.runtime import CudaRuntime

    register_backend(CupyBackend(CudaRuntime(cupy)))
    return None


register_probe("gpu", _probe)


def use_twin(count=1):
    """Make the "gpu" platform the CPU twin of the GPU backend with `count` devices (NumPy
    buffers, generated CUDA kernels built by the host C++ compiler, pmap's replicas on
    threads with the thread communicator); returns its devices. For testing the backend
    without a GPU: nothing it runs stands for a GPU run."""
    from mytorch.backends.cupy.backend import CupyBackend

    register_backend(CupyBackend(_TwinDevice(count)))
    return _BACKENDS["gpu"].devices()


def stop_twin():
    """Undo `use_twin`: the "gpu" platform is probed again on its next request."""
    unregister_backend("gpu")
    register_probe("gpu", _probe)


def _TwinDevice(count):  # noqa: N802  (a factory: twin.py is imported only when asked for)
    from mytorch.backends.cupy.twin import TwinRuntime

    class TwinDevice(TwinRuntime):
        """The twin runtime as `count` devices sharing the host: no device contexts, no
        memory pool, and a "graph" that replays by running the program again into the
        captured buffers."""

        def device_count(self):
            return count

        def on_device(self, ordinal):
            return contextlib.nullcontext()

        def device_of(self, buf):
            return 0

        def synchronize(self, ordinal=None):
            return None

        def memory_stats(self, ordinal):
            return None

        def capture(self, run):
            result = run()
            return _Replay(run, result), result

    return TwinDevice()


class _Replay:
    """The twin's stand-in for a CUDA graph: `launch()` runs the captured function again
    and writes its results into the buffers the capture returned, as a replay would."""

    def __init__(self, run, result):
        self.run, self.result = run, result

    def launch(self):
        outs, _ = self.run()
        for dst, src in zip(self.result[0], outs, strict=True):
            dst[...] = src
