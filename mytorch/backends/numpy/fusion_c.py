"""The compiled form of a fused elementwise run (fusion.py): C++ of one loop computing the
run element by element in registers, registered with native.py to be built into a NumPy
ufunc when the generated function first runs.

Each equation's C is the GPU backend's expression of it (backends/cupy/expressions.py,
written to the NumPy kernels' semantics). The loop has NumPy's ufunc inner-loop signature,
with a vectorised path (every array contiguous in the inner dimension) and a strided one.
"""

import math

import numpy as np

from mytorch.backends.numpy import fusion_sums, native
from mytorch.backends.numpy.emitters import native_dtypes
from mytorch.core.ad_util import add_any_p
from mytorch.core.jaxpr import Literal, Var
from mytorch.lax.elementwise import digamma_p, integer_pow_p, lgamma_p

_C_OK = {}  # (primitive, *dtypes, *params) -> C template in a compiled loop, or None
# digamma's series cancels near its roots, where libmvec's log and tan (a few ulp from
# glibc's) move float64 results by up to ~100 ulp: left to the NumPy kernels, as is lgamma
# (glibc's scalar function either way, nothing to vectorise). Complex values are left to
# NumPy too: its complex128 division loop rounds differently from Smith's algorithm in the
# last bits
_NOT_COMPILED = frozenset((digamma_p, lgamma_p))


def has_c(eqn):
    """Whether a compiled loop can compute `eqn`: an elementwise primitive (or add_any)
    with a C expression for its dtypes, all of them real dtypes NumPy computes natively
    (float16 and bfloat16 are computed in float32 by the emitters), integer powers only as
    NumPy's square and cube."""
    return _template(eqn) is not None


def _template(eqn):
    """The C expression template of `eqn` in a compiled loop, or None (see `has_c`);
    memoised by primitive, dtypes and parameters."""
    prim = eqn.primitive
    if prim is not add_any_p and prim.kind != "elementwise" or prim.effectful \
            or prim in _NOT_COMPILED:
        return None
    params = eqn.params
    key = (prim, *[v.aval.dtype for v in eqn.invars], *[v.aval.dtype for v in eqn.outvars],
           *(sorted(params.items()) if params else ()))
    try:
        found = _C_OK.get(key, False)
    except TypeError:  # an unhashable parameter
        key, found = None, False
    if found is False:
        found = None
        dts = [v.aval.dtype for v in (*eqn.invars, *eqn.outvars)]
        if (native_dtypes(eqn) and not any(d.kind == "c" for d in dts)
                and (prim is not integer_pow_p or eqn.params["y"] in (2, 3))):
            y = eqn.params.get("y") if prim is integer_pow_p else None
            if y in (2, 3) and dts[0].kind == "f":  # NumPy's square (and square * x)
                found = "({0} * {0})" + (" * {0}" if y == 3 else "")
            else:
                try:
                    found = _c_template(eqn)
                except TypeError:
                    pass
        if key is not None:
            _C_OK[key] = found
    return found


def _c_template(eqn):
    from mytorch.backends.cupy.codegen_emit import elementwise_template
    return elementwise_template(eqn)


