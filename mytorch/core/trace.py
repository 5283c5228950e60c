"""Traces and tracers, and the eager trace that runs kernels.

The current trace lives in a thread-local slot. A transformation installs a new trace whose
`parent` is the trace that was current; the trace object itself is the tag that tells its
own tracers from foreign values (which are constants to it). A trace processes a primitive
by unwrapping its tracers and emitting work to its parent (`with set_current_trace(parent)`).
When a transformation ends its trace is marked dead, so a tracer that escapes is caught the
next time it is used.
"""

import contextlib
import threading

import numpy as np

from mytorch.core import dtypes, profiling
from mytorch.core.config import config
from mytorch.core.array import Array, ArrayImpl, from_numpy, is_python_scalar, scalar_array
from mytorch.core.aval import ShapedArray
from mytorch.core.source_info import user_error, user_frame
from mytorch.errors import (
    ConcretizationTypeError,
    TracerArrayConversionError,
    UnexpectedTracerError,
)


class Trace:
    """Base class of a transformation's trace."""

    __slots__ = ("parent", "name", "alive", "source", "__weakref__")

    def __init__(self, parent, name):
        self.parent = parent
        self.name = name  # e.g. "make_jaxpr(loss)": used in error messages
        self.alive = True
        self.source = user_frame()

    def process_primitive(self, prim, args, params):
        """Apply `prim` to `args` (tracers of any trace, or concrete arrays): a list."""
        raise NotImplementedError

    def __repr__(self):
        return f"<{type(self).__name__} {self.name}>"


class _State(threading.local):
    def __init__(self):
        self.trace = EVAL_TRACE


def current_trace():
    return _state.trace


def bound_axes():
    """{name: size} of the named axes of the enclosing traces (vmap/pmap with axis_name),
    innermost first. Collectives look their axis up here when they are bound."""
    axes = {}
    t = _state.trace
    while t is not None:
        name = getattr(t, "axis_name", None)
        if name is not None and name not in axes:
            axes[name] = t.axis_size
        t = t.parent
    return axes


@contextlib.contextmanager
def set_current_trace(trace):
    """Make `trace` current inside the block (and restore the previous one after)."""
    prev = _state.trace
    _state.trace = trace
    try:
        yield trace
    finally:
        _state.trace = prev


@contextlib.contextmanager
def new_trace(make_trace):
    """Install `make_trace(parent)` as the current trace; mark it dead on exit."""
    trace = make_trace(_state.trace)
    prev = _state.trace
    _state.trace = trace
    try:
        yield trace
    finally:
        _state.trace = prev
        trace.alive = False


class Tracer(Array):
    """A value being traced by a transformation: knows its trace and its abstract value."""

    __slots__ = ("_trace",)

    @property
    def aval(self):
        raise NotImplementedError

    @property
    def shape(self):
        return self.aval.shape

    @property
    def dtype(self):
        return self.aval.dtype

    def concrete_value(self):
        """The value as a NumPy array when the trace knows it (e.g. JVP primals), else None."""
        return None

    # What a rule may ask of a value of any trace, each tracer answering for its own trace
    # (rules never look inside another interpreter's tracers): see `known_value`.
    def known_value(self):
        """The value under this tracer now, the batches of enclosing vmaps included (a
        NumPy array of the batched shape), or None when some trace below stages it."""
        return self.concrete_value()

    def is_known(self):
        """Whether `known_value()` is not None (without fetching the value)."""
        return self.known_value() is not None

    def is_differentiated(self):
        """Whether an enclosing forward-mode differentiation carries a tangent for the
        value (so derivatives of what is computed from it are taken again)."""
        return False

    def _concretize(self, what, suggestion):
        value = self.concrete_value()
        if value is not None:
            return value
        raise ConcretizationTypeError(_concretization_message(self, what, suggestion))

    def __bool__(self):
        return bool(self._concretize("`if`/`while`/bool()",
                                     "lax.cond, lax.while_loop or mnp.where"))

    def __int__(self):
        return int(self._concretize("int()", "lax.convert_element_type"))

    def __float__(self):
        return float(self._concretize("float()", "lax.convert_element_type"))

    def __index__(self):
        value = self.concrete_value()
        if value is None:
            raise ConcretizationTypeError(_index_message(self))
        return int(value)

    def __complex__(self):
        return complex(self._concretize("complex()", "real arithmetic"))

    def item(self, *args):
        return self._concretize(".item()", "keeping it as an array").item(*args)

    def tolist(self):
        return self._concretize(".tolist()", "keeping it as an array").tolist()

    def __array__(self, dtype=None, copy=None):
        raise TracerArrayConversionError(
            f"a traced {self.aval.str_short()} value in {self._trace.name} cannot be "
            f"converted to a NumPy array{_at()}. Use mytorch.numpy functions instead of "
            "numpy ones inside transformed functions, or mt.pure_callback for host code."
        )

    def __repr__(self):
        return f"Traced<{self.aval.str_short()}> in {self._trace.name}"


