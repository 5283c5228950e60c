"""GPU eager kernel of dot_general, and the batched matrix product convolution shares.

As on the CPU (backends/numpy/dot.py, whose kernel `dot_general_with(matmul)` this
registers with the matmul below), every dimension-number
pattern is one `matmul` of 3-D (or 2-D) operands after transposes: on a GPU, CuPy's matmul,
which calls cuBLAS (`cublasGemmEx`/strided-batched GEMM).

Accumulation, as the NumPy kernel's:
- float16 and bfloat16 accumulate in float32 and round once. CuPy picks cuBLAS's compute
  type per dtype from `cupy._core._routines_linalg.get_compute_type`: by default
  (COMPUTE_TYPE_DEFAULT, also PEDANTIC and FP32) a half-precision GEMM runs with
  CUBLAS_COMPUTE_32F, float32 accumulation on tensor cores, so half operands go to cuBLAS
  as they are. Where a user set a half compute type (COMPUTE_TYPE_FP16/BF16), the operands
  are cast to float32 first instead. Other operand/result dtype pairs (float16 operands
  with a float32 result) are cast to the compute dtype first.
- float32 is float32 unless the user opted into TF32 (`CUPY_TF32=1`): then cuBLAS
  rounds the operands to TF32, as the user asked; the NumPy backend never does.
- integers: one int64 matmul, wrapped to the output type (XLA's two's complement); exact
  whenever the NumPy kernel's float64 shortcut is, so the results are equal. bool: OR of
  ANDs, as a float32 count > 0. complex64/complex128: cgemm/zgemm.
"""

import numpy as np

from mytorch.backends.cupy.kernels import register, xp_of
from mytorch.backends.cupy.kernels_common import BF16, F16, F32, F64
from mytorch.backends.numpy.dot import dot_general_with
from mytorch.lax.dot import dot_general_p

_F32_COMPUTE = ("COMPUTE_TYPE_DEFAULT", "COMPUTE_TYPE_PEDANTIC", "COMPUTE_TYPE_FP32")


def half_accumulates_in_f32(dtype):
    """Whether CuPy's matmul of two `dtype` (float16 or bfloat16) operands accumulates in
    float32 (cuBLAS's compute type for the dtype; True on the default setting)."""
    from cupy._core import _routines_linalg as rl

    try:
        kind = rl.get_compute_type(np.dtype(dtype))
    except TypeError:  # a CuPy without this dtype in its GEMM table
        return False
    return any(kind == getattr(rl, name, None) for name in _F32_COMPUTE)


def matmul(a, b, out_dtype):
    """`matmul(a, b)` of (B, M, K) and (B, K, N) arrays (or 2-D) of any array module,
    computed with `out_dtype`'s accumulation (module docstring) and returned as
    `out_dtype`."""
    xp = xp_of(a, b)
    out_dtype = np.dtype(out_dtype)
    if out_dtype == np.bool_:
        # OR of ANDs: count the true products in float32 (a count of 1 stays > 0)
        return xp.matmul(a.astype(F32), b.astype(F32)) > 0
    if out_dtype.kind == "c":
        return xp.matmul(a.astype(out_dtype, copy=False), b.astype(out_dtype, copy=False))
    if out_dtype.kind == "f" or out_dtype == BF16:
        if (xp is not np and out_dtype in (F16, BF16) and a.dtype == b.dtype == out_dtype
                and half_accumulates_in_f32(out_dtype)):
            try:
                return xp.matmul(a, b)  # cuBLAS: half in and out, float32 accumulation
            except TypeError:  # a CuPy whose matmul lacks the dtype: cast below
                pass
        ct = F64 if out_dtype == F64 else F32
        out = xp.matmul(a.astype(ct, copy=False), b.astype(ct, copy=False))
        return out.astype(out_dtype, copy=False)
    # integers: exact modulo 2**64, then wrapped to the output type
    out = xp.matmul(a.astype(np.int64), b.astype(np.int64))
    return out.astype(out_dtype)


dot_general = register(dot_general_p)(dot_general_with(matmul))
