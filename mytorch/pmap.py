"""`pmap`: run a function as one replica per device, the replicas exchanging values through
collectives over a named axis.

    @functools.partial(mt.pmap, axis_name="batch")
    def step(params, batch):               # params: the same on every device
        grads = mt.grad(loss)(params, batch)
        return lax.pmean(grads, "batch")   # averaged over the devices

    step(params, batches)                  # batches: (n_devices, per-device batch, ...)

The function is traced once per signature (with the axis name bound, so collectives find
it), and bound as the `pmap` call primitive (pmap_rules.py), which compiles the body once
per device and runs the replicas concurrently. Mapped results are `ShardedArray`s.
"""

import functools

from mytorch.core import tree_util
from mytorch.core.backend import Device, get_backend
from mytorch.core.config import config
from mytorch.core.jaxpr import Jaxpr
from mytorch.core.source_info import user_error
from mytorch.core.staging import StagingTrace
from mytorch.core.trace import Tracer, aval_of, bound_axes, new_trace
from mytorch.lax._batching import moveaxis
from mytorch.lax._utils import asarray
from mytorch.pmap_rules import pmap_p, replica_avals

__all__ = ["pmap"]


class _PmapTrace(StagingTrace):
    """The staging trace of a pmap's body: binds the axis name for collectives."""

    __slots__ = ("axis_name", "axis_size")

    def __init__(self, parent, name, axis_name, axis_size):
        super().__init__(parent, name)
        self.axis_name, self.axis_size = axis_name, axis_size


class _Unnamed:
    """The axis of a pmap without axis_name: no collective can name it."""

    __slots__ = ("fun",)

    def __init__(self, fun):
        self.fun = fun

    def __repr__(self):
        return f"<unnamed axis of pmap({self.fun})>"


def _name(fun):
    return getattr(fun, "__name__", type(fun).__name__)


def _is_none(x):
    return x is None


def pmap(fun, axis_name=None, *, in_axes=0, out_axes=0, static_broadcasted_argnums=(),
         devices=None, axis_size=None, donate_argnums=()):
    """Run `fun` once per device, in parallel, on the slices of its mapped arguments.

    Args:
      fun: a function of arrays (pytrees of arrays) returning arrays.
      axis_name: the name collectives in `fun` use for the devices (lax.psum(x, name)...).
      in_axes: the axis of each argument to map over the devices: an int, None (every
        device gets the whole value), or a tuple with one entry per positional argument,
        each an int/None or a pytree prefix of it. Keyword arguments are mapped over 0.
      out_axes: where the device axis goes in each output: an int, None (the output is
        the same on every device: device 0's is returned), or a pytree prefix.
      static_broadcasted_argnums: positional arguments passed to every replica as Python
        values (hashable; a new value traces again).
      devices: the devices to run on (default: the first n of `mt.devices()`, n the size of
        the mapped axis).
      axis_size: the number of devices when no argument is mapped.
      donate_argnums: positional arguments whose buffers the replicas may overwrite.

    Returns:
      A function taking arguments whose mapped axis has one entry per device; mapped
      outputs are `ShardedArray`s of shape (n, *per-device shape) (moved to `out_axes`).

    Raises:
      ValueError: a mapped axis whose size is not the number of devices, mapped axes of
        different sizes, or more devices asked for than exist.
    """
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    if isinstance(static_broadcasted_argnums, int):
        static_broadcasted_argnums = (static_broadcasted_argnums,)
    if isinstance(donate_argnums, int):
        donate_argnums = (donate_argnums,)
    static, donate = tuple(static_broadcasted_argnums), frozenset(donate_argnums)
    if devices is not None:
        devices = tuple(devices)
        if not devices or not all(isinstance(d, Device) for d in devices):
            raise user_error(TypeError, f"pmap({_name(fun)}): devices must be a non-empty "
                                        f"sequence of Devices, got {devices!r:.80}")
        if len(set(devices)) != len(devices):
            raise user_error(ValueError, f"pmap({_name(fun)}): devices lists a device twice: "
                                         f"{list(devices)}")
    if axis_size is not None and (type(axis_size) is not int or axis_size < 1):
        raise user_error(TypeError, f"pmap({_name(fun)}): axis_size must be a positive int, "
                                    f"got {axis_size!r}")
    name = axis_name if axis_name is not None else _Unnamed(_name(fun))
    traces = {}  # signature -> (jaxpr, consts, out_tree, out_mapped), concrete consts only

    @functools.wraps(fun)
    def pmapped(*args, **kwargs):
        n_args = len(args)
        for i in static:
            if not -n_args <= i < n_args:
                raise user_error(ValueError, f"pmap({_name(fun)}): static_broadcasted_argnums "
                                             f"{static} is out of range for {n_args} "
                                             "positional arguments")
        static_pos = {i % n_args for i in static}
        statics = tuple((i, args[i]) for i in sorted(static_pos))
        try:
            hash(statics)
        except TypeError:
            raise user_error(TypeError, f"pmap({_name(fun)}): static arguments must be "
                                        f"hashable, got {statics!r:.80}") from None
        dyn = [a for i, a in enumerate(args) if i not in static_pos]
        axes = _in_axes(fun, in_axes, args, static_pos)
        leaves, dims, in_tree = _flatten(fun, axes, dyn, kwargs)
        n, devs = _devices(fun, leaves, dims, devices, axis_size)
        leaves = [moveaxis(x, d, 0) if d not in (None, 0) else x for x, d in zip(leaves, dims)]
        in_mapped = tuple(d is not None for d in dims)
        donated_pos = [i for i in range(n_args) if i not in static_pos]
        donated = tuple(f for i, a in zip(donated_pos, dyn)
                        for f in [i in donate] * len(tree_util.tree_leaves(a)))
        donated += (False,) * (len(leaves) - len(donated))
        avals = replica_avals([aval_of(x) for x in leaves], in_mapped)
        key = (in_tree, tuple(avals), in_mapped, statics, n, devs,
               tuple(bound_axes().items()), config.values())
        hit = traces.get(key)
        if hit is None:
            hit = _trace(fun, args, statics, in_tree, avals, name, n, out_axes)
            if not any(isinstance(c, Tracer) for c in hit[1]):
                traces[key] = hit
        jaxpr, consts, out_tree, out_mapped, out_pos = hit
        outs = pmap_p.bind(
            *consts, *leaves, jaxpr=jaxpr, axis_name=name, axis_size=n, devices=devs,
            in_mapped=(False,) * len(consts) + in_mapped, out_mapped=out_mapped,
            name=_name(fun), donated=(False,) * len(consts) + donated)
        outs = [moveaxis(o, 0, p) if p not in (None, 0) else o for o, p in zip(outs, out_pos)]
        return tree_util.tree_unflatten(out_tree, outs)

    return pmapped


