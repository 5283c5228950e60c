"""The Bernoulli numbers B_0..B_n (SciPy's convention B_1 = -1/2)."""

import math
import operator
from fractions import Fraction

import numpy as np

import mytorch.numpy as mnp
from mytorch.core import dtypes
from mytorch.core.source_info import user_error

_EXACT_UP_TO = 200  # exact rationals up to here (a few ms); beyond, B_n overflows float64


def _exact(n):
    """B_0..B_n as exact rationals (Akiyama-Tanigawa, B_1 = -1/2)."""
    a, out = [Fraction(0)] * (n + 1), []
    for m in range(n + 1):
        a[m] = Fraction(1, m + 1)
        for j in range(m, 0, -1):
            a[j - 1] = j * (a[j - 1] - a[j])
        out.append(a[0])
    if n >= 1:
        out[1] = Fraction(-1, 2)
    return out


def _values(n):
    """B_0..B_n in float64: rounded from exact rationals, and past n = 200 (where |B_n|
    exceeds about 1e215) by B_2k = (-1)^(k+1) 2 (2k)! zeta(2k) / (2 pi)^(2k) in logs."""
    exact = _exact(min(n, _EXACT_UP_TO))
    out = np.zeros(n + 1)
    with np.errstate(over="ignore"):
        out[: len(exact)] = [float(v) if abs(v) < 1e308 else math.inf for v in exact]
        for m in range(_EXACT_UP_TO + 2, n + 1, 2):
            # zeta(m) = 1 to float64 precision here
            log_mag = math.log(2) + math.lgamma(m + 1) - m * math.log(2 * math.pi)
            mag = math.exp(log_mag) if log_mag < 709.78 else math.inf
            out[m] = mag if m % 4 == 2 else -mag
    return out


def bernoulli(n):
    """The Bernoulli numbers B_0, B_1, ..., B_n (B_1 = -1/2, as SciPy and JAX).

    Args:
      n: a non-negative Python int (static: it sets the output's length).

    Returns:
      A float array of shape (n + 1,) in the default float dtype (+-inf where a number
      overflows it: from B_66 in float32, B_262 in float64).

    Raises:
      TypeError: n is not an integer (a traced value included).
      ValueError: n is negative.

    >>> bernoulli(4)
    Array([ 1.        , -0.5       ,  0.16666667,  0.        , -0.03333334], dtype=float32)
    """
    try:
        n = operator.index(n)
    except TypeError:
        raise user_error(TypeError, "bernoulli: n must be a Python int (it sets the "
                                    f"output's length), got {type(n).__name__}") from None
    if n < 0:
        raise user_error(ValueError, f"bernoulli: n must be >= 0, got {n}")
    with np.errstate(over="ignore"):
        values = _values(n).astype(dtypes.default_float())
    return mnp.asarray(values)
