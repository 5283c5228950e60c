"""`jit`: trace a function once per signature, optimise its jaxpr, compile it through the
device's backend, and cache the result.

    @mt.jit
    def step(params, batch): ...

The cache belongs to the function (weakly referenced), not to the wrapper: `jit(f)` written
anew inside a loop finds what an earlier wrapper compiled.

Called eagerly, a jitted function looks its arguments' signature up in a dictionary and runs
the compiled code (for arrays passed positionally this is one tuple, one lookup and one
call). Called under a transformation (grad, vmap, an enclosing jit) it binds the `jit` call
primitive, which carries the traced jaxpr; its rules transform that jaxpr as a whole, so
`grad(jit(f))` and `vmap(jit(f))` stay compiled, and an enclosing jit inlines it.
"""

import functools
import inspect
import threading
import time
import types
import warnings
import weakref
from collections import OrderedDict

import numpy as np

from mytorch.core import dtypes, profiling, tree_util
from mytorch.core.array import ArrayImpl
from mytorch.core.aval import ShapedArray
from mytorch.core.backend import default_device
from mytorch.core.config import config
from mytorch.core.jaxpr import ClosedJaxpr, Jaxpr
from mytorch.core.source_info import user_error
from mytorch.core.trace import EVAL_TRACE, Tracer, _state, aval_of, to_concrete
from mytorch.errors import NonHashableStaticArgError, RetraceWarning
from mytorch.jit_explain import describe_signature, difference
from mytorch.jit_keys import fast_key, list_key, list_leaves
from mytorch.jit_rules import jit_p
from mytorch.jit_trees import MISS, tree_runner
from mytorch.jit_stages import Lowered, Traced  # noqa: F401  (Lowered: for users' isinstance)
from mytorch.transforms.closure import trace_closed_over

__all__ = ["jit", "disable_jit", "clear_caches", "eval_shape"]

_MAX_SIGNATURES = 64  # compiled signatures kept per jitted function (least recently used go)
_MAX_TREE_RUNNERS = 4  # guarded flatteners tried in turn on a call with pytree arguments
TREES = object()  # the key of those flatteners in a cache's `fast` dict
_AUTO_EXPLAIN_AFTER = 5  # retraces after which a warning explains each further one
_disabled = threading.local()
_caches = weakref.WeakSet()  # every _Cache (for disable_jit, clear_caches, config updates)
_by_function = weakref.WeakKeyDictionary()  # function -> {(binding, options): _Cache}


def _jit_disabled():
    return getattr(_disabled, "on", False)


class disable_jit:
    """Context manager: jitted functions run op by op (same results; for debugging)."""

    def __enter__(self):
        self._prev = _jit_disabled()
        _disabled.on = True
        for cache in list(_caches):  # cache hits must not bypass the switch
            cache.fast.clear()
        return self

    def __exit__(self, *exc):
        _disabled.on = self._prev
        return False


def jit(fun=None, *, static_argnums=(), static_argnames=(), donate_argnums=(),
        backend_options=None):
    """Compile `fun` for each signature (pytree structure, shapes, dtypes, weak types,
    static arguments) it is called with.

    Args:
      fun: a function of arrays (pytrees of arrays) returning arrays; a method works too.
      static_argnums / static_argnames: arguments passed as Python values (hashable); a new
        value retraces.
      donate_argnums: positional arguments whose buffers the compiled code may overwrite;
        the donated arrays cannot be used after the call.
      backend_options: a dict of options for the backend that compiles the function, e.g.
        `{"cuda_graph": True}` (the GPU backend replays the compiled step as one CUDA
        graph); a backend ignores options it does not know, so the same code runs on the
        CPU.

    Returns:
      A callable with `.trace(*args)` (the traced stage: `.jaxpr`, `.out_info`, ...),
      `.lower(*args)` (the compiled program: `.as_text()`) and the wrapped function as
      `__wrapped__`. Wrappers of the same function with the same options share one cache.
    """
    if fun is None:
        return functools.partial(jit, static_argnums=static_argnums,
                                 static_argnames=static_argnames, donate_argnums=donate_argnums,
                                 backend_options=backend_options)
    if not callable(fun):
        raise TypeError(f"jit expects a function, got {type(fun).__name__}: {fun!r:.60}")
    return JitFunction(fun, _ints(static_argnums, "static_argnums"),
                       _names(static_argnames), _ints(donate_argnums, "donate_argnums"),
                       _backend_options(backend_options))


