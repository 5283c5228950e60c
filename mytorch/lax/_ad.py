"""Helpers for writing the derivative rules that sit next to each primitive.

    defjvp(prim, *fns)        elementwise-style JVP: fns[i](t, ans, *primals, **params) is
                              operand i's contribution (None: not differentiable); the
                              contributions are broadcast to the result and summed
    deflinear(prim, transpose)  a primitive linear in all its array operands: its JVP
                              applies the primitive to the tangents
    defjvp_zero(prim)         outputs with no derivative (comparisons, argmax, iota, ...)

Transpose rules receive `UndefinedPrimal` for linear operands (`is_undefined(x)`);
`unbroadcast(ct, aval)` sums a cotangent back down to a 0-d operand's shape.
"""

from mytorch.core.ad_util import (
    UndefinedPrimal, Zero, add_tangents, instantiate, is_differentiable, is_undefined,
)
from mytorch.core.trace import aval_of
from mytorch.lax.elementwise import convert_element_type_p
from mytorch.lax.structural import broadcast_in_dim

__all__ = [
    "UndefinedPrimal", "Zero", "add_tangents", "instantiate", "is_undefined", "defjvp",
    "deflinear", "defjvp_zero", "defjvp_bilinear", "unbroadcast", "broadcast_to_aval",
    "zero_out", "to_aval",
]


def zero_out(x):
    """A symbolic zero tangent for the value `x`."""
    return Zero(aval_of(x))


def broadcast_to_aval(t, aval):
    """A tangent `t` (same dtype) broadcast from 0-d to `aval.shape` when needed."""
    if aval_of(t).shape == aval.shape:
        return t
    return broadcast_in_dim(t, aval.shape, ())


def unbroadcast(ct, aval):
    """A cotangent of a result, summed down to an operand of abstract value `aval`
    (elementwise operands are either result-shaped or 0-d)."""
    if type(ct) is Zero:
        return Zero(aval)
    ct_aval = aval_of(ct)
    if ct_aval.shape != aval.shape:
        from mytorch.lax.reductions import reduce_sum

        ct = reduce_sum(ct, tuple(range(ct_aval.ndim)))
    if aval_of(ct).dtype != aval.dtype:
        from mytorch.lax.elementwise import convert_element_type

        ct = convert_element_type(ct, aval.dtype)
    return ct


def defjvp(prim, *fns):
    """Define `prim`'s JVP from one partial-derivative function per operand."""

    def rule(primals, tangents, **params):
        ans = prim.bind(*primals, **params)
        out_aval = aval_of(ans)
        if not is_differentiable(out_aval):
            return ans, Zero(out_aval)
        total = Zero(out_aval)
        for fn, t in zip(fns, tangents, strict=False):
            if fn is None or type(t) is Zero:
                continue
            term = fn(t, ans, *primals, **params)
            if type(term) is Zero:  # e.g. integer_pow with y == 0
                continue
            total = add_tangents(total, broadcast_to_aval(term, out_aval))
        return ans, total

    prim.def_jvp(rule)
    return rule


def deflinear(prim, transpose):
    """`prim` is linear in every array operand: its JVP applies it to the tangents."""

    def rule(primals, tangents, **params):
        ans = prim.bind(*primals, **params)
        if prim.multiple_results:
            if not all(is_differentiable(aval_of(a)) for a in ans):
                return ans, [zero_out(a) for a in ans]
        elif not is_differentiable(aval_of(ans)):
            return ans, zero_out(ans)
        outs = prim.bind(*[instantiate(t) for t in tangents], **params)
        return ans, outs

    prim.def_jvp(rule)
    prim.def_transpose(transpose)
    prim.def_linear()
    return rule


def defjvp_zero(prim):
    """`prim`'s outputs have zero derivative (integer or boolean results, indices)."""

    def rule(primals, tangents, **params):
        ans = prim.bind(*primals, **params)
        if prim.multiple_results:
            return ans, [zero_out(a) for a in ans]
        return ans, zero_out(ans)

    prim.def_jvp(rule)
    return rule


def to_aval(x, aval):
    """`x` with the dtype and weak type of `aval` (e.g. a product computed in
    preferred_element_type going back to its operand's dtype)."""
    a = aval_of(x)
    if a.dtype == aval.dtype and a.weak_type == aval.weak_type:
        return x
    return convert_element_type_p.bind(x, new_dtype=aval.dtype, weak_type=aval.weak_type)


def defjvp_bilinear(prim):
    """`prim(lhs, rhs)` is linear in each operand separately (dot_general, convolution):
    its JVP is prim(t_lhs, rhs) + prim(lhs, t_rhs); integer operands have no tangent."""

    def rule(primals, tangents, **params):
        lhs, rhs = primals
        t_lhs, t_rhs = tangents
        ans = prim.bind(lhs, rhs, **params)
        out_aval = aval_of(ans)
        if not is_differentiable(out_aval):
            return ans, zero_out(ans)
        total = Zero(out_aval)
        if type(t_lhs) is not Zero and is_differentiable(aval_of(lhs)):
            total = add_tangents(total, to_aval(prim.bind(t_lhs, rhs, **params), out_aval))
        if type(t_rhs) is not Zero and is_differentiable(aval_of(rhs)):
            total = add_tangents(total, to_aval(prim.bind(lhs, t_rhs, **params), out_aval))
        return ans, total

    prim.def_jvp(rule)
    return rule

