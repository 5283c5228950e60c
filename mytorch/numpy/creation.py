"""Array creation (`array`, `zeros`, `arange`, `linspace`, `eye`, ...) and dtype utilities.

Created arrays come from lax (`broadcast_in_dim` of a scalar, `iota`, `broadcasted_iota`), so
inside a traced function `mnp.zeros((1000, 1000))` is one broadcast of a literal rather than
a large constant. Shapes and the numbers that `arange` reads are static Python values.

The dtype utilities and shape queries live in introspection.py and are re-exported here.
"""

import math
import operator

import numpy as np

from mytorch import lax
from mytorch.core import dtypes
from mytorch.core.array import Array, is_python_scalar, scalar_array
from mytorch.core.source_info import user_error
from mytorch.core.trace import Tracer
from mytorch.errors import AxisError, ConcretizationTypeError
from mytorch.numpy._promote import asarray_any, broadcast_shapes, broadcast_to_shape, result_type
from mytorch.numpy.introspection import (
    _as_np_dtype,
    can_cast,
    complexfloating,
    dtype,
    finfo,
    floating,
    generic,
    iinfo,
    inexact,
    integer,
    iscomplexobj,
    isdtype,
    isrealobj,
    isscalar,
    issubdtype,
    ndim,
    number,
    promote_types,
    shape,
    signedinteger,
    size,
    unsignedinteger,
)

__all__ = [
    "array", "asarray", "zeros", "ones", "full", "empty", "zeros_like", "ones_like",
    "full_like", "empty_like", "arange", "linspace", "logspace", "geomspace", "eye", "identity",
    "tri", "tril", "triu", "meshgrid", "indices", "copy", "astype", "from_dlpack", "dtype",
    "isdtype", "finfo", "iinfo", "issubdtype", "can_cast", "promote_types", "number",
    "integer", "signedinteger",
    "unsignedinteger", "floating", "complexfloating", "inexact", "generic", "isscalar", "ndim",
    "shape", "size", "iscomplexobj", "isrealobj",
]


# ---- helpers ----------------------------------------------------------------------------
def _shape(shape, name):
    """A tuple of non-negative Python ints; clear errors otherwise (a traced entry: shapes
    must be static)."""
    from mytorch.numpy._manip_util import static_shape  # noqa: PLC0415

    dims = static_shape(name, shape)
    if any(d < 0 for d in dims):
        raise user_error(TypeError,  # JAX's class (NumPy raises ValueError)
                         f"{name}: negative dimensions are not allowed, got shape {dims}")
    return dims


def _dtype_arg(dtype, default=None):
    """The canonical dtype the user asked for (64-bit narrowing warns), or `default`."""
    if dtype is None:
        return default
    return dtypes.canonicalize(_as_np_dtype(dtype), explicit=True)


def _fill(shape, value, dtype, weak=False):
    """An array of `shape` filled with `value` (a scalar or a 0-d array) of `dtype`."""
    if isinstance(value, Array):
        value = lax.convert_element_type(value, dtype, weak_type=weak)
    else:
        value = scalar_array(_scalar_value(value, dtype), dtype)
        value._weak = weak
    return value if not shape else lax.full(tuple(shape), value)


def _scalar_value(value, dtype):
    """A Python/NumPy scalar cast to `dtype` as NumPy's assignment would (ints wrap)."""
    with np.errstate(all="ignore"):
        if dtypes.is_int(dtype) and isinstance(value, (int, np.integer)):
            return np.asarray(int(value)).astype(dtype)
        return np.asarray(value).astype(dtype)


def _static_number(x, name, what):
    """A Python number read from a static argument of `name`."""
    if isinstance(x, Tracer):
        raise ConcretizationTypeError(
            f"{name}: {what} must be a static number, got an abstract {x.aval.str_short()}. "
            "Pass a Python number, or mark the argument static with static_argnums"
        )
    if isinstance(x, Array) or isinstance(x, (np.ndarray, np.generic)):
        if np.ndim(x) != 0:
            raise user_error(TypeError, f"{name}: {what} must be a scalar, got shape {np.shape(x)}")
        x = np.asarray(x).item()
    if not isinstance(x, (bool, int, float)):
        raise user_error(TypeError, f"{name}: {what} must be a real number, got {x!r:.80}")
    return x


