"""Fused elementwise runs, for the NumPy code generator.

A chain of elementwise ufunc calls costs one Python call and one pass over memory per
operation. A *run* — consecutive elementwise equations producing one shape, reading
operands of that shape, 0-d values or literals — is instead computed as a whole:

- where compiled loops are available (native.py), a run of at least `NATIVE_MIN_SIZE`
  elements is one call of a compiled ufunc (fusion_c.py), every intermediate in registers;
- otherwise a run of at least `MIN_SIZE` elements is evaluated block by block: each block
  of `BLOCK_BYTES` per value stays in cache while every equation of the run processes it,
  temporaries live in a few preallocated block-sized scratch buffers, and only values read
  after the run are written to full-size arrays.

    _f0 = np.ravel(a0); v3 = np.empty((4194304,), _dt1); _o0 = np.ravel(v3)
    _s0 = np.empty(32768, _dt1); ...
    for _i in range(0, 4194304 - 32768 + 1, 32768):
        _blk2(_f0[_i:_i + 32768], _o0[_i:_i + 32768], _s0, _s1)
    ... (the tail block, when the size is not a multiple)
"""

import math

from mytorch.backends.numpy import native
from mytorch.backends.numpy.emitters import EMITTERS, fusable, inline_ok
from mytorch.backends.numpy.fusion_c import compiled_loop, eager_loop, has_c
from mytorch.backends.numpy.fusion_sums import REDUCTIONS, call_axes, reduction_mode
from mytorch.core.jaxpr import Literal, Var
from mytorch.lax.elementwise import clamp_p, select_n_p

BLOCK_BYTES = 128 * 1024  # per value in a block: scratch buffers stay in L2
MIN_SIZE = 1 << 18  # smaller arrays (<= 1 MiB of float32) stay in L2 between ufuncs anyway
# with compiled loops (native.py) a run is one call instead of one per operation
NATIVE_MIN_SIZE = 1 << 9  # (smaller: few ufunc calls to save, no compiler run for them)
# ... in a loop's body (control_flow_inline.Section), run once per step, from this size: a
# compiled call costs about what one ufunc call does (W7's 8x32 RNN step: 0.56x -> 0.46x)
LOOP_NATIVE_MIN_SIZE = 1 << 7
# ... or, in a function compiling some run anyway, from this many equations: one call
# instead of many (an optimiser's updates of the biases)
NATIVE_SMALL_LENGTH = 8
MIN_LENGTH = 2
MIN_BLOCK = 1024  # elements


def find_runs(eqns, native_min_size=None):
    """(emission order: equation indices, {index of a run's first equation: the run's
    equation indices}) of the fusable runs. Equations that do not read the open run's
    results (and have no effects) are emitted before it, so they do not break it; those
    are searched for runs of their own (an optimiser's updates of parameters of several
    shapes, interleaved, become one run per shape). Compiled runs have at least
    `native_min_size` elements (NATIVE_MIN_SIZE by default)."""
    compiled = native.available()
    least = (native_min_size or NATIVE_MIN_SIZE) if compiled else MIN_SIZE
    fits = [_run_shape(e, compiled) for e in eqns]  # any size
    shapes = [s if s is not None and math.prod(s) >= least else None for s in fits]
    order, runs = _schedule(eqns, shapes, list(range(len(eqns))))
    # a library is built anyway: long runs of small arrays join it
    if compiled and runs and sum(s is not None for s in fits) - sum(
            s is not None for s in shapes) >= NATIVE_SMALL_LENGTH:
        order, runs = _schedule(eqns, fits, list(range(len(eqns))), least)
    return order, runs


