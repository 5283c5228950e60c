"""GPU eager kernels of the attention primitives (mytorch/lax/attention.py): the NumPy
backend's blocked kernels (backends/numpy/attention.py), which are written for any array
module, run with CuPy's. On a GPU every block is a few cuBLAS batched matmuls and CuPy
elementwise kernels; the numbers are the NumPy kernel's up to the GEMMs' summation order.
The masked-row checks read one flag to the host per block.

The algorithm (online softmax forward, flash backward, the tangent's three running sums),
the grouped-query layout [B, K, T·G, H], the static causal/window block skipping and JAX's
fully-masked-row semantics are described in backends/numpy/attention.py. float16/bfloat16
inputs are computed in float32 (float64 stays float64).
"""

from mytorch.backends.cupy.kernels import register
from mytorch.backends.cupy.kernels_common import any_module
from mytorch.backends.numpy import attention as cpu
from mytorch.lax.attention import (
    dot_product_attention_bwd_p,
    dot_product_attention_p,
    dot_product_attention_tangent_p,
)

register(dot_product_attention_p)(any_module(cpu._attention))
register(dot_product_attention_bwd_p)(any_module(cpu._attention_bwd))
register(dot_product_attention_tangent_p)(any_module(cpu._attention_tangent))
