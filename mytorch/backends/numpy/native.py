"""Compiled loops for the CPU code generator's fused elementwise runs.

A fused elementwise run (fusion.py) evaluated as NumPy ufunc calls costs one pass per
operation over its operands, and one Python call per operation. Where the host has a C++
compiler and glibc's vector math library (libmvec, glibc >= 2.35 on x86-64), the whole run
becomes one C loop instead, wrapped as a NumPy ufunc (so NumPy handles broadcasting, strides
and 0-d operands): every value of an element stays in registers, the loop is vectorised
(`#pragma omp simd`), and exp, log, tanh, ... are libmvec's SIMD functions. The C of each
operation is the GPU backend's expression of it (backends/cupy/expressions.py, the NumPy
kernels' semantics).

Floating-point code is compiled without fast-math: NaN and infinity behave as in NumPy, and
products are not contracted into fused multiply-adds (`-ffp-contract=off`), so arithmetic
rounds as NumPy's ufuncs do. Transcendental functions come from libmvec, within a few ulp
of NumPy's own SIMD loops (which are not correctly rounded either).

Building: the loops of one generated function are one C++ library without Python headers
(about 0.2 s of compiler time, once per machine: libraries are cached on disk by the hash
of their source, compiler, flags and the CPU's features, as they are built for this CPU).
A small extension module, built once, turns a loop's address into a ufunc.

`available()` says whether this can run here (`unavailable_reason()` why not); setting
`MYTORCH_NATIVE=0` turns it off. The cache is `$MYTORCH_NATIVE_CACHE`, else
`~/.cache/mytorch/native`.
"""

import ctypes
import functools
import hashlib
import importlib.util
import os
import pathlib
import platform
import subprocess
import sys
import sysconfig
import tempfile
import threading
import warnings

import numpy as np

BUILD_TIMEOUT_S = 120  # a compiler that hangs turns compiled loops off instead of hanging jit
MAX_ARGS = 64 if int(np.__version__.split(".")[0]) >= 2 else 32  # NumPy's NPY_MAXARGS
FLAGS = ("-x", "c++", "-std=c++17", "-O3", "-march=native", "-fopenmp-simd",
         "-fno-math-errno", "-fno-trapping-math", "-ffp-contract=off", "-shared", "-fPIC",
         "-w")

# libm functions with a libmvec SIMD variant (glibc >= 2.35), float and double
_VECTOR_MATH = ("exp", "log", "sin", "cos", "pow", "tanh", "expm1", "log1p", "exp2", "log2",
                "log10", "atan", "asin", "acos", "sinh", "cosh", "tan", "atanh", "asinh",
                "acosh", "atan2", "cbrt", "erf", "erfc", "hypot")
_TWO_ARGS = ("pow", "atan2", "hypot")


@functools.lru_cache(maxsize=None)
def _simd_declarations():
    out = []
    for name in _VECTOR_MATH:
        for suffix, t in (("f", "float"), ("", "double")):
            args = f"{t}, {t}" if name in _TWO_ARGS else t
            out.append(f'extern "C" {t} {name}{suffix}({args}) noexcept '
                       '__attribute__((simd("notinbranch")));')
    return "\n".join(out) + "\n"


# NumPy's inner-loop signature: void loop(char **args, const npy_intp *dimensions,
# const npy_intp *steps, void *data)
_HEADER = "#include <math.h>\n#include <stdint.h>\ntypedef intptr_t npy_intp;\n"

_FACTORY = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/ndarraytypes.h>
#include <numpy/ufuncobject.h>
#include <string.h>

/* make(address, types, nin, nout, name, doc[, signature]): a ufunc running the inner loop
   at `address` for the dtype numbers in the bytes `types`; a generalized ufunc where a
   signature is given. Its tables live as long as the process. */
static PyObject *mt_make(PyObject *self, PyObject *args) {
  unsigned long long address;
  const char *types, *name, *doc, *signature = NULL;
  Py_ssize_t ntypes;
  int nin, nout;
  if (!PyArg_ParseTuple(args, "Ky#iiss|z", &address, &types, &ntypes, &nin, &nout, &name, &doc,
                        &signature))
    return NULL;
  if (ntypes != nin + nout) {
    PyErr_SetString(PyExc_ValueError, "make: len(types) != nin + nout");
    return NULL;
  }
  PyUFuncGenericFunction *funcs = (PyUFuncGenericFunction *)PyMem_RawMalloc(sizeof(*funcs));
  void **data = (void **)PyMem_RawMalloc(sizeof(void *));
  char *codes = (char *)PyMem_RawMalloc(ntypes);
  char *name_copy = strdup(name), *doc_copy = strdup(doc);
  if (!funcs || !data || !codes || !name_copy || !doc_copy) return PyErr_NoMemory();
  funcs[0] = (PyUFuncGenericFunction)(uintptr_t)address;
  data[0] = NULL;
  memcpy(codes, types, ntypes);
  if (signature)
    return PyUFunc_FromFuncAndDataAndSignature(funcs, data, codes, 1, nin, nout, PyUFunc_None,
                                               name_copy, doc_copy, 0, signature);
  return PyUFunc_FromFuncAndData(funcs, data, codes, 1, nin, nout, PyUFunc_None, name_copy,
                                 doc_copy, 0);
}

