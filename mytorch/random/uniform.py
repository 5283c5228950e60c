"""Uniform floats and the samplers that transform them: uniform, normal, truncated_normal.

Each draws the same bits as JAX 0.10 and applies JAX's transformation, so uniform draws are
bit-identical to JAX's and the others agree to the rounding of their special functions.
"""

import numpy as np

import mytorch.numpy as mnp
from mytorch import lax
from mytorch.core import dtypes
from mytorch.core.source_info import user_error
from mytorch.random.keys import canonical_shape, check_key, random_bits, split_data

__all__ = ["normal", "truncated_normal", "uniform"]

_UINT = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


def float_dtype(name, dtype):
    """The canonical float dtype named by `dtype` (None: the default float), or an error."""
    try:
        d = dtypes.canonicalize(float if dtype is None else dtype, explicit=dtype is not None)
    except TypeError as err:
        raise user_error(TypeError, f"{name}: {err}") from None
    if not dtypes.is_float(d):
        raise user_error(ValueError, f"{name}: dtype must be a float dtype (float16, "
                         f"bfloat16, float32, float64), got {d}")
    return d


def check_param_shapes(name, shape, *params):
    """`shape` when the parameters' shapes broadcast to it, else a ValueError."""
    shapes = [np.shape(p) for p in params]
    try:
        out = np.broadcast_shapes(shape, *shapes)
    except ValueError:
        out = None
    if out != tuple(shape):
        raise user_error(ValueError, f"{name}: the parameter shapes "
                         f"{', '.join(str(s) for s in shapes)} must broadcast to the requested "
                         f"shape {tuple(shape)}")
    return tuple(shape)


def broadcast_params(*params):
    """The broadcast shape of the parameters' shapes (for `shape=None`)."""
    return tuple(np.broadcast_shapes(*[np.shape(p) for p in params]))


def as_dtype(x, dtype):
    """`x` (array or scalar) converted to `dtype`."""
    return lax.convert_element_type(mnp.asarray(x), dtype)


def uniform_floats(data, shape, dtype):
    """Floats in [0, 1) of `shape` and `dtype`: random mantissa bits under the exponent of
    1.0, minus 1 (JAX's construction; 8 random bits for bfloat16)."""
    finfo = dtypes.finfo(dtype)
    nbits, nmant = finfo.bits, finfo.nmant
    rng_bits = 8 if nmant < 8 else nbits
    udtype = np.dtype(_UINT[nbits])
    raw = random_bits(data, rng_bits, shape)
    if rng_bits != nbits:
        raw = lax.convert_element_type(raw, udtype)
    mant = lax.shift_right_logical(raw, lax.full((), rng_bits - nmant, udtype))
    one = np.array(1.0, dtype).view(udtype)
    floats = lax.bitcast_convert_type(lax.bitwise_or(mant, lax.full((), one, udtype)), dtype)
    return lax.sub(floats, lax.full((), 1.0, dtype))


def _exact_span(minval, maxval, dtype):
    """Whether `u * (maxval - minval)` is exact for static bounds (a power-of-two span)."""
    if not all(isinstance(v, (int, float)) for v in (minval, maxval)):
        return False
    span = float(np.array(maxval, dtype) - np.array(minval, dtype))
    return span > 0 and np.isfinite(span) and np.frexp(span)[0] == 0.5


def _split_float(x, dtype):
    """Veltkamp's split of `x` into a high and a low half, each exactly representable."""
    bits = 27 if dtype == np.float64 else 12
    c = x * float(2**bits + 1)
    hi = c - (c - x)
    return hi, x - hi


