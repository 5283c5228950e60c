"""Common-subexpression elimination over jaxprs.

Two equations with the same primitive, the same params and the same operands compute the
same values (primitives are pure), so the second is dropped and its outputs are replaced
by the first's:

    b = sin a; c = sin a; d = add b c      ->      b = sin a; d = add b b

Operands match when they are the same Var, or Literals of the same dtype, weak type and
value (0.0 and -0.0 differ). Params match by value where they are hashable (ints,
tuples, dtypes) and by identity otherwise (jaxprs, callables, arrays). Effectful
equations (and calls whose jaxprs hold one), calls with `prevent_cse=True` (checkpoint: the
recomputation is the point) and random-bit primitives (kind "random": threefry2x32) are
never merged. Equations inside the jaxprs that calls and loops hold are merged there, by
`optimize` running this pass on each of them.
"""

import math

import numpy as np

from mytorch.core.jaxpr import Literal, Var
from mytorch.transforms.dce import has_effects
from mytorch.transforms.inline import open_jaxpr, rebuilt, rename_all, renamed
from mytorch.transforms.simplify import scalar_value

_NEVER_MERGED_KINDS = frozenset({"random"})


def cse(jaxpr):
    """Merge equations that compute the same thing.

    Args:
      jaxpr: a Jaxpr or ClosedJaxpr.

    Returns:
      A new jaxpr of the same kind, with the same inputs and outputs (outputs renamed to
      the surviving equations' results).

    >>> import mytorch as mt, mytorch.numpy as mnp
    >>> closed = mt.make_jaxpr(lambda x: mnp.sin(x) + mnp.sin(x))(mnp.ones(3))
    >>> len(closed.eqns), len(cse(closed).eqns)
    (3, 2)
    """
    inner, consts, close = open_jaxpr(jaxpr)
    subst = {}
    seen = {}  # (primitive, *operand keys) -> [equations kept]
    eqns = []
    for eqn in inner.eqns:
        if subst:
            eqn = renamed(eqn, subst)
        if _mergeable(eqn):
            key = (eqn.primitive, *[v if type(v) is not Literal else _literal_key(v)
                                    for v in eqn.invars])
            kept = seen.get(key)
            if kept is None:
                seen[key] = [eqn]
            else:
                earlier = next((e for e in kept if _same_results(e, eqn)), None)
                if earlier is not None:
                    subst.update(zip(eqn.outvars, earlier.outvars, strict=True))
                    continue
                kept.append(eqn)
        eqns.append(eqn)
    return close(rebuilt(inner, eqns, rename_all(inner.outvars, subst)), consts)


def _mergeable(eqn):
    prim = eqn.primitive
    if prim.effectful or not eqn.outvars or prim.kind in _NEVER_MERGED_KINDS:
        return False
    if prim.kind == "call" and eqn.params.get("prevent_cse", False):
        return False
    return not has_effects(eqn)


def _literal_key(v):
    # repr tells 0.0 from -0.0 (equal as floats); NaNs share one key (and merge)
    return ("literal", v.aval.dtype, v.aval.weak_type, repr(scalar_value(v)))


def _same_results(earlier, eqn):
    """Whether `earlier` (same primitive and operands) can stand for `eqn`: equal params,
    and every result `eqn` binds is bound (not dropped) by `earlier` with the same type."""
    for a, b in zip(earlier.outvars, eqn.outvars, strict=True):
        if type(b) is Var and (type(a) is not Var or a.aval != b.aval):
            return False
    return same_params(earlier.params, eqn.params)


def same_params(a, b):
    """Whether two params dicts are equal: by value for hashable values (recursing into
    tuples), by identity for the rest."""
    if a is b:
        return True
    if len(a) != len(b):
        return False
    return all(k in b and same_value(v, b[k]) for k, v in a.items())


def same_value(x, y):
    """Equality of two param values that never merges what might differ: types must
    match, floats compare bits (0.0 vs -0.0, NaN), unhashable values compare identity."""
    if x is y:
        return True
    if type(x) is not type(y):
        return False
    if type(x) is tuple:
        return len(x) == len(y) and all(map(same_value, x, y))
    if type(x) is float:
        return x == y and math.copysign(1.0, x) == math.copysign(1.0, y)
    try:
        hash(x), hash(y)
        equal = x == y
    except Exception:  # unhashable, or an __eq__ that refuses: identity only
        return False
    return equal is True or (type(equal) is np.bool_ and bool(equal))
