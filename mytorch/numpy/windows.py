"""Window functions of a static length M (NumPy's `bartlett`, `blackman`, `hamming`,
`hanning`, `kaiser`), as arrays of the default float dtype.

The four fixed windows hold no traced input: they are NumPy's own float64 formulas,
rounded once to the default float. Kaiser's `beta` may be traced (and differentiated):
its window is `i0(beta sqrt(1 - ((n - a) / a)^2)) / i0(beta)` with `a = (M - 1) / 2`.
"""

import numpy as np

from mytorch import lax
from mytorch.core import dtypes
from mytorch.core.source_info import user_error
from mytorch.errors import ConcretizationTypeError
from mytorch.numpy.bessel import i0
from mytorch.numpy.creation import asarray

__all__ = ["bartlett", "blackman", "hamming", "hanning", "kaiser"]


def _length(name, M):
    """The window length as a Python int (NumPy and JAX truncate a float M)."""
    try:
        return int(M)
    except ConcretizationTypeError:
        raise user_error(
            ConcretizationTypeError,
            f"{name}: the window length M must be static (it is the result's shape), but got "
            f"a traced value. Pass a Python int, or mark the argument static with "
            f"static_argnums.") from None
    except TypeError:
        raise user_error(TypeError, f"{name}: the window length M must be an int, got "
                                    f"{type(M).__name__}") from None


def _fixed(name, M, formula):
    """formula(n, M) over n = 0..M-1 in float64, as the default float; M <= 0 gives an empty
    window and M == 1 a single 1, as NumPy."""
    M = _length(name, M)
    if M < 1:
        values = np.zeros(0)
    elif M == 1:
        values = np.ones(1)
    else:
        values = formula(np.arange(M, dtype=np.float64), M)
    return asarray(values, dtypes.default_float())


def bartlett(M):
    """The Bartlett (triangular) window of M points: `1 - |2n - M + 1| / (M - 1)`.

    Args:
      M: the number of points (a static int; M <= 0 gives an empty array).

    Returns:
      A (max(M, 0),) array of the default float dtype, peak 1 in the middle.

    >>> mnp.bartlett(5).tolist()
    [0.0, 0.5, 1.0, 0.5, 0.0]
    """
    return _fixed("bartlett", M, lambda n, M: 1 - np.abs(2 * n - M + 1) / (M - 1))


def blackman(M):
    """The Blackman window of M points:
    `0.42 - 0.5 cos(2 pi n / (M - 1)) + 0.08 cos(4 pi n / (M - 1))`.

    Returns:
      A (max(M, 0),) array of the default float dtype.
    """
    return _fixed("blackman", M, lambda n, M: 0.42 - 0.5 * np.cos(2 * np.pi * n / (M - 1))
                  + 0.08 * np.cos(4 * np.pi * n / (M - 1)))


def hamming(M):
    """The Hamming window of M points: `0.54 - 0.46 cos(2 pi n / (M - 1))`.

    Returns:
      A (max(M, 0),) array of the default float dtype.
    """
    return _fixed("hamming", M, lambda n, M: 0.54 - 0.46 * np.cos(2 * np.pi * n / (M - 1)))


def hanning(M):
    """The Hann window of M points: `0.5 - 0.5 cos(2 pi n / (M - 1))`.

    Returns:
      A (max(M, 0),) array of the default float dtype.
    """
    return _fixed("hanning", M, lambda n, M: 0.5 - 0.5 * np.cos(2 * np.pi * n / (M - 1)))


def kaiser(M, beta):
    """The Kaiser window of M points and shape `beta`:
    `i0(beta sqrt(1 - ((n - a) / a)^2)) / i0(beta)`, `a = (M - 1) / 2`.

    Args:
      M: the number of points (a static int; M <= 0 gives an empty array).
      beta: the shape parameter, a real scalar; may be traced, and the window
        differentiates in it.

    Returns:
      A (max(M, 0),) array of the default float dtype (beta is converted to it).
    """
    M = _length("kaiser", M)
    dt = dtypes.default_float()
    b = asarray(beta)
    if b.ndim != 0 or dtypes.is_complex(b.dtype):
        raise user_error(TypeError, f"kaiser: beta must be a real scalar, got "
                                    f"{b.aval.str_short()}")
    b = lax.convert_element_type(b, dt)
    if M < 2:
        return asarray(np.ones(max(M, 0)), dt)
    a = (M - 1) / 2
    ratio = asarray(np.sqrt(np.maximum(1 - ((np.arange(M) - a) / a) ** 2, 0.0)), dt)
    return i0(ratio * b) / i0(b)
