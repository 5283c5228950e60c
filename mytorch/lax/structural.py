"""Structural primitives: broadcasting, reshaping, transposing, reversing, padding,
concatenation, static slicing and iota, with the binders built on them (`jax.lax` names).

    broadcast_in_dim(f32[3], shape=(2, 3), broadcast_dimensions=(1,)) -> f32[2,3]
    reshape(f32[2,3], new_sizes=(3, 2)) -> f32[3,2]
    pad(f32[3], 0.0, ((1, 2, 1),)) -> f32[8]
    slice(f32[10], (1,), (9,), (3,)) -> f32[3]

Structural primitives keep the operand's dtype and weak type (a concatenation or a pad is
weak only when all its operands are). Parameters are tuples of Python ints. The binders
accept any integer sequences, normalise negative axes where an axis is named (squeeze,
expand_dims, concatenate, rev, the *_in_dim helpers), and, like JAX, return the operand
itself for binds that cannot change it (after validating them). `expand_dims`, `broadcast`
and `full` are binders over `broadcast_in_dim`, not primitives. NumPy kernels live in
mytorch/backends/numpy/structural.py.
"""

import operator

import numpy as np

from mytorch.core import dtypes
from mytorch.core.aval import ShapedArray
from mytorch.core.primitive import Primitive
from mytorch.core.source_info import user_error
from mytorch.lax._utils import asarray, coerce_operands, short
from mytorch.lax.elementwise import convert_element_type, convert_to_existing

__all__ = [
    "broadcast_in_dim", "broadcast", "broadcast_to_rank", "reshape", "squeeze", "expand_dims",
    "transpose", "rev", "pad", "concatenate", "slice", "slice_in_dim", "index_in_dim", "iota",
    "broadcasted_iota", "broadcast_shapes", "full", "full_like", "zeros_like_array",
    "broadcast_in_dim_p", "reshape_p", "squeeze_p", "transpose_p", "rev_p", "pad_p",
    "concatenate_p", "slice_p", "iota_p",
]


# ---- parameter helpers --------------------------------------------------------------------
def _is_int(x):
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def int_tuple(values, what, op):
    """A tuple of Python ints from an int or a sequence of ints; TypeError otherwise."""
    if _is_int(values):
        values = (values,)
    try:
        values = tuple(values)
    except TypeError:
        raise user_error(TypeError,
            f"{op}: {what} must be a sequence of ints, got {values!r}") from None
    if not all(_is_int(v) for v in values):
        raise user_error(TypeError, f"{op}: {what} must be a sequence of ints, got {values!r}")
    return tuple(operator.index(v) for v in values)


def normalize_axis(axis, ndim, op, what="axis", cls=ValueError):
    """`axis` in [-ndim, ndim) as a non-negative int; `cls` (JAX's class for `op`) otherwise."""
    if not _is_int(axis):
        raise user_error(TypeError, f"{op}: {what} must be an int, got {axis!r}")
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise user_error(cls,
            f"{op}: {what} {axis} is out of bounds for rank {ndim}: it must be "
            f"in [{-ndim}, {ndim})")
    return axis % ndim


def _check_params(op, what, values):
    """Abstract evals re-check params, since jaxprs can be built without the binders."""
    if not isinstance(values, tuple) or not all(type(v) is int for v in values):
        raise user_error(TypeError, f"{op}: {what} must be a tuple of Python ints, got {values!r}")
    return values


def _check_shape(op, shape, what="shape"):
    _check_params(op, what, shape)
    if any(d < 0 for d in shape):
        raise user_error(TypeError, f"{op}: {what} {shape} has a negative dimension")
    return shape


def _check_dims(op, what, dims, ndim, aval=None, cls=ValueError):
    """Distinct dims in [0, ndim); `cls` (JAX's class for `op`) otherwise."""
    _check_params(op, what, dims)
    for d in dims:
        if not 0 <= d < ndim:
            target = f"{short(aval)}" if aval is not None else f"rank {ndim}"
            raise user_error(cls,
                f"{op}: {what} {dims} are out of range for {target}: each must "
                f"be in [0, {ndim})")
    if len(set(dims)) != len(dims):
        raise user_error(cls, f"{op}: {what} {dims} name a dimension more than once")
    return dims


