"""Sums at the end of a compiled fused run (fusion_c.py): `reduce_sum` over the last axis
("rows") or over the first axis of at most COLUMN_ROWS rows ("cols"), computed in the loop
that computes its operand, with the eager kernel's rounding, bit for bit:

- rows: NumPy's pairwise sum of each row (blocks of at most 128 values summed with eight
  partial sums, blocks combined as a binary tree), added to 0 (np.add.reduce's identity);
- cols: the rows added one after another to 0, as np.add.reduce adds along a leading
  axis (the eager kernel blocks longer columns, which this loop does not take).

Such a run is a generalized ufunc, its core dimension the summed axis: full-size operands
and results "(n)", 0-d values and sums "()" (cols: called with `axes=`, the core dimension
first). NumPy hands each call whole rows (or columns), however it iterates the others.
"""

import numpy as np

from mytorch.lax.reductions import reduce_sum_p

COLUMN_ROWS = 256  # the eager kernel adds up to this many rows one after another
BLOCK = 128  # NumPy's pairwise-sum block (PW_BLOCKSIZE)


def reduction_mode(eqn):
    """"rows", "cols" or None: how a compiled loop sums `eqn` (see the module docstring);
    None for anything else than a float32/float64 sum of an array of two or more axes over
    its last axis, or over its first of at most COLUMN_ROWS rows."""
    if eqn.primitive is not reduce_sum_p:
        return None
    x, out = eqn.invars[0].aval, eqn.outvars[0].aval
    if x.dtype not in (np.float32, np.float64) or out.dtype != x.dtype or len(x.shape) < 2:
        return None
    axes = tuple(sorted(a % len(x.shape) for a in eqn.params["axes"]))
    if axes == (len(x.shape) - 1,):
        return "rows"
    if axes == (0,) and x.shape[0] <= COLUMN_ROWS:
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
    sums = [e for e in members if e.primitive is reduce_sum_p]
    t = ctype(totals[0].aval.dtype)
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
        block += [f"  sums[{k}] = mt_pairwise(r{k}, m);" for k in range(len(sums))]
        block += ["}",
                  # NumPy's recursion: halves rounded down to a multiple of 8, blocks of
                  # at most 128 values at the leaves, computed left to right
                  f"static void mt_tree(const mt_ctx &c, npy_intp lo, npy_intp n, {t} *sums) {{",
                  f"  if (n <= {BLOCK}) {{ mt_block(c, lo, n, sums); return; }}",
                  "  npy_intp half = n / 2;", "  half -= half % 8;",
                  f"  {t} a[{len(sums)}], b[{len(sums)}];",
                  "  mt_tree(c, lo, half, a);", "  mt_tree(c, lo + half, n - half, b);",
                  f"  for (int k = 0; k < {len(sums)}; k++) sums[k] = a[k] + b[k];", "}"]
        lines = block + lines
        lines += ["  const bool unit = " + (" && ".join(unit) or "true") + ";",
                  "  for (npy_intp o = 0; o < loops; o++) {",
                  "    const mt_ctx c = {args, steps, o, unit};",
                  f"    {t} s[{len(sums)}];",
                  "    if (n > 0) mt_tree(c, 0, n, s);",
                  f"    else for (int k = 0; k < {len(sums)}; k++) s[k] = 0;"]
        lines += [f"    *({t} *)(args[{first_sum + k}] + o * steps[{first_sum + k}]) = "
                  f"({t})0 + s[{k}];" for k in range(len(sums))]
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
    return _helpers(t) + "\n".join(lines) + "\n"


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


def _helpers(t):
    """NumPy's pairwise sum (loops_utils.h.src) of one block of at most 128 values: eight
    partial sums, combined as a tree, then the rest one by one."""
    return f"""static inline {t} mt_pairwise(const {t} *a, npy_intp n) {{
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
