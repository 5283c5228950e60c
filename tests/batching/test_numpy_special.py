"""vmap of every function of mytorch.scipy.special against the loop definition: the
elementwise functions over their domains (with NaN/inf), and logsumexp / softmax /
log_softmax with drawn axes, scale factors `b` and `where` masks batched or not."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mytorch.scipy import special
from tests.batching.numpy_vmap_util import Op, shapes_broadcasting_to, vmap_case
from tests.numpy.test_reductions import axis_args
from tests.strategies import shapes

pytestmark = pytest.mark.filterwarnings("ignore:.*encountered in:RuntimeWarning")

# name, value range (None: the default +-1e3), dtypes
_UNARY = [
    ("expit", (-50, 50)), ("logit", (-0.5, 1.5)), ("erf", (-5, 5)), ("erfc", (-5, 10)),
    ("erfinv", (-1.2, 1.2)), ("gammaln", (-10, 30)), ("digamma", (-10, 30)),
    ("ndtr", (-10, 10)), ("ndtri", (-0.2, 1.2)), ("log_ndtr", (-50, 10)), ("entr", (-1, 5)),
    ("i0", (-50, 50)), ("i0e", (-100, 100)), ("i1", (-50, 50)), ("i1e", (-100, 100)),
]
_BINARY = [("betaln", (0.1, 20), (0.1, 20)), ("xlogy", (-3, 3), (-1, 5)),
           ("xlog1py", (-3, 3), (-2, 5)), ("rel_entr", (-1, 5), (-1, 5)),
           ("kl_div", (-1, 5), (-1, 5)), ("zeta", (0.5, 6), (-2, 5))]
_DTYPES = st.sampled_from([np.float32, np.float16, np.int32])


@pytest.mark.parametrize("name, rng", _UNARY, ids=[u[0] for u in _UNARY])
@settings(max_examples=6)
@given(data=st.data())
def test_unary(name, rng, data):
    shape = data.draw(shapes(max_dims=3, max_side=4), label="shape")
    dt = data.draw(_DTYPES, label="dtype")
    kw = {"min_value": rng[0], "max_value": rng[1], "allow_nan": dt != np.int32}
    vmap_case(data, getattr(special, name), [Op(shape, dt, **kw)], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name, r1, r2", _BINARY, ids=[b[0] for b in _BINARY])
@settings(max_examples=8)
@given(data=st.data())
def test_binary(name, r1, r2, data):
    shape = data.draw(shapes(max_dims=3, max_side=3), label="shape")
    s1, s2 = shapes_broadcasting_to(data, shape), shapes_broadcasting_to(data, shape)
    ops = [Op(s, data.draw(_DTYPES), min_value=r[0], max_value=r[1])
           for s, r in ((s1, r1), (s2, r2))]
    vmap_case(data, getattr(special, name), ops, rtol=1e-6, atol=1e-6)


@settings(max_examples=8)
@given(data=st.data())
def test_polygamma(data):
    shape = data.draw(shapes(max_dims=2, max_side=3), label="shape")
    n = data.draw(st.integers(0, 3), label="n")
    vmap_case(data, lambda a: special.polygamma(n, a),
              [Op(shape, min_value=-5, max_value=20)], rtol=1e-6, atol=1e-5)


@settings(max_examples=8)
@given(data=st.data())
def test_multigammaln(data):
    shape = data.draw(shapes(max_dims=2, max_side=3), label="shape")
    d = data.draw(st.integers(1, 3), label="d")
    vmap_case(data, lambda a: special.multigammaln(a, d),
              [Op(shape, min_value=(d - 1) / 2 + 0.1, max_value=20)], rtol=1e-6, atol=1e-5)


@settings(max_examples=10)
@given(data=st.data())
def test_logsumexp(data):
    shape = data.draw(shapes(max_dims=3, max_side=4), label="shape")
    ax = data.draw(axis_args(len(shape)), label="axis")
    keepdims = data.draw(st.booleans(), label="keepdims")
    sign = data.draw(st.booleans(), label="return_sign")
    x = Op(shape, data.draw(st.sampled_from([np.float32, np.float16, np.int8])),
           min_value=-50, max_value=50, allow_inf=True)
    kw = {"axis": ax, "keepdims": keepdims, "return_sign": sign}
    tol = {"rtol": 1e-5, "atol": 1e-4}
    vmap_case(data, lambda a: special.logsumexp(a, **kw), [x], **tol)
    b = Op(shapes_broadcasting_to(data, shape), min_value=-2, max_value=2)
    vmap_case(data, lambda a, b: special.logsumexp(a, b=b, **kw), [x, b], **tol)
    m = Op(shapes_broadcasting_to(data, shape), np.bool_)
    vmap_case(data, lambda a, m: special.logsumexp(a, where=m, **kw), [x, m], **tol)
    vmap_case(data, lambda a, b, m: special.logsumexp(a, b=b, where=m, **kw), [x, b, m],
              **tol)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@settings(max_examples=12)
@given(data=st.data())
def test_softmax(name, data):
    shape = data.draw(shapes(max_dims=3, max_side=4), label="shape")
    ax = data.draw(axis_args(len(shape)), label="axis")
    x = Op(shape, data.draw(st.sampled_from([np.float32, np.float16, np.int32])),
           min_value=-30, max_value=30)
    vmap_case(data, lambda a: getattr(special, name)(a, axis=ax), [x], rtol=1e-5, atol=1e-5)