def _validated(prim, x, **params):
    """Run `prim`'s abstract evaluation for a bind that is skipped, so errors still show."""
    prim.abstract_eval(x.aval, **params)
    return x


# ---- broadcast_in_dim ---------------------------------------------------------------------
broadcast_in_dim_p = Primitive("broadcast_in_dim", kind="structural")
broadcast_in_dim_p.def_linear()


@broadcast_in_dim_p.def_abstract_eval
def _broadcast_in_dim_abstract_eval(x, *, shape, broadcast_dimensions):
    op, bd = "broadcast_in_dim", broadcast_dimensions
    _check_shape(op, shape)
    _check_params(op, "broadcast_dimensions", bd)
    if len(bd) != x.ndim:
        raise user_error(TypeError,
            f"{op}: broadcast_dimensions {bd} must name one target dim for each "
            f"of the {x.ndim} dims of {short(x)}")
    if any(not 0 <= d < len(shape) for d in bd):
        raise user_error(TypeError,
            f"{op}: broadcast_dimensions {bd} must be in [0, {len(shape)}) for "
            f"the target shape {shape}")
    if any(b <= a for a, b in zip(bd, bd[1:])):
        raise user_error(TypeError,
                         f"{op}: broadcast_dimensions {bd} must be strictly increasing")
    for i, d in enumerate(bd):
        if x.shape[i] not in (1, shape[d]):
            raise user_error(TypeError,
                f"{op} cannot broadcast {short(x)} to shape {shape} with broadcast_dimensions "
                f"{bd}: operand dim {i} has size {x.shape[i]} but target dim {d} has size "
                f"{shape[d]}; each operand dim must equal its target dim or be 1")
    return ShapedArray(shape, x.dtype, x.weak_type)


def broadcast_in_dim(operand, shape, broadcast_dimensions):
    """Broadcast `operand` to `shape`, operand dim i becoming dim `broadcast_dimensions[i]`.

    Args:
      operand: an array of rank r.
      shape: the target shape (rank >= r).
      broadcast_dimensions: r strictly increasing target dims; each operand dim must equal
        its target dim or be 1.

    Returns:
      An array of `shape`, `operand`'s dtype and weak type.

    >>> import numpy as np
    >>> from mytorch import lax
    >>> lax.broadcast_in_dim(lax.iota(np.int32, 3), (2, 3), (1,))
    Array([[0, 1, 2],
           [0, 1, 2]], dtype=int32)
    """
    x = asarray(operand)
    shape = int_tuple(shape, "shape", "broadcast_in_dim")
    bd = int_tuple(broadcast_dimensions, "broadcast_dimensions", "broadcast_in_dim")
    if shape == x.shape and bd == tuple(range(x.ndim)):
        return _validated(broadcast_in_dim_p, x, shape=shape, broadcast_dimensions=bd)
    return broadcast_in_dim_p.bind(x, shape=shape, broadcast_dimensions=bd)


def broadcast(operand, sizes):
    """Add leading dims of `sizes`: the result has shape `sizes + operand.shape`."""
    x = asarray(operand)
    sizes = int_tuple(sizes, "sizes", "broadcast")
    if not sizes:
        return x
    n = len(sizes)
    return broadcast_in_dim(x, sizes + x.shape, tuple(range(n, n + x.ndim)))


