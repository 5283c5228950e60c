"""`mnp.linalg` functions built from the factorisations: pinv, lstsq, matrix_power,
matrix_rank, cond, multi_dot, tensorsolve, tensorinv. Complex input takes conjugate
transposes where real input takes transposes (pinv = V S⁺ Uᴴ); tolerances, residuals,
ranks and condition numbers are real.

    pinv(f32[B,m,n]) -> f32[B,n,m]     lstsq(f32[m,n], f32[m,k]) -> (x, resid, rank, s)
"""

import math
import operator

from mytorch import numpy as mnp
from mytorch.core import dtypes
from mytorch.core.source_info import user_error
from mytorch.custom_derivatives import custom_jvp
from mytorch.numpy._promote import asarray_any
from mytorch.numpy._linalg_solvers import inexact, inv, matrix, mH, real_dtype, solve, svd

__all__ = ["pinv", "lstsq", "matrix_power", "matrix_rank", "cond", "multi_dot",
           "tensorsolve", "tensorinv"]


def _s(x):
    return x.aval.str_short()


def _eps(dtype):
    return float(mnp.finfo(dtype).eps)


@custom_jvp
def _pinv(a, rtol):
    u, s, vh = svd(a, full_matrices=False)
    # singular values at or below rtol * the largest are dropped (their reciprocal is 0)
    cutoff = rtol[..., None] * s[..., 0:1]
    s = mnp.where(s > cutoff, s, mnp.inf)
    return mnp.matmul(mH(vh), mH(u) / s[..., None].astype(u.dtype))


@_pinv.defjvp
def _pinv_jvp(primals, tangents):
    """Golub and Pereyra's formula for the derivative of the pseudo-inverse (as JAX's): it
    does not go through the SVD's derivative, which is undefined at repeated singular
    values. (ᴴ for complex a.) Both branches compute the same formula,
    dp = -p da p + s (I - a p) + (I - p a) t, associated for the smaller intermediates."""
    (a, rtol), (da, _) = primals, tangents
    p = _pinv(a, rtol)
    if a.shape[-2] >= a.shape[-1]:
        s = mnp.matmul(mnp.matmul(p, mH(p)), mH(da))
        t = mnp.matmul(mnp.matmul(mH(da), mH(p)), p)
        dp = (-mnp.matmul(mnp.matmul(p, da), p) + s - mnp.matmul(mnp.matmul(s, a), p) + t
              - mnp.matmul(mnp.matmul(p, a), t))
    else:
        s = mnp.matmul(p, mnp.matmul(mH(p), mH(da)))
        t = mnp.matmul(mH(da), mnp.matmul(mH(p), p))
        dp = (-mnp.matmul(p, mnp.matmul(da, p)) + s - mnp.matmul(s, mnp.matmul(a, p)) + t
              - mnp.matmul(p, mnp.matmul(a, t)))
    return p, dp


def pinv(a, rtol=None, hermitian=False, *, rcond=None):
    """The Moore-Penrose pseudo-inverse of `a` [..., m, n]: [..., n, m]. Singular values
    at or below `rtol` (or its older name `rcond`; default 10 * max(m, n) * eps, as JAX)
    times the largest are treated as zero; `rtol` broadcasts against the batch."""
    (a,) = inexact("pinv", a)
    matrix("pinv", a)
    if rcond is not None:
        if rtol is not None:
            raise user_error(ValueError, "pinv: only one of rtol and rcond may be specified.")
        rtol = rcond
    m, n = a.shape[-2:]
    if m == 0 or n == 0:
        return mnp.zeros(a.shape[:-2] + (n, m), a.dtype)
    if hermitian:
        a = (a + mH(a)) / 2
    if rtol is None:
        rtol = 10.0 * max(m, n) * _eps(a.dtype)
    rtol = mnp.broadcast_to(mnp.asarray(rtol, real_dtype(a)), a.shape[:-2])
    return _pinv(a, rtol)


