"""`mt.lax.linalg` functions without a primitive of their own, written with lax operations
(so they differentiate, batch and compile as those do):

    lu_pivots_to_permutation(i32[..., k], m) -> i32[..., m]
    symmetric_product(f[..., m, n], f[..., m, m]) -> f[..., m, m]    alpha a aᵀ + beta c
    geqrf(f[..., m, n]) -> (f[..., m, n], taus f[..., k])            LAPACK's geqrf
    householder_product(f[..., m, n], f[..., k]) -> f[..., m, n]     LAPACK's orgqr
    ormqr(f[..., m, k], f[..., k], f[..., p, q]) -> f[..., p, q]    LAPACK's ormqr/unmqr

The last two read `geqrf`'s compact form: Householder vectors v_i below the diagonal
(v_i[i] = 1, zeros above) and q = H_0 H_1 ... H_k-1 with H_i = I - taus[i] v_i v_iᴴ.
"""

import operator

import numpy as np

from mytorch.core import dtypes
from mytorch.core.source_info import user_error
from mytorch.core.trace import aval_of
from mytorch.lax import elementwise as ew
from mytorch.lax import structural as st
from mytorch.lax._utils import asarray, short
from mytorch.lax.dot import dot_general
from mytorch.lax.indexing import take_along_axis
from mytorch.lax.precision import Precision
from mytorch.lax.reductions import reduce_sum

__all__ = ["lu_pivots_to_permutation", "symmetric_product", "geqrf", "householder_product",
           "ormqr"]


def lu_pivots_to_permutation(pivots, permutation_size):
    """The row order that LU's row interchanges produce (as `lu`'s third result).

    Args:
      pivots: i32[..., k]: row i was swapped with row pivots[i], for i = 0..k-1 in turn.
      permutation_size: m >= k, the number of rows.

    Returns:
      i32[..., m], the rows of the original matrix in their final order.
    """
    pivots = asarray(pivots)
    m = operator.index(permutation_size)
    if not dtypes.is_int(pivots.dtype) or pivots.ndim < 1:
        raise user_error(TypeError, f"lu_pivots_to_permutation needs integer pivots "
                         f"[..., k], got {short(aval_of(pivots))}")
    k = pivots.shape[-1]
    if k > m:
        raise user_error(ValueError, f"lu_pivots_to_permutation: permutation_size {m} is "
                         f"smaller than the number of pivots {k}")
    shape = pivots.shape[:-1] + (m,)
    last = len(shape) - 1
    rows = st.broadcasted_iota(pivots.dtype, shape, last)
    perm = rows
    for i in range(k):
        # swap entries i and j = pivots[i] of perm
        j = st.slice_in_dim(pivots, i, i + 1, axis=last)
        at_i = st.slice_in_dim(perm, i, i + 1, axis=last)
        at_j = take_along_axis(perm, j, last)
        is_i = ew.eq(rows, np.array(i, pivots.dtype))
        is_j = ew.eq(rows, st.broadcast_in_dim(j, shape, tuple(range(len(shape)))))
        perm = ew.select(is_i, st.broadcast_in_dim(at_j, shape, tuple(range(len(shape)))),
                         ew.select(is_j, st.broadcast_in_dim(at_i, shape,
                                                             tuple(range(len(shape)))), perm))
    return perm


def symmetric_product(a_matrix, c_matrix, *, alpha=1.0, beta=0.0, symmetrize_output=False):
    """alpha a aᵀ + beta c (BLAS's syrk), for a f[..., m, n] and symmetric c f[..., m, m].

    Returns:
      f[..., m, m]: the whole symmetric matrix (its lower triangle is what JAX guarantees;
      here both triangles are always right, so `symmetrize_output` changes nothing).
    """
    del symmetrize_output
    a, c = asarray(a_matrix), asarray(c_matrix)
    if a.ndim < 2 or c.shape != a.shape[:-1] + (a.shape[-2],):
        raise user_error(ValueError, f"symmetric_product needs a [..., m, n] and c [..., m, m], "
                         f"got {short(aval_of(a))} and {short(aval_of(c))}")
    nd = a.ndim
    batch = tuple(range(nd - 2))
    aat = dot_general(a, a, (((nd - 1,), (nd - 1,)), (batch, batch)),
                      precision=Precision.HIGHEST)
    return ew.add(ew.mul(aat, np.array(alpha, a.dtype)), ew.mul(c, np.array(beta, c.dtype)))


def _reflector(a, i):
    """v_i [..., m, 1] from column i of the compact form a [..., m, *]: 0 above row i, 1 at
    row i, a's entries below."""
    *batch, m, _ = a.shape
    nd = len(batch) + 2
    col = st.slice_in_dim(a, i, i + 1, axis=nd - 1)
    rows = st.broadcasted_iota(np.int32, col.shape, nd - 2)
    one = st.full(col.shape, 1, a.dtype)
    zero = st.full(col.shape, 0, a.dtype)
    return ew.select(ew.gt(rows, np.int32(i)), col,
                     ew.select(ew.eq(rows, np.int32(i)), one, zero))


