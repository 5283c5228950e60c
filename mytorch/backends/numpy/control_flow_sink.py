"""Work moved out of a scan body: accumulators summed after the loop, products of xs with
consts computed before it, each in one call instead of one per step.

A scan's transposed body accumulates the gradient of each weight it closes over, one
product per step: `dw = dw + x_t^T @ dz_t`. When the accumulator's carry is read by that
add alone, and the add's result by nothing but the carry's output, the carry leaves the
loop (`sink_accumulators`): the body writes the step's operands (`dz_t`; an operand that is
a step slice of the xs is read from the xs themselves) into stacked ys, and after the loop

    dw = dw0 + np.tensordot(xs, dz_stack, axes=([0, 1], [0, 1]))     # one GEMM

(`acc + sum(b_t, axes)` becomes one reduction over the stack and the axes, and `acc + b_t`
one sum over the steps where b_t is stacked anyway). The forward body's `x_t @ W` (an xs
times a const) is computed for all steps before the loop (`hoist_products`) and read as
one more xs. Sums and products are the same up to the order of the additions (rounding);
only float32/float64 work moves (the half types compute in float32 in their kernels).
"""

import dataclasses

import numpy as np

from mytorch.backends.planner import read_counts
from mytorch.core.ad_util import add_any_p
from mytorch.core.jaxpr import Jaxpr, Var
from mytorch.lax.dot import dot_general_p
from mytorch.lax.elementwise import add_p
from mytorch.lax.reductions import reduce_sum_p
from mytorch.transforms.dce import dce_jaxpr

__all__ = ["Sunk", "Hoisted", "sink_accumulators", "hoist_products"]

_ADDS = (add_p, add_any_p)


@dataclasses.dataclass(frozen=True)
class Sunk:
    """Carry `carry` (its position among the carries) summed after the loop: `kind` "dot"
    (tensordot of two stacks over the step axis and `axes`) or "sum" (one stack reduced over
    the step axis and `axes`). `operands`: ("xs", j) the loop's j-th xs, ("ys", j) the body's
    j-th new stacked output."""

    carry: int
    kind: str
    operands: tuple
    axes: tuple

    def expr(self, stacks):
        """NumPy source of the summed term, `stacks` the sources of the operands' stacks."""
        if self.kind == "sum":
            return f"np.add.reduce({stacks[0]}, axis={(0, *(a + 1 for a in self.axes[0]))})"
        la, ra = ([0, *(a + 1 for a in axes)] for axes in self.axes)
        return f"np.tensordot({stacks[0]}, {stacks[1]}, axes=({la}, {ra}))"


_NATIVE_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _float(*avals):
    """Whether the avals share one of float32, float64 (the half types' products compute
    in float32 in their kernels: summing them in NumPy's float16 would round differently)."""
    dt = avals[0].dtype
    return np.dtype(dt) in _NATIVE_FLOATS and all(a.dtype == dt for a in avals)


def _accumulated(defs, reads, c, o):
    """The per-step term t of `o = c + t` when carry input `c` is read by that add alone and
    its result `o` by nothing but the carry output (same types throughout), else None."""
    e = defs.get(o)
    if e is None or e.primitive not in _ADDS or reads.get(c) != 1 or reads.get(o) != 1:
        return None
    if c not in e.invars:
        return None
    t = e.invars[1] if e.invars[0] is c else e.invars[0]
    if type(t) is not Var or t is c or not (c.aval.shape == t.aval.shape == o.aval.shape):
        return None
    if not c.aval.dtype == t.aval.dtype == o.aval.dtype:
        return None
    return t


def _term(defs, t):
    """(kind, operands, axes) of the per-step term `t` if it can be summed after the loop."""
    d = defs.get(t)
    if d is None or not all(type(v) is Var for v in d.invars):
        return None
    if not _float(t.aval, *(v.aval for v in d.invars)):
        return None
    if d.primitive is reduce_sum_p:
        return "sum", tuple(d.invars), (tuple(d.params["axes"]),)
    if d.primitive is dot_general_p:
        (lc, rc), (lb, rb) = d.params["dimension_numbers"]
        pet = d.params.get("preferred_element_type")
        if lb or rb or (pet is not None and np.dtype(pet) != t.aval.dtype):
            return None
        return "dot", tuple(d.invars), (tuple(lc), tuple(rc))
    return None