def broadcast_shapes(*shapes):
    """The shape NumPy's broadcasting gives `shapes` (tuples of ints, ranks promoted by
    leading 1s), e.g. (2, 1) and (3,) -> (2, 3); ValueError when two sizes differ and
    neither is 1."""
    shapes = [int_tuple(s, "shapes", "broadcast_shapes") for s in shapes]
    ndim = max((len(s) for s in shapes), default=0)
    padded = [(1,) * (ndim - len(s)) + s for s in shapes]
    out = []
    for sizes in zip(*padded):
        wide = {d for d in sizes if d != 1}
        if len(wide) > 1:
            listing = ", ".join(str(s) for s in shapes)
            raise user_error(ValueError,
                f"broadcast_shapes: incompatible shapes for broadcasting: {listing}")
        out.append(wide.pop() if wide else 1)
    return tuple(out)


def broadcast_to_rank(x, rank):
    """`x` with leading size-1 dims added up to `rank` (unchanged if its rank is `rank`)."""
    x = asarray(x)
    if x.ndim == rank:
        return x
    if x.ndim > rank:
        raise user_error(ValueError,
            f"broadcast_to_rank: {short(x.aval)} already has rank > {rank}")
    return broadcast(x, (1,) * (rank - x.ndim))


def expand_dims(array, dimensions):
    """Insert size-1 dims at `dimensions` (positions in the result; negative ones count from
    the end of the result), e.g. f32[3,4] with (0, -1) -> f32[1,3,4,1]."""
    x = asarray(array)
    dims = int_tuple(dimensions, "dimensions", "expand_dims")
    if not dims:
        return x
    ndim_out = x.ndim + len(dims)
    dims = [normalize_axis(d, ndim_out, "expand_dims", "dimension") for d in dims]
    if len(set(dims)) != len(dims):
        raise user_error(ValueError,
            f"expand_dims: dimensions {tuple(dimensions)} repeat a dimension")
    shape = list(x.shape)
    for d in sorted(dims):
        shape.insert(d, 1)
    keep = tuple(i for i in range(ndim_out) if i not in dims)
    return broadcast_in_dim(x, tuple(shape), keep)


# ---- reshape, squeeze ---------------------------------------------------------------------
reshape_p = Primitive("reshape", kind="structural")
reshape_p.def_linear()


@reshape_p.def_abstract_eval
def _reshape_abstract_eval(x, *, new_sizes, dimensions):
    _check_shape("reshape", new_sizes, "new_sizes")
    if dimensions is not None:
        _check_params("reshape", "dimensions", dimensions)
        if sorted(dimensions) != list(range(x.ndim)):
            raise user_error(TypeError,
                f"reshape: dimensions {dimensions} must be a permutation of "
                f"{tuple(range(x.ndim))} for {short(x)}")
    n = int(np.prod(new_sizes, dtype=np.int64))
    if n != x.size:
        raise user_error(TypeError,
            f"reshape cannot turn {short(x)} ({x.size} elements) into shape "
            f"{new_sizes} ({n} elements)")
    return ShapedArray(new_sizes, x.dtype, x.weak_type)


def reshape(operand, new_sizes, dimensions=None):
    """`operand` with shape `new_sizes` (same number of elements), read in row-major order
    after transposing by `dimensions` when given.

    Args:
      operand: an array.
      new_sizes: the new shape (non-negative ints; no -1).
      dimensions: None, or a permutation of the operand's dims: the order in which its
        elements are read (`reshape(transpose(x, dimensions), new_sizes)`).

    Returns:
      An array of shape `new_sizes`, `operand`'s dtype and weak type.

    Raises:
      TypeError: the sizes differ, e.g. "reshape cannot turn f32[2,3] (6 elements) into
        shape (4,) (4 elements)".
    """
    x = asarray(operand)
    new_sizes = int_tuple(new_sizes, "new_sizes", "reshape")
    if -1 in new_sizes:
        raise user_error(ValueError,
            f"reshape: new_sizes {new_sizes} contains -1; lax.reshape needs every "
            "size (mnp.reshape infers one)")
    dims = None if dimensions is None else int_tuple(dimensions, "dimensions", "reshape")
    if dims == tuple(range(x.ndim)):
        dims = None
    if new_sizes == x.shape and dims is None:
        return _validated(reshape_p, x, new_sizes=new_sizes, dimensions=None)
    return reshape_p.bind(x, new_sizes=new_sizes, dimensions=dims)


