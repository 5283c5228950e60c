"""The fusion pass of the GPU backend: groups a jaxpr's equations into generated kernels.

`plan(jaxpr)` returns steps in an order that respects every data dependence:

- `Fused(kernel, invars, outvars, eqns)`: a group of fusable equations compiled into ONE
  kernel (codegen.FusedKernel). `invars` are the Vars it reads that are defined before it
  (literals are folded into the kernel's source); `outvars` are its values read after it
  (by other steps or as the jaxpr's outputs): nothing else is stored.
- `Eqn(eqn)`: any other equation, run by an eager kernel (or, for call and loop
  primitives, by compiling its sub-jaxprs).

Fusable equations: elementwise primitives on the dtypes that have a CUDA expression
(expressions.py), `add_any`, `zeros`, `broadcast_in_dim`, reshapes that keep the row-major
order (`reshape` without `dimensions`, `squeeze`) and `iota`. A group has an iteration
shape S and all of its outputs have that shape (a value of another shape starts another
group, which may later be computed inside its readers, below); one reduction (sum,
product, max, min, and, or, xor, argmax, argmin) of a value of shape S may be part of it,
whose result is then an output too. Equations with effects never fuse.

Grouping is greedy in program order: a fusable equation joins the group of one of its
operands' producers, or else of another reader of one of its operands, when the shapes
agree, the group has no reduction yet (or the equation is not one and does not read the
reduction's result), and joining creates no cycle between steps (no path from the group
to the equation through another step); the other producers' groups of that shape merge
with it on the same condition. Otherwise it starts a group. Groups hold at most
MAX_GROUP_EQNS equations. Then a group whose values are read only by other groups (holding
no reduction and no jaxpr output) is computed inside its readers: inside its one reader (a
reshape to another shape, a row vector broadcast into a matrix), or, when 0-d, inside each
of its readers (a learning rate read by every parameter's update); nothing of it is
stored. A group left with nothing but reshapes (squeezes, broadcasts that only add size-1
dims) stays a list of Eqn steps: the backend runs them as views. Steps are then ordered
topologically, each as early as the program order allows.
"""

import dataclasses
import heapq

from mytorch.backends.cupy import codegen_reduce as red
from mytorch.backends.cupy.codegen import FusedKernel
from mytorch.backends.cupy.codegen_emit import elementwise_template
from mytorch.core.ad_util import add_any_p, zeros_p
from mytorch.core.aval import ShapedArray
from mytorch.core.jaxpr import JaxprEqn, Var
from mytorch.lax import structural as st


# a kernel's arguments (a pointer per input and output) stay far below CUDA's 32 KiB
MAX_GROUP_EQNS = 256


@dataclasses.dataclass
class Fused:
    """A fused group: `kernel` computes `outvars` from `invars`; `eqns` in program order."""

    kernel: FusedKernel
    invars: list
    outvars: list
    eqns: list


@dataclasses.dataclass
class Eqn:
    """An equation run on its own."""

    eqn: object


def fusable(eqn):
    """Whether `eqn` may be part of a fused group (not counting reductions)."""
    prim = eqn.primitive
    if prim.effectful or len(eqn.outvars) != 1 or prim.multiple_results:
        return False
    out = eqn.outvars[0].aval
    if prim in (st.broadcast_in_dim_p, st.squeeze_p, st.iota_p, zeros_p):
        return _has_ctype(out.dtype)
    if prim is st.reshape_p:
        return eqn.params.get("dimensions") is None and _has_ctype(out.dtype)
    if prim.kind != "elementwise" and prim is not add_any_p:
        return False
    if any(x.aval.shape not in ((), out.shape) for x in eqn.invars):
        return False  # width-changing bitcasts add or drop a dim
    try:
        elementwise_template(eqn)
    except (TypeError, KeyError, ValueError):  # no expression for these dtypes
        return False
    return True


def _has_ctype(dtype):
    from mytorch.backends.cupy.expressions import ctype

    try:
        ctype(dtype)
    except (TypeError, ValueError):  # opaque dtypes (PRNG keys) have no C type
        return False
    return True


def _reduction(eqn):
    return not eqn.primitive.effectful and red.fusable_reduction(eqn)


class _Group:
    __slots__ = ("id", "eqns", "shape", "closed", "reduced", "first")

    def __init__(self, gid, eqn, shape, first):
        self.id, self.eqns, self.shape, self.closed, self.first = gid, [eqn], shape, False, first
        self.reduced = None  # the result of the group's reduction (closed: it has one)
        # eqns: (position in the jaxpr, equation) pairs


