"""NumPy's `bitwise_count`: the number of 1 bits of each integer's absolute value."""

from mytorch import lax
from mytorch.core import dtypes
from mytorch.core.source_info import user_error
from mytorch.numpy.creation import asarray

__all__ = ["bitwise_count"]


def bitwise_count(x, /):
    """The number of 1 bits in `|x|`, elementwise, as uint8 (NumPy's dtype; JAX's too).

    Args:
      x: an integer or bool array-like. Negative values count the bits of their magnitude
        (`bitwise_count(-1)` is 1), as NumPy; the most negative value of a signed type
        counts 1.

    Returns:
      A uint8 array of x's shape.

    >>> mnp.bitwise_count(mnp.array([0, 7, -8, 255])).tolist()
    [0, 3, 1, 8]
    """
    v = asarray(x)
    if dtypes.is_bool(v.dtype):
        return lax.convert_element_type(v, dtypes.uint8)
    if not dtypes.is_int(v.dtype):
        raise user_error(TypeError, f"bitwise_count: expected an integer or bool array, got "
                                    f"{v.aval.str_short()}")
    if dtypes.is_signed_int(v.dtype):
        v = lax.abs(v)  # wraps at the most negative value, whose bit pattern has one 1
    return lax.convert_element_type(lax.population_count(v), dtypes.uint8)
