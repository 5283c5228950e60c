"""The backend registry: devices, buffers, eager kernels and compilers, keyed by platform.

Backends (mytorch/backends/*) register themselves here; core never imports them. A backend
compiles a jaxpr through `compile(jaxpr, consts, CompileOptions(...))`. A call or loop
primitive (kind "call": scan, while, cond ...) run eagerly without a kernel of its own is
compiled as a program of one equation and run by the same compiler (`call_kernel`).
"""

import collections
import dataclasses

import numpy as np

from mytorch.core import profiling
from mytorch.core.config import config
from mytorch.core.source_info import user_error

_BACKENDS = {}


class Device:
    """One device: a platform ("cpu" or "gpu"), its index among its process's devices of
    that platform, and the index of the process that owns it (0 in a single process;
    `mytorch.distributed.initialize` sets it). A device of another process has no backend
    here (None): this process cannot run code on it."""

    __slots__ = ("platform", "id", "backend", "process_index")

    def __init__(self, platform, id, backend, process_index=0):
        self.platform, self.id, self.backend = platform, id, backend
        self.process_index = process_index

    def __repr__(self):
        where = f", process_index={self.process_index}" if self.process_index else ""
        return f"{'Cpu' if self.platform == 'cpu' else 'Cuda'}Device(id={self.id}{where})"

    def __reduce__(self):
        return (get_device, (self.platform, self.id))

    def memory_stats(self):
        """A dict of the device's memory use ("bytes_in_use", "peak_bytes_in_use",
        "bytes_limit", ...) where its backend tracks it (GPUs), else None (as JAX on the
        CPU)."""
        stats = getattr(self.backend, "memory_stats", None)
        return stats(self) if stats is not None else None


@dataclasses.dataclass(frozen=True, init=False)
class CompileOptions:
    """How to compile one jaxpr of n inputs: hashable, so it can key a compilation cache.

    device:     the Device the code runs on (None: the backend's choice).
    donated:    n bools, input i may be overwritten by the code; () donates nothing.
    axis_env:   ((axis name, size), ...) of the mapped axes the code runs under (a
                hashable name, a positive int size; pmap's, empty elsewhere).
    debug_nans: check every equation's result for a NaN that its inputs did not have.
    name:       the function's name, shown in the generated code and in errors.
    communicators: ((axis name, Communicator), ...): this replica's endpoint for each
                axis of `axis_env` whose collectives the code runs (pmap's).
    backend_options: ((name, value), ...) sorted: jit's `backend_options`; a backend reads
                the names it knows ("cuda_graph" on the GPU) and ignores the others.
    profile:    time every equation (or fused block) for `mt.profiler`
                (core/profiling.py); None (the default) takes `config.profile`. Code
                compiled without it has no timing calls.
    """

    device: object = None
    donated: tuple = ()
    axis_env: tuple = ()
    debug_nans: bool = False
    name: str = "f"
    communicators: tuple = ()
    backend_options: tuple = ()
    profile: bool = False

    def __init__(self, *, device=None, donated=(), axis_env=(), debug_nans=False, name="f",
                 communicators=(), backend_options=(), profile=None):
        where = f"CompileOptions(name={name!r})"
        if not isinstance(name, str) or not name:
            raise user_error(TypeError, f"{where}: name must be a non-empty str")
        if device is not None and not isinstance(device, Device):
            raise user_error(TypeError, f"{where}: device must be a Device or None, got "
                                        f"{type(device).__name__}")
        if not isinstance(debug_nans, (bool, np.bool_)):
            raise user_error(TypeError, f"{where}: debug_nans must be a bool, got "
                                        f"{type(debug_nans).__name__}")
        donated = tuple(donated)
        bad = [d for d in donated if not isinstance(d, (bool, np.bool_))]
        if bad:
            raise user_error(TypeError, f"{where}: donated must hold one bool per input, got "
                                        f"{type(bad[0]).__name__} {bad[0]!r}")
        axis_env = tuple(tuple(pair) if isinstance(pair, (tuple, list)) else pair
                         for pair in axis_env)
        for pair in axis_env:
            if not (isinstance(pair, tuple) and len(pair) == 2 and _hashable(pair[0])
                    and isinstance(pair[1], int) and not isinstance(pair[1], bool)
                    and pair[1] >= 1):
                raise user_error(ValueError, f"{where}: axis_env must hold (name, size) pairs "
                                             f"with a positive int size, got {pair!r}")
        names = [n for n, _ in axis_env]
        if len(set(names)) != len(names):
            raise user_error(ValueError, f"{where}: axis_env names an axis twice: {names}")
        communicators = tuple(tuple(pair) for pair in communicators)
        bad = [pair for pair in communicators if len(pair) != 2 or pair[0] not in names]
        if bad:
            raise user_error(ValueError, f"{where}: communicators must hold (axis name, "
                                         f"Communicator) pairs for axes of axis_env {names}, "
                                         f"got {bad[0]!r}")
        backend_options = tuple(sorted(dict(backend_options).items()))
        for field, value in (("device", device), ("donated", tuple(map(bool, donated))),
                             ("axis_env", axis_env), ("debug_nans", bool(debug_nans)),
                             ("name", name), ("communicators", communicators),
                             ("backend_options", backend_options),
                             ("profile", bool(config.profile if profile is None else profile))):
            object.__setattr__(self, field, value)

    def donated_flags(self, n):
        """One bool per input of a jaxpr of `n` inputs (all False where none is donated)."""
        if not self.donated:
            return (False,) * n
        if len(self.donated) != n:
            raise user_error(ValueError, f"compile({self.name}): donated has "
                                         f"{len(self.donated)} flags for a jaxpr of {n} inputs")
        return self.donated


