"""Applying a function over axes: apply_along_axis (built on vmap, so it traces `func1d`
once) and apply_over_axes."""

import operator

from mytorch.core.source_info import user_error
from mytorch.errors import AxisError
from mytorch.numpy.creation import asarray
from mytorch.numpy.shapes import expand_dims

__all__ = ["apply_along_axis", "apply_over_axes"]


def apply_along_axis(func1d, axis, arr, *args, **kwargs):
    """`func1d(v, *args, **kwargs)` for every 1-D slice `v` of `arr` along `axis`.

    The result's shape is arr's with `axis` replaced by the shape of func1d's result (which
    may have any rank), as NumPy. func1d is traced once and vectorised with vmap.
    """
    from mytorch.vectorize import vmap  # noqa: PLC0415  (the transformation layer)

    x = asarray(arr)
    if x.ndim == 0:
        raise ValueError("apply_along_axis: arr must have at least one dimension")
    axis = operator.index(axis)
    if not -x.ndim <= axis < x.ndim:
        raise user_error(AxisError, f"apply_along_axis: axis {axis} is out of bounds for "
                                    f"{x.aval.str_short()}")
    axis %= x.ndim
    f = lambda v: func1d(v, *args, **kwargs)  # noqa: E731
    for i in range(1, x.ndim - axis):  # axes after `axis`, innermost first
        f = vmap(f, in_axes=-1, out_axes=-1)
    for _ in range(axis):  # axes before `axis`
        f = vmap(f, in_axes=0, out_axes=0)
    return f(x)


def apply_over_axes(func, a, axes):
    """Apply `func(a, axis)` for each axis in `axes` in turn; a result that lost the axis
    gets it back with length 1, so the rank is kept (NumPy's rule)."""
    x = asarray(a)
    for ax in [axes] if isinstance(axes, int) else axes:
        y = asarray(func(x, ax))
        if y.ndim == x.ndim - 1:
            y = expand_dims(y, ax)
        elif y.ndim != x.ndim:
            raise ValueError(f"apply_over_axes: func must return an array of rank {x.ndim} "
                             f"or {x.ndim - 1}, got {y.aval.str_short()}")
        x = y
    return x


