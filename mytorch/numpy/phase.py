"""NumPy's `unwrap`: phases made continuous by adding multiples of the period.

Traced (`discont` and `period` may be arrays), differentiable (the corrections are
piecewise constant, so the derivative in `p` is the identity) and batchable.
"""

import math

from mytorch import lax
from mytorch.core import dtypes
from mytorch.core.source_info import user_error
from mytorch.numpy._manip_util import _axis
from mytorch.numpy._promote import promote_dtypes_inexact
from mytorch.numpy.arithmetic import absolute, remainder
from mytorch.numpy.comparisons import where
from mytorch.numpy.creation import asarray
from mytorch.numpy.joining import concatenate
from mytorch.numpy.reductions import cumsum, diff

__all__ = ["unwrap"]


def unwrap(p, discont=None, axis=-1, *, period=2 * math.pi):
    """`p` with each jump larger than `max(discont, period / 2)` along `axis` replaced by
    its complement modulo `period` (NumPy's rule, boundary ties included).

    Args:
      p: a real array-like, at least 1-D.
      discont: the largest jump left alone (default and minimum `period / 2`).
      axis: the (static) axis along which to unwrap.
      period: the period of the values (default 2 pi).

    Returns:
      An array of p's shape and float dtype (integers become the default float, also
      where NumPy keeps an integer `p` with an integer `period`).

    >>> [round(v, 4) for v in mnp.unwrap(mnp.array([0.0, 3.0, 6.5])).tolist()]
    [0.0, 3.0, 0.2168]
    """
    x = asarray(p)
    if dtypes.is_complex(x.dtype):
        raise user_error(TypeError, f"unwrap: complex input is not supported (as NumPy and "
                                    f"JAX), got {x.aval.str_short()}")
    if x.ndim == 0:
        raise user_error(ValueError, f"unwrap: p must be at least 1-D, got {x.aval.str_short()}")
    ax = _axis("unwrap", axis, x)
    (x,) = promote_dtypes_inexact("unwrap", x)
    if x.shape[ax] == 0:
        return x
    interval = period / 2
    if discont is None:
        discont = interval
    dd = diff(x, axis=ax)
    ddmod = remainder(dd + interval, period) - interval
    # a jump of exactly +period/2 keeps its sign (mod maps it to -period/2)
    ddmod = where((ddmod == -interval) & (dd > 0), interval, ddmod)
    correction = where(absolute(dd) < discont, 0, ddmod - dd)
    n = x.shape[ax]
    first = lax.slice_in_dim(x, 0, 1, axis=ax)
    rest = lax.slice_in_dim(x, 1, n, axis=ax) + cumsum(correction, axis=ax)
    return concatenate([first, rest.astype(x.dtype)], axis=ax)