def compiled_loop(gen, members, inputs, scalars, escaping, totals=(), small=False):
    """(the generated code's global name of the compiled ufunc computing the run, its
    operands: full-size arrays then 0-d values), or (None, None) where compiled loops are
    unavailable or an operation has no C expression. Inputs that broadcast a 0-d value are
    read as that value. A run with sums (`totals`, the results of its reduce_sum members)
    is a generalized ufunc returning them after `escaping` (fusion_sums.py). A `small` run
    (under the generator's compiled size: fusion.find_runs) gets one contiguous loop and no
    broadcast path. The loops of one generated function are built together when it first
    runs (`native.Group`)."""
    if not (escaping or totals) or not native.available():
        return None, None
    subst = {v: gen.scalar_of[v] for v in inputs if v in gen.scalar_of}
    arrays = [v for v in inputs if v not in subst]
    zero_d = list(scalars)
    for src in subst.values():
        if type(src) is Var and src not in zero_d:
            zero_d.append(src)
    if len(arrays) + len(zero_d) + len(totals) + len(escaping) > native.MAX_ARGS:
        return None, None
    try:
        body = _loop_source(members, arrays, zero_d, escaping, subst, totals, small)
    except TypeError:  # an operation or dtype without a C expression: ufunc blocks
        return None, None
    group = gen.__dict__.get("native_group")
    if group is None:
        group = gen.native_group = native.Group(gen.ns)
    types = [v.aval.dtype.num for v in (*arrays, *zero_d, *escaping, *totals)]
    doc = " ".join(e.primitive.name for e in members)
    name = gen.hoist(None, "nat")
    gen.__dict__.setdefault("loop_texts", []).append((name, doc, body))  # see loop_comment
    fallback = _eager_run(gen.backend, members, arrays, zero_d, [*escaping, *totals], subst)
    sig = fusion_sums.signature(len(arrays), len(zero_d), len(escaping), len(totals)) \
        if totals else None
    pending = gen.ns[name] = group.add(name, body, types, len(arrays) + len(zero_d),
                                       len(escaping) + len(totals), doc, fallback, sig)
    if not totals and _reads_a_row(gen, members, arrays):
        rows = gen.hoist(None, "nat")
        row_body = _by_rows(pending.index, len(arrays), len(zero_d), len(escaping))
        gen.ns[rows] = group.add(
            rows, row_body, types, len(arrays) + len(zero_d), len(escaping),
            doc + " (by rows)", fallback,
            fusion_sums.signature(len(arrays), len(zero_d), len(escaping), 0))
        gen.loop_texts.append((rows, f"{name} (by rows)", row_body))
        gen.__dict__.setdefault("row_loops", {})[name] = rows
    return name, arrays + zero_d


ROW_MIN = 32  # the last axis of a run with a row form (_by_rows): vectorised row by row
# ... and its rows: each saves about 50 ns of NumPy's iteration, while the form costs a
# strides check and a generalized ufunc's dearer call (W7's 8x32 RNN steps: 19 % slower;
# W9's 64-row runs: no gain)
ROW_MIN_ROWS = 128


def _reads_a_row(gen, members, arrays):
    """Whether the run (of two or more axes, the last of at least ROW_MIN elements, at least
    ROW_MIN_ROWS rows) reads a row broadcast along its leading axes, as a bias: NumPy's
    iterator cannot merge the rows of such an operand (stride 0 along axis 0) and calls a
    plain ufunc's loop once per row, about 50 ns a call (f32[128,512]: `relu(z + b)` 16.0
    us against 7.3 us for `z * 2`)."""
    shape = members[0].outvars[0].aval.shape
    if len(shape) < 2 or shape[-1] < ROW_MIN or math.prod(shape[:-1]) < ROW_MIN_ROWS:
        return False
    for v in arrays:
        src = gen.expand_of.get(v)
        if src is not None and src[1][0] == 1 and src[1][-1] == shape[-1]:
            return True
    return False


def _by_rows(plain, n_arrays, n_scalars, n_out):
    """C++ of a generalized ufunc "(n),...,()->(n)" that loops over the leading axes itself
    and calls the plain loop `plain` (its index in the function's library) once per row
    with the row's pointers and the core strides (0-d operands: stride 0). The generated
    code calls it only when every array's rows are contiguous (fusion.emit_run), so it runs
    each row through the plain loop's vectorised path, as NumPy would."""
    nargs = n_arrays + n_scalars + n_out
    cores, j = [], 0
    for k in range(nargs):
        if n_arrays <= k < n_arrays + n_scalars:
            cores.append("0")
        else:
            cores.append(f"steps[{nargs + j}]")
            j += 1
    return ("static void mt_loop(char **args, const npy_intp *dims, const npy_intp *steps, "
            "void *data) {\n"
            "  const npy_intp loops = dims[0], n = dims[1];\n"
            f"  const npy_intp core[{nargs}] = {{{', '.join(cores)}}};\n"
            f"  char *row[{nargs}];\n"
            "  for (npy_intp o = 0; o < loops; o++) {\n"
            f"    for (int k = 0; k < {nargs}; k++) row[k] = args[k] + o * steps[k];\n"
            f"    mt_l{plain}::mt_loop(row, &n, core, data);\n"
            "  }\n}\n")


