"""Algebraic simplification of jaxprs: exact rewrites that remove or merge equations.

    x * 1, 1 * x, x + 0, 0 + x, x - 0, x / 1, add_any(x, 0)  ->  x
    neg(neg(x))                                             ->  x
    transpose(transpose(x, p), q)                           ->  transpose(x, p o q) (or x)
    reshape(reshape(x, s), t)                               ->  reshape(x, t) (or x)
    broadcast_in_dim(broadcast_in_dim(x))                   ->  one broadcast_in_dim (or x)
    convert(convert(x, wider), d)                           ->  convert(x, d) (or x)
    reshape/transpose/broadcast_in_dim/convert/squeeze/rev/slice/pad/concatenate/select_n
      and reductions that cannot change their operand     ->  the operand

A result is replaced by an operand only when their avals (shape, dtype and weak type) are
equal: `x * 1.0` with a 0-d weak 1.0 is `x`, `x * 1.0` with a strong f32 1.0 and a weak x is
not. The constant of a rule may be a Literal or a splat (a `broadcast_in_dim` of a Literal,
or `zeros`), as in the cotangent of a sum. `x * 0` is left alone (NaN * 0 and inf * 0 are
NaN). `x + 0.0` becomes `x` although for x = -0.0 the sum is +0.0 (only the sign of a zero
differs). A conversion chain is shortened only when the middle type holds every value of
the source exactly (f32 -> f64 -> f16 is f32 -> f16; f32 -> f16 -> f32 stays).

The rewrites look at each equation once, in order, after earlier rewrites (chains of any
length collapse); replaced results are substituted in later equations and the outputs.
Equations left dead (the inner transpose of a merged pair) are for `dce` to remove.
"""

import numpy as np

from mytorch.core import dtypes
from mytorch.core.ad_util import add_any_p, zeros_p
from mytorch.core.jaxpr import JaxprEqn, Literal, Var
from mytorch.transforms.inline import open_jaxpr, rebuilt, rename_all, renamed

_MAX_REWRITES = 8  # rewrites of one equation (each shortens a chain; this is a backstop)


