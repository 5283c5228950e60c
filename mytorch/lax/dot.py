"""Contractions: `dot_general` and the binders built on it (`dot`, `batch_matmul`).

`dot_general` contracts pairs of dimensions and maps over pairs of batch dimensions, like
XLA's DotGeneral. Its output dims come in XLA's order: the batch dims, then the free dims of
`lhs`, then the free dims of `rhs`:

    dimension_numbers = (((2,), (1,)), ((0,), (0,)))
    dot_general(f32[8,3,4], f32[8,4,5], dimension_numbers) -> f32[8,3,5]

Operands share one dtype unless `preferred_element_type` is given, which also sets the
output dtype. The NumPy kernel lives in mytorch/backends/numpy/dot.py.
"""

import functools
import operator

import numpy as np

from mytorch.core import dtypes
from mytorch.core.aval import ShapedArray
from mytorch.core.primitive import Primitive
from mytorch.core.source_info import user_error
from mytorch.lax._utils import coerce_operands, short

__all__ = ["dot_general", "dot", "batch_matmul", "dot_general_p"]

dot_general_p = Primitive("dot_general", kind="contraction")


# ---- parameter normalisation (binders) and validation (abstract eval) --------------------
def _int_tuple(dims, what, op):
    """A tuple of Python ints from a sequence of integers; TypeError otherwise."""
    if isinstance(dims, (int, np.integer)):
        dims = (dims,)
    try:
        return tuple(operator.index(d) for d in dims)
    except TypeError:
        raise user_error(TypeError,
            f"{op}: {what} must be a sequence of ints, got {dims!r}") from None


def _well_formed(dimension_numbers):
    """Whether `dimension_numbers` is already a tuple of two pairs of tuples of ints."""
    return (type(dimension_numbers) is tuple and len(dimension_numbers) == 2
            and all(type(p) is tuple and len(p) == 2 for p in dimension_numbers)
            and all(type(d) is tuple and all(type(i) is int for i in d)
                    for p in dimension_numbers for d in p))


def normalize_dimension_numbers(dimension_numbers, op="dot_general"):
    """((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch)) as tuples of ints."""
    if _well_formed(dimension_numbers):
        return dimension_numbers
    try:
        (lc, rc), (lb, rb) = dimension_numbers
    except (TypeError, ValueError):
        raise user_error(TypeError,
            f"{op}: dimension_numbers must be ((lhs_contracting, rhs_contracting), "
            f"(lhs_batch, rhs_batch)), got {dimension_numbers!r}"
        ) from None
    names = ("lhs_contracting", "rhs_contracting", "lhs_batch", "rhs_batch")
    lc, rc, lb, rb = (_int_tuple(d, n, op) for d, n in zip((lc, rc, lb, rb), names,
                                                           strict=True))
    return (lc, rc), (lb, rb)


def normalize_preferred_element_type(preferred_element_type):
    """None, or the canonical np.dtype (64-bit types narrow without x64)."""
    if preferred_element_type is None:
        return None
    return dtypes.canonicalize(preferred_element_type)


def normalize_precision(precision):
    """None or a hashable value (lists become tuples)."""
    if isinstance(precision, list):
        precision = tuple(precision)
    return precision


def check_precision(op, precision):
    try:
        hash(precision)
    except TypeError:
        raise user_error(ValueError,
            f"{op}: precision must be None or hashable, got {precision!r}") from None