# ---- from data ---------------------------------------------------------------------------
def array(object, dtype=None, copy=True, ndmin=0):
    """An array from array-like data (nested lists, NumPy arrays, scalars, Arrays).

    Python scalars give weakly typed 0-d arrays; lists of Python floats give the default
    float dtype (float32 without x64). Arrays are immutable, so `copy` has no effect.

    Args:
      object: the data.
      dtype: the dtype of the result (default: inferred).
      copy: accepted for NumPy compatibility.
      ndmin: the minimum rank; leading axes of size 1 are added.

    Returns:
      An Array.

    >>> mnp.array([[1, 2], [3, 4]]).dtype
    dtype('int32')
    """
    out = asarray_any(object, _dtype_arg(dtype))
    ndmin = operator.index(ndmin)
    if out.ndim < ndmin:
        out = lax.reshape(out, (1,) * (ndmin - out.ndim) + tuple(out.shape))
    return out


def asarray(a, dtype=None, order=None, *, copy=None):
    """`a` as an Array (no copy when it already is one of the right dtype).

    >>> mnp.asarray(np.arange(3.0)).dtype
    dtype('float32')
    """
    del order, copy  # arrays are immutable: a copy is never needed
    return asarray_any(a, _dtype_arg(dtype))


def from_dlpack(x, /, *, device=None, copy=None):
    """An Array holding the data of `x`, any object with `__dlpack__` and
    `__dlpack_device__` on the host (a NumPy array, a CPU torch tensor, an Array). The
    buffer is read without a copy and then placed on the default device; 64-bit dtypes
    narrow without x64.

    >>> mnp.from_dlpack(np.arange(3.0)).tolist()
    [0.0, 1.0, 2.0]
    """
    del device, copy  # arrays are immutable and live on the default device
    if isinstance(x, Array):
        return x
    if not (hasattr(x, "__dlpack__") and hasattr(x, "__dlpack_device__")):
        raise user_error(TypeError, f"from_dlpack: {type(x).__name__} has no __dlpack__ and "
                        "__dlpack_device__ methods; use mnp.asarray for other array-likes")
    try:
        value = np.from_dlpack(x)
    except (BufferError, TypeError, RuntimeError) as e:
        raise user_error(TypeError, f"from_dlpack: cannot read {type(x).__name__} (DLPack device "
                        f"{x.__dlpack_device__()}): {e}") from None
    return asarray_any(value)


def copy(a, order=None):
    """A copy of `a` (arrays are immutable, so this is `asarray(a)`)."""
    del order
    return asarray_any(a)


def astype(x, dtype, /, *, copy=False, device=None):
    """`x` converted to `dtype` (any dtype-like), strongly typed: `x.astype(dtype)`."""
    del copy, device
    return asarray_any(x).astype(dtype)


# ---- filled arrays --------------------------------------------------------------------------
def zeros(shape, dtype=None):
    """An array of `shape` (an int or a tuple of ints) filled with zeros.

    Args:
      shape: int or tuple of ints.
      dtype: default the default float (float32 without x64).

    >>> mnp.zeros((2, 3)).shape
    (2, 3)
    """
    return _fill(_shape(shape, "zeros"), 0, _dtype_arg(dtype, dtypes.default_float()))


def ones(shape, dtype=None):
    """An array of `shape` filled with ones (default dtype: the default float)."""
    return _fill(_shape(shape, "ones"), 1, _dtype_arg(dtype, dtypes.default_float()))


def empty(shape, dtype=None):
    """Like `zeros` (arrays are never uninitialised)."""
    return _fill(_shape(shape, "empty"), 0, _dtype_arg(dtype, dtypes.default_float()))


def full(shape, fill_value, dtype=None):
    """An array of `shape` filled with `fill_value` (a scalar, or an array broadcast to
    `shape`).

    Without `dtype` the dtype is `fill_value`'s; a Python scalar gives a weakly typed result
    (as JAX).

    >>> mnp.full((2,), 7).tolist()
    [7, 7]
    """
    shape = _shape(shape, "full")
    if np.ndim(fill_value) == 0 and not isinstance(fill_value, Array):
        if dtype is None:
            if is_python_scalar(fill_value):
                d, weak = dtypes.python_scalar_dtype(fill_value)
                return _fill(shape, fill_value, d, weak)
            return _fill(shape, fill_value, dtypes.canonicalize(np.asarray(fill_value).dtype))
        # an integer fill wraps into a narrow dtype (full(2, 300, uint8) is 44), as in JAX
        return _fill(shape, fill_value, _dtype_arg(dtype))
    value = asarray_any(fill_value, _dtype_arg(dtype))
    return _broadcast_to(value, shape, "full")


