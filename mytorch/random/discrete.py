"""Discrete samplers and the Gumbel trick: randint, bernoulli, gumbel, exponential,
categorical, permutation, choice. Each follows JAX 0.10's algorithm on JAX's bits, so
integer draws equal JAX's exactly.
"""

import math

import numpy as np

import mytorch.numpy as mnp
from mytorch import lax
from mytorch.core import dtypes
from mytorch.core.source_info import user_error
from mytorch.core.trace import Tracer
from mytorch.random.keys import canonical_shape, check_key, random_bits, split_data
from mytorch.random.uniform import _uniform, check_param_shapes, float_dtype

__all__ = [
    "bernoulli",
    "categorical",
    "choice",
    "exponential",
    "gumbel",
    "permutation",
    "randint",
]

_UINT = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


def _split2(data):
    keys = split_data(data, (2,))
    return keys[0], keys[1]


def _int_dtype(name, dtype):
    try:
        d = dtypes.canonicalize(int if dtype is None else dtype, explicit=dtype is not None)
    except TypeError as err:
        raise user_error(TypeError, f"{name}: {err}") from None
    if not dtypes.is_int(d):
        raise user_error(TypeError, f"{name}: dtype must be an integer dtype, got {d}")
    return d


def _as_int(x, name="randint"):
    try:
        x = mnp.asarray(x)
    except OverflowError:
        raise user_error(OverflowError, f"{name}: the bound {x!r} does not fit the default "
                         f"integer dtype ({dtypes.canonicalize(int)}); pass a bound in range "
                         "or enable 64-bit types (mt.config.update('enable_x64', True))"
                         ) from None
    return x if dtypes.is_int(x.dtype) else x.astype(int)


def _convert_and_clip(val, dtype):
    """`val` clipped to the range of `dtype` (and its own), then converted: no wrapping."""
    lo = max(int(np.iinfo(dtype).min), int(np.iinfo(val.dtype).min))
    hi = min(int(np.iinfo(dtype).max), int(np.iinfo(val.dtype).max))
    return mnp.clip(val, lax.full((), lo, val.dtype), lax.full((), hi, val.dtype)).astype(dtype)


def _check_range(minval, maxval):
    """Concrete bounds with minval >= maxval somewhere raise (JAX returns minval there)."""
    if isinstance(minval, Tracer) or isinstance(maxval, Tracer):
        return
    lo, hi = np.asarray(minval), np.asarray(maxval)
    bad = np.broadcast_to(lo >= hi, np.broadcast_shapes(lo.shape, hi.shape))
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        raise user_error(ValueError, f"randint: minval must be < maxval, got minval="
                         f"{np.broadcast_to(lo, bad.shape)[where]} and maxval="
                         f"{np.broadcast_to(hi, bad.shape)[where]}"
                         + (f" at index {where}" if where else ""))


