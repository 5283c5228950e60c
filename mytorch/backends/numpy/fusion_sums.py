"""Sums at the end of a compiled fused run (fusion_c.py): `reduce_sum` over the last axis
("rows") or over the first axis of at most COLUMN_ROWS rows ("cols"), computed in the loop
that computes its operand, with the eager kernel's rounding, bit for bit:

- rows: NumPy's pairwise sum of each row (blocks of at most 128 values summed with eight
  partial sums, blocks combined as a binary tree), added to 0 (np.add.reduce's identity);
- cols: the rows added one after another to 0, as np.add.reduce adds along a leading
  axis (the eager kernel blocks longer columns, which this loop does not take).

A float `reduce_max` or `reduce_min` over the last axis (a softmax's or logsumexp's row
maximum) ends a run the same way (rows only): NumPy's maximum (minimum) folded over the
row, NaN propagating; the value is np.maximum.reduce's but for the sign of a zero result.
A run's reductions are all of one primitive (fusion._sum_kind).

Such a run is a generalized ufunc, its core dimension the summed axis: full-size operands
and results "(n)", 0-d values and sums "()" (cols: called with `axes=`, the core dimension
first). NumPy hands each call whole rows (or columns), however it iterates the others.
"""

import numpy as np

from mytorch.lax.reductions import reduce_max_p, reduce_min_p, reduce_sum_p

# what a compiled run may end with (max and min over the last axis only)
REDUCTIONS = (reduce_sum_p, reduce_max_p, reduce_min_p)

COLUMN_ROWS = 256  # the eager kernel adds up to this many rows one after another
BLOCK = 128  # NumPy's pairwise-sum block (PW_BLOCKSIZE)


def reduction_mode(eqn):
    """"rows", "cols" or None: how a compiled loop reduces `eqn` (see the module docstring);
    None for anything else than a float32/float64 sum of an array of two or more axes over
    its last axis, or over its first of at most COLUMN_ROWS rows, or such a max or min over
    its last axis."""
    if eqn.primitive not in REDUCTIONS:
        return None
    x, out = eqn.invars[0].aval, eqn.outvars[0].aval
    if x.dtype not in (np.float32, np.float64) or out.dtype != x.dtype or len(x.shape) < 2:
        return None
    axes = tuple(sorted(a % len(x.shape) for a in eqn.params["axes"]))
    if axes == (len(x.shape) - 1,):
        return "rows"
    if axes == (0,) and x.shape[0] <= COLUMN_ROWS and eqn.primitive is reduce_sum_p:
        return "cols"
    return None


def signature(n_arrays, n_scalars, n_full, n_sums):
    """The generalized ufunc's signature."""
    return (",".join(["(n)"] * n_arrays + ["()"] * n_scalars) + "->"
            + ",".join(["(n)"] * n_full + ["()"] * n_sums))


def call_axes(n_arrays, n_scalars, n_full, n_sums):
    """`axes=` of a cols run's call: the first axis is the core dimension."""
    return [(0,)] * n_arrays + [()] * n_scalars + [(0,)] * n_full + [()] * n_sums


