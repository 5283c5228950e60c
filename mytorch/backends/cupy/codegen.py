"""CUDA C++ source for a fused group of equations (see fusion.py): ONE kernel per group.

A group is a list of equations computing values of one *iteration shape* S (elementwise
primitives, converts, broadcast_in_dim, order-keeping reshapes, iota, zeros), and at most
one reduction of a value of shape S (codegen_reduce.py). The kernel walks S with a
grid-stride loop; each value is computed where it is needed, as a function of the element's
coordinates: an elementwise equation at the coordinates of its result, a broadcast at the
coordinates of its operand (0 on broadcast dims), a reshape at the coordinates of the same
row-major position in its operand, a group input loaded at its row-major offset (strides
and shapes are constants folded into the source). Only the group's outputs are stored.

    extern "C" __global__ void mt_exp_broadcast_in_dim_add_d20d7e3ac7(
        const float* __restrict__ in0, const float* __restrict__ in1, float* __restrict__ out0) {
      /* [3,5]: exp, broadcast_in_dim, add */
      for (int i = (int)blockIdx.x * blockDim.x + threadIdx.x; i < 15; i += ...) {
        const float v0 = in0[i];  /* load in0 */
        const float v1 = expf(v0);  /* exp */
        const float v2 = in1[i % 5];  /* load in1 */
        const float v3 = v2;  /* broadcast_in_dim */
        const float v4 = (v1 + v3);  /* add */
        out0[i] = v4;
      }
    }

Indices are 32-bit unless the iteration space (plus a grid's stride) exceeds 2**31 - 1
elements. Elementwise kernels move K contiguous elements per thread per step (K: 16 bytes
over the widest stored or vector-loaded element, 2 to 8): group inputs of shape S and
outputs as one aligned `mt_vec<T, K>` load or store; when the size is not a multiple of K
(from VECTOR_TAIL_MIN elements on; smaller such kernels stay scalar) a scalar loop does the
last elements.
"""

import hashlib
import math

import numpy as np

from mytorch.backends.cupy import codegen_reduce as red
from mytorch.backends.cupy import expressions as cx
from mytorch.backends.cupy.codegen_emit import Emitter, Index
from mytorch.core import dtypes

_BF16 = np.dtype(dtypes.bfloat16)
INT32_LIMIT = 2**31 - 1
MAX_GRID = 8192  # blocks of a grid-stride launch
MAX_STRIDE = MAX_GRID * 1024  # the largest grid stride any launch uses (in vectors or elements)
BLOCK = 256
VECTOR_TAIL_MIN = 4096  # sizes not a multiple of the vector width vectorise from here on

# helpers the generated kernels share (after expressions.PRELUDE in a module)
CODEGEN_PRELUDE = r"""
/* K contiguous elements, aligned to their size: one vector load or store */
template <typename T, int K> struct alignas(sizeof(T) * K) mt_vec { T v[K]; };
"""


