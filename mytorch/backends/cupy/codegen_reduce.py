"""The loops of a fused kernel that ends in a reduction (see codegen.py).

The group's values have the reduction operand's shape S; the reduced axes R hold Rn
elements and the kept axes M outputs. Two schedules:

- "thread": a thread per output (grid-stride over the M outputs), folding its Rn elements
  in order; for short reductions (Rn <= THREAD_MAX_EXTENT), where a block would idle, and
  where the innermost axis is kept and there are at least THREAD_MIN_OUTPUTS outputs
  (a column sum: neighbouring threads read neighbouring elements);
- "block": a block per output (grid-stride over the outputs), each thread folding a strided
  share of the Rn elements, then a tree reduction in `__shared__` memory with
  `__syncthreads()` between levels (the block size is a power of two, fixed in the source).

Both visit every element of S exactly once, so outputs of the group with shape S (values
read after the group besides the reduction) are stored on the way. float16 and bfloat16
accumulate in float32 (as the NumPy kernels do); integer sums and products wrap; max and
min propagate NaN. Complex operands are summed and multiplied; their max/min are not fused.
"""

import numpy as np

from mytorch.backends.cupy import expressions as cx
from mytorch.backends.cupy.codegen_emit import Emitter, Index, literal
from mytorch.core import dtypes
from mytorch.lax import elementwise as ew
from mytorch.lax import reductions as r

THREAD_MAX_EXTENT = 64
THREAD_MIN_OUTPUTS = 1024
BLOCK, WIDE_BLOCK = 256, 1024  # a few long reductions get the widest blocks
# reduction primitive: (combining elementwise primitive, identity by dtype kind)
REDUCERS = {
    r.reduce_sum_p: ew.add_p, r.reduce_prod_p: ew.mul_p, r.reduce_max_p: ew.max_p,
    r.reduce_min_p: ew.min_p, r.reduce_and_p: ew.and_p, r.reduce_or_p: ew.or_p,
    r.reduce_xor_p: ew.xor_p,
}
_HALVES = (np.dtype(np.float16), np.dtype(dtypes.bfloat16))


def accumulator(dtype):
    """The dtype a reduction of `dtype` accumulates in (float32 for float16/bfloat16)."""
    dtype = np.dtype(dtype)
    return np.dtype(np.float32) if dtype in _HALVES else dtype


def identity(prim, dtype):
    """The C constant a fold of `prim` over `dtype` (the accumulator's dtype) starts from."""
    dtype = np.dtype(dtype)
    if prim is r.reduce_prod_p:
        return literal(1, dtype)
    if prim in (r.reduce_max_p, r.reduce_min_p):
        big = prim is r.reduce_min_p
        if dtype == np.bool_:
            return literal(big, dtype)
        if dtype.kind == "f":
            return literal(np.inf if big else -np.inf, dtype)
        if dtype.kind in "iu":
            info = np.iinfo(dtype)
            return literal(info.max if big else info.min, dtype)
        raise TypeError(f"fused reduction: '{prim.name}' on {dtype} is not fused")
    if prim is r.reduce_and_p:
        return literal(True if dtype == np.bool_ else np.array(-1).astype(dtype), dtype)
    return literal(0, dtype)


def combine(prim, dtype):
    """The C template combining accumulator `{0}` with element `{1}` (dtype: the
    accumulator's)."""
    if prim in (r.reduce_max_p, r.reduce_min_p) and np.dtype(dtype).kind == "c":
        raise TypeError(f"fused reduction: '{prim.name}' on {dtype} is not fused")
    op = REDUCERS[prim]
    return cx.expression(op, [dtype, dtype], dtype)


def fusable_reduction(eqn):
    """Whether the reduction `eqn` can end a fused kernel."""
    if eqn.primitive not in REDUCERS:
        return False
    dt = eqn.invars[0].aval.dtype
    try:
        acc = accumulator(dt)
        identity(eqn.primitive, acc)
        combine(eqn.primitive, acc)
        cx.convert(dt, acc)
    except TypeError:
        return False
    return True


