"""NumPy kernels of the reductions, argmax/argmin and cumulative reductions.

float16 and bfloat16 sums and products accumulate in float32 (as XLA's CPU backend does);
bfloat16 is computed in float32 throughout, since ml_dtypes supports few NumPy reductions.
Integer sums and products stay in the operand's dtype and wrap.

Float sums keep rounding error growing like log n, as NumPy's pairwise summation does along
a contiguous axis: a sum along any other axis, and every running sum or product, goes
through blocks of `_BLOCK` elements whose partial results are combined the same way again.
"""

import math

import ml_dtypes
import numpy as np

from mytorch.backends.numpy import numpy_backend
from mytorch.lax import reductions as r

_BF16 = np.dtype(ml_dtypes.bfloat16)
_F16 = np.dtype(np.float16)
_F32 = np.dtype(np.float32)


def _accumulate_as(dt):
    """The dtype a sum or product of `dt` accumulates in."""
    return _F32 if dt in (_F16, _BF16) else dt


def _f32_if_bf16(x):
    return x.astype(_F32) if x.dtype == _BF16 else x


# ---- blocked sums and scans: error growing like log n -----------------------------------
_BLOCK = 128


def _runs(axes):
    """Sorted axes grouped into runs of consecutive axes: (0, 1, 3) -> [[0, 1], [3]]."""
    runs = []
    for a in sorted(axes):
        if runs and runs[-1][-1] == a - 1:
            runs[-1].append(a)
        else:
            runs.append([a])
    return runs


def _sum_middle(x3, dtype):
    """Sum of x3 (p, n, q) over its middle axis, keeping it: (p, 1, q). NumPy adds along a
    strided axis one row after another (error growing like n); blocks of `_BLOCK` rows are
    summed first, then their sums, and so on."""
    p, n, q = x3.shape
    while n > _BLOCK:
        k = n // _BLOCK
        m = k * _BLOCK
        part = np.add.reduce(x3[:, :m].reshape(p, k, _BLOCK, q), axis=2, dtype=dtype)
        if m < n:  # the short tail joins the last block
            part[:, -1:] += np.add.reduce(x3[:, m:], axis=1, dtype=dtype, keepdims=True)
        x3, n = part, k
    return np.add.reduce(x3, axis=1, dtype=dtype, keepdims=True)


def accurate_sum(x, axes, dtype):
    """`np.add.reduce(x, axis=axes, dtype=dtype)` for floats with the rounding error of a
    pairwise sum along every axis (NumPy's own is pairwise along a contiguous axis only)."""
    axes = tuple(sorted(axes))
    if not axes or x.dtype.kind not in "fc":
        return np.add.reduce(x, axis=axes, dtype=dtype)
    shape = x.shape
    for run in reversed(_runs(axes)):
        n = math.prod(x.shape[a] for a in run)
        if n <= 2 * _BLOCK or (run[-1] == x.ndim - 1 and x.flags.c_contiguous):
            x = np.add.reduce(x, axis=tuple(run), dtype=dtype, keepdims=True)
            continue
        p, q = math.prod(x.shape[:run[0]]), math.prod(x.shape[run[-1] + 1:])
        kept = tuple(1 if i in run else d for i, d in enumerate(x.shape))
        x = _sum_middle(x.reshape(p, n, q), dtype).reshape(kept)
    return x.reshape(tuple(d for i, d in enumerate(shape) if i not in axes))


def accurate_scan(ufunc, x, axis):
    """`ufunc.accumulate(x, axis)` (add, multiply, logaddexp) in blocks: each block is
    accumulated alone, the blocks' totals are scanned the same way, and each block is then
    combined with the total before it, so the error grows like log n instead of n."""
    n = x.shape[axis]
    if n <= 2 * _BLOCK or x.dtype.kind not in "fc":
        return ufunc.accumulate(x, axis=axis, dtype=x.dtype)
    shape = x.shape
    p, q = math.prod(shape[:axis]), math.prod(shape[axis + 1:])
    x3 = np.ascontiguousarray(x).reshape(p, n, q)
    k = n // _BLOCK
    m = k * _BLOCK
    out = np.empty_like(x3)
    head = out[:, :m].reshape(p, k, _BLOCK, q)  # a view of out
    ufunc.accumulate(x3[:, :m].reshape(p, k, _BLOCK, q), axis=2, out=head)
    totals = accurate_scan(ufunc, np.ascontiguousarray(head[:, :, -1, :]), 1)
    ufunc(head[:, 1:], totals[:, :-1, None, :], out=head[:, 1:])
    if m < n:
        ufunc.accumulate(x3[:, m:], axis=1, out=out[:, m:])
        ufunc(out[:, m:], totals[:, -1:, :], out=out[:, m:])
    return out.reshape(shape)


