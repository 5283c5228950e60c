"""Associated Legendre functions of the first kind and spherical harmonics: lpmn,
lpmn_values, sph_harm (JAX's functions; SciPy's `assoc_legendre_p_all` and `sph_harm_y`
give the same values).

The functions carry the Condon-Shortley phase, `P_m^m(z) = (-1)^m (2m-1)!! (1-z^2)^(m/2)`,
and come from the three-term recurrences in the degree for each order (static, unrolled
loops over orders and degrees, each step a whole-array operation):

    P_(m+1)^m = (2m+1) z P_m^m,   (l-m) P_l^m = (2l-1) z P_(l-1)^m - (l+m-1) P_(l-2)^m.

The normalized functions (`N_l^m P_l^m` with `N_l^m = sqrt((2l+1)/(4 pi) (l-m)!/(l+m)!)`,
those of orthonormal spherical harmonics) follow their own recurrence, free of the
factorials' overflow. Derivatives in z are `(l z P_l^m - (l+m) P_(l-1)^m) / (z^2 - 1)`,
with SciPy's limits at z = +-1.
"""

import math
import operator

import numpy as np

import mytorch.numpy as mnp
from mytorch import lax
from mytorch.core.array import Array
from mytorch.core.source_info import user_error
from mytorch.errors import TracerArrayConversionError
from mytorch.scipy.special._args import real_args


def _static_int(name, what, v):
    try:
        v = operator.index(v)
    except TypeError:
        raise user_error(TypeError, f"{name}: {what} must be a Python int (it sets the "
                                    f"output's shape), got {type(v).__name__}") from None
    if v < 0:
        raise user_error(ValueError, f"{name}: {what} must be >= 0, got {v}")
    return v


def _points(name, z):
    (zv,) = real_args(name, z)
    if zv.ndim != 1:
        raise user_error(ValueError, f"{name}: z must be a 1-D array of points, got shape "
                                     f"{zv.shape}")
    return zv


def _table(m_max, n_max, z, normalized):
    """rows[m][l] = P_l^m(z) (or its normalized form) for m <= m_max, l <= n_max; zeros
    where m > l."""
    zero = mnp.zeros_like(z)
    s = mnp.sqrt(mnp.maximum(1 - z * z, 0.0))
    rows = []
    diag = mnp.full_like(z, 0.5 / math.sqrt(math.pi) if normalized else 1.0)
    for m in range(m_max + 1):
        if m > 0:
            factor = -math.sqrt(1 + 0.5 / m) if normalized else -(2.0 * m - 1)
            diag = diag * factor * s
        row = [zero] * min(m, n_max + 1)
        prev2, prev = zero, diag
        if m <= n_max:
            row.append(diag)
        for l in range(m + 1, n_max + 1):
            if normalized:
                a = math.sqrt((4.0 * l * l - 1) / (l * l - m * m))
                a_prev = math.sqrt((4.0 * (l - 1) ** 2 - 1) / ((l - 1) ** 2 - m * m)) \
                    if l - 1 > m else 0.0
                cur = a * (z * prev - (prev2 / a_prev if a_prev else 0.0))
            else:
                cur = ((2.0 * l - 1) * z * prev - (l + m - 1.0) * prev2) / (l - m)
            row.append(cur)
            prev2, prev = prev, cur
        rows.append(row)
    return rows


def _derivatives(rows, z):
    """d/dz of the unnormalized table, with SciPy's values at z = +-1: l(l+1)/2 z^(l+1)
    for m = 0, z^l inf for m = 1, -(l+2)(l+1)l(l-1)/4 z^(l+1) for m = 2, 0 beyond."""
    edge = mnp.abs(z) == 1
    denom = mnp.where(edge, 1.0, z * z - 1)
    out = []
    for m, row in enumerate(rows):
        drow = []
        for l, p in enumerate(row):
            if l < m:
                drow.append(mnp.zeros_like(z))
                continue
            below = row[l - 1] if l - 1 >= m else mnp.zeros_like(z)
            inner = (l * z * p - (l + m) * below) / denom
            power = mnp.where(z < 0, (-1.0) ** ((l + 1) % 2), 1.0)  # z^(l+1) at +-1
            if m == 0:
                at_edge = l * (l + 1) / 2 * power
            elif m == 1:
                at_edge = mnp.where(z < 0, (-1.0) ** (l % 2), 1.0) * np.inf
            elif m == 2:
                at_edge = -(l + 2) * (l + 1) * l * (l - 1) / 4 * power
            else:
                at_edge = mnp.zeros_like(z)
            drow.append(mnp.where(edge, at_edge, inner))
        out.append(drow)
    return out


