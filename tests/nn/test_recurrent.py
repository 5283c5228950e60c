"""mt.nn.GRUCell / LSTMCell against PyTorch's nn.GRUCell / nn.LSTMCell numbers (written
literally), a NumPy reference step, lax.scan == a Python loop, and FD gradients."""

import numpy as np
import pytest

import mytorch as mt
import mytorch.numpy as mnp
from mytorch import lax, tree_util
from tests.autodiff.fd import check_grads

I, H, T = 3, 2, 4


def arr(n, shape, mod=13):
    """Deterministic test values in [-0.6, 0.6]."""
    return ((np.arange(np.prod(shape), dtype=np.float64).reshape(shape) * n) % mod
            - mod // 2) / 10


# PyTorch's parameters: weight_ih, weight_hh, bias_ih, bias_hh
def torch_params(k):
    return arr(7, (k * H, I)), arr(11, (k * H, H)), arr(3, (k * H,), 11), arr(5, (k * H,), 9)


def gru_from_torch(dtype=np.float64):
    w_ih, w_hh, b_ih, b_hh = torch_params(3)
    cell = mt.nn.GRUCell(I, H, key=mt.random.key(0))
    bias = b_ih + np.concatenate([b_hh[:2 * H], np.zeros(H)])
    leaves = [w_ih, w_hh, bias, b_hh[2 * H:]]
    _, treedef = tree_util.tree_flatten(cell)
    return tree_util.tree_unflatten(treedef, [mnp.asarray(a.astype(dtype)) for a in leaves])


def lstm_from_torch(dtype=np.float64):
    w_ih, w_hh, b_ih, b_hh = torch_params(4)
    cell = mt.nn.LSTMCell(I, H, key=mt.random.key(0))
    _, treedef = tree_util.tree_flatten(cell)
    leaves = [w_ih, w_hh, b_ih + b_hh]
    return tree_util.tree_unflatten(treedef, [mnp.asarray(a.astype(dtype)) for a in leaves])


XS, H0, C0 = arr(5, (T, I)), arr(3, (H,), 7), arr(2, (H,), 5)

# h_t of torch.nn.GRUCell(3, 2) (float64) over XS from H0, with the parameters above
TORCH_GRU = [[-0.34916762, 0.05224392], [-0.41304487, 0.04181569],
             [-0.52849527, 0.16629924], [-0.61729189, 0.18218767]]
# (h_t, c_t) of torch.nn.LSTMCell(3, 2) over XS from (H0, C0)
TORCH_LSTM_H = [[-0.1590601, 0.09750264], [-0.16452911, 0.12587084],
                [-0.18417235, 0.214327], [-0.2091651, 0.24329359]]
TORCH_LSTM_C = [[-0.29359328, 0.14316866], [-0.3094018, 0.17790008],
                [-0.45129382, 0.29419605], [-0.51146807, 0.33182434]]


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def np_gru(cell, x, h):
    w_ih, w_hh, b, b_n = (np.asarray(a, np.float64) for a in tree_util.tree_leaves(cell))
    r_i, z_i, n_i = np.split(w_ih @ x + b, 3)
    r_h, z_h, n_h = np.split(w_hh @ h, 3)
    r, z = _sigmoid(r_i + r_h), _sigmoid(z_i + z_h)
    n = np.tanh(n_i + r * (n_h + b_n))
    return (1 - z) * n + z * h


def test_gru_scan_matches_torch_and_loop(x64):
    cell = gru_from_torch()

    def step(h, x):
        h = cell(x, h)
        return h, h

    last, hs = lax.scan(step, mnp.asarray(H0), mnp.asarray(XS))
    np.testing.assert_allclose(np.asarray(hs), TORCH_GRU, atol=1e-8)
    h, loop = H0, []
    for x in XS:
        h = np_gru(cell, x, h)
        loop.append(h)
    np.testing.assert_allclose(np.asarray(hs), np.stack(loop), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(last), loop[-1], rtol=1e-12)


def test_lstm_scan_matches_torch_and_loop(x64):
    cell = lstm_from_torch()

    def step(state, x):
        state = cell(x, state)
        return state, state

    (h, c), (hs, cs) = mt.jit(lambda s, xs: lax.scan(step, s, xs))(
        (mnp.asarray(H0), mnp.asarray(C0)), mnp.asarray(XS))
    np.testing.assert_allclose(np.asarray(hs), TORCH_LSTM_H, atol=1e-8)
    np.testing.assert_allclose(np.asarray(cs), TORCH_LSTM_C, atol=1e-8)
    state = (mnp.asarray(H0), mnp.asarray(C0))
    for x in XS:
        state = cell(mnp.asarray(x), state)
    np.testing.assert_allclose(np.asarray(state[0]), np.asarray(h), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(state[1]), np.asarray(c), rtol=1e-12)


def test_init_matches_equinox_numbers():
    # Equinox's GRUCell(3, 2, key=jax.random.PRNGKey(0)): weight_ih[0] and bias_n
    gru = mt.nn.GRUCell(3, 2, key=mt.random.PRNGKey(0))
    np.testing.assert_array_equal(np.asarray(gru.weight_ih[0]),
                                  np.float32([0.48410525918006897, -0.4491844177246094,
                                              -0.38582843542099]))
    np.testing.assert_array_equal(np.asarray(gru.bias_n),
                                  np.float32([-0.3295266330242157, 0.33085545897483826]))
    # Equinox's LSTMCell(3, 2, key=jax.random.PRNGKey(1)).bias[:3]
    lstm = mt.nn.LSTMCell(3, 2, key=mt.random.PRNGKey(1))
    np.testing.assert_array_equal(np.asarray(lstm.bias[:3]),
                                  np.float32([0.08171902596950531, -0.39024490118026733,
                                              0.34942570328712463]))
    assert gru.weight_hh.shape == (6, 2) and gru.bias.shape == (6,)
    assert lstm.weight_ih.shape == (8, 3) and lstm.weight_hh.shape == (8, 2)
    assert np.abs(np.asarray(lstm.weight_hh)).max() <= np.sqrt(1 / 2)


def test_no_bias_and_dtype(x64):
    gru = mt.nn.GRUCell(3, 2, use_bias=False, key=mt.random.key(0))
    assert gru.bias is None and gru.bias_n is None and len(tree_util.tree_leaves(gru)) == 2
    assert gru.weight_ih.dtype == np.float64
    np.testing.assert_allclose(np.asarray(gru(XS[0], H0)), np_gru_nobias(gru, XS[0], H0),
                               rtol=1e-12)
    lstm = mt.nn.LSTMCell(3, 2, use_bias=False, dtype=mnp.float32, key=mt.random.key(0))
    assert lstm.bias is None and lstm.weight_ih.dtype == np.float32
    h, c = lstm(mnp.ones(3, mnp.float32), (mnp.zeros(2, mnp.float32),) * 2)
    assert h.shape == c.shape == (2,) and h.dtype == np.float32


def np_gru_nobias(cell, x, h):
    w_ih, w_hh = (np.asarray(a) for a in tree_util.tree_leaves(cell))
    r_i, z_i, n_i = np.split(w_ih @ x, 3)
    r_h, z_h, n_h = np.split(w_hh @ h, 3)
    r, z = _sigmoid(r_i + r_h), _sigmoid(z_i + z_h)
    n = np.tanh(n_i + r * n_h)
    return (1 - z) * n + z * h


@pytest.mark.parametrize("kind", ["gru", "lstm"])
def test_batch_vmap_jit_agree(kind):
    cell = (mt.nn.GRUCell if kind == "gru" else mt.nn.LSTMCell)(3, 4, key=mt.random.key(1))
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((5, 3)).astype(np.float32)
    hs = rng.standard_normal((5, 4)).astype(np.float32)
    state = hs if kind == "gru" else (hs, 0.5 * hs)

    def one(x, s):
        return cell(x, s)

    loop = [one(xs[i], tree_util.tree_map(lambda a, i=i: a[i], state)) for i in range(5)]
    loop = tree_util.tree_map(lambda *a: np.stack([np.asarray(v) for v in a]), *loop)
    for got in (cell(xs, state), mt.vmap(one)(xs, state), mt.jit(one)(xs, state)):
        for g, w in zip(tree_util.tree_leaves(got), tree_util.tree_leaves(loop), strict=True):
            np.testing.assert_allclose(np.asarray(g), w, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind", ["gru", "lstm"])
def test_grads_fd_through_scan(kind, x64):
    cell = gru_from_torch() if kind == "gru" else lstm_from_torch()
    leaves, treedef = tree_util.tree_flatten(cell)

    def run(xs, h0, *params):
        c = tree_util.tree_unflatten(treedef, list(params))
        init = h0 if kind == "gru" else (h0, 0.5 * h0)
        last, _ = lax.scan(lambda s, x: (c(x, s), None), init, xs)
        return last

    check_grads(run, (XS, H0, *[np.asarray(p) for p in leaves]), order=1)


def test_errors():
    gru = mt.nn.GRUCell(3, 4, key=mt.random.key(0))
    with pytest.raises(ValueError, match=r"GRUCell expected input and state of shapes \(3\), "
                                         r"\(4\) \(an optional leading batch N on all\), got "
                                         r"f32\[5\], f32\[4\] at test_recurrent.py:\d+"):
        gru(mnp.ones(5), mnp.zeros(4))
    with pytest.raises(ValueError, match=r"GRUCell expected .*\(N, 3\), \(N, 4\).* got "
                                         r"f32\[2,3\], f32\[3,4\]"):
        mt.jit(gru)(mnp.ones((2, 3)), mnp.zeros((3, 4)))
    lstm = mt.nn.LSTMCell(3, 4, key=mt.random.key(0))
    with pytest.raises(ValueError, match=r"LSTMCell expected input and state of shapes \(3\), "
                                         r"\(4\), \(4\) .* got f32\[3\], f32\[4\], f32\[2\]"):
        lstm(mnp.ones(3), (mnp.zeros(4), mnp.zeros(2)))
    with pytest.raises(TypeError, match=r"LSTMCell expected its state as a pair \(h, c\), got "
                                        r"\w+ at test_recurrent.py:\d+"):
        lstm(mnp.ones(3), mnp.zeros(4))


@pytest.mark.parametrize("dtype", [mnp.bfloat16, mnp.float16])
def test_low_precision_and_empty_batch(dtype):
    gru = mt.nn.GRUCell(3, 2, dtype=dtype, key=mt.random.key(0))
    lstm = mt.nn.LSTMCell(3, 2, dtype=dtype, key=mt.random.key(0))
    x, h = mnp.asarray(XS[0]).astype(dtype), mnp.asarray(H0).astype(dtype)
    assert gru(x, h).dtype == dtype and lstm(x, (h, h))[1].dtype == dtype
    np.testing.assert_allclose(np.asarray(gru(x, h), np.float32),
                               np_gru(gru, np.asarray(x, np.float64), np.asarray(h, np.float64)),
                               rtol=0.03, atol=0.03)
    assert gru(mnp.ones((0, 3), dtype), mnp.ones((0, 2), dtype)).shape == (0, 2)
