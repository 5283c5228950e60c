"""mytorch.scipy.special against float64 references built from `math` and NumPy.

digamma's reference differentiates math.lgamma numerically (Richardson extrapolation);
erfinv's and ndtri's bisect math.erf / math.erfc. float32 results agree to ~1e-6
relative (absolute near zeros of the function).
"""

import math
import warnings

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch.scipy import special
from tests.strategies import arrays, assert_close, axes, axis_tuples, shapes

F16, F32, F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)
BF16 = np.dtype(ml_dtypes.bfloat16)
I32 = np.dtype(np.int32)


def vec(fn):
    """A float64 ufunc from a scalar reference (NaN in, NaN out)."""
    def ref(x, *rest):
        def one(v, *r):
            return math.nan if math.isnan(v) else fn(v, *r)
        return np.vectorize(one, otypes=[np.float64])(np.asarray(x, np.float64), *rest)
    return ref


def _lgamma(v):
    if v <= 0 and v == math.floor(v):
        return math.inf
    return math.lgamma(v)


def _digamma(v):
    if v == 0:  # SciPy: the one-sided limit, by the sign of zero
        return -math.copysign(math.inf, v)
    if v < 0 and v == math.floor(v):
        return math.nan
    if v < 0.5:  # reflection keeps the differences away from the poles
        return _digamma(1 - v) - math.pi / math.tan(math.pi * v)
    if v < 8:  # recurrence psi(v) = psi(v + n) - sum 1 / (v + k), far from the poles
        return _digamma(v + 8) - sum(1 / (v + k) for k in range(8))
    h = 1e-2 * v  # Richardson-extrapolated central differences of lgamma

    def d(s):
        return (math.lgamma(v + s) - math.lgamma(v - s)) / (2 * s)

    d1, d2, d3 = d(h), d(h / 2), d(h / 4)
    r1, r2 = (4 * d2 - d1) / 3, (4 * d3 - d2) / 3
    return (16 * r2 - r1) / 15


def _bisect(f, target, lo, hi, iters=200):
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if f(mid) < target:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def _erfinv(y):
    if abs(y) > 1:
        return math.nan
    if abs(y) == 1:
        return math.copysign(math.inf, y)
    if y < 0:
        return -_erfinv(-y)
    if y > 0.5:  # bisect on erfc for precision near 1: erfc is decreasing
        return _bisect(lambda t: -math.erfc(t), -(1 - y), 0.0, 30.0)
    return _bisect(math.erf, y, 0.0, 30.0)


def _ndtr(v):
    return 0.5 * math.erfc(-v / math.sqrt(2))


def _ndtri(p):
    if p < 0 or p > 1:
        return math.nan
    if p == 0:
        return -math.inf
    if p == 1:
        return math.inf
    if p > 0.5:
        q = 1 - p  # exact for p in [0.5, 1]
        return -_bisect(_ndtr, q, -40.0, 0.0)
    return _bisect(_ndtr, p, -40.0, 0.0)


def _log_ndtr(v):
    if v < -30:
        # log Phi(v) = -v^2/2 - log(-v) - log(2 pi)/2 + log(1 - 1/v^2 + 3/v^4 - 15/v^6)
        s = 1 - 1 / v**2 + 3 / v**4 - 15 / v**6 + 105 / v**8
        return -v * v / 2 - math.log(-v) - 0.5 * math.log(2 * math.pi) + math.log(s)
    if v > 0:
        return math.log1p(-0.5 * math.erfc(v / math.sqrt(2)))
    return math.log(_ndtr(v))


def _logit(v):
    if v < 0 or v > 1:
        return math.nan
    if v == 0:
        return -math.inf
    if v == 1:
        return math.inf
    return math.log(v / (1 - v))


def _entr(v):
    if v > 0:
        return -v * math.log(v)
    return 0.0 if v == 0 else -math.inf


def _expit(v):
    return 1 / (1 + math.exp(-v)) if v >= 0 else math.exp(v) / (1 + math.exp(v))


# name, function, float64 reference, value range, float32 (rtol, atol)
UNARY = [
    ("erf", special.erf, vec(math.erf), (-6, 6), (2e-6, 1e-7)),
    ("erfc", special.erfc, vec(math.erfc), (-3, 9), (4e-6, 1e-30)),
    ("erfinv", special.erfinv, vec(_erfinv), (-1, 1), (2e-6, 1e-6)),
    ("gammaln", special.gammaln, vec(_lgamma), (-20, 40), (2e-6, 2e-6)),
    ("digamma", special.digamma, vec(_digamma), (-10, 60), (2e-6, 4e-6)),
    ("expit", special.expit, vec(_expit), (-80, 80), (2e-6, 1e-30)),
    ("logit", special.logit, vec(_logit), (0, 1), (2e-6, 1e-6)),
    ("entr", special.entr, vec(_entr), (-1, 50), (2e-6, 1e-6)),
    ("ndtr", special.ndtr, vec(_ndtr), (-12, 8), (4e-6, 1e-30)),
    ("ndtri", special.ndtri, vec(_ndtri), (0, 1), (2e-6, 1e-6)),
    ("log_ndtr", special.log_ndtr, vec(_log_ndtr), (-200, 10), (2e-6, 1e-7)),
]