def _hashable(x):
    try:
        hash(x)
    except TypeError:
        return False
    return True


class Backend:
    """Base class of a backend: buffers, eager kernels, donation, and a compiler."""

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

    def call_kernel(self, prim, in_avals, params, device):
        """fn(*buffers) -> list of buffers running the call primitive `prim` on operands of
        `in_avals` (ShapedArrays, weak types included) on `device`.

        `prim`'s own kernel where it has one; otherwise `prim` compiled as a jaxpr of one
        equation (operands as inputs, `params`, results of the abstract evaluation's avals)
        by `compile`, after the optimisation pipeline (`set_call_pipeline`). Compiled
        functions are cached (least recently used dropped) on the primitive, the structure
        of its params (jaxprs compare by structure, so a loop traced again from the same
        code hits), the operand avals, the device, `config.debug_nans` and
        `config.profile`."""
        fn = self.kernels.get(prim) or prim.lowerings.get(self.platform)
        if fn is not None:
            return lambda *bufs: fn(*bufs, **params)
        from mytorch.core.jaxpr import params_key  # (see _one_equation)

        keep = []  # values keyed by identity, kept alive with the entry so ids stay unique
        key = (prim, params_key(params, keep), tuple(in_avals), device, config.debug_nans,
               config.profile)
        hit = _CALLS.get(key)
        if hit is not None:
            _CALLS.move_to_end(key)
            return hit[0]
        closed = _CALL_PIPELINE[0](_one_equation(prim, in_avals, params))
        # (the name is the generated function's: `while` alone is a Python keyword)
        options = CompileOptions(device=device, debug_nans=config.debug_nans,
                                 name=f"{prim.name}_eager", profile=config.profile)
        fn, _ = self.compile(closed.jaxpr, closed.consts, options)
        _CALLS[key] = (fn, params, keep)
        if len(_CALLS) > _CALLS_SIZE:
            _CALLS.popitem(last=False)
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

    def donate(self, buf):
        """A buffer with `buf`'s contents that compiled code may overwrite: `buf` itself
        where nothing else can read it, else a copy. The caller (jit, for a donated input)
        passes its only reference. This default keeps `buf`: right for a backend whose
        compiled code never writes its inputs."""
        return buf

    def compile(self, jaxpr, consts, options):
        """Compile `jaxpr` (its constvars bound to `consts`) as `options` (CompileOptions)
        say: returns (fn, text), fn(*buffers) -> list of buffers, and text what
        `lower(...).as_text()` shows. Checks the options against the jaxpr, then calls
        `generate`, which each backend with a compiler implements."""
        if not isinstance(options, CompileOptions):
            raise user_error(TypeError, f"compile: options must be a CompileOptions, got "
                                        f"{type(options).__name__}")
        options.donated_flags(len(jaxpr.invars))
        if len(consts) != len(jaxpr.constvars):
            raise user_error(ValueError, f"compile({options.name}): {len(consts)} constants "
                                         f"for a jaxpr of {len(jaxpr.constvars)} constvars")
        if options.device is not None and options.device.backend is not self:
            raise user_error(ValueError, f"compile({options.name}): the {self.platform} "
                                         f"backend cannot compile for {options.device!r}")
        session = profiling.active()
        if session is None:
            return self.generate(jaxpr, consts, options)
        t0 = profiling.clock()  # a profiled region shows where compile time went
        try:
            return self.generate(jaxpr, consts, options)
        finally:
            profiling.record(profiling.Site("compile", f"compile {options.name}",
                                            f"{len(jaxpr.eqns)} equations",
                                            scope=options.name), t0)

    def generate(self, jaxpr, consts, options):
        """The backend's compiler behind `compile` (options already checked)."""
        raise NotImplementedError(f"the {self.platform} backend has no compiler")


