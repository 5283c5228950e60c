"""Cheap elementwise operations on a small array that is then broadcast, moved after the
broadcast into the compiled loop reading it.

A row statistic is often adjusted before it is broadcast back over its rows: logsumexp
guards its row maximum (`where(isfinite(m), m, 0)`), a softmax's backward scales by `g /
sum`. Computed on the small array, each is a NumPy call of its own (several microseconds
each in a training step, for a few hundred elements); computed on the broadcast inside the
loop that reads it, each is a few instructions an element. So

    g = is_finite m;  z = broadcast 0.0;  w = select_n g z m;  b = broadcast[(0,)] w
    d = sub x b                                   (x: the large shape; a compiled loop)

becomes

    mb = broadcast[(0,)] m;  g' = is_finite mb;  z' = broadcast 0.0;  w' = select_n g' z' mb
    d = sub x w'

The operations are the same on the same values, element by element, so the results are the
same bits. Only `CHEAP` primitives move (no transcendental functions: those would be
computed once per broadcast element), only along chains read by nothing else, and only
where compiled loops (native.py) read the broadcast and it has at most `MAX_RATIO` times the
elements of the small array.
"""

from mytorch.backends.numpy import native
from mytorch.backends.numpy.fusion import NATIVE_MIN_SIZE
from mytorch.backends.numpy.fusion_c import has_c
from mytorch.backends.planner import dataflow
from mytorch.core.jaxpr import Jaxpr, JaxprEqn, Literal, Var
from mytorch.lax import elementwise as ew
from mytorch.lax.structural import broadcast_in_dim_p

CHEAP = frozenset((ew.is_finite_p, ew.select_n_p, ew.stop_gradient_p, ew.neg_p, ew.abs_p,
                   ew.add_p, ew.sub_p, ew.mul_p, ew.div_p, ew.max_p, ew.min_p, ew.eq_p,
                   ew.ne_p, ew.lt_p, ew.le_p, ew.gt_p, ew.ge_p, ew.not_p, ew.and_p, ew.or_p,
                   ew.convert_element_type_p))
MAX_RATIO = 4096  # broadcast elements per small-array element


def sink(jaxpr):
    """The jaxpr with such chains moved after their broadcasts (a new object), or `jaxpr`
    itself where there are none."""
    eqns = jaxpr.eqns
    if not any(e.primitive is broadcast_in_dim_p and type(e.invars[0]) is Var
               and e.invars[0].aval.shape for e in eqns) or not native.available():
        return jaxpr  # (found without building the maps below)
    producer, readers, outs = dataflow(jaxpr)
    new, changed, moved = [], False, set()
    for eqn in eqns:
        chain = _chain(eqns, eqn, producer, readers, outs)
        if chain is None:
            new.append(eqn)
            continue
        changed = True
        moved.update(id(e) for e in chain)
        new += _sunk(eqn, producer, chain)
    if not changed:
        return jaxpr
    # the moved equations' small results are read by nothing now
    return Jaxpr(jaxpr.constvars, jaxpr.invars, [e for e in new if id(e) not in moved],
                 jaxpr.outvars, jaxpr.debug_name)


def _chain(eqns, b, producer, readers, outs):
    """The equations (root first) to move after the broadcast `b`, or None."""
    if b.primitive is not broadcast_in_dim_p or type(b.invars[0]) is not Var:
        return None
    u, out = b.invars[0], b.outvars[0]
    if not u.aval.shape or out.aval.size < NATIVE_MIN_SIZE or \
            out.aval.size > MAX_RATIO * u.aval.size:
        return None
    if out in outs or not readers.get(out) or not all(
            eqns[k].primitive.kind == "elementwise" and has_c(eqns[k]) for k in readers[out]):
        # an output (pmean under vmap: the replicas' mean broadcast back), or read by
        # something not compiled: the small result and a view of it stay cheaper
        return None
    chain = []
    _collect(producer.get(u), u, producer, readers, outs, chain)
    return chain or None


def _collect(eqn, v, producer, readers, outs, chain):
    """Append `eqn` (producing `v`) and, recursively, its movable producers to `chain`."""
    if eqn is None or not _movable(eqn, v, readers, outs):
        return
    chain.append(eqn)
    for x in eqn.invars:
        if type(x) is Var and x.aval.shape == v.aval.shape:
            _collect(producer.get(x), x, producer, readers, outs, chain)


def _movable(eqn, v, readers, outs):
    return (eqn.primitive in CHEAP and len(eqn.outvars) == 1 and v not in outs
            and len(readers.get(v, ())) == 1 and has_c(eqn))


def _sunk(b, producer, chain):
    """The equations computing the broadcast `b`'s result by the chain on broadcasts."""
    shape, dims = b.params["shape"], b.params["broadcast_dimensions"]
    small = b.invars[0].aval.shape
    members = {id(e) for e in chain}
    made, out = {}, []  # small var -> its broadcast (or moved result)

    def big(x):
        if type(x) is not Var or x.aval.shape != small:
            return x  # a literal or 0-d operand broadcasts as it is
        if x not in made:
            eqn = producer.get(x)
            if eqn is not None and eqn.primitive is broadcast_in_dim_p and \
                    not eqn.invars[0].aval.shape:  # a filled array: fill the large one
                made[x] = Var(x.aval.update(shape=shape))
                out.append(eqn.replace(params=dict(shape=shape, broadcast_dimensions=()),
                                       outvars=[made[x]]))
            elif eqn is not None and id(eqn) in members:
                invars = [big(y) for y in eqn.invars]
                made[x] = Var(x.aval.update(shape=shape))
                out.append(JaxprEqn(eqn.primitive, invars, eqn.params, [made[x]],
                                    eqn.source_info))
            else:
                made[x] = Var(x.aval.update(shape=shape))
                out.append(JaxprEqn(broadcast_in_dim_p, [x],
                                    dict(shape=shape, broadcast_dimensions=dims),
                                    [made[x]], b.source_info))
        return made[x]

    result = big(b.invars[0])
    # the broadcast's own result var stays the name its readers know
    last = out[-1]
    out[-1] = last.replace(outvars=[b.outvars[0]])
    assert last.outvars[0] is result
    return out