def _in_axes(fun, in_axes, args, static_pos):
    """One in_axes entry per non-static positional argument."""
    if isinstance(in_axes, tuple):
        if len(in_axes) != len(args):
            raise user_error(ValueError, (
                f"pmap({_name(fun)}): in_axes has {len(in_axes)} entries but the function "
                f"was called with {len(args)} positional arguments; in_axes must be an int, "
                "None, or a tuple with one entry per positional argument"))
        return tuple(a for i, a in enumerate(in_axes) if i not in static_pos)
    if in_axes is not None and (type(in_axes) is not int):
        raise user_error(TypeError, f"pmap({_name(fun)}): in_axes must be an int, None or a "
                                    f"tuple, got {in_axes!r:.80}")
    return (in_axes,) * (len(args) - len(static_pos))


def _flatten(fun, axes, dyn, kwargs):
    """The leaves of (dyn, kwargs) as arrays with their mapped axes (None or >= 0)."""
    try:
        arg_dims = tree_util.broadcast_prefix_named(
            tuple(axes), tuple(dyn), _is_none, f"pmap({_name(fun)})", "in_axes",
            "the arguments")
    except ValueError as err:
        raise user_error(ValueError, f"{err}; in_axes must be a tree prefix of the "
                                     "arguments") from None
    path_leaves, in_tree = tree_util.tree_flatten_with_path((tuple(dyn), kwargs))
    dims = arg_dims + [0] * (len(path_leaves) - len(arg_dims))
    leaves, out_dims = [], []
    for (path, x), d in zip(path_leaves, dims):
        try:
            x = asarray(x)
        except TypeError:
            raise user_error(TypeError, f"pmap({_name(fun)}): the argument at "
                                        f"{tree_util.keystr(path)} is a {type(x).__name__}, "
                                        "not an array (pass it through "
                                        "static_broadcasted_argnums)") from None
        if d is not None:
            ndim = aval_of(x).ndim
            if not -ndim <= d < ndim:
                raise user_error(ValueError, (
                    f"pmap({_name(fun)}) was asked to map the argument at "
                    f"{tree_util.keystr(path)} of type {aval_of(x).str_short()} along axis "
                    f"{d}, which it does not have"))
            d %= ndim
        leaves.append(x)
        out_dims.append(d)
    return leaves, out_dims, in_tree


