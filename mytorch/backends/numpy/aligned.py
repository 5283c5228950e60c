"""64-byte aligned buffers for the NumPy backend's arrays (as XLA and PyTorch align theirs).

NumPy's default allocator returns glibc's malloc memory, aligned to 16 bytes: a float32
row of a matrix then starts anywhere in a 64-byte cache line, and OpenBLAS's 64-byte
vector loads and stores of such operands split across two lines. Measured here (sgemm,
one thread, interleaved): W1's products run 1.5-3 % faster with every operand aligned to
64 bytes (784x128 @ 128x512: 2.8 % from the output alone; 128x784 @ 784x512: 2.8 % from
the weights alone).

NumPy lets a library install its own allocator for the current context
(`PyDataMem_SetHandler`, NumPy >= 1.22): each array remembers the allocator that made it
and is freed by it, so arrays of both kinds mix freely. This module builds (once per
machine, with the compiled loops' machinery: native.py) a small extension holding such an
allocator: every block is a malloc (or calloc) block with room to start at a multiple of
64 bytes, its size and the malloc pointer kept in the two words in front (so calloc's large
blocks stay lazily zeroed pages, and realloc knows the old size); from 4 MiB blocks are
advised to use huge pages, as NumPy's own allocator does. `enter()` installs it and
returns a token for `leave(token)`; the code generator brackets compiled functions that
allocate large arrays with them, and the backend's `put` and `coerce` (host data becoming
an array) allocate large arrays under it. Where it cannot be built, both are no-ops.

`MYTORCH_ALIGNED=0` turns it off.
"""

import functools
import hashlib
import importlib.util
import os
import sys
import sysconfig

import numpy as np

from mytorch.backends.numpy import native

# compiled functions computing arrays of this size or more run under the allocator, and
# host data of this size becomes an aligned copy (below, the 0.6 us of switching shows)
LARGE_BYTES = 1 << 16

_SOURCE = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_22_API_VERSION
#include <numpy/arrayobject.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#ifdef __linux__
#include <sys/mman.h>
#endif

#define MT_ALIGN 64
#define MT_HEAD (2 * sizeof(void *))

/* Every block comes from malloc (or calloc, whose large blocks stay lazily zeroed pages,
   as NumPy's zeros rely on) with room to align it; the two words before the aligned
   address hold the block's size and the pointer malloc returned. */
static void *mt_place(char *raw, size_t size) {
  if (!raw) return NULL;
  uintptr_t at = ((uintptr_t)raw + MT_HEAD + MT_ALIGN - 1) & ~(uintptr_t)(MT_ALIGN - 1);
  ((void **)at)[-1] = raw;
  ((size_t *)at)[-2] = size;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (size >= (1u << 22)) {  /* as NumPy's default allocator does */
    uintptr_t start = (at + 4095) & ~(uintptr_t)4095;
    uintptr_t end = (at + size) & ~(uintptr_t)4095;
    if (end > start) madvise((void *)start, end - start, MADV_HUGEPAGE);
  }
#endif
  return (void *)at;
}

static void *mt_malloc(void *ctx, size_t size) {
  (void)ctx;
  if (size > SIZE_MAX - MT_ALIGN - MT_HEAD) return NULL;
  return mt_place((char *)malloc(size + MT_ALIGN + MT_HEAD), size);
}

static void *mt_calloc(void *ctx, size_t nelem, size_t elsize) {
  (void)ctx;
  size_t size = nelem * elsize;
  if ((elsize && size / elsize != nelem) || size > SIZE_MAX - MT_ALIGN - MT_HEAD) return NULL;
  return mt_place((char *)calloc(1, size + MT_ALIGN + MT_HEAD), size);
}

static void mt_free(void *ctx, void *ptr, size_t size) {
  (void)ctx; (void)size;
  if (ptr) free(((void **)ptr)[-1]);
}

/* a new aligned block with the old one's first bytes (NumPy passes no old size: it is
   the one kept in front of the block) */
static void *mt_realloc(void *ctx, void *ptr, size_t size) {
  if (!ptr) return mt_malloc(ctx, size);
  void *out = mt_malloc(ctx, size);
  if (!out) return NULL;
  size_t old = ((size_t *)ptr)[-2];
  memcpy(out, ptr, old < size ? old : size);
  mt_free(ctx, ptr, old);
  return out;
}

static PyDataMem_Handler mt_handler = {
    "mytorch_aligned64", 1, {NULL, mt_malloc, mt_calloc, mt_realloc, mt_free}};

static PyObject *mt_capsule = NULL;

/* set(handler or None) -> the previous handler: installs `handler` (None: this module's)
   for the current context */
static PyObject *mt_set(PyObject *self, PyObject *arg) {
  return PyDataMem_SetHandler(arg == Py_None ? mt_capsule : arg);
}

static PyMethodDef mt_methods[] = {{"set", mt_set, METH_O, NULL}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef mt_module = {PyModuleDef_HEAD_INIT, "@NAME@", NULL, -1, mt_methods};

PyMODINIT_FUNC PyInit_@NAME@(void) {
  import_array();
  mt_capsule = PyCapsule_New(&mt_handler, "mem_handler", NULL);
  if (!mt_capsule) return NULL;
  PyObject *m = PyModule_Create(&mt_module);
  if (m && PyModule_AddObject(m, "handler", mt_capsule) < 0) return NULL;
  Py_INCREF(mt_capsule);
  return m;
}
"""


@functools.lru_cache(maxsize=None)
def _module():
    """The extension module, or None where it cannot be built (no compiler, NumPy < 1.22,
    turned off)."""
    if os.environ.get("MYTORCH_ALIGNED", "1") == "0" or not native.available():
        return None
    if tuple(int(p) for p in np.__version__.split(".")[:2]) < (1, 22):
        return None
    text = _SOURCE
    tag = hashlib.sha256(f"{sys.version}{np.__version__}{text}".encode()).hexdigest()[:16]
    name = f"mt_aligned_{tag}"
    flags = (*native.FLAGS, f"-I{sysconfig.get_paths()['include']}",
             f"-I{np.get_include()}")
    try:
        path = native._build(text.replace("@NAME@", name), name, flags)
        spec = importlib.util.spec_from_file_location(name, str(path))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    except (native.NativeCompileError, OSError, ImportError) as e:
        native.failed(e)
        return None
    return module


def available():
    """Whether the aligned allocator is in use here."""
    return _module() is not None


def enter():
    """Install the aligned allocator for the current context; the token for `leave`
    (None where it is not available)."""
    module = _module()
    return None if module is None else module.set(module.handler)


def leave(token):
    """Restore the allocator `enter` replaced."""
    if token is not None:
        _module().set(token)


def bound():
    """(enter, leave) for generated code: the extension's own calls, with no lookup of the
    module per call (call this only where `available()`)."""
    module = _module()
    return functools.partial(module.set, module.handler), module.set


def handler_name(array):
    """The name of the allocator that made `array`'s memory (NumPy's "default_allocator"
    or "mytorch_aligned64"), for tests."""
    try:
        from numpy._core.multiarray import get_handler_name
    except ImportError:  # NumPy 1.x
        from numpy.core.multiarray import get_handler_name
    return get_handler_name(array)