def loop_source(ctype, mem, members, inputs, scalars, totals, escaping, names, body, mode):
    """C++ of `mt_loop`, the generalized ufunc's inner loop, for a run whose `totals` are
    sums of `mode` (see the module docstring): dims[0] loop iterations, each a core of
    dims[1] values.

    `names` maps the run's values to their C names (inputs x{k}, 0-d values z{k}, results
    t{k}), `body` holds each member's statement (None for the sums); `ctype(dtype)` and
    `mem(var)` give C types."""
    n_in, n_z, n_out = len(inputs), len(scalars), len(escaping)
    first_out = n_in + n_z
    first_sum = first_out + n_out
    n_ops = first_sum + len(totals)
    core = {k: n_ops + k for k in range(n_in)}  # core steps: arrays, then full outputs
    core.update({first_out + k: n_ops + n_in + k for k in range(n_out)})
    sums = [e for e in members if e.primitive in REDUCTIONS]
    t = ctype(totals[0].aval.dtype)
    prim = sums[0].primitive  # one kind per run (fusion._sum_kind)
    operand = [names[e.invars[0]] for e in sums]
    stmts = [b for b in body if b is not None]
    zs = [f"const {ctype(v.aval.dtype)} z{k} = *(const {mem(v)} *)(args[{n_in + k}] + "
          f"o * steps[{n_in + k}]);" for k, v in enumerate(scalars)]
    typed = [(k, mem(v), v) for k, v in enumerate(inputs)]
    outs = [(first_out + k, mem(v), v) for k, v in enumerate(escaping)]
    loads = [f"const {ctype(v.aval.dtype)} x{k} = in{k}[i];" for k, _, v in typed]
    stores = [f"out{j - first_out}[i] = {names[v]};" for j, _, v in outs]
    lines = ["static void mt_loop(char **args, const npy_intp *dims, const npy_intp *steps, "
             "void *data) {", "  const npy_intp loops = dims[0], n = dims[1];"]
    if mode == "rows":  # per iteration o a row of n values, summed as NumPy does
        unit = [f"(steps[{core[k]}] == 0 || steps[{core[k]}] == sizeof({ty}))"
                for k, ty, _ in typed] + [f"steps[{core[j]}] == sizeof({ty})" for j, ty, _ in outs]
        block = ["struct mt_ctx { char **args; const npy_intp *steps; npy_intp o; bool unit; };",
                 f"static void mt_block(const mt_ctx &c, npy_intp lo, npy_intp m, {t} *sums) {{",
                 "  char **args = c.args;", "  const npy_intp *steps = c.steps;",
                 "  const npy_intp o = c.o;"]
        block += ["  " + z for z in zs]
        block += [f"  {t} r{k}[{BLOCK}];" for k in range(len(sums))]
        block += ["  if (c.unit) {"]
        block += _pointers(typed, outs, first_out, "    ", lambda k: f"steps[{core[k]}]",
                           lambda k: f"args[{k}] + o * steps[{k}]", "lo")
        block += ["    #pragma omp simd", "    for (npy_intp i = 0; i < m; i++) {"]
        block += ["      " + st for st in loads + stmts + stores]
        block += [f"      r{k}[i] = {op};" for k, op in enumerate(operand)]
        block += ["    }", "  } else {", "    for (npy_intp i = 0; i < m; i++) {"]
        block += [f"      const {ctype(v.aval.dtype)} x{k} = *(const {ty} *)(args[{k}] + "
                  f"o * steps[{k}] + (lo + i) * steps[{core[k]}]);" for k, ty, v in typed]
        block += ["      " + st for st in stmts]
        block += [f"      *({ty} *)(args[{j}] + o * steps[{j}] + (lo + i) * "
                  f"steps[{core[j]}]) = {names[v]};" for j, ty, v in outs]
        block += [f"      r{k}[i] = {op};" for k, op in enumerate(operand)]
        block += ["    }", "  }"]
        block += [f"  sums[{k}] = mt_block_total(r{k}, m);" for k in range(len(sums))]
        block += ["}",
                  # NumPy's recursion: halves rounded down to a multiple of 8, blocks of
                  # at most 128 values at the leaves, computed left to right
                  f"static void mt_tree(const mt_ctx &c, npy_intp lo, npy_intp n, {t} *sums) {{",
                  f"  if (n <= {BLOCK}) {{ mt_block(c, lo, n, sums); return; }}",
                  "  npy_intp half = n / 2;", "  half -= half % 8;",
                  f"  {t} a[{len(sums)}], b[{len(sums)}];",
                  "  mt_tree(c, lo, half, a);", "  mt_tree(c, lo + half, n - half, b);",
                  f"  for (int k = 0; k < {len(sums)}; k++) sums[k] = mt_combine(a[k], b[k]);",
                  "}"]
        lines = block + lines
        lines += ["  const bool unit = " + (" && ".join(unit) or "true") + ";",
                  "  for (npy_intp o = 0; o < loops; o++) {",
                  "    const mt_ctx c = {args, steps, o, unit};",
                  f"    {t} s[{len(sums)}];",
                  "    if (n > 0) mt_tree(c, 0, n, s);",
                  f"    else for (int k = 0; k < {len(sums)}; k++) s[k] = {_IDENTITY[prim]};"]
        # (a sum is added to np.add.reduce's identity 0, which turns -0.0 into +0.0)
        total = f"({t})0 + s[{{k}}];" if prim is reduce_sum_p else "s[{k}];"
        lines += [f"    *({t} *)(args[{first_sum + k}] + o * steps[{first_sum + k}]) = "
                  + total.format(k=k) for k in range(len(sums))]
        lines += ["  }", "}"]
    else:  # cols: per iteration o a column, the row r of the core at r * its core step
        simd = [f"(steps[{k}] == 0 || steps[{k}] == sizeof({ty}))" for k, ty, _ in typed] \
            + [f"steps[{j}] == sizeof({ty})" for j, ty, _ in outs] \
            + [f"steps[{first_sum + k}] == sizeof({t})" for k in range(len(sums))] \
            + [f"steps[{n_in + k}] == 0" for k in range(n_z)]
        lines += ["  if (" + " && ".join(simd) + ") {"]
        lines += ["    " + z.replace("o * steps", "0 * steps") for z in zs]
        lines += [f"    {t} *acc{k} = ({t} *)args[{first_sum + k}];" for k in range(len(sums))]
        lines += [f"    for (npy_intp i = 0; i < loops; i++) acc{k}[i] = 0;"
                  for k in range(len(sums))]
        lines += ["    for (npy_intp r = 0; r < n; r++) {",  # rows in order, streamed
                  f"      for (npy_intp o0 = 0; o0 < loops; o0 += {BLOCK}) {{",
                  f"        const npy_intp m = loops - o0 < {BLOCK} ? loops - o0 : {BLOCK};"]
        lines += _pointers(typed, outs, first_out, "        ", lambda k: f"steps[{k}]",
                           lambda k: f"args[{k}] + r * steps[{core[k]}]", "o0")
        lines += ["        #pragma omp simd", "        for (npy_intp i = 0; i < m; i++) {"]
        lines += ["          " + st for st in loads + stmts + stores]
        lines += [f"          acc{k}[o0 + i] += {op};" for k, op in enumerate(operand)]
        lines += ["        }", "      }", "    }", "    return;", "  }"]
        lines += ["  for (npy_intp o = 0; o < loops; o++) {"]
        lines += ["    " + z for z in zs]
        lines += [f"    {t} acc{k} = 0;" for k in range(len(sums))]
        lines += ["    for (npy_intp r = 0; r < n; r++) {"]
        lines += [f"      const {ctype(v.aval.dtype)} x{k} = *(const {ty} *)(args[{k}] + "
                  f"o * steps[{k}] + r * steps[{core[k]}]);" for k, ty, v in typed]
        lines += ["      " + st for st in stmts]
        lines += [f"      *({ty} *)(args[{j}] + o * steps[{j}] + r * steps[{core[j]}]) = "
                  f"{names[v]};" for j, ty, v in outs]
        lines += [f"      acc{k} += {op};" for k, op in enumerate(operand)]
        lines += ["    }"]
        lines += [f"    *({t} *)(args[{first_sum + k}] + o * steps[{first_sum + k}]) = acc{k};"
                  for k in range(len(sums))]
        lines += ["  }", "}"]
    return _helpers(t, prim) + "\n".join(lines) + "\n"


