"""The CPU twin of the GPU backend's runtime: CUDA kernel sources compiled by the host C++
compiler and run over NumPy buffers, so that CI checks generated kernels without a GPU.

`TwinRuntime` implements the runtime contract of `runtime.CudaRuntime` (`name`, `xp`,
`compile(source, signatures)`, `synchronize()`). The kernel source is compiled with `SHIM`
prepended, which maps the CUDA names the kernels use onto C++:

- `__global__`/`__device__`/`__forceinline__` are plain (inline) functions, `__restrict__`
  is GCC's, `__shared__` is `static`;
- `blockIdx`, `threadIdx`, `blockDim` and `gridDim` are thread-local `dim3`s, set in each
  OpenMP thread by the launcher (launches from several host threads do not mix);
- `__syncthreads()` is an OpenMP barrier: a kernel that uses it (or `__shared__` memory)
  runs its blocks one after another, each as an OpenMP team of `block` threads (one launch
  of such a kernel at a time: its shared memory is static); any other kernel runs every
  (block, thread) pair of the grid in one OpenMP parallel loop;
- `__half` is GCC's `_Float16` and `__nv_bfloat16` a struct of its 16 bits, with CUDA's
  conversion intrinsics (round to nearest even) as in CUDA.

For each kernel a host launcher `mt_twin_launch_<name>(grid, block, args)` is generated
beside the source; Python calls it through ctypes with the data pointer of each "ptr"
argument and the address of a C scalar for the others. Built libraries are cached on disk
(`$MYTORCH_TWIN_CACHE`, else `~/.cache/mytorch/twin`) by the hash of shim, source,
launchers and compiler flags, and in memory by the source's and signatures' hash.
"""

import ctypes
import hashlib
import os
import pathlib
import re
import shutil
import subprocess
import tempfile
import threading

import numpy as np

# libgomp reads this once, when it is first loaded: threads of an emulated block that wait at
# a barrier sleep instead of spinning (blocks have far more threads than the host has cores)
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

# CUDA's half-precision types and conversion intrinsics (round to nearest even) in C++; also
# used by the CPU backend's compiled loops (backends/numpy/native.py)
HALF_TYPES = r"""
#include <string.h>
typedef _Float16 __half;
struct __nv_bfloat16 { unsigned short x; };
static inline float __half2float(__half h) { return (float)h; }
static inline __half __float2half_rn(float f) { return (__half)f; }
static inline __half __double2half(double d) { return (__half)d; }
static inline unsigned short __half_as_ushort(__half h) {
  unsigned short u; memcpy(&u, &h, 2); return u;
}
static inline __half __ushort_as_half(unsigned short u) { __half h; memcpy(&h, &u, 2); return h; }
static inline float __bfloat162float(__nv_bfloat16 b) {
  unsigned int u = (unsigned int)b.x << 16; float f; memcpy(&f, &u, 4); return f;
}
static inline __nv_bfloat16 __float2bfloat16_rn(float f) {
  unsigned int u; __nv_bfloat16 b; memcpy(&u, &f, 4);
  if (f != f) { b.x = (unsigned short)((u >> 16) | 0x40); return b; }
  b.x = (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16); return b;
}
static inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 b) { return b.x; }
static inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short u) {
  __nv_bfloat16 b; b.x = u; return b;
}
"""

SHIM = r"""
#include <cmath>
#include <cstring>
#include <cstdint>
#include <math.h>
#include <mutex>
#include <omp.h>
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static
struct dim3 { unsigned int x, y, z; };
static thread_local dim3 threadIdx = {0, 0, 0}, blockIdx = {0, 0, 0};
static thread_local dim3 blockDim = {1, 1, 1}, gridDim = {1, 1, 1};
static inline void __syncthreads() {
  _Pragma("omp barrier")
}
""" + HALF_TYPES

FLAGS = ("-x", "c++", "-std=c++17", "-O1", "-fopenmp", "-shared", "-fPIC", "-w")
_ARG_TYPES = {  # signature type: (C type, ctypes type)
    "i32": ("int", ctypes.c_int32), "i64": ("long long", ctypes.c_int64),
    "u32": ("unsigned int", ctypes.c_uint32), "u64": ("unsigned long long", ctypes.c_uint64),
    "f32": ("float", ctypes.c_float), "f64": ("double", ctypes.c_double),
}
_KERNEL_RE = re.compile(r'extern\s+"C"\s+__global__\s+void\s+(\w+)\s*\(')


class TwinCompileError(RuntimeError):
    """The host compiler rejected a kernel source."""