squeeze_p = Primitive("squeeze", kind="structural")
squeeze_p.def_linear()


@squeeze_p.def_abstract_eval
def _squeeze_abstract_eval(x, *, dimensions):
    _check_dims("squeeze", "dimensions", dimensions, x.ndim, x)
    bad = [d for d in dimensions if x.shape[d] != 1]
    if bad:
        raise user_error(ValueError,
            f"squeeze can only remove dims of size 1, but {short(x)} has size "
            f"{x.shape[bad[0]]} at dimension {bad[0]} (dimensions={dimensions})")
    return ShapedArray(tuple(d for i, d in enumerate(x.shape) if i not in dimensions),
                       x.dtype, x.weak_type)


def squeeze(array, dimensions):
    """Remove the size-1 `dimensions` (negative ones count from the end).

    >>> from mytorch import lax
    >>> lax.squeeze(lax.full((1, 3, 1), 2.0), (0, -1))
    Array([2., 2., 2.], dtype=float32, weak_type=True)
    """
    x = asarray(array)
    dims = int_tuple(dimensions, "dimensions", "squeeze")
    dims = tuple(sorted(normalize_axis(d, x.ndim, "squeeze", "dimension") for d in dims))
    if not dims:
        return x
    return squeeze_p.bind(x, dimensions=dims)


# ---- transpose, rev -----------------------------------------------------------------------
transpose_p = Primitive("transpose", kind="structural")
transpose_p.def_linear()


@transpose_p.def_abstract_eval
def _transpose_abstract_eval(x, *, permutation):
    _check_params("transpose", "permutation", permutation)
    if sorted(permutation) != list(range(x.ndim)):
        raise user_error(TypeError,
            f"transpose: permutation {permutation} is not a permutation of "
            f"{tuple(range(x.ndim))} for {short(x)}")
    return ShapedArray(tuple(x.shape[p] for p in permutation), x.dtype, x.weak_type)


def transpose(operand, permutation):
    """Permute the dims: result dim i is operand dim `permutation[i]` (like np.transpose)."""
    x = asarray(operand)
    perm = int_tuple(permutation, "permutation", "transpose")
    if perm == tuple(range(x.ndim)):
        return _validated(transpose_p, x, permutation=perm)
    return transpose_p.bind(x, permutation=perm)


rev_p = Primitive("rev", kind="structural")
rev_p.def_linear()


@rev_p.def_abstract_eval
def _rev_abstract_eval(x, *, dimensions):
    _check_dims("rev", "dimensions", dimensions, x.ndim, x, cls=TypeError)
    return x


def rev(operand, dimensions):
    """Reverse `operand` along `dimensions` (distinct; negative ones count from the end)."""
    x = asarray(operand)
    dims = int_tuple(dimensions, "dimensions", "rev")
    dims = tuple(normalize_axis(d, x.ndim, "rev", "dimension", TypeError) for d in dims)
    return rev_p.bind(x, dimensions=dims)


# ---- pad ----------------------------------------------------------------------------------
pad_p = Primitive("pad", kind="structural")
pad_p.def_linear()  # jointly linear in (operand, padding_value)


def _padded_size(n, lo, hi, interior):
    return lo + hi + n + max(n - 1, 0) * interior