def _backend_options(options):
    """jit's backend_options as a sorted tuple of (name, value) pairs (hashable)."""
    if options is None:
        return ()
    if not isinstance(options, dict) or not all(isinstance(k, str) for k in options):
        raise TypeError(f"jit: backend_options must be a dict with str keys, got "
                        f"{options!r:.80}")
    for k, v in options.items():
        try:
            hash(v)
        except TypeError:
            raise TypeError(f"jit: backend_options[{k!r}] must be hashable, got "
                            f"{type(v).__name__}") from None
    return tuple(sorted(options.items()))


def _fun_name(fun):
    """The name of a function, of the function a partial binds, or of a callable's type."""
    while getattr(fun, "__name__", None) is None and isinstance(fun, functools.partial):
        fun = fun.func
    return getattr(fun, "__name__", None) or type(fun).__name__


def _ints(x, what):
    x = (x,) if isinstance(x, int) else tuple(x)
    if not all(isinstance(i, int) and not isinstance(i, bool) for i in x):
        raise TypeError(f"jit: {what} must be ints, got {x!r}")
    return x


def _names(x):
    x = (x,) if isinstance(x, str) else tuple(x)
    if not all(isinstance(n, str) for n in x):
        raise TypeError(f"jit: static_argnames must be strings, got {x!r}")
    return x


class _Entry:
    """One traced signature: its jaxpr, output tree and (once run eagerly) executable."""

    __slots__ = ("closed", "flat", "out_tree", "signature", "executable", "donated",
                 "cacheable", "timings", "runner", "tree_calls")


class _Cache:
    """What a jitted function has traced and compiled; shared by every `jit` wrapper of the
    same function with the same options (see `_shared_cache`)."""

    __slots__ = ("fast", "entries", "history", "traces", "arguments", "__weakref__")

    def __init__(self):
        self.fast = {}  # positional arrays only: (shape, dtype, weak, device)* -> runner
        self.entries = OrderedDict()  # full signature -> _Entry
        self.history = []  # signatures traced so far (for explaining retraces)
        self.traces = 0
        self.arguments = None  # _Arguments
        _caches.add(self)


class _Arguments:
    """Which parameters of a function are static or donated (from its signature)."""

    def __init__(self, fun, static_argnums, static_argnames, donate_argnums):
        self.params = params = _parameters(fun)
        self.raw = nums = _resolve_negative(fun, static_argnums)
        self.nums = frozenset(nums) | {i for i, p in enumerate(params) if p in static_argnames}
        self.names = frozenset(static_argnames) | {
            params[i] for i in nums if 0 <= i < len(params)}
        self.donate = frozenset(donate_argnums)
        self.negative = any(i < 0 for i in nums)


def _shared_cache(fun, options):
    """The cache of `fun` for these jit options. It lives as long as the function does (held
    by a weak reference to it), so `jit(f)` written anew at every call, e.g. in a loop,
    finds what an earlier wrapper of `f` compiled, as in JAX. A bound method's cache is
    its function's, per receiving object (dropped when that object goes); a callable that
    is not weakly referenceable and hashable gets a cache of its own wrapper."""
    binding = None
    if isinstance(fun, types.MethodType):
        base, owner = fun.__func__, fun.__self__
        binding = ("bound to", id(owner))
    else:
        base, owner = fun, None
    try:
        table = _by_function.get(base)
        if table is None:
            table = _by_function[base] = {}
        key = (binding, options)
        cache = table.get(key)
        if cache is None:
            if owner is not None:  # the id may be reused once the object is gone
                weakref.finalize(owner, table.pop, key, None)
            cache = table[key] = _Cache()
    except TypeError:  # not weakly referenceable, or not hashable
        return _Cache()
    return cache


