"""1-D signal helpers: convolve, correlate, interp and gradient.

convolve/correlate compute in floating point (integer inputs give the default float, as in
JAX) through lax's convolution primitive, so they differentiate and batch like any op.
"""

import operator

from mytorch import lax
from mytorch.core import dtypes
from mytorch.core.source_info import user_error
from mytorch.numpy._promote import promote_dtypes
from mytorch.numpy.creation import asarray, full
from mytorch.numpy.joining import concatenate
from mytorch.numpy.sorting import searchsorted

__all__ = ["convolve", "correlate", "interp", "gradient"]


def _inexact(name, *args):
    xs = promote_dtypes(name, *[asarray(a) for a in args])
    if not dtypes.is_inexact(xs[0].dtype):
        xs = [lax.convert_element_type(x, dtypes.default_float()) for x in xs]
    return xs


def _check_1d(name, **arrays):
    for what, x in arrays.items():
        if x.ndim != 1:
            raise user_error(ValueError, f"{name}: {what} must be 1-D, got {x.aval.str_short()}")
        if x.shape[0] == 0:
            raise user_error(ValueError, f"{name}: {what} cannot be empty")


def _correlate_full(a, v, precision):
    """Full cross-correlation of 1-D `a` (length n) and `v` (length m): out[k] =
    sum_j a[k + j - (m - 1)] * v[j], length n + m - 1."""
    n, m = a.shape[0], v.shape[0]
    out = lax.conv_general_dilated(lax.reshape(a, (1, 1, n)), lax.reshape(v, (1, 1, m)), (1,),
                                   [(m - 1, m - 1)], precision=precision)
    return lax.reshape(out, (n + m - 1,))


def _mode_slice(full_, n, m, mode, name):
    """NumPy's 'full' / 'same' / 'valid' windows of a full convolution of lengths n, m."""
    if mode == "full":
        return full_
    if mode == "same":
        start = (min(n, m) - 1) // 2
        return full_[start:start + max(n, m)]
    if mode == "valid":
        return full_[min(n, m) - 1:max(n, m)]
    raise user_error(ValueError, f"{name}: mode must be 'full', 'same' or 'valid', got {mode!r}")


def convolve(a, v, mode="full", *, precision=None, preferred_element_type=None):
    """Discrete linear convolution of two 1-D arrays (lengths n and m).

    Returns a 1-D float array of length n + m - 1 ('full'), max(n, m) ('same') or
    max(n, m) - min(n, m) + 1 ('valid'), as NumPy.
    """
    del preferred_element_type
    x, k = _inexact("convolve", a, v)
    _check_1d("convolve", a=x, v=k)
    n, m = x.shape[0], k.shape[0]
    full_ = _correlate_full(x, lax.rev(k, (0,)), precision)
    return _mode_slice(full_, n, m, mode, "convolve")


def correlate(a, v, mode="valid", *, precision=None, preferred_element_type=None):
    """Cross-correlation of two 1-D arrays: c[k] = sum_n a[n + k] * conj(v[n]), in NumPy's
    'valid' (default), 'same' or 'full' window; a float array."""
    del preferred_element_type
    x, k = _inexact("correlate", a, v)
    _check_1d("correlate", a=x, v=k)
    if dtypes.is_complex(k.dtype):  # NumPy's definition conjugates v
        k = lax.conj(k)
    n, m = x.shape[0], k.shape[0]
    full_ = _correlate_full(x, k, precision)
    if n >= m:
        return _mode_slice(full_, n, m, mode, "correlate")
    # NumPy swaps the operands, takes the window, and reverses the result
    return lax.rev(_mode_slice(lax.rev(full_, (0,)), n, m, mode, "correlate"), (0,))


def interp(x, xp, fp, left=None, right=None, period=None):
    """Piecewise-linear interpolation of the points (xp, fp) at `x` (any shape).

    Args:
      x: where to evaluate.
      xp: increasing 1-D sample positions (not checked, as in NumPy); with `period`,
        any order.
      fp: 1-D sample values, same length as xp.
      left, right: values below xp[0] / above xp[-1] (default fp[0] / fp[-1]).
      period: for periodic data: x and xp are taken modulo `period`.
    Returns:
      A float array of x's shape.
    """
    x, xp, fp = _inexact("interp", x, xp, fp)
    _check_1d("interp", xp=xp, fp=fp)
    if xp.shape != fp.shape:
        raise user_error(ValueError, f"interp: xp and fp must have the same length, got "
                         f"{xp.aval.str_short()} and {fp.aval.str_short()}")
    if period is not None:
        if left is not None or right is not None:
            raise user_error(ValueError, "interp: left and right cannot be given with period")
        period = abs(asarray(period).astype(x.dtype))
        x, xp = x % period, xp % period
        order = lax.sort((xp, fp), dimension=0, num_keys=1)
        xp = concatenate([order[0][-1:] - period, order[0], order[0][:1] + period])
        fp = concatenate([order[1][-1:], order[1], order[1][:1]])
    n = xp.shape[0]
    i = searchsorted(xp, x, side="right")
    i = lax.clamp(full(i.shape, 1, dtype=i.dtype), i, full(i.shape, max(n - 1, 1), i.dtype))
    x0, x1, f0, f1 = xp[i - 1], xp[i] if n > 1 else xp[i - 1], fp[i - 1], \
        fp[i] if n > 1 else fp[i - 1]
    dx = x1 - x0
    safe = lax.select_n(dx == 0, dx, lax.full_like(dx, 1))  # equal xp: no division by 0
    t = lax.select_n(dx == 0, (x - x0) / safe, lax.full_like(dx, 0))
    out = f0 + t * (f1 - f0)
    if period is None:
        lo = fp[0] if left is None else asarray(left).astype(out.dtype)
        hi = fp[-1] if right is None else asarray(right).astype(out.dtype)
        out = lax.select_n(x < xp[0], out, lax.full_like(out, 0) + lo)
        out = lax.select_n(x > xp[-1], out, lax.full_like(out, 0) + hi)
    return out


