"""The GPU backend: CuPy buffers on CUDA devices (or NumPy buffers on the CPU twin).

`CupyBackend(runtime)` is a `core.backend.Backend` of platform "gpu" over a runtime
(`runtime.CudaRuntime` on a GPU, `twin.TwinRuntime` on the CPU twin):
- buffers: `put` copies a host value to a device, `to_numpy` back, `coerce` fixes a
  kernel result's dtype, `donate` hands compiled code a buffer it may drop early;
- eager kernels: elementwise primitives run as generated one-equation kernels (compiled once
  per primitive, operand shapes and dtypes), the others as `kernels.KERNELS` holds them
  (CuPy, cuBLAS, own kernels); a primitive with no GPU kernel runs through the NumPy backend
  on the host, its operands copied down and results back;
- every eager kernel runs with its operands' device current; operands that live on the
  host (a 0-d constant made on the CPU) are copied to that device first;
- `generate` is the jit compiler (compiler.py).
"""

import math
import sys

import numpy as np

from mytorch.backends.cupy import fusion
from mytorch.backends.cupy.codegen import INT32_LIMIT, MAX_STRIDE, module_source
from mytorch.backends.cupy.expressions import has_expression
from mytorch.backends.cupy.kernels import KERNELS
from mytorch.backends.cupy.kernels_common import array_module
from mytorch.core.aval import ShapedArray
from mytorch.core.backend import Backend, Device, get_backend
from mytorch.core.jaxpr import params_key


