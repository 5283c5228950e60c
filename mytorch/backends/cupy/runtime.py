"""The CUDA runtime of the GPU backend: CuPy's arrays, NVRTC compilation, kernel launches,
the memory pool, streams and CUDA graphs.

A *runtime* is what the backend's Python code runs on; this one is CuPy on a real GPU, and
`twin.TwinRuntime` is its CPU twin (NumPy buffers, the same CUDA sources built by the host
C++ compiler). Both provide:

    name                      "cuda" / "twin"
    xp                        the array module (cupy / numpy)
    compile(source, signatures) -> {kernel name: launcher(grid, block, args, shared_bytes=0)}
    synchronize()

and this one adds what only a GPU has: devices, streams, memory statistics and graph
capture (`capture`). Compiled modules are cached in memory by the SHA-256 of their source
(per device, since a module is loaded into one device's context); CuPy keeps the compiled
binaries on disk by the same kind of hash (`CUPY_CACHE_DIR`, default ~/.cupy/kernel_cache),
so a second process skips NVRTC.
"""

import hashlib

import numpy as np

# what every generated source is compiled with on the GPU (the twin prepends its shim)
HEADER = "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n"
_SCALARS = {"i32": np.int32, "i64": np.int64, "u32": np.uint32, "u64": np.uint64,
            "f32": np.float32, "f64": np.float64}


class CudaRuntime:
    """CuPy on NVIDIA GPUs. `cupy` is the imported module (the backend imports it)."""

    name = "cuda"

    def __init__(self, cupy):
        self.xp = cupy
        self._modules = {}  # (source hash, device ordinal) -> {name: launcher}
        self._peak = {}  # device ordinal -> peak bytes in use
        self._pool = cupy.get_default_memory_pool()
        cupy.cuda.set_allocator(self._malloc)

    # ---- devices and memory ------------------------------------------------------------------
    def device_count(self):
        return self.xp.cuda.runtime.getDeviceCount()

    def _malloc(self, nbytes):
        """CuPy's pool allocation, recording each device's peak use (the pool itself keeps
        only the current figure)."""
        mem = self._pool.malloc(nbytes)
        dev = mem.device_id
        used = self._pool.used_bytes()
        if used > self._peak.get(dev, 0):
            self._peak[dev] = used
        return mem

    def memory_stats(self, ordinal):
        """Bytes in use, their peak, what the pool holds and the device's total memory."""
        with self.xp.cuda.Device(ordinal):
            free, total = self.xp.cuda.runtime.memGetInfo()
            used = self._pool.used_bytes()
            return {"bytes_in_use": used,
                    "peak_bytes_in_use": max(self._peak.get(ordinal, 0), used),
                    "pool_bytes": self._pool.total_bytes(),
                    "bytes_limit": total, "bytes_free": free}

    def device_of(self, buf):
        """The CUDA device ordinal a CuPy array lives on."""
        return buf.device.id

    def on_device(self, ordinal):
        """A context manager making `ordinal` the current device."""
        return self.xp.cuda.Device(ordinal)

    def synchronize(self, ordinal=None):
        """Wait for every kernel queued on `ordinal` (the current device if None)."""
        if ordinal is None:
            self.xp.cuda.Device().synchronize()
        else:
            self.xp.cuda.Device(ordinal).synchronize()

    # ---- kernels -----------------------------------------------------------------------------
    def compile(self, source, signatures):
        """Compile `source` (kernels declared extern "C" __global__, no headers) with NVRTC
        for the current device: {kernel name: launcher}, cached by the source's hash."""
        digest = hashlib.sha256(source.encode()).hexdigest()
        key = (digest, self.xp.cuda.Device().id)
        hit = self._modules.get(key)
        if hit is None:
            module = self.xp.RawModule(code=HEADER + source, options=("--std=c++17",))
            hit = {name: _Launcher(module.get_function(name), tuple(sig), name)
                   for name, sig in signatures.items()}
            self._modules[key] = hit
        return hit

    def capture(self, run):
        """Record `run()` (kernel launches only, no host synchronisation) as a CUDA graph on
        a stream of its own: returns (graph, what `run` returned). `graph.launch()` replays
        it on that stream."""
        stream = self.xp.cuda.Stream(non_blocking=True)
        with stream:
            stream.begin_capture()
            try:
                result = run()
            finally:
                graph = stream.end_capture()
        return _Graph(graph, stream, self.xp.cuda.Stream.null), result


class _Launcher:
    """One compiled kernel: `launcher(grid, block, args, shared_bytes=0)`."""

    __slots__ = ("fn", "sig", "name")

    def __init__(self, fn, sig, name):
        self.fn, self.sig, self.name = fn, sig, name

    def __call__(self, grid, block, args, shared_bytes=0):
        if len(args) != len(self.sig):
            raise TypeError(f"kernel {self.name}: {len(args)} arguments for a signature of "
                            f"{len(self.sig)} ({', '.join(self.sig)})")
        cast = tuple(a if t == "ptr" else _SCALARS[t](a) for a, t in zip(args, self.sig))
        self.fn((int(grid),), (int(block),), cast, shared_mem=int(shared_bytes))


class _Graph:
    """A captured CUDA graph and the stream it replays on, ordered after the work queued
    on the default stream (which wrote its inputs) and before the work queued there next
    (which reads its outputs), without blocking the host."""

    __slots__ = ("graph", "stream", "null")

    def __init__(self, graph, stream, null):
        self.graph, self.stream, self.null = graph, stream, null

    def launch(self):
        self.stream.wait_event(self.null.record())
        self.graph.launch(self.stream)
        self.null.wait_event(self.stream.record())
