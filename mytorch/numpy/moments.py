"""Covariance, correlation and multi-dimensional histograms: cov, corrcoef, histogram2d,
histogramdd (NumPy's signatures and results; dtypes as JAX's)."""

import builtins

from mytorch import lax
from mytorch.core import dtypes
from mytorch.core.source_info import user_error
from mytorch.numpy.creation import asarray, zeros
from mytorch.numpy.joining import concatenate
from mytorch.numpy.shapes import atleast_2d, ravel
from mytorch.numpy.sorting import histogram_bin_edges, searchsorted

__all__ = ["cov", "corrcoef", "histogram2d", "histogramdd"]


def _float(x):
    return x if dtypes.is_inexact(x.dtype) else x.astype(dtypes.default_float())


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None):
    """The covariance matrix of the variables in `m` (rows are variables when `rowvar`,
    columns otherwise), optionally stacked with those of `y`.

    Args:
      m, y: 1-D or 2-D arrays of observations.
      bias: normalise by N (True) or N - 1 (False); `ddof` overrides it.
      fweights: integer repeat counts per observation; aweights: observation weights.
    Returns:
      A (V, V) float array (a 0-d array for a single variable, as NumPy).
    """
    x = _float(atleast_2d(asarray(m)))
    if x.ndim > 2:
        raise user_error(ValueError, f"cov: m has more than 2 dimensions ({x.aval.str_short()})")
    if not rowvar and x.shape[0] != 1:
        x = x.T
    if y is not None:
        yy = _float(atleast_2d(asarray(y)))
        if not rowvar and yy.shape[0] != 1:
            yy = yy.T
        dt = dtypes.promote_types(x.dtype, yy.dtype)
        x = concatenate([x.astype(dt), yy.astype(dt)], axis=0)
    ddof = (0 if bias else 1) if ddof is None else ddof
    n = x.shape[1]
    w = None
    if fweights is not None:
        w = asarray(fweights).astype(x.dtype)
        if w.ndim != 1 or w.shape[0] != n:
            raise user_error(ValueError,
                             f"cov: fweights must be 1-D with one entry per observation "
                             f"({n}), got shape {w.shape}")
    if aweights is not None:
        a = asarray(aweights).astype(x.dtype)
        if a.ndim != 1 or a.shape[0] != n:
            raise user_error(ValueError,
                             f"cov: aweights must be 1-D with one entry per observation "
                             f"({n}), got shape {a.shape}")
        w = a if w is None else w * a
    if w is None:
        avg = x.mean(axis=1)
        w_sum = asarray(n).astype(x.dtype)
        fact = w_sum - ddof
    else:
        w_sum = w.sum()
        avg = (x * w).sum(axis=1) / w_sum
        if ddof == 0:
            fact = w_sum
        elif aweights is None:
            fact = w_sum - ddof
        else:
            fact = w_sum - ddof * (w * asarray(aweights).astype(x.dtype)).sum() / w_sum
    fact = lax.max(fact, lax.full_like(fact, 0))
    xc = x - avg[:, None]
    xw = xc if w is None else xc * w
    c = (xw @ xc.T.conj()) / fact  # conj: complex variables, as NumPy
    return c.squeeze() if c.shape == (1, 1) else c


def corrcoef(x, y=None, rowvar=True):
    """Pearson correlation coefficients of the variables in `x` (and `y`): the covariance
    matrix divided by the outer product of the standard deviations, clipped to [-1, 1]."""
    c = cov(x, y, rowvar)
    if c.ndim == 0:
        return c / c
    d = lax.sqrt(c.diagonal())
    c = c / d[:, None] / d[None, :]
    return lax.clamp(lax.full_like(c, -1), c, lax.full_like(c, 1))


def histogramdd(sample, bins=10, range=None, weights=None, density=None):
    """Histogram of N points in D dimensions: (counts of shape (b_1, ..., b_D), [edges]).

    Args:
      sample: an (N, D) array (or a (N,) array for D = 1).
      bins: one int or edge array for all dimensions, or one per dimension.
      range: None or one (lo, hi) pair (or None) per dimension.
      weights: (N,) weights; counts are then sums of weights (a float array).
      density: normalise so the histogram integrates to 1.
    """
    s = asarray(sample)
    if s.ndim == 1:
        s = s[:, None]
    if s.ndim != 2:
        raise user_error(ValueError,
                         f"histogramdd: sample must be (N, D), got {s.aval.str_short()}")
    d = s.shape[1]
    bins_ = list(bins) if isinstance(bins, (list, tuple)) else [bins] * d
    ranges = list(range) if range is not None else [None] * d
    if len(bins_) != d or len(ranges) != d:
        raise user_error(ValueError,
                         f"histogramdd: bins and range need one entry per dimension ({d})")
    edges = [histogram_bin_edges(s[:, i], b, r) for i, (b, r) in
             enumerate(zip(bins_, ranges, strict=True))]
    shape = tuple(e.shape[0] - 1 for e in edges)
    flat = None
    inside = None
    for i, e in enumerate(edges):
        v = s[:, i].astype(e.dtype)
        nb = shape[i]
        idx = searchsorted(e, v, side="right") - 1
        idx = lax.select_n(v == e[-1], idx, lax.full_like(idx, nb - 1))  # last bin closed
        ok = (idx >= 0) & (idx < nb)
        inside = ok if inside is None else inside & ok
        flat = idx if flat is None else flat * nb + idx
    size = 1
    for b in shape:
        size *= b
    flat = lax.select_n(inside, lax.full_like(flat, size), flat)  # dropped below
    if weights is None:
        w = lax.full_like(flat, 1)
    else:
        w = ravel(asarray(weights))
        w = _float(w)
    counts = zeros(size, w.dtype).at[flat].add(w, mode="drop").reshape(shape)
    if density:
        counts = _float(counts)
        counts = counts / counts.sum()
        for i, e in enumerate(edges):
            widths = (e[1:] - e[:-1]).astype(counts.dtype)
            counts = counts / widths.reshape(tuple(-1 if j == i else 1
                                                   for j in builtins.range(d)))
    return counts, edges


def histogram2d(x, y, bins=10, range=None, weights=None, density=None):
    """Histogram of points (x[i], y[i]): (counts, x_edges, y_edges); see histogramdd."""
    xs, ys = ravel(asarray(x)), ravel(asarray(y))
    if xs.shape != ys.shape:
        raise user_error(ValueError, f"histogram2d: x and y must have the same length, got "
                         f"{xs.aval.str_short()} and {ys.aval.str_short()}")
    if not isinstance(bins, (list, tuple)):  # one int or one edge array for both
        bins = [bins, bins]
    counts, (ex, ey) = histogramdd(lax.concatenate(
        [xs[:, None], ys.astype(xs.dtype)[:, None]], 1), bins, range, weights, density)
    return counts, ex, ey