def _broadcast_to(x, shape, name):
    shape = tuple(shape)
    if x.ndim > len(shape) or any(d not in (1, s) for d, s in zip(x.shape[::-1], shape[::-1])):
        raise user_error(ValueError,
                         f"{name}: cannot broadcast {x.aval.str_short()} to shape {shape}")
    return broadcast_to_shape(x, shape)


def _like(name, a, fill_value, dtype, shape):
    a = a if isinstance(a, Array) else asarray_any(a)
    out_shape = a.shape if shape is None else _shape(shape, name)
    d, weak = (a.dtype, a.weak_type) if dtype is None else (_dtype_arg(dtype), False)
    if isinstance(fill_value, Array) or np.ndim(fill_value) != 0:
        value = asarray_any(fill_value)
        value = lax.convert_element_type(value, d, weak_type=weak)
        return _broadcast_to(value, out_shape, name)
    return _fill(out_shape, fill_value, d, weak)


def zeros_like(a, dtype=None, shape=None):
    """Zeros with the shape and dtype of `a` (weak type kept), or the given ones."""
    return _like("zeros_like", a, 0, dtype, shape)


def ones_like(a, dtype=None, shape=None):
    """Ones with the shape and dtype of `a` (weak type kept), or the given ones."""
    return _like("ones_like", a, 1, dtype, shape)


def empty_like(a, dtype=None, shape=None):
    """Like `zeros_like` (arrays are never uninitialised)."""
    return _like("empty_like", a, 0, dtype, shape)


def full_like(a, fill_value, dtype=None, shape=None):
    """`fill_value` (scalar or broadcastable array) with the shape and dtype of `a`.

    >>> mnp.full_like(mnp.zeros(2, mnp.int8), 7.9).tolist()  # cast as NumPy
    [7, 7]
    """
    return _like("full_like", a, fill_value, dtype, shape)


