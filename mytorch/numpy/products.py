"""Products of arrays: matmul, dot, vdot, inner, outer, tensordot, kron, cross, einsum.

Each contraction is one `lax.dot_general` (plus reshapes/transposes), with NumPy's rules for
1-D operands and broadcasting of batch dims. Operands are promoted to one dtype first
(`bool @ bool` is a logical or of ands, as in NumPy). `einsum`/`einsum_path` live in
mytorch/numpy/einsum.py and are re-exported here.
"""

import operator

import numpy as np

from mytorch import lax
from mytorch.core import dtypes
from mytorch.core.source_info import user_error
from mytorch.errors import AxisError
from mytorch.numpy._promote import asarray_any, broadcast_shapes, promote_args, promote_dtypes
from mytorch.numpy.einsum import einsum, einsum_path

__all__ = [
    "matmul", "dot", "vdot", "vecdot", "inner", "outer", "tensordot", "kron", "cross",
    "einsum", "einsum_path",
]


def _s(x):
    return x.aval.str_short()


def _pair(name, a, b):
    return promote_dtypes(name, asarray_any(a), asarray_any(b))


def _preferred(preferred_element_type):
    if preferred_element_type is None:
        return None
    return dtypes.canonicalize(preferred_element_type, explicit=True)


def _dot(a, b, dims, precision=None, preferred_element_type=None):
    return lax.dot_general(a, b, dims, precision=precision,
                           preferred_element_type=_preferred(preferred_element_type))


def _mul(a, b):
    """Elementwise product of two promoted, broadcast-compatible arrays (bool: and)."""
    a, b = promote_args("multiply", a, b)
    return lax.bitwise_and(a, b) if dtypes.is_bool(a.dtype) else lax.mul(a, b)


def _transpose(x, perm):
    perm = tuple(perm)
    return x if perm == tuple(range(x.ndim)) else lax.transpose(x, perm)


def _reshape(x, shape):
    shape = tuple(shape)
    return x if shape == x.shape else lax.reshape(x, shape)


# ---- matmul -------------------------------------------------------------------------------
def _batch_plan(name, a, b, ba, bb):
    """Classify each broadcast batch position: both, only a, only b, or neither (size 1)."""
    n = max(len(ba), len(bb))
    ba, bb = (1,) * (n - len(ba)) + ba, (1,) * (n - len(bb)) + bb
    plan = []
    for da, db in zip(ba, bb, strict=True):
        if da == db:
            plan.append("both" if da != 1 else "one")
        elif db == 1:
            plan.append("a")
        elif da == 1:
            plan.append("b")
        else:
            raise user_error(ValueError,
                f"{name}: batch dims of {_s(a)} @ {_s(b)} cannot broadcast: each must be "
                "equal or 1"
            )
    return plan, ba, bb


