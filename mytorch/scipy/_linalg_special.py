"""`mt.scipy.linalg`'s special matrices (SciPy's and JAX's): the ones built from vectors,
batched over their leading dimensions (circulant, companion, fiedler, fiedler_companion,
leslie, convolution_matrix), and the constant ones of a given order (dft, hadamard,
helmert, pascal, invpascal, invhilbert).

    circulant(f32[B,n]) -> f32[B,n,n]          companion(f32[B,n]) -> f32[B,n-1,n-1]
    convolution_matrix(f32[B,m], n, "full") -> f32[B,m+n-1,n]     dft(n) -> c64[n,n]

Entries taken from the vectors are gathered by static index tables (as toeplitz), so
derivatives, vmap and jit follow from `mnp.take`; the constant matrices are exact
integers or closed forms computed once in NumPy.
"""

import math
import operator

import numpy as np

from mytorch import numpy as mnp
from mytorch.core import dtypes
from mytorch.core.source_info import user_error

__all__ = ["circulant", "companion", "convolution_matrix", "dft", "fiedler",
           "fiedler_companion", "hadamard", "helmert", "invhilbert", "invpascal", "leslie",
           "pascal"]


def _gather(v, index, fill=None):
    """The matrix [..., *index.shape] with entries v[..., index] (index -1: `fill`, or 0)."""
    padded = mnp.concatenate([v, mnp.zeros_like(v[..., :1]) if fill is None else fill],
                             axis=-1)
    index = np.where(index < 0, v.shape[-1], index).astype(np.int32)
    return mnp.take(padded, mnp.asarray(index), axis=-1)


def _order(name, n, minimum=0):
    """`n` as an int >= `minimum` (0 or 1); `minimum` None checks only that it is an int."""
    try:
        n = operator.index(n)
    except TypeError:
        raise user_error(TypeError, f"{name}: n must be an int, got {n!r}") from None
    if minimum is not None and n < minimum:
        kind = "positive" if minimum else "non-negative"
        raise user_error(ValueError, f"{name}: n must be a {kind} integer, got {n}")
    return n


def circulant(c):
    """The circulant matrix [..., n, n] with first column `c` [..., n]: A[i, j] =
    c[(i - j) mod n]."""
    c = mnp.atleast_1d(mnp.asarray(c))
    n = c.shape[-1]
    i = np.arange(n)
    return _gather(c, (i[:, None] - i[None, :]) % max(n, 1))


def companion(a):
    """The companion matrix [..., n-1, n-1] of the polynomial with coefficients `a`
    [..., n] (highest power first, a[..., 0] nonzero): first row -a[1:] / a[0], ones on
    the sub-diagonal. Its eigenvalues are the polynomial's roots."""
    a = mnp.asarray(a)
    if a.ndim < 1 or a.shape[-1] < 2:
        raise user_error(ValueError, f"companion: the length of `a` along the last axis must "
                         f"be at least 2, got shape {a.shape}")
    if not dtypes.is_inexact(a.dtype):
        a = a.astype(dtypes.default_float())
    n = a.shape[-1] - 1
    first = -a[..., 1:] / a[..., :1]
    index = np.full((n, n), -1)
    index[0] = np.arange(n)
    one = mnp.ones_like(first[..., :1])
    table = mnp.concatenate([first, one], axis=-1)  # entry n is the sub-diagonal's 1
    index[np.arange(1, n), np.arange(n - 1)] = n
    return _gather(table, index)


def fiedler(a):
    """The symmetric Fiedler matrix [..., n, n] of `a` [..., n]: A[i, j] = |a[i] - a[j]|."""
    a = mnp.atleast_1d(mnp.asarray(a))
    return mnp.abs(a[..., :, None] - a[..., None, :])


