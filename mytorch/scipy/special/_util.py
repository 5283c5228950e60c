"""Helpers shared by the modules of mytorch.scipy.special: dtype promotion, constants,
selects and polynomials."""

from mytorch import lax
from mytorch.core import dtypes
from mytorch.numpy._promote import promote_args_inexact
from mytorch.numpy._reduce_util import _bcast, _cast, _full, _isnan  # noqa: F401


def _inexact(name, *args):
    """The arguments promoted to one float dtype and broadcast to one shape."""
    out = promote_args_inexact(name, *args)
    shape = next((a.shape for a in out if a.ndim), ())
    return [_bcast(a, shape) if a.shape != shape else a for a in out]


def _up(x):
    """x in a dtype precise enough to compute in (float16/bfloat16 -> float32)."""
    if x.dtype in (dtypes.float16, dtypes.bfloat16):
        return _cast(x, dtypes.float32, x.weak_type)
    return x


def _like(x, value):
    """An array of x's shape and dtype filled with the Python scalar `value`."""
    return _full(x.shape, value, x.dtype)


def _where(pred, on_true, on_false):
    return lax.select_n(pred, on_false, on_true)


def _poly(t, coeffs):
    """coeffs[0] + coeffs[1] t + ... by Horner's rule."""
    out = _like(t, coeffs[-1])
    for c in reversed(coeffs[:-1]):
        out = lax.add(lax.mul(out, t), _like(t, c))
    return out


def _is_f32(x):
    return x.dtype == dtypes.float32
