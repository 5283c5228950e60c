"""The backend registry: devices, buffers, eager kernels and compilers, keyed by platform.

Backends (mytorch/backends/*) register themselves here; core never imports them.
"""

import numpy as np

_BACKENDS = {}


class Device:
    """One device: a platform ("cpu" or "gpu") and an index."""

    __slots__ = ("platform", "id", "backend")

    def __init__(self, platform, id, backend):
        self.platform, self.id, self.backend = platform, id, backend

    def __repr__(self):
        return f"{'Cpu' if self.platform == 'cpu' else 'Cuda'}Device(id={self.id})"

    def __reduce__(self):
        return (get_device, (self.platform, self.id))


class Backend:
    """Base class of a backend: buffers, eager kernels, and (later) a compiler."""

    platform = None

    def __init__(self):
        self.kernels = {}

    def devices(self):
        raise NotImplementedError

    def kernel(self, prim):
        """The eager kernel of `prim`: fn(*buffers, **params) -> buffer or list of buffers."""
        fn = self.kernels.get(prim)
        if fn is None:
            fn = prim.lowerings.get(self.platform)
            if fn is None:
                raise NotImplementedError(
                    f"the {self.platform} backend has no kernel for primitive '{prim.name}'"
                )
            self.kernels[prim] = fn
        return fn

    def register(self, prim):
        """Decorator: register the eager kernel of `prim` on this backend."""

        def deco(fn):
            self.kernels[prim] = fn
            return fn

        return deco

    def put(self, value, device):
        """Copy a host NumPy array to `device`; returns the backend's buffer."""
        raise NotImplementedError

    def to_numpy(self, buf):
        """The buffer's contents as a NumPy array (a view where possible)."""
        raise NotImplementedError

    def coerce(self, buf, dtype):
        """Make a kernel's result an array buffer of exactly `dtype`."""
        raise NotImplementedError

    def compile(self, jaxpr, consts, donated, name, debug_nans=False):
        """Compile `jaxpr` (its constvars bound to `consts`): returns (fn, text) where
        fn(*buffers) -> list of buffers and text is what `lower(...).as_text()` shows.
        `donated[i]`: input i may be overwritten."""
        raise NotImplementedError(f"the {self.platform} backend has no compiler")


def register_backend(backend):
    _BACKENDS[backend.platform] = backend


def get_backend(platform=None):
    """The backend for `platform` ("cpu"/"gpu"; None: the configured default)."""
    from mytorch.core.config import config

    platform = platform or config.default_backend
    try:
        return _BACKENDS[platform]
    except KeyError:
        known = ", ".join(sorted(_BACKENDS)) or "none"
        raise RuntimeError(
            f"no {platform!r} backend is available (available: {known})"
            + (". The gpu backend needs CuPy and an NVIDIA GPU." if platform == "gpu" else "")
        ) from None


def get_device(platform, id=0):
    return get_backend(platform).devices()[id]


def default_device():
    return get_backend().devices()[0]


def available_platforms():
    return tuple(_BACKENDS)


def host_array(x):
    """A host NumPy array for a NumPy value (used by backends)."""
    return np.asarray(x)