# the compiled call primitives (Backend.call_kernel): key -> (fn, what the key holds by id)
_CALLS, _CALLS_SIZE = collections.OrderedDict(), 256
# what runs on a call primitive's one-equation program before it is compiled: the
# optimisation pipeline registers itself (transforms sit above core)
_CALL_PIPELINE = [lambda closed: closed]


def set_call_pipeline(fn):
    """Make `fn(ClosedJaxpr) -> ClosedJaxpr` what eagerly run call primitives go through
    before they are compiled (`transforms.optimize.optimize` registers itself)."""
    _CALL_PIPELINE[0] = fn
    _CALLS.clear()


def _one_equation(prim, in_avals, params):
    """The ClosedJaxpr of one `prim` equation on inputs of `in_avals`."""
    # imported here: jaxpr.py imports the trace, which imports the arrays, which import
    # this module
    from mytorch.core.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Var

    invars = [Var(a) for a in in_avals]
    outvars = [Var(a) for a in prim.abstract_eval(*in_avals, **params)]
    return ClosedJaxpr(Jaxpr([], invars, [JaxprEqn(prim, invars, params, outvars)], outvars,
                             prim.name), [])


def register_backend(backend):
    """Make `backend` the one for its platform."""
    _BACKENDS[backend.platform] = backend


# platform -> fn() that registers the platform's backend and returns None, or returns why
# it cannot (a str); run once, on the first request for the platform (so `import mytorch`
# never imports CuPy), and the reason is kept
_PROBES, _UNAVAILABLE = {}, {}


def register_probe(platform, probe):
    """Make `probe()` how the backend of `platform` is set up on first request: it calls
    `register_backend` and returns None, or returns the reason it cannot (a str)."""
    _PROBES[platform] = probe
    _UNAVAILABLE.pop(platform, None)


def _probe(platform):
    probe = _PROBES.pop(platform, None)
    if probe is not None:
        reason = probe()
        if reason is not None and platform not in _BACKENDS:
            _UNAVAILABLE[platform] = reason


def unavailable_reason(platform):
    """Why `platform` has no backend (None where it has one)."""
    if platform in _BACKENDS:
        return None
    _probe(platform)
    if platform in _BACKENDS:
        return None
    return _UNAVAILABLE.get(platform, f"no {platform!r} backend is registered")


def unregister_backend(platform):
    """Remove the backend of `platform` (a no-op where there is none)."""
    _BACKENDS.pop(platform, None)


def get_backend(platform=None):
    """The backend for `platform` ("cpu"/"gpu"; None: the configured default)."""
    from mytorch.core.config import config

    platform = platform or default_platform()
    backend = _BACKENDS.get(platform)
    if backend is not None:
        return backend
    reason = unavailable_reason(platform)
    if platform in _BACKENDS:
        return _BACKENDS[platform]
    known = ", ".join(sorted(_BACKENDS)) or "none"
    raise RuntimeError(f"no {platform!r} backend is available (available: {known}): {reason}")


def default_platform():
    """The platform new arrays go to: `config.default_backend`, where "auto" (the default)
    means "gpu" when the GPU backend can be set up and "cpu" otherwise (as JAX)."""
    platform = config.default_backend
    if platform != "auto":
        return platform
    if "gpu" in _BACKENDS:
        return "gpu"
    return "cpu" if unavailable_reason("gpu") is not None else "gpu"


def get_device(platform, id=0):
    return get_backend(platform).devices()[id]


def default_device():
    """`config.default_device` where set (a Device, or a platform name), else the default
    platform's first device."""
    chosen = config.default_device
    if chosen is None:
        return get_backend().devices()[0]
    if isinstance(chosen, str):
        return get_backend(chosen).devices()[0]
    return chosen


def available_platforms():
    return tuple(_BACKENDS)


def host_array(x):
    """A host NumPy array for a NumPy value (used by backends)."""
    return np.asarray(x)
