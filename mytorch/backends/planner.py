"""Buffer planning for code generators: which buffer each result of a jaxpr may be written to.

Backend-independent: it deals in jaxpr variables and the names a code generator gave their
buffers, never in buffers, so the NumPy generator and a device one share it. A generator
walks the equations in its emission order (a fused run of equations is one position) and:

- declares the buffers it starts with (`constant`, `input`);
- asks where to write a result (`buffer_for`: an operand dying at this equation, claimed in
  place, else a dead buffer of the same shape and dtype from the free pool), or whether a
  fused run may write over one of its inputs (`overwrite`, `take`);
- records what each equation produced (`record`, with the emitter's `Emitted`): a fresh
  buffer the program owns, a view of an operand (sharing its root buffer), or something of
  unknown provenance (never reused);
- releases what dies at that position (`release`): a root buffer whose last reader and last
  live view are gone joins the pool, if the program owns it.

Ownership: allocated results and donated inputs may be reused; constants, inputs that are
not donated, 0-d values and anything of unknown provenance never are. A buffer that a view
still reads is not reused until the view dies.
"""

from typing import NamedTuple

from mytorch.core.jaxpr import Var

FRESH, VIEW = "fresh", "view"


class Emitted(NamedTuple):  # a tuple: built once per equation, cheaply
    """What an emitter emitted for an equation's one result: `expr`, the source computing
    it, and what that value is: `kind` FRESH (a new buffer the program owns), VIEW (a view of
    operand `of`) or None (unknown: never reused). `expanded`, for a broadcast of operand 0,
    is that operand's shape with size-1 axes inserted: consumers may read the operand so
    viewed (their own operation broadcasts it) and the broadcast is emitted only where
    something reads it in full."""

    expr: str
    kind: str | None = None
    of: int = 0
    expanded: tuple | None = None


def fresh(expr):
    """`expr` computes a new buffer."""
    return Emitted(expr, FRESH)


def view(expr, of=0, expanded=None):
    """`expr` is a view of operand `of` (see `Emitted` for `expanded`)."""
    return Emitted(expr, VIEW, of, None if expanded is None else tuple(expanded))


def emitted(result):
    """An emitter's return value as an `Emitted` (None: the emitter declined). A plain
    string is an expression of unknown kind."""
    if result is None or type(result) is Emitted:
        return result
    return Emitted(result)


def dataflow(jaxpr):
    """({var: the equation defining it}, {var: indices of the equations reading it, in
    order, once per read}, the set of output vars) of `jaxpr`."""
    producer, readers = {}, {}
    for k, eqn in enumerate(jaxpr.eqns):
        for v in eqn.invars:
            if type(v) is Var:
                readers.setdefault(v, []).append(k)
        for v in eqn.outvars:
            producer[v] = eqn
    return producer, readers, {v for v in jaxpr.outvars if type(v) is Var}


def read_counts(jaxpr):
    """{var: how many times the jaxpr's equations and outputs read it}."""
    counts = {}
    for eqn in jaxpr.eqns:
        for v in eqn.invars:
            if type(v) is Var:
                counts[v] = counts.get(v, 0) + 1
    for v in jaxpr.outvars:
        if type(v) is Var:
            counts[v] = counts.get(v, 0) + 1
    return counts


def last_uses(jaxpr, order, runs):
    """{var: position in emission order of its last reader}. `order` lists equation indices
    in emission order; `runs` maps the first index of a fused run to all of its indices (one
    position); the jaxpr's outputs are read at the end, position len(order)."""
    last = {}
    for pos, i in enumerate(order):
        for k in runs.get(i, (i,)):
            for v in jaxpr.eqns[k].invars:
                if type(v) is Var:
                    last[v] = pos
    end = len(order)
    for v in jaxpr.outvars:
        if type(v) is Var:
            last[v] = end
    return last