def _schedule(eqns, shapes, idx, least=None):
    """find_runs over the equations `idx` (indices in program order)."""
    order, runs, k = [], {}, 0
    while k < len(idx):
        i = idx[k]
        shape = shapes[i]
        if shape is None:
            order.append(i)
            k += 1
            continue
        run, defined, hoisted = [i], set(eqns[i].outvars), []
        # a run's sums (fusion_sums.reduction_mode) are of one kind and dtype, and are read
        # by no member of the run
        kind = _sum_kind(eqns[i])
        summed = set(eqns[i].outvars) if kind else set()
        m = k + 1
        while m < len(idx):
            j = idx[m]
            e = eqns[j]
            if shapes[j] == shape and not any(v in summed for v in e.invars):
                this = _sum_kind(e)
                if this:
                    if kind not in (None, this):
                        break
                    kind = this
                    summed.update(e.outvars)
                run.append(j)
                defined.update(e.outvars)
            elif not e.primitive.effectful and not any(
                    type(v) is Var and v in defined for v in e.invars):
                hoisted.append(j)
            else:
                break
            m += 1
        if len(run) < (MIN_LENGTH if least is None or math.prod(shape) >= least
                       else NATIVE_SMALL_LENGTH):  # no run starts here; a later one may
            order.append(i)
            k += 1
            continue
        sub_order, sub_runs = _schedule(eqns, shapes, hoisted, least)
        order += sub_order
        runs.update(sub_runs)
        order.append(i)
        runs[i] = run
        k = m
    return order, runs


def _sum_kind(eqn):
    """(reduction_mode, dtype, primitive) of a reduction (sum, max, min) a compiled loop
    computes, or None."""
    mode = reduction_mode(eqn)
    return (mode, eqn.outvars[0].aval.dtype, eqn.primitive) if mode else None


def _run_shape(eqn, compiled):
    """The shape of the run `eqn` may belong to, of any size (find_runs applies the size
    thresholds), or None (cheap tests first). A sum a compiled loop computes belongs to runs
    of its operand's shape."""
    if len(eqn.outvars) != 1:
        return None
    if compiled and eqn.primitive in REDUCTIONS:
        return eqn.invars[0].aval.shape if reduction_mode(eqn) else None
    shape = eqn.outvars[0].aval.shape
    if not shape:
        return None
    for v in eqn.invars:
        if v.aval.shape and v.aval.shape != shape:
            return None
    return shape if (has_c(eqn) if compiled else fusable(eqn)) else None


# operands an op may overwrite with its result (the others are read after it starts writing)
_IN_PLACE = {clamp_p: (1,), select_n_p: (2,)}


class _BlockGen:
    """The generator seen by emitters inside a block: every result goes to a scratch
    buffer (reused once dead) or to its full-size output's block."""

    def __init__(self, outer, names, out_names, scratch_for):
        self.outer, self.names, self.out_names = outer, names, out_names
        self.scratch_for = scratch_for
        self.free = {}
        self.target = None

    def hoist(self, value, prefix="k"):
        return self.outer.hoist(value, prefix)

    def dtype(self, dt):
        return self.outer.dtype(dt)

    def ufunc(self, name):
        return self.outer.ufunc(name)

    must_write_out = True

    def ufunc_args(self, eqn, args):
        return args  # blocks slice full-size (broadcast) views by rows

    def out_buffer(self, eqn, in_place, only=None):
        return self.target

    def scalar_arg(self, v, default):
        src = self.outer.scalar_of.get(v) if type(v) is Var else None
        return self.outer.src(src, False) if type(src) is Literal else default