def _at():
    info = user_frame()
    return f" ({info})" if info is not None else ""


def _concretization_message(tracer, what, suggestion):
    aval = tracer.aval
    return (
        f"{what} needs a concrete value, but got an abstract {aval.str_short()} "
        f"in {tracer._trace.name}{_at()}. Use {suggestion}, or mark the argument static "
        "with static_argnums."
    )


class Suspended:
    """The `alive` value of a trace whose tracers may not be used for a while (a custom
    derivative rule runs one level down): falsy, and carries the error to report."""

    __slots__ = ("message",)

    def __init__(self, message):
        self.message = message

    def __bool__(self):
        return False


def _index_message(tracer):
    # Python asks for __index__ where it needs an int: a shape or size (reshape, zeros, eye,
    # broadcast_to, range(n)) far more often than a position, and shapes cannot be traced
    return (
        f"a Python int (a shape, a size, range() or a static index) is needed, but got an "
        f"abstract {tracer.aval.str_short()} in {tracer._trace.name}{_at()}. Shapes and sizes "
        "must be static: compute them from static shapes (such as x.shape[0]) or Python "
        "values rather than from array values, or mark the argument static with "
        "static_argnums. To index at a traced position, use lax.dynamic_slice or "
        "lax.dynamic_index_in_dim."
    )


def leaked_tracer_error(tracer):
    trace = tracer._trace
    if isinstance(trace.alive, Suspended):
        return TypeError(f"{trace.alive.message} (a {tracer.aval.str_short()} value of "
                         f"{trace.name}){_at()}")
    made = f" ({trace.source})" if trace.source is not None else ""
    return UnexpectedTracerError(
        f"a {tracer.aval.str_short()} value created in {trace.name}{made} was used after "
        f"that transformation ended{_at()}. Return it from the function instead of storing it."
    )


def to_concrete(x):
    """Turn a raw value (Python or NumPy scalar, NumPy array) into an ArrayImpl."""
    if is_python_scalar(x):
        return scalar_array(x)
    if isinstance(x, (np.ndarray, np.generic)):
        return from_numpy(x)
    raise TypeError(
        f"expected an array, got {type(x).__name__}: {x!r:.80}. Wrap lists and other "
        "values with mnp.asarray first"
    )


class EvalTrace(Trace):
    """The trace at the bottom: runs each primitive's kernel eagerly (a call primitive
    without an `impl` runs compiled by its device's backend)."""

    __slots__ = ()

    def process_primitive(self, prim, args, params):
        arrays = []
        for a in args:
            if type(a) is not ArrayImpl:
                if isinstance(a, Tracer):
                    raise leaked_tracer_error(a)
                a = a if isinstance(a, ArrayImpl) else to_concrete(a)
            arrays.append(a)
        out_avals = prim.abstract_eval(*[a.aval for a in arrays], **params)
        if prim.impl is not None:
            return prim.impl(*arrays, **params)
        device = arrays[0].device if arrays else _default_device()
        for a in arrays:
            if a._device is not device:  # rare: an array without a device, or mixed devices
                device = _common_device(prim, arrays)
                bufs = [a._on(device) for a in arrays]
                break
        else:
            bufs = [a._buf for a in arrays]
        committed = False
        for a in arrays:
            if a._committed:
                committed = True
                break
        backend = device.backend
        if prim.kind == "call":  # compiled as one equation (see Backend.call_kernel)
            outs = backend.call_kernel(prim, [a.aval for a in arrays], params, device)(*bufs)
        else:
            outs = backend.kernel(prim)(*bufs, **params)
            if not prim.multiple_results:
                outs = (outs,)
        results = [
            ArrayImpl(backend.coerce(o, aval.dtype), aval.weak_type, device, committed)
            for o, aval in zip(outs, out_avals, strict=True)
        ]
        if _debug_nans[0]:
            _check_nans(prim, arrays, results)
        return results