def loop_comment(name, doc, body):
    """The C++ of a compiled loop as the comment `as_text()` shows above the function."""
    return (f"# {name}: a compiled loop ({doc}), C++ built on the first call:\n"
            + "".join(f"#   {line}\n" for line in body.splitlines()) + "\n")


def eager_loop(gen, members, inputs, scalars, escaping):
    """(the global name of a function computing the run with the eager kernels, its
    operands): for a run formed for a compiled loop that cannot be built."""
    name = gen.hoist(_eager_run(gen.backend, members, inputs, scalars, escaping, {}), "run")
    return name, [*inputs, *scalars]


def _eager_run(backend, members, inputs, scalars, escaping, subst):
    """fn(*operands, out=outputs) computing the run with the backend's eager kernels, one
    equation at a time: what runs if the compiled loops cannot be built."""
    def value(env, v):
        v = subst.get(v, v)
        return np.asarray(v.val, v.aval.dtype) if type(v) is Literal else env[v]

    def run(*operands, out, axes=None):  # (axes: a generalized ufunc's, see fusion_sums)
        env = dict(zip((*inputs, *scalars), operands, strict=True))
        for e in members:
            args = [value(env, v) for v in e.invars]
            res = backend.kernel(e.primitive)(*args, **e.params)
            env[e.outvars[0]] = res[0] if isinstance(res, (list, tuple)) else res
        for v, buf in zip(escaping, out, strict=True):
            np.copyto(buf, env[v])
        return out

    return run