def check_operand_dtypes(op, lhs, rhs, preferred_element_type):
    """The output dtype of a contraction of `lhs` and `rhs` (avals)."""
    if preferred_element_type is None:
        if lhs.dtype != rhs.dtype:
            raise user_error(TypeError,
                f"{op} needs operands of one dtype, got {short(lhs)} and {short(rhs)}. "
                "Convert one with lax.convert_element_type, or pass preferred_element_type"
            )
        return lhs.dtype
    pet = preferred_element_type
    if not isinstance(pet, np.dtype) or pet not in dtypes.ALL_DTYPES:
        raise user_error(ValueError,
            f"{op}: preferred_element_type must be None or a supported np.dtype, got {pet!r}"
        )
    for a in (lhs, rhs):
        d = a.dtype
        if dtypes.is_complex(d) and not dtypes.is_complex(pet):
            raise user_error(TypeError,
                f"{op}: preferred_element_type {pet} is incompatible with the complex "
                f"operand {short(a)}: complex operands need a complex type"
            )
        if dtypes.is_float(d) and not dtypes.is_inexact(pet):
            raise user_error(TypeError,
                f"{op}: preferred_element_type {pet} is incompatible with the floating-point "
                f"operand {short(a)}: floating-point operands need a floating-point type"
            )
        if (dtypes.is_float(d) == dtypes.is_float(pet) and not dtypes.is_bool(d)
                and d.itemsize > pet.itemsize):
            raise user_error(TypeError,
                f"{op}: preferred_element_type {pet} is narrower than the operand {short(a)}"
            )
    return pet


def _check_dims(op, which, aval, dims, other):
    """`dims` are distinct, in range for `aval`, and not shared with `other`."""
    for d in dims:
        if type(d) is not int:
            raise user_error(TypeError,
                f"{op}: {which} dimensions must be Python ints, got {dims!r}")
        if not 0 <= d < aval.ndim:
            raise user_error(TypeError,
                f"{op}: {which} dimension {d} is out of range for {short(aval)}: each must be "
                f"in [0, {aval.ndim})"
            )
    if len(set(dims)) != len(dims):
        raise user_error(TypeError,
            f"{op}: {which} dimensions {dims} repeat a dimension of {short(aval)}")
    shared = sorted(set(dims) & set(other))
    if shared:
        raise user_error(TypeError,
            f"{op}: dimension {shared[0]} of {short(aval)} is both a contracting and a batch "
            "dimension"
        )


def _check_pairs(op, kind, lhs, rhs, ldims, rdims):
    verb = "contract" if kind == "contracting" else "batch"
    if len(ldims) != len(rdims):
        raise user_error(TypeError,
            f"{op} needs as many lhs as rhs {kind} dimensions, got {ldims} for {short(lhs)} "
            f"and {rdims} for {short(rhs)}"
        )
    for l, r in zip(ldims, rdims, strict=True):
        if lhs.shape[l] != rhs.shape[r]:
            raise user_error(TypeError,
                f"{op} cannot {verb} {short(lhs)} dim {l} (size {lhs.shape[l]}) with "
                f"{short(rhs)} dim {r} (size {rhs.shape[r]})"
            )


def dot_general_shape(lhs, rhs, dimension_numbers, op="dot_general"):
    """Validate `dimension_numbers` for avals `lhs`, `rhs`; returns the output shape."""
    if not _well_formed(dimension_numbers):
        raise user_error(TypeError,
            f"{op}: dimension_numbers must be a tuple ((lhs_contracting, rhs_contracting), "
            f"(lhs_batch, rhs_batch)) of tuples of ints, got {dimension_numbers!r}"
        )
    return _checked_shape(lhs, rhs, dimension_numbers, op)


@functools.lru_cache(maxsize=4096)
def _checked_shape(lhs, rhs, dimension_numbers, op):
    (lc, rc), (lb, rb) = dimension_numbers
    _check_dims(op, "lhs contracting", lhs, lc, lb)
    _check_dims(op, "rhs contracting", rhs, rc, rb)
    _check_dims(op, "lhs batch", lhs, lb, ())
    _check_dims(op, "rhs batch", rhs, rb, ())
    _check_pairs(op, "batch", lhs, rhs, lb, rb)
    _check_pairs(op, "contracting", lhs, rhs, lc, rc)
    batch = tuple(lhs.shape[d] for d in lb)
    lfree = tuple(s for i, s in enumerate(lhs.shape) if i not in lc and i not in lb)
    rfree = tuple(s for i, s in enumerate(rhs.shape) if i not in rc and i not in rb)
    return batch + lfree + rfree


