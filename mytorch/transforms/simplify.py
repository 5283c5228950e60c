"""Algebraic simplification of jaxprs: exact rewrites that remove or merge equations.

The rewrites belong to the primitives: a primitive registers a "simplify" rule,
fn(eqn, defs) -> None (no rewrite), a Var/Literal that replaces the equation's single
result, or a new equation, where `defs` maps each Var defined so far to its equation (a
rule may look at its operands' producers). mytorch/lax registers, next to each primitive's
other rules:

    x * 1, 1 * x, x + 0, 0 + x, x - 0, x / 1, add_any(x, 0)  ->  x
    neg(neg(x))                                             ->  x
    transpose(transpose(x, p), q)                           ->  transpose(x, p o q) (or x)
    reshape(reshape(x, s), t)                               ->  reshape(x, t) (or x)
    broadcast_in_dim(broadcast_in_dim(x))                   ->  one broadcast_in_dim (or x)
    convert(convert(x, wider), d)                           ->  convert(x, d) (or x)
    reshape/transpose/broadcast_in_dim/convert/squeeze/rev/slice/pad/concatenate/select_n
      and reductions that cannot change their operand     ->  the operand

A primitive that makes splats (every element one scalar known at compile time: a
`broadcast_in_dim` of a Literal, `zeros`) registers a "splat" rule, a `SplatRule`; unit
rules accept a splat as their constant, as in the cotangent of a sum.

This module holds the interpreter and the generic helpers the rules are written with
(`unit_rule`, `same`, `producer`, `splat_value`, `lossless`). A result is replaced by an
operand only when their avals (shape, dtype and weak type) are equal: `x * 1.0` with a 0-d
weak 1.0 is `x`, `x * 1.0` with a strong f32 1.0 and a weak x is not. `x * 0` is left alone
(NaN * 0 and inf * 0 are NaN). `x + 0.0` becomes `x` although for x = -0.0 the sum is +0.0
(only the sign of a zero differs). A conversion chain is shortened only when the middle
type holds every value of the source exactly (f32 -> f64 -> f16 is f32 -> f16; f32 -> f16
-> f32 stays).

The rewrites look at each equation once, in order, after earlier rewrites (chains of any
length collapse); replaced results are substituted in later equations and the outputs.
Equations left dead (the inner transpose of a merged pair) are for `dce` to remove.
"""

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from mytorch.core import dtypes
from mytorch.core.jaxpr import JaxprEqn, Literal, Var
from mytorch.transforms.inline import open_jaxpr, rebuilt, rename_all, renamed

_MAX_REWRITES = 8  # rewrites of one equation (each shortens a chain; this is a backstop)


class SplatRule(NamedTuple):
    """The "splat" rule of a primitive whose equations may fill their result with one
    scalar known at compile time.

    Attributes:
      scalar: fn(eqn) -> the 0-d Literal every element of eqn's (single) result equals, or
        None when this equation is not such a splat.
      make: fn(lit, out, source_info) -> a JaxprEqn defining the Var `out` (any shape) as
        the splat of the 0-d Literal `lit` (constant folding builds new splats with it).
    """

    scalar: Callable
    make: Callable


def simplify(jaxpr):
    """Apply the primitives' "simplify" rules to every equation, in order.

    Args:
      jaxpr: a Jaxpr or ClosedJaxpr.

    Returns:
      A new jaxpr of the same kind with the same inputs, computing the same outputs.

    >>> import mytorch as mt, mytorch.numpy as mnp
    >>> closed = mt.make_jaxpr(lambda x: -(-x) * 1.0)(mnp.ones(3))
    >>> print(simplify(closed))   # the dead `neg` is left for dce
    { lambda ; a:f32[3]. let
        b:f32[3] = neg a
      in (a,) }
    """
    inner, consts, close = open_jaxpr(jaxpr)
    subst, defs, eqns = {}, {}, []
    for eqn in inner.eqns:
        if subst:
            eqn = renamed(eqn, subst)
        rule = eqn.primitive.rules.get("simplify")
        if rule is not None:
            eqn = _rewrite(eqn, rule, defs)
            if type(eqn) is tuple:  # (result var, the value that replaces it)
                subst[eqn[0]] = eqn[1]
                continue
        if len(eqn.outvars) == 1:
            defs[eqn.outvars[0]] = eqn
        eqns.append(eqn)
    if not subst and len(eqns) == len(inner.eqns) \
            and all(a is b for a, b in zip(eqns, inner.eqns)):
        return jaxpr
    return close(rebuilt(inner, eqns, rename_all(inner.outvars, subst)), consts)