@pad_p.def_abstract_eval
def _pad_abstract_eval(x, padding_value, *, padding_config):
    if padding_value.ndim != 0:
        raise user_error(TypeError, f"pad needs a 0-d padding_value, got {short(padding_value)}")
    if padding_value.dtype != x.dtype:
        raise user_error(TypeError, f"pad needs padding_value of the operand's dtype: operand "
                                    f"{short(x)}, padding_value {short(padding_value)}")
    if not isinstance(padding_config, tuple) or len(padding_config) != x.ndim or any(
            not isinstance(c, tuple) or len(c) != 3 or any(type(v) is not int for v in c)
            for c in padding_config):
        raise user_error(ValueError,
            f"pad: padding_config must hold one (low, high, interior) triple of "
            f"ints per dim of {short(x)}, got {padding_config!r}")
    shape = []
    for i, ((lo, hi, interior), n) in enumerate(zip(padding_config, x.shape, strict=True)):
        if interior < 0:
            raise user_error(ValueError,
                f"pad: interior padding must be >= 0, got {interior} for dim {i}")
        size = _padded_size(n, lo, hi, interior)
        if size < 0:
            raise user_error(ValueError,
                f"pad: padding_config {padding_config[i]} for dim {i} (size {n}) "
                f"gives a negative size {size}")
        shape.append(size)
    return ShapedArray(tuple(shape), x.dtype, x.weak_type and padding_value.weak_type)


def pad(operand, padding_value, padding_config):
    """Pad `operand` with `padding_value`, XLA style.

    Args:
      operand: an array of rank r.
      padding_value: a 0-d array of the operand's dtype, or a Python scalar.
      padding_config: r triples (low, high, interior): `interior` values go between
        neighbouring elements, then `low`/`high` at the ends; negative low/high crop.

    Returns:
      An array of dim sizes `low + high + n + max(n - 1, 0) * interior`.

    >>> import numpy as np
    >>> from mytorch import lax
    >>> lax.pad(lax.iota(np.float32, 3), 9.0, ((1, 2, 1),))
    Array([9., 0., 9., 1., 9., 2., 9., 9.], dtype=float32)
    """
    x, v = coerce_operands("pad", operand, padding_value)
    try:
        config = tuple(tuple(operator.index(c) for c in triple) for triple in padding_config)
    except TypeError:
        raise user_error(TypeError,
            f"pad: padding_config must be a sequence of (low, high, interior) "
            f"triples, got {padding_config!r}") from None
    return pad_p.bind(x, v, padding_config=config)


# ---- concatenate --------------------------------------------------------------------------
concatenate_p = Primitive("concatenate", kind="structural")
concatenate_p.def_linear()


class _Listing:
    """The operands' short descriptions, joined by commas when formatted."""

    def __init__(self, xs):
        self.xs = xs

    def __str__(self):
        return ", ".join(short(x) for x in self.xs)

    __format__ = lambda self, spec: format(str(self), spec)  # noqa: E731


@concatenate_p.def_abstract_eval
def _concatenate_abstract_eval(*xs, dimension):
    if not xs:
        raise user_error(ValueError, "concatenate needs at least one operand")
    listing = _Listing(xs)  # formatted only when a message needs it
    if any(x.dtype != xs[0].dtype for x in xs):
        raise user_error(TypeError,
            f"concatenate needs operands of one dtype, got {listing}. Convert "
            "with lax.convert_element_type, or use mnp.concatenate, which promotes")
    if any(x.ndim != xs[0].ndim for x in xs):
        raise user_error(TypeError, f"concatenate needs operands of one rank, got {listing}")
    ndim = xs[0].ndim
    if ndim == 0:
        raise user_error(TypeError,
            f"concatenate cannot join 0-d operands ({listing}); reshape them to "
            "shape (1,) first")
    if type(dimension) is not int or not 0 <= dimension < ndim:
        raise user_error(TypeError,
            f"concatenate: dimension {dimension!r} is out of range for rank "
            f"{ndim}: it must be in [0, {ndim})")
    rest = [x.shape[:dimension] + x.shape[dimension + 1:] for x in xs]
    if any(r != rest[0] for r in rest):
        raise user_error(TypeError,
            f"concatenate along dimension {dimension} needs operands whose other "
            f"dims are equal, got {listing}")
    shape = list(xs[0].shape)
    shape[dimension] = sum(x.shape[dimension] for x in xs)
    return ShapedArray(tuple(shape), xs[0].dtype, all(x.weak_type for x in xs))


