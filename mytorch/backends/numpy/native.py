"""Compiled loops for the CPU code generator's large fused runs.

A fused elementwise run (fusion.py) evaluated as NumPy ufunc calls over cache-sized blocks
still costs one pass per operation over each block. Where the host has a C++ compiler and
glibc's vector math library (libmvec, glibc >= 2.35 on x86-64), the whole run becomes one C
loop instead: every value of an element stays in registers, the loop is vectorised
(`#pragma omp simd`), and exp, log, tanh, ... are libmvec's SIMD functions. The C of each
operation is the GPU backend's expression of it (backends/cupy/expressions.py, the NumPy
kernels' semantics), compiled with the CPU twin's shim for the CUDA names.

Floating-point code is compiled without fast-math: NaN and infinity behave as in NumPy, and
products are not contracted into fused multiply-adds (`-ffp-contract=off`), so arithmetic
rounds as NumPy's ufuncs do. Transcendental functions come from libmvec, within a few ulp
of NumPy's own SIMD loops (which are not correctly rounded either).

`available()` says whether this can run here (and `unavailable_reason()` why not); setting
`MYTORCH_NATIVE=0` turns it off. Built libraries are cached on disk
(`$MYTORCH_NATIVE_CACHE`, else `~/.cache/mytorch/native`) by the hash of the source, the
compiler and flags and the host CPU's features (the code is built for this CPU), and in
memory by the source's hash.
"""

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

MAX_ARGS = 32  # operands of one ufunc (NumPy 1.x's NPY_MAXARGS; NumPy 2 allows 64)
FLAGS = ("-x", "c++", "-std=c++17", "-O3", "-march=native", "-fopenmp-simd",
         "-fno-math-errno", "-fno-trapping-math", "-ffp-contract=off", "-shared", "-fPIC",
         "-w")

# libm functions with a libmvec SIMD variant (glibc >= 2.35), float and double
_VECTOR_MATH = ("exp", "log", "sin", "cos", "pow", "tanh", "expm1", "log1p", "exp2", "log2",
                "log10", "atan", "asin", "acos", "sinh", "cosh", "tan", "atanh", "asinh",
                "acosh", "atan2", "cbrt", "erf", "erfc", "hypot")
_TWO_ARGS = ("pow", "atan2", "hypot")


def _simd_declarations():
    out = []
    for name in _VECTOR_MATH:
        for suffix, t in (("f", "float"), ("", "double")):
            args = f"{t}, {t}" if name in _TWO_ARGS else t
            out.append(f'extern "C" {t} {name}{suffix}({args}) noexcept '
                       '__attribute__((simd("notinbranch")));')
    return "\n".join(out) + "\n"


_HEADER = "#include <math.h>\n#include <stdint.h>\n"


class NativeCompileError(RuntimeError):
    """The host compiler rejected a generated loop."""


def _glibc_version():
    try:
        name, version = os.confstr("CS_GNU_LIBC_VERSION").split()
    except (ValueError, OSError, AttributeError):
        return None
    if name != "glibc":
        return None
    try:
        return tuple(int(p) for p in version.split(".")[:2])
    except ValueError:
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
    from mytorch.backends.cupy import twin
    if twin.compiler() is None:
        return "compiled loops need a host C++ compiler (g++) on PATH; none found"
    if not (pathlib.Path(sysconfig.get_paths()["include"]) / "Python.h").exists():
        return "compiled loops need Python's C headers (Python.h); none found"
    return None


_FAILED = []  # the first build that failed here: compiled loops are off from then on


def available():
    """Whether large fused runs are compiled to C loops here."""
    return not _FAILED and unavailable_reason() is None


def failed(error):
    """Record that building a loop failed with `error` (compiled loops stop being tried; the
    code generator falls back to NumPy ufuncs) and warn once."""
    if not _FAILED:
        _FAILED.append(f"{type(error).__name__}: {error}")
        warnings.warn("mytorch: compiling a fused loop with the host C++ compiler failed; "
                      "jit falls back to NumPy ufuncs for fused runs (set MYTORCH_NATIVE=0 "
                      f"to silence this):\n{_FAILED[0]}", RuntimeWarning, stacklevel=2)


def cache_dir():
    """Where built libraries are kept."""
    env = os.environ.get("MYTORCH_NATIVE_CACHE")
    return pathlib.Path(env) if env else pathlib.Path.home() / ".cache" / "mytorch" / "native"


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


