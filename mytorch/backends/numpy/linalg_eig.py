"""NumPy kernel of the nonsymmetric eigendecomposition (mytorch/lax/linalg_eig.py).

numpy.linalg.eig (LAPACK geev) gives the eigenvalues and right eigenvectors of a stack of
matrices, but not the left ones. Those are the right eigenvectors of xᴴ (vᴴ x = w vᴴ
exactly when xᴴ v = w̄ v), which geev normalises as it does vl (unit 2-norm, real
largest-magnitude component); they are paired with w by matching w̄ against the eigenvalues
of xᴴ, closest pairs first. A matrix with infs or NaNs, or on which LAPACK does not
converge, gives NaNs (as JAX), the other matrices of a stack are unaffected.
"""

import numpy as np

from mytorch.backends.numpy import numpy_backend
from mytorch.core import dtypes
from mytorch.lax.linalg_eig import eig_p


def _pair_closest(w, w_other):
    """perm with w_other[perm] closest to w: repeatedly the closest unpaired pair."""
    n = w.shape[0]
    dist = np.abs(w[:, None] - w_other[None, :])
    perm = np.empty(n, np.intp)
    for _ in range(n):
        i, j = np.unravel_index(np.argmin(dist), dist.shape)
        perm[i] = j
        dist[i, :] = np.inf
        dist[:, j] = np.inf
    return perm


def _eig_one(x, left, right):
    """[w, vl?, vr?] of one matrix (complex), NaNs where LAPACK fails."""
    n = x.shape[-1]
    try:
        if not (left or right):
            return [np.linalg.eigvals(x)]
        w, vr = np.linalg.eig(x)
        out = [w]
        if left:
            w_h, v_h = np.linalg.eig(np.conj(x.T))
            out.append(v_h[:, _pair_closest(np.conj(w), w_h)])
        return out + ([vr] if right else [])
    except np.linalg.LinAlgError:
        return [np.full(n, np.nan)] + [np.full((n, n), np.nan)] * (left + right)


@numpy_backend.register(eig_p)
def _eig(x, *, compute_left_eigenvectors, compute_right_eigenvectors):
    left, right = compute_left_eigenvectors, compute_right_eigenvectors
    out_dtype = dtypes.complex_dtype(x.dtype)
    *batch, n, _ = x.shape
    flat = x.reshape(int(np.prod(batch)), n, n)
    finite = np.isfinite(flat).all(axis=(1, 2))
    outs = [np.full((flat.shape[0], n), np.nan, out_dtype)]
    outs += [np.full(flat.shape, np.nan, out_dtype) for _ in range(left + right)]
    with np.errstate(under="ignore"):
        if finite.all() and not left:
            # the whole stack in one LAPACK call; only a failure falls back to the loop
            try:
                got = list(np.linalg.eig(flat)) if right else [np.linalg.eigvals(flat)]
                return [g.astype(out_dtype).reshape(*batch, *g.shape[1:]) for g in got]
            except np.linalg.LinAlgError:
                pass
        for b in np.flatnonzero(finite):
            for o, value in zip(outs, _eig_one(flat[b], left, right), strict=True):
                o[b] = value
    return [o.reshape(*batch, *o.shape[1:]) for o in outs]
