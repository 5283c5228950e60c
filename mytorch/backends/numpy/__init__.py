"""The NumPy (CPU) backend: eager kernels keyed by primitive.

Kernels live in the modules of this package (elementwise.py holds the table from elementwise
primitive to NumPy function), which register them on import.
"""

import sys

import numpy as np

from mytorch.backends.numpy import aligned
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
        value = np.asarray(value)
        return _large(value.nbytes, np.array, value, copy=True)

    def to_numpy(self, buf):
        return buf

    def coerce(self, buf, dtype):
        if type(buf) is not np.ndarray:
            return np.asarray(buf, dtype=dtype)
        if buf.dtype != dtype:
            return _large(buf.size * np.dtype(dtype).itemsize, buf.astype, dtype)
        return buf

    def donate(self, buf):
        """`buf` itself where nothing else can read it, else a copy: a view, the base of
        views, a read-only array or one that another array shares is copied first."""
        # references: the caller's, this argument, getrefcount's; any other is a sharer
        if type(buf) is not np.ndarray or buf.base is not None or not buf.flags.writeable \
                or sys.getrefcount(buf) > 3:
            return buf.copy()
        return buf

    def generate(self, jaxpr, consts, options):
        """Generate NumPy code for `jaxpr`: (fn(*buffers) -> list of buffers, source)."""
        from mytorch.backends.numpy.codegen import generate

        return generate(jaxpr, consts, options, self)


def _large(nbytes, make, *args, **kwargs):
    """`make(*args, **kwargs)`, a new array of `nbytes`: 64-byte aligned when it is large
    (aligned.py)."""
    if nbytes < aligned.LARGE_BYTES:
        return make(*args, **kwargs)
    token = aligned.enter()
    try:
        return make(*args, **kwargs)
    finally:
        aligned.leave(token)


numpy_backend = NumpyBackend()
register_backend(numpy_backend)

from mytorch.backends.numpy import allocator  # noqa: E402

allocator.tune(config.tune_malloc)
config.on_update(lambda name, value: name == "tune_malloc" and allocator.tune(value))

from mytorch.backends.numpy import kernels  # noqa: E402,F401  (registers the kernels)
# the optimisation pipeline registers itself as what eagerly run call primitives go through
# before they are compiled (core cannot import it)
from mytorch.transforms import optimize as _optimize  # noqa: E402,F401