def _mm(x, y, conj_x=False):
    """x [..., p, q] @ y [..., q, r] (xᴴ y with conj_x, x then [..., q, p])."""
    nd = x.ndim
    batch = tuple(range(nd - 2))
    if conj_x:
        if dtypes.is_complex(x.dtype):
            x = ew.conj(x)
        return dot_general(x, y, (((nd - 2,), (nd - 2,)), (batch, batch)),
                           precision=Precision.HIGHEST)
    return dot_general(x, y, (((nd - 1,), (nd - 2,)), (batch, batch)),
                       precision=Precision.HIGHEST)


def _tau(taus, i, conj):
    t = st.slice_in_dim(taus, i, i + 1, axis=taus.ndim - 1)
    if conj and dtypes.is_complex(t.dtype):
        t = ew.conj(t)
    return st.squeeze(t, (t.ndim - 1,))  # [...]


def _scaled(tau, x):
    """Each matrix of x [..., p, q] times its tau [...]."""
    return ew.mul(st.broadcast_in_dim(tau, x.shape, tuple(range(tau.ndim))), x)


def _apply_left(v, tau, x):
    """(I - tau v vᴴ) x."""
    return ew.sub(x, _scaled(tau, _mm(v, _mm(v, x, conj_x=True))))


def _apply_right(v, tau, x):
    """x (I - tau v vᴴ)."""
    nd = v.ndim
    v_h = st.transpose(v, (*range(nd - 2), nd - 1, nd - 2))
    if dtypes.is_complex(v.dtype):
        v_h = ew.conj(v_h)
    return ew.sub(x, _scaled(tau, _mm(_mm(x, v), v_h)))


def _compact(name, a, taus):
    a, taus = asarray(a), asarray(taus)
    if a.ndim < 2 or taus.shape != a.shape[:-2] + taus.shape[-1:] or a.dtype != taus.dtype:
        raise user_error(ValueError, f"{name} needs a [..., m, n] and taus [..., k] of one "
                         f"dtype and batch, got {short(aval_of(a))} and "
                         f"{short(aval_of(taus))}")
    if not dtypes.is_inexact(a.dtype):
        raise user_error(TypeError, f"{name} needs float or complex operands, got "
                         f"{short(aval_of(a))}")
    return a, taus


def householder_product(a, taus):
    """The first n columns of q = H_0 ... H_k-1 (LAPACK's orgqr/ungqr), from `geqrf`'s
    compact form.

    Args:
      a: f[..., m, n], m >= n, the Householder vectors below its diagonal.
      taus: f[..., k], k <= n.

    Returns:
      q f[..., m, n] with orthonormal columns (for geqrf's own taus).
    """
    a, taus = _compact("householder_product", a, taus)
    *batch, m, n = a.shape
    k = taus.shape[-1]
    if m < n or k > n:
        raise user_error(ValueError, f"householder_product needs m >= n >= k, got a "
                         f"{short(aval_of(a))} and taus {short(aval_of(taus))}")
    nd = a.ndim
    eye = ew.convert_element_type(ew.eq(st.broadcasted_iota(np.int32, (*batch, m, n), nd - 2),
                                        st.broadcasted_iota(np.int32, (*batch, m, n), nd - 1)),
                                  a.dtype)
    q = eye
    for i in reversed(range(k)):  # q = H_0 (H_1 (... (H_k-1 e)))
        q = _apply_left(_reflector(a, i), _tau(taus, i, False), q)
    return q


def ormqr(a, taus, c, *, left=True, transpose=False):
    """q c, qᴴ c (`transpose`), c q or c qᴴ (`left=False`) for q = H_0 ... H_k-1 of
    `geqrf`'s compact form, without forming q (LAPACK's ormqr/unmqr).

    Args:
      a: f[..., m, k'] holding k Householder vectors of length m (m = c's rows if `left`,
        else its columns).
      taus: f[..., k].
      c: f[..., p, q].

    Returns:
      f[..., p, q].
    """
    a, taus = _compact("ormqr", a, taus)
    c = asarray(c)
    m = a.shape[-2]
    if c.ndim != a.ndim or c.dtype != a.dtype or (c.shape[-2] if left else c.shape[-1]) != m:
        raise user_error(ValueError, f"ormqr (left={left}) needs c of a's dtype and batch with "
                         f"{'rows' if left else 'columns'} = {m}, got a "
                         f"{short(aval_of(a))} and c {short(aval_of(c))}")
    k = taus.shape[-1]
    # q c applies H_k-1 first; qᴴ c applies H_0ᴴ first; c q applies H_0 first
    order = range(k) if left == bool(transpose) else reversed(range(k))
    apply = _apply_left if left else _apply_right
    for i in order:
        c = apply(_reflector(a, i), _tau(taus, i, transpose), c)
    return c


