"""GPU eager kernels of the reductions, argmax/argmin and the cumulative reductions.

They mirror backends/numpy/reductions.py, whose dtype rules (`_accumulate_as`,
`_f32_if_bf16`) and max/min identities (`_identity`) they import: float16 and bfloat16
sums and products accumulate in float32 and round once; bfloat16 max/min/argmax/argmin/
cummax/cummin work in float32 (exact); integer sums and products stay in the operand's
dtype and wrap.

Differences in how the result is reached, not in what it is:
- Sums and running sums use the array module's own `sum`/`cumsum`. CuPy's are parallel
  trees (rounding error growing like log n, as the NumPy backend's blocked sums); NumPy's
  plain `sum` along a strided axis (the tests' CPU run) grows like n.
- CuPy's `max`/`min` have no `initial`: a reduction over an axis of size 0 gives the
  identity directly (-inf/+inf, the integer extremes, False/True), as NumPy's kernel does.
- CuPy's ufuncs accumulate only `add` and `multiply`: cummax, cummin and cumlogsumexp run
  as a log-step scan (ceil(log2 n) whole-array `maximum`/`minimum`/`logaddexp` calls, each
  combining every element with the one 2**k before it). max and min are exact, so the
  result equals the sequential one; logaddexp rounds in a different order.
"""

import numpy as np

from mytorch.backends.cupy.kernels import register, xp_of
from mytorch.backends.cupy.kernels_common import BF16, F32, log_scan
from mytorch.backends.numpy.reductions import _accumulate_as, _f32_if_bf16, _identity
from mytorch.lax import reductions as r


def _kept_shape(shape, axes):
    return tuple(d for i, d in enumerate(shape) if i not in axes)


# ---- reductions over axes ----------------------------------------------------------------
def _arith_reduce(name):
    def kernel(x, *, axes):
        xp = xp_of(x)
        dt = x.dtype
        acc = _accumulate_as(dt)
        with np.errstate(all="ignore"):
            out = getattr(xp, name)(x.astype(acc, copy=False), axis=tuple(axes), dtype=acc)
        return xp.asarray(out).astype(dt, copy=False)

    kernel.__name__ = f"reduce_{name}"
    return kernel


def _choose_reduce(name, largest):
    def kernel(x, *, axes):
        xp = xp_of(x)
        dt = x.dtype
        axes = tuple(axes)
        if any(x.shape[a] == 0 for a in axes):
            return xp.full(_kept_shape(x.shape, axes), _identity(dt, largest), dtype=dt)
        with np.errstate(all="ignore"):
            out = getattr(xp, name)(_f32_if_bf16(x), axis=axes)
        return xp.asarray(out).astype(dt, copy=False)

    kernel.__name__ = f"reduce_{name}"
    return kernel


def _logical_reduce(kind):
    # bool: all/any/odd count; integers: bitwise reductions with their identities
    # (all ones for AND, 0 for OR and XOR)
    def kernel(x, *, axes):
        xp = xp_of(x)
        axes = tuple(axes)
        if x.dtype == np.bool_:
            if kind == "and":
                return xp.all(x, axis=axes)
            if kind == "or":
                return xp.any(x, axis=axes)
            return (xp.sum(x, axis=axes, dtype=np.int64) % 2).astype(np.bool_)
        return _bitwise_reduce(xp, kind, x, axes)

    kernel.__name__ = f"reduce_{kind}"
    return kernel


def _bitwise_reduce(xp, kind, x, axes):
    """AND/OR/XOR of integers over `axes`, as a halving tree of whole-array ufunc calls
    (CuPy has no bitwise reductions)."""
    op = {"and": xp.bitwise_and, "or": xp.bitwise_or, "xor": xp.bitwise_xor}[kind]
    identity = 0 if kind != "and" else np.iinfo(x.dtype).max if x.dtype.kind == "u" else -1
    kept = [a for a in range(x.ndim) if a not in axes]
    n = 1
    for a in axes:
        n *= x.shape[a]
    flat = xp.transpose(x, kept + list(axes)).reshape(_kept_shape(x.shape, axes) + (n,))
    if n == 0:
        return xp.full(flat.shape[:-1], identity, dtype=x.dtype)
    while flat.shape[-1] > 1:
        m = flat.shape[-1]
        half = m // 2
        head = op(flat[..., :half], flat[..., half:2 * half])
        flat = head if m % 2 == 0 else xp.concatenate([head, flat[..., 2 * half:]], axis=-1)
    return flat[..., 0].copy()


register(r.reduce_sum_p)(_arith_reduce("sum"))
register(r.reduce_prod_p)(_arith_reduce("prod"))
register(r.reduce_max_p)(_choose_reduce("max", largest=False))
register(r.reduce_min_p)(_choose_reduce("min", largest=True))
register(r.reduce_and_p)(_logical_reduce("and"))
register(r.reduce_or_p)(_logical_reduce("or"))
register(r.reduce_xor_p)(_logical_reduce("xor"))


# ---- argmax / argmin: NumPy's convention (first NaN wins, first index on ties) -----------
def _arg_reduce(name):
    def kernel(x, *, axes, index_dtype):
        xp = xp_of(x)
        (axis,) = axes
        return xp.asarray(getattr(xp, name)(_f32_if_bf16(x), axis=axis)).astype(index_dtype)

    kernel.__name__ = name
    return kernel


register(r.argmax_p)(_arg_reduce("argmax"))
register(r.argmin_p)(_arg_reduce("argmin"))


# ---- cumulative reductions ---------------------------------------------------------------
def _cumulative(fn, upcast):
    """Kernel of a cumulative reduction `fn(xp, x, axis)`; `upcast(dtype)` is the dtype to
    compute in. `reverse` flips the axis before and after."""

    def kernel(x, *, axis, reverse):
        xp = xp_of(x)
        dt = x.dtype
        work = upcast(dt)
        if reverse:
            x = xp.flip(x, axis)
        with np.errstate(all="ignore"):
            out = fn(xp, x.astype(work, copy=False), axis)
            if reverse:
                out = xp.flip(out, axis)
            return xp.ascontiguousarray(out).astype(dt, copy=False)

    kernel.__name__ = getattr(fn, "__name__", "cumulative")
    return kernel


def _cumsum(xp, x, axis):
    return xp.cumsum(x, axis=axis, dtype=x.dtype)


def _cumprod(xp, x, axis):
    return xp.cumprod(x, axis=axis, dtype=x.dtype)


def _cummax(xp, x, axis):
    return log_scan(xp, xp.maximum, x, axis)


def _cummin(xp, x, axis):
    return log_scan(xp, xp.minimum, x, axis)


def _cumlogsumexp(xp, x, axis):
    # logaddexp(a, b) = max + log1p(exp(-|a - b|)): no overflow, and -inf is its identity
    return log_scan(xp, xp.logaddexp, x, axis)


def _f32_for_bf16(dt):
    return F32 if dt == BF16 else dt


register(r.cumsum_p)(_cumulative(_cumsum, _accumulate_as))
register(r.cumprod_p)(_cumulative(_cumprod, _accumulate_as))
register(r.cummax_p)(_cumulative(_cummax, _f32_for_bf16))
register(r.cummin_p)(_cumulative(_cummin, _f32_for_bf16))
register(r.cumlogsumexp_p)(_cumulative(_cumlogsumexp, _accumulate_as))