@pytest.mark.parametrize("name,fn,ref,bounds,tol", UNARY, ids=[u[0] for u in UNARY])
@given(data=st.data())
def test_unary_float32(name, fn, ref, bounds, tol, data):
    lo, hi = bounds
    x = data.draw(arrays(F32, shapes(max_dims=2, max_side=6), min_value=lo, max_value=hi,
                         allow_nan=True))
    got = fn(mnp.asarray(x))
    with np.errstate(over="ignore", under="ignore"):
        want = ref(x).astype(F32)  # values beyond float32's range round to +-inf
    rtol, atol = tol
    assert_close(got, want, F32, rtol=rtol, atol=atol)


SPECIAL_POINTS = {
    "erfinv": [-1.0, 1.0, 0.0, 1.5, -1e-30, 0.999999, -0.9999999, 1e-8],
    "ndtri": [0.0, 1.0, 0.5, -0.1, 1.1, 1e-30, 1e-10, 0.02, 0.2499, 0.2501, 0.75, 0.999, 1e-38],
    "gammaln": [0.0, -1.0, -2.5, 1.0, 2.0, 1e-20, 1e20],
    "digamma": [1.0, 0.5, -0.5, 1.4616321, 1e-3, -1e-3, 100.0, 0.0, -0.0, -1.0, -2.0, -100.5],
    "log_ndtr": [-np.inf, np.inf, -1e3, -37.0, -9.0, -9.99, -10.01, -11.0, 0.0, 5.0, 20.0],
    "entr": [0.0, -1.0, np.inf, 1.0, 1e-30],
    "logit": [0.0, 1.0, 0.5, -0.5, 2.0, 1e-20],
    "expit": [-np.inf, np.inf, 0.0, -100.0, 100.0],
    "erfc": [np.inf, -np.inf, 10.0, 0.0],
    "ndtr": [-np.inf, np.inf, -38.0, 0.0, 10.0],
    "erf": [np.inf, -np.inf, 0.0, 1e-30],
}


@pytest.mark.parametrize("name,fn,ref,bounds,tol", UNARY, ids=[u[0] for u in UNARY])
def test_unary_special_points(name, fn, ref, bounds, tol):
    x = np.array(SPECIAL_POINTS[name], F32)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        want = ref(x)
        assert_close(fn(x), want, F32, rtol=tol[0], atol=tol[1])


@pytest.mark.parametrize("name,fn,ref,bounds,tol", UNARY, ids=[u[0] for u in UNARY])
def test_unary_dtypes_and_tracing(name, fn, ref, bounds, tol):
    lo, hi = bounds
    x = np.linspace(max(lo, -5) + 0.01, min(hi, 5) - 0.01, 7).astype(F32)
    for dt in (F16, BF16):
        got = fn(mnp.asarray(x.astype(dt)))
        want = ref(x.astype(dt))
        assert_close(got, want, dt, rtol=2e-2 if dt == BF16 else 2e-3, atol=1e-2)
    assert fn(mnp.asarray(np.array([1, 2], np.int32))).dtype == F32
    closed = mt.make_jaxpr(fn)(x)
    assert_close(closed(x)[0], np.asarray(fn(mnp.asarray(x))), F32)


def test_unary_float64(x64):
    x = np.linspace(-3.0, 3.0, 13)
    assert_close(special.erf(x), vec(math.erf)(x), F64, rtol=1e-14, atol=1e-15)
    p = np.array([1e-300, 1e-20, 1e-5, 0.1, 0.3, 0.5, 0.7, 0.9, 1 - 1e-12])
    assert_close(special.ndtri(p), vec(_ndtri)(p), F64, rtol=1e-12, atol=1e-14)
    v = np.array([-40.0, -25.0, -5.0, 0.0, 3.0])
    assert_close(special.log_ndtr(v), vec(_log_ndtr)(v), F64, rtol=1e-12)
    assert_close(special.gammaln(np.array([0.5, 3.0, 10.5])),
                 vec(math.lgamma)(np.array([0.5, 3.0, 10.5])), F64, rtol=1e-13)


# ---- binary functions -------------------------------------------------------------------
def _xlogy(x, y):
    if math.isnan(y) or math.isnan(x):
        return math.nan
    if x == 0:
        return 0.0
    if y == 0:
        return -math.inf * math.copysign(1, x)
    return x * math.log(y) if y > 0 else math.nan