class JitFunction:
    """The callable `jit(fun)` returns."""

    def __init__(self, fun, static_argnums, static_argnames, donate_argnums,
                 backend_options=()):
        functools.update_wrapper(self, fun)
        self.__wrapped__ = fun
        self._fun = fun
        self._name = _fun_name(fun)
        self._cache = cache = _shared_cache(fun, (frozenset(static_argnums),
                                                  frozenset(static_argnames),
                                                  frozenset(donate_argnums),
                                                  backend_options))
        self._backend_options = backend_options
        if cache.arguments is None:  # read off the signature once per function and options
            cache.arguments = _Arguments(fun, static_argnums, static_argnames, donate_argnums)
        a = cache.arguments
        self._params, self._static_nums, self._static_names = a.params, a.nums, a.names
        self._donate, self._neg_static, self._static_raw = a.donate, a.negative, a.raw
        self._fast = cache.fast  # the shared dicts, read here without an indirection
        self._entries = cache.entries

    def __repr__(self):
        return f"<jit {self._name}>"

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self, obj)

    # ---- calls ----------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        if not kwargs and _state.trace is EVAL_TRACE:
            key = []
            for a in args:
                if type(a) is not ArrayImpl:
                    break
                b = a._buf
                key += (b.shape, b.dtype, a._weak, a._device)
            else:
                b = None  # no stray reference: a donated buffer is reused only if unshared
                run = self._fast.get(tuple(key))
                if run is not None:
                    return run(args)
                return self._call(args, kwargs)
            b = None
            leaves = list_leaves(args, self._static_nums or self._neg_static)
            if leaves is not None:
                run = self._fast.get(list_key(args, leaves))
                if run is not None:
                    return run(leaves)
            trees = self._fast.get(TREES)
            if trees is not None:  # pytree arguments: generated, guarded flatteners
                for run in trees:
                    out = run(args)
                    if out is not MISS:
                        return out
        return self._call(args, kwargs)

    def _call(self, args, kwargs):
        if _jit_disabled():
            return self._fun(*args, **kwargs)
        leaves, entry, key = self._prepare(args, kwargs)
        if _state.trace is EVAL_TRACE:
            return self._run(entry, leaves, args, kwargs)
        closed = entry.closed
        n = len(closed.consts)
        # one Jaxpr object per entry: the jit rules cache their work by the jaxpr's identity
        outs = jit_p.bind(*closed.consts, *leaves, jaxpr=entry.flat, name=self._name,
                          donated=(False,) * n + entry.donated)
        return tree_util.tree_unflatten(entry.out_tree, outs)

    def _run(self, entry, leaves, args, kwargs):
        exe = entry.executable
        if exe is None:
            exe = entry.executable = _compile_entry(entry, self._name,
                                                    self._backend_options)
        fast = entry.cacheable and not kwargs and len(leaves) == len(args) and all(
            type(a) is ArrayImpl for a in args) and _flat_tuple(entry, len(args))
        key = fast_key(args) if fast else None  # before the call: donation invalidates args
        if entry.cacheable and not kwargs and not fast:
            listed = list_leaves(args, self._static_nums or self._neg_static)
            if listed is not None:  # the same leaves, in the same order, as `leaves`
                key = list_key(args, listed)
        run = entry.runner  # generated: unpack, call, wrap, unflatten (cheaper than exe.call)
        if run is None:  # the first call: generating a runner pays off on repeated calls only
            entry.runner = False
            return tree_util.tree_unflatten(entry.out_tree, exe.call(leaves))
        if run is False:
            run = entry.runner = exe.make_runner(entry.out_tree)
        if key is not None:
            self._fast[key] = run
        elif entry.cacheable and not kwargs and entry.tree_calls < 2:
            entry.tree_calls += 1  # generated on the signature's third call: one called
            if entry.tree_calls == 2:  # once or twice would not pay for it (1-2 ms)
                self._add_tree_runner(entry, args, leaves, run)
        return run(leaves)

    def _add_tree_runner(self, entry, args, leaves, run):
        """Generate the guarded flattener of this signature (jit_trees.tree_runner) for
        later calls with pytree arguments; the most recent few are kept."""
        if self._static_nums or self._neg_static or self._static_raw:
            return
        flat = tree_runner(entry.signature[0], args, leaves, entry.signature[4], run)
        if flat is not None:
            trees = self._fast.get(TREES) or []
            self._fast[TREES] = [flat] + trees[:_MAX_TREE_RUNNERS - 1]

    def _prepare(self, args, kwargs, abstract=False):
        """Flatten the arguments; find (or trace) the entry for their signature. With
        `abstract`, leaves may be ShapeDtypeStructs (for trace and lower)."""
        static_nums = self._static_positions(len(args))
        dyn_args, static_vals = [], []
        for i, a in enumerate(args):
            if i in static_nums:
                static_vals.append((i, _hashable(a, self, self._param_name(i))))
            else:
                dyn_args.append(a)
        dyn_kwargs = {}
        for k in sorted(kwargs):
            if k in self._static_names:
                static_vals.append((k, _hashable(kwargs[k], self, k)))
            else:
                dyn_kwargs[k] = kwargs[k]
        leaves, treedef = tree_util.tree_flatten((tuple(dyn_args), dyn_kwargs))
        if abstract:
            leaves = [x if isinstance(x, (ArrayImpl, Tracer)) or _is_struct(x)
                      else _concrete(x, self) for x in leaves]
        else:
            leaves = _arrays_of(leaves, self)
        if abstract:
            avals = tuple(_struct_aval(x) if _is_struct(x) else aval_of(x) for x in leaves)
            types = tuple((a.shape, a.dtype, a.weak_type) for a in avals)
        else:  # what aval_of gives, without building the avals a cache hit does not need
            avals = None
            types = tuple((x._buf.shape, x._buf.dtype, x._weak) if type(x) is ArrayImpl
                          else _type_of(aval_of(x)) for x in leaves)
        donated = self._donated_leaves(args, static_nums, dyn_kwargs) if self._donate else ()
        device = _device_of(leaves, abstract)
        key = (treedef, types, tuple(static_vals), donated, device, config.values())
        entry = self._entries.get(key)
        if entry is None:
            if avals is None:
                avals = tuple(aval_of(x) for x in leaves)
            entry = self._trace(args, kwargs, static_nums, treedef, leaves, avals, key,
                                donated)
        else:
            self._entries.move_to_end(key)
        return leaves, entry, key

    def _trace(self, args, kwargs, static_nums, treedef, leaves, avals, key, donated):
        self._explain_miss(key, args, kwargs, static_nums, avals)
        t0 = time.perf_counter()
        store = {}

        def flat_fun(*xs):
            dyn, kw = tree_util.tree_unflatten(treedef, xs)
            it = iter(dyn)
            full = [a if i in static_nums else next(it) for i, a in enumerate(args)]
            kw = dict(kw, **{k: v for k, v in kwargs.items() if k in self._static_names})
            out = _float0_as_structure(self._fun(*full, **kw))
            out_leaves, store["tree"] = tree_util.tree_flatten(out)
            return [_check_out(x, self._name) for x in out_leaves]

        jaxpr, consts = trace_closed_over(flat_fun, list(avals), f"jit({self._name})")
        n = len(consts)
        closed = ClosedJaxpr(
            Jaxpr(jaxpr.invars[:n], jaxpr.invars[n:], jaxpr.eqns, jaxpr.outvars,
                  jaxpr.debug_name), consts)
        _warn_unrolled(closed)
        entry = _Entry()
        entry.closed, entry.out_tree, entry.executable = closed, store["tree"], None
        entry.runner, entry.tree_calls = None, 0
        entry.flat = jaxpr  # consts then arguments as invars: what jit_p carries
        entry.signature, entry.donated = key, donated or (False,) * len(leaves)
        entry.cacheable = not any(isinstance(c, Tracer) for c in consts)
        entry.timings = {"trace_ms": 1e3 * (time.perf_counter() - t0)}
        if profiling.active() is not None:  # a profiled region shows time spent tracing
            profiling.record(profiling.Site("compile", f"trace jit({self._name})",
                                            f"{len(jaxpr.eqns)} equations",
                                            scope=self._name), t0)
        self._cache.traces += 1
        if entry.cacheable:
            self._entries[key] = entry
            if len(self._entries) > _MAX_SIGNATURES:
                old, _ = self._entries.popitem(last=False)
                self._fast.clear()
        return entry

    # ---- arguments ------------------------------------------------------------------------
    def _static_positions(self, nargs):
        if not self._neg_static:
            return self._static_nums
        out = set(self._static_nums)
        for i in self._static_raw:
            if i < 0:
                out.add(i + nargs)
        return out

    def _param_name(self, i):
        return self._params[i] if i < len(self._params) else f"args[{i}]"

    def _donated_leaves(self, args, static_nums, dyn_kwargs):
        flags = []
        for i, a in enumerate(args):
            if i not in static_nums:
                flags += [i in self._donate] * len(tree_util.tree_leaves(a))
        flags += [False] * len(tree_util.tree_leaves(dyn_kwargs))
        return tuple(flags)

    # ---- explaining retraces ----------------------------------------------------------------
    def _explain_miss(self, key, args, kwargs, static_nums, avals):
        described = describe_signature(self, args, kwargs, static_nums)
        cache = self._cache
        previous = cache.history[-1] if cache.history else None
        cache.history = (cache.history + [(described, key[0])])[-8:]
        if previous is None:
            return
        if not (config.explain_cache_misses or cache.traces >= _AUTO_EXPLAIN_AFTER):
            return
        why = difference(previous[0], described)
        if why is None:
            why = (f"the structure of the arguments changed from {previous[1]} to {key[0]}"
                   if previous[1] != key[0] else "the configuration or device changed")
        tail = "" if config.explain_cache_misses else (
            " Retracing is slow: pass changing Python values as arrays, or keep shapes fixed "
            "(set mt.config.update('explain_cache_misses', True) to see every retrace).")
        warnings.warn(
            f"jit({self._name}) is tracing again (trace #{cache.traces + 1}) because {why}."
            + tail, RetraceWarning, stacklevel=_user_stacklevel())

    # ---- ahead of time (jit_stages.py) --------------------------------------------------------
    def trace(self, *args, **kwargs):
        """Trace for these arguments (or ShapeDtypeStructs) without running: a `Traced`
        with `.jaxpr`, `.in_avals`, `.out_info`, `.args_info` and `.lower()`."""
        _, entry, _ = self._prepare(args, kwargs, abstract=True)
        return Traced(self, entry)

    def lower(self, *args, **kwargs):
        """The program compiled for these arguments: `.as_text()` is the generated code,
        `.jaxpr` the optimised jaxpr, `.timings` where compile time went (ms)."""
        return self.trace(*args, **kwargs).lower()

    def clear_cache(self):
        self._fast.clear()
        self._entries.clear()