class FusedKernel:
    """One generated CUDA kernel computing a fused group of equations.

    Attributes:
      name: the kernel's name (readable, ending in a hash of its source).
      source: its `extern "C" __global__` definition (no headers, no prelude).
      signatures: {name: arg types}: one "ptr" per input, then one per output.
      in_avals, out_avals: ShapedArrays of the inputs and outputs (outputs in the order of
        the group's outvars).
      index64: whether indices are 64-bit. vec: elements per thread step (1: scalar);
      vector_inputs: the inputs loaded `vec` at a time (aligned to `vec` elements).
      strategy: "elementwise", or "thread" / "block" (a thread or a block per reduced output).
      block: the block size a launch uses (fixed for "block": its shared array's size).
    """

    def __init__(self, eqns, invars, outvars, *, index64=None, reduce_strategy=None,
                 reduce_block=None, vectorize=True, dynamic_size=False):
        self.eqns, self.invars, self.outvars = list(eqns), list(invars), list(outvars)
        self.dynamic = bool(dynamic_size)
        self.in_avals = [v.aval for v in invars]
        self.out_avals = [v.aval for v in outvars]
        reductions = [e for e in eqns if red.is_reduction(e.primitive)]
        if len(reductions) > 1:
            raise ValueError(f"fused kernel: a group has at most one reduction, got "
                             f"{[e.primitive.name for e in reductions]}")
        reduction = reductions[0] if reductions else None
        shape = (reduction.invars[0].aval.shape if reduction is not None
                 else self.out_avals[0].shape)
        self.shape, self.size = tuple(shape), math.prod(shape)
        bad = [v.aval.str_short() for v in outvars
               if v.aval.shape != self.shape and (reduction is None
                                                  or v is not reduction.outvars[0])]
        if bad:
            raise ValueError(f"fused kernel: outputs {bad} do not have the group's iteration "
                             f"shape {self.shape}")
        limit = INT32_LIMIT - MAX_STRIDE
        self.index64 = self.size > limit if index64 is None else bool(index64)
        idx_t = "long long" if self.index64 else "int"
        producers = {o: (e, k) for e in eqns for k, o in enumerate(e.outvars)}
        inputs = {v: j for j, v in enumerate(invars)}
        prims = []
        for e in eqns:
            if e.primitive.name not in prims:
                prims.append(e.primitive.name)
        self.summary = f"{_short(self.shape)}: {', '.join(prims)}"
        params = ([f"const {cx.ctype(a.dtype)}* __restrict__ in{j}"
                   for j, a in enumerate(self.in_avals)]
                  + [f"{cx.ctype(a.dtype)}* __restrict__ out{j}"
                     for j, a in enumerate(self.out_avals)])
        arg_types = ("ptr",) * len(params)
        if self.dynamic:  # one flat loop over a size given at launch (eager kernels)
            if reduction is not None or len(self.shape) > 1:
                raise ValueError("fused kernel: a dynamic size needs a flat elementwise group")
            vectorize = False
            params.append(f"const {idx_t} n")
            arg_types += ("i64" if self.index64 else "i32",)
        if reduction is None:
            self.strategy, self.block = "elementwise", BLOCK
            body, self.vec, self.vector_inputs = _elementwise_body(self, producers, inputs,
                                                                   idx_t, vectorize)
        else:
            self.vec, self.vector_inputs = 1, frozenset()
            self.strategy, self.block, body = red.reduction_body(
                self, reduction, producers, inputs, idx_t, reduce_strategy, reduce_block)
        stem = "_".join(p for p in prims[:3])
        template = (f'extern "C" __global__ void @NAME@({", ".join(params)}) {{\n'
                    f"  /* {self.summary} */\n{body}}}\n")
        digest = hashlib.sha256(template.encode()).hexdigest()[:10]
        self.name = f"mt_{stem}_{digest}"
        self.source = template.replace("@NAME@", self.name)
        self.signatures = {self.name: arg_types}

    def launch_shape(self, grid=None):
        """(grid, block) of a launch, or None when there is nothing to compute."""
        if self.strategy == "elementwise":
            work = self.size // self.vec
        elif self.strategy == "thread":
            work = self.out_size
        else:
            work = self.out_size * self.block
        if work == 0:
            return None
        blocks = min(MAX_GRID, -(-work // self.block))
        return (blocks if grid is None else int(grid)), self.block

    def run_sized(self, fns, xp, inputs, shape):
        """Launch a dynamic-size kernel over `shape`: `inputs` are C-contiguous arrays of
        that many elements (any shape) or 0-d; the new outputs have `shape`."""
        n = math.prod(shape)
        outs = [_empty(xp, shape, a.dtype) for a in self.out_avals]
        if n:
            blocks = min(MAX_GRID, -(-n // self.block))
            fns[self.name](blocks, self.block, [*inputs, *outs, n])
        return outs

    def run(self, fns, xp, inputs, grid=None):
        """Launch the kernel on `inputs` (xp arrays of `in_avals`); the new outputs (a list).

        `fns` is what the runtime's `compile` returned for a module holding this kernel;
        `grid` overrides the number of blocks (the loops are grid-stride)."""
        if len(inputs) != len(self.in_avals):
            raise TypeError(f"{self.name} takes {len(self.in_avals)} inputs, got {len(inputs)}")
        args = []
        for j, (x, a) in enumerate(zip(inputs, self.in_avals, strict=True)):
            if tuple(x.shape) != a.shape or not _holds(x.dtype, a.dtype):
                raise ValueError(f"{self.name}: input {j} must be {a.str_short()}, got "
                                 f"{np.dtype(x.dtype)}{list(x.shape)}")
            x = xp.ascontiguousarray(x)
            if j in self.vector_inputs and _address(x) % (self.vec * x.dtype.itemsize):
                x = x.copy()
            args.append(x)
        outs = [_empty(xp, a.shape, a.dtype) for a in self.out_avals]
        launch = self.launch_shape(grid)
        if launch is not None:
            fns[self.name](launch[0], launch[1], args + outs)
        return outs


def _short(shape):
    return "[" + ",".join(map(str, shape)) + "]"


def _holds(have, want):
    """Whether a buffer of dtype `have` holds elements of `want` (bfloat16 may be kept as
    its 16 bits where the array module has no bfloat16)."""
    have, want = np.dtype(have), np.dtype(want)
    return have == want or (want == _BF16 and have == np.uint16)


def _address(x):
    if isinstance(x, np.ndarray):
        return x.ctypes.data
    return x.data.ptr  # a CuPy array


def _empty(xp, shape, dtype):
    """An uninitialised array, 16-byte aligned (NumPy's allocator promises less for small
    arrays; CuPy's pool gives 256-byte alignment)."""
    if xp is not np:
        try:
            return xp.empty(shape, dtype)
        except TypeError:  # no bfloat16 in this array module: its bits
            if np.dtype(dtype) != _BF16:
                raise
            return xp.empty(shape, np.uint16)
    dtype = np.dtype(dtype)
    n = math.prod(shape) * dtype.itemsize
    raw = np.empty(n + 16, np.uint8)
    off = -raw.ctypes.data % 16
    return raw[off:off + n].view(dtype).reshape(shape)


def _elementwise_body(kernel, producers, inputs, idx_t, vectorize):
    """The grid-stride loop of an elementwise kernel, its vector width and the inputs it
    loads as vectors."""
    n = "n" if kernel.dynamic else kernel.size
    root = Index(kernel.shape, linear="i")
    probe = Emitter(producers, inputs, idx_t)
    loaded = set()

    def spy(j, lin):
        if lin == "i":
            loaded.add(j)
        return f"in{j}[{lin}]"

    probe.load = spy
    for v in kernel.outvars:
        probe.value(v, root)
    widest = max([kernel.in_avals[j].dtype.itemsize for j in loaded]
                 + [a.dtype.itemsize for a in kernel.out_avals])
    k = min(8, 16 // widest) if vectorize else 1
    if k < 2 or n < k or (n % k and n < VECTOR_TAIL_MIN):
        k = 1
    tid = f"({idx_t})blockIdx.x * blockDim.x + threadIdx.x"
    step = f"({idx_t})blockDim.x * gridDim.x"

    def scalar_loop(start):
        em = Emitter(producers, inputs, idx_t)
        stores = [f"out{j}[i] = {em.value(v, root)};" for j, v in enumerate(kernel.outvars)]
        inner = "".join(f"    {s}\n" for s in em.lines + stores)
        first = tid if start == 0 else f"{start} + {tid}"
        return f"  for ({idx_t} i = {first}; i < {n}; i += {step}) {{\n{inner}  }}\n"

    if k == 1:
        return scalar_loop(0), 1, frozenset()
    em = Emitter(producers, inputs, idx_t,
                 load=lambda j, lin: f"vin{j}.v[k]" if lin == "i" else f"in{j}[{lin}]")
    stores = [f"vout{j}.v[k] = {em.value(v, root)};" for j, v in enumerate(kernel.outvars)]
    vt = {j: f"mt_vec<{cx.ctype(kernel.in_avals[j].dtype)}, {k}>" for j in sorted(loaded)}
    ot = [f"mt_vec<{cx.ctype(a.dtype)}, {k}>" for a in kernel.out_avals]
    lines = [f"  for ({idx_t} j = {tid}; j < {n // k}; j += {step}) {{"]
    lines += [f"    const {t} vin{j} = ((const {t}*)in{j})[j];" for j, t in vt.items()]
    lines += [f"    {t} vout{j};" for j, t in enumerate(ot)]
    lines += ["    #pragma unroll", f"    for (int k = 0; k < {k}; k++) {{",
              f"      const {idx_t} i = j * {k} + k;"]
    lines += [f"      {s}" for s in em.lines + stores]
    lines += ["    }"] + [f"    (({t}*)out{j})[j] = vout{j};" for j, t in enumerate(ot)]
    lines += ["  }"]
    body = "\n".join(lines) + "\n"
    if n % k:  # the last n % k elements, one per thread
        body += f"  /* the last {n % k} elements */\n" + scalar_loop(n - n % k)
    return body, k, frozenset(loaded)


def module_source(kernels):
    """One CUDA module for `kernels` (FusedKernels): the expressions' prelude and the shared
    helpers once, then each distinct kernel once (what `runtime.compile` gets for a jit)."""
    seen, parts = set(), []
    for k in kernels:
        if k.name not in seen:
            seen.add(k.name)
            parts.append(k.source)
    return cx.PRELUDE + CODEGEN_PRELUDE + "\n".join(parts)


def signatures(kernels):
    """{name: arg types} of `kernels` (what `runtime.compile` takes beside module_source)."""
    out = {}
    for k in kernels:
        out.update(k.signatures)
    return out
