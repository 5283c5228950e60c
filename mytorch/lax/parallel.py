"""Collective primitives over named axes (`jax.lax` names): psum, pmax, pmin, pmean,
all_gather, psum_scatter, all_to_all, ppermute, pshuffle, axis_index and axis_size.

A collective combines the values that the examples (or devices) of a named axis hold. The
axis is named by an enclosing `vmap(f, axis_name='i')` (or pmap); under vmap each example
of the batch plays the part of one device:

    vmap(lambda x: lax.psum(x, 'i'), axis_name='i')(f32[4,3]) -> f32[4,3], every row the sum
    vmap(lambda x: lax.all_gather(x, 'i'), axis_name='i')(f32[4,3]) -> f32[4,4,3]
    vmap(lambda x: lax.axis_index('i'), axis_name='i', axis_size=4)() -> [0, 1, 2, 3]

Every primitive has an `axis_name` parameter: a tuple of names (one name for all but
psum/pmax/pmin, whose binders accept several and axis_index, which combines one-name binds).
Parameters that need an axis size at trace time (all_gather's result shape, all_to_all's
chunks, psum_scatter's, ppermute's range check) carry it as `axis_size`, read by the binder
from the enclosing named axes. The binders take pytrees and map over their leaves.

The rules (JVP, transpose, batching) live in parallel_rules.py; vmap runs a collective's
batching rule whenever the collective names the vmap's axis.
"""

import math

import numpy as np

from mytorch.core import dtypes, tree_util
from mytorch.core.aval import ShapedArray
from mytorch.core.primitive import Primitive
from mytorch.core.source_info import user_frame
from mytorch.core.trace import bound_axes
from mytorch.lax._utils import asarray, short, weak_scalar
from mytorch.lax.elementwise import add, convert_element_type, div, mul
from mytorch.lax.structural import expand_dims, reshape

__all__ = [
    "all_gather", "all_gather_p", "all_to_all", "all_to_all_p", "axis_index", "axis_index_p",
    "axis_size", "pmax", "pmax_p", "pmean", "pmin", "pmin_p", "ppermute", "ppermute_p",
    "pshuffle", "psum", "psum_p", "psum_scatter", "psum_scatter_p",
]


# ---- axis names ----------------------------------------------------------------------------
def _located(cls, msg):
    """An error of `cls` whose message ends with the user's source line."""
    info = user_frame()
    if info is not None:
        msg += f"\n  at {info.filename}:{info.lineno} in {info.function}"
    err = cls(msg)
    err._mytorch_located = True
    return err


def _names(op, axis_name):
    """`axis_name` (a name or a tuple/list of names) as a tuple of distinct names."""
    names = tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)
    for n in names:
        try:
            hash(n)
        except TypeError:
            raise _located(TypeError, f"{op}: axis names must be hashable (e.g. strings), "
                                      f"got {type(n).__name__} {n!r:.40}") from None
        if n is None:
            raise _located(TypeError, f"{op}: None is not an axis name")
    if len(set(names)) != len(names):
        raise _located(ValueError, f"{op}: axis_name {names!r} names an axis more than once")
    return names


def _bound(op, axis_name):
    """The names of `axis_name` with their sizes {name: size}; NameError for a name that no
    enclosing vmap/pmap binds."""
    names = _names(op, axis_name)
    axes = bound_axes()
    for n in names:
        if n not in axes:
            raise _located(
                NameError,
                f"{op}: unbound axis name {n!r}; the named axes here are {list(axes)!r} — "
                f"collectives need an enclosing vmap(..., axis_name={n!r}) or pmap")
    return names, {n: axes[n] for n in names}


def _one_name(op, axis_name):
    """The single name of `axis_name` (a name or a 1-tuple) and its size."""
    names, sizes = _bound(op, axis_name)
    if len(names) != 1:
        raise _located(ValueError, f"{op} takes one axis name, got axis_name={names!r}")
    return names, sizes[names[0]]


def _check_names(op, axis_name, count=None):
    """Abstract-eval check of the `axis_name` parameter: a non-empty tuple of names."""
    if not isinstance(axis_name, tuple) or not axis_name:
        raise TypeError(f"{op}: the axis_name parameter must be a non-empty tuple of names, "
                        f"got {axis_name!r}")
    if count is not None and len(axis_name) != count:
        raise ValueError(f"{op}: the axis_name parameter must hold {count} name, got "
                         f"{axis_name!r}")


