"""GPU kernels for user-defined primitives: a CUDA source (`def_cuda`) or array-module
generic code (`def_gpu_kernel`), registered in the GPU backend's kernel table
(`backends/cupy/kernels.py: KERNELS`), which its eager path and its jit compiler both read.

`def_cuda` compiles the source with the GPU backend's runtime on first use (NVRTC through
CuPy on a GPU; on the CPU twin, `mytorch.backends.cupy.use_twin()`, the host C++ compiler
with the twin's shim), once per runtime and device; `launch` then allocates the results
and launches. Kernels keep to the runtime contract (docs/architecture.md, "The GPU
backend"): `extern "C" __global__` functions, 1-D grid and block, `blockIdx.x`,
`blockDim.x`, `threadIdx.x`, `gridDim.x`, `__syncthreads()`, static `__shared__` arrays, libm;
no headers, warp shuffles or atomics. Where `launch` returns `NotImplemented` (a dtype the
source has no kernel for), the NumPy kernel runs on host copies of the operands.
"""

from mytorch.extend.primitives import check_results

__all__ = ["def_cuda", "def_gpu_kernel"]

_ARG_TYPES = ("ptr", "i32", "i64", "u32", "u64", "f32", "f64")


def _gpu_backend():
    from mytorch.core.backend import get_backend

    return get_backend("gpu")


def _register(prim, kernel):
    from mytorch.backends.cupy.kernels import KERNELS

    KERNELS[prim] = kernel


def def_cuda(prim, *, source, signatures, launch):
    """Give `prim` a CUDA kernel for the GPU backend.

    Args:
      prim: an `ExtensionPrimitive` (with its abstract evaluation).
      source: CUDA C++ defining the kernels as `extern "C" __global__ void name(...)`,
        without `#include`s.
      signatures: {kernel name: tuple of argument types}, each "ptr" (a buffer) or one of
        "i32", "i64", "u32", "u64", "f32", "f64".
      launch: `launch(kernels, *buffers, xp, **params) -> buffer` (a list for several
        results): `kernels` is {name: launcher}, `launcher(grid, block, args,
        shared_bytes=0)` with a 1-D grid and block, buffers for "ptr" arguments and Python
        numbers for the others; `xp` is the array module of the buffers (CuPy on a GPU,
        NumPy on the twin), to allocate results with. Operands arrive C-contiguous.
        Return `NotImplemented` to run the NumPy kernel on the host instead.

    Raises:
      ValueError: a signature names an unknown argument type.
    """
    for name, types in signatures.items():
        bad = [t for t in types if t not in _ARG_TYPES]
        if bad:
            raise ValueError(f"mx.def_cuda({prim.name}): kernel {name} has argument types "
                             f"{bad}; expected 'ptr' or one of {list(_ARG_TYPES[1:])}")
    signatures = {k: tuple(v) for k, v in signatures.items()}
    compiled = {}  # (id(runtime), device ordinal) -> (runtime, {name: launcher})

    def kernel(*bufs, **params):
        backend = _gpu_backend()
        rt = backend.runtime
        key = (id(rt), rt.device_of(bufs[0]) if bufs else 0)  # a module is per device
        hit = compiled.get(key)
        if hit is None or hit[0] is not rt:
            hit = compiled[key] = (rt, rt.compile(source, signatures))
        xp = rt.xp
        flat = [xp.ascontiguousarray(b) for b in bufs]
        outs = launch(hit[1], *flat, xp=xp, **params)
        if outs is NotImplemented:
            return _on_host(backend, prim, bufs, params)
        return check_results(prim, "CUDA launch", bufs, params, outs, xp.asarray)

    kernel.__name__ = f"{prim.name}_cuda".replace(".", "_")
    _register(prim, kernel)
    return kernel


def def_gpu_kernel(prim, fn=None):
    """Give `prim` a GPU kernel written for any array module (usable as a decorator).

    Args:
      prim: an `ExtensionPrimitive`.
      fn: `fn(*buffers, **params) -> buffer` (a list for several results) on CuPy arrays
        on a GPU and NumPy arrays on the twin: take the module from the operands
        (`mytorch.backends.cupy.kernels.xp_of(*buffers)`, or `type(x).__module__`).

    Returns:
      `fn`.
    """
    if fn is None:
        return lambda f: def_gpu_kernel(prim, f)

    def kernel(*bufs, **params):
        xp = _gpu_backend().runtime.xp
        return check_results(prim, "GPU kernel", bufs, params, fn(*bufs, **params), xp.asarray)

    kernel.__name__ = f"{prim.name}_gpu".replace(".", "_")
    _register(prim, kernel)
    return fn


def _on_host(backend, prim, bufs, params):
    from mytorch.core.backend import get_backend

    run = backend.on_host(get_backend("cpu").kernel(prim), prim.multiple_results)
    return run(*bufs, **params)

