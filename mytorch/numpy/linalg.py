"""`mytorch.numpy.linalg`: norms, the array-API linear-algebra helpers, and (from
`_linalg_solvers` and `_linalg_derived`) the factorisations and solvers over the
`lax.linalg` primitives.

Norms follow `numpy.linalg.norm`; the matrix orders 2, -2 and "nuc" go through singular
values. float16 and bfloat16 norms accumulate in float32 and round once at the end. Norms
of complex arrays are of the magnitudes |x| and real (float32 for complex64).
"""

import operator

from mytorch import lax
from mytorch.core import dtypes
from mytorch.core.source_info import user_error
from mytorch.custom_derivatives import custom_jvp
from mytorch.errors import AxisError
from mytorch.numpy import manipulation as _manip
from mytorch.numpy import products as _products
from mytorch.numpy._linalg_derived import (
    cond,
    lstsq,
    matrix_power,
    matrix_rank,
    multi_dot,
    pinv,
    tensorinv,
    tensorsolve,
)
from mytorch.numpy._linalg_eig import EigResult, eig, eigvals
from mytorch.numpy._linalg_solvers import (
    EighResult,
    QRResult,
    SlogdetResult,
    SVDResult,
    cholesky,
    det,
    eigh,
    eigvalsh,
    inv,
    qr,
    slogdet,
    solve,
    svd,
)
from mytorch.numpy._promote import asarray_any

__all__ = [
    "norm", "vector_norm", "matrix_norm", "matrix_transpose", "vecdot", "outer", "trace",
    "diagonal", "tensordot", "matmul", "cross", "cholesky", "qr", "eigh", "eigvalsh", "svd",
    "solve", "inv", "det", "slogdet", "pinv", "lstsq", "matrix_power", "matrix_rank", "cond",
    "multi_dot", "tensorsolve", "tensorinv", "svdvals", "EighResult", "QRResult",
    "SlogdetResult", "SVDResult", "eig", "eigvals", "EigResult",
]

_INF = float("inf")
_MATRIX_ORDS = "'fro', 'nuc', 1, -1, 2, -2, inf, -inf"


def _s(x):
    return x.aval.str_short()


def _inexact(x):
    """(x in its computation dtype, result dtype): ints/bools give the default float;
    float16/bfloat16 compute in float32; complex x computes as itself, its norms are of
    its real dtype."""
    if dtypes.is_complex(x.dtype):
        return x, dtypes.real_dtype(x.dtype)
    out = x.dtype if dtypes.is_float(x.dtype) else dtypes.default_float()
    work = dtypes.float32 if out in (dtypes.float16, dtypes.bfloat16) else out
    return lax.convert_element_type(x, work, weak_type=x.weak_type), out


def _finish(y, dtype, weak, shape):
    if y.dtype != dtype:
        y = lax.convert_element_type(y, dtype, weak_type=weak)
    return y if y.shape == shape else lax.reshape(y, shape)


def _kept_shape(shape, axes, keepdims):
    if keepdims:
        return tuple(1 if k in axes else d for k, d in enumerate(shape))
    return tuple(d for k, d in enumerate(shape) if k not in axes)


def _norm_axes(name, axis, x):
    seq = (axis,) if not isinstance(axis, (tuple, list)) else tuple(axis)
    out = []
    for a in seq:
        try:
            a = operator.index(a)
        except TypeError:
            raise user_error(TypeError,
                             f"{name}: axis must be an int or a tuple of ints, got {axis!r}") \
                from None
        if not -x.ndim <= a < x.ndim:
            raise user_error(AxisError,
                             f"{name}: axis {a} is out of bounds for {_s(x)} (rank {x.ndim})")
        out.append(a % x.ndim)
    if len(set(out)) != len(out):
        raise user_error(ValueError, f"{name}: duplicate axes in {axis!r} for {_s(x)}")
    return tuple(out)


def _empty(x, axes):
    """Whether one of `axes` of `x` has length 0."""
    return any(x.shape[a] == 0 for a in axes)


def _nonempty(name, x, axes, ord):
    if any(x.shape[a] == 0 for a in axes):
        raise user_error(ValueError, 
            f"{name}: ord={ord} reduces with max/min, which needs a non-empty axis, got "
            f"{_s(x)} over axes {axes}"
        )


def _is_number(ord):
    return isinstance(ord, (int, float)) and not isinstance(ord, bool) or hasattr(
        ord, "__float__") and not isinstance(ord, str)