def _check_size(op, axis_size, positive=False):
    if type(axis_size) is not int or axis_size < (1 if positive else 0):
        kind = "positive" if positive else "non-negative"
        raise ValueError(f"{op}: axis_size must be a {kind} int, got {axis_size!r}")


def _check_axis(op, what, axis, bound, aval):
    if type(axis) is not int or not 0 <= axis < bound:
        raise ValueError(f"{op}: {what} {axis!r} is out of range for {short(aval)}: it must "
                         f"be in [0, {bound})")


def _normalize(op, what, axis, bound):
    """A binder's axis in [-bound, bound) as a non-negative int."""
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, (bool, np.bool_)):
        raise _located(TypeError, f"{op}: {what} must be an int, got {axis!r}")
    axis = int(axis)
    if not -bound <= axis < bound:
        raise _located(ValueError, f"{op}: {what} {axis} is out of range: it must be in "
                                   f"[{-bound}, {bound})")
    return axis % bound


def _map(fn, x):
    return tree_util.tree_map(lambda v: fn(asarray(v)), x)


def _bind(prim, *args, **params):
    """Bind `prim` after checking its parameters, so that bad ones are reported by the
    collective itself whichever transformation then handles it."""
    prim.abstract_eval(*[a.aval for a in args], **params)
    return prim.bind(*args, **params)


# ---- psum, pmax, pmin ----------------------------------------------------------------------
def _reducer(name):
    prim = Primitive(name, kind="collective")

    @prim.def_abstract_eval
    def _abstract_eval(x, *, axis_name):
        _check_names(name, axis_name)
        if not (dtypes.is_int(x.dtype) or dtypes.is_inexact(x.dtype)):
            raise TypeError(f"{name} needs integer, floating-point or complex operands, got "
                            f"{short(x)}; convert bools first, e.g. "
                            "lax.convert_element_type(x, np.int32)")
        return ShapedArray(x.shape, x.dtype, x.weak_type)

    return prim


psum_p = _reducer("psum")
pmax_p = _reducer("pmax")
pmin_p = _reducer("pmin")


def _reduce_over(op, prim, x, axis_name):
    names, _ = _bound(op, axis_name)
    if not names:
        return tree_util.tree_map(asarray, x)
    return _map(lambda v: _bind(prim, v, axis_name=names), x)


def psum(x, axis_name):
    """The sum of `x` over the examples (devices) of the named axis or axes.

    Args:
      x: an array or a pytree of arrays (integer or floating-point).
      axis_name: a name bound by an enclosing vmap/pmap, or a tuple of such names (the sum
        runs over all of them).

    Returns:
      `x`'s structure, shapes and dtypes: every example gets the same sum.

    Raises:
      NameError: a name that no enclosing vmap/pmap binds.

    >>> import mytorch as mt, mytorch.numpy as mnp
    >>> from mytorch import lax
    >>> mt.vmap(lambda x: lax.psum(x, 'i'), axis_name='i')(mnp.arange(3.0))
    Array([3., 3., 3.], dtype=float32)
    """
    return _reduce_over("psum", psum_p, x, axis_name)


def pmax(x, axis_name):
    """The elementwise maximum of `x` over the named axis or axes (see `psum`)."""
    return _reduce_over("pmax", pmax_p, x, axis_name)


def pmin(x, axis_name):
    """The elementwise minimum of `x` over the named axis or axes (see `psum`)."""
    return _reduce_over("pmin", pmin_p, x, axis_name)


def pmean(x, axis_name):
    """The mean of `x` over the named axis or axes: psum(x) / (product of their sizes).

    Integer and bool operands are converted to the default float dtype first, as a mean
    is not an integer. Arguments and errors as for `psum`.
    """
    names, sizes = _bound("pmean", axis_name)
    n = math.prod(sizes.values())

    def mean(v):
        if not dtypes.is_inexact(v.dtype):
            v = convert_element_type(v, dtypes.default_float())
        if not names:
            return v
        return div(_bind(psum_p, v, axis_name=names), weak_scalar(n, v.dtype))

    return _map(mean, x)


# ---- axis_index ----------------------------------------------------------------------------
axis_index_p = Primitive("axis_index", kind="collective")


@axis_index_p.def_abstract_eval
def _axis_index_abstract_eval(*, axis_name):
    _check_names("axis_index", axis_name, 1)
    return ShapedArray((), np.dtype(np.int32))