def _xlog1py(x, y):
    if math.isnan(y) or math.isnan(x):
        return math.nan
    if x == 0:
        return 0.0
    if y == -1:
        return -math.inf * math.copysign(1, x)
    return x * math.log1p(y) if y > -1 else math.nan


def _rel_entr(p, q):
    if math.isnan(p) or math.isnan(q):
        return math.nan
    if p > 0 and q > 0:
        return p * math.log(p / q)
    return 0.0 if p == 0 and q >= 0 else math.inf


def _kl_div(p, q):
    r = _rel_entr(p, q)
    return r - p + q if math.isfinite(r) else r


BINARY = [
    ("xlogy", special.xlogy, _xlogy, (-2, 5)),
    ("xlog1py", special.xlog1py, _xlog1py, (-1, 5)),
    ("rel_entr", special.rel_entr, _rel_entr, (-1, 5)),
    ("kl_div", special.kl_div, _kl_div, (-1, 5)),
    ("betaln", special.betaln,
     lambda a, b: math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b), (0.125, 30)),
]


@pytest.mark.parametrize("name,fn,ref,bounds", BINARY, ids=[b[0] for b in BINARY])
@given(data=st.data())
def test_binary(name, fn, ref, bounds, data):
    lo, hi = bounds
    shape = data.draw(shapes(max_dims=2, max_side=4))
    special_vals = st.sampled_from([0.0, lo, 1.0]) if name != "betaln" else \
        st.sampled_from([1.0, 2.5])
    elems = st.one_of(st.floats(lo, hi, width=32), special_vals)
    x = data.draw(arrays(F32, shape, elements=elems))
    y = data.draw(arrays(F32, data.draw(st.sampled_from([shape, shape[1:], ()])),
                         elements=elems))
    got = fn(mnp.asarray(x), mnp.asarray(y))
    xb, yb = np.broadcast_arrays(x.astype(F64), y.astype(F64))
    want = np.vectorize(ref, otypes=[F64])(xb, yb) if xb.size else np.zeros(xb.shape)
    assert_close(got, want, F32, rtol=4e-6, atol=1e-5)


def test_binary_special_cases():
    assert_close(special.xlogy(0.0, 0.0), np.float32(0), F32)
    assert_close(special.xlogy(np.float32(0), np.float32(np.nan)), np.float32(np.nan), F32)
    assert_close(special.xlog1py(np.float32(0), np.float32(-1)), np.float32(0), F32)
    assert_close(special.xlogy(np.int32(2), np.int32(3)), np.float32(2 * math.log(3)), F32)
    assert special.xlogy(np.float16(1), np.float16(2)).dtype == F16
    got = special.multigammaln(np.array([2.5, 4.0], F32), 3)

    def ref(a):
        return 3 * 2 / 4 * math.log(math.pi) + sum(math.lgamma(a - j / 2) for j in range(3))

    assert_close(got, np.array([ref(2.5), ref(4.0)]), F32, rtol=2e-6)
    with pytest.raises(ValueError, match="d must be a positive Python int"):
        special.multigammaln(np.float32(3), 0)


# ---- logsumexp, softmax ------------------------------------------------------------------
def ref_logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False):
    a = np.asarray(a, F64)
    if b is not None:
        a, b = np.broadcast_arrays(a, np.asarray(b, F64))
        a = np.where(b != 0, a, -np.inf)
    with np.errstate(all="ignore"):
        m = np.max(a, axis=axis, keepdims=True, initial=-np.inf)
        m = np.where(np.isfinite(m), m, 0)
        e = np.exp(a - m) if b is None else b * np.exp(a - m)
        s = np.sum(e, axis=axis, keepdims=True)
        sign = np.sign(s)
        out = np.log(np.abs(s) if return_sign else s) + m
    if not keepdims:
        out = np.squeeze(out, axis=axis if axis is not None else None) if out.ndim else out
        sign = np.squeeze(sign, axis=axis if axis is not None else None) if sign.ndim else sign
    return (out, sign) if return_sign else out


@given(data=st.data())
def test_logsumexp(data):
    dt = data.draw(st.sampled_from([F32, F16, BF16, I32]))
    x = data.draw(arrays(dt, shapes(max_dims=3), min_value=-50, max_value=50,
                         allow_nan=dt == F32 and data.draw(st.booleans()),
                         allow_inf=dt != I32))
    if x.dtype.kind == "f" or x.dtype == BF16:
        x = x + np.asarray(1000 if data.draw(st.booleans()) else 0, x.dtype)
    ax = data.draw(st.one_of(axes(x.ndim), axis_tuples(x.ndim)))
    keepdims = data.draw(st.booleans())
    use_b = data.draw(st.booleans())
    b = data.draw(arrays(F32, x.shape, min_value=-2, max_value=2)) if use_b else None
    sign = data.draw(st.booleans())
    got = special.logsumexp(mnp.asarray(x), axis=ax, b=None if b is None else mnp.asarray(b),
                            keepdims=keepdims, return_sign=sign)
    ref_ax = None if x.ndim == 0 else ax
    want = ref_logsumexp(x.astype(F64), ref_ax, b, keepdims, sign)
    out_dt = F32 if dt == I32 or use_b else dt
    tol = dict(rtol=1e-5, atol=1e-4) if out_dt == F32 else {}
    if sign:
        assert_close(got[0], want[0], out_dt, **tol)
        assert_close(got[1], want[1], out_dt)
    else:
        assert_close(got, want, out_dt, **tol)