def fiedler_companion(a):
    """The Fiedler companion matrix [..., n-1, n-1] of the polynomial with coefficients `a`
    [..., n] (highest power first): a pentadiagonal matrix with the companion matrix's
    characteristic polynomial, as SciPy builds it. n = 2 gives [[-a1 / a0]]; n < 2 an
    empty matrix; an empty `a` is an error."""
    a = mnp.atleast_1d(mnp.asarray(a))
    if not dtypes.is_inexact(a.dtype):
        a = a.astype(dtypes.default_float())
    k = a.shape[-1]
    if k == 0:
        raise user_error(ValueError, f"fiedler_companion: a needs a nonzero length along "
                         f"its last axis, got shape {a.shape}")
    if k < 2:
        return mnp.zeros(a.shape[:-1] + (0, 0), a.dtype)
    a = a / a[..., :1]
    n = k - 1
    # table entries: a[0..k-1] negated, then 1 at index k
    table = mnp.concatenate([-a, mnp.ones_like(a[..., :1])], axis=-1)
    index = np.full((n, n), -1)
    one = k
    index[np.arange(3, n, 2), np.arange(1, n - 2, 2)] = one
    index[np.arange(2, n, 2), np.arange(1, n - 1, 2)] = np.arange(3, k, 2)  # -a[3::2]
    index[np.arange(0, n - 2, 2), np.arange(2, n, 2)] = one
    index[np.arange(0, n - 1, 2), np.arange(1, n, 2)] = np.arange(2, k, 2)  # -a[2::2]
    index[0, 0] = 1
    if n > 1:
        index[1, 0] = one
    return _gather(table, index)


def leslie(f, s):
    """The Leslie matrix [..., n, n] of fecundities `f` [..., n] (its first row) and
    survival rates `s` [..., n-1] (its sub-diagonal)."""
    f, s = mnp.atleast_1d(mnp.asarray(f)), mnp.atleast_1d(mnp.asarray(s))
    if f.shape[-1] < 2:
        raise user_error(ValueError, f"leslie: the length of f along the last axis must be "
                         f"at least 2, got {f.shape}")
    n = f.shape[-1]
    if s.shape[-1] != n - 1:
        raise user_error(ValueError, f"leslie: Incorrect lengths for f and s: s needs "
                         f"{n - 1} entries along its last axis for f's {n}, got {s.shape}")
    dtype = mnp.result_type(f, s)
    batch = np.broadcast_shapes(f.shape[:-1], s.shape[:-1])
    table = mnp.concatenate([mnp.broadcast_to(f.astype(dtype), batch + (n,)),
                             mnp.broadcast_to(s.astype(dtype), batch + (n - 1,))], axis=-1)
    index = np.full((n, n), -1)
    index[0] = np.arange(n)
    index[np.arange(1, n), np.arange(n - 1)] = n + np.arange(n - 1)
    return _gather(table, index)


def convolution_matrix(a, n, mode="full"):
    """The matrix A with A @ v = np.convolve(a, v, mode) for v [n]: a [..., m] gives
    [..., m + n - 1, n] ("full"), the rows where a and v overlap fully ("valid") or the
    max(m, n) centred rows ("same"), as SciPy."""
    a = mnp.asarray(a)
    if a.ndim == 0:
        raise user_error(ValueError, "convolution_matrix: a must be at least 1-dimensional")
    n = _order("convolution_matrix", n, 1)
    m = a.shape[-1]
    if m == 0:
        raise user_error(ValueError, f"convolution_matrix: len(a) must be at least 1, got "
                         f"a of shape {a.shape}")
    if mode not in ("full", "valid", "same"):
        raise user_error(ValueError, f"convolution_matrix: mode must be one of 'full', "
                         f"'valid', 'same', got {mode!r}")
    rows = np.arange(m + n - 1)[:, None] - np.arange(n)[None, :]
    index = np.where((rows >= 0) & (rows < m), rows, -1)
    if mode == "valid":
        index = index[min(m, n) - 1:max(m, n)]
    elif mode == "same":
        start = (min(m, n) - 1) // 2
        index = index[start:start + max(m, n)]
    return _gather(a, index)


