"""`mytorch.extend`: define new primitives outside the library.

    from mytorch import extend as mx

    bias_gelu_p = mx.primitive("bias_gelu")            # bind with bias_gelu_p.bind(x, b)

    @bias_gelu_p.def_abstract_eval                      # shapes and dtypes only
    def _(x, b):
        return mx.ShapedArray(np.broadcast_shapes(x.shape, b.shape), x.dtype)

    mx.def_numpy_kernel(bias_gelu_p, numpy_fn)          # eager and jit on the CPU
    mx.def_jvp(bias_gelu_p, jvp_rule)                   # jvp, and grad by transposition
    mx.def_broadcasting_batching(bias_gelu_p)           # vmap
    mx.def_cuda(bias_gelu_p, source=..., signatures=..., launch=...)   # the GPU backend

After that the primitive works under grad, vjp, jvp, vmap, jit (and their compositions)
like a built-in one. docs/extend.md walks through two complete examples (a fused bias +
GELU with its derivative and CUDA kernel; a non-differentiable top-k index op).

What to define, by use:
    always        def_abstract_eval, def_numpy_kernel (alias: prim.def_impl)
    grad / jvp    def_jvp (its tangent written with mytorch ops, linear in the tangents), or
                  def_vjp (reverse mode only), def_zero_derivative (piecewise constant),
                  def_linear / def_transpose (linear primitives)
    vmap          def_batching, def_broadcasting_batching or def_vectorized_batching
    GPU           def_cuda (CUDA source) or def_gpu_kernel (CuPy/NumPy-generic code);
                  without one the GPU backend runs the NumPy kernel on host copies
Missing rules raise NotImplementedError naming the primitive and the call that adds them.
"""

from mytorch.core.ad_util import UndefinedPrimal, Zero, is_undefined
from mytorch.core.aval import ShapedArray
from mytorch.extend.batching import (
    def_batching, def_broadcasting_batching, def_vectorized_batching, not_mapped,
)
from mytorch.extend.gpu import def_cuda, def_gpu_kernel
from mytorch.extend.primitives import (
    ExtensionPrimitive, def_abstract_eval, def_jvp, def_linear, def_numpy_kernel,
    def_transpose, def_zero_derivative, primitive, registry,
)
from mytorch.extend.vjp import def_vjp

__all__ = [
    "ExtensionPrimitive", "ShapedArray", "UndefinedPrimal", "Zero", "def_abstract_eval",
    "def_batching", "def_broadcasting_batching", "def_cuda", "def_gpu_kernel", "def_jvp",
    "def_linear", "def_numpy_kernel", "def_transpose", "def_vectorized_batching", "def_vjp",
    "def_zero_derivative", "is_undefined", "not_mapped", "primitive", "registry",
]