def _device_of(leaves, abstract):
    """The device a call on `leaves` compiles for: that of the first committed array
    (placed on purpose: see ArrayImpl), else of the first leaf when it is an array."""
    placed = [x for x in leaves if type(x) is ArrayImpl and x._committed]
    for x in placed:
        if x.device is not placed[0].device:
            raise user_error(ValueError, (
                f"jit: its arguments are on different devices: {placed[0].aval.str_short()} "
                f"on {placed[0].device!r} and {x.aval.str_short()} on {x.device!r}; move one "
                "with mt.device_put(x, device)"))
    if placed:
        return placed[0].device
    if leaves and isinstance(leaves[0], ArrayImpl):
        return leaves[0].device
    return default_device() if abstract and leaves and _is_struct(leaves[0]) else None


def _is_struct(x):
    """A ShapeDtypeStruct (or anything with a shape and a dtype that is not an array)."""
    return hasattr(x, "shape") and hasattr(x, "dtype") and not isinstance(
        x, (ArrayImpl, Tracer, np.ndarray, np.generic))


def _struct_aval(x):
    return ShapedArray(tuple(x.shape), dtypes.canonicalize(np.dtype(x.dtype)),
                       bool(getattr(x, "weak_type", False)))


def _compile_entry(entry, name, backend_options=()):
    from mytorch.jit_rules import compile_closed

    device = entry.signature[4]  # the device of the first argument, if an array
    exe = compile_closed(entry.closed, entry.donated, name, device or default_device(),
                         backend_options)
    entry.timings.update(exe.timings)
    return exe