def axis_index(axis_name):
    """The position (int32) of this example (device) along the named axis.

    With a tuple of names, the position in their row-major product (the first name the
    slowest), e.g. for ('i', 'j'): axis_index('i') * size_j + axis_index('j').

    >>> import mytorch as mt
    >>> from mytorch import lax
    >>> mt.vmap(lambda: lax.axis_index('i'), axis_name='i', axis_size=3)()
    Array([0, 1, 2], dtype=int32)
    """
    names, sizes = _bound("axis_index", axis_name)
    if not names:
        raise _located(ValueError, "axis_index needs at least one axis name")
    index = None
    for n in names:
        i = axis_index_p.bind(axis_name=(n,))
        index = i if index is None else add(mul(index, weak_scalar(sizes[n], np.int32)), i)
    return index


# ---- all_gather, psum_scatter --------------------------------------------------------------
all_gather_p = Primitive("all_gather", kind="collective")


@all_gather_p.def_abstract_eval
def _all_gather_abstract_eval(x, *, axis_name, axis, tiled, axis_size):
    _check_names("all_gather", axis_name, 1)
    _check_size("all_gather", axis_size)
    shape = x.shape
    if tiled:
        if x.ndim == 0:
            raise ValueError("all_gather with tiled=True needs an operand of rank >= 1 (it "
                             f"concatenates along an existing axis), got {short(x)}")
        _check_axis("all_gather", "axis", axis, x.ndim, x)
        out = (*shape[:axis], shape[axis] * axis_size, *shape[axis + 1:])
    else:
        _check_axis("all_gather", "axis", axis, x.ndim + 1, x)
        out = (*shape[:axis], axis_size, *shape[axis:])
    return ShapedArray(out, x.dtype, x.weak_type)


def all_gather(x, axis_name, *, axis=0, tiled=False):
    """Every example (device) gets the values of all of them, stacked along `axis`.

    Args:
      x: an array or a pytree of arrays.
      axis_name: a bound axis name, or a tuple of them (gathered in row-major order).
      axis: where the gathered axis goes in the result (untiled: a new axis, in
        [-(ndim + 1), ndim]); with `tiled`, the existing axis along which the values are
        concatenated.
      tiled: concatenate instead of stacking.

    Returns:
      For x of shape s and an axis of size n: s with n inserted at `axis`, or (tiled)
      s with s[axis] multiplied by n. Entry k along the gathered axis is example k's x.

    >>> import mytorch as mt, mytorch.numpy as mnp
    >>> from mytorch import lax
    >>> mt.vmap(lambda x: lax.all_gather(x, 'i'), axis_name='i')(mnp.arange(2.0))
    Array([[0., 1.],
           [0., 1.]], dtype=float32)
    """
    names, sizes = _bound("all_gather", axis_name)
    if not names:
        raise _located(ValueError, "all_gather needs at least one axis name")
    tiled = bool(tiled)

    def gather(v):
        a = _normalize("all_gather", "axis", axis, v.ndim + (0 if tiled else 1))
        # the last name first: each further (outer) name concatenates whole blocks
        for k, n in enumerate(reversed(names)):
            v = _bind(all_gather_p, v, axis_name=(n,), axis=a, tiled=tiled or k > 0,
                      axis_size=sizes[n])
        return v

    return _map(gather, x)


psum_scatter_p = Primitive("psum_scatter", kind="collective")


@psum_scatter_p.def_abstract_eval
def _psum_scatter_abstract_eval(x, *, axis_name, scatter_dimension, tiled, axis_size):
    op = "psum_scatter"
    _check_names(op, axis_name, 1)
    _check_size(op, axis_size, positive=tiled)
    if not (dtypes.is_int(x.dtype) or dtypes.is_inexact(x.dtype)):
        raise TypeError(f"{op} needs integer, floating-point or complex operands, got "
                        f"{short(x)}")
    if x.ndim == 0:
        raise ValueError(f"{op} needs an operand of rank >= 1, got {short(x)}")
    _check_axis(op, "scatter_dimension", scatter_dimension, x.ndim, x)
    size = x.shape[scatter_dimension]
    shape = list(x.shape)
    if tiled:
        if size % axis_size:
            raise ValueError(f"{op}: with tiled=True the scatter dimension "
                             f"{scatter_dimension} of {short(x)} (size {size}) must be "
                             f"divisible by the axis size {axis_size}")
        shape[scatter_dimension] = size // axis_size
    else:
        if size != axis_size:
            raise ValueError(f"{op}: the scatter dimension {scatter_dimension} of {short(x)} "
                             f"has size {size}; it must equal the axis size {axis_size} "
                             "(or pass tiled=True to split it into equal blocks)")
        del shape[scatter_dimension]
    return ShapedArray(tuple(shape), x.dtype, x.weak_type)