def matmul(a, b, *, precision=None, preferred_element_type=None):
    """Matrix product with NumPy's rules (`a @ b`).

    1-D operands are promoted to matrices (a row for `a`, a column for `b`) and the added
    axis is removed from the result; leading (batch) dims broadcast.

    Args:
      a: [..., n, k] or [k]. b: [..., k, m] or [k].

    Returns:
      [..., n, m] with the broadcast batch dims (n or m dropped for 1-D operands).

    Raises:
      TypeError: "matmul: contracting dims differ: f32[2,3] @ f32[4,5] (3 vs 4)".
    """
    a, b = _pair("matmul", a, b)
    if a.ndim == 0 or b.ndim == 0:
        raise user_error(ValueError,
            f"matmul: operands must be at least 1-D, got {_s(a)} @ {_s(b)}; use multiply "
            "for scalars"
        )
    ka = a.shape[-1]
    kb = b.shape[0] if b.ndim == 1 else b.shape[-2]
    if ka != kb:
        raise user_error(TypeError,
            f"matmul: contracting dims differ: {_s(a)} @ {_s(b)} ({ka} vs {kb})")
    ba = a.shape[:-2]
    bb = b.shape[:-2]
    plan, ba, bb = _batch_plan("matmul", a, b, ba, bb)
    # drop the size-1 (broadcast) batch dims of each operand, keep the rest in order
    a_keep = [k for k, p in enumerate(plan) if p in ("both", "a")]
    b_keep = [k for k, p in enumerate(plan) if p in ("both", "b")]
    a2 = _reshape(a, tuple(ba[k] for k in a_keep) + a.shape[-2 if a.ndim > 1 else -1:])
    b2 = _reshape(b, tuple(bb[k] for k in b_keep) + b.shape[-2 if b.ndim > 1 else -1:])
    both = [k for k, p in enumerate(plan) if p == "both"]
    a_batch = tuple(a_keep.index(k) for k in both)
    b_batch = tuple(b_keep.index(k) for k in both)
    dims = (((a2.ndim - 1,), (b2.ndim - 1 if b.ndim == 1 else b2.ndim - 2,)),
            (a_batch, b_batch))
    out = _dot(a2, b2, dims, precision, preferred_element_type)
    # out dims: both-batch, a-only batch, [n], b-only batch, [m]
    order = both + [k for k in a_keep if k not in both]
    n_dim = [len(order)] if a.ndim > 1 else []
    pos_b = len(order) + len(n_dim)
    b_only = [k for k in b_keep if k not in both]
    m_dim = [pos_b + len(b_only)] if b.ndim > 1 else []
    src = {k: i for i, k in enumerate(order)}
    src.update({k: pos_b + i for i, k in enumerate(b_only)})
    kept = sorted(src)
    out = _transpose(out, [src[k] for k in kept] + n_dim + m_dim)
    batch_shape = tuple(x if y == 1 else y for x, y in zip(ba, bb, strict=True))
    tail = a.shape[-2:-1] + (b.shape[-1:] if b.ndim > 1 else ())
    return _reshape(out, batch_shape + tail)


# ---- dot, vdot, inner, outer -------------------------------------------------------------
def dot(a, b, *, precision=None, preferred_element_type=None):
    """NumPy's `dot`: scalars multiply; otherwise the last axis of `a` is contracted with
    the second-to-last axis of `b` (its only axis when `b` is 1-D).

    Returns:
      Shape `a.shape[:-1] + b.shape[:-2] + b.shape[-1:]`.
    """
    a, b = _pair("dot", a, b)
    if a.ndim == 0 or b.ndim == 0:
        out = _mul(a, b)
        pet = _preferred(preferred_element_type)
        return out if pet is None else lax.convert_element_type(out, pet)
    kb = 0 if b.ndim == 1 else b.ndim - 2
    if a.shape[-1] != b.shape[kb]:
        raise user_error(TypeError,
            f"dot: contracting dims differ: {_s(a)} . {_s(b)} ({a.shape[-1]} vs "
            f"{b.shape[kb]}): the last axis of a must match "
            + ("b's only axis" if b.ndim == 1 else "the second-to-last axis of b")
        )
    return _dot(a, b, (((a.ndim - 1,), (kb,)), ((), ())), precision, preferred_element_type)


def vdot(a, b, *, precision=None, preferred_element_type=None):
    """The dot product of the flattened `a` and `b` (equal sizes), conjugating a complex
    `a` as NumPy does: a 0-d array."""
    a, b = _pair("vdot", a, b)
    if dtypes.is_complex(a.dtype):
        a = lax.conj(a)
    if a.size != b.size:
        raise user_error(TypeError, f"vdot: operands need equal sizes, got {_s(a)} and {_s(b)}")
    a, b = _reshape(a, (a.size,)), _reshape(b, (b.size,))
    return _dot(a, b, (((0,), (0,)), ((), ())), precision, preferred_element_type)


def inner(a, b, *, precision=None, preferred_element_type=None):
    """Contract the last axes of `a` and `b` (scalars multiply).

    Returns:
      Shape `a.shape[:-1] + b.shape[:-1]`.
    """
    a, b = _pair("inner", a, b)
    if a.ndim == 0 or b.ndim == 0:
        return dot(a, b, preferred_element_type=preferred_element_type)
    if a.shape[-1] != b.shape[-1]:
        raise user_error(TypeError,
            f"inner: the last dims differ: {_s(a)} and {_s(b)} ({a.shape[-1]} vs "
            f"{b.shape[-1]})"
        )
    return _dot(a, b, (((a.ndim - 1,), (b.ndim - 1,)), ((), ())), precision,
                preferred_element_type)