class BufferPlanner:
    """Liveness, views, ownership and the free pool of one generated function's buffers;
    see the module docstring. `reuse=False` (debug_nans: the check reads the operands after
    each equation) never hands out a buffer to write over."""

    def __init__(self, jaxpr, order, runs, reuse=True):
        self.last_use = last_uses(jaxpr, order, runs)
        self.reuse = reuse
        self._name = {}  # root var -> its buffer's name
        self._root = {}  # var -> the root var whose buffer it is or views
        self._live = {}  # root var -> number of live vars sharing it
        self._owned, self._consumed = set(), set()
        self._pool = {}  # (shape, dtype) -> names of dead owned buffers (last freed last)

    # ---- what the function starts with and what equations produce ------------------------
    def constant(self, v, name):
        """A constant of the generated code: read-only."""
        self.define(v, name, owned=False)

    def input(self, v, name, donated):
        """An input; a donated one (the caller gave its buffer up) may be written over."""
        self.define(v, name, owned=donated)

    def define(self, v, name, owned):
        """`v` is a buffer of its own called `name`; `owned`: the program may write over it
        once it is dead (0-d values never are)."""
        self._root[v] = v
        self._live[v] = 1
        self._name[v] = name
        if owned and v.aval.shape:
            self._owned.add(v)

    def record(self, eqn, result, names):
        """Track the outputs of `eqn` as `result` (an `Emitted`, or None for a kernel call)
        says: a view of a variable shares its root; a fresh value is owned; anything else
        is a read-only root. `names` maps each output variable to its buffer's name."""
        kind = result.kind if result is not None else None
        src = eqn.invars[result.of] if kind == VIEW else None
        for v in eqn.outvars:
            if type(v) is not Var:
                continue
            if type(src) is Var:
                r = self._root[src]
                self._root[v] = r
                self._live[r] += 1
            else:  # define(), inlined: this runs for every equation
                self._root[v] = v
                self._live[v] = 1
                self._name[v] = names[v]
                if kind == FRESH and v.aval.shape:
                    self._owned.add(v)

    # ---- where to write --------------------------------------------------------------------
    def buffer_for(self, eqn, pos, in_place, only=None):
        """The name of a dead buffer of the result's shape and dtype for `eqn` (at position
        `pos`) to write into, or None: when `in_place`, an operand dying here (among the
        operand positions `only`, if given: the others are read after the op starts writing,
        so a variable also read at one of them is never claimed), else one from the pool."""
        aval = eqn.outvars[0].aval
        if not aval.shape or not self.reuse:
            return None
        if in_place:
            for i, v in enumerate(eqn.invars):
                if only is not None and (i not in only or eqn.invars.count(v) > 1):
                    continue
                if (type(v) is Var and self.last_use.get(v) == pos and v in self._owned
                        and self._root[v] is v and self._live[v] == 1
                        and v not in self._consumed and v.aval.shape == aval.shape
                        and v.aval.dtype == aval.dtype):
                    self._consumed.add(v)
                    return self._name[v]
        free = self._pool.get((aval.shape, aval.dtype))  # take(aval), called per equation
        return free.pop() if free else None

    def overwrite(self, v, pos):
        """Claim `v`'s buffer for a result computed at `pos`: its name if `v` dies there and
        nothing else can read it (an owned buffer that no live view shares), else None."""
        if (self.reuse and type(v) is Var and self.last_use.get(v) == pos and v in self._owned
                and self._root[v] is v and self._live[v] == 1 and v not in self._consumed):
            self._consumed.add(v)
            return self._name[v]
        return None

    def take(self, aval):
        """The name of a dead owned buffer of `aval`'s shape and dtype, or None."""
        if not self.reuse:
            return None
        free = self._pool.get((aval.shape, aval.dtype))
        return free.pop() if free else None

    # ---- what dies -------------------------------------------------------------------------
    def release(self, eqns, pos):
        """After emitting position `pos` (the equations `eqns`): release the operands read
        there for the last time, and the results nothing reads."""
        for eqn in eqns:
            for v in eqn.invars:
                if type(v) is Var and self.last_use.get(v) == pos:
                    self._release(v)
                    self.last_use[v] = None  # released once, even when read twice
            for v in eqn.outvars:
                if type(v) is Var and v not in self.last_use:
                    self._release(v)

    def _release(self, v):
        r = self._root.get(v)
        if r is None:  # never materialised (a temporary inside a fused run)
            return
        self._live[r] -= 1
        if self._live[r] == 0 and r in self._owned and r not in self._consumed:
            self._pool.setdefault((r.aval.shape, r.aval.dtype), []).append(self._name[r])
