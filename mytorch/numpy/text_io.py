"""Arrays read from bytes and text in memory: `frombuffer` and `fromstring`, NumPy's own
readers followed by `mnp.asarray` (so 64-bit values narrow without x64). Files are read
with NumPy (docs/numpy.md, "Left out, and why")."""

import numpy as np

from mytorch.core import dtypes
from mytorch.core.source_info import user_error
from mytorch.numpy.creation import asarray

__all__ = ["frombuffer", "fromstring"]


def _numpy_dtype(dtype):
    """The dtype NumPy reads with: Python's `float` is float64 here, as in NumPy, whatever
    the default float (the values are converted afterwards)."""
    try:
        return np.dtype(dtype)
    except TypeError:
        return dtypes.to_dtype(dtype)


def frombuffer(buffer, dtype=float, count=-1, offset=0):
    """The items of `buffer` (bytes, bytearray, memoryview or any buffer) as a 1-D array.

    Args:
      buffer: the bytes to interpret.
      dtype: the items' type, as NumPy reads them (Python `float` is float64).
      count: how many items (-1: all of them).
      offset: the first byte to read.

    Returns:
      A 1-D array (64-bit types narrow without x64, as every conversion does).

    >>> mnp.frombuffer(b"\\x01\\x02", dtype=mnp.uint8).tolist()
    [1, 2]
    """
    try:
        values = np.frombuffer(buffer, dtype=_numpy_dtype(dtype), count=count, offset=offset)
    except (ValueError, TypeError) as e:
        raise user_error(type(e), f"frombuffer: {e}") from None
    return asarray(values)


def fromstring(string, dtype=float, count=-1, *, sep):
    """The numbers written in `string`, separated by `sep`, as a 1-D array.

    Args:
      string: the text (str or bytes).
      dtype: the numbers' type (Python `float` is float64, narrowed without x64).
      count: how many numbers (-1: all of them).
      sep: the separator (any whitespace matches whitespace); required, as NumPy 2 has
        no binary mode: use `frombuffer` for bytes.

    >>> mnp.fromstring("1 2 3", dtype=int, sep=" ").tolist()
    [1, 2, 3]
    """
    if sep == "":
        raise user_error(ValueError, "fromstring: sep='' (the binary mode) is removed in "
                                     "NumPy 2; use frombuffer to read bytes")
    try:
        values = np.fromstring(string, dtype=_numpy_dtype(dtype), count=count, sep=sep)
    except (ValueError, TypeError) as e:
        raise user_error(type(e), f"fromstring: {e}") from None
    return asarray(values)