# ---- reductions over axes ----------------------------------------------------------------
def _arith_reduce(ufunc):
    def kernel(x, *, axes):
        dt = x.dtype
        with np.errstate(all="ignore"):
            if ufunc is np.add:
                out = accurate_sum(x, axes, _accumulate_as(dt))
            else:
                out = ufunc.reduce(x, axis=axes, dtype=_accumulate_as(dt))
            return np.asarray(out).astype(dt, copy=False)

    kernel.__name__ = f"reduce_{ufunc.__name__}"
    return kernel


def _identity(dt, largest):
    """XLA's identity of max (largest=False) or min (largest=True) for dtype `dt`."""
    if dt == np.bool_:
        return bool(largest)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return int(info.max if largest else info.min)
    return np.inf if largest else -np.inf


def _choose_reduce(ufunc, largest):
    def kernel(x, *, axes):
        dt = x.dtype
        with np.errstate(all="ignore"):
            out = ufunc.reduce(_f32_if_bf16(x), axis=axes, initial=_identity(dt, largest))
        return np.asarray(out).astype(dt, copy=False)

    kernel.__name__ = f"reduce_{ufunc.__name__}"
    return kernel


def _logical_reduce(bool_ufunc, int_ufunc):
    # the bitwise ufuncs know their identities (all ones for AND, 0 for OR and XOR)
    def kernel(x, *, axes):
        ufunc = bool_ufunc if x.dtype == np.bool_ else int_ufunc
        return np.asarray(ufunc.reduce(x, axis=axes)).astype(x.dtype, copy=False)

    kernel.__name__ = f"reduce_{int_ufunc.__name__}"
    return kernel


numpy_backend.register(r.reduce_sum_p)(_arith_reduce(np.add))
numpy_backend.register(r.reduce_prod_p)(_arith_reduce(np.multiply))
numpy_backend.register(r.reduce_max_p)(_choose_reduce(np.maximum, largest=False))
numpy_backend.register(r.reduce_min_p)(_choose_reduce(np.minimum, largest=True))
numpy_backend.register(r.reduce_and_p)(_logical_reduce(np.logical_and, np.bitwise_and))
numpy_backend.register(r.reduce_or_p)(_logical_reduce(np.logical_or, np.bitwise_or))
numpy_backend.register(r.reduce_xor_p)(_logical_reduce(np.logical_xor, np.bitwise_xor))


# ---- argmax / argmin: NumPy's convention (first NaN wins, first index on ties) -----------
def _arg_reduce(np_fn):
    def kernel(x, *, axes, index_dtype):
        (axis,) = axes
        return np.asarray(np_fn(_f32_if_bf16(x), axis=axis)).astype(index_dtype)

    kernel.__name__ = np_fn.__name__
    return kernel


numpy_backend.register(r.argmax_p)(_arg_reduce(np.argmax))
numpy_backend.register(r.argmin_p)(_arg_reduce(np.argmin))


# ---- cumulative reductions ---------------------------------------------------------------
def _cumulative(fn, upcast):
    """Kernel of a cumulative reduction `fn(x, axis)`; `upcast(dtype)` is the dtype to
    compute in. `reverse` flips the axis before and after."""

    def kernel(x, *, axis, reverse):
        dt = x.dtype
        work = upcast(dt)
        if reverse:
            x = np.flip(x, axis)
        with np.errstate(all="ignore"):
            out = fn(x.astype(work, copy=False), axis)
            if reverse:
                out = np.flip(out, axis)
            return np.ascontiguousarray(out).astype(dt, copy=False)

    kernel.__name__ = getattr(fn, "__name__", "cumulative")
    return kernel


def _cumsum(x, axis):
    return accurate_scan(np.add, x, axis)


def _cumprod(x, axis):
    return accurate_scan(np.multiply, x, axis)


def _cummax(x, axis):
    return np.maximum.accumulate(x, axis=axis)


def _cummin(x, axis):
    return np.minimum.accumulate(x, axis=axis)


def _cumlogsumexp(x, axis):
    # logaddexp(a, b) = max + log1p(exp(-|a - b|)): no overflow, and -inf is its identity
    return accurate_scan(np.logaddexp, x, axis)


numpy_backend.register(r.cumsum_p)(_cumulative(_cumsum, _accumulate_as))
numpy_backend.register(r.cumprod_p)(_cumulative(_cumprod, _accumulate_as))
numpy_backend.register(r.cummax_p)(_cumulative(_cummax, lambda dt: _F32 if dt == _BF16 else dt))
numpy_backend.register(r.cummin_p)(_cumulative(_cummin, lambda dt: _F32 if dt == _BF16 else dt))
numpy_backend.register(r.cumlogsumexp_p)(_cumulative(_cumlogsumexp, _accumulate_as))