def _vector(name, x, axes, ord, keepdims):
    """The vector `ord`-norm of `x` over `axes` (flattened together)."""
    if ord is not None and not _is_number(ord):
        raise user_error(ValueError, f"{name}: invalid norm order {ord!r} for vectors")
    shape = _kept_shape(x.shape, axes, keepdims)
    weak = x.weak_type
    y, out = _inexact(x)
    p = 2.0 if ord is None else float(ord)
    if p == _INF and _empty(x, axes):
        r = lax.reduce_sum(lax.abs(y), axes)  # zeros: a max of norms >= 0 starts at 0
    elif p == _INF or p == -_INF:
        _nonempty(name, x, axes, ord)
        reduce = lax.reduce_max if p > 0 else lax.reduce_min
        r = reduce(lax.abs(y), axes)
    elif p == 0:
        nonzero = lax.ne(y, lax.full_like(y, 0))
        r = lax.reduce_sum(lax.convert_element_type(nonzero, dtypes.real_dtype(y.dtype)), axes)
    elif p == 1:
        r = lax.reduce_sum(lax.abs(y), axes)
    elif p == 2:
        r = _l2(y, axes)
    else:
        mag = lax.abs(y)
        with_p = lax.pow(mag, lax.convert_element_type(p, mag.dtype))
        r = lax.pow(lax.reduce_sum(with_p, axes), lax.convert_element_type(1.0 / p, mag.dtype))
    return _finish(r, out, weak, shape)


def _matrix(name, x, axes, ord, keepdims):
    """The matrix `ord`-norm over the pair `axes` = (row axis, column axis)."""
    row, col = axes
    shape = _kept_shape(x.shape, axes, keepdims)
    weak = x.weak_type
    y, out = _inexact(x)
    if ord is None or ord == "fro":
        r = _l2(y, axes)
    elif (ord == "nuc" or _is_number(ord) and not isinstance(ord, str)
          and float(ord) in (1, 2, _INF)) and _empty(x, axes):
        # the sum (nuc) or the max (as JAX's initial=0: norms are >= 0) of nothing
        r = lax.reduce_sum(lax.abs(y), axes)
    elif ord == "nuc" or _is_number(ord) and not isinstance(ord, str) and float(ord) in (2, -2):
        _nonempty(name, x, axes, ord)
        s = svd(_manip.moveaxis(y, (row, col), (-2, -1)), compute_uv=False)
        r = lax.reduce_sum(s, (s.ndim - 1,)) if ord == "nuc" else (
            lax.reduce_max if float(ord) > 0 else lax.reduce_min)(s, (s.ndim - 1,))
    elif isinstance(ord, str) or not _is_number(ord) or float(ord) not in (1, -1, _INF, -_INF):
        raise user_error(ValueError,
            f"{name}: invalid norm order {ord!r} for matrices; supported: {_MATRIX_ORDS}"
        )
    else:
        p = float(ord)
        summed, kept = (row, col) if abs(p) == 1 else (col, row)
        _nonempty(name, x, (kept,), ord)
        s = lax.reduce_sum(lax.abs(y), (summed,))
        reduce = lax.reduce_max if p > 0 else lax.reduce_min
        r = reduce(s, (kept - (kept > summed),))
    return _finish(r, out, weak, shape)


def norm(x, ord=None, axis=None, keepdims=False):
    """A vector or matrix norm, like `numpy.linalg.norm`.

    Args:
      x: an array (ints and bools are converted to the default float dtype).
      ord: vectors: None or 2 (Euclidean), 1, inf, -inf, 0 (count of non-zeros) or any
        other number p (`sum(|x|**p)**(1/p)`). Matrices: None or "fro", 1, -1 (max/min
        column sum), inf, -inf (max/min row sum), 2, -2 (largest/smallest singular value),
        "nuc" (sum of the singular values).
      axis: None (all of `x` as a vector when ord is None; else `x` must be 1-D or 2-D),
        an int (vector norms) or a pair of ints (matrix norms).
      keepdims: keep the reduced axes with size 1.

    Returns:
      The norms: `x`'s shape without the reduced axes, in a floating dtype.

    >>> norm(asarray([3.0, 4.0]))  # doctest: +SKIP
    Array(5., dtype=float32)
    """
    x = asarray_any(x)
    if axis is None:
        if ord is None:
            return _vector("norm", x, tuple(range(x.ndim)), None, keepdims)
        if x.ndim not in (1, 2):
            raise user_error(ValueError, 
                f"norm: ord={ord!r} with axis=None needs a 1-D or 2-D array, got {_s(x)}; "
                "pass axis= to pick the vector or matrix axes"
            )
        axis = tuple(range(x.ndim))
    axes = _norm_axes("norm", axis, x)
    if len(axes) == 1:
        return _vector("norm", x, axes, ord, keepdims)
    if len(axes) == 2:
        return _matrix("norm", x, axes, ord, keepdims)
    raise user_error(ValueError, f"norm: axis must be an int or a pair of ints, got {axis!r}")


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    """The vector `ord`-norm over `axis` (None: all axes, flattened; a tuple: those axes
    flattened together). `ord` as for `norm` on vectors."""
    x = asarray_any(x)
    axes = tuple(range(x.ndim)) if axis is None else _norm_axes("vector_norm", axis, x)
    return _vector("vector_norm", x, axes, ord, keepdims)


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    """The matrix `ord`-norm over the last two axes ("fro", "nuc", 1, -1, 2, -2, inf,
    -inf)."""
    x = asarray_any(x)
    if x.ndim < 2:
        raise user_error(ValueError, f"matrix_norm: needs an array of rank >= 2, got {_s(x)}")
    return _matrix("matrix_norm", x, (x.ndim - 2, x.ndim - 1), ord, keepdims)


