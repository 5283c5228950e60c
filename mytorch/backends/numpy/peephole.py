"""Layout rewrites of a jaxpr before NumPy code generation.

- A binary elementwise op reading a broadcast of a 0-d value reads the 0-d value instead
  (NumPy broadcasts it for free; the broadcast would be a full-size operand).
- `transpose(dot_general(a, b))` that swaps the two free-dimension groups becomes
  `dot_general(b, a)`: the product comes out contiguous instead of as a transposed view
  that later elementwise code would stream through in the wrong order.
- `abs(0 - x)` and `abs(-x)` read x directly (logaddexp's |x1 - x2| with a literal x1).
- `p - c * (a @ b)` and its kin, where p's buffer may be overwritten, become one
  `dot_update`: a GEMM adding into p (dot_update.py).
- Cheap elementwise operations on a small array that is then broadcast into a compiled
  loop move after the broadcast, into the loop (sink_broadcasts.py).
- A stored mask that is a `select_n` of constants (ReLU's derivative) is stored as uint8
  codes of its constants, decoded by the loop reading it (narrow_masks.py).

All keep the jaxpr's types; the rewritten jaxpr is what the code generator compiles.
"""

from mytorch.backends.numpy import dot_update, narrow_masks, sink_broadcasts
from mytorch.backends.planner import read_counts
from mytorch.core.jaxpr import Jaxpr, Literal, Var
from mytorch.lax.dot import dot_general_p
from mytorch.lax.elementwise import abs_p, clamp_p, neg_p, select_n_p, sub_p
from mytorch.lax.structural import broadcast_in_dim_p, transpose_p
from mytorch.transforms.dce import dce_jaxpr

_NOT_BINARY = frozenset({select_n_p})


def prepare(jaxpr, donated=None):
    """The rewritten jaxpr (a new object; the input is not modified). `donated`: for a whole
    compiled function, flags (one per input) of the inputs whose buffers the code may
    overwrite; only then are updates rewritten into `dot_update` (a loop body's products
    are left to the loop passes, which hoist and sink them: control_flow_sink.py)."""
    producer = {v: eqn for eqn in jaxpr.eqns for v in eqn.outvars}
    uses = read_counts(jaxpr)
    free = _Overwritable(jaxpr, donated)
    eqns, changed = [], False
    for i, eqn in enumerate(jaxpr.eqns):
        new = _dot_of_transpose(_scalar_operands(eqn, producer), producer, uses)
        new = _abs_of_negation(new, producer, uses)
        if donated is not None and new.primitive in dot_update.ENDS:
            free.at = i
            new = dot_update.fuse(new, producer, uses, free)
        changed |= new is not eqn
        if new is not eqn:  # later rewrites see this one (a dot_update of a swapped product)
            producer.update((v, new) for v in new.outvars)
        eqns.append(new)
    if changed:  # a product now computed transposed or added into an update, and
        # broadcasts no longer read, are dead
        jaxpr = dce_jaxpr(Jaxpr(jaxpr.constvars, jaxpr.invars, eqns, jaxpr.outvars,
                                jaxpr.debug_name))
    return narrow_masks.narrow(sink_broadcasts.sink(jaxpr))


class _Overwritable:
    """`free(v)`: whether `v`'s buffer may be overwritten by the equation at index `at`: an
    intermediate or a donated input, read by no later equation and not an output (the read
    positions are found on the first question)."""

    def __init__(self, jaxpr, donated):
        self.jaxpr, self.donated, self.at, self._last = jaxpr, donated or (), None, None

    def __call__(self, v):
        if self._last is None:
            jaxpr = self.jaxpr
            flags = self.donated or (False,) * len(jaxpr.invars)
            self._last = {v: k for k, e in enumerate(jaxpr.eqns) for v in e.invars
                          if type(v) is Var}
            for v_in, d in zip(jaxpr.invars, flags, strict=True):
                if not d:
                    self._last[v_in] = -1  # never free
            for v_out in jaxpr.outvars:
                if type(v_out) is Var:
                    self._last[v_out] = -1
        return self._last.get(v) == self.at


def _scalar_source(v, producer):
    """The 0-d value `v` broadcasts, when `v` is a broadcast of one; else None."""
    eqn = producer.get(v) if type(v) is Var else None
    if eqn is None or eqn.primitive is not broadcast_in_dim_p:
        return None
    src = eqn.invars[0]
    return src if not src.aval.shape else None


def _scalar_operands(eqn, producer):
    prim = eqn.primitive
    if prim.kind != "elementwise" or prim in _NOT_BINARY or len(eqn.outvars) != 1:
        return eqn
    shape = eqn.outvars[0].aval.shape
    if prim is clamp_p:
        positions = (0, 2)
    elif len(eqn.invars) == 2:
        positions = (0, 1)
    else:
        return eqn
    invars = list(eqn.invars)
    for i in positions:
        others = [w for j, w in enumerate(invars) if j != i]
        src = _scalar_source(invars[i], producer)
        if src is not None and any(w.aval.shape == shape for w in others) and \
                src.aval.weak_type == invars[i].aval.weak_type:
            invars[i] = src
    if invars == eqn.invars:
        return eqn
    return eqn.replace(invars=invars)


def _abs_of_negation(eqn, producer, uses):
    """abs(0 - x) and abs(-x) are abs(x), for every real float x (signed zeros and NaNs
    included: abs clears the sign either way); the negation, read nowhere else, goes."""
    if eqn.primitive is not abs_p or type(eqn.invars[0]) is not Var:
        return eqn
    src = eqn.invars[0]
    inner = producer.get(src)
    if inner is None or uses.get(src) != 1 or src.aval.dtype.kind != "f":
        return eqn
    if inner.primitive is neg_p:
        x = inner.invars[0]
    elif inner.primitive is sub_p and type(inner.invars[0]) is Literal and \
            not inner.invars[0].aval.shape and inner.invars[0].val == 0:
        x = inner.invars[1]
    else:
        return eqn
    if x.aval.shape != src.aval.shape or x.aval.dtype != src.aval.dtype:
        return eqn
    return eqn.replace(invars=[x])


def _dot_of_transpose(eqn, producer, uses):
    if eqn.primitive is not transpose_p or type(eqn.invars[0]) is not Var:
        return eqn
    src = eqn.invars[0]
    dot = producer.get(src)
    if dot is None or dot.primitive is not dot_general_p or uses.get(src) != 1:
        return eqn
    (lc, rc), (lb, rb) = dot.params["dimension_numbers"]
    lhs, rhs = dot.invars
    nb = len(lb)
    n_l = len(lhs.aval.shape) - len(lc) - nb
    n_r = len(rhs.aval.shape) - len(rc) - nb
    swap = (*range(nb), *range(nb + n_l, nb + n_l + n_r), *range(nb, nb + n_l))
    if tuple(eqn.params["permutation"]) != swap:  # (batch, rhs free, lhs free)
        return eqn
    return dot.replace(invars=[rhs, lhs], outvars=list(eqn.outvars),
                       params=dict(dot.params, dimension_numbers=((rc, lc), (rb, lb))))
