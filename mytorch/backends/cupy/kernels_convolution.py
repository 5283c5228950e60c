"""GPU eager kernels of conv_general_dilated and reduce_window_{sum,max,min}: the NumPy
backend's kernels (backends/numpy/convolution.py), which are written for any array module,
run with CuPy's.

Convolution is im2col + GEMM: input dilation and padding in one strided assignment into a
zero buffer, every patch as a `sliding_window_view` (CuPy's `as_strided` view: no copy),
sliced by the strides and the kernel dilation; the patches of all groups copied once into a
(groups, N * positions, I * taps) matrix and contracted with the kernel by one batched
`matmul`: here kernels_dot.matmul (cuBLAS on a GPU, with its accumulation rules).
Half-precision operands stay half on a GPU when cuBLAS accumulates them in float32 (the
products are the same; the CPU casts to float32 first). cuDNN is not used: `cupyx.cudnn`
needs cuDNN's library, which the `gpu` extra does not install, and its algorithms would
change the accumulation order per shape.

reduce_window pads (and base-dilates) with the reduction's identity, then combines the
taps: up to 64 taps as one strided view per tap combined in place, larger windows as one
reduction over the sliding-window view.
"""

import numpy as np

from mytorch.backends.cupy.kernels import register
from mytorch.backends.cupy.kernels_common import any_module
from mytorch.backends.cupy.kernels_dot import half_accumulates_in_f32, matmul
from mytorch.backends.numpy import convolution as cpu
from mytorch.lax.convolution import (
    conv_general_dilated_p,
    reduce_window_max_p,
    reduce_window_min_p,
    reduce_window_sum_p,
)


def _keeps_half(xp, dtype):
    """Whether kernels_dot.matmul takes `dtype` (float16/bfloat16) operands as they are:
    on a GPU where cuBLAS accumulates them in float32."""
    return xp is not np and half_accumulates_in_f32(dtype)


conv_general_dilated = register(conv_general_dilated_p)(
    any_module(cpu.conv_general_dilated_with(matmul, _keeps_half)))
register(reduce_window_sum_p)(any_module(cpu._reduce_window("sum")))
register(reduce_window_max_p)(any_module(cpu._reduce_window("max")))
register(reduce_window_min_p)(any_module(cpu._reduce_window("min")))
