"""The core layers (Linear, Identity, Lambda, LayerNorm, RMSNorm, GroupNorm, BatchNorm,
Embedding, Dropout, MLP, Sequential) against NumPy formulas, Equinox/JAX numbers written
literally, float64 central differences, loops (vmap) and the un-jitted call (jit)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch import nn
from mytorch.tree_util import tree_flatten, tree_leaves, tree_map, tree_unflatten
from tests.autodiff.fd import check_grads

KEY = mt.random.key(0)


def _np(x):
    return np.asarray(x, dtype=np.float64)


def _rand(shape, seed=0, dtype=np.float32):
    return mnp.asarray(np.random.default_rng(seed).normal(size=shape).astype(dtype))


# Linear --------------------------------------------------------------------------------------

def test_linear_matches_equinox_init_and_numpy_formula():
    layer = nn.Linear(3, 4, key=KEY)
    # eqx.nn.Linear(3, 4, key=jax.random.key(0))
    np.testing.assert_allclose(layer.weight, [
        [0.3952703, -0.36675754, -0.3150276], [-0.43794832, -0.35586315, 0.25636086],
        [0.30651015, -0.40121174, 0.52158546], [-0.54350543, -0.46336916, 0.06136455]],
        rtol=1e-6)
    np.testing.assert_allclose(layer.bias, [-0.56892806, -0.5532272, 0.09402322, -0.15953575],
                               rtol=1e-6)
    x = _rand((2, 5, 3))
    np.testing.assert_allclose(layer(x), _np(x) @ _np(layer.weight).T + _np(layer.bias),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(layer(x[0, 0]), layer(x)[0, 0], rtol=1e-6)
    np.testing.assert_allclose(mt.jit(layer)(x), layer(x), rtol=1e-6)
    assert layer(mnp.zeros((0, 3))).shape == (0, 4)


def test_linear_options_and_scalar_sizes():
    no_bias = nn.Linear(2, 3, use_bias=False, key=KEY)
    assert no_bias.bias is None and len(tree_leaves(no_bias)) == 1
    x = _rand((2,))
    np.testing.assert_allclose(no_bias(x), _np(no_bias.weight) @ _np(x), rtol=1e-5)
    s_in = nn.Linear("scalar", 3, key=KEY)
    assert s_in.weight.shape == (3, 1) and s_in(mnp.array(2.0)).shape == (3,)
    np.testing.assert_allclose(s_in(mnp.array(2.0)), 2 * _np(s_in.weight[:, 0]) + _np(s_in.bias),
                               rtol=1e-6)
    s_out = nn.Linear(3, "scalar", key=KEY)
    assert s_out(mnp.ones(3)).shape == () and s_out(mnp.ones((4, 3))).shape == (4,)
    d64 = nn.Linear(2, 2, dtype=mnp.float16, key=KEY)
    assert d64.weight.dtype == mnp.float16 and d64(mnp.ones(2, mnp.float16)).dtype == mnp.float16


def test_linear_init_statistics():
    layer = nn.Linear(400, 50, key=mt.random.key(3))
    w = _np(layer.weight)
    lim = 1 / np.sqrt(400)
    assert np.abs(w).max() <= lim and np.abs(_np(layer.bias)).max() <= lim
    # uniform(-lim, lim): variance lim**2 / 3 (the 20000 draws give ~1% error)
    np.testing.assert_allclose(w.var(), lim ** 2 / 3, rtol=0.05)
    assert abs(w.mean()) < 0.05 * lim
    other = nn.Linear(400, 50, key=mt.random.key(4))
    assert not np.array_equal(w, _np(other.weight))
    np.testing.assert_array_equal(w, _np(nn.Linear(400, 50, key=mt.random.key(3)).weight))


def test_linear_shape_errors():
    layer = nn.Linear(3, 4, key=KEY)
    with pytest.raises(ValueError, match=r"Linear\(in_features=3, out_features=4\) expects input "
                                         r"\(\.\.\., 3\), got f32\[2,5\] at test_layers.py"):
        layer(mnp.ones((2, 5)))
    with pytest.raises(ValueError, match=r"expects input \(\.\.\., 3\), got f32\[\]"):
        layer(mnp.array(1.0))
    with pytest.raises(ValueError, match=r"expects input \(\.\.\., 3\), got f32\[7\]"):
        mt.jit(layer)(mnp.ones(7))
    with pytest.raises(ValueError, match="Linear: in_features must be a non-negative int"):
        nn.Linear(-1, 2, key=KEY)


def test_identity_and_lambda():
    x = _rand((3,))
    assert nn.Identity(1, 2, foo=3)(x, key=KEY) is x and tree_leaves(nn.Identity()) == []
    lam = nn.Lambda(mnp.tanh)
    np.testing.assert_allclose(lam(x), np.tanh(_np(x)), rtol=1e-6)
    assert tree_leaves(lam) == [] and hash(lam) == hash(nn.Lambda(mnp.tanh))
    with pytest.raises(TypeError, match="Lambda: fn must be callable"):
        nn.Lambda(3)


# Normalisation -------------------------------------------------------------------------------

def _layer_norm_ref(x, axes, eps, w=None, b=None):
    mu = x.mean(axis=axes, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=axes, keepdims=True)
    out = (x - mu) / np.sqrt(var + eps)
    return out * (1 if w is None else w) + (0 if b is None else b)


@settings(max_examples=15, deadline=None)
@given(lead=st.lists(st.integers(0, 3), max_size=2), shape=st.lists(st.integers(1, 4),
                                                                   min_size=1, max_size=2))
def test_layer_norm_matches_formula(lead, shape):
    norm = nn.LayerNorm(tuple(shape))
    x = _rand(tuple(lead) + tuple(shape), seed=len(lead))
    axes = tuple(range(len(lead), len(lead) + len(shape)))
    np.testing.assert_allclose(norm(x), _layer_norm_ref(_np(x), axes, 1e-5), rtol=1e-4,
                               atol=1e-5)


def test_layer_norm_affine_state_and_half_precision():
    norm = nn.LayerNorm(4, eps=1e-3)
    w, b = _rand((4,), 1), _rand((4,), 2)
    norm = nn.tree_at(lambda n: (n.weight, n.bias), norm, (w, b))
    x = _rand((3, 4))
    ref = _layer_norm_ref(_np(x), (1,), 1e-3, _np(w), _np(b))
    np.testing.assert_allclose(norm(x), ref, rtol=1e-5, atol=1e-5)
    y, state = norm(x, "state")
    assert state == "state"
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)
    plain = nn.LayerNorm(4, use_weight=False, use_bias=False)
    assert tree_leaves(plain) == []
    assert nn.LayerNorm(4, elementwise_affine=False).weight is None
    half = norm(x.astype(mnp.float16))
    assert half.dtype == mnp.float16
    np.testing.assert_allclose(_np(half), ref, rtol=1e-2, atol=1e-2)
    # a constant input normalises to zero, not NaN
    np.testing.assert_array_equal(plain(mnp.full((4,), 3.0)), np.zeros(4))


def test_layer_norm_grad_matches_finite_differences(x64):
    norm = nn.LayerNorm((2, 3), eps=1e-3, dtype=mnp.float64)
    treedef = tree_flatten(norm)[1]
    x = np.random.default_rng(0).normal(size=(2, 3))

    def f(x, w, b):
        return mnp.sum(tree_unflatten(treedef, [w, b])(x) ** 3)

    check_grads(f, [x, 1 + 0.1 * x, 0.2 * x], order=1)


def test_rms_norm_matches_formula():
    norm = nn.RMSNorm(5)
    assert norm.bias is None and norm.weight.shape == (5,)
    x = _rand((2, 3, 5))
    ref = _np(x) / np.sqrt((_np(x) ** 2).mean(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(norm(x), ref, rtol=1e-5)
    biased = nn.tree_at(lambda n: n.bias, nn.RMSNorm(5, use_bias=True), mnp.ones(5))
    np.testing.assert_allclose(biased(x), ref + 1, rtol=1e-5)
    with pytest.raises(ValueError, match=r"RMSNorm\(shape=\(5,\)\) expects input \(\.\.\., 5\), "
                                         r"got f32\[2,4\]"):
        norm(mnp.ones((2, 4)))


def test_group_norm_matches_formula():
    gn = nn.GroupNorm(2, 4)
    x = _rand((4, 3, 2))
    g = _np(x).reshape(2, -1)
    ref = ((g - g.mean(1, keepdims=True)) / np.sqrt(g.var(1, keepdims=True) + 1e-5))
    np.testing.assert_allclose(gn(x), ref.reshape(4, 3, 2), rtol=1e-4, atol=1e-5)
    batched = mt.vmap(gn)(mnp.stack([x, 2 * x]))
    np.testing.assert_allclose(batched[1], gn(2 * x), rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="GroupNorm: channels=5 is not divisible by groups=2"):
        nn.GroupNorm(2, 5)
    with pytest.raises(ValueError, match=r"GroupNorm\(groups=2, channels=4\) expects input "
                                         r"\(4, \*spatial\).*got f32\[3,2\]"):
        gn(mnp.ones((3, 2)))


def test_norm_errors():
    with pytest.raises(ValueError, match=r"LayerNorm\(shape=\(3,\)\) expects input \(\.\.\., 3\), "
                                         r"got f32\[2,4\] at test_layers.py"):
        nn.LayerNorm(3)(mnp.ones((2, 4)))
    with pytest.raises(TypeError, match=r"LayerNorm\(shape=\(3,\)\) expects a floating-point "
                                        r"input, got i32\[3\]"):
        nn.LayerNorm(3)(mnp.arange(3))
    with pytest.raises(TypeError, match="LayerNorm: shape must be an int or a tuple of ints"):
        nn.LayerNorm("a")


# BatchNorm -----------------------------------------------------------------------------------

def _bn_batches():
    rng = np.random.default_rng(0)
    return [mnp.asarray(rng.normal(size=(4, 2, 3)).astype(np.float32)) for _ in range(3)]


def _bn_step(bn):
    return mt.jit(mt.vmap(bn, axis_name="batch", in_axes=(0, None), out_axes=(0, None)))


def test_batch_norm_ema_against_numpy_and_equinox():
    bn, state = nn.make_with_state(nn.BatchNorm)(2, "batch", momentum=0.9)
    assert len(tree_leaves(bn)) == 2  # weight and bias; the statistics live in `state`
    step = _bn_step(bn)
    run_mean = run_var = None
    for x in _bn_batches():
        y, state = step(x, state)
        xs = _np(x)
        mean, var = xs.mean(axis=(0, 2)), xs.var(axis=(0, 2))
        if run_mean is None:
            run_mean, run_var = mean, var
        else:
            run_mean = 0.9 * run_mean + 0.1 * mean
            run_var = 0.9 * run_var + 0.1 * var
        ref = (xs - run_mean[:, None]) / np.sqrt(run_var[:, None] + 1e-5)
        np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-5)
    got_mean, got_var = state.get(bn.ema_state_index)
    np.testing.assert_allclose(got_mean, run_mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_var, run_var, rtol=1e-5)
    # eqx.nn.BatchNorm(2, "batch", momentum=0.9, mode="ema"), same three batches
    np.testing.assert_allclose(y[0, :, :2], [[1.8046105, 1.3044778], [-1.4550229, 0.21554512]],
                               rtol=1e-5)
    np.testing.assert_allclose(got_mean, [0.04610224, -0.15978281], rtol=1e-5)
    # inference uses the running statistics and leaves the state alone
    x = _bn_batches()[0]
    y_inf, state2 = _bn_step(nn.inference_mode(bn))(x, state)
    ref = (_np(x) - run_mean[:, None]) / np.sqrt(run_var[:, None] + 1e-5)
    np.testing.assert_allclose(y_inf, ref, rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(state2.get(bn.ema_state_index)[0], got_mean)


def test_batch_norm_batch_mode_matches_equinox():
    bn, state = nn.make_with_state(nn.BatchNorm)(2, "batch", momentum=0.9, mode="batch")
    step = _bn_step(bn)
    for x in _bn_batches():
        y, state = step(x, state)
    xs = _np(x)
    ref = (xs - xs.mean((0, 2))[:, None]) / np.sqrt(xs.var((0, 2))[:, None] + 1e-5)
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-5)
    # Equinox's numbers for the same batches (mode="batch")
    np.testing.assert_allclose(y[0, :, :2], [[1.2138921, 0.7394718], [-1.0558063, 0.34345588]],
                               rtol=1e-5)
    np.testing.assert_allclose(state.get(bn.batch_state_index)[0], [0.06327812, -0.01054486],
                               rtol=1e-5)
    y_inf, _ = _bn_step(nn.inference_mode(bn))(_bn_batches()[0], state)
    np.testing.assert_allclose(y_inf[0, :, :2], [[-0.05731829, -0.19445196],
                                                 [0.07774146, -0.26853806]], rtol=1e-4)


@pytest.mark.parametrize("mode", ["ema", "batch"])
def test_batch_norm_without_vmap_equals_the_named_axis(mode):
    named, s1 = nn.make_with_state(nn.BatchNorm)(2, "batch", momentum=0.8, mode=mode)
    whole, s2 = nn.make_with_state(nn.BatchNorm)(2, None, momentum=0.8, mode=mode)
    step = _bn_step(named)
    for x in _bn_batches():
        y1, s1 = step(x, s1)
        y2, s2 = mt.jit(whole)(x, s2)
        np.testing.assert_allclose(y2, y1, rtol=1e-5, atol=1e-6)
    for a, b in zip(tree_leaves(s1), tree_leaves(s2), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    y1, _ = _bn_step(nn.inference_mode(named))(x, s1)
    np.testing.assert_allclose(nn.inference_mode(whole)(x, s2)[0], y1, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match=r"BatchNorm\(input_size=2, axis_name=None\) expects "
                                         r"input \(N, 2, \*spatial\).*got f32\[2\]"):
        whole(mnp.ones(2), s2)


def test_batch_norm_affine_gradients_and_errors():
    bn, state = nn.make_with_state(nn.BatchNorm)(2, "batch")
    x = _bn_batches()[0]

    def loss(model, state):
        y, state = mt.vmap(model, axis_name="batch", in_axes=(0, None),
                           out_axes=(0, None))(x, state)
        return mnp.sum(y * mnp.arange(3.0)), state

    grads, _ = mt.grad(loss, has_aux=True)(bn, state)
    assert grads.weight.shape == (2,)
    xs = _np(x)
    normed = (xs - xs.mean((0, 2))[:, None]) / np.sqrt(xs.var((0, 2))[:, None] + 1e-5)
    np.testing.assert_allclose(grads.weight, (normed * np.arange(3.0)).sum((0, 2)), rtol=1e-4)
    np.testing.assert_allclose(grads.bias, [12.0, 12.0], rtol=1e-6)
    with pytest.raises(NameError, match="unbound axis name 'batch'"):
        bn(x[0], state)
    with pytest.raises(ValueError, match=r"BatchNorm\(input_size=2, axis_name='batch'\) expects "
                                         r"input \(2, \*spatial\) for one example, got f32\[4,2,3\]"):
        bn(x, state)
    with pytest.raises(ValueError, match="BatchNorm: mode must be 'ema' or 'batch'"):
        nn.BatchNorm(2, "batch", mode="legacy2")


# Embedding -----------------------------------------------------------------------------------

def test_embedding():
    emb = nn.Embedding(5, 3, key=KEY)
    # eqx.nn.Embedding(5, 3, key=jax.random.key(0)).weight[:2]
    np.testing.assert_allclose(emb.weight[:2], [[1.6226422, 2.0252647, -0.43359444],
                                                [-0.07861735, 0.1760909, -0.97208923]],
                               rtol=1e-5, atol=1e-6)
    idx = mnp.array([[0, 4], [2, 2]])
    np.testing.assert_array_equal(emb(idx), _np(emb.weight)[np.array([[0, 4], [2, 2]])])
    assert emb(mnp.array(3)).shape == (3,) and emb(mnp.zeros((0,), mnp.int32)).shape == (0, 3)
    np.testing.assert_array_equal(mt.jit(emb)(idx), emb(idx))
    np.testing.assert_array_equal(mt.vmap(emb)(idx), emb(idx))
    g = mt.grad(lambda e: mnp.sum(e(idx)))(emb)
    np.testing.assert_array_equal(g.weight[:, 0], [1, 0, 2, 0, 1])
    given_w = nn.Embedding(weight=mnp.ones((2, 4)))
    assert (given_w.num_embeddings, given_w.embedding_size) == (2, 4)
    with pytest.raises(IndexError, match=r"Embedding\(num_embeddings=5, embedding_size=3\): "
                                         r"index 5 is out of range \[0, 5\)"):
        emb(mnp.array([1, 5]))
    with pytest.raises(IndexError, match="index -1 is out of range"):
        emb(mnp.array([-1]))
    with pytest.raises(TypeError, match=r"expects integer indices, got f32\[2\]"):
        emb(mnp.ones(2))
    with pytest.raises(TypeError, match="Embedding: a PRNG key is required"):
        nn.Embedding(5, 3)


def test_embedding_init_statistics():
    w = _np(nn.Embedding(200, 100, key=mt.random.key(1)).weight)
    assert abs(w.mean()) < 0.02 and abs(w.std() - 1) < 0.02


# Dropout -------------------------------------------------------------------------------------

def test_dropout_matches_jax_and_keeps_expectation():
    drop = nn.Dropout(0.5)
    # eqx.nn.Dropout(0.5)(jnp.ones(8), key=jax.random.key(0))
    np.testing.assert_array_equal(drop(mnp.ones(8), key=KEY), [0, 0, 2, 2, 0, 2, 2, 0])
    # eqx.nn.Dropout(0.3)(jnp.arange(1., 7.), key=jax.random.key(3))
    np.testing.assert_allclose(nn.Dropout(0.3)(mnp.arange(1.0, 7.0), key=mt.random.key(3)),
                               [1.4285715, 0, 4.285714, 0, 7.1428576, 8.571428], rtol=1e-6)
    y = _np(nn.Dropout(0.3)(mnp.ones(20000), key=mt.random.key(1)))
    kept = y != 0
    assert abs(kept.mean() - 0.7) < 0.015
    np.testing.assert_allclose(y[kept], 1 / 0.7, rtol=1e-6)
    a = drop(mnp.ones(64), key=mt.random.key(5))
    np.testing.assert_array_equal(a, drop(mnp.ones(64), key=mt.random.key(5)))
    assert not np.array_equal(a, drop(mnp.ones(64), key=mt.random.key(6)))
    np.testing.assert_array_equal(mt.jit(drop)(mnp.ones(64), key=mt.random.key(5)), a)


def test_dropout_modes_and_errors():
    x = _rand((5,))
    assert nn.Dropout(0.5, inference=True)(x) is x
    assert nn.Dropout(0.5)(x, inference=True) is x
    assert nn.Dropout(0.0)(x) is x
    assert nn.inference_mode(nn.Dropout(0.5))(x) is x
    np.testing.assert_array_equal(nn.Dropout(1.0)(x, key=KEY), np.zeros(5))
    with pytest.raises(RuntimeError, match=r"Dropout\(p=0.5\) needs a key in training mode"):
        nn.Dropout(0.5)(x)
    with pytest.raises(ValueError, match=r"Dropout: p must be in \[0, 1\], got 1.5"):
        nn.Dropout(1.5)
    g = mt.grad(lambda x: mnp.sum(nn.Dropout(0.5)(x, key=KEY)))(mnp.ones(8))
    np.testing.assert_array_equal(g, [0, 0, 2, 2, 0, 2, 2, 0])


# MLP and Sequential --------------------------------------------------------------------------

def test_mlp_matches_equinox_and_numpy():
    mlp = nn.MLP(3, 2, 8, 2, key=KEY)
    assert [layer.weight.shape for layer in mlp.layers] == [(8, 3), (8, 8), (2, 8)]
    x = mnp.array([0.1, 0.2, 0.3])
    # eqx.nn.MLP(3, 2, 8, 2, key=jax.random.key(0))(jnp.array([0.1, 0.2, 0.3]))
    np.testing.assert_allclose(mlp(x), [-0.01245916, -0.2066471], rtol=1e-5, atol=1e-7)
    h = _np(x)
    for layer in mlp.layers[:-1]:
        h = np.maximum(_np(layer.weight) @ h + _np(layer.bias), 0)
    h = _np(mlp.layers[-1].weight) @ h + _np(mlp.layers[-1].bias)
    np.testing.assert_allclose(mlp(x), h, rtol=1e-5, atol=1e-7)
    scalar = nn.MLP("scalar", "scalar", 4, 1, key=KEY)
    np.testing.assert_allclose(scalar(mnp.array(0.5)), -0.575467, rtol=1e-5)
    assert len(nn.MLP(3, 2, 8, 0, key=KEY).layers) == 1
    assert nn.count_params(mlp) == 8 * 3 + 8 + 8 * 8 + 8 + 2 * 8 + 2
    tanh_mlp = nn.MLP(3, 2, 4, 1, activation=mnp.tanh, final_activation=mt.nn.sigmoid,
                      use_final_bias=False, key=KEY)
    assert tanh_mlp.layers[-1].bias is None and 0 < float(tanh_mlp(x)[0]) < 1


def test_mlp_vmap_jit_and_fd_gradients(x64):
    mlp = nn.MLP(3, 2, 4, 1, activation=mnp.tanh, dtype=mnp.float64, key=KEY)
    xs = mnp.asarray(np.random.default_rng(0).normal(size=(5, 3)))
    looped = mnp.stack([mlp(xs[i]) for i in range(5)])
    np.testing.assert_allclose(mt.vmap(mlp)(xs), looped, rtol=1e-12)
    np.testing.assert_allclose(mlp(xs), looped, rtol=1e-12)
    np.testing.assert_allclose(mt.jit(mlp)(xs), looped, rtol=1e-12)
    leaves, treedef = tree_flatten(mlp)

    def f(*params):
        return mnp.sum(tree_unflatten(treedef, params)(xs) ** 2)

    check_grads(f, [np.asarray(p) for p in leaves], order=1)


def test_training_step_with_plain_transformations():
    mlp = nn.MLP(2, 1, 16, 1, activation=mnp.tanh, key=KEY)
    rng = np.random.default_rng(0)
    x = mnp.asarray(rng.uniform(-1, 1, size=(64, 2)).astype(np.float32))
    y = mnp.sum(x * mnp.array([1.5, -2.0]), axis=1, keepdims=True)

    def loss(model, x, y):
        return mnp.mean((mt.vmap(model)(x) - y) ** 2)

    @mt.jit
    def step(model, x, y):
        value, grads = mt.value_and_grad(loss)(model, x, y)
        return tree_map(lambda p, g: p - 0.1 * g, model, grads), value

    first = None
    for _ in range(60):
        mlp, value = step(mlp, x, y)
        first = value if first is None else first
    assert float(value) < 0.2 * float(first)
    assert type(mlp) is nn.MLP and mlp.activation is mnp.tanh


def test_sequential_keys_state_and_indexing():
    seq = nn.Sequential([nn.Dropout(0.5), nn.Dropout(0.5)])
    # eqx.nn.Sequential([Dropout(0.5), Dropout(0.5)])(jnp.ones(6), key=jax.random.key(1))
    np.testing.assert_array_equal(seq(mnp.ones(6), key=mt.random.key(1)), [0, 0, 0, 4, 0, 0])
    lin = nn.Linear(3, 2, key=KEY)
    model = nn.Sequential([lin, nn.Lambda(mnp.tanh), mnp.sin])
    x = _rand((3,))
    np.testing.assert_allclose(model(x), np.sin(np.tanh(_np(lin(x)))), rtol=1e-6)
    assert len(model) == 3 and model[0] is lin and isinstance(model[1:], nn.Sequential)
    assert not model.is_stateful()
    with_bn, state = nn.make_with_state(nn.Sequential)([nn.Linear(3, 2, key=KEY),
                                                        nn.BatchNorm(2, "batch")])
    assert with_bn.is_stateful()
    xs = _rand((4, 3))
    y, state = mt.vmap(with_bn, axis_name="batch", in_axes=(0, None), out_axes=(0, None))(
        xs, state)
    h = _np(xs) @ _np(with_bn[0].weight).T + _np(with_bn[0].bias)
    np.testing.assert_allclose(y, (h - h.mean(0)) / np.sqrt(h.var(0) + 1e-5), rtol=1e-4,
                               atol=1e-5)
    np.testing.assert_allclose(state.get(with_bn[1].ema_state_index)[0], h.mean(0), rtol=1e-5)
    with pytest.raises(TypeError, match=r"Sequential: layer 1 \(BatchNorm\) is stateful"):
        with_bn(xs[0])


def test_optimiser_on_a_model():
    optim = mt.optim
    mlp = nn.MLP(2, 1, 8, 1, key=KEY)
    opt = optim.adam(1e-2)
    opt_state = opt.init(mlp)
    grads = mt.grad(lambda m: mnp.sum(m(mnp.ones(2)) ** 2))(mlp)
    updates, opt_state = mt.jit(opt.update)(grads, opt_state, mlp)
    new = optim.apply_updates(mlp, updates)
    assert type(new) is nn.MLP
    delta = _np(new.layers[0].weight) - _np(mlp.layers[0].weight)
    # Adam's first step moves every parameter with a nonzero gradient by lr
    moved = np.abs(_np(grads.layers[0].weight)) > 1e-8
    np.testing.assert_allclose(np.abs(delta[moved]), 1e-2, rtol=1e-3)


def test_jitted_training_with_state_keys_and_optimiser():
    k1, k2, k3 = mt.random.split(mt.random.key(7), 3)
    model, state = nn.make_with_state(nn.Sequential)([
        nn.Linear(2, 16, key=k1), nn.BatchNorm(16, "batch"), nn.Lambda(nn.relu),
        nn.Dropout(0.1), nn.Linear(16, 1, key=k2)])
    rng = np.random.default_rng(0)
    x = mnp.asarray(rng.uniform(-1, 1, size=(32, 2)).astype(np.float32))
    y = mnp.sum(x * x, axis=1, keepdims=True)
    opt = mt.optim.adamw(1e-2)
    opt_state = opt.init(model)

    def loss(model, state, x, y, key):
        keys = mt.random.split(key, x.shape[0])
        pred, state = mt.vmap(lambda x, k, s: model(x, s, key=k), axis_name="batch",
                              in_axes=(0, 0, None), out_axes=(0, None))(x, keys, state)
        return mnp.mean((pred - y) ** 2), state

    @mt.jit
    def step(model, state, opt_state, x, y, key):
        (value, state), grads = mt.value_and_grad(loss, has_aux=True)(model, state, x, y, key)
        updates, opt_state = opt.update(grads, opt_state, model)
        return mt.optim.apply_updates(model, updates), state, opt_state, value

    values = []
    for i in range(40):
        key = mt.random.fold_in(k3, i)
        model, state, opt_state, value = step(model, state, opt_state, x, y, key)
        values.append(float(value))
    assert values[-1] < 0.5 * values[0]
    assert type(model) is nn.Sequential and model[3].p == 0.1
    evaluated = nn.inference_mode(model)
    assert evaluated[1].inference and evaluated[3].inference and not model[3].inference
    pred, state2 = mt.vmap(evaluated, axis_name="batch", in_axes=(0, None),
                           out_axes=(0, None))(x, state)
    np.testing.assert_array_equal(state2.get(model[1].ema_state_index)[0],
                                  state.get(model[1].ema_state_index)[0])
    assert pred.shape == (32, 1) and np.isfinite(_np(pred)).all()


@pytest.mark.parametrize("make, shape", [
    (lambda dt: nn.LayerNorm(3, dtype=dt), (3,)),
    (lambda dt: nn.RMSNorm((2, 3), use_bias=True, dtype=dt), (2, 3)),
    (lambda dt: nn.GroupNorm(2, 4, dtype=dt), (4, 3)),
    (lambda dt: nn.MLP(3, 2, 3, 1, activation=mnp.tanh, dtype=dt, key=KEY), (3,)),
])
def test_layers_under_jit_vmap_and_grad(make, shape, x64):
    layer = make(mnp.float64)
    layer = tree_map(lambda p: p + 0.1 * mnp.arange(p.size).reshape(p.shape), layer)
    xs = mnp.asarray(np.random.default_rng(2).normal(size=(4,) + shape))
    looped = mnp.stack([layer(xs[i]) for i in range(4)])
    np.testing.assert_allclose(mt.vmap(layer)(xs), looped, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(mt.jit(layer)(xs[0]), looped[0], rtol=1e-12, atol=1e-12)
    leaves, treedef = tree_flatten(layer)

    def f(x, *params):
        return mnp.sum(mnp.sin(tree_unflatten(treedef, params)(x)))

    check_grads(f, [np.asarray(xs[0])] + [np.asarray(p) for p in leaves], order=1)


def test_pytorch_parity():
    x = mnp.asarray((np.arange(12, dtype=np.float32).reshape(4, 3) ** 1.5) / 10)
    # torch.nn.LayerNorm(3)(x), torch.nn.RMSNorm(3, eps=1e-5)(x)
    np.testing.assert_allclose(nn.LayerNorm(3)(x)[:2], [
        [-1.0893042, -0.23571272, 1.3250171], [-1.1981697, -0.0513314, 1.2495009]],
        rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(nn.RMSNorm(3)(x)[1:3], [
        [0.6123681, 0.9428024, 1.3176064], [0.7778434, 0.98019475, 1.1975682]], rtol=1e-5)
    # torch.nn.BatchNorm1d(3, momentum=0.1) in training mode: batch statistics and
    # running_mean (PyTorch's running_var is unbiased, ours biased as Equinox's)
    bn, state = nn.make_with_state(nn.BatchNorm)(3, None, momentum=0.9, mode="batch")
    y, state = bn(x, state)
    np.testing.assert_allclose(y[::3], [[-1.1410037, -1.1936625, -1.222104],
                                        [1.4868548, 1.4578606, 1.4397516]], rtol=1e-5)
    np.testing.assert_allclose(state.get(bn.batch_state_index)[0], [0.1172, 0.1479, 0.1828],
                               atol=1e-4)
