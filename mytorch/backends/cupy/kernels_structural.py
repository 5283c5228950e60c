"""GPU eager kernels of the structural primitives (mytorch/lax/structural.py) and of the
interpreters' own `zeros`, `add_any` and `name`.

The structural ones are backends/numpy/structural.py's kernels, written for any array
module, registered with the operands' (reshape keeps a C-ordered copy of its own). Every
kernel returns a fresh C-ordered buffer, never a view of an operand (compiled code may later
update a dead or donated buffer in place). CuPy on a GPU, NumPy in the tests.
"""

import numpy as np

from mytorch.backends.cupy.kernels import register, xp_of
from mytorch.backends.cupy.kernels_common import BF16, F32, any_module, creation_module
from mytorch.backends.numpy import structural as cpu
from mytorch.checkpoint import name_p
from mytorch.core.ad_util import add_any_p, zeros_p
from mytorch.lax import elementwise as ew
from mytorch.lax import structural as s


@register(s.reshape_p)
def _reshape(x, *, new_sizes, dimensions):
    """As the NumPy kernel, but always a C-ordered copy (NumPy's keeps the view's order)."""
    xp = xp_of(x)
    if dimensions is not None:
        x = xp.transpose(x, dimensions)
    return xp.reshape(x, new_sizes).copy()


for _prim, _kernel in [(s.broadcast_in_dim_p, cpu._broadcast_in_dim),
                       (s.squeeze_p, cpu._squeeze), (s.transpose_p, cpu._transpose),
                       (s.rev_p, cpu._rev), (s.pad_p, cpu._pad),
                       (s.concatenate_p, cpu._concatenate)]:
    register(_prim)(any_module(_kernel))
register(s.slice_p)(cpu._slice)  # indexing only: the same for every array module


@register(s.iota_p)
def _iota(**params):
    return cpu._iota(xp=creation_module(), **params)  # no operand to take the module from


@register(zeros_p)
def _zeros(*, shape, dtype, weak_type):
    return creation_module().zeros(shape, dtype)


@register(add_any_p)
def _add_any(x, y):
    xp = xp_of(x, y)
    with np.errstate(all="ignore"):  # (NumPy's flag; CuPy never warns)
        if x.dtype == BF16:  # ml_dtypes adds in float32 and rounds once: the same here
            return (x.astype(F32) + y.astype(F32)).astype(BF16)
        return xp.add(x, y)


@register(name_p)
def _name(x, *, name):
    return x.copy()  # a copy, as on the CPU: compiled code may recycle the operand


@register(ew.bitcast_convert_type_p)
def _bitcast(x, *, new_dtype):
    """The bits of `x` as `new_dtype`: a copy of the contiguous buffer viewed as
    `new_dtype` (results never share an operand's buffer), with a trailing axis of the
    width ratio added (narrower dtype) or removed (wider), as the NumPy kernel. Every width
    change and dtype works, complex128 included."""
    xp = xp_of(x)
    new_dtype = np.dtype(new_dtype)
    view = xp.array(x, order="C", copy=True).view(new_dtype)
    if new_dtype.itemsize < x.dtype.itemsize:
        return view.reshape(*x.shape, x.dtype.itemsize // new_dtype.itemsize)
    if new_dtype.itemsize > x.dtype.itemsize:
        return view.reshape(x.shape[:-1])
    return view.reshape(x.shape)