def fused_multiply_add(a, b, c, dtype):
    """`a * b + c` rounded once, as XLA's fused multiply-add computes it (so the bounds of
    uniform draws land on JAX's floats): exactly through float32 for 16-bit floats, with
    Dekker's error-free product and Knuth's two-sum for float32 and float64."""
    if dtypes.finfo(dtype).bits == 16:
        wide = [lax.convert_element_type(v, np.float32) for v in (a, b, c)]
        return lax.convert_element_type(wide[0] * wide[1] + wide[2], dtype)
    p = a * b
    a_hi, a_lo = _split_float(a, dtype)
    b_hi, b_lo = _split_float(b, dtype)
    p_err = ((a_hi * b_hi - p) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo
    s = p + c
    v = s - p
    s_err = (p - (s - v)) + (c - v)
    out = s + (s_err + p_err)
    return mnp.where(mnp.isfinite(out), out, s)  # infinite bounds: the plain result


def _uniform(data, shape, dtype, minval, maxval):
    exact = _exact_span(minval, maxval, dtype)
    minval, maxval = as_dtype(minval, dtype), as_dtype(maxval, dtype)
    floats = uniform_floats(data, shape, dtype)
    span = maxval - minval
    out = floats * span + minval if exact else fused_multiply_add(floats, span, minval, dtype)
    return mnp.maximum(minval, mnp.broadcast_to(out, shape))


def uniform(key, shape=(), dtype=None, minval=0.0, maxval=1.0):
    """Uniform floats in `[minval, maxval)`, bit-identical to `jax.random.uniform`.

    Args:
      key: a single key (typed or raw). shape: the result shape (a tuple of ints).
      dtype: a float dtype (default float32, float64 with x64).
      minval, maxval: bounds, arrays broadcastable to `shape`.

    Returns:
      An array of `shape` and `dtype`.

    Raises:
      TypeError/ValueError: a bad key, shape or dtype, or bounds that do not broadcast.

    >>> import mytorch as mt
    >>> mt.random.uniform(mt.random.key(0), (3,))
    Array([0.947667  , 0.9785799 , 0.33229148], dtype=float32)
    """
    data, _ = check_key("uniform", key)
    shape = canonical_shape("uniform", shape)
    dtype = float_dtype("uniform", dtype)
    check_param_shapes("uniform", shape, minval, maxval)
    return _uniform(data, shape, dtype, minval, maxval)


# Giles' single-precision erf_inv ("Approximating the erfinv function", GPU Computing Gems
# Jade, 2011): polynomials in w = -log(1 - x**2), below and above w = 5; the one XLA
# evaluates for JAX's float32 (and, widened, float16/bfloat16) erf_inv
_GILES_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                  0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_GILES_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
               0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


# Giles' double-precision erf_inv: three regions of w, each (upper bound of w, shift of
# the polynomial's variable, whether that variable is sqrt(w), coefficients high to low)
_GILES_DOUBLE = (
    (6.25, 3.125, False, (
        -3.6444120640178196996e-21, -1.685059138182016589e-19, 1.2858480715256400167e-18,
        1.115787767802518096e-17, -1.333171662854620906e-16, 2.0972767875968561637e-17,
        6.6376381343583238325e-15, -4.0545662729752068639e-14, -8.1519341976054721522e-14,
        2.6335093153082322977e-12, -1.2975133253453532498e-11, -5.4154120542946279317e-11,
        1.051212273321532285e-09, -4.1126339803469836976e-09, -2.9070369957882005086e-08,
        4.2347877827932403518e-07, -1.3654692000834678645e-06, -1.3882523362786468719e-05,
        0.0001867342080340571352, -0.00074070253416626697512, -0.0060336708714301490533,
        0.24015818242558961693, 1.6536545626831027356)),
    (16.0, 3.25, True, (
        2.2137376921775787049e-09, 9.0756561938885390979e-08, -2.7517406297064545428e-07,
        1.8239629214389227755e-08, 1.5027403968909827627e-06, -4.013867526981545969e-06,
        2.9234449089955446044e-06, 1.2475304481671778723e-05, -4.7318229009055733981e-05,
        6.8284851459573175448e-05, 2.4031110387097893999e-05, -0.0003550375203628474796,
        0.00095328937973738049703, -0.0016882755560235047313, 0.0024914420961078508066,
        -0.0037512085075692412107, 0.005370914553590063617, 1.0052589676941592334,
        3.0838856104922207635)),
    (np.inf, 5.0, True, (
        -2.7109920616438573243e-11, -2.5556418169965252055e-10, 1.5076572693500548083e-09,
        -3.7894654401267369937e-09, 7.6157012080783393804e-09, -1.4960026627149240478e-08,
        2.9147953450901080826e-08, -6.7711997758452339498e-08, 2.2900482228026654717e-07,
        -9.9298272942317002539e-07, 4.5260625972231537039e-06, -1.9681778105531670567e-05,
        7.5995277030017761139e-05, -0.00021503011930044477347, -0.00013871931833623122026,
        1.0103004648645343977, 4.8499064014085844221)),
)


def _erf_inv64(x):
    """Giles' float64 erf_inv: each region's polynomial by Horner's rule. The steps are
    not fused (emulating a float64 fused multiply-add costs 7x the time), so about 90% of
    draws equal JAX's bitwise and the rest differ in the last bit or two."""
    f64 = np.dtype(np.float64)
    w = -mnp.log1p(-x * x)
    out, lower = None, 0.0
    for upper, shift, use_sqrt, coefficients in _GILES_DOUBLE:
        # sqrt only sees the w of its own regions (w >= lower > 0), so that its infinite
        # slope at w = 0 cannot reach the gradient through the discarded branch
        t = (mnp.sqrt(mnp.maximum(w, lower)) if use_sqrt else w) - shift
        p = lax.full((), coefficients[0], f64)
        for c in coefficients[1:]:
            p = p * t + c
        region = p * x
        out = region if out is None else mnp.where(w < lower, out, region)
        lower = upper
    return mnp.where(mnp.abs(x) == 1.0, lax.stop_gradient(x) * np.inf, out)


def erf_inv(x):
    """erf_inv as JAX computes it: Giles' polynomials, as XLA evaluates them (floats of up
    to 32 bits in float32, with fused Horner steps)."""
    dtype = x.dtype
    if dtype == np.float64:
        return _erf_inv64(x)
    f32 = np.dtype(np.float32)
    x = lax.convert_element_type(x, f32)
    w = -mnp.log1p(-x * x)
    central = w < 5.0
    w = mnp.where(central, w - 2.5, mnp.sqrt(mnp.maximum(w, 5.0)) - 3.0)  # (as above)
    p = mnp.where(central, lax.full((), _GILES_CENTRAL[0], f32),
                  lax.full((), _GILES_TAIL[0], f32))
    for a, b in zip(_GILES_CENTRAL[1:], _GILES_TAIL[1:], strict=True):
        p = fused_multiply_add(p, w, mnp.where(central, lax.full((), a, f32),
                                               lax.full((), b, f32)), f32)
    out = mnp.where(mnp.abs(x) == 1.0, lax.stop_gradient(x) * np.inf, p * x)
    return lax.convert_element_type(out, dtype)


def _normal(data, shape, dtype):
    nmant = dtypes.finfo(dtype).nmant
    lo = -(1.0 - 2.0 ** -(nmant + 1))  # the float just above -1: erf_inv(lo) is finite
    u = _uniform(data, shape, dtype, lo, 1.0)
    return lax.mul(lax.full((), np.sqrt(2), dtype), erf_inv(u))


def normal(key, shape=(), dtype=None):
    """Standard normal floats: `sqrt(2) * erf_inv(u)` of a uniform `u` in (-1, 1), as
    `jax.random.normal` (equal to JAX's up to the rounding of erf_inv). A complex dtype
    gives `(re + 1j * im) / sqrt(2)` of two normals drawn from the key's two halves, as
    JAX: unit variance, E|z|^2 = 1.

    Args:
      key: a single key. shape: the result shape. dtype: a float or complex dtype
        (default float32).

    Returns:
      An array of `shape` and `dtype`.

    >>> import mytorch as mt
    >>> mt.numpy.round(mt.random.normal(mt.random.key(0), (2,)), 4)
    Array([1.6226, 2.0253], dtype=float32)
    """
    data, _ = check_key("normal", key)
    shape = canonical_shape("normal", shape)
    if dtype is not None and dtypes.is_complex(dtypes.to_dtype(dtype)):
        d = dtypes.canonicalize(dtype, explicit=True)
        real = dtypes.real_dtype(d)
        halves = split_data(data, (2,))
        re, im = (_normal(halves[i], shape, real) for i in range(2))
        return lax.div(lax.complex(re, im), np.sqrt(2).astype(real).item())
    return _normal(data, shape, float_dtype("normal", dtype))


def _truncated_normal(data, lower, upper, shape, dtype):
    sqrt2 = lax.full((), np.sqrt(2), dtype)
    lower, upper = as_dtype(lower, dtype), as_dtype(upper, dtype)
    a = lax.erf(lower / sqrt2)
    b = lax.erf(upper / sqrt2)
    u = _uniform(data, shape, dtype, a, b)
    out = sqrt2 * erf_inv(u)
    # keep the results strictly inside (lower, upper), as JAX does
    lo = lax.nextafter(lax.stop_gradient(lower), lax.full_like(lower, np.inf))
    hi = lax.nextafter(lax.stop_gradient(upper), lax.full_like(upper, -np.inf))
    return mnp.clip(out, lo, hi)


def truncated_normal(key, lower, upper, shape=None, dtype=None):
    """Normal floats conditioned on `lower < x < upper`, as `jax.random.truncated_normal`.

    Args:
      key: a single key. lower, upper: bounds (arrays broadcastable to `shape`).
      shape: the result shape (default: the broadcast shape of the bounds).
      dtype: a float dtype (default float32).

    Returns:
      An array of `shape` and `dtype`, strictly inside (lower, upper).

    >>> import mytorch as mt
    >>> mt.random.truncated_normal(mt.random.key(0), -1.0, 1.0, (2,)).shape
    (2,)
    """
    data, _ = check_key("truncated_normal", key)
    dtype = float_dtype("truncated_normal", dtype)
    if shape is None:
        shape = broadcast_params(lower, upper)
    else:
        shape = check_param_shapes("truncated_normal",
                                   canonical_shape("truncated_normal", shape), lower, upper)
    return _truncated_normal(data, lower, upper, shape, dtype)
