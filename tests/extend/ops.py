"""The primitives the extension tests define with `mytorch.extend` (the same as the worked
examples in docs/extend.md), and their NumPy references.

    bias_gelu(x, b)          GELU (tanh form) of x + b, NumPy broadcasting; JVP, broadcasting
                             batching, NumPy kernel, CUDA kernel (f32, f64)
    top_k_indices(x, k)      int32 [..., k]: positions of the k largest along the last axis
                             (ties: the lower index first); no derivative, vectorized batching
    softplus_vjp(x)          log(1 + exp(x)) with a hand-written backward pass (def_vjp)
    cumsum_last(x)           cumulative sum along the last axis, declared linear
    sincos(x)                (sin x, cos x): several results
"""

import math

import numpy as np

import mytorch.numpy as mnp
from mytorch import extend as mx
from mytorch.backends.cupy.kernels import xp_of

C = math.sqrt(2.0 / math.pi)
A = 0.044715


# ---- references (NumPy) ---------------------------------------------------------------------
def bias_gelu_ref(x, b):
    z = np.asarray(x) + np.asarray(b)
    return 0.5 * z * (1.0 + np.tanh(C * (z + A * z ** 3)))


def top_k_ref(x, k):
    return np.argsort(-np.asarray(x), axis=-1, kind="stable")[..., :k].astype(np.int32)


# ---- bias_gelu ------------------------------------------------------------------------------
bias_gelu_p = mx.primitive("bias_gelu")


def bias_gelu(x, b):
    """GELU(x + b) (tanh approximation); x and b broadcast. f[...], f[...] -> f[...]."""
    return bias_gelu_p.bind(x, b)


@bias_gelu_p.def_abstract_eval
def _bias_gelu_abstract_eval(x, b):
    if x.dtype != b.dtype or x.dtype.kind != "f":
        raise TypeError(f"x and b must have one floating dtype, got {x.dtype} and {b.dtype}")
    return mx.ShapedArray(np.broadcast_shapes(x.shape, b.shape), x.dtype)


@mx.def_numpy_kernel(bias_gelu_p)
def _bias_gelu_numpy(x, b):
    z = x + b
    inner = z * z
    inner *= A * z
    inner += z
    inner *= C
    out = np.tanh(inner)
    out += 1
    out *= z
    out *= 0.5
    return out


@mx.def_jvp(bias_gelu_p)
def _bias_gelu_jvp(primals, tangents):
    x, b = primals
    x_dot, b_dot = tangents
    z = x + b
    t = mnp.tanh(C * (z + A * z ** 3))
    # d/dz 0.5 z (1 + tanh(u)) = 0.5 (1 + t) + 0.5 z (1 - t^2) u',  u' = C (1 + 3 A z^2)
    slope = 0.5 * (1 + t) + 0.5 * z * (1 - t * t) * (C * (1 + 3 * A * z * z))
    return bias_gelu_p.bind(x, b), slope * (x_dot + b_dot)


mx.def_broadcasting_batching(bias_gelu_p)

BIAS_GELU_CUDA = r"""
extern "C" __global__ void bias_gelu_f32(const float* __restrict__ x,
                                         const float* __restrict__ b,
                                         float* __restrict__ out, long long n, long long nb) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    float z = x[i] + b[i % nb];
    out[i] = 0.5f * z * (1.0f + tanhf(0.7978845608f * (z + 0.044715f * z * z * z)));
  }
}

extern "C" __global__ void bias_gelu_f64(const double* __restrict__ x,
                                         const double* __restrict__ b,
                                         double* __restrict__ out, long long n, long long nb) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    double z = x[i] + b[i % nb];
    out[i] = 0.5 * z * (1.0 + tanh(0.7978845608028654 * (z + 0.044715 * z * z * z)));
  }
}
"""
BIAS_GELU_SIGNATURES = {name: ("ptr", "ptr", "ptr", "i64", "i64")
                        for name in ("bias_gelu_f32", "bias_gelu_f64")}


GPU_CALLS = []  # (primitive name, dtype) of each GPU kernel call: what the twin tests count


