"""The Bernoulli numbers B_0..B_n (SciPy's convention B_1 = -1/2)."""

import functools
import math
import operator
from fractions import Fraction

import numpy as np

import mytorch.numpy as mnp
from mytorch.core import dtypes
from mytorch.core.source_info import user_error

_EXACT_UP_TO = 300  # |B_n| exceeds float64's range from n = 260; beyond 300, +-inf


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


def _rounded(v):
    """The rational v rounded to float64 (+-inf past its range)."""
    try:
        return float(v)
    except OverflowError:
        return math.inf if v > 0 else -math.inf


@functools.lru_cache(maxsize=None)
def _values(n):
    """B_0..B_n rounded once to float64 (a fresh array each call from a cached tuple):
    exact rationals up to B_300, and past it B_2k = (-1)^(k+1) inf, B_odd = 0."""
    exact = _exact(min(n, _EXACT_UP_TO))
    out = [_rounded(v) for v in exact]
    for m in range(len(out), n + 1):
        out.append(0.0 if m % 2 else (math.inf if m % 4 == 2 else -math.inf))
    return tuple(out)


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
    with np.errstate(over="ignore"):  # float32 overflows from B_66
        values = np.array(_values(n)).astype(dtypes.default_float())
    return mnp.asarray(values)