@dot_general_p.def_abstract_eval
def _dot_general_abstract_eval(lhs, rhs, *, dimension_numbers, precision,
                               preferred_element_type):
    check_precision("dot_general", precision)
    dtype = check_operand_dtypes("dot_general", lhs, rhs, preferred_element_type)
    shape = dot_general_shape(lhs, rhs, dimension_numbers)
    weak = preferred_element_type is None and lhs.weak_type and rhs.weak_type
    return ShapedArray(shape, dtype, weak)


# ---- binders -----------------------------------------------------------------------------
def dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None):
    """General tensor contraction (XLA's DotGeneral).

    Args:
      lhs, rhs: arrays of one dtype (any dtype; bool contracts as OR of ANDs).
      dimension_numbers: ((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch)),
        sequences of non-negative dims; paired dims must have equal sizes.
      precision: None or a hashable precision setting (recorded, not used on the CPU).
      preferred_element_type: the output (and accumulation) dtype, or None for the
        operands' dtype. float16/bfloat16 products accumulate in float32 regardless.

    Returns:
      An array of shape batch dims + lhs free dims + rhs free dims.

    >>> import numpy as np; from mytorch import lax; from mytorch.core.array import from_numpy
    >>> x = from_numpy(np.ones((2, 3, 4), np.float32))
    >>> lax.dot_general(x, x, (((2,), (2,)), ((0,), (0,)))).shape
    (2, 3, 3)
    """
    lhs, rhs = coerce_operands("dot_general", lhs, rhs)
    return dot_general_p.bind(
        lhs, rhs,
        dimension_numbers=normalize_dimension_numbers(dimension_numbers),
        precision=normalize_precision(precision),
        preferred_element_type=normalize_preferred_element_type(preferred_element_type),
    )


def dot(lhs, rhs, precision=None, preferred_element_type=None):
    """Vector/matrix product, like `jax.lax.dot`: contracts the last dim of `lhs` with the
    first dim of `rhs`.

    Args:
      lhs: f[n] or f[m,n]. rhs: f[n] or f[n,k] (same dtype).

    Returns:
      f[] (vector . vector), f[m] (matrix @ vector), f[k] (vector @ matrix) or f[m,k].

    Raises:
      TypeError: for operands that are not 1-D or 2-D, or whose inner sizes differ.
    """
    lhs, rhs = coerce_operands("dot", lhs, rhs)
    if lhs.ndim not in (1, 2) or rhs.ndim not in (1, 2):
        raise user_error(TypeError,
            f"dot needs 1-D or 2-D operands, got {short(lhs.aval)} and {short(rhs.aval)}; "
            "use lax.dot_general for other ranks"
        )
    dims = (((lhs.ndim - 1,), (0,)), ((), ()))
    return dot_general(lhs, rhs, dims, precision, preferred_element_type)


def batch_matmul(lhs, rhs, precision=None):
    """Batched matrix product: f[..., m, k] @ f[..., k, n] -> f[..., m, n].

    Both operands have the same rank (>= 2) and the same leading (batch) dims.
    """
    lhs, rhs = coerce_operands("batch_matmul", lhs, rhs)
    if lhs.ndim < 2 or lhs.ndim != rhs.ndim:
        raise user_error(TypeError,
            f"batch_matmul needs operands of one rank >= 2, got {short(lhs.aval)} and "
            f"{short(rhs.aval)}"
        )
    if lhs.shape[:-2] != rhs.shape[:-2]:
        raise user_error(TypeError,
            f"batch_matmul needs equal batch dims, got {short(lhs.aval)} and {short(rhs.aval)}"
        )
    n = lhs.ndim
    batch = tuple(range(n - 2))
    return dot_general(lhs, rhs, (((n - 1,), (n - 2,)), (batch, batch)), precision)