def compiler():
    """The host C++ compiler's path, or None."""
    return shutil.which(os.environ.get("CXX", "g++")) or shutil.which("g++")


def available():
    """Whether the twin can compile kernels here."""
    return compiler() is not None


def unavailable_reason():
    """Why the twin cannot run here (a str), or None when it can."""
    if compiler() is None:
        return "the CPU twin needs a host C++ compiler (g++ with OpenMP) on PATH; none found"
    return None


def cache_dir():
    """Where built twin libraries are kept."""
    env = os.environ.get("MYTORCH_TWIN_CACHE")
    return pathlib.Path(env) if env else pathlib.Path.home() / ".cache" / "mytorch" / "twin"


def _kernel_bodies(source):
    """{kernel name: its text up to the next kernel} of the `extern "C" __global__` kernels."""
    found = list(_KERNEL_RE.finditer(source))
    ends = [m.start() for m in found[1:]] + [len(source)]
    return {m.group(1): source[m.start():end] for m, end in zip(found, ends, strict=True)}


def _launcher(name, types, cooperative):
    """C++ of `mt_twin_launch_<name>`: runs the kernel's grid; returns 0, or -1 when OpenMP
    gave a block fewer threads than asked for."""
    args = []
    for j, t in enumerate(types):
        if t == "ptr":
            args.append(f"mt_twin_ptr{{args[{j}]}}")
        elif t in _ARG_TYPES:
            args.append(f"*({_ARG_TYPES[t][0]}*)args[{j}]")
        else:
            raise ValueError(f"twin compile: kernel {name} has an unknown argument type {t!r}; "
                             f"expected 'ptr' or one of {sorted(_ARG_TYPES)}")
    call = f"{name}({', '.join(args)});"
    head = (f'extern "C" int mt_twin_launch_{name}(unsigned grid, unsigned block, void **args) '
            "{\n")
    dims = "gridDim.x = grid; blockDim.x = block; "  # thread-local: set in every thread
    if not cooperative:  # no barriers, no shared memory: every thread is independent
        return (head + "  long long total = (long long)grid * block;\n"
                "  #pragma omp parallel for schedule(static)\n"
                "  for (long long t = 0; t < total; t++) {\n"
                f"    {dims}blockIdx.x = (unsigned)(t / block); "
                "threadIdx.x = (unsigned)(t % block);\n"
                f"    {call}\n  }}\n  return 0;\n}}\n")
    # shared memory is static: one launch of this kernel at a time (callers may be threads)
    return (head + "  static std::mutex busy;\n  std::lock_guard<std::mutex> hold(busy);\n"
            "  int ok = 1;\n  omp_set_dynamic(0);\n"
            "  for (unsigned b = 0; b < grid && ok; b++) {\n"
            "    #pragma omp parallel num_threads(block)\n    {\n"
            "      if (omp_get_num_threads() != (int)block) {\n"
            "        #pragma omp single\n        ok = 0;\n"
            "      } else {\n"
            f"        {dims}blockIdx.x = b; threadIdx.x = (unsigned)omp_get_thread_num();\n"
            f"        {call}\n      }}\n    }}\n  }}\n  return ok ? 0 : -1;\n}}\n")


_PTR = ("struct mt_twin_ptr { void *p; template <class T> operator T*() const "
        "{ return (T*)p; } };\n")


def host_source(source, signatures):
    """The C++ translation unit the twin builds: shim, `source`, then a launcher per kernel."""
    bodies = _kernel_bodies(source)
    launchers = []
    for name, types in signatures.items():
        if name not in bodies:
            raise ValueError(f"twin compile: no kernel named {name!r} in the source (it has "
                             f"{sorted(bodies)})")
        body = bodies[name]
        cooperative = "__syncthreads" in body or "__shared__" in body
        launchers.append(_launcher(name, tuple(types), cooperative))
    return SHIM + "#line 1 \"kernel.cu\"\n" + source + "\n" + _PTR + "".join(launchers)


def _error_message(err, source):
    """The compiler's message and the numbered kernel source lines around its first error."""
    lines = source.splitlines()
    shown = ""
    match = re.search(r"kernel\.cu:(\d+):(?:\d+:)? (?:fatal )?error", err)
    if match:
        at = int(match.group(1))
        lo, hi = max(1, at - 3), min(len(lines), at + 3)
        shown = "\n".join(f"{'>' if k == at else ' '}{k:5d} | {lines[k - 1]}"
                          for k in range(lo, hi + 1))
    return (f"the CPU twin could not compile a kernel source:\n{err.strip()[-6000:]}"
            + (f"\nsource lines around the first error:\n{shown}" if shown else ""))