def emit_run(gen, eqns, run, pos):
    """Emit the blocked loop computing the run's equations (indices `run` into `eqns`);
    returns the variables it defines that are read later (materialised in full)."""
    members = [eqns[k] for k in run]
    run_pos = pos
    shape = members[0].outvars[0].aval.shape
    size = math.prod(shape)
    defined = {v for e in members for v in e.outvars}
    escaping = [v for e in members for v in e.outvars
                if type(v) is Var and gen.planner.last_use.get(v, -1) > pos]
    inputs, scalars = [], []  # read from before the run: blocks of arrays, whole 0-d values
    for e in members:
        for v in e.invars:
            if type(v) is Var and v not in defined and v not in inputs and v not in scalars:
                (inputs if v.aval.shape else scalars).append(v)
    itemsize = max(v.aval.dtype.itemsize for e in members for v in e.outvars)
    block = max(MIN_BLOCK, BLOCK_BYTES // itemsize)
    # blocks are runs of "rows": the first `lead` axes collapsed into one, the rest kept,
    # with the fewest leading axes that make a row fit in a block
    lead = next(k for k in range(1, len(shape) + 1) if math.prod(shape[k:]) <= block)
    scratch_shape = shape[lead:]
    size = math.prod(shape[:lead])
    block = min(max(1, block // math.prod(scratch_shape)), size)
    by_rows = lead == 1  # axis 0 slices any array (broadcasts, transposes, pooled buffers)
    rows_shape = (size, *scratch_shape)

    sums = [e for e in members if e.primitive in REDUCTIONS]
    totals = [e.outvars[0] for e in sums]
    full = [v for v in escaping if v not in totals]  # written by the loop in full
    small = math.prod(shape) < (gen.native_min_size or NATIVE_MIN_SIZE)
    loop, operands = compiled_loop(gen, members, inputs, scalars, full, totals, small)
    if loop is None and (sums or not all(fusable(e) for e in members)):
        # formed for a compiled loop that is not built after all (too many operands, the
        # compiler failed meanwhile): the members have no blocked form, run them eagerly
        loop, operands = eager_loop(gen, members, inputs, scalars, escaping)
        full, sums, totals = escaping, [], []
    if loop is None:
        fname, scratch = _block_function(gen, members, inputs, scalars, escaping, defined)

    # the loop in the main function
    lines = gen.lines
    in_src = None if loop else [gen.src(v, False) for v in inputs]
    read_at = {}  # input -> the last member reading it
    for k, e in enumerate(members):
        for v in e.invars:
            if type(v) is Var and v in inputs:
                read_at[v] = k
    def_at = {v: k for k, e in enumerate(members) for v in e.outvars}
    for v in totals:
        lines.append(f"{gen.bind(v)} = np.empty({v.aval.shape}, {gen.dtype(v.aval.dtype)})")
    for v in (full if loop else escaping):
        dt = gen.dtype(v.aval.dtype)
        target = gen.bind(v)
        # an input dying here, read for the last time no later than v is written, or a dead
        # buffer; collapsed rows write through np.reshape, a view only of a C-contiguous
        # array, so there a buffer in another layout is replaced by a fresh one
        buf = next((name for x in inputs if read_at[x] <= def_at[v]
                    and x.aval.dtype == v.aval.dtype and x.aval.shape == v.aval.shape
                    and (name := gen.planner.overwrite(x, run_pos))), None)
        buf = buf or gen.planner.take(v.aval)
        fresh = f"np.empty({v.aval.shape}, {dt})"
        if buf and not by_rows and loop is None:
            buf = f"{buf} if {buf}.flags.c_contiguous else {fresh}"
        lines.append(f"{target} = {buf or fresh}")
    if loop is not None:  # one compiled ufunc: NumPy broadcasts, strides and 0-d values
        args = [gen.src(v, False) for v in operands]
        outs = ", ".join(gen.names[v] for v in (*full, *totals))
        axes = ""
        if sums and reduction_mode(sums[0]) == "cols":  # the core dimension leads
            n_arrays = sum(1 for v in operands if v.aval.shape)
            axes = ", axes=" + gen.hoist(call_axes(n_arrays, len(operands) - n_arrays,
                                                   len(full), len(totals)), "ax")
        rows = gen.__dict__.get("row_loops", {}).get(loop)
        if rows is not None:  # every array's rows contiguous: the loop over rows in C
            checks = [f"{a}.strides[-1] in (0, {v.aval.dtype.itemsize})" if v in gen.expand_of
                      else f"{a}.strides[-1] == {v.aval.dtype.itemsize}"
                      for a, v in zip(args, operands, strict=True) if v.aval.shape]
            checks += [f"{gen.names[v]}.strides[-1] == {v.aval.dtype.itemsize}" for v in full]
            loop = f"({rows} if {' and '.join(checks)} else {loop})"
        lines.append(f"{loop}({', '.join(args)}, out=({outs},){axes})")
        return escaping
    def rows(src):  # the array as rows (itself when blocks slice axis 0)
        if by_rows:
            return src
        name = f"_f{gen.next_id()}"
        lines.append(f"{name} = np.reshape({src}, {rows_shape})")
        return name

    flat_in = [rows(src) for src in in_src]
    flat_out = [rows(gen.names[v]) for v in escaping]
    scratch_names = []
    for dt in scratch:
        name = f"_s{gen.next_id()}"
        lines.append(f"{name} = np.empty({(block, *scratch_shape)}, {gen.dtype(dt)})")
        scratch_names.append(name)
    full_blocks = size - size % block
    sl = "[_i:_i + " + str(block) + "]"
    whole = [gen.src(v, False) for v in scalars]
    call = ", ".join([*(n + sl for n in flat_in), *whole, *(n + sl for n in flat_out),
                      *scratch_names])
    lines.append(f"for _i in range(0, {full_blocks}, {block}):")
    lines.append(f"    {fname}({call})")
    if size % block:
        tail = size % block
        args = [*(f"{n}[{full_blocks}:]" for n in flat_in), *whole,
                *(f"{n}[{full_blocks}:]" for n in flat_out),
                *(f"{n}[:{tail}]" for n in scratch_names)]
        lines.append(f"{fname}({', '.join(args)})")
    return escaping


def _block_function(gen, members, inputs, scalars, escaping, defined):
    """Emit the block function of a run (parameters: the inputs' blocks, the 0-d values,
    the outputs' blocks, scratch buffers); returns its name and the scratch dtypes."""
    local = {}
    params = []
    for k, v in enumerate(inputs):
        local[v] = f"x{k}"
        params.append(local[v])
    for k, v in enumerate(scalars):
        local[v] = f"z{k}"
        params.append(local[v])
    out_local = {v: f"o{k}" for k, v in enumerate(escaping)}
    params += list(out_local.values())
    scratch, free, body = [], {}, []
    last_in_run = {}
    for pos, e in enumerate(members):
        for v in e.invars:
            if type(v) is Var and v in defined:
                last_in_run[v] = pos
    bg = _BlockGen(gen, local, out_local, None)
    for pos, e in enumerate(members):
        out = e.outvars[0]
        dying = [v for i, v in enumerate(e.invars)
                 if type(v) is Var and v in defined and v not in out_local
                 and last_in_run.get(v) == pos and v.aval.dtype == out.aval.dtype
                 and e.invars.count(v) == 1 and i in _IN_PLACE.get(e.primitive, (i,))]
        if out in out_local:
            bg.target = out_local[out]
        elif dying:  # in place: elementwise ops may write over an operand they read
            bg.target = local[dying[0]]
        else:
            key = out.aval.dtype
            pool = free.get(key)
            if pool:
                bg.target = pool.pop()
            else:
                bg.target = f"s{len(scratch)}"
                scratch.append(out.aval.dtype)
        args = [_block_src(gen, local, v, type(v) is Literal and inline_ok(e, v))
                for v in e.invars]
        expr = _emit(e, bg, args)
        name = bg.target
        local[out] = name
        body.append(f"    {expr}")
        for v in set(e.invars):
            if type(v) is Var and v in defined and v not in out_local \
                    and last_in_run.get(v) == pos and local[v] != name:
                free.setdefault(v.aval.dtype, []).append(local[v])
        if out not in out_local and out not in last_in_run:
            free.setdefault(out.aval.dtype, []).append(name)
    params += [f"s{k}" for k in range(len(scratch))]
    fname = f"_blk{len(gen.blocks)}"
    gen.blocks.append(f"def {fname}({', '.join(params)}):\n" + "\n".join(body) + "\n")
    return fname, scratch


def _block_src(gen, local, v, scalar_ok):
    if type(v) is Literal:
        return gen.src(v, scalar_ok)
    return local[v]


def _emit(eqn, bg, args):
    out = EMITTERS[eqn.primitive](bg, eqn, args)
    if out is None:  # pragma: no cover - fusable() promised an emitter
        raise AssertionError(f"no fused emitter for {eqn.primitive.name}")
    return out.expr