def _spacings(name, varargs, axes, f):
    """One spacing per axis: a scalar step or a coordinate array of the axis's length."""
    if not varargs:
        return [1.0] * len(axes)
    if len(varargs) == 1 and len(axes) > 1 and asarray(varargs[0]).ndim == 0:
        return list(varargs) * len(axes)
    if len(varargs) != len(axes):
        raise user_error(TypeError,
                         f"gradient: expected 0, 1 or {len(axes)} spacings (one per axis), "
                        f"got {len(varargs)}")
    out = []
    for h, ax in zip(varargs, axes, strict=True):
        h = asarray(h)
        if h.ndim == 1 and h.shape[0] != f.shape[ax]:
            raise user_error(ValueError, f"gradient: the coordinates for axis {ax} have length "
                             f"{h.shape[0]}, but that axis has length {f.shape[ax]}")
        if h.ndim > 1:
            raise user_error(ValueError, f"{name}: a spacing must be a scalar or 1-D, got "
                             f"{h.aval.str_short()}")
        out.append(h)
    return out


def _shape_for(h, ax, ndim):
    return lax.reshape(h, tuple(h.shape[0] if i == ax else 1 for i in range(ndim))) \
        if h.ndim else h


def _gradient_1axis(f, h, ax, edge_order):
    n = f.shape[ax]
    if n < edge_order + 1:
        raise user_error(ValueError, f"gradient: axis {ax} needs at least {edge_order + 1} "
                         f"samples for edge_order={edge_order}, got shape {f.shape}")
    at = lambda lo, hi: lax.slice_in_dim(f, lo, hi, axis=ax)  # noqa: E731
    h = asarray(h).astype(f.dtype)
    dx = lax.broadcast_in_dim(h, (n - 1,), ()) if h.ndim == 0 else h[1:] - h[:-1]
    step = lambda lo, hi: _shape_for(dx[lo:hi], ax, f.ndim)  # noqa: E731
    a, b = step(None, -1), step(1, None)
    inner = (a * a * at(2, None) - b * b * at(None, -2) + (b * b - a * a) * at(1, -1)) \
        / (a * b * (a + b))
    if edge_order == 1:
        first = (at(1, 2) - at(0, 1)) / step(0, 1)
        last = (at(-1, None) - at(-2, -1)) / step(-1, None)
    else:  # NumPy's second-order one-sided formulas for uneven spacings
        p, q = step(0, 1), step(1, 2)
        first = (-(2 * p + q) / (p * (p + q)) * at(0, 1) + (p + q) / (p * q) * at(1, 2)
                 - p / (q * (p + q)) * at(2, 3))
        p, q = step(-2, -1), step(-1, None)
        last = (q / (p * (p + q)) * at(-3, -2) - (p + q) / (p * q) * at(-2, -1)
                + (2 * q + p) / (q * (p + q)) * at(-1, None))
    return concatenate([first, inner, last], axis=ax)


def gradient(f, *varargs, axis=None, edge_order=None):
    """The gradient of the sampled function `f` by second-order central differences inside
    and one-sided differences of order `edge_order` at the ends, as NumPy.

    Args:
      f: an N-d array of samples.
      varargs: the spacing: none (1), one scalar for every axis, or one scalar or 1-D
        coordinate array per axis in `axis`.
      axis: None (every axis), an int or a tuple of ints.
      edge_order: 1 (default) or 2: the accuracy order of the one-sided differences at the
        ends (2 is NumPy's, beyond what JAX offers).
    Returns:
      One float array of f's shape per axis (a single array when one axis is asked).
    """
    edge_order = 1 if edge_order is None else edge_order
    if edge_order not in (1, 2):
        raise user_error(ValueError, f"gradient: edge_order must be 1 or 2, got {edge_order!r}")
    (x,) = _inexact("gradient", f)
    if axis is None:
        axes = tuple(range(x.ndim))
    elif isinstance(axis, (tuple, list)):
        axes = tuple(operator.index(a) % max(x.ndim, 1) for a in axis)
    else:
        axes = (operator.index(axis) % max(x.ndim, 1),)
    if x.ndim == 0:
        raise user_error(ValueError, "gradient: f must have at least one dimension, got a scalar")
    hs = _spacings("gradient", varargs, axes, x)
    out = [_gradient_1axis(x, h, ax, edge_order) for h, ax in zip(hs, axes, strict=True)]
    return out[0] if len(out) == 1 else out