def outer(a, b):
    """The outer product of the flattened `a` (size n) and `b` (size m): shape [n, m]."""
    a, b = _pair("outer", a, b)
    a = lax.broadcast_in_dim(_reshape(a, (a.size,)), (a.size, b.size), (0,))
    b = lax.broadcast_in_dim(_reshape(b, (b.size,)), (a.shape[0], b.size), (1,))
    return _mul(a, b)


def vecdot(x1, x2, /, *, axis=-1, precision=None, preferred_element_type=None):
    """The dot product of `x1` and `x2` along `axis` (of each operand), broadcasting the
    other dims; a complex `x1` is conjugated, as NumPy's vecdot (sum conj(x1) * x2).

    Returns:
      The broadcast shape of `x1` and `x2` without their `axis` dims.
    """
    a, b = _pair("vecdot", x1, x2)
    if dtypes.is_complex(a.dtype):
        a = lax.conj(a)
    sa, sb = _s(a), _s(b)
    if a.ndim == 0 or b.ndim == 0:
        raise user_error(ValueError,
            f"vecdot: operands must be at least 1-D, got {_s(a)} and {_s(b)}")
    a = _move_to_end(a, _axis1("vecdot", axis, a))
    b = _move_to_end(b, _axis1("vecdot", axis, b))
    if a.shape[-1] != b.shape[-1]:
        raise user_error(TypeError,
            f"vecdot: the dims along axis {axis} differ: {sa} and {sb} "
            f"({a.shape[-1]} vs {b.shape[-1]})"
        )
    k = a.shape[-1]
    out = matmul(_reshape(a, a.shape[:-1] + (1, k)), _reshape(b, b.shape[:-1] + (k, 1)),
                 precision=precision, preferred_element_type=preferred_element_type)
    return _reshape(out, out.shape[:-2])


def _move_to_end(x, axis):
    return _transpose(x, [k for k in range(x.ndim) if k != axis] + [axis])


# ---- tensordot, kron, cross ---------------------------------------------------------------
def _tensordot_axes(a, b, axes):
    if isinstance(axes, (int, np.integer)):
        n = operator.index(axes)
        if n < 0 or n > min(a.ndim, b.ndim):
            raise user_error(ValueError,
                f"tensordot: axes={n} must be in [0, {min(a.ndim, b.ndim)}] for {_s(a)} and "
                f"{_s(b)}"
            )
        return tuple(range(a.ndim - n, a.ndim)), tuple(range(n))
    try:
        ax_a, ax_b = axes
    except (TypeError, ValueError):
        raise user_error(TypeError,
            f"tensordot: axes must be an int or a pair of sequences of ints, got {axes!r}"
        ) from None
    ax_a = (ax_a,) if isinstance(ax_a, (int, np.integer)) else tuple(ax_a)
    ax_b = (ax_b,) if isinstance(ax_b, (int, np.integer)) else tuple(ax_b)
    if len(ax_a) != len(ax_b):
        raise user_error(ValueError,
            f"tensordot: the axes lists must have equal lengths, got {ax_a} and {ax_b}"
        )
    return _norm_axes(ax_a, a), _norm_axes(ax_b, b)


def _norm_axes(axes, x):
    out = []
    for ax in axes:
        ax = operator.index(ax)
        if not -x.ndim <= ax < x.ndim:
            raise user_error(AxisError, f"tensordot: axis {ax} is out of bounds for {_s(x)} "
                                         f"(rank {x.ndim})")
        out.append(ax % x.ndim)
    if len(set(out)) != len(out):
        raise user_error(ValueError, f"tensordot: repeated axis in {tuple(axes)} for {_s(x)}")
    return tuple(out)


