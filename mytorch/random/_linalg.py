"""Small matrix decompositions for the samplers: Cholesky, Householder QR, Jacobi eigh.

Temporary: mytorch has no `lax.linalg` yet. These are written with `lax.fori_loop` and
`mytorch.numpy` ops only, so they jit, vmap and differentiate like any other traced code;
every function is batched over leading dimensions (`a` is `(..., m, n)`). When lax.linalg
gains cholesky/qr/eigh primitives, the samplers switch to them and this module goes.

Each step works with one-hot row/column masks (`arange == j`) rather than traced indexing,
so a step is a few matrix products and elementwise ops whatever the batch shape.
"""

import numpy as np

import mytorch.numpy as mnp
from mytorch import lax

__all__ = ["cholesky", "eigh", "qr"]


def _one_hot(j, n, dtype):
    return (mnp.arange(n) == j).astype(dtype)


def _col(a, e):
    # a[..., :, j] for the one-hot e of j
    return mnp.einsum("...ij,j->...i", a, e)


def cholesky(a):
    """Lower Cholesky factor `L` with `L @ L.T == a`, column by column (Cholesky–Banachiewicz).

    Args:
      a: `(..., n, n)` symmetric positive-definite float array (only its lower triangle
        is read).

    Returns:
      `(..., n, n)` lower-triangular `L`; NaN where `a` is not positive definite (as
      jax.numpy.linalg.cholesky).
    """
    a = mnp.asarray(a)
    n = a.shape[-1]
    rows = mnp.arange(n)

    def step(j, low):
        e = _one_hot(j, n, a.dtype)
        row_j = mnp.einsum("...ji,j->...i", low, e)  # L[..., j, :] (zero from column j on)
        v = _col(a, e) - mnp.einsum("...ik,...k->...i", low, row_j)
        d = mnp.sqrt(mnp.sum(v * e, axis=-1))
        below = mnp.where(rows > j, v / d[..., None], 0)
        col = below + e * d[..., None]
        return low + col[..., :, None] * e

    return lax.fori_loop(0, n, step, mnp.zeros_like(a))


def qr(a):
    """Reduced QR by Householder reflections: `a == q @ r`.

    Args:
      a: `(..., m, n)` float array.

    Returns:
      `(q, r)`: `q` is `(..., m, k)` with orthonormal columns and `r` is `(..., k, n)` upper
      triangular, `k = min(m, n)` (numpy.linalg.qr's 'reduced' mode). Signs of the diagonal
      of `r` are not normalised (they differ from LAPACK's only by column signs of `q`).
    """
    a = mnp.asarray(a)
    m, n = a.shape[-2:]
    k = min(m, n)
    rows = mnp.arange(m)

    def step(j, qr_):
        q, r = qr_
        e = _one_hot(j, m, a.dtype)
        x = mnp.where(rows >= j, _col(r, _one_hot(j, n, a.dtype)), 0)
        norm = mnp.sqrt(mnp.sum(x * x, axis=-1))
        xj = mnp.sum(x * e, axis=-1)
        alpha = mnp.where(xj >= 0, -norm, norm)  # reflect away from x to avoid cancellation
        v = x - alpha[..., None] * e
        vv = mnp.sum(v * v, axis=-1)
        nonzero = vv > 0
        tau = mnp.where(nonzero, 2 / mnp.where(nonzero, vv, 1), 0)[..., None]
        # H = I - tau v v^T;  r <- H r;  q <- q H
        vr = mnp.einsum("...i,...ij->...j", v, r)
        qv = mnp.einsum("...ij,...j->...i", q, v)
        r = r - tau[..., None] * v[..., :, None] * vr[..., None, :]
        q = q - tau[..., None] * qv[..., :, None] * v[..., None, :]
        return q, r

    q0 = mnp.broadcast_to(mnp.eye(m, dtype=a.dtype), a.shape[:-2] + (m, m))
    q, r = lax.fori_loop(0, k, step, (q0, a))
    r = r[..., :k, :]
    return q[..., :, :k], mnp.triu(r)