def _bias_gelu_launch(kernels, x, b, *, xp):
    GPU_CALLS.append(("bias_gelu", x.dtype))
    name = {np.dtype(np.float32): "bias_gelu_f32", np.dtype(np.float64): "bias_gelu_f64"}
    if x.dtype not in name:
        return NotImplemented  # float16, bfloat16: the NumPy kernel on the host
    shape = np.broadcast_shapes(x.shape, b.shape)
    b_shape = b.shape
    while b_shape and b_shape[0] == 1:  # leading 1s: b still repeats along the flat index
        b_shape = b_shape[1:]
    if x.shape != shape or shape[len(shape) - len(b_shape):] != b_shape:
        x = xp.ascontiguousarray(xp.broadcast_to(x, shape))
        b = xp.ascontiguousarray(xp.broadcast_to(b, shape))
    out = xp.empty(shape, x.dtype)
    n = out.size
    if n:
        block = 256
        grid = min((n + block - 1) // block, 4096)
        kernels[name[x.dtype]](grid, block, [x, b, out, n, max(b.size, 1)])
    return out


mx.def_cuda(bias_gelu_p, source=BIAS_GELU_CUDA, signatures=BIAS_GELU_SIGNATURES,
            launch=_bias_gelu_launch)


# ---- top_k_indices: no derivative -----------------------------------------------------------
top_k_indices_p = mx.primitive("top_k_indices")


def top_k_indices(x, k):
    """Positions of the k largest entries along the last axis. f[..., n] -> i32[..., k]."""
    return top_k_indices_p.bind(x, k=int(k))


@top_k_indices_p.def_abstract_eval
def _top_k_abstract_eval(x, *, k):
    if x.ndim < 1 or not 0 <= k <= x.shape[-1]:
        raise ValueError(f"k must be in [0, {x.shape[-1] if x.ndim else 0}], got {k}")
    return mx.ShapedArray(x.shape[:-1] + (k,), np.int32)


mx.def_numpy_kernel(top_k_indices_p, top_k_ref)
mx.def_vectorized_batching(top_k_indices_p)


@mx.def_gpu_kernel(top_k_indices_p)
def _top_k_gpu(x, *, k):
    GPU_CALLS.append(("top_k_indices", x.dtype))
    xp = xp_of(x)  # NumPy on the twin, CuPy on a GPU
    order = xp.argsort(-x, axis=-1, kind="stable") if xp is np else xp.argsort(-x, axis=-1)
    return order[..., :k].astype(np.int32)


# ---- softplus with a hand-written backward pass ---------------------------------------------
softplus_vjp_p = mx.primitive("softplus_vjp")
softplus_vjp_p.def_abstract_eval(lambda x: mx.ShapedArray(x.shape, x.dtype))
mx.def_numpy_kernel(softplus_vjp_p, lambda x: np.logaddexp(0, x).astype(x.dtype))
mx.def_broadcasting_batching(softplus_vjp_p)


@mx.def_vjp(softplus_vjp_p)
def _softplus_bwd(ct, out, x):
    return [ct * (1 / (1 + mnp.exp(-x)))]  # d softplus = logistic


# ---- a linear primitive -----------------------------------------------------------------------
cumsum_last_p = mx.primitive("cumsum_last")
cumsum_last_p.def_abstract_eval(lambda x: mx.ShapedArray(x.shape, x.dtype))
mx.def_numpy_kernel(cumsum_last_p, lambda x: np.cumsum(x, axis=-1, dtype=x.dtype))
mx.def_vectorized_batching(cumsum_last_p)


def _cumsum_last_transpose(ct, x):
    # the transpose of a cumulative sum is the reversed cumulative sum
    return [mnp.flip(cumsum_last_p.bind(mnp.flip(ct, -1)), -1)]


mx.def_linear(cumsum_last_p, _cumsum_last_transpose)


# ---- several results --------------------------------------------------------------------------
sincos_p = mx.primitive("sincos", multiple_results=True)
sincos_p.def_abstract_eval(lambda x: [mx.ShapedArray(x.shape, x.dtype)] * 2)
mx.def_numpy_kernel(sincos_p, lambda x: [np.sin(x), np.cos(x)])
mx.def_broadcasting_batching(sincos_p)


@mx.def_jvp(sincos_p)
def _sincos_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    s, c = sincos_p.bind(x)
    return [s, c], [c * t, -s * t]