def tensordot(a, b, axes=2, *, precision=None, preferred_element_type=None):
    """Contract `axes` of `a` with `axes` of `b`.

    Args:
      axes: an int N (the last N axes of `a` with the first N of `b`) or a pair of
        sequences `(axes_a, axes_b)` paired in order.

    Returns:
      The free axes of `a` followed by the free axes of `b`.
    """
    a, b = _pair("tensordot", a, b)
    ax_a, ax_b = _tensordot_axes(a, b, axes)
    for i, j in zip(ax_a, ax_b, strict=True):
        if a.shape[i] != b.shape[j]:
            raise user_error(TypeError,
                f"tensordot: contracting dims differ: {_s(a)} axis {i} and {_s(b)} axis {j} "
                f"({a.shape[i]} vs {b.shape[j]})"
            )
    return _dot(a, b, ((ax_a, ax_b), ((), ())), precision, preferred_element_type)


def kron(a, b):
    """The Kronecker product: blocks of `b` scaled by each element of `a`.

    Operands of different ranks get leading 1s; the result has shape a.shape * b.shape.
    """
    a, b = _pair("kron", a, b)
    n = max(a.ndim, b.ndim)
    sa = (1,) * (n - a.ndim) + a.shape
    sb = (1,) * (n - b.ndim) + b.shape
    full = tuple(d for pair in zip(sa, sb, strict=True) for d in pair)
    a = lax.broadcast_in_dim(_reshape(a, sa), full, tuple(range(0, 2 * n, 2)))
    b = lax.broadcast_in_dim(_reshape(b, sb), full, tuple(range(1, 2 * n, 2)))
    return _reshape(_mul(a, b), tuple(x * y for x, y in zip(sa, sb, strict=True)))


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """The cross product of 3-vectors (or 2-vectors, giving the z component) along the
    given axes, broadcasting the other dims.

    Returns:
      Vectors along `axisc` (3 components), or a scalar per pair when both are 2-vectors.
    """
    a, b = _pair("cross", a, b)
    if axis is not None:
        axisa = axisb = axisc = axis
    a = _move_to_end(a, _axis1("cross", axisa, a))
    b = _move_to_end(b, _axis1("cross", axisb, b))
    na, nb = a.shape[-1], b.shape[-1]
    if na not in (2, 3) or nb not in (2, 3):
        raise user_error(ValueError,
            f"cross: the vector axes must have 2 or 3 components, got {na} and {nb}"
        )
    comp_a = [_component(a, k) for k in range(na)]
    comp_b = [_component(b, k) for k in range(nb)]
    zero = lax.convert_element_type(0, a.dtype)
    if na == 2:
        comp_a.append(zero)
    if nb == 2:
        comp_b.append(zero)
    (a0, a1, a2), (b0, b1, b2) = comp_a, comp_b
    z = _sub(_mul(a0, b1), _mul(a1, b0))
    if na == 2 and nb == 2:
        return z
    x = _sub(_mul(a1, b2), _mul(a2, b1))
    y = _sub(_mul(a2, b0), _mul(a0, b2))
    shape = broadcast_shapes("cross", x.shape, y.shape, z.shape)
    parts = [lax.broadcast_in_dim(_bcast(p, shape), shape + (1,), tuple(range(len(shape))))
             for p in (x, y, z)]
    out = lax.concatenate(parts, len(shape))
    c = _axis1("cross", axisc, out)
    return _transpose(out, [k for k in range(out.ndim - 1)][:c] + [out.ndim - 1]
                      + [k for k in range(out.ndim - 1)][c:])


def _component(x, k):
    """`x[..., k]` (static k)."""
    lead = x.shape[:-1]
    part = lax.slice(x, (0,) * len(lead) + (k,), lead + (k + 1,))
    return _reshape(part, lead)


def _sub(x, y):
    x, y = promote_args("cross", x, y)
    return lax.sub(x, y)


def _bcast(x, shape):
    from mytorch.numpy._promote import broadcast_to_shape

    return broadcast_to_shape(x, shape)


def _axis1(name, axis, x):
    ax = operator.index(axis)
    if not -x.ndim <= ax < x.ndim:
        raise user_error(AxisError,
            f"{name}: axis {ax} is out of bounds for {_s(x)} (rank {x.ndim})")
    return ax % x.ndim