# ---- ranges -------------------------------------------------------------------------------
def arange(start, stop=None, step=None, dtype=None):
    """Evenly spaced values in [start, stop) with spacing `step` (static Python numbers).

    Integer arguments give the default int (int32 without x64), any float gives the default
    float. Values are `first + i * delta` with `first = dtype(start)` and
    `delta = dtype(start + step) - first`, as NumPy computes them.

    Args:
      start, stop, step: Python numbers (`arange(n)` is `arange(0, n, 1)`).
      dtype: the result dtype.

    Returns:
      A 1-d Array of `ceil((stop - start) / step)` elements (none if that is negative).

    >>> mnp.arange(5).tolist()
    [0, 1, 2, 3, 4]
    """
    if stop is None:
        start, stop = 0, start
    start = _static_number(start, "arange", "start")
    stop = _static_number(stop, "arange", "stop")
    step = 1 if step is None else _static_number(step, "arange", "step")
    if step == 0:
        raise user_error(ValueError, "arange: step must not be zero")
    all_int = all(isinstance(v, int) for v in (start, stop, step))
    if dtype is None:
        dtype = dtypes.default_int() if all_int else dtypes.default_float()
    else:
        dtype = _dtype_arg(dtype)
    if all_int:
        n = max(0, -((start - stop) // step))
    else:
        span = stop - start
        n = max(0, math.ceil(span / step))
        if n == 0 and span != 0 and (span > 0) == (step > 0):
            n = 1  # the quotient underflowed to 0: NumPy still returns [start]
    if dtypes.is_bool(dtype):
        if n > 2:
            raise user_error(ValueError, "arange: a bool result can have at most 2 elements")
        return lax.ne(_float_range(n, start, step, dtypes.float32), 0.0)
    first = _scalar_value(start, dtype)
    second = _scalar_value(start + step, dtype)
    if dtypes.is_int(dtype):
        delta = second - first  # in the integer dtype, as NumPy's fill
        out = lax.iota(dtype, n)
        if n > 1 and delta != 1:
            out = lax.mul(out, _fill((), delta, dtype))
        return lax.add(out, _fill((), first, dtype)) if first != 0 else out
    compute = dtypes.promote_types(dtype, dtypes.float32)  # f16/bf16 fill in float32
    delta = np.asarray(second).astype(compute) - np.asarray(first).astype(compute)
    return lax.convert_element_type(_float_range(n, first, delta, compute), dtype)


def _float_range(n, first, delta, compute):
    """first + i * delta for i < n, computed in `compute`."""
    out = lax.iota(compute, n)
    if n > 1:
        out = lax.mul(out, _fill((), np.asarray(delta).item(), compute))
    return lax.add(out, _fill((), np.asarray(first).item(), compute))


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    """`num` evenly spaced samples from `start` to `stop` (scalars or broadcastable arrays).

    The samples are `start + i * step` with `step = (stop - start) / div` (div = num - 1
    with the endpoint, else num), computed in at least float32; integer dtypes floor.

    Args:
      start, stop: scalars or arrays (broadcast together).
      num: the number of samples (a static int >= 0).
      endpoint: include `stop` as the last sample.
      retstep: also return the step.
      dtype: the result dtype (default: the promoted float of start and stop).
      axis: where the samples axis goes in the result (negative counts from the end).

    Returns:
      An Array of shape `broadcast(start, stop).shape` with `num` inserted at `axis`; with
      retstep, `(samples, step)`.

    >>> mnp.linspace(0, 1, 5).tolist()
    [0.0, 0.25, 0.5, 0.75, 1.0]
    """
    num = operator.index(num)
    if num < 0:
        raise user_error(ValueError, f"linspace: number of samples, {num}, must be non-negative")
    start, stop = asarray_any(start), asarray_any(stop)
    out_dtype = _linspace_dtype(start, stop, dtype)
    compute = _compute_dtype(out_dtype)
    start = lax.convert_element_type(start, compute)
    stop = lax.convert_element_type(stop, compute)
    bshape = broadcast_shapes("linspace", start.shape, stop.shape, avals=[start, stop])
    axis = _insert_axis(axis, len(bshape), "linspace")
    out_shape = bshape[:axis] + (num,) + bshape[axis:]
    dims = tuple(d for d in range(len(out_shape)) if d != axis)
    start, stop = broadcast_to_shape(start, bshape), broadcast_to_shape(stop, bshape)
    div = num - 1 if endpoint else num
    if div > 0:
        step = lax.div(lax.sub(stop, start), float(div))
    else:
        step = _fill(bshape, float("nan"), compute)
    out = lax.broadcast_in_dim(start, out_shape, dims)
    if div > 0 and num > 0:
        i = lax.broadcasted_iota(compute, out_shape, axis)
        out = lax.add(out, lax.mul(i, lax.broadcast_in_dim(step, out_shape, dims)))
        if endpoint:
            last = lax.eq(lax.broadcasted_iota(dtypes.int32, out_shape, axis), num - 1)
            out = lax.select(last, lax.broadcast_in_dim(stop, out_shape, dims), out)
    out = _to_dtype(out, out_dtype)
    if retstep:
        return out, (lax.convert_element_type(step, out_dtype)
                     if dtypes.is_inexact(out_dtype) else step)
    return out


def _linspace_dtype(start, stop, dtype):
    if dtype is not None:
        return _dtype_arg(dtype)
    d = result_type(start, stop)
    return d if dtypes.is_inexact(d) else dtypes.default_float()


def _to_dtype(x, dtype):
    if dtypes.is_int(dtype):
        x = lax.floor(x)  # NumPy floors when the samples go to an integer dtype
    return lax.convert_element_type(x, dtype)


def _insert_axis(axis, ndim, name):
    """A position in [0, ndim] for a new axis (negative counts from the end)."""
    axis = operator.index(axis)
    if not -ndim - 1 <= axis <= ndim:
        raise user_error(AxisError,
                         f"{name}: axis {axis} is out of bounds for a result of rank {ndim + 1}")
    return axis + ndim + 1 if axis < 0 else axis


def _compute_dtype(out_dtype):
    """The float the samples are computed in: at least float32, the default for ints."""
    if dtypes.is_inexact(out_dtype):
        return dtypes.promote_types(out_dtype, dtypes.float32)
    return dtypes.default_float()


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    """`base ** linspace(start, stop, num)`: samples evenly spaced on a log scale (`base`
    may be an array, broadcast with start and stop).

    >>> mnp.logspace(0, 2, 3).tolist()
    [1.0, 10.0, 100.0]
    """
    start, stop, base = asarray_any(start), asarray_any(stop), asarray_any(base)
    out_dtype = _linspace_dtype(start, stop, dtype)
    compute = _compute_dtype(out_dtype)
    nd = len(broadcast_shapes("logspace", start.shape, stop.shape, base.shape,
                              avals=[start, stop, base]))
    start, stop, base = (_lead_ones(v, nd) for v in (start, stop, base))
    y = linspace(start, stop, num, endpoint, dtype=compute, axis=axis)
    base = _expand_at(lax.convert_element_type(base, compute), _insert_axis(axis, nd, "logspace"))
    shape = broadcast_shapes("logspace", base.shape, y.shape, avals=[base, y])
    out = lax.pow(broadcast_to_shape(base, shape), broadcast_to_shape(y, shape))
    return lax.convert_element_type(out, out_dtype)


def _lead_ones(x, nd):
    return x if x.ndim >= nd else lax.reshape(x, (1,) * (nd - x.ndim) + tuple(x.shape))


def _expand_at(x, axis):
    shape = list(x.shape)
    shape.insert(axis, 1)
    return lax.reshape(x, tuple(shape))


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """Samples evenly spaced on a log scale between `start` and `stop` (both nonzero, the
    same sign); the endpoints are exact.

    >>> mnp.geomspace(1, 1000, 4).tolist()
    [1.0, 10.0, 100.0, 1000.0]
    """
    start, stop = asarray_any(start), asarray_any(stop)
    for v in (start, stop):
        if not isinstance(v, Tracer) and np.any(np.asarray(v) == 0):
            raise user_error(ValueError, "geomspace: a geometric sequence cannot include zero")
    out_dtype = _linspace_dtype(start, stop, dtype)
    compute = _compute_dtype(out_dtype)
    start = lax.convert_element_type(start, compute)
    stop = lax.convert_element_type(stop, compute)
    bshape = broadcast_shapes("geomspace", start.shape, stop.shape, avals=[start, stop])
    start, stop = broadcast_to_shape(start, bshape), broadcast_to_shape(stop, bshape)
    sign = lax.sign(start)
    start, stop = lax.div(start, sign), lax.div(stop, sign)
    ln10 = _fill((), math.log(10.0), compute)
    lo, hi = lax.div(lax.log(start), ln10), lax.div(lax.log(stop), ln10)
    out = logspace(lo, hi, num, endpoint, 10.0, compute, axis)
    axis = _insert_axis(axis, len(bshape), "geomspace")
    dims = tuple(d for d in range(out.ndim) if d != axis)
    i = lax.broadcasted_iota(dtypes.int32, out.shape, axis)
    if num > 0:
        out = lax.select(lax.eq(i, 0), lax.broadcast_in_dim(start, out.shape, dims), out)
    if num > 1 and endpoint:
        out = lax.select(lax.eq(i, num - 1), lax.broadcast_in_dim(stop, out.shape, dims), out)
    out = lax.mul(out, lax.broadcast_in_dim(sign, out.shape, dims))
    return lax.convert_element_type(out, out_dtype)


# ---- matrices -------------------------------------------------------------------------------
def _tri_mask(n, m, k, name):
    """bool[n, m]: True where column - row <= k."""
    n, m, k = (operator.index(v) for v in (n, m, k))
    if n < 0 or m < 0:
        raise user_error(ValueError, f"{name}: N and M must be non-negative, got N={n}, M={m}")
    rows = lax.broadcasted_iota(dtypes.int32, (n, m), 0)
    cols = lax.broadcasted_iota(dtypes.int32, (n, m), 1)
    return rows, cols, k


def eye(N, M=None, k=0, dtype=None):
    """A 2-d array with ones on the k-th diagonal and zeros elsewhere.

    Args:
      N: rows; M: columns (default N); k: the diagonal (0 main, > 0 above, < 0 below).
      dtype: default the default float.

    >>> mnp.eye(2, dtype=mnp.int32).tolist()
    [[1, 0], [0, 1]]
    """
    rows, cols, k = _tri_mask(N, N if M is None else M, k, "eye")
    mask = lax.eq(lax.sub(cols, rows), _fill((), k, dtypes.int32))
    return lax.convert_element_type(mask, _dtype_arg(dtype, dtypes.default_float()))


def identity(n, dtype=None):
    """The n x n identity matrix."""
    return eye(n, dtype=dtype)


def tri(N, M=None, k=0, dtype=None):
    """Ones at and below the k-th diagonal of an N x M array, zeros above.

    >>> mnp.tri(2, 3, dtype=int).tolist()
    [[1, 0, 0], [1, 1, 0]]
    """
    rows, cols, k = _tri_mask(N, N if M is None else M, k, "tri")
    mask = lax.le(lax.sub(cols, rows), _fill((), k, dtypes.int32))
    return lax.convert_element_type(mask, _dtype_arg(dtype, dtypes.default_float()))


def _tri_select(name, m, k, lower):
    m = asarray_any(m)
    if m.ndim == 0:
        raise user_error(ValueError,
                         f"{name}: needs an array of rank >= 1, got {m.aval.str_short()}")
    n, cols = (m.shape[-2], m.shape[-1]) if m.ndim >= 2 else (m.shape[-1], m.shape[-1])
    rows_i, cols_i, k = _tri_mask(n, cols, k, name)
    diff = lax.sub(cols_i, rows_i)
    if lower:
        keep = lax.le(diff, _fill((), k, dtypes.int32))
    else:
        keep = lax.ge(diff, _fill((), k, dtypes.int32))
    shape = m.shape[:-2] + (n, cols) if m.ndim >= 2 else (n, cols)
    keep = lax.broadcast_in_dim(keep, shape, (len(shape) - 2, len(shape) - 1))
    m = broadcast_to_shape(m, shape)
    return lax.select(keep, m, _fill(shape, 0, m.dtype, m.weak_type))


def tril(m, k=0):
    """`m` with the elements above the k-th diagonal zeroed (last two axes; a 1-d `m` is
    broadcast to a square matrix as NumPy does)."""
    return _tri_select("tril", m, k, True)


def triu(m, k=0):
    """`m` with the elements below the k-th diagonal zeroed (last two axes)."""
    return _tri_select("triu", m, k, False)


def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    """Coordinate arrays from 1-d coordinate vectors (each input is flattened).

    With `indexing="xy"` (Cartesian) the first two output axes are swapped relative to
    `"ij"` (matrix indexing). `sparse=True` returns arrays with size-1 axes instead of
    full grids.

    Returns:
      A tuple of len(xi) arrays (NumPy 2 returns a tuple too).

    >>> X, Y = mnp.meshgrid(mnp.arange(3), mnp.arange(2))
    >>> X.shape
    (2, 3)
    """
    del copy
    if indexing not in ("xy", "ij"):
        raise user_error(ValueError, f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    arrays = [asarray_any(x) for x in xi]
    arrays = [x if x.ndim == 1 else lax.reshape(x, (x.size,)) for x in arrays]
    n = len(arrays)
    sizes = [x.shape[0] for x in arrays]
    positions = list(range(n))
    if indexing == "xy" and n > 1:
        positions[0], positions[1] = 1, 0
        sizes[0], sizes[1] = sizes[1], sizes[0]
    full_shape = tuple(sizes)
    out = []
    for x, pos in zip(arrays, positions, strict=True):
        if sparse:
            shape = tuple(x.shape[0] if d == pos else 1 for d in range(n))
            out.append(lax.reshape(x, shape))
        else:
            out.append(lax.broadcast_in_dim(x, full_shape, (pos,)))
    return tuple(out)


def indices(dimensions, dtype=None, sparse=False):
    """The index grid of an array of shape `dimensions`: `out[i][idx] == idx[i]`.

    Returns:
      An array of shape `(len(dimensions), *dimensions)` (default int dtype), or with
      `sparse` a tuple of arrays with size-1 axes except axis i.

    >>> mnp.indices((2, 2))[0].tolist()
    [[0, 0], [1, 1]]
    """
    dims = _shape(dimensions, "indices")
    dtype = _dtype_arg(dtype, dtypes.default_int())
    if sparse:
        return tuple(
            lax.broadcasted_iota(dtype, tuple(d if j == i else 1 for j, d in enumerate(dims)), i)
            for i in range(len(dims))
        )
    if not dims:
        return _fill((0,), 0, dtype)
    parts = [lax.broadcasted_iota(dtype, (1, *dims), i + 1) for i in range(len(dims))]
    return parts[0] if len(parts) == 1 else lax.concatenate(parts, 0)