def _rewrite(eqn, rule, defs):
    """`eqn` rewritten by `rule` (and then by the rule of what it became) until no rule
    applies: an equation, or (eqn's result, the Var/Literal to use instead)."""
    for _ in range(_MAX_REWRITES):
        result = rule(eqn, defs)
        if result is None:
            return eqn
        if type(result) is not JaxprEqn:
            return eqn.outvars[0], result
        eqn = result
        rule = eqn.primitive.rules.get("simplify")
        if rule is None:
            return eqn
    return eqn


# ---- helpers the rules are written with ---------------------------------------------------
def same(eqn, value):
    """`value` if it can replace the (single) result of `eqn` (equal avals), else None."""
    out = eqn.outvars[0]
    return value if value.aval == out.aval else None


def producer(v, defs, prim):
    """The equation of primitive `prim` that defines `v` (per `defs`), or None."""
    eqn = defs.get(v) if type(v) is Var else None
    return eqn if eqn is not None and eqn.primitive is prim else None


def splat_literal(v, defs):
    """The 0-d Literal that every element of `v` equals when known at compile time (`v`
    itself when a Literal, or the scalar of a splat per its producer's "splat" rule)."""
    if type(v) is Literal:
        return v
    eqn = defs.get(v) if type(v) is Var else None
    if eqn is None:
        return None
    rule = eqn.primitive.rules.get("splat")
    return rule.scalar(eqn) if rule is not None else None


def splat_value(v, defs):
    """`splat_literal(v, defs)` as a Python scalar, or None."""
    lit = splat_literal(v, defs)
    return None if lit is None else scalar_value(lit)


def scalar_value(lit):
    """The value of a Literal as a Python scalar."""
    val = lit.val
    return val.item() if hasattr(val, "item") else val


def unit_rule(unit, sides):
    """A "simplify" rule for a binary op with `unit` as its identity on the operand
    positions `sides` (e.g. `unit_rule(0, (1,))` for x - 0)."""

    def rule(eqn, defs):
        for i in sides:
            value = splat_value(eqn.invars[i], defs)
            if value is not None and value == unit:
                kept = same(eqn, eqn.invars[1 - i])
                if kept is not None:
                    return kept
        return None

    return rule


def is_identity(perm):
    """Whether the permutation `perm` (a tuple of ints) leaves every axis in place."""
    return perm == tuple(range(len(perm)))


_PRECISION = {dtypes.float16: 11, dtypes.bfloat16: 8, dtypes.float32: 24, dtypes.float64: 53}
_WIDER_FLOATS = {
    dtypes.float16: (dtypes.float32, dtypes.float64),
    dtypes.bfloat16: (dtypes.float32, dtypes.float64),
    dtypes.float32: (dtypes.float64,),
}


def lossless(src, dst):
    """Whether converting dtype `src` to `dst` keeps every value exactly (so converting
    further from `dst` is the same as converting from `src`)."""
    src, dst = np.dtype(src), np.dtype(dst)
    if src == dst or dtypes.is_bool(src):
        return True
    if dtypes.is_int(src) and dtypes.is_int(dst):
        return bool(np.can_cast(src, dst, "safe"))
    if dtypes.is_int(src) and dtypes.is_float(dst):
        digits = src.itemsize * 8 - dtypes.is_signed_int(src)
        return digits <= _PRECISION[dst]
    if dtypes.is_float(src):
        return dst in _WIDER_FLOATS.get(src, ())
    return False
