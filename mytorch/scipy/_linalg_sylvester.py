"""`mt.scipy.linalg.solve_sylvester`: X with A X + X B = C, by the Bartels-Stewart method
on the complex Schur forms of A and B.

    solve_sylvester(f32[B,m,m], f32[B,n,n], f32[B,m,n]) -> f32[B,m,n]

With A = U T Uᴴ and B = V S Vᴴ the equation becomes T Y + Y S = Uᴴ C V for Y = Uᴴ X V,
solved a column at a time: (T + S_jj I) y_j = f_j - Σ_k<j y_k S_kj, each an upper
triangular solve. Its derivative is another Sylvester equation (a custom JVP), so the
Schur iteration itself is never differentiated.
"""

from mytorch import numpy as mnp
from mytorch.core import dtypes
from mytorch.core.source_info import user_error
from mytorch.custom_derivatives import custom_jvp
from mytorch.lax import linalg as lax_linalg
from mytorch.numpy._linalg_solvers import broadcast_batch, inexact, matrix, mH
from mytorch.scipy._linalg_schur import schur

__all__ = ["solve_sylvester"]


def _bartels_stewart(a, b, c, tol):
    t, u = schur(a, output="complex")
    s, v = schur(b, output="complex")
    cdt = t.dtype
    f = mnp.matmul(mnp.matmul(mH(u), c.astype(cdt)), v)
    m, n = c.shape[-2:]
    eye = mnp.eye(m, dtype=cdt)
    cols = []
    for j in range(n):
        rhs = f[..., :, j:j + 1]
        for k in range(j):
            rhs = rhs - cols[k] * s[..., k:k + 1, j:j + 1]
        shifted = t + s[..., j:j + 1, j:j + 1] * eye
        cols.append(lax_linalg.triangular_solve(shifted, rhs, left_side=True, lower=False))
    y = mnp.concatenate(cols, axis=-1) if cols else f
    x = mnp.matmul(mnp.matmul(u, y), mH(v))
    # eigenvalue sums near zero: the equation is (nearly) singular, as JAX's tol says
    sums = mnp.diagonal(t, 0, -2, -1)[..., :, None] + mnp.diagonal(s, 0, -2, -1)[..., None, :]
    singular = mnp.any(mnp.abs(sums) < tol, axis=(-2, -1))[..., None, None]
    x = mnp.where(singular, mnp.nan, x)
    return x if dtypes.is_complex(c.dtype) else mnp.real(x).astype(c.dtype)


def _solve(a, b, c, tol):
    @custom_jvp
    def solve(a, b, c):
        return _bartels_stewart(a, b, c, tol)

    @solve.defjvp
    def solve_jvp(primals, tangents):
        """A dX + dX B = dC - dA X - X dB."""
        (a, b, c), (da, db, dc) = primals, tangents
        x = solve(a, b, c)
        rhs = dc - mnp.matmul(da, x) - mnp.matmul(x, db)
        return x, solve(a, b, rhs)

    return solve(a, b, c)


def solve_sylvester(a, b, c, *, method="schur", tol=1e-8):
    """X [..., m, n] with a X + X b = c, for a [..., m, m], b [..., n, n], c [..., m, n]
    (batch dims broadcast). Where an eigenvalue of a plus one of b is within `tol` of 0
    the equation is (nearly) singular and X is NaN, as JAX's. `method` "schur" and
    "eigen" (JAX's choices) both use the Bartels-Stewart method here, which is the more
    accurate of the two."""
    if method not in ("schur", "eigen"):
        raise user_error(ValueError, f"solve_sylvester: method must be 'schur' or 'eigen', "
                         f"got {method!r}")
    a, b, c = inexact("solve_sylvester", a, b, c)
    matrix("solve_sylvester", a, square=True)
    matrix("solve_sylvester", b, square=True)
    matrix("solve_sylvester", c)
    if c.shape[-2:] != (a.shape[-1], b.shape[-1]):
        raise user_error(ValueError, f"solve_sylvester: c must be [..., {a.shape[-1]}, "
                         f"{b.shape[-1]}] for a {a.aval.str_short()} and b "
                         f"{b.aval.str_short()}, got {c.aval.str_short()}")
    a, c = broadcast_batch("solve_sylvester", a, c)
    b, c = broadcast_batch("solve_sylvester", b, c)
    a, c = broadcast_batch("solve_sylvester", a, c)
    return _solve(a, b, c, tol)