def _type_of(aval):
    return (aval.shape, aval.dtype, aval.weak_type)


def _flat_tuple(entry, nargs):
    """Whether the signature is `nargs` positional array leaves (the fast path's shape)."""
    treedef = entry.signature[0]
    return treedef.num_leaves == nargs and treedef == _positional_treedef(nargs)


@functools.lru_cache(maxsize=64)
def _positional_treedef(n):
    return tree_util.tree_structure((tuple(range(n)), {}))


def _parameters(fun):
    try:
        sig = inspect.signature(fun)
    except (TypeError, ValueError):
        return ()
    return tuple(p.name for p in sig.parameters.values()
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))


def _resolve_negative(fun, nums):
    """Negative static_argnums counted from the end of `fun`'s positional parameters (when
    it has no *args), so that they also match arguments given by keyword."""
    try:
        params = inspect.signature(fun).parameters.values()
    except (TypeError, ValueError):
        return nums
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return nums
    n = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)
    return tuple(i + n if i < 0 else i for i in nums)


def _hashable(value, fn, name):
    try:
        hash(value)
    except TypeError:
        raise NonHashableStaticArgError(
            f"jit({fn._name}): static argument `{name}` has unhashable type "
            f"{type(value).__name__} ({value!r:.60}); static arguments must be hashable "
            "(use a tuple instead of a list, or pass arrays as non-static arguments)"
        ) from None
    return value


