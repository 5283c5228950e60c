"""Derivative rules of `dot_general` (defined in dot.py).

dot_general is bilinear: linear in each operand when the other is fixed, but not jointly
linear, so it is not marked linear. Its JVP is the sum of the primitive applied to each
operand's tangent with the other operand's primal; its transpose rule handles exactly one
linear operand, as JAX's _dot_general_transpose_lhs/_rhs: a dot_general of the cotangent
with the other operand (contracting the other operand's free dims, matching its batch dims),
transposed back to the operand's dim order and converted to its dtype. `precision` and
`preferred_element_type` pass through unchanged. Rules use lax operations only, so they
differentiate again.

Batching is one dot_general without moving any operand: a vmapped dim on both operands
becomes a new leading batch pair, on one operand a free dim of that operand.
"""

from mytorch.core.trace import aval_of
from mytorch.lax import elementwise as _ew
from mytorch.lax._ad import defjvp_bilinear, is_undefined
from mytorch.lax._batching import shift_dims
from mytorch.lax.dot import dot_general_p
from mytorch.lax.structural import transpose

__all__ = []


def _remaining(ndim, *taken):
    used = set().union(*taken)
    return [d for d in range(ndim) if d not in used]


def _ranges_like(*groups):
    """Consecutive ranges with the lengths of `groups`: ((0, 1), (2,), (3, 4)) etc."""
    start, out = 0, []
    for g in groups:
        out.append(tuple(range(start, start + len(g))))
        start += len(g)
    return out


def _argsort(values):
    return tuple(sorted(range(len(values)), key=values.__getitem__))


def _transpose_lhs(ct, x_aval, y, dimension_numbers, precision, preferred_element_type,
                   swap_ans=False):
    """The cotangent of operand x (aval `x_aval`) of dot_general(x, y) (or of
    dot_general(y, x) when `swap_ans`, with `dimension_numbers` given for (x, y))."""
    (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
    y_ndim = aval_of(y).ndim
    x_kept = _remaining(x_aval.ndim, x_contract, x_batch)
    y_kept = _remaining(y_ndim, y_contract, y_batch)
    # the dims of ct: batch, then the free dims of the first operand, then of the second
    if swap_ans:
        ans_batch, ans_y, _ = _ranges_like(x_batch, y_kept, x_kept)
    else:
        ans_batch, _, ans_y = _ranges_like(x_batch, x_kept, y_kept)
    dims = ((ans_y, tuple(y_kept)), (ans_batch, tuple(y_batch)))
    # the result's dims: batch, x's free dims, then y's contracted dims in increasing order
    # (each standing for the x dim it was contracted with)
    x_contract_by_y = [x_contract[i] for i in _argsort(y_contract)]
    out_axes = _argsort(list(x_batch) + x_kept + x_contract_by_y)
    x_bar = dot_general_p.bind(ct, y, dimension_numbers=dims, precision=precision,
                               preferred_element_type=preferred_element_type)
    if out_axes != tuple(range(len(out_axes))):
        x_bar = transpose(x_bar, out_axes)
    bar = aval_of(x_bar)
    if bar.dtype != x_aval.dtype or bar.weak_type != x_aval.weak_type:
        x_bar = _ew.convert_element_type_p.bind(x_bar, new_dtype=x_aval.dtype,
                                                weak_type=x_aval.weak_type)
    return x_bar


def _dot_general_transpose(ct, lhs, rhs, *, dimension_numbers, precision,
                           preferred_element_type):
    if is_undefined(lhs) and is_undefined(rhs):
        raise TypeError("dot_general: cannot transpose a product of two linear values "
                        "(it is linear in each operand separately, not jointly)")
    if is_undefined(lhs):
        return [_transpose_lhs(ct, lhs.aval, rhs, dimension_numbers, precision,
                               preferred_element_type), None]
    (lc, rc), (lb, rb) = dimension_numbers
    swapped = ((rc, lc), (rb, lb))
    return [None, _transpose_lhs(ct, rhs.aval, lhs, swapped, precision,
                                 preferred_element_type, swap_ans=True)]


defjvp_bilinear(dot_general_p)
dot_general_p.def_transpose(_dot_general_transpose)


# ---- batching ----------------------------------------------------------------------------
# One dot_general, no transposes: a batch dim on both operands becomes a new leading batch
# pair (output dim 0); on one operand only, it is a free dim of that operand and lands among
# that operand's free dims in the output (after the batch dims, lhs free before rhs free).
def _dot_general_batching(axis, args, dims, *, dimension_numbers, precision,
                          preferred_element_type):
    lhs, rhs = args
    lbd, rbd = dims
    (lc, rc), (lb, rb) = dimension_numbers
    if lbd is not None:
        lc, lb = shift_dims(lc, lbd), shift_dims(lb, lbd)
    if rbd is not None:
        rc, rb = shift_dims(rc, rbd), shift_dims(rb, rbd)
    if lbd is not None and rbd is not None:
        new_dims = ((lc, rc), ((lbd, *lb), (rbd, *rb)))
        out_dim = 0
    elif lbd is not None:
        new_dims = ((lc, rc), (lb, rb))
        out_dim = len(lb) + _remaining(aval_of(lhs).ndim, lc, lb).index(lbd)
    else:
        new_dims = ((lc, rc), (lb, rb))
        lhs_free = _remaining(aval_of(lhs).ndim, lc, lb)
        out_dim = len(lb) + len(lhs_free) + _remaining(aval_of(rhs).ndim, rc, rb).index(rbd)
    out = dot_general_p.bind(lhs, rhs, dimension_numbers=new_dims, precision=precision,
                             preferred_element_type=preferred_element_type)
    return out, out_dim


dot_general_p.def_batching(_dot_general_batching)
