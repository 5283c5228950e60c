"""`mt.scipy.linalg`'s matrix functions besides expm and logm: the principal square root
and the Fréchet derivative of the exponential.

    sqrtm(f32[B,n,n]) -> f32[B,n,n]
    expm_frechet(f32[B,n,n], f32[B,n,n]) -> (expm f32[B,n,n], frechet f32[B,n,n])

Both are composed from existing operations (the Denman-Beavers loop that logm uses, and
expm itself), so derivatives, vmap and jit follow from theirs.
"""

from mytorch import lax
from mytorch import numpy as mnp
from mytorch.core.source_info import user_error
from mytorch.numpy._linalg_solvers import broadcast_batch, inexact, matrix
from mytorch.scipy._linalg_eig import _sqrtm

__all__ = ["sqrtm", "expm_frechet"]


def _s(x):
    return x.aval.str_short()


def _sqrtm_2d(a):
    root, converged = _sqrtm(a)
    return mnp.where(converged, root, mnp.nan)


def sqrtm(A, blocksize=1):
    """The principal square root X of `A` [..., n, n] (X @ X = A, the eigenvalues of X in
    the open right half-plane), by the scaled Denman-Beavers iteration (as `logm` uses).

    Unlike SciPy, which works on the Schur form, the iteration needs no eigenvectors:
    defective matrices work, and the derivative (through the loop) is smooth at repeated
    eigenvalues. A real A keeps its real dtype, so a real A with a negative eigenvalue
    (whose principal root is complex) gives NaNs: pass it as complex
    (`A.astype(mnp.complex64)`) for SciPy's complex result. Eigenvalues exactly on the
    negative real axis give NaNs for complex input too, and so do singular matrices (the
    iteration inverts A). `blocksize` is accepted for SciPy/JAX compatibility
    (it only changes SciPy's blocking, not the result).
    """
    if not isinstance(blocksize, int) or blocksize < 1:
        raise user_error(ValueError, f"sqrtm: blocksize must be a positive int, got "
                         f"{blocksize!r}")
    (A,) = inexact("sqrtm", A)
    matrix("sqrtm", A, square=True)
    if A.shape[-1] == 0:
        return A
    flat = A.reshape((-1,) + A.shape[-2:])
    out = _sqrtm_2d(flat[0])[None] if flat.shape[0] == 1 else lax.map(_sqrtm_2d, flat)
    return out.reshape(A.shape)


def expm_frechet(A, E, *, method=None, compute_expm=True):
    """The Fréchet derivative L(A, E) of the matrix exponential at `A` in the direction
    `E` (both [..., n, n]; batch dims broadcast): the upper-right block of
    expm([[A, E], [0, A]]), exact up to expm's own accuracy and differentiable through it.

    Returns:
      (expm(A), L(A, E)), or L(A, E) alone with `compute_expm=False`. `method` (SciPy's
      "SPS" or "blockEnlarge") is accepted; the block form is used either way.
    """
    from mytorch.scipy.linalg import expm  # (linalg imports this module)

    if method not in (None, "SPS", "blockEnlarge"):
        raise user_error(ValueError, f"expm_frechet: method must be None, 'SPS' or "
                         f"'blockEnlarge', got {method!r}")
    A, E = inexact("expm_frechet", A, E)
    matrix("expm_frechet", A, square=True)
    matrix("expm_frechet", E, square=True)
    if A.shape[-1] != E.shape[-1]:
        raise user_error(ValueError, f"expm_frechet: A and E must be matrices of one "
                         f"size, got A {_s(A)} and E {_s(E)}")
    A, E = broadcast_batch("expm_frechet", A, E)
    n = A.shape[-1]
    block = mnp.concatenate([mnp.concatenate([A, E], axis=-1),
                             mnp.concatenate([mnp.zeros_like(A), A], axis=-1)], axis=-2)
    big = expm(block)
    frechet = big[..., :n, n:]
    return (big[..., :n, :n], frechet) if compute_expm else frechet