def sink_accumulators(jaxpr, num_consts, num_carry):
    """(body, kept, sunk) for a scan-layout body (consts, carries, xs -> carries, ys): the
    body without the sunk carries, writing the stacked operands after its ys; `kept` flags
    the carries it keeps; `sunk` the `Sunk` of each carry dropped. None if none sinks."""
    carry_in = jaxpr.invars[num_consts:num_consts + num_carry]
    consts = set(jaxpr.invars[:num_consts])
    xs = jaxpr.invars[num_consts + num_carry:]
    defs = {o: e for e in jaxpr.eqns for o in e.outvars}
    reads = read_counts(jaxpr)
    sunk, new_ys, plain = [], [], []
    for k, (c, o) in enumerate(zip(carry_in, jaxpr.outvars[:num_carry], strict=True)):
        t = _accumulated(defs, reads, c, o)
        if t is None:
            continue
        term = _term(defs, t) if reads.get(t) == 1 else None
        if term is None or any(v in consts for v in term[1]):
            plain.append((k, t))
            continue
        kind, operands, axes = term
        where = []
        for v in operands:
            if v in xs:
                where.append(("xs", xs.index(v)))
            else:
                if v not in new_ys:
                    new_ys.append(v)
                where.append(("ys", new_ys.index(v)))
        sunk.append(Sunk(k, kind, tuple(where), axes))
    for k, t in plain:  # `acc + t` where t is stacked anyway: summed after the loop too
        if (t in xs or t in new_ys) and _float(t.aval):
            where = ("xs", xs.index(t)) if t in xs else ("ys", new_ys.index(t))
            sunk.append(Sunk(k, "sum", (where,), ((),)))
    if not sunk:
        return None
    gone = {s.carry for s in sunk}
    kept = [k not in gone for k in range(num_carry)]
    invars = [*jaxpr.invars[:num_consts], *(c for c, f in zip(carry_in, kept) if f), *xs]
    outs = [*(o for o, f in zip(jaxpr.outvars[:num_carry], kept) if f),
            *jaxpr.outvars[num_carry:], *new_ys]
    body = dce_jaxpr(Jaxpr([], invars, jaxpr.eqns, outs, jaxpr.debug_name))
    return body, kept, sunk


@dataclasses.dataclass(frozen=True)
class Hoisted:
    """A product of a step's xs `xs` (its position among the xs) with const `const`,
    computed for every step before the loop: `xs_first` says which operand the xs is;
    `axes` the contracting dims (xs's, const's); `const_free` the const's free dims."""

    xs: int
    const: int
    xs_first: bool
    axes: tuple
    const_free: int

    def expr(self, stack, const):
        """NumPy source of the stacked products (steps first)."""
        xa, ca = self.axes
        xa = [a + 1 for a in xa]
        if self.xs_first:
            return f"np.tensordot({stack}, {const}, axes=({xa}, {list(ca)}))"
        prod = f"np.tensordot({const}, {stack}, axes=({list(ca)}, {xa}))"
        return f"np.moveaxis({prod}, {self.const_free}, 0)"


def hoist_products(jaxpr, num_consts, num_carry):
    """(body, hoisted) for a scan-layout body: each matrix product of a step's xs with a
    const (`Hoisted`) taken out of the body, which reads it as one more xs (after the
    others, in `hoisted` order) that the loop computes for all steps at once. None if the
    body has none."""
    consts = jaxpr.invars[:num_consts]
    xs = jaxpr.invars[num_consts + num_carry:]
    hoisted, new_xs, eqns = [], [], []
    for e in jaxpr.eqns:
        h = _product_of_xs(e, consts, xs)
        if h is None:
            eqns.append(e)
            continue
        hoisted.append(h)
        new_xs.append(e.outvars[0])
    if not hoisted:
        return None
    return Jaxpr([], [*jaxpr.invars, *new_xs], eqns, jaxpr.outvars, jaxpr.debug_name), hoisted


def _product_of_xs(e, consts, xs):
    """The `Hoisted` of equation `e` if it is a product of an xs and a const."""
    if e.primitive is not dot_general_p or not all(type(v) is Var for v in e.invars):
        return None
    (lc, rc), (lb, rb) = e.params["dimension_numbers"]
    out = e.outvars[0]
    pet = e.params.get("preferred_element_type")
    if lb or rb or not _float(out.aval, *(v.aval for v in e.invars)) or (
            pet is not None and np.dtype(pet) != out.aval.dtype):
        return None
    lhs, rhs = e.invars
    if lhs in xs and rhs in consts:
        return Hoisted(xs.index(lhs), consts.index(rhs), True, (tuple(lc), tuple(rc)), 0)
    if rhs in xs and lhs in consts:
        free = lhs.aval.ndim - len(lc)
        return Hoisted(xs.index(rhs), consts.index(lhs), False, (tuple(rc), tuple(lc)), free)
    return None