def svdvals(x, /):
    """The singular values of `x` [..., m, n], descending: [..., min(m, n)]."""
    return svd(x, compute_uv=False)


def matrix_transpose(x, /):
    """Swap the last two axes of `x` (rank >= 2)."""
    return _manip.matrix_transpose(x)


def vecdot(x1, x2, /, *, axis=-1, precision=None, preferred_element_type=None):
    """The dot product along `axis` (conjugating a complex `x1`), broadcasting the other
    dims."""
    return _products.vecdot(x1, x2, axis=axis, precision=precision,
                            preferred_element_type=preferred_element_type)


def outer(x1, x2, /):
    """The outer product of two 1-D arrays: shape [n, m]."""
    a, b = asarray_any(x1), asarray_any(x2)
    if a.ndim != 1 or b.ndim != 1:
        raise user_error(ValueError, f"outer: needs 1-D arrays, got {_s(a)} and {_s(b)}")
    return _products.outer(a, b)


def trace(x, /, *, offset=0, dtype=None):
    """The sum of the `offset` diagonal of the last two axes (rank >= 2)."""
    return _manip.trace(x, offset, -2, -1, dtype=dtype)


def diagonal(x, /, *, offset=0):
    """The `offset` diagonal of the last two axes, as the last axis of the result."""
    return _manip.diagonal(x, offset, -2, -1)


def tensordot(x1, x2, /, *, axes=2, precision=None, preferred_element_type=None):
    """`mytorch.numpy.tensordot`."""
    return _products.tensordot(x1, x2, axes, precision=precision,
                               preferred_element_type=preferred_element_type)


def matmul(x1, x2, /, *, precision=None, preferred_element_type=None):
    """`mytorch.numpy.matmul`."""
    return _products.matmul(x1, x2, precision=precision,
                            preferred_element_type=preferred_element_type)


def cross(x1, x2, /, *, axis=-1):
    """The cross product of 3-vectors along `axis`."""
    a, b = asarray_any(x1), asarray_any(x2)
    if a.ndim == 0 or b.ndim == 0 or a.shape[axis % a.ndim] != 3 \
            or b.shape[axis % b.ndim] != 3:
        raise user_error(ValueError, 
            f"cross: needs 3 components along axis {axis}, got {_s(a)} and {_s(b)}"
        )
    return _products.cross(a, b, axis=axis)


def _abs2(y, t):
    """re(conj(y) t) elementwise (y t for real y): |y|² when t is y."""
    if dtypes.is_complex(y.dtype):
        return lax.real(lax.mul(lax.conj(y), t))
    return lax.mul(y, t)


def _l2_impl(axes, y):
    return lax.sqrt(lax.reduce_sum(_abs2(y, y), axes))


_l2_safe = custom_jvp(_l2_impl, nondiff_argnums=(0,))


@_l2_safe.defjvp
def _l2_jvp(axes, primals, tangents):
    """d||y|| = re(<conj(y), t>) / ||y||, and 0 at y = 0 (where sqrt's derivative would
    give NaN)."""
    (y,), (t,) = primals, tangents
    r = _l2_safe(axes, y)
    zero = lax.eq(r, lax.full_like(r, 0))
    safe_r = lax.select(zero, lax.full_like(r, 1), r)
    dot = lax.reduce_sum(_abs2(y, t), axes)
    return r, lax.select(zero, lax.full_like(r, 0), lax.div(dot, safe_r))


def _l2(y, axes):
    """The Euclidean norm of `y` over `axes`, with a zero (not NaN) derivative at 0."""
    return _l2_safe(tuple(axes), y)

