"""Derivative and batching rules of the nonsymmetric eigendecomposition (linalg_eig.py).

The JVP is JAX's (nondegenerate perturbation theory): with P = V⁻¹ Ȧ V, ẇ = diag(P) and
V̇ = V (F ∘ P) + V diag(c), F_ij = 1 / (w_j - w_i) off the diagonal (inf for repeated
eigenvalues, as JAX: their eigenvectors are not unique) and c_j the multiple of v_j that
keeps LAPACK's normalisation (unit norm, real largest component). Left eigenvectors are
right eigenvectors of xᴴ for the eigenvalues w̄, so they use the same rule. The operand is
a stack of matrices, so batching moves the mapped axis to the front.
"""

import numpy as np

from mytorch.core.trace import aval_of
from mytorch.lax import elementwise as ew
from mytorch.lax import linalg as la
from mytorch.lax import structural as st
from mytorch.lax._ad import Zero, zero_out
from mytorch.lax._batching import bdim_at_front
from mytorch.lax.indexing import take_along_axis
from mytorch.lax.linalg_eig import eig_p
from mytorch.lax.linalg_rules import _col, _mm, _mT, _row
from mytorch.lax.reductions import argmax, reduce_sum


# matrix helpers shared with the other linalg rules (last two axes the matrix)


def _solve(a, b):
    """a⁻¹ b for complex a [..., n, n] and b [..., n, k], through the LU factors of a."""
    nd = aval_of(a).ndim
    lu, _, perm = la.lu_p.bind(a)
    rows = st.broadcast_in_dim(perm, aval_of(b).shape, (*range(nd - 2), nd - 2))
    y = la.triangular_solve(lu, take_along_axis(b, rows, nd - 2), left_side=True,
                            lower=True, unit_diagonal=True)
    return la.triangular_solve(lu, y, left_side=True, lower=False)


def _eigenvector_jvp(w, v, da):
    """(ẇ, v̇) of the eigenpairs (w, v) of a matrix a in direction ȧ (all complex)."""
    shape = aval_of(v).shape
    nd = len(shape)
    diag = ew.eq(st.broadcasted_iota(np.int32, shape, nd - 1),
                 st.broadcasted_iota(np.int32, shape, nd - 2))
    eye = ew.convert_element_type(diag, aval_of(v).dtype)
    # F_ij = 1 / (w_j - w_i) off the diagonal, 0 on it
    gap = ew.add(eye, ew.sub(_row(w, shape), _col(w, shape)))
    F = ew.sub(ew.div(st.full_like(gap, 1), gap), eye)
    P = _mm(_solve(v, da), v)
    dw = reduce_sum(ew.select(diag, P, st.full_like(P, 0)), (nd - 1,))
    U = _mm(v, ew.mul(F, P))
    # v̇_j = u_j + c_j v_j: unit norm fixes re c_j = -re(v_jᴴ u_j); a real component
    # k_j = argmax_i |v_ij| fixes im c_j = -im(u_kj) / v_kj
    k = argmax(ew.abs(v), nd - 2, np.int32)
    largest = ew.eq(st.broadcasted_iota(np.int32, shape, nd - 2), _row(k, shape))
    u_k = reduce_sum(ew.select(largest, U, st.full_like(U, 0)), (nd - 2,))
    v_k = reduce_sum(ew.select(largest, v, st.full_like(v, 0)), (nd - 2,))
    c = ew.complex(ew.neg(ew.real(reduce_sum(ew.mul(ew.conj(v), U), (nd - 2,)))),
                   ew.neg(ew.div(ew.imag(u_k), ew.real(v_k))))
    return dw, ew.add(U, ew.mul(v, _row(c, shape)))


def _eig_jvp(primals, tangents, *, compute_left_eigenvectors, compute_right_eigenvectors):
    (x,), (dx,) = primals, tangents
    outs = eig_p.bind(x, compute_left_eigenvectors=compute_left_eigenvectors,
                      compute_right_eigenvectors=True)
    w, vr = outs[0], outs[-1]
    primal_out = outs if compute_right_eigenvectors else outs[:-1]
    if type(dx) is Zero:
        return primal_out, [zero_out(o) for o in primal_out]
    dx = ew.convert_element_type(dx, aval_of(vr).dtype)
    if not (compute_left_eigenvectors or compute_right_eigenvectors):
        # diag(V⁻¹ Ȧ V) without forming the product
        nd = aval_of(vr).ndim
        return primal_out, [reduce_sum(ew.mul(_solve(vr, dx), _mT(vr)), (nd - 1,))]
    dw, dvr = _eigenvector_jvp(w, vr, dx)
    tangent_out = [dw]
    if compute_left_eigenvectors:
        _, dvl = _eigenvector_jvp(ew.conj(w), outs[1], ew.conj(_mT(dx)))
        tangent_out.append(dvl)
    if compute_right_eigenvectors:
        tangent_out.append(dvr)
    return primal_out, tangent_out


eig_p.def_jvp(_eig_jvp)


def _eig_batching(axis, args, dims, **params):
    (x,), (d,) = args, dims
    out = eig_p.bind(bdim_at_front(x, d, axis.size), **params)
    return out, [0] * len(out)


eig_p.def_batching(_eig_batching)