class _Launcher:
    """launcher(grid, block, args, shared_bytes=0) for one compiled kernel."""

    def __init__(self, lib, name, types):
        self.name, self.types = name, tuple(types)
        self._fn = getattr(lib, f"mt_twin_launch_{name}")
        self._fn.restype = ctypes.c_int
        self._fn.argtypes = [ctypes.c_uint, ctypes.c_uint, ctypes.POINTER(ctypes.c_void_p)]
        self._lib = lib  # keeps the library loaded

    def __call__(self, grid, block, args, shared_bytes=0):
        grid, block = int(grid), int(block)
        if len(args) != len(self.types):
            raise TypeError(f"twin launch of {self.name}: {len(self.types)} arguments "
                            f"expected ({', '.join(self.types)}), got {len(args)}")
        if grid < 1 or block < 1:
            raise ValueError(f"twin launch of {self.name}: grid ({grid}) and block ({block}) "
                             "must be positive")
        argv = (ctypes.c_void_p * max(1, len(args)))()
        keep = []
        for j, (t, a) in enumerate(zip(self.types, args, strict=True)):
            if t == "ptr":
                if not isinstance(a, np.ndarray):
                    raise TypeError(f"twin launch of {self.name}: argument {j} must be a NumPy "
                                    f"array, got {type(a).__name__}")
                if not a.flags.c_contiguous:
                    raise ValueError(f"twin launch of {self.name}: argument {j} "
                                     f"({a.dtype}{list(a.shape)}) is not C-contiguous; pass "
                                     "numpy.ascontiguousarray of it")
                argv[j] = a.ctypes.data
            else:
                scalar = _ARG_TYPES[t][1](a)
                keep.append(scalar)
                argv[j] = ctypes.cast(ctypes.pointer(scalar), ctypes.c_void_p)
        if self._fn(grid, block, argv) != 0:
            raise RuntimeError(f"twin launch of {self.name}: OpenMP could not start a block "
                               f"of {block} threads (set OMP_THREAD_LIMIT higher)")


class TwinRuntime:
    """The runtime contract of the GPU backend on the host: NumPy buffers, g++-built kernels."""

    name = "twin"
    xp = np

    def __init__(self, cache=None):
        self._cache_dir = pathlib.Path(cache) if cache is not None else None
        self._modules = {}
        self._lock = threading.Lock()

    def compile(self, source, signatures):
        """{kernel name: launcher} for the kernels `signatures` names in CUDA C++ `source`.

        Args:
          source: kernel definitions (`extern "C" __global__`), without headers.
          signatures: {kernel name: tuple of arg types ("ptr", "i32", "i64", "u32", "u64",
            "f32", "f64")}.

        Returns:
          {name: launcher}; `launcher(grid, block, args, shared_bytes=0)` runs the kernel
          on NumPy arrays ("ptr") and Python numbers.

        Raises:
          TwinCompileError: the compiler's message with the numbered lines around the error.
        """
        reason = unavailable_reason()
        if reason:
            raise RuntimeError(reason)
        sig = {k: tuple(v) for k, v in signatures.items()}
        key = hashlib.sha256((source + "\0" + repr(sorted(sig.items()))).encode()).hexdigest()
        with self._lock:
            if key not in self._modules:
                lib = ctypes.CDLL(str(self._build(host_source(source, sig), source)))
                self._modules[key] = {name: _Launcher(lib, name, types)
                                      for name, types in sig.items()}
            return dict(self._modules[key])

    def _build(self, text, source):
        cxx = compiler()
        digest = hashlib.sha256((text + "\0" + " ".join(FLAGS) + "\0" + cxx).encode())
        folder = self._cache_dir or cache_dir()
        folder.mkdir(parents=True, exist_ok=True)
        lib = folder / f"twin_{digest.hexdigest()[:32]}.so"
        if lib.exists():
            return lib
        with tempfile.TemporaryDirectory(dir=folder) as tmp:
            cpp, out = pathlib.Path(tmp) / "kernel.cpp", pathlib.Path(tmp) / "kernel.so"
            cpp.write_text(text)
            done = subprocess.run([cxx, *FLAGS, str(cpp), "-o", str(out)], check=False,
                                  capture_output=True, text=True)
            if done.returncode != 0:
                raise TwinCompileError(_error_message(done.stderr, source))
            os.replace(out, lib)
        return lib

    def synchronize(self):
        """Nothing to wait for: launches return when the kernel is done."""