def _loop_source(members, inputs, scalars, escaping, subst, totals=(), small=False):
    """C++ of the run's ufunc inner loop `mt_loop`: the run's equations on element i of each
    input, in registers, stored to the outputs; a vectorised loop where every array is
    contiguous, a strided one otherwise (raises TypeError where an operation has no C
    expression)."""
    from mytorch.backends.cupy import expressions as cx
    from mytorch.backends.cupy.codegen_emit import literal

    head, fast, slow, body, names = [], [], [], [], {}
    arrays = [*inputs, *(None for _ in scalars), *escaping]
    for k, v in enumerate(inputs):
        t = _mem(cx, v)
        fast.append(f"    const {t} *in{k} = (const {t} *)args[{k}];")
        names[v] = f"x{k}"
    for k, v in enumerate(scalars):
        head.append(f"  const {cx.ctype(v.aval.dtype)} z{k} = "
                    f"*(const {_mem(cx, v)} *)args[{len(inputs) + k}];")
        names[v] = f"z{k}"
    first_out = len(inputs) + len(scalars)
    for k, v in enumerate(escaping):
        t = _mem(cx, v)
        fast.append(f"    {t} *out{k} = ({t} *)args[{first_out + k}];")
    for v, src in subst.items():  # broadcasts of 0-d values
        names[v] = literal(src.val, src.aval.dtype) if type(src) is Literal else names[src]
    for k, e in enumerate(members):
        out = e.outvars[0]
        if e.primitive in fusion_sums.REDUCTIONS:
            body.append(None)
            continue
        ops = [literal(v.val, v.aval.dtype) if type(v) is Literal else names[v]
               for v in e.invars]
        expr = _template(e).format(*ops)
        body.append(f"const {cx.ctype(out.aval.dtype)} t{k} = {expr};")
        names[out] = f"t{k}"
    if totals:
        mode = next(fusion_sums.reduction_mode(e) for e in members
                    if e.primitive in fusion_sums.REDUCTIONS)
        return fusion_sums.loop_source(cx.ctype, lambda v: _mem(cx, v), members, inputs,
                                       scalars, totals, escaping, names, body, mode)
    contiguous = " && ".join(f"steps[{k}] == sizeof({_mem(cx, v)})"
                             for k, v in enumerate(arrays) if v is not None)
    loads_fast = [f"const {cx.ctype(v.aval.dtype)} x{k} = in{k}[i];"
                  for k, v in enumerate(inputs)]
    loads_slow = [f"const {cx.ctype(v.aval.dtype)} x{k} = *(const {_mem(cx, v)} *)"
                  f"(args[{k}] + i * steps[{k}]);" for k, v in enumerate(inputs)]
    stores_fast = [f"out{k}[i] = {names[v]};" for k, v in enumerate(escaping)]
    stores_slow = [f"*({_mem(cx, v)} *)(args[{first_out + k}] + i * "
                   f"steps[{first_out + k}]) = {names[v]};" for k, v in enumerate(escaping)]
    indent = "\n      "
    # a small run (a long run of small arrays joining a library built anyway) is in L1:
    # one contiguous loop, and broadcasts take the strided path
    if small:
        fast_loops = _loop_text(loads_fast + body + stores_fast, "    ")
        splat = ""
    else:
        fast_loops = _fast_loops(members, inputs, scalars, escaping, subst,
                                 loads_fast, body, stores_fast)
        splat = _splat_path(inputs, escaping, first_out, loads_fast + body + stores_fast, cx)
    slow = loads_slow + body + stores_slow
    return ("static void mt_loop(char **args, const npy_intp *dims, const npy_intp *steps, "
            "void *data) {\n  const npy_intp n = dims[0];\n  if (n <= 0) return;\n"
            + "".join(line + "\n" for line in head)
            + f"  if ({contiguous}) {{\n" + "".join(line + "\n" for line in fast)
            + fast_loops + splat
            + "  } else {\n    for (npy_intp i = 0; i < n; i++) {"
            + indent + indent.join(slow) + "\n    }\n  }\n}\n")


def _fast_loops(members, inputs, scalars, escaping, subst, loads, body, stores):
    """C++ of the contiguous path: one vectorised loop over the run, or, where the run
    has independent parts (`_components`), a loop over each part in turn, unless an
    output of one part is written over an input of another (then one loop: it reads
    element i of every input before storing element i)."""
    def loop(ins, eqs, outs, pad):
        return _loop_text([loads[k] for k in ins] + [body[k] for k in eqs]
                          + [stores[k] for k in outs], pad)

    parts = _components(members, inputs, escaping, {*scalars, *subst})
    whole = (range(len(inputs)), range(len(members)), range(len(escaping)))
    if len(parts) < 2:
        return loop(*whole, "    ")
    part_of_in, part_of_out = [-1] * len(inputs), [-1] * len(escaping)
    for p, (ins, _, outs) in enumerate(parts):
        for k in ins:
            part_of_in[k] = p
        for k in outs:
            part_of_out[k] = p
    first_out = len(inputs) + len(scalars)
    return ("    static const int part_in[] = {" + ", ".join(map(str, part_of_in)) + "};\n"
            "    static const int part_out[] = {" + ", ".join(map(str, part_of_out)) + "};\n"
            "    bool split = true;\n"
            f"    for (int a = 0; a < {len(escaping)}; a++)\n"
            f"      for (int b = 0; b < {len(inputs)}; b++)\n"
            f"        if (part_out[a] != part_in[b] && args[{first_out} + a] == args[b]) "
            "split = false;\n"
            "    if (split) {\n"
            + "".join(loop(*part, "      ") for part in parts)
            + "    } else {\n" + loop(*whole, "      ") + "    }\n")


