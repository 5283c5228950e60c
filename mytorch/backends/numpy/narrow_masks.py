"""Masks kept as one-byte codes: a `select_n` tree of constants that is stored between two
compiled loops is stored as the index of its constant instead of its float value.

ReLU's derivative is such a tree: the JVP of `max(z, 0)` is `select_n(z > 0, select_n(z ==
0, 0, 0.5), 1)` (ties share the gradient, as in JAX), computed in the forward pass and read
by the backward pass after the products between them, so the forward loop writes it as a
float32 array of 0, 0.5 and 1 and the backward loop reads it back: 4 bytes an element, where
a code of which constant it is needs one. The rewrite

    r = select_n n q p;  s = select_n m r o          (q, p, o: broadcast constants)
    ...  (products)
    t = mul d s

becomes

    r' = select_n n 0u8 1u8;  c = select_n m r' 2u8  (a uint8 array)
    ...
    w = convert_element_type[int32] c;  s' = select_n w q p o;  t = mul d s'

and the compiled loop of the backward pass decodes the code in registers. Every element
selects the same constant as before, so the values are the same bits.

Applied where compiled loops are available (`native.available()`; without them each decode
would be NumPy passes of its own), to trees of at least `MIN_SIZE` elements whose value is
read only by elementwise equations of its shape, after an equation such as a product
(which ends the producer's loop, so the value would be stored).
"""

import numpy as np

from mytorch.backends.numpy import native
from mytorch.backends.numpy.fusion_c import has_c
from mytorch.backends.planner import dataflow
from mytorch.core.aval import ShapedArray
from mytorch.core.jaxpr import Jaxpr, JaxprEqn, Literal, Var
from mytorch.lax.elementwise import convert_element_type_p, select_n_p
from mytorch.lax.structural import broadcast_in_dim_p

MIN_SIZE = 1 << 14  # elements: smaller masks stay in L1/L2 either way
# equations that need not end a compiled loop (views, and sums that end one only when read):
# any other equation before the first reader means the mask is stored
_IN_LOOPS = ("elementwise", "structural", "reduction")
_CODE = np.dtype(np.uint8)
_WHICH = np.dtype(np.int32)


def narrow(jaxpr):
    """The jaxpr with its stored constant masks kept as uint8 codes (a new object), or
    `jaxpr` itself where there are none."""
    eqns = jaxpr.eqns
    if not any(e.primitive is select_n_p and e.outvars[0].aval.size >= MIN_SIZE
               for e in eqns) or not native.available():
        return jaxpr  # (the common case, found without building the maps below)
    producer, readers, outs = dataflow(jaxpr)
    replace, before = {}, {}  # eqn index -> equations replacing it / inserted before it
    for i, eqn in enumerate(eqns):
        if not _tree(eqns, eqn, producer, readers, outs):
            continue
        s = eqn.outvars[0]
        at = sorted(set(readers[s]))
        if not any(e.primitive.kind not in _IN_LOOPS for e in eqns[i + 1:at[0]]):
            continue  # read in the producer's own loop: never stored
        leaves = []
        code_eqns = []
        code = _code_tree(eqn, producer, leaves, code_eqns)
        replace[i] = code_eqns
        for k in at:
            which = Var(ShapedArray(s.aval.shape, _WHICH))
            decoded = Var(s.aval)
            before.setdefault(k, []).append((s, decoded, [
                JaxprEqn(convert_element_type_p, [code],
                         dict(new_dtype=_WHICH, weak_type=False), [which], eqn.source_info),
                JaxprEqn(select_n_p, [which, *leaves], {}, [decoded], eqn.source_info)]))
    if not replace:
        return jaxpr
    new = []
    for k, eqn in enumerate(eqns):
        if k in replace:
            new += replace[k]
            continue
        for s, decoded, decode in before.get(k, ()):
            new += decode
            eqn = eqn.replace(invars=[decoded if v is s else v for v in eqn.invars])
        new.append(eqn)
    # the float trees' inner selects are read only by their roots: now dead, left out above
    dead = {id(e) for k in replace for e in _inner(eqns[k], producer)}
    return Jaxpr(jaxpr.constvars, jaxpr.invars, [e for e in new if id(e) not in dead],
                 jaxpr.outvars, jaxpr.debug_name)


def _constant(v, producer, shape):
    """Whether `v` is a broadcast of a 0-d literal to `shape`."""
    eqn = producer.get(v) if type(v) is Var else None
    return (eqn is not None and eqn.primitive is broadcast_in_dim_p
            and type(eqn.invars[0]) is Literal and tuple(eqn.params["shape"]) == shape)


def _tree(eqns, eqn, producer, readers, outs):
    """Whether `eqn` is the root of a select_n tree of broadcast constants worth storing as
    codes (see the module docstring)."""
    if eqn.primitive is not select_n_p or len(eqn.outvars) != 1:
        return False
    s = eqn.outvars[0]
    if type(s) is not Var or s in outs or s.aval.dtype.itemsize < 2 or \
            s.aval.size < MIN_SIZE or s not in readers:
        return False
    shape = s.aval.shape
    return all(_decodes(eqns[k], shape) for k in readers[s]) and \
        _constant_tree(eqn, producer, readers, shape, [0])


def _decodes(reader, shape):
    """Whether a compiled loop computing `reader` can decode the code with it."""
    return (reader.primitive.kind == "elementwise" and len(reader.outvars) == 1
            and reader.outvars[0].aval.shape == shape and has_c(reader))


def _constant_tree(eqn, producer, readers, shape, count):
    """Whether every case of the select_n `eqn` is a broadcast constant or a select_n tree
    of them read only here, with at most 255 constants in all."""
    for c in eqn.invars[1:]:
        inner = producer.get(c) if type(c) is Var else None
        if _constant(c, producer, shape):
            count[0] += 1
        elif inner is not None and inner.primitive is select_n_p and \
                len(readers.get(c, ())) == 1 and c.aval.shape == shape:
            if not _constant_tree(inner, producer, readers, shape, count):
                return False
        else:
            return False
    return count[0] <= 255


def _inner(eqn, producer):
    """The select_n equations below the root `eqn` of a constant tree."""
    for c in eqn.invars[1:]:
        inner = producer.get(c)
        if inner is not None and inner.primitive is select_n_p:
            yield inner
            yield from _inner(inner, producer)


def _code_tree(eqn, producer, leaves, out):
    """The uint8 var of the tree rooted at `eqn` with each constant replaced by its index
    in `leaves` (which collects the constants in order); its equations appended to `out`."""
    shape = eqn.outvars[0].aval.shape
    cases = []
    for c in eqn.invars[1:]:
        if _constant(c, producer, shape):
            leaves.append(c)
            k = Var(ShapedArray(shape, _CODE))
            out.append(JaxprEqn(broadcast_in_dim_p,
                                [Literal(np.uint8(len(leaves) - 1), ShapedArray((), _CODE))],
                                dict(shape=shape, broadcast_dimensions=()), [k],
                                eqn.source_info))
            cases.append(k)
        else:
            cases.append(_code_tree(producer[c], producer, leaves, out))
    code = Var(ShapedArray(shape, _CODE))
    out.append(JaxprEqn(select_n_p, [eqn.invars[0], *cases], {}, [code], eqn.source_info))
    return code
