"""NumPy kernels of the reductions, argmax/argmin and cumulative reductions.

float16 and bfloat16 sums and products accumulate in float32 (as XLA's CPU backend does);
bfloat16 is computed in float32 throughout, since ml_dtypes supports few NumPy reductions.
Integer sums and products stay in the operand's dtype and wrap.
"""

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


# ---- reductions over axes ----------------------------------------------------------------
def _arith_reduce(ufunc):
    def kernel(x, *, axes):
        dt = x.dtype
        with np.errstate(all="ignore"):
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
    return np.cumsum(x, axis=axis, dtype=x.dtype)


def _cumprod(x, axis):
    return np.cumprod(x, axis=axis, dtype=x.dtype)


def _cummax(x, axis):
    return np.maximum.accumulate(x, axis=axis)


def _cummin(x, axis):
    return np.minimum.accumulate(x, axis=axis)


def _cumlogsumexp(x, axis):
    # logaddexp(a, b) = max + log1p(exp(-|a - b|)): no overflow, and -inf is its identity
    return np.logaddexp.accumulate(x, axis=axis)


numpy_backend.register(r.cumsum_p)(_cumulative(_cumsum, _accumulate_as))
numpy_backend.register(r.cumprod_p)(_cumulative(_cumprod, _accumulate_as))
numpy_backend.register(r.cummax_p)(_cumulative(_cummax, lambda dt: _F32 if dt == _BF16 else dt))
numpy_backend.register(r.cummin_p)(_cumulative(_cummin, lambda dt: _F32 if dt == _BF16 else dt))
numpy_backend.register(r.cumlogsumexp_p)(_cumulative(_cumlogsumexp, _accumulate_as))