def lstsq(a, b, rcond=None, *, numpy_resid=False):
    """The least-squares solution of `a x = b` for a [m, n] and b [m] or [m, k], through
    the SVD. Returns NumPy's (x [n] or [n, k], residuals [k] or [], rank, s [min(m, n)]);
    singular values below `rcond` (default max(m, n) * eps) times the largest count as
    zero. The residuals (squared 2-norms of b - a x per column) are always returned, also
    where NumPy returns an empty array (rank < n or m <= n), as JAX does; `numpy_resid`
    returns NumPy's empty array there instead (it needs a concrete rank, so not under
    jit)."""
    a, b = inexact("lstsq", a, b)
    if a.ndim != 2:
        raise user_error(ValueError, f"lstsq: a must be 2-D, got {_s(a)}")
    vector = b.ndim == 1
    if vector:
        b = b[:, None]
    if b.ndim != 2 or b.shape[0] != a.shape[0]:
        raise user_error(ValueError, f"lstsq: b must be [{a.shape[0]}] or [{a.shape[0]}, k] "
                         f"for a {_s(a)}, got {_s(b)}")
    m, n = a.shape
    if rcond is None:
        rcond = _eps(a.dtype) * max(m, n)
    elif rcond < 0:
        rcond = _eps(a.dtype)
    u, s, vh = svd(a, full_matrices=False)
    if s.shape[0] == 0:
        x = mnp.zeros((n, b.shape[1]), a.dtype)
        rank = mnp.asarray(0, mnp.int32)
    else:
        # as LAPACK's gelsd, s <= rcond * s_max counts as zero (all of a zero matrix's)
        keep = s > rcond * s[0]
        rank = mnp.sum(keep).astype(mnp.int32)
        s_inv = mnp.where(keep, 1 / mnp.where(keep, s, 1), 0)[:, None].astype(a.dtype)
        x = mnp.matmul(mH(vh), s_inv * mnp.matmul(mH(u), b))
    r = b - mnp.matmul(a, x)
    resid = mnp.sum(mnp.real(r * mnp.conj(r)) if mnp.iscomplexobj(r) else r ** 2, axis=0)
    if vector:
        x = x[:, 0]
        resid = resid.reshape((1,))
    if numpy_resid and (m <= n or int(rank) < n):
        resid = mnp.zeros((0,), resid.dtype)
    return x, resid, rank, s


def matrix_power(a, n):
    """`a` [..., m, m] raised to the integer power `n` by repeated squaring; n = 0 gives
    the identity and a negative n the power of `inv(a)`. Integer and bool matrices keep
    their dtype for n >= 0, as NumPy's (a bool product is the logical one)."""
    try:
        n = operator.index(n)
    except TypeError:
        raise user_error(TypeError,
                         f"matrix_power: the exponent must be an integer, got {n!r}") from None
    a = asarray_any(a)
    if n < 0 or dtypes.is_inexact(a.dtype):
        (a,) = inexact("matrix_power", a)  # else integer and bool powers keep their dtype
    matrix("matrix_power", a, square=True)
    if n == 0:
        return mnp.broadcast_to(mnp.eye(a.shape[-1], dtype=a.dtype), a.shape)
    if n < 0:
        a, n = inv(a), -n
    result = None
    while n:
        if n & 1:
            result = a if result is None else mnp.matmul(result, a)
        n >>= 1
        if n:
            a = mnp.matmul(a, a)
    return result


def matrix_rank(A, tol=None, hermitian=False, *, rtol=None):
    """The number of singular values of `A` [..., m, n] above `tol` (absolute) or, without
    it, above `rtol` (default max(m, n) * eps) times the largest: int32 [...]. A 0-d or
    1-D `A` has rank 1 unless it is all zeros."""
    if tol is not None and rtol is not None:
        raise user_error(ValueError, "matrix_rank: only one of tol or rtol may be specified.")
    (A,) = inexact("matrix_rank", A)
    if A.ndim < 2:
        return mnp.any(A != 0).astype(mnp.int32)
    s = svd(A, compute_uv=False, hermitian=hermitian)
    if s.shape[-1] == 0:
        return mnp.zeros(A.shape[:-2], mnp.int32)
    if tol is None:
        if rtol is None:
            rtol = max(A.shape[-2:]) * _eps(A.dtype)
        tol = mnp.max(s, axis=-1) * mnp.asarray(rtol, s.dtype)
    tol = mnp.asarray(tol, s.dtype)
    return mnp.sum(s > tol[..., None], axis=-1).astype(mnp.int32)