class CupyBackend(Backend):
    """Platform "gpu": one Device per CUDA device the runtime sees."""

    platform = "gpu"

    def __init__(self, runtime):
        super().__init__()
        from mytorch.backends.cupy import kernels_all  # noqa: F401  (registers KERNELS)

        self.runtime, self.xp = runtime, runtime.xp
        # pmap's communicators: NCCL between GPUs; the twin's replicas share the host and
        # exchange NumPy buffers through the thread communicator
        self.uses_nccl = runtime.name == "cuda"
        self._devices = [Device("gpu", i, self) for i in range(runtime.device_count())]
        self._elementwise = {}  # (prim, operand avals, params) -> (FusedKernel, launchers)
        self._wrapped = {}  # prim -> (the KERNELS entry it wraps, its eager kernel)

    def devices(self):
        return list(self._devices)

    # ---- buffers -----------------------------------------------------------------------------
    def put(self, value, device):
        with self.runtime.on_device(device.id):
            return self.xp.array(value, copy=True)

    def to_device(self, value, dtype, ordinal):
        """`value` (a host or device value, or an Array) as a buffer of `dtype` on device
        `ordinal`."""
        buf = getattr(value, "_buf", value)
        if type(buf) is not self.xp.ndarray:
            buf = np.asarray(value)
        with self.runtime.on_device(ordinal):
            return self.xp.asarray(buf, dtype=dtype)

    def transfer(self, buf, device):
        """A copy of device buffer `buf` on `device` (peer to peer where CuPy can)."""
        with self.runtime.on_device(device.id):
            return self.xp.array(buf, copy=True)

    def to_numpy(self, buf):
        if type(buf) is np.ndarray:
            return buf
        return self.xp.asnumpy(buf)

    def coerce(self, buf, dtype):
        xp = self.xp
        if type(buf) is not xp.ndarray:
            return xp.asarray(buf, dtype=dtype)
        if buf.dtype != dtype:
            return buf.astype(dtype)
        return buf

    def donate(self, buf):
        """`buf` itself where nothing else holds it (compiled code drops it after its last
        use, so the memory pool can reuse it), else a copy."""
        if buf.base is not None or sys.getrefcount(buf) > 3:
            return buf.copy()
        return buf

    def block_until_ready(self, buf, device):
        self.runtime.synchronize(device.id)

    def memory_stats(self, device):
        return self.runtime.memory_stats(device.id)

    # ---- eager kernels -----------------------------------------------------------------------
    def kernel(self, prim):
        # cached with the registered kernel it wraps: a kernel registered later (an
        # extension's GPU kernel after a first run on the host) replaces the wrapper
        registered = KERNELS.get(prim)
        hit = self._wrapped.get(prim)
        if hit is None or hit[0] is not registered:
            hit = self._wrapped[prim] = (registered,
                                         self._on_operands_device(self._raw_kernel(prim)))
        return hit[1]

    def gpu_kernel(self, prim):
        """The eager kernel of `prim` on the device, or None where it has none (buffers
        must already be on the current device: the compiler's case)."""
        if prim in KERNELS:
            return KERNELS[prim]
        if has_expression(prim):
            return self._elementwise_kernel(prim)
        return None

    def _raw_kernel(self, prim):
        fn = self.gpu_kernel(prim)
        if fn is not None:
            return fn
        return self.on_host(get_backend("cpu").kernel(prim), prim.multiple_results)

    def host_kernel(self, prim, eqn):
        """fn(*buffers, **params) running `eqn` through the NumPy backend on the host."""
        from mytorch.backends.cupy.compiler import host_fallback

        return host_fallback(self, prim, eqn)

    def on_host(self, fn, multiple_results):
        """`fn` (a NumPy kernel) run on host copies of the operands, its results copied to
        the current device."""
        xp = self.xp

        def run(*bufs, **params):
            outs = fn(*[self.to_numpy(b) for b in bufs], **params)
            if not multiple_results:
                return xp.asarray(outs)
            return [xp.asarray(o) for o in outs]

        return run

    def _elementwise_kernel(self, prim):
        """The eager kernel of an elementwise primitive: one generated kernel per dtypes,
        0-d pattern and params, for every shape (its operands have one shape, or are 0-d:
        the size is a launch argument), compiled on first use; where the expressions
        have no case for the dtypes (a complex asin), the NumPy kernel on the host."""
        cache, rt, xp = self._elementwise, self.runtime, self.xp

        def run(*bufs, **params):
            shape = next((b.shape for b in bufs if b.ndim), ())
            big = math.prod(shape) > INT32_LIMIT - MAX_STRIDE
            keep = []
            key = (prim, tuple((b.dtype, b.ndim == 0) for b in bufs),
                   params_key(params, keep), big, rt.device_of(bufs[0]) if bufs else 0)
            hit = cache.get(key)
            if hit is None:
                avals = [ShapedArray(b.shape, b.dtype) for b in bufs]
                try:
                    k = fusion.elementwise_kernel(prim, avals, params, dynamic_size=True,
                                                  index64=big)
                except TypeError:  # no CUDA expression for these dtypes: NumPy's kernel
                    host = self.on_host(get_backend("cpu").kernel(prim),
                                        prim.multiple_results)
                    hit = cache[key] = (None, host, keep)
                else:
                    hit = cache[key] = (k, rt.compile(module_source([k]), k.signatures),
                                        keep)
            if hit[0] is None:
                return hit[1](*bufs, **params)
            flat = [xp.ascontiguousarray(b) for b in bufs]
            outs = hit[0].run_sized(hit[1], xp, flat, shape)
            return outs if prim.multiple_results else outs[0]

        return run

    def _on_operands_device(self, fn):
        """`fn` run with its operands' device current (operands on the host copied there
        first), kernels without operands (iota, zeros) allocating with the runtime's array
        module."""
        rt, xp = self.runtime, self.xp
        ndarray = xp.ndarray

        def run(*bufs, **params):
            ordinal = next((rt.device_of(b) for b in bufs if type(b) is ndarray), 0)
            with rt.on_device(ordinal), array_module(xp):
                bufs = [b if type(b) is ndarray else xp.asarray(b) for b in bufs]
                return fn(*bufs, **params)

        return run

    def generate(self, jaxpr, consts, options):
        """The GPU jit compiler (compiler.py): (fn(*buffers) -> list of buffers, text)."""
        from mytorch.backends.cupy.compiler import generate

        return generate(jaxpr, consts, options, self)
