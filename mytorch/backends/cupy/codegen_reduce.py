"""The loops of a fused kernel that holds a reduction (see codegen.py).

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
min propagate NaN. argmax and argmin carry the index beside the value and return NumPy's
index: the first of equal values, a NaN counting as the largest (smallest) one. Complex
operands are summed and multiplied; their max/min/argmax/argmin are not fused.
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
ARG_REDUCERS = {r.argmax_p: ">", r.argmin_p: "<"}  # index of the first max / min
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


def is_reduction(prim):
    """Whether `prim` is a reduction a fused kernel may end with."""
    return prim in REDUCERS or prim in ARG_REDUCERS


def fusable_reduction(eqn):
    """Whether the reduction `eqn` can end a fused kernel."""
    if not is_reduction(eqn.primitive):
        return False
    dt = eqn.invars[0].aval.dtype
    try:
        acc = accumulator(dt)
        if eqn.primitive in ARG_REDUCERS:
            cx.ctype(eqn.outvars[0].aval.dtype)
            return np.dtype(dt).kind != "c" and bool(cx.convert(dt, acc))
        identity(eqn.primitive, acc)
        combine(eqn.primitive, acc)
        cx.convert(dt, acc)
    except TypeError:
        return False
    return True


def reduction_body(kernel, eqn, producers, inputs, idx_t, strategy, block):
    """(strategy, block size, loops) of a kernel whose group holds the reduction `eqn`;
    `strategy` None picks "thread" or "block" from the extents, `block` None a block size
    (the power of two at or above the reduced extent, 32 to 256 threads; 1024 for fewer
    than 256 outputs of at least 65536 elements each). Sets `kernel.out_size` (the number
    of reduced outputs)."""
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
    elif block is None:  # no more threads than elements (a power of two, 32 to 1024)
        block = WIDE_BLOCK if m < 256 and rn >= 65536 else min(BLOCK, max(
            32, 1 << (rn - 1).bit_length()))
    elif block < 1 or block & (block - 1):
        raise ValueError(f"fused reduction: the block size must be a power of two, got {block}")
    fold = _Fold(eqn)
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
    inner = em.lines + stores + fold.step(val)
    k_out = kernel.outvars.index(out)
    tid = f"({idx_t})blockIdx.x * blockDim.x + threadIdx.x"
    if strategy == "thread":
        lines = [f"  for ({idx_t} o = {tid}; o < {m}; o += ({idx_t})blockDim.x * gridDim.x) {{"]
        lines += [f"    {s}" for s in outer + fold.start()]
        lines += [f"    for ({idx_t} r = 0; r < {rn}; r++) {{"]
        lines += [f"      {s}" for s in inner]
        lines += ["    }", f"    out{k_out}[o] = {fold.result('acc', 'acci')};", "  }"]
        return strategy, block, "\n".join(lines) + "\n"
    lines = [f"  {s}" for s in fold.shared(block)]
    lines += [f"  for ({idx_t} o = blockIdx.x; o < {m}; o += gridDim.x) {{"]
    lines += [f"    {s}" for s in outer + fold.start()]
    lines += [f"    for ({idx_t} r = threadIdx.x; r < {rn}; r += blockDim.x) {{"]
    lines += [f"      {s}" for s in inner]
    lines += ["    }"] + [f"    {s}" for s in fold.to_shared()]
    lines += ["    __syncthreads();", "    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {",
              "      if (threadIdx.x < s) {"]
    lines += [f"        {s}" for s in fold.tree()]
    lines += ["      }", "      __syncthreads();", "    }",
              f"    if (threadIdx.x == 0) out{k_out}[o] = {fold.result('sdata[0]', 'sidx[0]')};",
              "    __syncthreads();  /* sdata[0] is read before the next output reuses it */",
              "  }"]
    return strategy, block, "\n".join(lines) + "\n"


class _Fold:
    """The C statements of one reduction's accumulation: `acc` (and, for argmax/argmin,
    its index `acci`) per thread, `sdata` (and `sidx`) in shared memory."""

    def __init__(self, eqn):
        self.prim, self.name = eqn.primitive, eqn.primitive.name
        self.dt = np.dtype(eqn.invars[0].aval.dtype)
        self.acc_dt = accumulator(self.dt)
        self.acc_t = cx.ctype(self.acc_dt)
        self.arg = self.prim in ARG_REDUCERS
        if self.arg:
            self.index_t = cx.ctype(eqn.outvars[0].aval.dtype)
            self.ident = literal(0, self.acc_dt)
        else:
            self.op = combine(self.prim, self.acc_dt)
            self.ident = identity(self.prim, self.acc_dt)

    def start(self):
        return [f"{self.acc_t} acc = {self.ident};"] + (
            ["long long acci = -1;"] if self.arg else [])

    def _better(self, bv, bi, av, ai):
        """Whether (bv, bi) replaces (av, ai): the larger (smaller) value, NaN counting as
        the largest (smallest), the first index among equals; an index < 0 is empty."""
        cmp = ARG_REDUCERS[self.prim]
        if self.acc_dt.kind in "fc":
            return (f"({ai} < 0 || ({bv} != {bv} ? ({av} == {av} || {bi} < {ai}) : "
                    f"({av} == {av} && ({bv} {cmp} {av} || ({bv} == {av} && {bi} < {ai})))))")
        return f"({ai} < 0 || {bv} {cmp} {av} || ({bv} == {av} && {bi} < {ai}))"

    def step(self, val):
        element = cx.convert(self.dt, self.acc_dt).format(val)
        if not self.arg:
            return [f"acc = {self.op.format('acc', element)};  /* {self.name} */"]
        return [f"const {self.acc_t} e = {element};",
                f"if ({self._better('e', 'r', 'acc', 'acci')}) {{ acc = e; acci = r; }}"
                f"  /* {self.name} */"]

    def shared(self, block):
        return [f"__shared__ {self.acc_t} sdata[{block}];"] + (
            [f"__shared__ long long sidx[{block}];"] if self.arg else [])

    def to_shared(self):
        return ["sdata[threadIdx.x] = acc;"] + (["sidx[threadIdx.x] = acci;"] if self.arg
                                                 else [])

    def tree(self):
        a, b = "sdata[threadIdx.x]", "sdata[threadIdx.x + s]"
        if not self.arg:
            return [f"{a} = {self.op.format(a, b)};"]
        ai, bi = "sidx[threadIdx.x]", "sidx[threadIdx.x + s]"
        return [f"if ({bi} >= 0 && {self._better(b, bi, a, ai)}) {{ {a} = {b}; {ai} = {bi}; }}"]

    def result(self, acc, acci):
        if self.arg:
            return f"(({self.index_t}){acci})"
        return cx.convert(self.acc_dt, self.dt).format(acc)
