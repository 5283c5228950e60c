"""Evaluate C expression templates on the host: a C file per case list, built with the host C
compiler and run; results come back as the bits of each element.

The shim maps the CUDA names the expressions use onto host C:
- `__half` is GCC's `_Float16` (conversions from float and double round to nearest even,
  directly, as CUDA's `__float2half_rn` and `__double2half` do); `__half2float`,
  `__half_as_ushort`, `__ushort_as_half`;
- `__nv_bfloat16` is a struct of its 16 bits; `__bfloat162float` widens the bits,
  `__float2bfloat16_rn` rounds to nearest even (a NaN stays a quiet NaN),
  `__bfloat16_as_ushort`, `__ushort_as_bfloat16`;
- the prelude's `mt_f32_bits` & co. use memcpy on the host instead of CUDA's intrinsics.
Everything else (libm functions, integer and float arithmetic, the prelude's complex
structs) is plain C. A 16-byte result (complex128) prints as two words, low word first.
"""

import pathlib
import shutil
import subprocess

import numpy as np

SHIM = r"""
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
typedef _Float16 __half;
typedef struct { unsigned short x; } __nv_bfloat16;
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


def compiler():
    """The host C compiler's path, or None."""
    return shutil.which("gcc") or shutil.which("cc")


def _array(name, values):
    raw = np.ascontiguousarray(values).view(np.uint8)
    body = ", ".join(str(int(b)) for b in raw.ravel())
    return f"static const unsigned char {name}[{max(raw.size, 1)}] = {{{body or '0'}}};\n"


def source(prelude, ctype, cases):
    """A C program printing, per case and element, the bits of the expression's value in hex.
    `cases`: [(template, [operand arrays], out dtype)]; operands are 1-d, equal length."""
    decls, body = [], []
    for k, (template, operands, out_dtype) in enumerate(cases):
        n = len(operands[0])
        args = []
        for j, a in enumerate(operands):
            decls.append(_array(f"a{k}_{j}", a))
            body.append(f"  static {ctype(a.dtype)} v{k}_{j}[{max(n, 1)}];\n"
                        f"  memcpy(v{k}_{j}, a{k}_{j}, {a.nbytes});\n")
            args.append(f"v{k}_{j}[i]")
        expr = template.format(*args)
        words = _words(out_dtype)
        body.append(
            f"  for (i = 0; i < {n}; i++) {{\n"
            f"    {ctype(out_dtype)} r = {expr};\n"
            f"    unsigned long long u[{words}] = {{0}}; memcpy(u, &r, sizeof r);\n"
            + "".join(f'    printf("%llx\\n", u[{w}]);\n' for w in range(words))
            + "  }\n")
    return (SHIM + prelude + "".join(decls) + "int main(void) {\n  int i;\n" + "".join(body)
            + "  return 0;\n}\n")


def _words(dtype):
    """How many 64-bit words hold one element of `dtype` (2 for complex128)."""
    return max(1, np.dtype(dtype).itemsize // 8)


def run(cc, workdir, name, prelude, ctype, cases):
    """Compile and run the program of `cases`: [array of result bits (uint64) per case],
    of shape (n,), or (n, 2) for a 16-byte dtype (low word first)."""
    workdir = pathlib.Path(workdir)
    c_file, exe = workdir / f"{name}.c", workdir / name
    c_file.write_text(source(prelude, ctype, cases))
    subprocess.run([cc, "-O0", "-fno-fast-math", "-std=gnu11", "-w", str(c_file), "-o",
                    str(exe), "-lm"], check=True, capture_output=True, text=True)
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.split()
    results, pos = [], 0
    for _, operands, out_dtype in cases:
        n, words = len(operands[0]), _words(out_dtype)
        bits = np.array([int(v, 16) for v in out[pos:pos + n * words]], dtype=np.uint64)
        results.append(bits.reshape(n, words) if words > 1 else bits)
        pos += n * words
    return results