def test_logsumexp_special_values():
    inf, nan = np.inf, np.nan
    x = np.array([[-inf, -inf], [inf, 1.0], [inf, -inf], [nan, 1.0], [1e4, 1e4]], F32)
    want = np.array([-inf, inf, inf, nan, 1e4 + math.log(2)], F32)
    assert_close(special.logsumexp(x, axis=1), want, F32)
    assert_close(special.logsumexp(np.zeros((0, 3), F32), axis=0), np.full(3, -inf, F32), F32)
    # b == 0 removes an element, even an infinite one
    assert_close(special.logsumexp(np.array([inf, 0.0], F32), b=np.array([0.0, 1.0], F32)),
                 np.float32(0), F32)
    out, sign = special.logsumexp(np.array([0.0, 0.0], F32), b=np.array([1.0, -2.0], F32),
                                  return_sign=True)
    assert_close(out, np.float32(0), F32)
    assert_close(sign, np.float32(-1), F32)
    assert np.isnan(np.asarray(special.logsumexp(np.array([0.0, 0.0], F32),
                                                 b=np.array([1.0, -2.0], F32))))
    w = np.array([[True, False], [False, False]])
    got = special.logsumexp(np.array([[1.0, 5.0], [2.0, 3.0]], F32), axis=1, where=w)
    assert_close(got, np.array([1.0, -inf], F32), F32)
    with pytest.raises(ValueError, match="logsumexp: axis 2 is out of bounds"):
        special.logsumexp(np.ones((2, 2), F32), axis=2)


@pytest.mark.parametrize("fn,log", [(special.softmax, False), (special.log_softmax, True)])
@given(data=st.data())
def test_softmax(fn, log, data):
    dt = data.draw(st.sampled_from([F32, F16, I32]))
    x = data.draw(arrays(dt, shapes(max_dims=3, min_side=1), min_value=-60, max_value=60))
    ax = data.draw(st.one_of(axes(x.ndim), axis_tuples(x.ndim).filter(bool)))
    if dt == F32:
        x = x + np.float32(500)  # large values: the maximum must be subtracted first
    got = fn(mnp.asarray(x), axis=ax)
    xf = x.astype(F64)
    ref_ax = None if x.ndim == 0 else ax
    m = np.max(xf, axis=ref_ax, keepdims=True)
    lse = np.log(np.sum(np.exp(xf - m), axis=ref_ax, keepdims=True)) + m
    want = xf - lse if log else np.exp(xf - lse)
    out = F32 if dt == I32 else dt
    assert_close(got, want, out, **({"rtol": 1e-5, "atol": 1e-5} if out == F32 else {}))


def test_softmax_default_axis_is_all_axes():
    x = np.array([[1.0, 2.0], [3.0, 4.0]], F32)
    got = np.asarray(special.softmax(x))
    assert abs(got.sum() - 1) < 1e-6
    assert_close(special.log_softmax(x, axis=-1),
                 x - np.log(np.exp(x).sum(-1, keepdims=True)), F32)


def test_logsumexp_and_softmax_trace():
    x = np.array([[1.0, 2.0, -np.inf], [3.0, 4.0, 0.5]], F32)
    for f in (lambda v: special.logsumexp(v, axis=1, b=v * 0 + 2.0),
              lambda v: special.logsumexp(v, return_sign=True),
              lambda v: special.softmax(v, axis=1),
              lambda v: special.log_softmax(v, axis=0),
              lambda v: special.xlogy(v, v + 5.0),
              lambda v: special.betaln(mnp.abs(v) + 1.0, 2.0),
              lambda v: special.multigammaln(mnp.abs(v) + 2.0, 2)):
        closed = mt.make_jaxpr(f)(x)
        eager = f(mnp.asarray(x))
        eager = eager if isinstance(eager, tuple) else (eager,)
        for t, e in zip(closed(x), eager, strict=True):
            assert_close(t, np.asarray(e), e.dtype)


def test_module_layout():
    import mytorch.scipy

    assert mytorch.scipy.special is special
    assert set(special.__all__) >= {"logsumexp", "softmax", "erf", "ndtri", "gammaln"}
