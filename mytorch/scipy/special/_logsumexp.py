"""logsumexp, softmax and log_softmax: reductions computed stably (the maximum is
subtracted first)."""

import math

from mytorch import lax
from mytorch.numpy._reduce_util import _axes, _bcast, _cast, _keep, _mask
from mytorch.scipy.special._util import _inexact, _like, _up, _where


def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False, where=None):
    """`log(sum(b * exp(a)))` over `axis`, computed stably (the maximum is subtracted first).

    Args:
      a: an array-like.
      axis: None (all axes), an int or a tuple of ints.
      b: scale factors broadcastable with `a` (entries with b == 0 are ignored).
      keepdims: keep the reduced axes with size 1.
      return_sign: also return the sign of the sum, and the log of its absolute value.
      where: a bool array: only those elements take part.

    Returns:
      The reduction (a float dtype): -inf where everything is -inf (or empty), +inf if an
      element is +inf; with `return_sign`, (log|sum|, sign). Without it a negative sum
      gives NaN (with a zero derivative, as JAX).

    >>> logsumexp(np.array([1000.0, 1000.0], np.float32))
    Array(1000.6932, dtype=float32)
    """
    if b is None:
        (x,) = _inexact("logsumexp", a)
    else:
        x, bv = _inexact("logsumexp", a, b)
        x = _where(lax.ne(bv, _like(bv, 0)), x, _like(x, -math.inf))
    dt, x = x.dtype, _up(x)
    axes = _axes("logsumexp", x, axis)
    if where is not None:
        x = _where(_mask("logsumexp", where, x), x, _like(x, -math.inf))
    # the shift cancels mathematically: stopping its gradient keeps the derivative exactly
    # softmax (no tie-splitting noise) and saves the max's backward pass
    amax = lax.stop_gradient(lax.reduce_max(x, axes))
    amax = _where(lax.is_finite(amax), amax, _like(amax, 0))
    shifted = lax.sub(x, _bcast(_keep(amax, x.shape, axes, True), x.shape))
    e = lax.exp(shifted)
    if b is not None:
        e = lax.mul(e, _cast(bv, x.dtype, False))
        if where is not None:
            e = _where(_mask("logsumexp", where, e), e, _like(e, 0))
    s = lax.reduce_sum(e, axes)
    sign = lax.sign(s)
    out = lax.add(lax.log(lax.abs(s) if b is not None else s), amax)
    if b is not None and not return_sign:  # log of a negative sum: NaN, as JAX
        out = _where(lax.lt(sign, _like(sign, 0)), _like(out, math.nan), out)
    out = _cast(_keep(out, x.shape, axes, keepdims), dt, False)
    if return_sign:
        return out, _cast(_keep(sign, x.shape, axes, keepdims), dt, False)
    return out


def _max_keep(x, axes):
    m = lax.stop_gradient(lax.reduce_max(x, axes))  # a shift that cancels: no derivative
    return _bcast(_keep(m, x.shape, axes, True), x.shape)


def softmax(x, /, *, axis=None):
    """`exp(x) / sum(exp(x))` over `axis` (None: all axes, as SciPy and JAX), computed
    stably.

    Args:
      x: an array-like.
      axis: None, an int or a tuple of ints.

    Returns:
      An array of x's shape (a float dtype) whose entries sum to 1 over `axis`.
    """
    (v,) = _inexact("softmax", x)
    dt, v = v.dtype, _up(v)
    axes = _axes("softmax", v, axis)
    e = lax.exp(lax.sub(v, _max_keep(v, axes)))
    total = _bcast(_keep(lax.reduce_sum(e, axes), v.shape, axes, True), v.shape)
    return _cast(lax.div(e, total), dt, False)


def log_softmax(x, /, *, axis=None):
    """`x - logsumexp(x)` over `axis` (None: all axes), computed stably; x's shape."""
    (v,) = _inexact("log_softmax", x)
    dt, v = v.dtype, _up(v)
    axes = _axes("log_softmax", v, axis)
    shifted = lax.sub(v, _max_keep(v, axes))
    lse = lax.log(lax.reduce_sum(lax.exp(shifted), axes))
    return _cast(lax.sub(shifted, _bcast(_keep(lse, v.shape, axes, True), v.shape)), dt, False)
