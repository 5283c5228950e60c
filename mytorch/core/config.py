"""Global configuration: `mt.config.update(name, value)`, `mt.config.name`.

Options (all also readable as attributes):
  enable_x64            allow 64-bit dtypes (default False: float32/int32 defaults)
  default_backend       "auto" (default: "gpu" when CuPy sees a GPU, else "cpu"), "cpu" or
                        "gpu": the platform new arrays are placed on
  default_device        None (default: the default backend's first device), a Device, or
                        a platform name: where new arrays are placed
  debug_nans            raise FloatingPointError where a NaN first appears
  explain_cache_misses  say why a jitted function was retraced
  num_cpu_devices       how many virtual CPU devices `mt.devices()` lists (for pmap)
  psum_bucket_bytes     pmap merges its body's independent psums into flat buffers of at
                        most this many bytes (gradient buckets; default 25 MiB as
                        PyTorch DDP; 1 keeps one psum per operand)
  tune_malloc           keep freed buffers in the heap for reuse (glibc; see
                        mytorch/backends/numpy/allocator.py)
  profile               compile functions with a timing call around every equation or
                        fused block (set by `mt.profiler` while it records; functions
                        compiled without it are separate executables with no such calls)
Every option may also be set with an environment variable MYTORCH_<NAME_IN_CAPS>. JAX's
names are aliases (`mt.config.update("jax_enable_x64", True)`, `mt.config.jax_debug_nans`),
so ported configuration code runs unchanged.
"""

import contextlib
import os

_DEFAULTS = {
    "enable_x64": False,
    "default_backend": "auto",
    "default_device": None,
    "debug_nans": False,
    "explain_cache_misses": False,
    "num_cpu_devices": 1,
    "psum_bucket_bytes": 25 * 2**20,
    "tune_malloc": True,
    "profile": False,
}
_CHOICES = {"default_backend": ("auto", "cpu", "gpu")}
_NOT_KEYED = frozenset({"explain_cache_misses", "tune_malloc"})  # no effect on compiled code


# JAX's names for options whose mytorch names differ (other `jax_` names drop the prefix)
_JAX_NAMES = {"jax_platform_name": "default_backend", "jax_platforms": "default_backend"}
_JAX_PLATFORMS = {"cuda": "gpu", "rocm": "gpu"}


def _option(name):
    """The option `name` refers to: itself, or the option a `jax_`-prefixed alias names."""
    if name in _JAX_NAMES:
        return _JAX_NAMES[name]
    if name not in _DEFAULTS and isinstance(name, str) and name[4:] in _DEFAULTS \
            and name.startswith("jax_"):
        return name[4:]
    return name


def _from_env(name, default):
    raw = os.environ.get("MYTORCH_" + name.upper())
    if raw is None:
        return default
    if isinstance(default, bool):
        return raw.strip().lower() in ("1", "true", "yes", "on")
    if isinstance(default, int):
        return int(raw)
    return raw


class Config:
    """The mutable settings object behind `mt.config`."""

    def __init__(self):
        object.__setattr__(self, "_values", {k: _from_env(k, v) for k, v in _DEFAULTS.items()})
        object.__setattr__(self, "_listeners", [])

    def update(self, name, value):
        """Set option `name` to `value`; unknown names and bad values raise ValueError.
        JAX's `jax_`-prefixed names are aliases: `update("jax_enable_x64", True)`."""
        if name in _JAX_NAMES and isinstance(value, str):  # "cuda,cpu": the first one
            value = value.split(",")[0].strip()
            value = _JAX_PLATFORMS.get(value, value)
        name = _option(name)
        if name not in _DEFAULTS:
            known = ", ".join(sorted(_DEFAULTS))
            raise ValueError(f"mt.config has no option {name!r}; known options: {known}")
        default = _DEFAULTS[name]
        if isinstance(default, bool):
            if not isinstance(value, (bool, int)):
                raise ValueError(f"mt.config option {name!r} takes a bool, got {value!r}")
            value = bool(value)
        elif isinstance(default, int):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"mt.config option {name!r} takes an int >= 1, got {value!r}")
        if default is None and not (value is None or value in ("cpu", "gpu") or (
                hasattr(value, "platform") and hasattr(value, "backend"))):
            raise ValueError(f"mt.config option {name!r} takes a Device (mt.devices()[i]), "
                             f"'cpu', 'gpu' or None, got {value!r:.80}")
        if name in _CHOICES and value not in _CHOICES[name]:
            raise ValueError(
                f"mt.config option {name!r} must be one of {_CHOICES[name]}, got {value!r}"
            )
        self._values[name] = value
        for listener in self._listeners:
            listener(name, value)

    def __getattr__(self, name):
        try:
            return self._values[_option(name)]
        except KeyError:
            raise AttributeError(f"mt.config has no option {name!r}") from None

    def __setattr__(self, name, value):
        raise AttributeError(f"use mt.config.update({name!r}, value) to change an option")

    def values(self):
        """A tuple of (name, value) pairs of the options that change what a program
        computes or how it is compiled: part of every compilation cache key."""
        return tuple(sorted((k, v) for k, v in self._values.items() if k not in _NOT_KEYED))

    def on_update(self, listener):
        """Call `listener(name, value)` after every update (used to drop stale caches)."""
        self._listeners.append(listener)

    @contextlib.contextmanager
    def override(self, **options):
        """Temporarily set options: `with mt.config.override(enable_x64=True): ...`."""
        old = {_option(k): self._values[_option(k)] for k in options
               if _option(k) in self._values}
        try:
            for k, v in options.items():
                self.update(k, v)
            yield self
        finally:
            for k, v in old.items():
                self.update(k, v)


config = Config()