def psum_scatter(x, axis_name, *, scatter_dimension=0, tiled=False):
    """The sum over the named axis, scattered: example k gets block k of psum(x).

    Args:
      x: an array or pytree of arrays (integer or floating-point).
      axis_name: one bound axis name.
      scatter_dimension: the axis of x that is split among the examples; its size must be
        the axis size n (untiled: the axis is then dropped) or a multiple of n (tiled: each
        example gets a block of size x.shape[scatter_dimension] // n).
      tiled: see above.

    Returns:
      Example k's block of the sum; psum_scatter is the transpose of all_gather.
    """
    names, size = _one_name("psum_scatter", axis_name)
    tiled = bool(tiled)

    def scatter(v):
        d = _normalize("psum_scatter", "scatter_dimension", scatter_dimension, max(v.ndim, 1))
        return _bind(psum_scatter_p, v, axis_name=names, scatter_dimension=d, tiled=tiled,
                     axis_size=size)

    return _map(scatter, x)


# ---- all_to_all ----------------------------------------------------------------------------
all_to_all_p = Primitive("all_to_all", kind="collective")


@all_to_all_p.def_abstract_eval
def _all_to_all_abstract_eval(x, *, axis_name, split_axis, concat_axis, axis_size):
    op = "all_to_all"
    _check_names(op, axis_name, 1)
    _check_size(op, axis_size, positive=True)
    if x.ndim == 0:
        raise ValueError(f"{op} needs an operand of rank >= 1, got {short(x)}")
    _check_axis(op, "split_axis", split_axis, x.ndim, x)
    _check_axis(op, "concat_axis", concat_axis, x.ndim, x)
    size = x.shape[split_axis]
    if size % axis_size:
        raise ValueError(f"{op}: split_axis {split_axis} of {short(x)} has size {size}, "
                         f"which is not divisible by the axis size {axis_size}")
    shape = list(x.shape)
    shape[split_axis] //= axis_size
    shape[concat_axis] *= axis_size
    return ShapedArray(tuple(shape), x.dtype, x.weak_type)


def all_to_all(x, axis_name, split_axis, concat_axis, *, tiled=False):
    """Each example splits x into n blocks along `split_axis` and sends block k to example
    k; what example k receives from examples 0..n-1 is joined along `concat_axis`.

    Args:
      x: an array or pytree of arrays of rank >= 1.
      axis_name: one bound axis name (of size n).
      split_axis: untiled: an axis of size n, which the result drops; tiled: an axis whose
        size is a multiple of n, divided by n in the result.
      concat_axis: untiled: where the result's new axis of size n (indexed by the sending
        example) goes, counted in the result's axes; tiled: the axis multiplied by n.
      tiled: see above.

    Returns:
      An array of x's rank and dtype.

    Raises:
      ValueError: the split axis does not fit the axis size.
    """
    names, size = _one_name("all_to_all", axis_name)
    if size == 0:
        raise _located(ValueError, "all_to_all needs a named axis of size >= 1, got 0")

    def exchange(v):
        split = _normalize("all_to_all", "split_axis", split_axis, max(v.ndim, 1))
        concat = _normalize("all_to_all", "concat_axis", concat_axis, max(v.ndim, 1))
        if tiled:
            return _bind(all_to_all_p, v, axis_name=names, split_axis=split,
                         concat_axis=concat, axis_size=size)
        if v.ndim == 0 or v.shape[split] != size:
            raise _located(ValueError, f"all_to_all: with tiled=False the split axis {split} "
                           f"of {short(v.aval)} must have the size of axis {names[0]!r}, "
                           f"{size}")
        if split == concat:
            return _bind(all_to_all_p, v, axis_name=names, split_axis=split,
                         concat_axis=concat, axis_size=size)
        # a size-1 axis at the concat position (past the split axis, which will be
        # dropped) receives the n blocks; the split axis shrinks to size 1 and is dropped
        c = concat + 1 if split < concat else concat
        s = split if split < concat else split + 1
        out = _bind(all_to_all_p, expand_dims(v, (c,)), axis_name=names, split_axis=s,
                    concat_axis=c, axis_size=size)
        return reshape(out, tuple(d for i, d in enumerate(out.shape) if i != s))

    return _map(exchange, x)