static PyMethodDef mt_methods[] = {{"make", mt_make, METH_VARARGS, NULL}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef mt_module = {PyModuleDef_HEAD_INIT, "@NAME@", NULL, -1, mt_methods};

PyMODINIT_FUNC PyInit_@NAME@(void) {
  import_array();
  import_umath();
  return PyModule_Create(&mt_module);
}
"""


class NativeCompileError(RuntimeError):
    """The host compiler rejected a generated loop."""


def _glibc_version():
    try:
        name, version = os.confstr("CS_GNU_LIBC_VERSION").split()
        return tuple(int(p) for p in version.split(".")[:2]) if name == "glibc" else None
    except (ValueError, OSError, AttributeError):
        return None


@functools.lru_cache(maxsize=None)
def unavailable_reason():
    """Why compiled loops cannot run here (a str), or None when they can."""
    if os.environ.get("MYTORCH_NATIVE", "1").strip().lower() in ("0", "false", "no", "off"):
        return "turned off by MYTORCH_NATIVE=0"
    if platform.machine() not in ("x86_64", "AMD64"):
        return f"compiled loops need x86-64 (this is {platform.machine()})"
    version = _glibc_version()
    if version is None or version < (2, 35):
        return ("compiled loops need glibc >= 2.35 for its vector math library (libmvec); "
                f"found {os.confstr('CS_GNU_LIBC_VERSION') if version else 'no glibc'}")
    if _compiler() is None:
        return "compiled loops need a host C++ compiler (g++) on PATH; none found"
    if not (pathlib.Path(sysconfig.get_paths()["include"]) / "Python.h").exists():
        return "compiled loops need Python's C headers (Python.h); none found"
    return None


_FAILED = []  # the first build that failed here: compiled loops are off from then on


def available():
    """Whether fused runs are compiled to C loops here."""
    return not _FAILED and unavailable_reason() is None


def failed(error):
    """Record that building loops failed with `error` (compiled loops stop being tried; the
    code generator falls back to NumPy ufuncs) and warn once."""
    if not _FAILED:
        _FAILED.append(f"{type(error).__name__}: {error}")
        warnings.warn("mytorch: compiling fused loops with the host C++ compiler failed; "
                      "jit falls back to NumPy ufuncs for fused runs (set MYTORCH_NATIVE=0 "
                      f"to silence this):\n{_FAILED[0]}", RuntimeWarning, stacklevel=3)


def cache_dir():
    """Where built libraries are kept."""
    env = os.environ.get("MYTORCH_NATIVE_CACHE")
    return pathlib.Path(env) if env else pathlib.Path.home() / ".cache" / "mytorch" / "native"


def _compiler():
    from mytorch.backends.cupy import twin  # the CPU twin finds the same compiler
    return twin.compiler()


@functools.lru_cache(maxsize=None)
def _compiler_version(cxx):
    try:
        return subprocess.run([cxx, "--version"], capture_output=True, text=True,
                              check=False).stdout
    except OSError:
        return ""


@functools.lru_cache(maxsize=None)
def _cpu_features():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return line
    except OSError:
        pass
    return platform.processor()


def _build(text, stem, flags, libs=()):
    """Path of the shared library built from C++ `text` (cached on disk)."""
    cxx = _compiler()
    digest = hashlib.sha256("\0".join((text, " ".join(flags), cxx, _compiler_version(cxx),
                                       _cpu_features())).encode()).hexdigest()[:32]
    folder = cache_dir()
    lib = folder / f"{stem}_{digest}.so"
    if lib.exists():
        return lib
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        src, out = pathlib.Path(tmp) / "loop.cc", pathlib.Path(tmp) / "loop.so"
        src.write_text(text)
        try:
            done = subprocess.run([cxx, *flags, str(src), "-o", str(out), *libs],
                                  check=False, capture_output=True, text=True,
                                  timeout=BUILD_TIMEOUT_S)
        except subprocess.TimeoutExpired as e:
            raise NativeCompileError(f"{cxx} took over {BUILD_TIMEOUT_S} s") from e
        if done.returncode != 0:
            raise NativeCompileError(done.stderr.strip()[-4000:])
        os.replace(out, lib)
    return lib


@functools.lru_cache(maxsize=None)
def _factory():
    """The extension module whose `make` turns a loop's address into a ufunc."""
    tag = hashlib.sha256(f"{sys.version}{np.__version__}{_FACTORY}".encode()).hexdigest()[:16]
    name = f"mt_ufunc_factory_{tag}"
    flags = (*FLAGS, f"-I{sysconfig.get_paths()['include']}", f"-I{np.get_include()}")
    path = _build(_FACTORY.replace("@NAME@", name), name, flags)
    spec = importlib.util.spec_from_file_location(name, str(path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_LOCK = threading.Lock()
_LIBS = {}  # source hash -> loaded library (kept: its ufuncs point into it)
_UFUNCS = {}  # (source hash, loop number) -> ufunc


@functools.lru_cache(maxsize=None)
def _prefix():
    """What every loop library starts with: headers, half types, libmvec's declarations and
    the expression prelude."""
    from mytorch.backends.cupy import twin
    from mytorch.backends.cupy.expressions import PRELUDE
    return _HEADER + twin.HALF_TYPES + _simd_declarations() + PRELUDE


def compile_ufuncs(loops, preamble=""):
    """NumPy ufuncs for `loops`, built as one library (cached in memory and on disk).

    Args:
      loops: [(body, types, nin, nout, doc, signature)]: `body` is C++ defining `static
        void mt_loop(char **args, const npy_intp *dims, const npy_intp *steps, void *data)`
        (NumPy's inner loop; it may use the GPU backend's expression prelude and half
        types); `types` the dtype numbers of the nin inputs and nout outputs; `signature` a
        generalized ufunc's ("(n),()->(n)") or None.
      preamble: C++ placed before the loops, outside their namespaces (#include lines).

    Returns:
      one ufunc per loop.

    Raises:
      NativeCompileError: the compiler's message.
    """
    parts = [_prefix(), preamble]
    for k, (body, *_rest) in enumerate(loops):
        parts.append(f"namespace mt_l{k} {{\n{body}}}\n"
                     f'extern "C" void mt_loop_{k}(char **a, const npy_intp *d, '
                     f"const npy_intp *s, void *p) {{ mt_l{k}::mt_loop(a, d, s, p); }}\n")
    text = "".join(parts)
    key = hashlib.sha256(text.encode()).hexdigest()
    with _LOCK:
        lib = _LIBS.get(key)
        if lib is None:
            lib = _LIBS[key] = ctypes.CDLL(str(_build(text, "loops", FLAGS, ("-lmvec", "-lm"))))
        make = _factory().make
        out = []
        for k, (_, types, nin, nout, doc, signature) in enumerate(loops):
            fn = _UFUNCS.get((key, k))
            if fn is None:
                address = ctypes.cast(getattr(lib, f"mt_loop_{k}"), ctypes.c_void_p).value
                fn = _UFUNCS[key, k] = make(address, bytes(int(t) for t in types), nin, nout,
                                            "fused_run", doc, signature)
            out.append(fn)
    return out


class Pending:
    """Stands for the ufunc of one loop of a generated function until that function first
    runs: then every loop of the function is built at once (one compiler run) and each
    `Pending` replaces itself in the generated code's globals by its ufunc."""

    __slots__ = ("group", "index")

    def __init__(self, group, index):
        self.group, self.index = group, index

    def __call__(self, *args, **kwargs):
        return self.group.resolve()[self.index](*args, **kwargs)


class Group:
    """The loops of one generated function (globals `ns`), built together on first use. If
    the build fails, each loop's `fallback` (the same signature as its ufunc) takes its
    place and compiled loops are turned off (`failed`)."""

    def __init__(self, ns):
        self.ns, self.loops, self.names, self.fallbacks = ns, [], [], []
        self.resolved = None
        self._lock = threading.Lock()

    def add(self, name, body, types, nin, nout, doc, fallback, signature=None):
        """Register a loop whose ufunc (a generalized one where `signature` is given) the
        generated code calls as the global `name`; returns the `Pending` to bind to it."""
        self.loops.append((body, tuple(types), nin, nout, doc, signature))
        self.names.append(name)
        self.fallbacks.append(fallback)
        return Pending(self, len(self.loops) - 1)

    def resolve(self):
        with self._lock:
            if self.resolved is None:
                try:
                    fns = compile_ufuncs(self.loops)
                except (NativeCompileError, OSError, ImportError) as e:
                    failed(e)
                    fns = self.fallbacks
                for name, fn in zip(self.names, fns, strict=True):
                    self.ns[name] = fn
                self.resolved = fns
            return self.resolved
