"""Public entry points: make_jaxpr and devices (the transformations join as they land)."""

import functools

import numpy as np

from mytorch import distributed
from mytorch.core import tree_util
from mytorch.core.array import Array, ArrayImpl, from_numpy
from mytorch.core.backend import available_platforms, get_backend
from mytorch.core.staging import trace_to_jaxpr
from mytorch.core.trace import aval_of


def _fun_name(fun):
    return getattr(fun, "__name__", None) or type(fun).__name__


def _static_positions(fun, static_argnums, static_argnames, nargs):
    """Normalise static_argnums (ints, negatives allowed) against `nargs` positionals."""
    if isinstance(static_argnums, int):
        static_argnums = (static_argnums,)
    out = set()
    for i in static_argnums:
        j = i + nargs if i < 0 else i
        if not 0 <= j < nargs:
            raise ValueError(
                f"static_argnums {tuple(static_argnums)} is out of range for a call of "
                f"{_fun_name(fun)} with {nargs} positional arguments"
            )
        out.add(j)
    return out


def make_jaxpr(fun, static_argnums=(), return_shape=False):
    """`make_jaxpr(f)(*args, **kwargs)`: the ClosedJaxpr that `f` traces to at `args`.

    Args:
      fun: a function of arrays (pytrees of arrays) returning a pytree of arrays.
      static_argnums: positions of arguments passed through as Python values (not traced).
      return_shape: also return the output pytree of ShapedArrays.

    Returns:
      A function returning a ClosedJaxpr (and the output shapes when `return_shape`).

    >>> import mytorch as mt, mytorch.numpy as mnp
    >>> print(mt.make_jaxpr(lambda x: mnp.sin(x) * 2.0)(mnp.ones(3)))
    { lambda ; a:f32[3]. let
        b:f32[3] = sin a
        c:f32[3] = mul b 2.0:f32[]
      in (c,) }
    """

    @functools.wraps(fun)
    def make(*args, **kwargs):
        static = _static_positions(fun, static_argnums, (), len(args))
        dyn_args = tuple(a for i, a in enumerate(args) if i not in static)
        leaves, in_tree = tree_util.tree_flatten((dyn_args, kwargs))
        in_avals = [_arg_aval(x, fun) for x in leaves]
        out_tree_box = []

        def flat_fun(*tracers):
            dyn, kw = tree_util.tree_unflatten(in_tree, tracers)
            it = iter(dyn)
            full = [a if i in static else next(it) for i, a in enumerate(args)]
            out = fun(*full, **kw)
            out_leaves, out_tree = tree_util.tree_flatten(out)
            out_tree_box.append(out_tree)
            return [_check_out(x, fun) for x in out_leaves]

        closed = trace_to_jaxpr(flat_fun, in_avals, f"make_jaxpr({_fun_name(fun)})")
        if return_shape:
            shapes = tree_util.tree_unflatten(out_tree_box[0], closed.out_avals)
            return closed, shapes
        return closed

    return make


def _arg_aval(x, fun):
    try:
        return aval_of(x)
    except TypeError:
        raise TypeError(
            f"{_fun_name(fun)} was called with an argument of type {type(x).__name__}, "
            "which is not an array: pass arrays (or pytrees of arrays), or mark the "
            "argument static with static_argnums"
        ) from None


def _check_out(x, fun):
    if isinstance(x, (Array, np.ndarray, np.generic, bool, int, float)):
        return x
    raise TypeError(
        f"{_fun_name(fun)} returned a value of type {type(x).__name__}; a transformed "
        "function must return arrays (or pytrees of arrays)"
    )


# ---- devices ----------------------------------------------------------------------------
def devices(backend=None):
    """The devices of `backend` ("cpu"/"gpu"; default: the configured default backend):
    every process's after `mytorch.distributed.initialize`, ordered by process."""
    return distributed.global_devices(backend)


def local_devices(process_index=None, backend=None):
    """The devices of `backend` that process `process_index` (default: this one) owns."""
    if process_index is None or process_index == distributed.process_index():
        return distributed.local_devices(backend)
    return [d for d in devices(backend) if d.process_index == process_index]


def local_device_count(backend=None):
    """How many devices `local_devices(backend=backend)` lists."""
    return len(distributed.local_devices(backend))


def device_count(backend=None):
    """How many devices `devices(backend)` lists (every process's)."""
    return len(devices(backend))


process_index = distributed.process_index
process_count = distributed.process_count


def device_put(x, device=None):
    """Copy a pytree of arrays (or NumPy values) to `device` (default: the default device)."""

    committed = device is not None  # placed on purpose (see ArrayImpl)

    def put(leaf):
        if isinstance(leaf, ArrayImpl):
            if device is None:
                return leaf
            if leaf.device is device:
                return leaf if leaf._committed or type(leaf) is not ArrayImpl else \
                    ArrayImpl(leaf._buf, leaf.weak_type, device, True)
            return ArrayImpl(leaf._on(device), leaf.weak_type, device, True)
        out = from_numpy(leaf, device=device)
        out._committed = committed
        return out

    return tree_util.tree_map(put, x)


def device_get(x):
    """A pytree of arrays as NumPy arrays on the host."""
    return tree_util.tree_map(lambda a: np.asarray(a) if isinstance(a, Array) else a, x)


__all__ = ["make_jaxpr", "devices", "local_devices", "local_device_count", "device_count",
           "process_index", "process_count", "device_put", "device_get", "available_platforms"]


def block_until_ready(x):
    """Wait until every array in the pytree `x` has been computed; returns `x` unchanged.

    Leaves that are not arrays (Python numbers, strings, None) are passed over, as in JAX.
    """
    for leaf in tree_util.tree_leaves(x):
        wait = getattr(leaf, "block_until_ready", None)
        if callable(wait):
            wait()
    return x