def concatenate(operands, dimension):
    """Join `operands` (one dtype and rank, equal except along `dimension`) along
    `dimension` (negative counts from the end). One operand is returned as it is."""
    xs = [asarray(x) for x in operands]
    if not xs:
        raise user_error(ValueError, "concatenate needs a non-empty sequence of arrays")
    if not _is_int(dimension):
        raise user_error(TypeError, f"concatenate: dimension must be an int, got {dimension!r}")
    ndim = xs[0].ndim
    dim = operator.index(dimension)
    dim = dim + ndim if -ndim <= dim < 0 else dim
    if len(xs) == 1:
        return _validated(concatenate_p, xs[0], dimension=dim)
    return concatenate_p.bind(*xs, dimension=dim)


# ---- slice --------------------------------------------------------------------------------
slice_p = Primitive("slice", kind="structural")
slice_p.def_linear()


@slice_p.def_abstract_eval
def _slice_abstract_eval(x, *, start_indices, limit_indices, strides):
    op = "slice"
    _check_params(op, "start_indices", start_indices)
    _check_params(op, "limit_indices", limit_indices)
    strides = (1,) * x.ndim if strides is None else _check_params(op, "strides", strides)
    if not len(start_indices) == len(limit_indices) == len(strides) == x.ndim:
        raise user_error(TypeError,
                         f"slice: start_indices {start_indices}, limit_indices {limit_indices} "
                         f"and strides {strides} must each have one entry per dim of {short(x)}")
    shape = []
    for i, (s, lim, st, n) in enumerate(zip(start_indices, limit_indices, strides, x.shape,
                                            strict=True)):
        if not 0 <= s <= lim <= n:
            raise user_error(TypeError, f"slice: dim {i} needs 0 <= start <= limit <= {n} for "
                                        f"{short(x)}, got start {s} and limit {lim}")
        if st < 1:
            raise user_error(TypeError, f"slice: strides must be positive, got {strides}")
        shape.append((lim - s + st - 1) // st)
    return ShapedArray(tuple(shape), x.dtype, x.weak_type)


def slice(operand, start_indices, limit_indices, strides=None):
    """`operand[start:limit:stride, ...]` with static, in-bounds, non-negative indices.

    Args:
      operand: an array of rank r.
      start_indices, limit_indices: r ints each, 0 <= start <= limit <= dim.
      strides: None, or r positive ints.

    Returns:
      An array with dims `ceil((limit - start) / stride)`.
    """
    x = asarray(operand)
    start = int_tuple(start_indices, "start_indices", "slice")
    limit = int_tuple(limit_indices, "limit_indices", "slice")
    strides = None if strides is None else int_tuple(strides, "strides", "slice")
    if strides is not None and all(s == 1 for s in strides):
        strides = None
    params = dict(start_indices=start, limit_indices=limit, strides=strides)
    if strides is None and all(s == 0 for s in start) and limit == x.shape:
        return _validated(slice_p, x, **params)
    return slice_p.bind(x, **params)


def slice_in_dim(operand, start_index, limit_index, stride=1, axis=0):
    """`slice` along one `axis`; None start/limit mean the ends, negative ones count from
    the end of the axis, as do negative axes."""
    x = asarray(operand)
    axis = normalize_axis(axis, x.ndim, "slice_in_dim")
    n = x.shape[axis]
    start = 0 if start_index is None else operator.index(start_index)
    limit = n if limit_index is None else operator.index(limit_index)
    start, limit = (start + n if start < 0 else start), (limit + n if limit < 0 else limit)
    starts, limits, strides = [0] * x.ndim, list(x.shape), [1] * x.ndim
    starts[axis], limits[axis], strides[axis] = start, limit, operator.index(stride)
    return slice(x, starts, limits, strides)


def index_in_dim(operand, index, axis=0, keepdims=True):
    """Element `index` (static; negative counts from the end) along `axis`, keeping that
    axis with size 1 unless `keepdims` is False. IndexError when out of range."""
    x = asarray(operand)
    axis = normalize_axis(axis, x.ndim, "index_in_dim")
    n, index = x.shape[axis], operator.index(index)
    wrapped = index + n if index < 0 else index
    if not 0 <= wrapped < n:
        raise user_error(IndexError,
            f"index_in_dim: index {index} is out of bounds for axis {axis} with "
            f"size {n}")
    out = slice_in_dim(x, wrapped, wrapped + 1, 1, axis)
    return out if keepdims else squeeze(out, (axis,))


# ---- iota and constants -------------------------------------------------------------------
iota_p = Primitive("iota", kind="structural")


@iota_p.def_abstract_eval
def _iota_abstract_eval(*, dtype, shape, dimension):
    _check_shape("iota", shape)
    if not isinstance(dtype, np.dtype) or not (dtypes.is_int(dtype) or dtypes.is_inexact(dtype)):
        raise user_error(TypeError, f"iota needs an integer or floating-point dtype, got {dtype!r}")
    if type(dimension) is not int or not 0 <= dimension < len(shape):
        raise user_error(ValueError,
            f"iota: dimension {dimension!r} is out of range for shape {shape}")
    return ShapedArray(shape, dtype, False)


def iota(dtype, size):
    """`[0, 1, ..., size - 1]` of `dtype` (an integer or float dtype), like np.arange."""
    return broadcasted_iota(dtype, (operator.index(size),), 0)


def broadcasted_iota(dtype, shape, dimension):
    """An array of `shape` whose value at index i is `i[dimension]` (negative dimensions
    count from the end), e.g. broadcasted_iota(int32, (2, 3), 1) -> [[0, 1, 2], [0, 1, 2]]."""
    shape = int_tuple(shape, "shape", "broadcasted_iota")
    dimension = normalize_axis(dimension, len(shape), "broadcasted_iota", "dimension")
    dtype = dtypes.canonicalize(dtype)
    return iota_p.bind(dtype=dtype, shape=shape, dimension=dimension)


def full(shape, fill_value, dtype=None):
    """An array of `shape` filled with the scalar `fill_value`, of `dtype` (default: that
    of `fill_value`, weakly typed for a Python scalar).

    >>> from mytorch import lax
    >>> lax.full((2, 3), 1.5)
    Array([[1.5, 1.5, 1.5],
           [1.5, 1.5, 1.5]], dtype=float32, weak_type=True)
    """
    value = asarray(fill_value)
    if dtype is None:  # the value's own dtype (kept even if 64-bit from an x64 session)
        return _full(shape, value, value.dtype, value.weak_type, "full", exact=True)
    return _full(shape, value, dtypes.canonicalize(dtype, explicit=True), False, "full")


def _full(shape, value, dtype, weak, op, exact=False):
    shape = int_tuple(shape, "shape", op)
    if value.ndim:
        raise user_error(TypeError, f"{op} needs a scalar fill_value, got {short(value.aval)}")
    convert = convert_to_existing if exact else convert_element_type
    return broadcast(convert(value, dtype, weak_type=weak), shape)


def full_like(x, fill_value, dtype=None, shape=None):
    """An array like `x` (an array or ShapedArray) filled with `fill_value`: `x`'s shape
    (or `shape`), and `x`'s dtype and weak type (or `dtype`, strongly typed)."""
    aval = x if isinstance(x, ShapedArray) else asarray(x).aval
    shape = aval.shape if shape is None else shape
    if dtype is None:  # x's own dtype, kept even if it is 64-bit from an x64 session
        return _full(shape, asarray(fill_value), aval.dtype, aval.weak_type, "full_like",
                     exact=True)
    dtype = dtypes.canonicalize(dtype, explicit=True)
    return _full(shape, asarray(fill_value), dtype, False, "full_like")


def zeros_like_array(x):
    """Zeros of `x`'s shape, dtype and weak type."""
    return full_like(x, 0)