def dft(n, scale=None, *, dtype=None):
    """The discrete Fourier transform matrix [n, n] (`dtype`, default the default complex
    dtype): F[j, k] = exp(-2 pi i j k / n), divided by sqrt(n) (`scale` "sqrtn") or n
    ("n")."""
    n = _order("dft", n)
    if scale not in (None, "sqrtn", "n"):
        raise user_error(ValueError, f"dft: scale must be None, 'sqrtn' or 'n', got "
                         f"{scale!r}")
    jk = np.outer(np.arange(n), np.arange(n)) % max(n, 1)  # exact phases for large n
    f = np.exp(-2j * np.pi * jk / max(n, 1))
    f = f / {None: 1, "sqrtn": math.sqrt(max(n, 1)), "n": max(n, 1)}[scale]
    if dtype is not None and not dtypes.is_complex(np.dtype(dtype)):
        raise user_error(ValueError, f"dft: dtype must be complex, got {np.dtype(dtype)}")
    return mnp.asarray(f, dtypes.default_complex() if dtype is None else dtype)


def hadamard(n, dtype=int):
    """The Sylvester-Hadamard matrix [n, n] of ±1 for n a positive power of 2."""
    n = _order("hadamard", n, minimum=None)
    if n < 1 or n & (n - 1):
        raise user_error(ValueError, f"hadamard: n must be a positive power of 2, got {n}")
    h = np.ones((1, 1), np.int64)
    while h.shape[0] < n:
        h = np.block([[h, h], [h, -h]])
    return mnp.asarray(h, dtype)


def helmert(n, full=False):
    """The Helmert matrix [n, n] (`full`) or its last n - 1 rows [n-1, n]: an orthogonal
    matrix whose first row is constant."""
    n = _order("helmert", n, 1)
    h = np.tril(np.ones((n, n)), -1) - np.diag(np.arange(n))
    d = np.arange(n) * np.arange(1, n + 1)
    h[0] = 1
    d[0] = n
    h = h / np.sqrt(d)[:, None]
    return mnp.asarray(h if full else h[1:], dtypes.default_float())


def invhilbert(n):
    """The inverse of the Hilbert matrix of order n [n, n], from its closed form (exact
    integers, rounded once to the default float)."""
    n = _order("invhilbert", n)
    out = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            out[i, j] = ((-1) ** (i + j) * (i + j + 1) * math.comb(n + i, n - j - 1)
                         * math.comb(n + j, n - i - 1) * math.comb(i + j, i) ** 2)
    return mnp.asarray(out, dtypes.default_float())


def _pascal_lower(n):
    return np.array([[math.comb(i, j) for j in range(n)] for i in range(n)], dtype=object)


def _kind(name, kind):
    kind = "symmetric" if kind is None else kind
    if kind not in ("symmetric", "lower", "upper"):
        raise user_error(ValueError, f"{name}: Expected kind to be one of 'symmetric', "
                         f"'lower' or 'upper', got {kind!r}")
    return kind


def pascal(n, kind="symmetric"):
    """The Pascal matrix [n, n] (default float): symmetric C(i + j, i), its lower
    Cholesky-like factor C(i, j) ("lower") or that factor's transpose ("upper")."""
    n = _order("pascal", n)
    kind = _kind("pascal", kind)
    low = _pascal_lower(n).reshape(n, n)
    out = {"lower": low, "upper": low.T, "symmetric": low.dot(low.T) if n else low}[kind]
    return mnp.asarray(out.astype(np.float64), dtypes.default_float())


def invpascal(n, kind="symmetric"):
    """The inverse of `pascal(n, kind)` [n, n]: the lower factor's inverse is
    (-1)^(i - j) C(i, j), the symmetric matrix's L⁻ᵀ L⁻¹ (exact integers)."""
    n = _order("invpascal", n)
    kind = _kind("invpascal", kind)
    sign = np.array([[(-1) ** (i + j) for j in range(n)] for i in range(n)], dtype=object)
    inv_low = (_pascal_lower(n).reshape(n, n) * sign.reshape(n, n))
    out = {"lower": inv_low, "upper": inv_low.T,
           "symmetric": inv_low.T.dot(inv_low) if n else inv_low}[kind]
    return mnp.asarray(out.astype(np.float64), dtypes.default_float())
