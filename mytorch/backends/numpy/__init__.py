"""The NumPy (CPU) backend: eager kernels keyed by primitive.

Kernels live in the modules of this package (elementwise.py holds the table from elementwise
primitive to NumPy function), which register them on import.
"""

import numpy as np

from mytorch.core.backend import Backend, Device, register_backend
from mytorch.core.config import config


class NumpyBackend(Backend):
    """CPU buffers are NumPy arrays."""

    platform = "cpu"

    def __init__(self):
        super().__init__()
        self._devices = []

    def devices(self):
        n = config.num_cpu_devices
        while len(self._devices) < n:
            self._devices.append(Device("cpu", len(self._devices), self))
        return self._devices[:n]

    def put(self, value, device):
        return np.array(value, copy=True)

    def to_numpy(self, buf):
        return buf

    def coerce(self, buf, dtype):
        if type(buf) is not np.ndarray:
            return np.asarray(buf, dtype=dtype)
        if buf.dtype != dtype:
            return buf.astype(dtype)
        return buf

    def compile(self, jaxpr, consts, donated, name, debug_nans=False):
        """Generate NumPy code for `jaxpr`: (fn(*buffers) -> list of buffers, source)."""
        from mytorch.backends.numpy.codegen import generate

        return generate(jaxpr, consts, donated, name, self, debug_nans)


numpy_backend = NumpyBackend()
register_backend(numpy_backend)

from mytorch.backends.numpy import allocator  # noqa: E402

allocator.tune(config.tune_malloc)
config.on_update(lambda name, value: name == "tune_malloc" and allocator.tune(value))

from mytorch.backends.numpy import kernels  # noqa: E402,F401  (registers the kernels)
