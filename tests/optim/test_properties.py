"""Property tests over shapes (scalars and size-0 included), dtypes and non-finite values."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mytorch.numpy as mnp
from mytorch import optim

from ..strategies import arrays, shapes


@settings(max_examples=15)
@given(data=st.data())
def test_adam_one_step_closed_form_any_shape(data):
    shape = data.draw(shapes(max_dims=3, max_side=4))
    p = data.draw(arrays(np.float32, shape, min_value=-10, max_value=10))
    g = data.draw(arrays(np.float32, shape, min_value=-10, max_value=10))
    opt = optim.adam(0.1)
    u, state = opt.update(mnp.asarray(g), opt.init(mnp.asarray(p)))
    g64 = g.astype(np.float64)
    m, v = 0.1 * g64 / 0.1, 0.001 * g64 * g64 / 0.001  # bias-corrected first step
    expected = -0.1 * m / (np.sqrt(v) + 1e-8)
    assert u.shape == shape and u.dtype == mnp.float32
    np.testing.assert_allclose(np.asarray(u), expected, rtol=1e-5, atol=1e-6)
    new = optim.apply_updates(mnp.asarray(p), u)
    np.testing.assert_allclose(np.asarray(new), p + np.asarray(u), rtol=1e-6)
    assert int(state[0].count) == 1


@settings(max_examples=15)
@given(data=st.data(), max_norm=st.floats(0.01, 100.0))
def test_clip_by_global_norm_bounds_the_norm(data, max_norm):
    shps = data.draw(st.lists(shapes(max_dims=2, max_side=4), min_size=1, max_size=3))
    leaves = [data.draw(arrays(np.float32, s, min_value=-100, max_value=100)) for s in shps]
    u, _ = optim.clip_by_global_norm(max_norm).update([mnp.asarray(x) for x in leaves], ())
    norm = np.sqrt(sum(np.sum(x.astype(np.float64) ** 2) for x in leaves))
    scale = 1.0 if norm < max_norm else max_norm / norm
    for out, x in zip(u, leaves, strict=True):
        with np.errstate(under="ignore"):  # subnormal draws in the comparison itself
            np.testing.assert_allclose(np.asarray(out), x * scale, rtol=1e-5, atol=1e-6)
    assert float(optim.global_norm(u)) <= max_norm * (1 + 1e-5) or norm < max_norm


@settings(max_examples=15)
@given(data=st.data())
def test_apply_if_finite_zeroes_exactly_the_non_finite_steps(data):
    shape = data.draw(shapes(min_dims=1, max_dims=2, min_side=1, max_side=4))
    g = data.draw(arrays(np.float32, shape, allow_nan=True, allow_inf=True))
    tx = optim.apply_if_finite(optim.sgd(1.0), max_consecutive_errors=5)
    u, state = tx.update(mnp.asarray(g), tx.init(mnp.zeros(shape)))
    if np.all(np.isfinite(g)):
        np.testing.assert_array_equal(np.asarray(u), -g)
        assert int(state.total_notfinite) == 0
    else:
        np.testing.assert_array_equal(np.asarray(u), np.zeros(shape, np.float32))
        assert int(state.total_notfinite) == 1


@pytest.mark.filterwarnings("ignore:underflow encountered in cast")  # eps=1e-8 in float16
@settings(max_examples=10)
@given(dtype=st.sampled_from([np.float32, "bfloat16", np.float16]),
       shape=shapes(max_dims=2, max_side=3))
def test_optimisers_keep_param_dtypes(dtype, shape):
    p = mnp.ones(shape, dtype)
    for opt in (optim.sgd(0.1, 0.9), optim.adam(0.1), optim.lion(0.1), optim.rmsprop(0.1),
                optim.adagrad(0.1), optim.adamw(0.1)):
        state = opt.init(p)
        u, state = opt.update(mnp.full(shape, 0.5, dtype), state, p)
        new = optim.apply_updates(p, u)
        assert new.dtype == mnp.dtype(dtype) and new.shape == shape