def plan(jaxpr, **kernel_options):
    """The steps (Fused and Eqn) that compute `jaxpr` (a Jaxpr), dependences respected.

    `kernel_options` are passed to every FusedKernel (index64, reduce_strategy, ...).
    """
    eqns = list(jaxpr.eqns)
    node_of = {}  # Var -> node id (a group id or ("e", eqn index))
    deps = {}  # node -> set of nodes it reads from
    groups = {}
    next_id = 0
    first = {}  # node -> position of its first equation (for the order)
    last_effect = None
    readers = {}  # Var -> the groups that read it
    for i, eqn in enumerate(eqns):
        reads = {node_of[v] for v in eqn.invars if type(v) is Var and v in node_of}
        target = None
        is_red = _reduction(eqn)
        if is_red or fusable(eqn):
            shape = eqn.invars[0].aval.shape if is_red else eqn.outvars[0].aval.shape
            target = _choose_group(eqn, is_red, shape, reads, groups, readers, deps, first)
        if target is not None:
            target.eqns.append((i, eqn))
            deps[target.id] |= reads - {target.id}
            node = target.id
            for n in sorted(reads - {node}, key=lambda n: first[n]):  # same-shape producers
                g = groups.get(n)
                if g is not None and not g.closed and g.shape == shape and not (
                        target.closed and node in deps[n]):
                    _merge(groups, deps, first, node_of, readers, g.id, node)
        elif is_red or fusable(eqn):
            node, next_id = next_id, next_id + 1
            groups[node] = _Group(node, (i, eqn), shape, i)
            deps[node], first[node] = set(reads), i
        else:
            node = ("e", i)
            deps[node], first[node] = set(reads), i
            if eqn.primitive.effectful:
                if last_effect is not None:
                    deps[node].add(last_effect)
                last_effect = node
        if node in groups:
            for v in eqn.invars:
                if type(v) is Var:
                    readers.setdefault(v, set()).add(node)
        if is_red:
            groups[node].closed, groups[node].reduced = True, eqn.outvars[0]
        for v in eqn.outvars:
            if type(v) is Var:
                node_of[v] = node
    _inline_producers(groups, deps, first, {node_of[v] for v in jaxpr.outvars
                                            if type(v) is Var and v in node_of})
    return _schedule(jaxpr, eqns, groups, deps, first, kernel_options)


def _inline_producers(groups, deps, first, out_nodes):
    """Fold a group whose values are read only by other groups into them: its equations
    are computed inside each reader at the reader's coordinates (a value of a smaller shape
    is recomputed per element that reads it), so nothing of it is stored. A group read by
    one group is folded into it; a 0-d group into every group that reads it. Groups ended by
    a reduction, read by a non-fused step or holding a jaxpr output stay."""
    users = {n: set() for n in deps}
    for n, ds in deps.items():
        for d in ds:
            users[d].add(n)
    for p in sorted(groups, key=lambda n: first[n]):
        g = groups[p]
        readers = users[p]
        if g.closed or p in out_nodes or not readers or any(u not in groups for u in readers):
            continue
        if len(readers) > 1 and g.shape != ():
            continue
        for u in readers:
            groups[u].eqns = sorted(set(groups[u].eqns) | set(g.eqns), key=lambda q: q[0])
            deps[u] = (deps[u] - {p}) | deps[p]
            first[u] = min(first[u], first[p])
            for d in deps[p]:
                users[d].add(u)
        for d in deps.pop(p):
            users[d].discard(p)
        del groups[p], users[p], first[p]


def _choose_group(eqn, is_red, shape, reads, groups, readers, deps, first):
    """The group `eqn` joins, or None: a producer's group (the latest first), else the group
    of another reader of one of its operands."""
    producers = sorted(reads, key=lambda n: -first[n])
    siblings = sorted({n for v in eqn.invars if type(v) is Var for n in readers.get(v, ())},
                      key=lambda n: -first[n])
    return next((groups[n] for n in producers + siblings if n in groups and
                 _joinable(groups[n], eqn, is_red, shape, reads, deps)), None)


def _joinable(g, eqn, is_red, shape, reads, deps):
    """Whether `eqn` (reading nodes `reads`) may join group `g`: the same iteration shape,
    at most one reduction per group and nothing in it reading the reduction's result, and no
    cycle (no other node between `g` and the equation)."""
    if g.shape != shape or (g.closed and (is_red or any(v is g.reduced for v in eqn.invars))):
        return False
    if len(g.eqns) >= MAX_GROUP_EQNS:
        return False
    return not any(_reaches(deps, m, g.id) for m in reads if m != g.id)


def _merge(groups, deps, first, node_of, readers, src, dst):
    """Merge group `src` into group `dst` unless that makes a cycle (a path between them
    through another step)."""
    if len(groups[src].eqns) + len(groups[dst].eqns) > MAX_GROUP_EQNS:
        return
    if any(_reaches(deps, m, dst) for m in deps[src] if m != dst) or any(
            _reaches(deps, m, src) for m in deps[dst] if m != src):
        return
    g = groups.pop(src)
    groups[dst].eqns = sorted(groups[dst].eqns + g.eqns, key=lambda p: p[0])
    deps[dst] = (deps[dst] | deps.pop(src)) - {src, dst}
    first[dst] = min(first[dst], first.pop(src))
    for ds in deps.values():
        if src in ds:
            ds.discard(src)
            ds.add(dst)
    for v, n in node_of.items():
        if n == src:
            node_of[v] = dst
    for ns in readers.values():
        if src in ns:
            ns.discard(src)
            ns.add(dst)


