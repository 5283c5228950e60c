"""Argument handling shared by the real-only special functions: promotion to one real
float dtype (complex operands are an error naming the function, as in JAX)."""

from mytorch.core import dtypes
from mytorch.core.source_info import user_error
from mytorch.scipy.special._util import _inexact


def real_args(name, *args):
    """The arguments promoted to one real float dtype and broadcast to one shape.

    Raises:
      TypeError: an argument is complex (the function is defined on reals only).
    """
    out = _inexact(name, *args)
    if dtypes.is_complex(out[0].dtype):
        shapes = ", ".join(a.aval.str_short() for a in out)
        raise user_error(TypeError, f"{name}: needs real floating-point operands, got "
                                    f"{shapes} (complex values are not supported)")
    return out
