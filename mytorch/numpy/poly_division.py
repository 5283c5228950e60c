"""NumPy's `polydiv`: polynomial long division of coefficient arrays (highest power
first), traced and differentiable as JAX's: the remainder keeps the dividend's length
unless `trim_leading_zeros`, which needs concrete values."""

import numpy as np

from mytorch.core import dtypes
from mytorch.core.source_info import user_error
from mytorch.errors import ConcretizationTypeError
from mytorch.numpy._promote import promote_dtypes_inexact
from mytorch.numpy.creation import asarray, zeros
from mytorch.numpy.joining import stack

__all__ = ["polydiv"]


def polydiv(u, v, *, trim_leading_zeros=False):
    """The quotient and remainder of the polynomial `u` divided by `v`: `u = q v + r`.

    Args:
      u: the dividend's coefficients, 1-D, highest power first.
      v: the divisor's coefficients, 1-D, highest power first; `v[0]` is the leading
        coefficient (not trimmed: a zero gives inf/nan, as NumPy).
      trim_leading_zeros: drop the remainder's leading coefficients below sqrt(eps) of its
        dtype (NumPy always trims it; JAX does only when asked). Needs concrete values.

    Returns:
      (q, r): q of length `max(len(u) - len(v) + 1, 1)` and r of length `len(u)` (at
      least 1 when trimmed), of the promoted float or complex dtype.

    >>> q, r = mnp.polydiv(mnp.array([1.0, 2.0, 3.0]), mnp.array([1.0, 1.0]))
    >>> q.tolist(), r.tolist()
    ([1.0, 1.0], [0.0, 0.0, 2.0])
    """
    a, b = promote_dtypes_inexact("polydiv", asarray(u), asarray(v))
    for what, p in (("u", a), ("v", b)):
        if p.ndim != 1 or p.shape[0] == 0:
            raise user_error(ValueError, f"polydiv: {what} must be a non-empty 1-D coefficient "
                                         f"array, got {p.aval.str_short()}")
    m, n = a.shape[0] - 1, b.shape[0] - 1
    scale = 1 / b[0]
    quotient = []
    for k in range(m - n + 1):  # one step of long division per quotient coefficient
        d = scale * a[k]
        quotient.append(d)
        a = a.at[k:k + n + 1].add(-d * b)
    q = zeros(1, a.dtype) if not quotient else stack(quotient)
    if trim_leading_zeros:
        a = _trim(a)
    return q, a


def _trim(r):
    """r without its leading entries below sqrt(eps) (at least one entry kept)."""
    try:
        values = np.asarray(r)
    except TypeError:
        raise user_error(
            ConcretizationTypeError,
            f"polydiv: trim_leading_zeros=True needs concrete coefficients (the remainder's "
            f"length depends on them), but got a traced {r.aval.str_short()}. Use "
            f"trim_leading_zeros=False under jit, vmap or grad.") from None
    tol = np.sqrt(np.finfo(dtypes.real_dtype(r.dtype)).eps)
    first = 0
    while first < values.shape[0] - 1 and abs(values[first]) < tol:
        first += 1
    return r[first:]
