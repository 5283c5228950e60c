"""The nonsymmetric eigendecomposition `eig` (`mt.lax.linalg.eig`, after
`jax.lax.linalg.eig`): the primitive, its abstract evaluation and its binder.

    eig(f|c[..., n, n]) -> (w c[..., n], vl c[..., n, n]?, vr c[..., n, n]?)

Results are complex whatever the input: complex64 for float32/complex64 operands,
complex128 for float64/complex128. The columns of vr are the right eigenvectors
(x vr = vr diag(w)), those of vl the left ones (vlᴴ x = diag(w) vlᴴ); each column has unit
2-norm and its largest-magnitude component real, as LAPACK's geev returns them. The NumPy
kernel lives in mytorch/backends/numpy/linalg_eig.py, the derivative and batching rules
in linalg_eig_rules.py.
"""

import enum

import numpy as np

from mytorch.core import dtypes
from mytorch.core.aval import ShapedArray
from mytorch.core.primitive import Primitive
from mytorch.core.source_info import user_error
from mytorch.lax._utils import asarray, short

__all__ = ["eig", "eig_p", "EigImplementation"]

_OPERAND_DTYPES = tuple(np.dtype(d) for d in (np.float32, np.float64, np.complex64,
                                              np.complex128))

class EigImplementation(enum.Enum):
    """JAX's choice of eig implementation; on the CPU every choice is LAPACK's geev,
    through NumPy."""
    CUSOLVER = "cusolver"
    MAGMA = "magma"
    LAPACK = "lapack"


eig_p = Primitive("eig", multiple_results=True, kind="linalg")


@eig_p.def_abstract_eval
def _eig_abstract_eval(x, *, compute_left_eigenvectors, compute_right_eigenvectors):
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise ValueError(f"eig needs square matrices (rank >= 2, batch dims first), got "
                         f"{short(x)}")
    if x.dtype not in _OPERAND_DTYPES:
        raise TypeError(f"eig needs a float32, float64, complex64 or complex128 operand, "
                        f"got {short(x)}; convert it first")
    out = dtypes.complex_dtype(x.dtype)
    vectors = ShapedArray(x.shape, out, False)
    return [ShapedArray(x.shape[:-1], out, False),
            *[vectors] * (compute_left_eigenvectors + compute_right_eigenvectors)]


def eig(x, *, compute_left_eigenvectors=True, compute_right_eigenvectors=True,
        enable_eigvec_derivs=False, implementation=None, use_magma=None):
    """Eigenvalues and eigenvectors of general square matrices.

    Args:
      x: f[..., n, n] or c[..., n, n] (float32, float64, complex64 or complex128).
      compute_left_eigenvectors: also return vl, with vlᴴ x = diag(w) vlᴴ.
      compute_right_eigenvectors: also return vr, with x vr = vr diag(w).
      enable_eigvec_derivs, implementation, use_magma: JAX's switches, accepted for its
        callers: eigenvector derivatives are always defined here, and every
        implementation is LAPACK's geev.

    Returns:
      [w c[..., n], vl c[..., n, n] (if asked), vr c[..., n, n] (if asked)]: complex64 for
      32-bit operands, complex128 for 64-bit ones; eigenvector columns have unit 2-norm
      and a real largest-magnitude component. Eigenvalues come in LAPACK's order.

    Example:
      >>> from mytorch import lax
      >>> w, vr = lax.linalg.eig(np.array([[2., 0.], [0., 3.]], np.float32),
      ...                        compute_left_eigenvectors=False)
      >>> w
      Array([2.+0.j, 3.+0.j], dtype=complex64)
    """
    del enable_eigvec_derivs, use_magma
    if implementation is not None and not isinstance(implementation, EigImplementation):
        raise user_error(TypeError, f"eig: implementation must be None or an "
                         f"EigImplementation, got {implementation!r}")
    return eig_p.bind(asarray(x), compute_left_eigenvectors=bool(compute_left_eigenvectors),
                      compute_right_eigenvectors=bool(compute_right_eigenvectors))