def _pointers(typed, outs, first_out, pad, step, base, offset):
    """C lines setting in{k} and out{k} to a chunk of m values `offset` past `base(k)`;
    an input whose `step(k)` is 0 (its one value along the chunk) reads a buffer of m
    copies of it instead, so the chunk's loop vectorises."""
    lines = []
    for k, ty, _ in typed:
        lines += [f"{pad}{ty} sp{k}[{BLOCK}];",
                  f"{pad}if ({step(k)} == 0) for (int j = 0; j < m; j++) "
                  f"sp{k}[j] = *(const {ty} *)({base(k)});",
                  f"{pad}const {ty} *in{k} = {step(k)} == 0 ? sp{k} : "
                  f"(const {ty} *)({base(k)}) + {offset};"]
    for j, ty, _ in outs:
        lines.append(f"{pad}{ty} *out{j - first_out} = ({ty} *)({base(j)}) + {offset};")
    return lines


_IDENTITY = {reduce_sum_p: "0", reduce_max_p: "-INFINITY", reduce_min_p: "INFINITY"}
# NumPy's maximum and minimum: the first operand where it compares >= (<=) or is NaN, so a
# NaN anywhere makes the result NaN
_CHOOSE = {reduce_max_p: "(a >= b || a != a) ? a : b", reduce_min_p: "(a <= b || a != a) ? a : b"}


def _helpers(t, prim):
    """C of `mt_block_total` (one block's reduction) and `mt_combine` (two blocks'). Sums:
    NumPy's pairwise sum (loops_utils.h.src) of a block of at most 128 values: eight
    partial sums, combined as a tree, then the rest one by one. Max and min: a vectorised
    fold (NaN noted apart, and then the result), equal to np.maximum.reduce's value but for
    the sign of a zero result (the lanes compare in another order: -0.0 == +0.0) and the
    payload of a NaN."""
    if prim is not reduce_sum_p:  # a vectorised fold, NaN tracked apart
        op, better = ("max", ">") if prim is reduce_max_p else ("min", "<")
        return f"""static inline {t} mt_combine({t} a, {t} b) {{ return {_CHOOSE[prim]}; }}
static inline {t} mt_block_total(const {t} *r, npy_intp n) {{
  {t} m = r[0];
  int nan = 0;
  #pragma omp simd reduction({op}:m) reduction(|:nan)
  for (npy_intp i = 0; i < n; i++) {{
    m = r[i] {better} m ? r[i] : m;
    nan |= r[i] != r[i];
  }}
  return nan ? ({t})NAN : m;
}}
"""
    return f"""static inline {t} mt_combine({t} a, {t} b) {{ return a + b; }}
static inline {t} mt_block_total(const {t} *a, npy_intp n) {{
  if (n < 8) {{
    {t} res = 0;
    for (npy_intp i = 0; i < n; i++) res += a[i];
    return res;
  }}
  {t} r[8];
  for (int j = 0; j < 8; j++) r[j] = a[j];
  npy_intp i;
  for (i = 8; i < n - (n % 8); i += 8)
    for (int j = 0; j < 8; j++) r[j] += a[i + j];
  {t} res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
  for (; i < n; i++) res += a[i];
  return res;
}}
"""