# ---- ppermute ------------------------------------------------------------------------------
ppermute_p = Primitive("ppermute", kind="collective")


@ppermute_p.def_abstract_eval
def _ppermute_abstract_eval(x, *, axis_name, perm, axis_size):
    _check_names("ppermute", axis_name, 1)
    _check_size("ppermute", axis_size)
    _check_perm(perm, axis_size)
    return ShapedArray(x.shape, x.dtype, x.weak_type)


def _check_perm(perm, axis_size):
    """perm: a tuple of (source, destination) int pairs in [0, axis_size), each source and
    each destination appearing once."""
    if not isinstance(perm, tuple) or not all(
            isinstance(p, tuple) and len(p) == 2 and all(type(i) is int for i in p)
            for p in perm):
        raise TypeError(f"ppermute: perm must be a tuple of (source, destination) int pairs, "
                        f"got {perm!r:.80}")
    for p in perm:
        if not all(0 <= i < axis_size for i in p):
            raise ValueError(f"ppermute: the pair {p} of perm is out of range for an axis "
                             f"of size {axis_size}: indices must be in [0, {axis_size})")
    for what, k in (("source", 0), ("destination", 1)):
        seen = [p[k] for p in perm]
        dups = sorted({i for i in seen if seen.count(i) > 1})
        if dups:
            raise ValueError(f"ppermute: perm {perm} is not a permutation: {what} "
                             f"{dups[0]} appears more than once")


def _perm_tuple(perm):
    try:
        pairs = tuple(tuple(p) for p in perm)
    except TypeError:
        raise _located(TypeError, f"ppermute: perm must be a sequence of (source, "
                                  f"destination) pairs, got {perm!r:.80}") from None
    out = []
    for p in pairs:
        if len(p) != 2 or not all(isinstance(i, (int, np.integer))
                                  and not isinstance(i, (bool, np.bool_)) for i in p):
            raise _located(TypeError, f"ppermute: each entry of perm must be a (source, "
                                      f"destination) pair of ints, got {p!r:.60}")
        out.append((int(p[0]), int(p[1])))
    return tuple(out)


def ppermute(x, axis_name, perm):
    """Send values between examples (devices): for each (source, destination) pair of
    `perm`, example `destination` gets example `source`'s x; examples that are no
    destination get zeros.

    Args:
      x: an array or pytree of arrays.
      axis_name: one bound axis name.
      perm: pairs (source, destination) of positions along the axis; no source and no
        destination may appear twice.

    Returns:
      x's structure, shapes and dtypes.

    >>> import mytorch as mt, mytorch.numpy as mnp
    >>> from mytorch import lax
    >>> shift = lambda x: lax.ppermute(x, 'i', [(0, 1), (1, 2)])
    >>> mt.vmap(shift, axis_name='i')(mnp.array([1.0, 2.0, 3.0]))
    Array([0., 1., 2.], dtype=float32)
    """
    names, size = _one_name("ppermute", axis_name)
    pairs = _perm_tuple(perm)
    return _map(lambda v: _bind(ppermute_p, v, axis_name=names, perm=pairs, axis_size=size), x)


def pshuffle(x, axis_name, perm):
    """Example (device) i gets the x of example perm[i]: a ppermute whose pairs are
    (perm[i], i); `perm` must be a permutation of range(axis size).

    >>> import mytorch as mt, mytorch.numpy as mnp
    >>> from mytorch import lax
    >>> mt.vmap(lambda x: lax.pshuffle(x, 'i', [2, 0, 1]), axis_name='i')(mnp.arange(3.0))
    Array([2., 0., 1.], dtype=float32)
    """
    names, size = _one_name("pshuffle", axis_name)
    sources = [int(p) for p in perm]
    if sorted(sources) != list(range(size)):
        raise _located(ValueError, f"pshuffle: perm {list(perm)!r:.80} is not a permutation "
                                   f"of range({size}), the size of axis {names[0]!r}")
    return ppermute(x, axis_name, [(src, dst) for dst, src in enumerate(sources)])


def axis_size(axis_name):
    """The number of examples (devices) along the named axis (a Python int); for a tuple of
    names, the product of their sizes.

    >>> import mytorch as mt, mytorch.numpy as mnp
    >>> from mytorch import lax
    >>> mt.vmap(lambda x: x * lax.axis_size('i'), axis_name='i')(mnp.ones(3))
    Array([3., 3., 3.], dtype=float32)
    """
    _, sizes = _bound("axis_size", axis_name)
    return math.prod(sizes.values())