def _randint(data, minval, maxval, shape, dtype):
    minval, maxval = _as_int(minval), _as_int(maxval)
    imax = _convert_and_clip(mnp.asarray(np.array(np.iinfo(dtype).max, dtype)), maxval.dtype)
    maxval_out_of_range = maxval > imax
    minval, maxval = _convert_and_clip(minval, dtype), _convert_and_clip(maxval, dtype)
    nbits = np.iinfo(dtype).bits
    k1, k2 = _split2(data)
    higher, lower = random_bits(k1, nbits, shape), random_bits(k2, nbits, shape)
    udtype = np.dtype(_UINT[nbits])
    span = lax.convert_element_type(maxval - minval, udtype)
    span = mnp.where(maxval <= minval, lax.full((), 1, udtype), span)
    span = mnp.where(maxval_out_of_range & (maxval > minval), span + lax.full((), 1, udtype),
                     span)
    # (hi * 2**(nbits/2) * 2**(nbits/2) + lo) mod span, without overflow
    multiplier = lax.full((), 2 ** (nbits // 2), udtype) % span
    multiplier = (multiplier * multiplier) % span
    offset = ((higher % span) * multiplier + lower % span) % span
    return mnp.broadcast_to(minval + lax.convert_element_type(offset, dtype), shape)


def randint(key, shape, minval, maxval, dtype=None):
    """Uniform integers in `[minval, maxval)`, equal to `jax.random.randint`'s.

    Args:
      key: a single key. shape: the result shape.
      minval, maxval: integer bounds (arrays broadcastable to `shape`); values beyond the
        range of `dtype` are clipped to it.
      dtype: an integer dtype (default int32, int64 with x64).

    Returns:
      An array of `shape` and `dtype`.

    Raises:
      ValueError: concrete bounds with `minval >= maxval` (JAX silently returns `minval`).

    >>> import mytorch as mt
    >>> mt.random.randint(mt.random.key(0), (4,), 0, 10)
    Array([9, 0, 2, 3], dtype=int32)
    """
    data, _ = check_key("randint", key)
    shape = canonical_shape("randint", shape)
    dtype = _int_dtype("randint", dtype)
    check_param_shapes("randint", shape, minval, maxval)
    _check_range(minval, maxval)
    info = np.iinfo(dtype)
    if info.bits < 32:  # sample as int32, within the dtype's range
        minval = mnp.clip(_as_int(minval).astype(np.int32), int(info.min), int(info.max))
        maxval = mnp.clip(_as_int(maxval).astype(np.int32), int(info.min), int(info.max) + 1)
        return _randint(data, minval, maxval, shape, np.dtype(np.int32)).astype(dtype)
    return _randint(data, minval, maxval, shape, dtype)


def bernoulli(key, p=0.5, shape=None, mode="low"):
    """Booleans that are True with probability `p`, as `jax.random.bernoulli`.

    Args:
      key: a single key. p: a float probability or array of them.
      shape: the result shape (default `p`'s shape). mode: 'low' (default) or 'high'.

    Returns:
      A bool array of `shape`.

    >>> import mytorch as mt
    >>> mt.random.bernoulli(mt.random.key(0), 0.5, (4,))
    Array([False, False,  True,  True], dtype=bool)
    """
    data, _ = check_key("bernoulli", key)
    if mode not in ("low", "high"):
        raise user_error(ValueError, f"bernoulli: mode must be 'low' or 'high', got {mode!r}")
    p = mnp.asarray(p)
    if not dtypes.is_float(p.dtype):
        raise user_error(TypeError, f"bernoulli: the probability p must have a float dtype, "
                         f"got {p.dtype}")
    if shape is None:
        shape = tuple(p.shape)
    else:
        shape = check_param_shapes("bernoulli", canonical_shape("bernoulli", shape), p)
    if mode == "high":
        u = _uniform(data, (2, *shape), p.dtype, 0.0, 1.0)
        u1, u2 = u[0], u[1] * (2.0 ** -dtypes.finfo(p.dtype).nmant)
        return u2 < p - u1
    return _uniform(data, shape, p.dtype, 0.0, 1.0) < p


def _gumbel(data, shape, dtype, mode):
    info = dtypes.finfo(dtype)
    if mode == "low":
        u = _uniform(data, shape, dtype, float(info.tiny), 1.0)
        return -mnp.log(-mnp.log(u))
    u = _uniform(data, (2, *shape), dtype, 0.0, 1.0)
    high, low = u[0], u[1]
    x = mnp.where(high >= 0.5, high, high + 2.0 ** -info.nmant * low + float(info.tiny))
    return -mnp.log(-mnp.log1p(-x))


def gumbel(key, shape=(), dtype=None, mode=None):
    """Standard Gumbel floats `-log(-log(u))`, as `jax.random.gumbel`.

    Args:
      key: a single key. shape: the result shape. dtype: a float dtype.
      mode: 'low' (default) or 'high' (more resolution in the upper tail, 2x the bits).

    >>> import mytorch as mt
    >>> mt.random.gumbel(mt.random.key(0), (2,)).shape
    (2,)
    """
    data, _ = check_key("gumbel", key)
    dtype = float_dtype("gumbel", dtype)
    mode = "low" if mode is None else mode
    if mode not in ("low", "high"):
        raise user_error(ValueError, f"gumbel: mode must be 'low' or 'high', got {mode!r}")
    return _gumbel(data, canonical_shape("gumbel", shape), dtype, mode)


def exponential(key, shape=(), dtype=None):
    """Standard exponential floats `-log1p(-u)`, as `jax.random.exponential`.

    >>> import mytorch as mt
    >>> mt.random.exponential(mt.random.key(0), (2,)).shape
    (2,)
    """
    data, _ = check_key("exponential", key)
    dtype = float_dtype("exponential", dtype)
    u = _uniform(data, canonical_shape("exponential", shape), dtype, 0.0, 1.0)
    return -mnp.log1p(-u)


def categorical(key, logits, axis=-1, shape=None, replace=True, mode=None):
    """Category indices drawn with probabilities `softmax(logits, axis)` (the Gumbel-max
    trick), as `jax.random.categorical`.

    Args:
      key: a single key. logits: unnormalised log-probabilities, categories along `axis`.
      shape: the result shape; it must end with the batch shape (logits' shape without
        `axis`); leading dims are extra samples. Default: the batch shape.
      replace: False draws distinct categories per batch entry (the leading dims of `shape`
        count the draws).

    Returns:
      An int array (int32, int64 with x64) of `shape`.

    >>> import mytorch as mt, numpy as np
    >>> mt.random.categorical(mt.random.key(0), np.log(np.array([0.2, 0.8])), shape=(4,))
    Array([1, 1, 1, 1], dtype=int32)
    """
    data, _ = check_key("categorical", key)
    logits = mnp.asarray(logits)
    if not dtypes.is_float(logits.dtype):
        logits = logits.astype(float)
    if logits.ndim == 0:
        raise user_error(ValueError, "categorical: logits must have at least one axis (the "
                         "categories), got a 0-d array")
    ndim = logits.ndim
    if not -ndim <= axis < ndim:
        raise user_error(ValueError, f"categorical: axis {axis} is out of bounds for logits "
                         f"of shape {tuple(logits.shape)}")
    axis = axis % ndim
    batch_shape = tuple(d for i, d in enumerate(logits.shape) if i != axis)
    if shape is None:
        shape = batch_shape
    else:
        shape = canonical_shape("categorical", shape)
        if shape[len(shape) - len(batch_shape):] != batch_shape or len(shape) < len(
                batch_shape):
            raise user_error(ValueError, f"categorical: shape {shape} must end with the batch "
                             f"shape {batch_shape} (logits' shape without axis {axis})")
    prefix = shape[:len(shape) - len(batch_shape)]
    mode = "low" if mode is None else mode
    if replace:
        logits_shape = list(shape[len(prefix):])
        logits_shape.insert(axis, logits.shape[axis])
        g = _gumbel(data, (*prefix, *logits_shape), logits.dtype, mode)
        x = g + mnp.expand_dims(logits, tuple(range(len(prefix))))
        return mnp.argmax(x, axis=axis + len(prefix)).astype(int)
    k = math.prod(prefix)
    if k > logits.shape[axis]:
        raise user_error(ValueError, f"categorical: cannot draw {k} samples without "
                         f"replacement from {logits.shape[axis]} categories")
    noisy = logits + _gumbel(data, tuple(logits.shape), logits.dtype, mode)
    _, idx = lax.top_k(mnp.moveaxis(noisy, axis, -1), k)
    idx = mnp.moveaxis(idx, -1, 0)  # [k, *batch]
    return idx.reshape(shape).astype(int)


def _shuffle(data, x, axis):
    """`x` shuffled along `axis` by sorting on random keys (enough rounds that collisions
    are negligible: ceil(3 ln(n) / ln(2**32 - 1)))."""
    size = int(np.prod(x.shape, dtype=np.int64))
    rounds = int(np.ceil(3 * np.log(max(1, size)) / np.log(2**32 - 1)))
    for _ in range(rounds):
        data, sub = _split2(data)
        sort_keys = random_bits(sub, 32, tuple(x.shape))
        _, x = lax.sort_key_val(sort_keys, x, axis)
    return x


def permutation(key, x, axis=0, independent=False):
    """A random permutation of `arange(x)` (int `x`) or of `x` along `axis`, as
    `jax.random.permutation`.

    Args:
      key: a single key. x: an int, or an array of rank >= 1.
      axis: the axis to permute. independent: permute each slice along `axis` on its own.

    >>> import mytorch as mt
    >>> mt.random.permutation(mt.random.key(0), 5)
    Array([0, 1, 4, 3, 2], dtype=int32)
    """
    data, _ = check_key("permutation", key)
    if isinstance(x, (int, np.integer)) or (np.ndim(x) == 0 and hasattr(x, "dtype")):
        arr = mnp.asarray(x)
        if not dtypes.is_int(arr.dtype):
            raise user_error(TypeError, "permutation: x must be an int or an array of rank "
                             f">= 1, got {arr.dtype} scalar")
        if isinstance(arr, Tracer) and arr.concrete_value() is None:
            raise user_error(TypeError, "permutation: an int x must be static (it sets the "
                             "length of the result), got a traced value")
        return _shuffle(data, mnp.arange(int(np.asarray(arr))), 0)
    x = mnp.asarray(x)
    if not -x.ndim <= axis < x.ndim:
        raise user_error(ValueError, f"permutation: axis {axis} is out of bounds for shape "
                         f"{tuple(x.shape)}")
    axis = axis % x.ndim
    if independent or x.ndim == 1:
        return _shuffle(data, x, axis)
    ind = _shuffle(data, mnp.arange(x.shape[axis]), 0)
    return mnp.take(x, ind, axis=axis)


def choice(key, a, shape=(), replace=True, p=None, axis=0, mode=None):
    """Random draws from `a` (an array, along `axis`) or from `arange(a)` (an int), as
    `jax.random.choice`.

    Args:
      key: a single key. a: an int or an array of rank >= 1.
      shape: the draws' shape (a tuple). replace: draw with replacement.
      p: optional probabilities, shape `(n,)` with `n = a` or `a.shape[axis]`.
      axis: the axis of `a` to draw along.

    Returns:
      `shape` for an int `a`; else `a.shape[:axis] + shape + a.shape[axis+1:]`.

    Raises:
      ValueError: `p` of the wrong shape; more draws than items with `replace=False`.

    >>> import mytorch as mt
    >>> mt.random.choice(mt.random.key(0), 10, (3,), replace=False).shape
    (3,)
    """
    data, _ = check_key("choice", key)
    if not isinstance(shape, (tuple, list)):
        raise user_error(TypeError, f"choice: shape must be a tuple, got {shape!r}")
    shape = canonical_shape("choice", shape)
    arr = mnp.asarray(a)
    if arr.ndim == 0:
        if isinstance(arr, Tracer) and arr.concrete_value() is None:
            raise user_error(TypeError, "choice: an int `a` must be static, got a traced value")
        n_inputs = int(np.asarray(arr))
    else:
        if not -arr.ndim <= axis < arr.ndim:
            raise user_error(ValueError, f"choice: axis {axis} is out of bounds for a of "
                             f"shape {tuple(arr.shape)}")
        axis = axis % arr.ndim
        n_inputs = arr.shape[axis]
    n_draws = math.prod(shape)
    out_shape = shape if arr.ndim == 0 else (*arr.shape[:axis], *shape, *arr.shape[axis + 1:])
    if n_draws == 0:
        return mnp.zeros(out_shape, dtype=arr.dtype)
    if n_inputs <= 0:
        raise user_error(ValueError, "choice: a must be greater than 0 unless no samples are "
                         "taken")
    if not replace and n_draws > n_inputs:
        raise user_error(ValueError, f"choice: cannot take a larger sample (size {n_draws}) "
                         f"than the population (size {n_inputs}) with replace=False")
    if p is None:
        if replace:
            ind = _randint(data, 0, n_inputs, shape, dtypes.canonicalize(int))
            result = ind if arr.ndim == 0 else mnp.take(arr, ind, axis=axis)
        else:
            perm = permutation(key, n_inputs if arr.ndim == 0 else arr, axis)
            result = lax.slice_in_dim(perm, 0, n_draws, axis=axis if arr.ndim else 0)
    else:
        p_arr = mnp.asarray(p)
        if not dtypes.is_float(p_arr.dtype):
            p_arr = p_arr.astype(float)
        if tuple(p_arr.shape) != (n_inputs,):
            raise user_error(ValueError, f"choice: p must be None or a 1-d vector of the size "
                             f"of a.shape[axis] ({n_inputs}), got p of shape "
                             f"{tuple(p_arr.shape)}")
        if replace:
            p_cuml = mnp.cumsum(p_arr)
            r = p_cuml[-1] * (1 - _uniform(data, shape, p_cuml.dtype, 0.0, 1.0))
            ind = mnp.searchsorted(p_cuml, r).astype(int)
        else:
            g = _gumbel(data, (n_inputs,), p_arr.dtype, "low" if mode is None else mode)
            ind = lax.top_k(g + mnp.log(p_arr), n_draws)[1].astype(int)
        result = ind if arr.ndim == 0 else mnp.take(arr, ind, axis=axis)
    return result.reshape(out_shape)