def simplify(jaxpr):
    """Apply the algebraic rewrites above.

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
    rules = _rules()
    subst, defs, eqns = {}, {}, []
    for eqn in inner.eqns:
        if subst:
            eqn = renamed(eqn, subst)
        rule = rules.get(eqn.primitive)
        if rule is not None or eqn.primitive.kind == "reduction":
            eqn = _rewrite(eqn, rule or _reduction, rules, defs)
            if type(eqn) is tuple:  # (result var, the value that replaces it)
                subst[eqn[0]] = eqn[1]
                continue
        if len(eqn.outvars) == 1:
            defs[eqn.outvars[0]] = eqn
        eqns.append(eqn)
    return close(rebuilt(inner, eqns, rename_all(inner.outvars, subst)), consts)


def _rewrite(eqn, rule, rules, defs):
    """`eqn` rewritten by `rule` (and then by the rule of what it became) until no rule
    applies: an equation, or (eqn's result, the Var/Literal to use instead)."""
    for _ in range(_MAX_REWRITES):
        result = rule(eqn, defs)
        if result is None:
            return eqn
        if type(result) is not JaxprEqn:
            return eqn.outvars[0], result
        eqn = result
        rule = rules.get(eqn.primitive)
        if rule is None:
            return eqn
    return eqn


# ---- helpers ----------------------------------------------------------------------------
def _same(eqn, value):
    """`value` if it can replace the (single) result of `eqn`, else None."""
    out = eqn.outvars[0]
    return value if value.aval == out.aval else None


def _producer(v, defs, prim):
    """The equation of `prim` that defines `v`, or None."""
    eqn = defs.get(v) if type(v) is Var else None
    return eqn if eqn is not None and eqn.primitive is prim else None


def _splat(v, defs):
    """The scalar that every element of `v` equals when known at compile time (a Literal,
    a broadcast of a Literal, `zeros`), else None."""
    if type(v) is Literal:
        return scalar_value(v)
    eqn = defs.get(v) if type(v) is Var else None
    if eqn is None:
        return None
    if eqn.primitive is _P.broadcast_in_dim and type(eqn.invars[0]) is Literal:
        return scalar_value(eqn.invars[0])
    if eqn.primitive is zeros_p:
        return 0
    return None


def scalar_value(lit):
    """The value of a Literal as a Python scalar."""
    val = lit.val
    return val.item() if hasattr(val, "item") else val


def _unit_rule(unit, sides):
    """A rule for a binary op with `unit` as its identity on operand positions `sides`."""

    def rule(eqn, defs):
        for i in sides:
            value = _splat(eqn.invars[i], defs)
            if value is not None and value == unit:
                kept = _same(eqn, eqn.invars[1 - i])
                if kept is not None:
                    return kept
        return None

    return rule


def _is_identity(perm):
    return perm == tuple(range(len(perm)))


# ---- rules ------------------------------------------------------------------------------
def _neg(eqn, defs):
    inner = _producer(eqn.invars[0], defs, _P.neg)
    return _same(eqn, inner.invars[0]) if inner is not None else None


def _transpose(eqn, defs):
    (x,), perm = eqn.invars, eqn.params["permutation"]
    inner = _producer(x, defs, _P.transpose)
    if inner is not None:
        first = inner.params["permutation"]
        x, perm = inner.invars[0], tuple(first[p] for p in perm)
    if _is_identity(perm):
        return _same(eqn, x)
    if inner is not None:
        return eqn.replace(invars=[x], params=dict(eqn.params, permutation=perm))
    return None


def _reshape(eqn, defs):
    (x,), dims = eqn.invars, eqn.params["dimensions"]
    if dims is not None and _is_identity(dims):
        return eqn.replace(params=dict(eqn.params, dimensions=None))
    inner = _producer(x, defs, _P.reshape) if dims is None else None
    if inner is not None:
        x, dims = inner.invars[0], inner.params["dimensions"]
    if dims is None and x.aval.shape == eqn.params["new_sizes"]:
        return _same(eqn, x)
    if inner is not None:
        return eqn.replace(invars=[x], params=dict(eqn.params, dimensions=dims))
    return None


def _broadcast_in_dim(eqn, defs):
    (x,), shape = eqn.invars, eqn.params["shape"]
    if x.aval.shape == shape:  # increasing dims of an equal rank: the identity
        return _same(eqn, x)
    inner = _producer(x, defs, _P.broadcast_in_dim)
    if inner is None:
        return None
    outer_dims = eqn.params["broadcast_dimensions"]
    dims = tuple(outer_dims[d] for d in inner.params["broadcast_dimensions"])
    return eqn.replace(invars=inner.invars, params=dict(eqn.params, broadcast_dimensions=dims))


def _convert(eqn, defs):
    (x,), out = eqn.invars, eqn.outvars[0]
    if x.aval == out.aval:
        return x
    inner = _producer(x, defs, _P.convert_element_type)
    if inner is not None and lossless(inner.invars[0].aval.dtype, x.aval.dtype):
        return eqn.replace(invars=inner.invars)
    return None


def _squeeze(eqn, defs):
    return _same(eqn, eqn.invars[0]) if not eqn.params["dimensions"] else None


def _integer_pow(eqn, defs):
    return _same(eqn, eqn.invars[0]) if eqn.params["y"] == 1 else None


def _rev(eqn, defs):
    return _same(eqn, eqn.invars[0]) if not eqn.params["dimensions"] else None


def _slice(eqn, defs):
    p, x = eqn.params, eqn.invars[0]
    whole = (not any(p["start_indices"]) and p["limit_indices"] == x.aval.shape
             and (p["strides"] is None or all(s == 1 for s in p["strides"])))
    return _same(eqn, x) if whole else None


def _pad(eqn, defs):
    if any(any(c) for c in eqn.params["padding_config"]):
        return None
    return _same(eqn, eqn.invars[0])


def _concatenate(eqn, defs):
    return _same(eqn, eqn.invars[0]) if len(eqn.invars) == 1 else None


def _select_n(eqn, defs):
    cases = eqn.invars[1:]
    if all(c is cases[0] for c in cases[1:]):
        return _same(eqn, cases[0])
    return None


def _reduction(eqn, defs):
    if eqn.params.get("axes", None) == () and len(eqn.params) == 1:
        return _same(eqn, eqn.invars[0])
    return None


# ---- exact conversions ------------------------------------------------------------------
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


# ---- the table (built on first use: lax sits above this layer) --------------------------
class _Prims:
    """The lax primitives the rules refer to, looked up once."""

    def load(self):
        from mytorch.lax import elementwise as ew
        from mytorch.lax import structural as st

        self.neg, self.convert_element_type = ew.neg_p, ew.convert_element_type_p
        self.transpose, self.reshape = st.transpose_p, st.reshape_p
        self.broadcast_in_dim = st.broadcast_in_dim_p
        return {
            ew.add_p: _unit_rule(0, (0, 1)), ew.sub_p: _unit_rule(0, (1,)),
            ew.mul_p: _unit_rule(1, (0, 1)), ew.div_p: _unit_rule(1, (1,)),
            add_any_p: _unit_rule(0, (0, 1)), ew.neg_p: _neg,
            ew.convert_element_type_p: _convert, ew.select_n_p: _select_n,
            st.transpose_p: _transpose, st.reshape_p: _reshape,
            st.broadcast_in_dim_p: _broadcast_in_dim, st.squeeze_p: _squeeze,
            st.rev_p: _rev, st.slice_p: _slice, st.pad_p: _pad, ew.integer_pow_p: _integer_pow,
            st.concatenate_p: _concatenate,
        }


_P = _Prims()
_RULES = []


def _rules():
    if not _RULES:
        _RULES.append(_P.load())
    return _RULES[0]