_eager_process = EvalTrace.process_primitive


def _profiled_process_primitive(self, prim, args, params):
    """EvalTrace.process_primitive while `mt.profiler` records: the op is timed, with its
    operands' shapes and the user's line, and its buffers counted (core/profiling.py)."""
    t0 = profiling.clock()
    outs = _eager_process(self, prim, args, params)
    site = profiling.Site("eager", prim.name, profiling.shapes_of(args, outs),
                          profiling.source_of(user_frame()))
    bufs = [a._buf for a in (*args, *outs) if type(a) is ArrayImpl]
    profiling.record(site, t0, bufs)
    return outs


def profile_eager(on):
    """Record eager ops (`on`) or stop recording them: the eager trace's method is swapped,
    so eager ops cost nothing extra while no profiler records."""
    EvalTrace.process_primitive = _profiled_process_primitive if on else _eager_process


_debug_nans = [config.debug_nans]
config.on_update(lambda name, value: name == "debug_nans" and _debug_nans.__setitem__(0, value))


def _check_nans(prim, args, results):
    """debug_nans: raise where a primitive first turns non-NaN inputs into a NaN."""
    for r in results:
        if not dtypes.is_inexact(r.dtype):
            continue
        host = np.asarray(r._host(), dtype=np.float32 if r.dtype == dtypes.bfloat16 else None)
        if np.isnan(host).any():
            ins_nan = any(dtypes.is_inexact(a.dtype) and np.isnan(np.asarray(
                a._host(), dtype=np.float32 if a.dtype == dtypes.bfloat16 else None)).any()
                for a in args)
            if not ins_nan:
                raise FloatingPointError(
                    f"debug_nans: {prim.name} produced a NaN from NaN-free inputs "
                    f"({', '.join(a.aval.str_short() for a in args)}){_at()}"
                )


def _common_device(prim, arrays):
    """The device an eager `prim` on `arrays` runs on: that of its committed operands (see
    ArrayImpl), else that of its first operand with a shape. Uncommitted operands, 0-d
    ones (a Python number, a constant) and sharded arrays (gathered on the host) follow
    and are copied there. Committed operands of more than one element on two different
    devices are an error naming both."""
    placed = [a for a in arrays if type(a) is ArrayImpl and a._committed]
    committed = [a for a in placed if a._buf.shape]
    if not committed:
        if placed:  # only 0-d ones: the first
            return placed[0].device
        shaped = [a for a in arrays if type(a) is ArrayImpl and a._buf.shape]
        return shaped[0].device if shaped else arrays[0].device
    device = committed[0].device
    for a in committed:
        if a.device is not device:
            raise user_error(ValueError, (
                f"{prim.name}: its operands are on different devices: "
                f"{committed[0].aval.str_short()} on {device!r} and {a.aval.str_short()} on "
                f"{a.device!r}; move one with mt.device_put(x, device)"))
    return device


def _default_device():
    from mytorch.core.backend import default_device

    return default_device()


EVAL_TRACE = EvalTrace(None, "eager evaluation")
_state = _State()


def known_value(x):
    """The value of `x` known now, as a NumPy array (batches included), or None: a tracer
    answers for its own trace (`Tracer.known_value`); any other value is known."""
    if isinstance(x, Tracer):
        return x.known_value()
    return x._host() if isinstance(x, ArrayImpl) else np.asarray(x)


def is_known(x):
    """Whether `known_value(x)` is not None, without fetching the value."""
    return x.is_known() if isinstance(x, Tracer) else True


def is_differentiated(x):
    """Whether an enclosing forward-mode differentiation carries a tangent for `x`."""
    return isinstance(x, Tracer) and x.is_differentiated()


def aval_of(x):
    """The abstract value of an array, tracer, NumPy value or Python scalar."""
    if isinstance(x, Array):
        return x.aval
    if is_python_scalar(x):
        dtype, weak = dtypes.python_scalar_dtype(x)
        return ShapedArray((), dtype, weak)
    if isinstance(x, (np.ndarray, np.generic)):
        return ShapedArray(np.shape(x), dtypes.canonicalize(x.dtype))
    raise TypeError(f"{type(x).__name__} is not a valid mytorch array value: {x!r:.80}")
