"""mt.nn.Conv / ConvTranspose against a NumPy reference convolution, PyTorch's
conv_transpose2d numbers (written literally), the gradient of Conv, and FD gradients."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch import tree_util
from tests.autodiff.fd import check_grads


def with_params(module, *arrays):
    """`module` with its array leaves (weight, then bias) replaced by `arrays`."""
    leaves, treedef = tree_util.tree_flatten(module)
    assert len(leaves) == len(arrays)
    return tree_util.tree_unflatten(treedef, [mnp.asarray(a) for a in arrays])


def np_conv(x, w, stride, pads, dilation, groups):
    """Direct N-d cross-correlation: x [N, C, *sp], w [O, C/g, *k], pads (lo, hi) pairs."""
    nsp = w.ndim - 2
    x = np.pad(x, [(0, 0), (0, 0)] + [tuple(p) for p in pads])
    k = w.shape[2:]
    out_sp = [(x.shape[2 + i] - dilation[i] * (k[i] - 1) - 1) // stride[i] + 1
              for i in range(nsp)]
    n, o = x.shape[0], w.shape[0]
    cg, og = w.shape[1], o // groups
    out = np.zeros((n, o, *out_sp))
    for g in range(groups):
        xg = x[:, g * cg:(g + 1) * cg]
        wg = w[g * og:(g + 1) * og]
        for idx in itertools.product(*[range(s) for s in k]):
            sl = tuple(slice(idx[i] * dilation[i],
                             idx[i] * dilation[i] + stride[i] * (out_sp[i] - 1) + 1, stride[i])
                       for i in range(nsp))
            patch = xg[(slice(None), slice(None)) + sl]
            out[:, g * og:(g + 1) * og] += np.einsum("nc...,oc->no...", patch,
                                                     wg[(slice(None), slice(None)) + idx])
    return out


def same_pads(size, k, s, d, lower=False):
    span = d * (k - 1) + 1
    out = -(-size // s)
    total = max((out - 1) * s + span - size, 0)
    lo = (total + 1) // 2 if lower else total // 2
    return (lo, total - lo)


def _tuple(v, n):
    return tuple(v) if isinstance(v, tuple) else (v,) * n


def explicit_pads(padding, spatial, k, stride, dilation):
    n = len(spatial)
    k, stride, dilation = (_tuple(v, n) for v in (k, stride, dilation))
    if padding == "VALID":
        return [(0, 0)] * n
    if isinstance(padding, str):
        return [same_pads(spatial[i], k[i], stride[i], dilation[i], padding == "SAME_LOWER")
                for i in range(n)]
    if isinstance(padding, int):
        return [(padding, padding)] * n
    return [p if isinstance(p, tuple) else (p, p) for p in padding]


CONFIGS = [  # nsp, cin, cout, k, stride, padding, dilation, groups, spatial
    (1, 2, 3, 3, 1, 0, 1, 1, (7,)),
    (1, 4, 2, 2, 2, ((1, 2),), 1, 2, (6,)),
    (2, 3, 4, (3, 2), (2, 1), 1, (1, 2), 1, (6, 5)),
    (2, 4, 4, 3, 1, "SAME", 1, 4, (5, 4)),
    (2, 2, 2, 4, 2, "SAME_LOWER", 1, 1, (6, 7)),
    (2, 2, 3, 2, 1, "VALID", 2, 1, (4, 5)),
    (3, 2, 2, 2, 1, (1, 0, 1), 1, 2, (3, 3, 4)),
]


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("batched", [False, True])
def test_conv_matches_numpy(config, batched):
    nsp, cin, cout, k, stride, padding, dilation, groups, spatial = config
    conv = mt.nn.Conv(nsp, cin, cout, k, stride, padding, dilation, groups,
                      key=mt.random.key(1))
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, cin, *spatial)).astype(np.float32)
    pads = explicit_pads(padding, spatial, k, stride, dilation)
    want = np_conv(x.astype(np.float64), np.asarray(conv.weight, np.float64),
                   _tuple(stride, nsp), pads, _tuple(dilation, nsp), groups)
    want = want + np.asarray(conv.bias, np.float64)
    got = conv(x) if batched else mnp.stack([conv(x[0]), conv(x[1])])
    assert got.shape == want.shape
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)


def test_conv_init_and_shapes():
    conv = mt.nn.Conv2d(6, 4, (3, 2), groups=2, key=mt.random.key(0))
    assert conv.weight.shape == (4, 3, 3, 2) and conv.bias.shape == (4, 1, 1)
    assert conv.weight.dtype == np.float32
    lim = 1 / np.sqrt(3 * 3 * 2)
    w = np.asarray(conv.weight)
    assert np.all(np.abs(w) <= lim) and w.std() > lim / 3
    assert np.all(np.abs(np.asarray(conv.bias)) <= lim)
    assert (conv.kernel_size, conv.stride, conv.padding) == ((3, 2), (1, 1), ((0, 0), (0, 0)))
    nobias = mt.nn.Conv1d(2, 3, 3, use_bias=False, key=mt.random.key(0))
    assert nobias.bias is None and len(tree_util.tree_leaves(nobias)) == 1
    assert mt.nn.Conv3d(1, 2, 2, key=mt.random.key(0))(mnp.ones((1, 3, 3, 3))).shape == (
        2, 2, 2, 2)
    assert mt.nn.Conv1d(2, 3, 3, padding=(1,), key=mt.random.key(0)).padding == ((1, 1),)
    assert mt.nn.Conv1d(2, 3, 3, padding="same", key=mt.random.key(0)).padding == "SAME"


def test_conv_init_matches_equinox_numbers():
    # Equinox's Conv2d(2, 3, 2, key=jax.random.PRNGKey(2)): weight[0, 0] and bias
    conv = mt.nn.Conv2d(2, 3, 2, key=mt.random.PRNGKey(2))
    np.testing.assert_array_equal(np.asarray(conv.weight[0, 0]),
                                  np.float32([[0.09637374430894852, 0.10099758952856064],
                                              [-0.287828654050827, 0.17684303224086761]]))
    np.testing.assert_array_equal(np.asarray(conv.bias).ravel(),
                                  np.float32([0.35050076246261597, 0.006158750504255295,
                                              -0.34037870168685913]))


def test_conv_init_x64_dtype(x64):
    assert mt.nn.Conv1d(2, 3, 3, key=mt.random.key(0)).weight.dtype == np.float64
    conv = mt.nn.Conv1d(2, 3, 3, dtype=mnp.float16, key=mt.random.key(0))
    assert conv.weight.dtype == np.float16
    assert conv(mnp.ones((2, 5), mnp.float16)).dtype == np.float16


@pytest.mark.parametrize("mode,np_mode", [("REFLECT", "reflect"), ("REPLICATE", "edge"),
                                          ("CIRCULAR", "wrap")])
@pytest.mark.parametrize("padding", [((2, 1), (1, 2)), "SAME"])
def test_padding_modes(mode, np_mode, padding):
    conv = mt.nn.Conv2d(2, 3, 3, padding=padding, padding_mode=mode.lower(),
                        key=mt.random.key(2))
    assert conv.padding_mode == mode
    x = np.random.default_rng(1).standard_normal((2, 5, 6))
    pads = [(1, 1), (1, 1)] if padding == "SAME" else list(padding)
    xp = np.pad(x, [(0, 0)] + pads, mode=np_mode)
    want = np_conv(xp[None], np.asarray(conv.weight, np.float64), (1, 1), [(0, 0)] * 2,
                   (1, 1), 1)[0] + np.asarray(conv.bias)
    np.testing.assert_allclose(np.asarray(conv(x.astype(np.float32))), want, rtol=1e-5,
                               atol=1e-5)


@settings(max_examples=15)
@given(length=st.integers(1, 9), k=st.integers(1, 4), stride=st.integers(1, 3),
       dilation=st.integers(1, 2), lo=st.integers(0, 2), hi=st.integers(0, 2))
def test_conv1d_hypothesis(length, k, stride, dilation, lo, hi):
    conv = mt.nn.Conv1d(2, 2, k, stride, ((lo, hi),), dilation, key=mt.random.key(3))
    x = np.random.default_rng(length).standard_normal((2, length)).astype(np.float32)
    if length + lo + hi < dilation * (k - 1) + 1:  # the window does not fit: empty output
        assert conv(x).shape == (2, 0)
        return
    want = np_conv(x[None].astype(np.float64), np.asarray(conv.weight, np.float64), (stride,),
                   [(lo, hi)], (dilation,), 1)[0] + np.asarray(conv.bias)
    np.testing.assert_allclose(np.asarray(conv(x)), want, rtol=1e-5, atol=1e-5)


def test_conv_empty_output_and_empty_batch():
    conv = mt.nn.Conv1d(2, 3, 4, key=mt.random.key(0))
    assert conv(mnp.ones((2, 3))).shape == (3, 0)
    assert conv(mnp.ones((0, 2, 6))).shape == (0, 3, 3)


def test_conv_nan_propagates():
    conv = mt.nn.Conv1d(1, 1, 2, key=mt.random.key(0))
    out = np.asarray(conv(mnp.array([[1.0, np.nan, 2.0, 3.0]])))
    assert np.isnan(out[0, :2]).all() and np.isfinite(out[0, 2])


# ---- ConvTranspose ----------------------------------------------------------------------
def _torch_to_ours(w, groups):
    """PyTorch's transposed weight [in, out/g, *k] -> ours [out, in/g, *k] (flipped)."""
    cin, og = w.shape[:2]
    k = w.shape[2:]
    w = w.reshape(groups, cin // groups, og, *k).swapaxes(1, 2)
    w = w.reshape(groups * og, cin // groups, *k)
    return np.flip(w, axis=tuple(range(2, w.ndim)))


def test_conv_transpose_matches_torch():
    x = (np.arange(8.0).reshape(2, 2, 2) - 3.5) / 4
    w = ((np.arange(36.0).reshape(2, 2, 3, 3) * 7) % 11 - 5) / 10  # torch [in, out, kh, kw]
    b = np.array([0.25, -0.5])
    layer = mt.nn.ConvTranspose2d(2, 2, 3, stride=2, output_padding=1, padding=1,
                                  key=mt.random.key(0))
    layer = with_params(layer, _torch_to_ours(w, 1).astype(np.float32),
                        b.reshape(2, 1, 1).astype(np.float32))
    # torch.nn.functional.conv_transpose2d(x[None], w, b, stride=2, padding=1,
    #                                      output_padding=1)[0]
    want = [[[0.1, 0.1875, 0.0, 0.5125], [-0.0125, 0.6125, 0.0625, 0.825],
             [-0.1, 0.3375, -0.2, 0.4625], [0.5625, 0.2375, 0.6875, 0.3875]],
            [[-0.2875, -1.225, -0.2625, -0.85], [0.075, -1.2375, 0.125, -0.7625],
             [-0.2375, -1.125, -0.2125, -0.65], [-0.2625, -1.225, -0.2875, -0.725]]]
    np.testing.assert_allclose(np.asarray(layer(x.astype(np.float32))), want, atol=1e-6)


def test_conv_transpose_groups_dilation_matches_torch():
    x = (np.arange(8.0).reshape(2, 2, 2) - 3.5) / 4
    w = ((np.arange(8.0).reshape(2, 1, 2, 2) * 5) % 7 - 3) / 4  # torch [in, out/g, kh, kw]
    layer = mt.nn.ConvTranspose2d(2, 2, 2, stride=(1, 2), dilation=2, groups=2,
                                  use_bias=False, key=mt.random.key(0))
    layer = with_params(layer, _torch_to_ours(w, 2).astype(np.float32))
    # torch.nn.functional.conv_transpose2d(x[None], w, None, stride=(1, 2), dilation=2,
    #                                      groups=2)[0]
    want = [[[0.65625, 0.0, 0.03125, 0.0, -0.3125], [0.28125, 0.0, -0.09375, 0.0, -0.0625],
             [0.0, 0.0, 0.4375, 0.0, 0.3125], [0.0, 0.0, 0.1875, 0.0, 0.0625]],
            [[0.09375, 0.0, 0.3125, 0.0, 0.09375], [0.46875, 0.0, 0.8125, 0.0, 0.21875],
             [-0.03125, 0.0, -0.1875, 0.0, -0.28125], [-0.15625, 0.0, -0.6875, 0.0, -0.65625]]]
    np.testing.assert_allclose(np.asarray(layer(x.astype(np.float32))), want, atol=1e-6)


TRANSPOSE_CONFIGS = [  # nsp, k, stride, padding, dilation, groups, Conv input spatial, mode
    (1, 3, 2, 1, 1, 1, (7,), "ZEROS"),
    (2, 3, 2, 1, 1, 1, (5, 6), "ZEROS"),
    (2, (2, 3), (2, 1), ((1, 0), (2, 1)), (1, 2), 1, (6, 7), "ZEROS"),
    (2, 3, 2, "SAME", 1, 1, (6, 6), "ZEROS"),
    (2, 3, 1, "SAME_LOWER", 2, 1, (5, 4), "ZEROS"),
    (1, 4, 3, "VALID", 1, 2, (10,), "ZEROS"),
    (2, 3, 1, "SAME", 1, 1, (5, 5), "CIRCULAR"),
]


@pytest.mark.parametrize("config", TRANSPOSE_CONFIGS)
def test_conv_transpose_is_gradient_of_conv(config, x64):
    nsp, k, stride, padding, dilation, groups, spatial, mode = config
    cin, cout = 2, 4
    conv = mt.nn.Conv(nsp, cin, cout, k, stride, padding, dilation, groups, use_bias=False,
                      padding_mode=mode, key=mt.random.key(5))
    x = np.random.default_rng(0).standard_normal((cin, *spatial))
    y, vjp = mt.vjp(conv, mnp.asarray(x))
    out_sp = y.shape[1:]
    # output_padding picks among the input shapes the strided conv maps onto out_sp
    convt0 = mt.nn.ConvTranspose(nsp, cout, cin, k, stride, padding, 0, dilation, groups,
                                 use_bias=False, padding_mode=mode, key=mt.random.key(0))
    base = convt0(mnp.zeros((cout, *out_sp))).shape[1:]
    out_pad = tuple(s - b for s, b in zip(spatial, base, strict=True))
    assert all(0 <= p < s for p, s in zip(out_pad, _tuple(stride, nsp), strict=True))
    convt = mt.nn.ConvTranspose(nsp, cout, cin, k, stride, padding, out_pad, dilation, groups,
                                use_bias=False, padding_mode=mode, key=mt.random.key(0))
    w = np.asarray(conv.weight)  # [cout, cin/g, *k] -> transposed weight [cin, cout/g, *k]
    kshape = w.shape[2:]
    w = w.reshape(groups, cout // groups, cin // groups, *kshape).swapaxes(1, 2)
    w = np.flip(w.reshape(cin, cout // groups, *kshape), axis=tuple(range(2, 2 + nsp)))
    convt = with_params(convt, w)
    ct = np.random.default_rng(1).standard_normal(y.shape)
    (want,) = vjp(mnp.asarray(ct))
    np.testing.assert_allclose(np.asarray(convt(ct)), np.asarray(want), rtol=1e-10,
                               atol=1e-10)


def test_conv_transpose_same_shape_and_batch():
    layer = mt.nn.ConvTranspose2d(3, 5, 3, stride=2, padding="SAME", key=mt.random.key(0))
    assert layer.weight.shape == (5, 3, 3, 3) and layer.bias.shape == (5, 1, 1)
    x = np.random.default_rng(0).standard_normal((2, 3, 4, 5)).astype(np.float32)
    y = layer(x)
    assert y.shape == (2, 5, 8, 10)
    np.testing.assert_allclose(np.asarray(y[1]), np.asarray(layer(x[1])), rtol=1e-6)
    wide = mt.nn.ConvTranspose1d(1, 1, 2, stride=3, padding="SAME", key=mt.random.key(0))
    assert wide(mnp.ones((1, 4))).shape == (1, 12)
    circ = mt.nn.ConvTranspose1d(1, 1, 3, stride=2, padding="SAME", padding_mode="CIRCULAR",
                                 key=mt.random.key(0))
    assert circ(mnp.ones((1, 4))).shape == (1, 8)
    cube = mt.nn.ConvTranspose3d(1, 1, 2, key=mt.random.key(0))
    assert cube(mnp.ones((1, 2, 2, 2))).shape == (1, 3, 3, 3)


# ---- transformations ------------------------------------------------------------------
LAYERS = [
    lambda: mt.nn.Conv2d(2, 3, 3, stride=2, padding=1, key=mt.random.key(0)),
    lambda: mt.nn.Conv1d(2, 2, 3, padding="SAME", padding_mode="REFLECT", groups=2,
                         key=mt.random.key(0)),
    lambda: mt.nn.ConvTranspose2d(2, 3, 3, stride=2, output_padding=1, padding=1,
                                  key=mt.random.key(0)),
    lambda: mt.nn.ConvTranspose1d(2, 2, 3, padding="SAME", padding_mode="CIRCULAR",
                                  key=mt.random.key(0)),
]


def _input(layer, batch=()):
    spatial = (5,) * layer.num_spatial_dims
    rng = np.random.default_rng(4)
    return rng.standard_normal((*batch, layer.in_channels, *spatial)).astype(np.float32)


@pytest.mark.parametrize("make", LAYERS)
def test_jit_vmap_batch_agree(make):
    layer = make()
    xs = _input(layer, (3,))
    eager = np.stack([np.asarray(layer(x)) for x in xs])
    jitted = mt.jit(lambda m, x: m(x))(layer, xs[0])
    np.testing.assert_allclose(np.asarray(jitted), eager[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(mt.vmap(layer)(xs)), eager, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(layer(xs)), eager, rtol=1e-5, atol=1e-6)
    # vmap over a stack of layers (an ensemble): parameters mapped too
    stacked = tree_util.tree_map(lambda a: mnp.stack([a, 2 * a]), layer)
    got = mt.vmap(lambda m, x: m(x))(stacked, xs[:2])
    np.testing.assert_allclose(np.asarray(got[0]), eager[0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("make", LAYERS)
def test_grads_fd(make, x64):
    layer = make()
    leaves, treedef = tree_util.tree_flatten(layer)
    x = _input(layer).astype(np.float64)
    rng = np.random.default_rng(0)
    params = tuple(rng.standard_normal(np.shape(p)) for p in leaves)

    def f(x, *params):
        return tree_util.tree_unflatten(treedef, list(params))(x)

    check_grads(f, (x, *params), order=1)


# ---- errors ---------------------------------------------------------------------------
def test_conv_errors():
    conv = mt.nn.Conv2d(3, 4, 3, key=mt.random.key(0))
    with pytest.raises(ValueError, match=r"Conv2d expected an input of shape \(3, d1, d2\) "
                                         r"or \(N, 3, d1, d2\), got f32\[5,8,8\] at "
                                         r"test_conv.py:\d+"):
        conv(mnp.ones((5, 8, 8)))
    with pytest.raises(ValueError, match=r"Conv2d expected .* got f32\[8,8\]"):
        mt.jit(conv)(mnp.ones((8, 8)))
    with pytest.raises(ValueError, match=r"ConvTranspose1d expected .*\(2, d1\).*f32\[3,4\]"):
        mt.nn.ConvTranspose1d(2, 2, 3, key=mt.random.key(0))(mnp.ones((3, 4)))
    with pytest.raises(ValueError, match=r"Conv1d: in_channels \(3\) and out_channels \(4\) "
                                         r"must both be divisible by groups \(2\)"):
        mt.nn.Conv1d(3, 4, 3, groups=2, key=mt.random.key(0))
    with pytest.raises(ValueError, match=r"Conv2d: padding string must be one of"):
        mt.nn.Conv2d(3, 4, 3, padding="FULL", key=mt.random.key(0))
    with pytest.raises(ValueError, match=r"Conv2d: kernel_size must be an int or a sequence "
                                         r"of 2 ints, got \(3, 3, 3\)"):
        mt.nn.Conv2d(3, 4, (3, 3, 3), key=mt.random.key(0))
    with pytest.raises(ValueError, match=r"Conv2d: stride must be at least 1 in every dim, "
                                         r"got \(1, 0\)"):
        mt.nn.Conv2d(3, 4, 3, stride=(1, 0), key=mt.random.key(0))
    with pytest.raises(ValueError, match=r"ConvTranspose1d: kernel_size must be at least 1"):
        mt.nn.ConvTranspose1d(3, 4, 0, key=mt.random.key(0))
    with pytest.raises(ValueError, match=r"Conv2d: padding must be .* got \(1, 2, 3\)"):
        mt.nn.Conv2d(3, 4, 3, padding=(1, 2, 3), key=mt.random.key(0))
    with pytest.raises(ValueError, match=r"padding_mode must be 'ZEROS', 'REFLECT'"):
        mt.nn.Conv2d(3, 4, 3, padding_mode="mirror", key=mt.random.key(0))
    with pytest.raises(ValueError, match=r"ConvTranspose2d: output_padding \(2, 2\) must be "
                                         r"non-negative and smaller than stride \(2, 2\)"):
        mt.nn.ConvTranspose2d(3, 4, 3, stride=2, output_padding=2, key=mt.random.key(0))
    with pytest.raises(ValueError, match=r"padding_mode 'REFLECT' has no transposed form"):
        mt.nn.ConvTranspose2d(3, 4, 3, padding_mode="REFLECT", key=mt.random.key(0))
    with pytest.raises(ValueError, match=r"'CIRCULAR' needs padding 'SAME'"):
        mt.nn.ConvTranspose2d(3, 4, 3, padding=1, padding_mode="CIRCULAR",
                              key=mt.random.key(0))


@pytest.mark.parametrize("dtype", [mnp.bfloat16, mnp.float16])
def test_low_precision(dtype):
    x = np.random.default_rng(0).standard_normal((2, 5, 5)).astype(np.float32)
    for layer in (mt.nn.Conv2d(2, 3, 3, padding=1, dtype=dtype, key=mt.random.key(0)),
                  mt.nn.ConvTranspose2d(2, 3, 3, stride=2, dtype=dtype, key=mt.random.key(0))):
        out = layer(mnp.asarray(x).astype(dtype))
        assert out.dtype == dtype and layer.weight.dtype == dtype
        exact = tree_util.tree_map(lambda a: a.astype(np.float32), layer)(
            mnp.asarray(x).astype(dtype).astype(np.float32))
        np.testing.assert_allclose(np.asarray(out, np.float32), np.asarray(exact), rtol=0.05,
                                   atol=0.05)