def _rounds(n):
    """Round-robin pairings of 0..n-1 (Brent and Luk's parallel ordering): n - 1 rounds
    (n rounded up to even) of disjoint pairs covering every pair once; the index n stands
    for "no partner" when n is odd (its one-hot row is zero, so its rotation is identity)."""
    m = n + (n % 2)
    players = list(range(m))
    ps, qs = [], []
    for _ in range(m - 1):
        half = m // 2
        ps.append(players[:half])
        qs.append(players[half:][::-1])
        players = [players[0], players[-1], *players[1:-1]]
    return np.asarray(ps, np.int32), np.asarray(qs, np.int32)


def eigh(a, sweeps=None):
    """Eigen-decomposition of a symmetric matrix by Jacobi rotations (parallel ordering).

    Each round rotates n/2 disjoint (p, q) pairs at once (one matrix product), and a sweep's
    n - 1 rounds rotate every off-diagonal pair once.

    Args:
      a: `(..., n, n)` symmetric float array (symmetrised as `(a + a^T) / 2`).
      sweeps: number of sweeps; the default, `max(8, ceil(log2 n) + 6)`, converges to
        working precision for the sizes samplers use (convergence is quadratic once the
        off-diagonal mass is small).

    Returns:
      `(w, v)`: eigenvalues `(..., n)` in ascending order and eigenvectors `(..., n, n)` as
      columns, `a == v @ diag(w) @ v^T` (column signs are arbitrary, as in LAPACK).
    """
    a = mnp.asarray(a)
    n = a.shape[-1]
    a = (a + mnp.swapaxes(a, -1, -2)) / 2
    v0 = mnp.broadcast_to(mnp.eye(n, dtype=a.dtype), a.shape)
    if n <= 1:
        return mnp.diagonal(a, axis1=-2, axis2=-1), v0
    if sweeps is None:
        sweeps = max(8, int(np.ceil(np.log2(n))) + 6)
    ps, qs = _rounds(n)
    ps, qs = mnp.asarray(ps), mnp.asarray(qs)
    eye = mnp.eye(n, dtype=a.dtype)
    cols = mnp.arange(n)

    def rotate(i, av):
        mat, vec = av
        r = i % len(ps)
        ep = (ps[r][:, None] == cols).astype(a.dtype)  # (pairs, n) one-hot rows
        eq = (qs[r][:, None] == cols).astype(a.dtype)
        app = mnp.einsum("...ij,ki,kj->...k", mat, ep, ep)
        aqq = mnp.einsum("...ij,ki,kj->...k", mat, eq, eq)
        apq = mnp.einsum("...ij,ki,kj->...k", mat, ep, eq)
        nonzero = apq != 0
        theta = (aqq - app) / (2 * mnp.where(nonzero, apq, 1))
        sgn = mnp.where(theta >= 0, 1, -1).astype(a.dtype)
        t = sgn / (mnp.abs(theta) + mnp.sqrt(theta * theta + 1))
        t = mnp.where(nonzero, t, 0)  # tan of the angle that zeroes a[p, q]
        c = 1 / mnp.sqrt(t * t + 1)
        s = t * c
        # J = I + sum_k (c_k - 1)(ep ep^T + eq eq^T) + s_k (ep eq^T - eq ep^T): the disjoint
        # rotations commute, so J is their product;  A <- J^T A J, V <- V J
        rot = (
            eye
            + mnp.einsum("...k,ki,kj->...ij", c - 1, ep, ep)
            + mnp.einsum("...k,ki,kj->...ij", c - 1, eq, eq)
            + mnp.einsum("...k,ki,kj->...ij", s, ep, eq)
            - mnp.einsum("...k,ki,kj->...ij", s, eq, ep)
        )
        mat = mnp.matmul(mnp.swapaxes(rot, -1, -2), mnp.matmul(mat, rot))
        return mat, mnp.matmul(vec, rot)

    mat, vec = lax.fori_loop(0, sweeps * len(ps), rotate, (a, v0))
    w = mnp.diagonal(mat, axis1=-2, axis2=-1)
    order = mnp.argsort(w, axis=-1)
    w = mnp.take_along_axis(w, order, axis=-1)
    vec = mnp.take_along_axis(vec, order[..., None, :], axis=-1)
    return w, vec