def geqrf(x):
    """QR in LAPACK's compact (Householder) form, with geqrf's conventions (its larfg
    reflectors: beta = -sign(re alpha) |column|, tau = (beta - alpha) / beta).

    Args:
      x: f[..., m, n].

    Returns:
      (a f[..., m, n] holding r in its upper triangle and the Householder vectors below
      the diagonal, taus f[..., k]), k = min(m, n); q = H_0 ... H_k-1 (see
      `householder_product`, `ormqr`). Written with lax operations, column by column, so
      it differentiates and batches as they do.
    """
    a = asarray(x)
    if a.ndim < 2 or not dtypes.is_inexact(a.dtype):
        raise user_error(TypeError, f"geqrf needs a float or complex [..., m, n] operand, "
                         f"got {short(aval_of(a))}")
    *batch, m, n = a.shape
    nd = a.ndim
    rdt = dtypes.real_dtype(a.dtype)
    bdims = tuple(range(len(batch)))
    rows = st.broadcasted_iota(np.int32, (*batch, m, 1), nd - 2)
    cols = st.broadcasted_iota(np.int32, (*batch, 1, n), nd - 1)
    taus = []
    for j in range(min(m, n)):
        col = st.slice_in_dim(a, j, j + 1, axis=nd - 1)  # [..., m, 1]
        below = ew.gt(rows, np.int32(j))
        zero = st.full(col.shape, 0, a.dtype)
        x_below = ew.select(below, col, zero)
        alpha = st.squeeze(st.slice_in_dim(col, j, j + 1, axis=nd - 2), (nd - 2, nd - 1))
        sq = ew.real(ew.mul(ew.conj(x_below), x_below)) if dtypes.is_complex(a.dtype) \
            else ew.mul(x_below, x_below)
        xnorm2 = reduce_sum(sq, (nd - 2, nd - 1))  # [...]
        re_alpha = ew.real(alpha) if dtypes.is_complex(a.dtype) else alpha
        im_alpha = ew.imag(alpha) if dtypes.is_complex(a.dtype) else st.full((), 0, rdt)
        im2 = ew.mul(im_alpha, im_alpha)
        identity = ew.eq(ew.add(xnorm2, im2), st.full(xnorm2.shape, 0, rdt))  # H = I
        norm = ew.sqrt(ew.add(ew.add(ew.mul(re_alpha, re_alpha), im2), xnorm2))
        sign = ew.select(ew.lt(re_alpha, st.full(re_alpha.shape, 0, rdt)),
                         st.full(norm.shape, -1, rdt), st.full(norm.shape, 1, rdt))
        beta = ew.neg(ew.mul(sign, norm))
        safe_beta = ew.select(identity, st.full(beta.shape, 1, rdt), beta)
        beta_c = ew.convert_element_type(safe_beta, a.dtype)
        tau = ew.select(identity, st.full(alpha.shape, 0, a.dtype),
                        ew.div(ew.sub(beta_c, alpha), beta_c))
        denom = ew.select(identity, st.full(alpha.shape, 1, a.dtype), ew.sub(alpha, beta_c))
        scale = st.broadcast_in_dim(denom, col.shape, bdims)
        v = ew.select(below, ew.div(x_below, scale),
                      ew.select(ew.eq(rows, np.int32(j)), st.full(col.shape, 1, a.dtype),
                                zero))
        # the columns right of j take H_jᴴ = I - conj(tau) v vᴴ
        rest = _apply_left(v, ew.conj(tau) if dtypes.is_complex(a.dtype) else tau, a)
        right = st.broadcast_in_dim(ew.gt(cols, np.int32(j)), a.shape, tuple(range(nd)))
        a = ew.select(right, rest, a)
        # column j: rows above unchanged, beta on the diagonal, v's tail below
        new_diag = ew.select(identity, alpha, ew.convert_element_type(beta, a.dtype))
        diag = st.broadcast_in_dim(new_diag, col.shape, bdims)
        new_col = ew.select(below, v, ew.select(ew.eq(rows, np.int32(j)), diag, col))
        is_j = st.broadcast_in_dim(ew.eq(cols, np.int32(j)), a.shape, tuple(range(nd)))
        a = ew.select(is_j, st.broadcast_in_dim(new_col, a.shape, tuple(range(nd))), a)
        taus.append(st.expand_dims(tau, (tau.ndim,)))
    k_taus = st.concatenate(taus, len(batch)) if taus else st.full((*batch, 0), 0, a.dtype)
    return a, k_taus
