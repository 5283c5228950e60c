"""Evaluate C expression templates on the host: a C++ file per case list, built with the host
C++ compiler and run; results come back as the bits of each element. `cuda_source` and
`build_cuda` make the same program for the GPU, each case one kernel, built with nvcc.

The shim is the CPU twin's (mytorch/backends/cupy/twin.py), so the expressions are checked
as the twin builds generated kernels. It maps the CUDA names the expressions use onto C++:
- `__half` is GCC's `_Float16` (conversions from float and double round to nearest even,
  directly, as CUDA's `__float2half_rn` and `__double2half` do); `__half2float`,
  `__half_as_ushort`, `__ushort_as_half`;
- `__nv_bfloat16` is a struct of its 16 bits; `__bfloat162float` widens the bits,
  `__float2bfloat16_rn` rounds to nearest even (a NaN stays a quiet NaN),
  `__bfloat16_as_ushort`, `__ushort_as_bfloat16`;
- the prelude's `mt_f32_bits` & co. use memcpy on the host instead of CUDA's intrinsics.
Everything else (libm functions, integer and float arithmetic, the prelude's complex
structs) is plain C, compiled as C++17. A 16-byte result (complex128) prints as two words,
low word first.
"""

import pathlib
import subprocess

import numpy as np

from mytorch.backends.cupy import twin

# the CPU twin's shim (C++), so the expressions are checked as the twin compiles them
SHIM = twin.SHIM + "#include <cstdio>\n"


def compiler():
    """The host C++ compiler's path, or None."""
    return twin.compiler()


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
    c_file, exe = workdir / f"{name}.cpp", workdir / name
    c_file.write_text(source(prelude, ctype, cases))
    subprocess.run([cc, "-x", "c++", "-std=c++17", "-O0", "-fno-fast-math", "-w", str(c_file),
                    "-o", str(exe), "-lm"], check=True, capture_output=True, text=True)
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
    return parse(out, cases)


def parse(stdout, cases):
    """The printed words of a program of `cases` as in `run`."""
    out, results, pos = stdout.split(), [], 0
    for _, operands, out_dtype in cases:
        n, words = len(operands[0]), _words(out_dtype)
        bits = np.array([int(v, 16) for v in out[pos:pos + n * words]], dtype=np.uint64)
        results.append(bits.reshape(n, words) if words > 1 else bits)
        pos += n * words
    return results


NO_GPU = 77  # the CUDA program's exit status when it finds no GPU


def cuda_source(prelude, ctype, cases):
    """A CUDA program printing what `source`'s prints, each case computed by one kernel on
    the GPU (compiled as the CuPy backend's kernels are: nvcc's defaults, fma contraction
    included); it exits with NO_GPU when there is no GPU."""
    decls, kernels, body = [], [], []
    for k, (template, operands, out_dtype) in enumerate(cases):
        n, out_t = len(operands[0]), ctype(out_dtype)
        params = "".join(f"const {ctype(a.dtype)}* a{j}, " for j, a in enumerate(operands))
        expr = template.format(*(f"a{j}[i]" for j in range(len(operands))))
        kernels.append(f"__global__ void k{k}({params}{out_t}* out, int n) {{\n"
                       "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                       f"  if (i < n) out[i] = {expr};\n}}\n")
        args = []
        for j, a in enumerate(operands):
            decls.append(_array(f"h{k}_{j}", a))
            body.append(f"  void* d{k}_{j}; MT_CHECK(cudaMalloc(&d{k}_{j}, {a.nbytes}));\n"
                        f"  MT_CHECK(cudaMemcpy(d{k}_{j}, h{k}_{j}, {a.nbytes}, "
                        "cudaMemcpyHostToDevice));\n")
            args.append(f"(const {ctype(a.dtype)}*)d{k}_{j}")
        words = _words(out_dtype)
        body.append(
            f"  {{\n    static {out_t} r[{n}]; void* o; int i;\n"
            f"    MT_CHECK(cudaMalloc(&o, sizeof r));\n"
            f"    k{k}<<<{(n + 127) // 128}, 128>>>({', '.join(args)}, ({out_t}*)o, {n});\n"
            "    MT_CHECK(cudaGetLastError());\n"
            "    MT_CHECK(cudaMemcpy(r, o, sizeof r, cudaMemcpyDeviceToHost));\n"
            f"    for (i = 0; i < {n}; i++) {{\n"
            f"      unsigned long long u[{words}] = {{0}}; memcpy(u, &r[i], sizeof r[i]);\n"
            + "".join(f'      printf("%llx\\n", u[{w}]);\n' for w in range(words))
            + "    }\n  }\n")
    check = ("#define MT_CHECK(e) do { cudaError_t err = (e); if (err != cudaSuccess) { "
             'fprintf(stderr, "%s\\n", cudaGetErrorString(err)); return 1; } } while (0)\n')
    main = ("int main(void) {\n  int count = 0;\n"
            f"  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) return {NO_GPU};\n")
    return ("#include <cstdio>\n#include <cstring>\n" + prelude + check + "".join(decls)
            + "".join(kernels) + main + "".join(body) + "  return 0;\n}\n")


def build_cuda(nvcc, workdir, name, prelude, ctype, cases):
    """Compile the CUDA program of `cases` (for sm_80 and, through its PTX, newer GPUs):
    the executable's path."""
    workdir = pathlib.Path(workdir)
    cu, exe = workdir / f"{name}.cu", workdir / name
    cu.write_text(cuda_source(prelude, ctype, cases))
    subprocess.run([nvcc, "-gencode", "arch=compute_80,code=[sm_80,compute_80]", "-w",
                    str(cu), "-o", str(exe)], check=True, capture_output=True, text=True)
    return exe