def cond(x, p=None):
    """The condition number of `x` [..., m, n] in the norm `p`: None or 2 (the ratio of
    the largest to the smallest singular value), -2 (its inverse), or "fro", "nuc", 1, -1,
    inf, -inf (square `x`: norm(x) * norm(inv(x))). A singular `x` gives inf, as NumPy."""
    (x,) = inexact("cond", x)
    matrix("cond", x)
    if p is None or p == 2 or p == -2:
        s = svd(x, compute_uv=False)
        r = s[..., 0] / s[..., -1] if p != -2 else s[..., -1] / s[..., 0]
    else:
        matrix("cond", x, square=True)
        r = mnp.linalg.norm(x, p, axis=(-2, -1)) * mnp.linalg.norm(inv(x), p, axis=(-2, -1))
    # a NaN from 0/0 or inf*0 means singular, unless x itself holds a NaN
    return mnp.where(mnp.isnan(r) & ~mnp.any(mnp.isnan(x), axis=(-2, -1)), mnp.inf, r)


def _chain_order(shapes):
    """The split points of the cheapest parenthesisation of a matrix chain (NumPy's
    dynamic programme): order[i][j] is where the product of matrices i..j splits."""
    dims = [s[0] for s in shapes] + [shapes[-1][1]]
    count = len(shapes)
    cost = [[0] * count for _ in range(count)]
    order = [[0] * count for _ in range(count)]
    for length in range(1, count):
        for i in range(count - length):
            j = i + length
            cost[i][j] = math.inf
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if c < cost[i][j]:
                    cost[i][j], order[i][j] = c, k
    return order


def _chain(arrays, order, i, j):
    if i == j:
        return arrays[i]
    k = order[i][j]
    return mnp.matmul(_chain(arrays, order, i, k), _chain(arrays, order, k + 1, j))


def multi_dot(arrays, *, precision=None):
    """The product of a list of matrices in the cheapest order. The first may be 1-D (a
    row vector) and the last 1-D (a column vector); the others must be 2-D. `precision`
    is accepted for JAX compatibility."""
    del precision
    arrays = [mnp.asarray(a) for a in arrays]
    if len(arrays) < 2:
        raise user_error(ValueError, f"multi_dot: needs at least two arrays, got "
                         f"{len(arrays)}")
    first, last = arrays[0].ndim == 1, arrays[-1].ndim == 1
    if first:
        arrays[0] = arrays[0][None, :]
    if last:
        arrays[-1] = arrays[-1][:, None]
    for k, a in enumerate(arrays):
        if a.ndim != 2:
            raise user_error(ValueError, f"multi_dot: array {k} must be 2-D (the first and "
                             f"last may be 1-D), got {_s(a)}")
    out = _chain(arrays, _chain_order([a.shape for a in arrays]), 0, len(arrays) - 1)
    if first and last:
        return out[0, 0]
    if first:
        return out[0]
    return out[:, 0] if last else out


def tensorsolve(a, b, axes=None):
    """The `x` with `tensordot(a, x, x.ndim) = b`: `a` [*b.shape, *x.shape] with prod of
    b's dims equal to prod of x's; `axes` are moved to the end of `a` first."""
    a, b = inexact("tensorsolve", a, b)
    if axes is not None:
        axes = [operator.index(k) % a.ndim for k in axes]
        a = mnp.transpose(a, [k for k in range(a.ndim) if k not in axes] + axes)
    shape = a.shape[b.ndim:]
    size = math.prod(shape)
    if a.size != size * size or math.prod(a.shape[:b.ndim]) != size:
        raise user_error(ValueError, f"tensorsolve: needs prod(a.shape[b.ndim:]) == "
                         f"prod(a.shape[:b.ndim]), got a {_s(a)} and b {_s(b)}")
    return solve(a.reshape((size, size)), b.reshape((size,))).reshape(shape)


def tensorinv(a, ind=2):
    """The inverse of `a` for `tensordot(·, ·, ind)`: `a` [*s1, *s2] with s1 = a.shape[:ind]
    and prod(s1) == prod(s2) gives [*s2, *s1]."""
    (a,) = inexact("tensorinv", a)
    ind = operator.index(ind)
    if ind <= 0:
        raise user_error(ValueError, f"tensorinv: ind must be positive, got {ind}")
    rows, cols = math.prod(a.shape[:ind]), math.prod(a.shape[ind:])
    if rows != cols:
        raise user_error(ValueError, f"tensorinv: needs prod(a.shape[:ind]) == "
                         f"prod(a.shape[ind:]), got {_s(a)} with ind={ind}")
    return inv(a.reshape((rows, cols))).reshape(a.shape[ind:] + a.shape[:ind])
