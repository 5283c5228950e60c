"""NumPy's `i0`: the modified Bessel function of the first kind of order 0, elementwise.

It is `mt.scipy.special.i0` (power series, then the asymptotic series beyond |x| = 30;
derivative i1 through a custom JVP), restricted as NumPy restricts it: complex input
raises TypeError.
"""

from mytorch.core import dtypes
from mytorch.core.source_info import user_error
from mytorch.numpy.creation import asarray

__all__ = ["i0"]


def i0(x):
    """The modified Bessel function I_0(x), elementwise (+inf once e^|x| overflows).

    Args:
      x: a real array-like; integers and bools become the default float.

    Returns:
      An array of x's shape and float dtype. Its derivative is I_1(x).

    Raises:
      TypeError: for complex input, as NumPy.

    >>> round(float(mnp.i0(1.0)), 5)
    1.26607
    """
    # the series lives with the other Bessel functions; scipy builds on this package, so
    # it is imported when first used
    from mytorch.scipy.special import i0 as special_i0  # noqa: PLC0415

    v = asarray(x)
    if dtypes.is_complex(v.dtype):
        raise user_error(TypeError, f"i0: complex values are not supported (as NumPy), got "
                                    f"{v.aval.str_short()}")
    return special_i0(v)