def reduction_body(kernel, eqn, producers, inputs, idx_t, strategy, block):
    """(strategy, block size, loops) of a kernel whose group ends in the reduction `eqn`;
    `strategy` None picks "thread" or "block" from the extents, `block` None a block size
    (1024 threads for fewer than 256 outputs of at least 65536 elements each). Sets
    `kernel.out_size` (the number of reduced outputs)."""
    x, out = eqn.invars[0], eqn.outvars[0]
    shape, axes = x.aval.shape, tuple(eqn.params["axes"])
    kept = [d for d in range(len(shape)) if d not in axes]
    m = int(np.prod([shape[d] for d in kept], dtype=np.int64))
    rn = int(np.prod([shape[d] for d in axes], dtype=np.int64))
    kernel.out_size = m
    if strategy is None:
        inner_kept = bool(kept) and kept[-1] == len(shape) - 1
        strategy = "thread" if rn <= THREAD_MAX_EXTENT or (
            inner_kept and m >= THREAD_MIN_OUTPUTS) else "block"
    if strategy not in ("thread", "block"):
        raise ValueError(f"fused reduction: strategy must be 'thread' or 'block', got "
                         f"{strategy!r}")
    if strategy == "thread":
        block = BLOCK
    elif block is None:
        block = WIDE_BLOCK if m < 256 and rn >= 65536 else BLOCK
    elif block < 1 or block & (block - 1):
        raise ValueError(f"fused reduction: the block size must be a power of two, got {block}")
    dt = x.aval.dtype
    acc_dt = accumulator(dt)
    acc_t, fold = cx.ctype(acc_dt), combine(eqn.primitive, acc_dt)
    em = Emitter(producers, inputs, idx_t)
    o_dims = em.decompose("o", tuple(shape[d] for d in kept))
    outer = em.lines
    em.lines = []
    r_dims = em.decompose("r", tuple(shape[d] for d in axes))
    dims = [None] * len(shape)
    for d, c in zip(kept, o_dims, strict=True):
        dims[d] = c
    for d, c in zip(axes, r_dims, strict=True):
        dims[d] = c
    at = Index(shape, dims=tuple(dims))
    val = em.value(x, at)
    stores = []
    for j, v in enumerate(kernel.outvars):
        if v is not out:
            stores.append(f"out{j}[{em.linear(at)}] = {em.value(v, at)};")
    element = cx.convert(dt, acc_dt).format(val)
    stores.append(f"acc = {fold.format('acc', element)};  /* {eqn.primitive.name} */")
    inner = em.lines + stores
    k_out = kernel.outvars.index(out)
    final = cx.convert(acc_dt, dt).format("acc" if strategy == "thread" else "sdata[0]")
    tid = f"({idx_t})blockIdx.x * blockDim.x + threadIdx.x"
    ident = identity(eqn.primitive, acc_dt)
    if strategy == "thread":
        lines = [f"  for ({idx_t} o = {tid}; o < {m}; o += ({idx_t})blockDim.x * gridDim.x) {{"]
        lines += [f"    {s}" for s in outer]
        lines += [f"    {acc_t} acc = {ident};", f"    for ({idx_t} r = 0; r < {rn}; r++) {{"]
        lines += [f"      {s}" for s in inner]
        lines += ["    }", f"    out{k_out}[o] = {final};", "  }"]
        return strategy, block, "\n".join(lines) + "\n"
    lines = [f"  __shared__ {acc_t} sdata[{block}];",
             f"  for ({idx_t} o = blockIdx.x; o < {m}; o += gridDim.x) {{"]
    lines += [f"    {s}" for s in outer]
    lines += [f"    {acc_t} acc = {ident};",
              f"    for ({idx_t} r = threadIdx.x; r < {rn}; r += blockDim.x) {{"]
    lines += [f"      {s}" for s in inner]
    lines += ["    }", "    sdata[threadIdx.x] = acc;", "    __syncthreads();",
              "    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {",
              "      if (threadIdx.x < s) {",
              "        sdata[threadIdx.x] = "
              f"{fold.format('sdata[threadIdx.x]', 'sdata[threadIdx.x + s]')};",
              "      }", "      __syncthreads();", "    }",
              f"    if (threadIdx.x == 0) out{k_out}[o] = {final};",
              "    __syncthreads();  /* sdata[0] is read before the next output reuses it */",
              "  }"]
    return strategy, block, "\n".join(lines) + "\n"