def _arrays_of(leaves, fn):
    """`leaves` with NumPy arrays and Python scalars made arrays (as `to_concrete` makes
    them: a copy, of the canonical dtype, on the default device, looked up once)."""
    out, dev = [], None
    for x in leaves:
        if isinstance(x, (ArrayImpl, Tracer)):
            out.append(x)
        elif type(x) is np.ndarray and x.dtype.kind in "biufc":
            dev = dev or default_device()
            buf = dev.backend.put(x.astype(dtypes.canonicalize(x.dtype), copy=False), dev)
            out.append(ArrayImpl(buf, False, dev))
        else:
            out.append(_concrete(x, fn))
    return out


def _concrete(x, fn):
    try:
        return to_concrete(x)
    except TypeError:
        name = fn._name if isinstance(fn, JitFunction) else fn
        raise TypeError(
            f"jit({name}) was called with an argument of type {type(x).__name__}, which "
            "is not an array: pass arrays (or pytrees of arrays), or mark the argument "
            "static with static_argnums/static_argnames"
        ) from None


class _Float0:
    """A float0 output (the gradient of an integer input, `grad(allow_int=True)`): it
    carries no data, so a jitted function keeps it in its output structure rather than
    among the computed leaves; unflattening the structure gives the NumPy float0 zeros."""

    __slots__ = ("shape",)

    def __init__(self, shape):
        self.shape = shape


tree_util.register_pytree_node(
    _Float0, lambda x: ((), x.shape), lambda shape, _: np.zeros(shape, dtypes.float0))


def _float0_as_structure(out):
    def mark(x):
        return _Float0(x.shape) if getattr(x, "dtype", None) == dtypes.float0 else x

    return tree_util.tree_map(mark, out)


def _check_out(x, name):
    from mytorch.core.array import Array

    if isinstance(x, Array):
        return x
    try:
        return to_concrete(x)
    except TypeError:
        raise TypeError(
            f"jit({name}) returned a value of type {type(x).__name__}; a jitted function "
            "must return arrays (or pytrees of arrays)"
        ) from None


def _warn_unrolled(closed):
    from mytorch.transforms.optimize import unroll_warning

    msg = unroll_warning(closed)
    if msg:
        warnings.warn(msg, UserWarning, stacklevel=_user_stacklevel())


def _user_stacklevel():
    """The stacklevel of the first frame outside mytorch (for warnings): the frames
    `source_info.user_frame` skips."""
    import sys

    from mytorch.core.source_info import _SKIP_PREFIXES

    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(_SKIP_PREFIXES):
        frame, level = frame.f_back, level + 1
    return level


def clear_caches():
    """Drop every compiled function and traced jaxpr (jit caches and the rule caches)."""
    for cache in list(_caches):
        cache.fast.clear()
        cache.entries.clear()
    from mytorch.jit_rules import clear_rule_caches

    clear_rule_caches()


def _on_config_update(name, value):
    for cache in list(_caches):
        cache.fast.clear()


config.on_update(_on_config_update)


def eval_shape(fun, *args, **kwargs):
    """The output shapes and dtypes of `fun(*args, **kwargs)`, computed by tracing alone.

    Arguments may be arrays or anything with `.shape` and `.dtype` (e.g. ShapeDtypeStruct).
    Returns the output pytree with a ShapeDtypeStruct per leaf.
    """
    from mytorch.core.aval import ShapedArray
    from mytorch.core.staging import trace_to_jaxpr
    from mytorch.debugging import ShapeDtypeStruct

    def aval(x):
        if hasattr(x, "shape") and hasattr(x, "dtype") and not isinstance(x, Tracer):
            return ShapedArray(x.shape, x.dtype, getattr(x, "weak_type", False))
        return aval_of(x)

    leaves, treedef = tree_util.tree_flatten((args, kwargs))
    store = {}

    def flat(*xs):
        a, kw = tree_util.tree_unflatten(treedef, xs)
        out_leaves, store["tree"] = tree_util.tree_flatten(fun(*a, **kw))
        return [_check_out(x, getattr(fun, "__name__", "fun")) for x in out_leaves]

    closed = trace_to_jaxpr(flat, [aval(x) for x in leaves], "eval_shape")
    outs = [ShapeDtypeStruct(a.shape, a.dtype) for a in closed.out_avals]
    return tree_util.tree_unflatten(store["tree"], outs)