def _reaches(deps, start, goal):
    """Whether node `start` depends (transitively) on node `goal`."""
    stack, seen = [start], {start}
    while stack:
        n = stack.pop()
        if n == goal:
            return True
        for m in deps[n]:
            if m not in seen:
                seen.add(m)
                stack.append(m)
    return False


def _schedule(jaxpr, eqns, groups, deps, first, kernel_options):
    users = {n: set() for n in deps}
    for n, ds in deps.items():
        for d in ds:
            users[d].add(n)
    read_by = {}  # Var -> nodes reading it without computing it (an inlined value is
    for n in deps:  # computed by each group that reads it)
        inner = [e for _, e in groups[n].eqns] if n in groups else [eqns[n[1]]]
        defined = {v for e in inner for v in e.outvars}
        for eqn in inner:
            for v in eqn.invars:
                if type(v) is Var and v not in defined:
                    read_by.setdefault(v, set()).add(n)
    outs = {v for v in jaxpr.outvars if type(v) is Var}
    waiting = {n: len(ds) for n, ds in deps.items()}
    ready = [(first[n], str(n), n) for n, k in waiting.items() if k == 0]
    heapq.heapify(ready)
    steps = []
    while ready:
        _, _, n = heapq.heappop(ready)
        if n in groups:
            steps += _fused(groups[n], read_by, outs, kernel_options)
        else:
            steps.append(Eqn(eqns[n[1]]))
        for u in users[n]:
            waiting[u] -= 1
            if waiting[u] == 0:
                heapq.heappush(ready, (first[u], str(u), u))
    assert all(k == 0 for k in waiting.values()), "fusion: steps depend on each other in a cycle"
    return steps


def _layout_only(eqn):
    """Whether `eqn` only renames the shape of a row-major buffer (a view, not a kernel)."""
    prim = eqn.primitive
    if prim in (st.reshape_p, st.squeeze_p):
        return True
    return prim is st.broadcast_in_dim_p and (
        eqn.invars[0].aval.size == eqn.outvars[0].aval.size)


def _fused(group, read_by, outs, kernel_options):
    """The steps of `group`: its Fused step; none when none of its values is read after it;
    its equations as they are when they only reshape (the backend runs them as views)."""
    eqns = [e for _, e in group.eqns]
    if all(_layout_only(e) for e in eqns):
        return [Eqn(e) for e in eqns]
    defined = {v for e in eqns for v in e.outvars}
    invars, seen = [], set()
    for e in eqns:
        for v in e.invars:
            if type(v) is Var and v not in defined and v not in seen:
                seen.add(v)
                invars.append(v)
    outvars = [v for e in eqns for v in e.outvars
               if type(v) is Var and (v in outs or read_by.get(v, set()) - {group.id})]
    if not outvars:
        return []
    dead = [e for e in eqns if red.is_reduction(e.primitive) and e.outvars[0] not in outvars]
    if dead:  # nothing reads the reduction: an elementwise group
        eqns = [e for e in eqns if e is not dead[0]]
        invars = [v for v in invars if any(v in e.invars for e in eqns)]
    kernel = FusedKernel(eqns, invars, outvars, **kernel_options)
    return [Fused(kernel, invars, outvars, eqns)]


def elementwise_kernel(prim, in_avals, params, dynamic_size=False, index64=None):
    """The FusedKernel of one equation `prim[params]` on operands of `in_avals`
    (ShapedArrays): the GPU backend's eager kernel of an elementwise primitive.

    With `dynamic_size`, the kernel is one flat loop over a size given at launch
    (`run_sized`), for operands of one shape or 0-d: compiled once for every shape.
    Raises TypeError when the primitive has no CUDA expression for these dtypes."""
    if dynamic_size:  # a stand-in flat shape (> 1 element, so it is indexed by `i`)
        in_avals = [a if not a.shape else ShapedArray((2,), a.dtype, a.weak_type)
                    for a in in_avals]
    invars = [Var(a) for a in in_avals]
    out = prim._abstract_eval(*in_avals, **params)
    eqn = JaxprEqn(prim, invars, params, [Var(out)])
    if not fusable(eqn) and not _reduction(eqn):
        dts = ", ".join(a.str_short() for a in in_avals)
        raise TypeError(f"{prim.name} has no generated GPU kernel for operands {dts}")
    return FusedKernel([eqn], invars, eqn.outvars, dynamic_size=dynamic_size,
                       index64=index64)