def _stack(rows):
    return mnp.stack([mnp.stack(row) for row in rows])


def lpmn(m, n, z):
    """The associated Legendre functions of the first kind `P_l^k(z)` for orders
    k = 0..m and degrees l = 0..n, and their derivatives in z.

    Args:
      m: the largest order, a non-negative Python int.
      n: the largest degree, a non-negative Python int.
      z: a 1-D array of real points (in [-1, 1]).

    Returns:
      `(values, derivatives)`, each of shape `(m + 1, n + 1, len(z))` indexed by order,
      degree and point, with the Condon-Shortley phase (SciPy's values; 0 where k > l).

    >>> lpmn(1, 1, np.array([0.5], np.float32))[0][:, :, 0]
    Array([[ 1.       ,  0.5      ],
           [ 0.       , -0.8660254]], dtype=float32)
    """
    m = _static_int("lpmn", "m", m)
    n = _static_int("lpmn", "n", n)
    zv = _points("lpmn", z)
    rows = _table(m, n, zv, normalized=False)
    return _stack(rows), _stack(_derivatives(rows, zv))


def lpmn_values(m, n, z, is_normalized):
    """The associated Legendre functions of the first kind (values only), optionally
    normalized as in orthonormal spherical harmonics.

    Args:
      m: the largest order, a non-negative Python int.
      n: the largest degree, a non-negative Python int.
      z: a 1-D array of real points (in [-1, 1]).
      is_normalized: whether to multiply `P_l^k` by
        `sqrt((2l+1)/(4 pi) (l-k)!/(l+k)!)`.

    Returns:
      An array of shape `(m + 1, n + 1, len(z))` indexed by order, degree and point.
    """
    m = _static_int("lpmn_values", "m", m)
    n = _static_int("lpmn_values", "n", n)
    zv = _points("lpmn_values", z)
    return _stack(_table(m, n, zv, normalized=bool(is_normalized)))


def _concrete_max(n):
    if isinstance(n, Array):
        try:
            n = np.asarray(n)
        except TracerArrayConversionError:
            raise user_error(TypeError, "sph_harm: n_max must be given when n is traced "
                                        f"(got an abstract {n.aval.str_short()}); it "
                                        "sets the size of the table") from None
    return int(np.max(np.asarray(n)))


def sph_harm(m, n, theta, phi, n_max=None):
    """The spherical harmonics `Y_n^m(theta, phi)`, orthonormal on the sphere, with the
    Condon-Shortley phase (JAX's argument order: theta the azimuthal angle, phi the polar
    one; SciPy's `sph_harm_y(n, m, phi, theta)`).

    Args:
      m: the orders, an integer array-like with `|m| <= n`.
      n: the degrees, an integer array-like.
      theta: the azimuthal angles, an array-like.
      phi: the polar angles, an array-like.
      n_max: the largest degree in n (a Python int); None reads it from a concrete n.

    Returns:
      A complex array of the broadcast shape of m, n, theta and phi.
    """
    n_max = _concrete_max(n) if n_max is None else _static_int("sph_harm", "n_max", n_max)
    theta_v, phi_v = real_args("sph_harm", theta, phi)
    m_v, n_v = mnp.asarray(m), mnp.asarray(n)
    for what, v in (("m", m_v), ("n", n_v)):
        if np.dtype(v.dtype).kind not in "iu":
            raise user_error(TypeError, f"sph_harm: {what} must be integers, got "
                                        f"{v.aval.str_short()}")
    shape = np.broadcast_shapes(m_v.shape, n_v.shape, theta_v.shape, phi_v.shape)
    m_f, n_f, theta_f, phi_f = (mnp.ravel(mnp.broadcast_to(v, shape))
                                for v in (m_v, n_v, theta_v, phi_v))
    rows = _table(n_max, n_max, mnp.cos(phi_f), normalized=True)
    order = mnp.abs(m_f)
    legendre = mnp.zeros_like(theta_f)
    for k, row in enumerate(rows):
        for l, p in enumerate(row):
            if l >= k:
                legendre = mnp.where((order == k) & (n_f == l), p, legendre)
    angle = order.astype(theta_f.dtype) * theta_f
    re, im = legendre * mnp.cos(angle), legendre * mnp.sin(angle)
    # Y_n^-k = (-1)^k conj(Y_n^k)
    negative = m_f < 0
    flip = mnp.where(negative & (order % 2 == 1), -1.0, 1.0).astype(re.dtype)
    re, im = re * flip, mnp.where(negative, -im, im) * flip
    return mnp.reshape(lax.complex(re, im), shape)