class _Cache:
    _instance = None

    def __init__(self):
        self._ufuncs, self._lock = {}, threading.Lock()

    @classmethod
    def shared(cls):
        if cls._instance is None:
            cls._instance = cls()
        return cls._instance

    def ufunc(self, loop, types, nin, nout, doc):
        """The ufunc of the C loop body `loop` (see `_module_text`), built once."""
        from mytorch.backends.cupy import twin
        from mytorch.backends.cupy.expressions import PRELUDE
        body = _simd_declarations() + PRELUDE + '#line 1 "loop.cc"\n' + loop
        key = hashlib.sha256(repr((body, types, nin, nout)).encode()).hexdigest()
        with self._lock:
            fn = self._ufuncs.get(key)
            if fn is None:
                name = f"mt_loop_{key[:24]}"
                text = _module_text(name, _HEADER + twin.HALF_TYPES + body, types, nin, nout,
                                    doc)
                fn = self._ufuncs[key] = _load(name, self._build(text, name)).ufunc
        return fn

    def _build(self, text, name):
        from mytorch.backends.cupy import twin
        cxx = twin.compiler()
        flags = (*FLAGS, f"-I{sysconfig.get_paths()['include']}", f"-I{np.get_include()}")
        digest = hashlib.sha256("\0".join((text, " ".join(flags), cxx, _compiler_version(cxx),
                                           _cpu_features(), np.__version__,
                                           sys.version)).encode()).hexdigest()
        folder = cache_dir() / digest[:32]
        lib = folder / f"{name}{sysconfig.get_config_var('EXT_SUFFIX') or '.so'}"
        if lib.exists():
            return lib
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=folder) as tmp:
            src, out = pathlib.Path(tmp) / "loop.cc", pathlib.Path(tmp) / "loop.so"
            src.write_text(text)
            done = subprocess.run([cxx, *flags, str(src), "-o", str(out), "-lmvec", "-lm"],
                                  check=False, capture_output=True, text=True)
            if done.returncode != 0:
                raise NativeCompileError(done.stderr.strip()[-4000:])
            os.replace(out, lib)
        return lib


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, str(path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _module_text(name, source, types, nin, nout, doc):
    """A Python extension module `name` whose attribute `ufunc` runs `source`'s
    `mt_loop(char **args, const npy_intp *dims, const npy_intp *steps, void *)` (NumPy's
    inner-loop signature) for the dtype numbers `types` (inputs, then outputs)."""
    codes = ", ".join(str(t) for t in types)
    return (
        "#define PY_SSIZE_T_CLEAN\n#include <Python.h>\n"
        "#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION\n"
        "#include <numpy/ndarraytypes.h>\n#include <numpy/ufuncobject.h>\n"
        + source +
        f"\nstatic PyUFuncGenericFunction mt_funcs[1] = {{&mt_loop}};\n"
        f"static void *mt_data[1] = {{NULL}};\n"
        f"static const char mt_types[] = {{{codes}}};\n"
        f'static struct PyModuleDef mt_module = {{PyModuleDef_HEAD_INIT, "{name}", NULL, -1, '
        "NULL};\n"
        f'extern "C" PyMODINIT_FUNC PyInit_{name}(void) {{\n'
        "  import_array();\n  import_umath();\n"
        "  PyObject *m = PyModule_Create(&mt_module);\n  if (m == NULL) return NULL;\n"
        f"  PyObject *u = PyUFunc_FromFuncAndData(mt_funcs, mt_data, (char *)mt_types, 1, "
        f'{nin}, {nout}, PyUFunc_None, "fused_run", {_c_string(doc)}, 0);\n'
        '  if (u == NULL || PyModule_AddObject(m, "ufunc", u) < 0) {\n'
        "    Py_XDECREF(u);\n    Py_DECREF(m);\n    return NULL;\n  }\n  return m;\n}\n")


def _c_string(text):
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


@functools.lru_cache(maxsize=None)
def _compiler_version(cxx):
    try:
        return subprocess.run([cxx, "--version"], capture_output=True, text=True,
                              check=False).stdout
    except OSError:
        return ""


def compile_ufunc(loop, types, nin, nout, doc=""):
    """A NumPy ufunc (built once, cached) whose inner loop is the C++ of `loop`, which
    defines `static void mt_loop(char **args, const npy_intp *dims, const npy_intp *steps,
    void *data)`; `types` are the NumPy dtype numbers of the `nin` inputs and `nout`
    outputs."""
    return _Cache.shared().ufunc(loop, tuple(int(t) for t in types), nin, nout, doc)