def _loop_text(statements, pad):
    """C++ of a vectorised loop over i < n running `statements`."""
    return (f"{pad}#pragma omp simd\n{pad}for (npy_intp i = 0; i < n; i++) {{\n"
            + "".join(f"{pad}  {line}\n" for line in statements) + f"{pad}}}\n")


def _components(members, inputs, escaping, invariant):
    """The run split into independent parts: [(indices of its inputs, of its equations,
    of its outputs)] for each set of equations connected through the values they read and
    write, in the run's order. The contiguous path loops over each part in turn: a run
    grouping several parameters' updates (one Adam step over five weights: 35 arrays)
    would otherwise stream every array at once, more streams than the prefetchers follow,
    at offsets 4 KiB apart that contend for the same L1 sets (measured: 3x slower).
    Values in `invariant` (0-d operands) connect nothing."""
    parent = {}

    def find(x):
        while parent.setdefault(x, x) is not x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for e in members:
        root = find(e.outvars[0])
        for v in e.invars:
            if type(v) is Var and v not in invariant:
                parent[find(v)] = root
    parts = {}
    for k, e in enumerate(members):
        parts.setdefault(find(e.outvars[0]), ([], [], []))[1].append(k)
    for k, v in enumerate(inputs):
        if v in parent:  # read by an equation (not only through a 0-d substitution)
            parts[find(v)][0].append(k)
    for k, v in enumerate(escaping):
        parts.setdefault(find(v), ([], [], []))[2].append(k)
    return list(parts.values())


_CHUNK = 128  # elements of a broadcast input's splat buffer (on the stack)


def _splat_path(inputs, escaping, first_out, statements, cx):
    """C++ of the loop's second path: inputs contiguous or broadcast along the inner
    dimension (step 0, e.g. a column `x[:, None]` read across a row), outputs contiguous.
    A broadcast input reads a buffer of its one value, so the inner loop over chunks of
    `_CHUNK` elements is the vectorised loop of the first path."""
    if not inputs:
        return ""
    cond = " && ".join(
        [f"(steps[{k}] == 0 || steps[{k}] == sizeof({_mem(cx, v)}))"
         for k, v in enumerate(inputs)]
        + [f"steps[{first_out + k}] == sizeof({_mem(cx, v)})"
           for k, v in enumerate(escaping)])
    lines = [f"  }} else if ({cond}) {{"]
    for k, v in enumerate(inputs):
        t = _mem(cx, v)
        lines.append(f"    {t} sp{k}[{_CHUNK}];")
        lines.append(f"    if (steps[{k}] == 0) for (int j = 0; j < {_CHUNK}; j++) "
                     f"sp{k}[j] = *(const {t} *)args[{k}];")
    lines.append(f"    for (npy_intp i0 = 0; i0 < n; i0 += {_CHUNK}) {{")
    lines.append(f"      const npy_intp m = n - i0 < {_CHUNK} ? n - i0 : {_CHUNK};")
    for k, v in enumerate(inputs):
        t = _mem(cx, v)
        lines.append(f"      const {t} *in{k} = steps[{k}] == 0 ? sp{k} : "
                     f"(const {t} *)args[{k}] + i0;")
    for k, v in enumerate(escaping):
        t = _mem(cx, v)
        lines.append(f"      {t} *out{k} = ({t} *)args[{first_out + k}] + i0;")
    lines.append("      #pragma omp simd")
    lines.append("      for (npy_intp i = 0; i < m; i++) {")
    lines += [f"        {st}" for st in statements]
    lines.append("      }")
    lines.append("    }")
    return "\n".join(lines) + "\n"


def _mem(cx, v):
    """The C type of `v`'s elements in memory: a bool is read and written as a byte
    (NumPy's bools are 0 or 1), which GCC vectorises where C++ bool loads are not."""
    return "unsigned char" if v.aval.dtype == np.bool_ else cx.ctype(v.aval.dtype)
