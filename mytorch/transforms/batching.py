"""Vectorisation: the batching interpreter behind `vmap`.

A `BatchTracer` carries a value of the parent trace together with the position of its
batch dimension. Values without a batch dimension are never wrapped: to a batch trace,
anything that is not its own tracer is an unbatched constant. Each primitive runs its
"batching" rule with the parent trace current:

    rule(axis, args, dims, **params) -> (out, out_dim)      # lists for several results

`axis` is the `BatchAxis` (size and optional name) being vectorised; `dims[i]` is the
batch dimension of `args[i]` or `not_mapped` (None). A rule is only called when some
operand is batched, except for collectives over this trace's axis name, whose rules are
called even when nothing is batched (`axis_index`, `psum(1, name)`). Primitives whose
operands are all unbatched are bound on the parent unchanged, so unbatched work stays
unbatched.
"""

from collections import namedtuple

from mytorch.core.aval import ShapedArray
from mytorch.core.jaxpr import eval_jaxpr
from mytorch.core.trace import Trace, Tracer, aval_of, is_differentiated, is_known, \
    known_value, leaked_tracer_error, new_trace, set_current_trace
from mytorch.transforms.closure import trace_closed_over

not_mapped = None


class BatchAxis(namedtuple("BatchAxis", ["size", "name"])):
    """The axis being vectorised: its size and (optional) name for collectives."""

    __slots__ = ()


class BatchTracer(Tracer):
    """A value with a batch dimension: `val` (of the parent trace) and `bdim`."""

    __slots__ = ("val", "bdim", "_aval")

    def __init__(self, trace, val, bdim):
        self._trace = trace
        self.val = val
        self.bdim = bdim
        self._aval = None

    @property
    def aval(self):
        if self._aval is None:  # computed once: rules and wrappers ask for it often
            a = aval_of(self.val)
            shape = a.shape[:self.bdim] + a.shape[self.bdim + 1:]
            self._aval = ShapedArray(shape, a.dtype, a.weak_type)
        return self._aval

    def known_value(self):
        return known_value(self.val)  # the whole batch

    def is_known(self):
        return is_known(self.val)

    def is_differentiated(self):
        return is_differentiated(self.val)


class BatchTrace(Trace):
    """The trace of one `vmap`: every tracer has a batch dimension of size `axis.size`."""

    __slots__ = ("axis",)

    def __init__(self, parent, name, axis):
        super().__init__(parent, name)
        self.axis = axis

    @property
    def axis_name(self):
        return self.axis.name

    @property
    def axis_size(self):
        return self.axis.size

    def to_val_dim(self, x):
        if isinstance(x, BatchTracer) and x._trace is self:
            return x.val, x.bdim
        if isinstance(x, Tracer) and not x._trace.alive:
            raise leaked_tracer_error(x)
        return x, not_mapped

    def process_primitive(self, prim, args, params):
        vals, dims = [], []
        for x in args:
            v, d = self.to_val_dim(x)
            vals.append(v)
            dims.append(d)
        named = (prim.kind == "collective" and self.axis.name is not None
                 and self.axis.name in params["axis_name"])
        with set_current_trace(self.parent):
            if not named and all(d is not_mapped for d in dims):
                out = prim.bind(*vals, **params)
                return list(out) if prim.multiple_results else [out]
            out, out_dim = prim.rule("batching", "vmap")(self.axis, vals, dims, **params)
        if not prim.multiple_results:
            out, out_dim = [out], [out_dim]
        if CHECK_RULES:
            _check_rule(prim, self.axis, vals, dims, params, out, out_dim)
        return [self.wrap(v, d) for v, d in zip(out, out_dim, strict=True)]

    def wrap(self, val, dim):
        """A tracer for `val` batched along `dim`, or `val` itself when not mapped."""
        if dim is not_mapped:
            return val
        return BatchTracer(self, val, dim)


# The test suite turns this on: every batching rule's results are checked against the
# primitive's abstract evaluation on the unbatched operands.
CHECK_RULES = False


def unbatched_aval(x, dim):
    """The abstract value of one example of `x` (batched along `dim`, or not at all)."""
    a = aval_of(x)
    if dim is not_mapped:
        return a
    return ShapedArray(a.shape[:dim] + a.shape[dim + 1:], a.dtype, a.weak_type)


def _check_rule(prim, axis, vals, dims, params, outs, out_dims):
    expected = prim.abstract_eval(*[unbatched_aval(v, d) for v, d in zip(vals, dims)],
                                  **params)
    for v, d, e in zip(outs, out_dims, expected, strict=True):
        a = aval_of(v)
        if d is not not_mapped and not (0 <= d < a.ndim and a.shape[d] == axis.size):
            raise AssertionError(
                f"batching rule of {prim.name} returned {a.str_short()} with batch "
                f"dimension {d}; the batch size is {axis.size}"
            )
        got = unbatched_aval(v, d)
        if got.shape != e.shape or got.dtype != e.dtype:
            raise AssertionError(
                f"batching rule of {prim.name} (dims {dims}) returned {a.str_short()} "
                f"batched at {d}; the unbatched result is {e.str_short()}"
            )


def batch_flat(fun, args, in_dims, axis, name="vmap"):
    """Run `fun(*args) -> list` with `args[i]` batched along `in_dims[i]` (or None).

    Returns (outputs, out_dims): each output with its batch dimension or None.
    """
    with new_trace(lambda parent: BatchTrace(parent, name, axis)) as trace:
        ins = [trace.wrap(a, d) for a, d in zip(args, in_dims, strict=True)]
        outs = fun(*ins)
        pairs = [trace.to_val_dim(x) for x in outs]
    return [v for v, _ in pairs], [d for _, d in pairs]


def batched_aval(aval, dim, size):
    """`aval` with a batch dimension of `size` inserted at `dim` (unchanged if None)."""
    if dim is not_mapped:
        return aval
    shape = aval.shape[:dim] + (size,) + aval.shape[dim:]
    return ShapedArray(shape, aval.dtype, aval.weak_type)


def batch_jaxpr(jaxpr, axis, in_dims, finish=None, name="vmap"):
    """Vectorise a constant-free `jaxpr` whose inputs are batched along `in_dims`.

    Returns (batched jaxpr, consts, out_dims): the new jaxpr takes `consts` (values it
    captured, e.g. tracers of enclosing transformations) followed by the batched inputs.
    `finish(outs, dims) -> (outs, dims)`, when given, runs on the outputs inside the
    traced function (e.g. to move every batch dimension to the front).
    """
    store = {}

    def fun(*args):
        outs, dims = batch_flat(lambda *xs: eval_jaxpr(jaxpr, [], *xs), list(args),
                                list(in_dims), axis, name)
        if finish is not None:
            outs, dims = finish(outs, dims)
        store["out_dims"] = list(dims)
        return outs

    avals = [batched_aval(v.aval, d, axis.size) for v, d in zip(jaxpr.invars, in_dims)]
    new_jaxpr, consts = trace_closed_over(fun, avals, name)
    return new_jaxpr, consts, store["out_dims"]


__all__ = ["BatchAxis", "BatchTrace", "BatchTracer", "batch_flat", "batch_jaxpr",
           "batched_aval", "not_mapped", "unbatched_aval"]