def _devices(fun, leaves, dims, devices, axis_size):
    """(n, the n devices): the size of the mapped axes, checked against the devices."""
    sizes = {aval_of(x).shape[d] for x, d in zip(leaves, dims) if d is not None}
    if len(sizes) > 1:
        shapes = [aval_of(x).str_short() for x, d in zip(leaves, dims) if d is not None]
        raise user_error(ValueError, f"pmap({_name(fun)}): the mapped axes have different "
                                     f"sizes {sorted(sizes)} (arguments {shapes})")
    if sizes:
        n = sizes.pop()
        if axis_size is not None and axis_size != n:
            raise user_error(ValueError, f"pmap({_name(fun)}): the mapped axis has size {n} "
                                         f"but axis_size is {axis_size}")
    elif axis_size is not None:
        n = axis_size
    elif devices is not None:
        n = len(devices)
    else:
        raise user_error(ValueError, f"pmap({_name(fun)}): no argument is mapped; pass "
                                     "axis_size (or devices) to say how many replicas to run")
    if devices is not None:
        if n != len(devices):
            raise user_error(ValueError, (
                f"pmap({_name(fun)}): the mapped axis has size {n} but pmap runs on "
                f"{len(devices)} devices {list(devices)}: the size of the mapped axis must "
                "be the number of devices"))
        return n, devices
    available = get_backend().devices()
    if n > len(available) or n < 1:
        raise user_error(ValueError, (
            f"pmap({_name(fun)}): the mapped axis has size {n}, which needs {n} devices, but "
            f"there are {len(available)} ({list(available)}); ask for more virtual CPU "
            f"devices with mt.config.update('num_cpu_devices', {max(n, 1)}) or "
            "MYTORCH_NUM_CPU_DEVICES"))
    return n, tuple(available[:n])


def _trace(fun, args, statics, in_tree, avals, axis_name, n, out_axes):
    """Trace one replica of `fun`: (jaxpr, consts, out_tree, out_mapped, out positions)."""
    store = {}
    fname = _name(fun)
    static_pos = {i for i, _ in statics}

    def flat(*xs):
        dyn, kw = tree_util.tree_unflatten(in_tree, xs)
        it, full = iter(dyn), []
        for i in range(len(args)):
            full.append(dict(statics)[i] if i in static_pos else next(it))
        out = fun(*full, **kw)
        out_leaves, store["tree"] = tree_util.tree_flatten(out)
        try:
            return [asarray(x) for x in out_leaves]
        except TypeError:
            raise user_error(TypeError, f"pmap({fname}): outputs must be arrays or scalars, "
                                        f"got {out!r:.80}") from None

    with new_trace(lambda parent: _PmapTrace(parent, f"pmap({fname})", axis_name, n)) as t:
        tracers = [t.new_arg(a) for a in avals]
        outs = flat(*tracers)
        closed = t.to_jaxpr(tracers, outs, debug_name=fname)
    j = closed.jaxpr
    jaxpr = Jaxpr([], [*j.constvars, *j.invars], j.eqns, j.outvars, fname)
    out_tree = store["tree"]
    skeleton = tree_util.tree_unflatten(out_tree, [0] * out_tree.num_leaves)
    try:
        axes = tree_util.broadcast_prefix_named(out_axes, skeleton, _is_none,
                                                f"pmap({fname})", "out_axes", "the output")
    except ValueError as err:
        raise user_error(ValueError, f"{err}; out_axes must be a tree prefix of the "
                                     "output") from None
    positions = []
    for v, ax in zip(j.outvars, axes):
        if ax is None:
            positions.append(None)
            continue
        ndim = v.aval.ndim + 1
        if type(ax) is not int or not -ndim <= ax < ndim:
            raise user_error(ValueError, f"pmap({fname}): out_axes={ax!r} is out of range "
                                         f"for an output of {ndim} dimensions with the "
                                         "device axis")
        positions.append(ax % ndim)
    out_mapped = tuple(p is not None for p in positions)
    return jaxpr, closed.consts, out_tree, out_mapped, positions
