"""mt.nn pooling modules against a NumPy sliding-window reference, JAX's max-pool gradient
(ties go to the first maximum; numbers written literally) and FD gradients."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch import lax
from tests.autodiff.fd import check_grads


def np_pool(x, kind, k, s, pads, use_ceil=False):
    """Reference pooling over the trailing len(k) dims of x (padding holds the identity)."""
    n = len(k)
    lead = x.ndim - n
    pads = list(pads)
    for i in range(n):
        lo, hi = pads[i]
        rem = (x.shape[lead + i] + lo + hi - k[i]) % s[i]
        if use_ceil and rem:
            pads[i] = (lo, hi + s[i] - rem)
    fill = -np.inf if kind == "max" else 0.0
    xp = np.pad(x.astype(np.float64), [(0, 0)] * lead + pads, constant_values=fill)
    out_sp = [(xp.shape[lead + i] - k[i]) // s[i] + 1 for i in range(n)]
    out = np.empty(x.shape[:lead] + tuple(out_sp))
    for idx in itertools.product(*[range(o) for o in out_sp]):
        win = xp[(Ellipsis,) + tuple(slice(j * s[i], j * s[i] + k[i]) for i, j in
                                     enumerate(idx))]
        win = win.reshape(x.shape[:lead] + (-1,))
        out[(Ellipsis,) + idx] = win.max(-1) if kind == "max" else win.sum(-1) / np.prod(k)
    return out


CONFIGS = [  # cls, kernel, stride, padding, use_ceil, spatial
    (mt.nn.MaxPool1d, 2, 2, 0, False, (7,)),
    (mt.nn.MaxPool1d, 3, 2, 1, True, (8,)),
    (mt.nn.AvgPool1d, 3, 1, ((1, 2),), False, (5,)),
    (mt.nn.MaxPool2d, 2, 2, 0, False, (6, 5)),
    (mt.nn.MaxPool2d, (3, 2), (2, 1), ((1, 1), (0, 1)), True, (7, 4)),
    (mt.nn.AvgPool2d, 2, 2, 1, False, (5, 5)),
    (mt.nn.AvgPool2d, 3, 2, 0, True, (6, 6)),
    (mt.nn.MaxPool3d, 2, 1, 0, False, (3, 3, 2)),
    (mt.nn.AvgPool3d, 2, 2, (1, 0, 0), False, (3, 4, 2)),
]


def _explicit(padding, n):
    if isinstance(padding, int):
        return [(padding, padding)] * n
    return [p if isinstance(p, tuple) else (p, p) for p in padding]


def _tuple(v, n):
    return tuple(v) if isinstance(v, tuple) else (v,) * n


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("batched", [False, True])
def test_pool_matches_numpy(config, batched):
    cls, k, s, padding, use_ceil, spatial = config
    pool = cls(k, s, padding, use_ceil)
    n = pool.num_spatial_dims
    x = np.random.default_rng(0).standard_normal((2, 3, *spatial)).astype(np.float32)
    kind = "max" if "Max" in cls.__name__ else "avg"
    want = np_pool(x, kind, _tuple(k, n), _tuple(s, n), _explicit(padding, n), use_ceil)
    got = pool(x) if batched else mnp.stack([pool(x[0]), pool(x[1])])
    assert got.shape == want.shape
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-6)


@settings(max_examples=20)
@given(length=st.integers(1, 9), k=st.integers(1, 4), stride=st.integers(1, 3),
       pad=st.integers(0, 2), use_ceil=st.booleans(), kind=st.sampled_from(["max", "avg"]))
def test_pool1d_hypothesis(length, k, stride, pad, use_ceil, kind):
    pad = min(pad, k)
    if length + 2 * pad < k:
        return  # the kernel does not fit: an error, tested below
    cls = mt.nn.MaxPool1d if kind == "max" else mt.nn.AvgPool1d
    x = np.random.default_rng(length).standard_normal((2, length)).astype(np.float32)
    want = np_pool(x, kind, (k,), (stride,), [(pad, pad)], use_ceil)
    np.testing.assert_allclose(np.asarray(cls(k, stride, pad, use_ceil)(x)), want,
                               rtol=1e-5, atol=1e-6)


def test_defaults_and_fields():
    pool = mt.nn.MaxPool2d(3)
    assert pool.stride == (1, 1) and pool.padding == ((0, 0), (0, 0)) and not pool.use_ceil
    assert pool(mnp.ones((2, 5, 5))).shape == (2, 3, 3)  # Equinox's stride default: 1
    general = mt.nn.Pool(0, lax.add, 1, 2, 2)
    np.testing.assert_array_equal(np.asarray(general(mnp.array([[1.0, 2.0, 3.0, 4.0]]))),
                                  [[3.0, 7.0]])
    low = mt.nn.Pool(np.inf, lax.min, 1, 2, 1, padding=1)
    np.testing.assert_array_equal(np.asarray(low(mnp.array([[2.0, 1.0, 3.0]]))),
                                  [[2.0, 1.0, 1.0, 3.0]])


def test_integer_and_nan_inputs():
    x = mnp.array([[3, -7, 2, 9, 1]], dtype=mnp.int32)
    out = mt.nn.MaxPool1d(2, 2, padding=1)(x)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(out), [[3, 2, 9]])
    nan = mt.nn.MaxPool1d(2, 2)(mnp.array([[1.0, np.nan, 2.0, 3.0]]))
    assert np.isnan(np.asarray(nan)[0, 0]) and np.asarray(nan)[0, 1] == 3.0
    assert mt.nn.AvgPool2d(2)(mnp.ones((0, 3, 3))).shape == (0, 2, 2)


def test_max_pool_gradient_ties_go_to_first():
    # jax.grad(lambda x: lax.reduce_window(x, -inf, lax.max, (2,), (1,), 'VALID').sum())
    g = mt.grad(lambda x: mt.nn.MaxPool1d(2)(x).sum())(mnp.array([[1.0, 3.0, 3.0, 2.0]]))
    np.testing.assert_array_equal(np.asarray(g), [[0.0, 2.0, 1.0, 0.0]])
    # jax.grad of a padded 2x2 max pool over ones(1, 2, 2) with padding 1: [[4, 2], [2, 1]]
    g2 = mt.grad(lambda x: mt.nn.MaxPool2d(2, padding=1)(x).sum())(mnp.ones((1, 2, 2)))
    np.testing.assert_array_equal(np.asarray(g2), [[[4.0, 2.0], [2.0, 1.0]]])


@pytest.mark.parametrize("pool", [mt.nn.MaxPool2d(2, 1, padding=1), mt.nn.AvgPool2d(3, 2, 1),
                                  mt.nn.AdaptiveAvgPool2d((2, 3)),
                                  mt.nn.AdaptiveMaxPool2d(2)], ids=repr)
def test_grads_fd(pool, x64):
    x = np.random.default_rng(3).permutation(2 * 5 * 6).reshape(2, 5, 6) / 7.0  # no ties
    check_grads(pool, (x,), order=1)


@pytest.mark.parametrize("pool", [mt.nn.MaxPool2d(2, 2), mt.nn.AvgPool1d(2, 1, 1, True),
                                  mt.nn.AdaptiveMaxPool1d(3)], ids=repr)
def test_jit_vmap_agree(pool):
    n = pool.num_spatial_dims
    xs = np.random.default_rng(1).standard_normal((3, 2) + (7,) * n).astype(np.float32)
    eager = np.stack([np.asarray(pool(x)) for x in xs])
    np.testing.assert_allclose(np.asarray(mt.jit(pool)(xs[0])), eager[0], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(mt.vmap(pool)(xs)), eager, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(pool(xs)), eager, rtol=1e-6)


def _np_adaptive(x, target, reduce):
    for i, t in enumerate(target):
        axis = x.ndim - len(target) + i
        n = x.shape[axis]
        q, r = divmod(n, t)
        sizes = [q + 1] * r + [q] * (t - r)
        bounds = np.cumsum([0] + sizes)
        x = np.stack([reduce(np.take(x, range(a, b), axis=axis), axis=axis)
                      for a, b in itertools.pairwise(bounds)], axis=axis)
    return x


@pytest.mark.parametrize("cls,reduce", [(mt.nn.AdaptiveAvgPool2d, np.mean),
                                        (mt.nn.AdaptiveMaxPool2d, np.max)])
@pytest.mark.parametrize("target,spatial", [((2, 3), (5, 7)), (3, (3, 9)), ((1, 4), (4, 4))])
def test_adaptive_matches_numpy(cls, reduce, target, spatial):
    x = np.random.default_rng(2).standard_normal((2, 3, *spatial)).astype(np.float32)
    pool = cls(target)
    want = _np_adaptive(x.astype(np.float64), _tuple(target, 2), reduce)
    np.testing.assert_allclose(np.asarray(pool(x)), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(pool(x[1])), want[1], rtol=1e-5, atol=1e-6)


def test_adaptive_divisible_matches_torch_numbers():
    x = np.arange(16.0, dtype=np.float32).reshape(1, 4, 4)
    # torch.nn.functional.adaptive_avg_pool2d(x, 2) and adaptive_max_pool2d(x, 2)
    np.testing.assert_allclose(np.asarray(mt.nn.AdaptiveAvgPool2d(2)(x)),
                               [[[2.5, 4.5], [10.5, 12.5]]])
    np.testing.assert_allclose(np.asarray(mt.nn.AdaptiveMaxPool2d(2)(x)),
                               [[[5.0, 7.0], [13.0, 15.0]]])
    assert mt.nn.AdaptiveAvgPool1d(2)(mnp.ones((3, 5))).shape == (3, 2)
    assert mt.nn.AdaptiveMaxPool3d(1)(mnp.ones((2, 3, 2, 2))).shape == (2, 1, 1, 1)


def test_pool_errors():
    with pytest.raises(ValueError, match=r"MaxPool2d expected an input of shape \(C, d1, d2\)"
                                         r" or \(N, C, d1, d2\), got f32\[5\] at "
                                         r"test_pooling.py:\d+"):
        mt.nn.MaxPool2d(2)(mnp.ones(5))
    with pytest.raises(ValueError, match=r"AvgPool1d expected .* got f32\[1,2,3,4\]"):
        mt.jit(mt.nn.AvgPool1d(2))(mnp.ones((1, 2, 3, 4)))
    with pytest.raises(ValueError, match=r"MaxPool1d: padding \(3, 3\) is larger than the "
                                         r"kernel size 2"):
        mt.nn.MaxPool1d(2, padding=3)
    with pytest.raises(ValueError, match=r"MaxPool1d: the kernel \(5,\) does not fit"):
        mt.nn.MaxPool1d(5)(mnp.ones((1, 3)))
    with pytest.raises(ValueError, match=r"MaxPool2d: kernel_size must be an int or a sequence "
                                         r"of 2 ints"):
        mt.nn.MaxPool2d((2, 2, 2))
    with pytest.raises(ValueError, match=r"MaxPool2d: stride must be at least 1 in every dim"):
        mt.nn.MaxPool2d(2, stride=0)
    with pytest.raises(ValueError, match=r"AdaptiveMaxPool1d: target_shape must be at least 1"):
        mt.nn.AdaptiveMaxPool1d(0)
    with pytest.raises(ValueError, match=r"AvgPool2d: padding must be"):
        mt.nn.AvgPool2d(2, padding=(1, 2, 3))
    with pytest.raises(TypeError, match=r"Pool: operation must be lax.max, lax.min or lax.add"):
        mt.nn.Pool(0, lax.mul, 1, 2)
    with pytest.raises(ValueError, match=r"AdaptiveAvgPool2d: every spatial dim of the input "
                                         r"f32\[1,3,5\] must be at least the target shape "
                                         r"\(4, 4\)"):
        mt.nn.AdaptiveAvgPool2d(4)(mnp.ones((1, 3, 5)))


@pytest.mark.parametrize("dtype", [mnp.bfloat16, mnp.float16])
def test_low_precision(dtype):
    x = mnp.asarray(np.random.default_rng(0).standard_normal((2, 6, 6))).astype(dtype)
    for pool in (mt.nn.MaxPool2d(2, 2), mt.nn.AvgPool2d(3, 1, 1), mt.nn.AdaptiveAvgPool2d(2)):
        out = pool(x)
        assert out.dtype == dtype
        np.testing.assert_allclose(np.asarray(out, np.float32),
                                   np.asarray(pool(x.astype(np.float32))), rtol=0.02, atol=0.02)
