"""mt.nn.MoE: routing, capacity and dropped tokens against a per-token NumPy loop, the
load-balancing loss against its formula, gradients against finite differences, and the
expert-parallel mode (experts sharded over a named axis, tokens exchanged with all_to_all)
under vmap and pmap against the local mode on the same global tokens."""

import math

import numpy as np
import pytest

import mytorch as mt
import mytorch.numpy as mnp
from mytorch import nn


@pytest.fixture
def four_devices():
    """Four virtual CPU devices, restored afterwards."""
    before = mt.config.num_cpu_devices
    mt.config.update("num_cpu_devices", 4)
    yield mt.devices()
    mt.config.update("num_cpu_devices", before)


def gelu(z):
    return 0.5 * z * (1 + np.tanh(np.sqrt(2 / np.pi) * (z + 0.044715 * z ** 3)))


def reference(layer, x):
    """The layer's definition, one token and one choice at a time: route each token to its
    k most probable experts, fill each expert's `capacity` slots in token order (all first
    choices before any second choice), add each kept expert's MLP output times its gate."""
    p = {f: np.asarray(getattr(layer, f), np.float64)
         for f in ("router", "w_in", "b_in", "w_out", "b_out")}
    x = np.asarray(x, np.float64)
    tokens, e, k = len(x), layer.n_experts, layer.k
    logits = x @ p["router"].T
    probs = np.exp(logits - logits.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    choices = np.argsort(-probs, axis=-1, kind="stable")[:, :k]
    chosen = np.take_along_axis(probs, choices, -1)
    gates = chosen if k == 1 else chosen / chosen.sum(-1, keepdims=True)
    capacity = math.ceil(k * tokens / e * layer.capacity_factor)
    fill, out, dropped = np.zeros(e, int), np.zeros_like(x), 0
    for j in range(k):
        for t in range(tokens):
            ex = choices[t, j]
            if fill[ex] >= capacity:
                dropped += 1
                continue
            fill[ex] += 1
            h = gelu(x[t] @ p["w_in"][ex] + p["b_in"][ex])
            out[t] += gates[t, j] * (h @ p["w_out"][ex] + p["b_out"][ex])
    load = np.bincount(choices.ravel(), minlength=e)
    first = np.bincount(choices[:, 0], minlength=e) / tokens
    aux = e * np.sum(first * probs.mean(0))
    return out, {"aux_loss": aux, "load": load, "dropped": dropped}


def tokens(n, d, seed=0):
    return np.random.default_rng(seed).normal(size=(n, d)).astype(np.float32)


@pytest.mark.parametrize("k,factor", [(1, 1.25), (1, 0.5), (2, 1.0), (2, 0.5)])
def test_matches_the_per_token_loop(k, factor):
    layer = nn.MoE(6, 12, 4, k=k, capacity_factor=factor, key=mt.random.key(1))
    x = tokens(40, 6)
    y, aux = layer(x)
    want, want_aux = reference(layer, x)
    np.testing.assert_allclose(np.asarray(y), want, rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(np.asarray(aux["load"]), want_aux["load"])
    assert int(aux["dropped"]) == want_aux["dropped"]
    np.testing.assert_allclose(float(aux["aux_loss"]), want_aux["aux_loss"], rtol=1e-5)
    if factor < 1:
        assert want_aux["dropped"] > 0            # small capacity: some tokens are dropped
        dropped_rows = np.all(want == 0, axis=-1)
        np.testing.assert_array_equal(np.asarray(y)[dropped_rows], 0)


def test_leading_axes_are_tokens_and_jit_agrees():
    layer = nn.MoE(4, 8, 4, k=2, capacity_factor=0.75, key=mt.random.key(2))
    x = tokens(24, 4).reshape(2, 3, 4, 4)
    y, aux = layer(x)
    assert y.shape == (2, 3, 4, 4)
    want, want_aux = reference(layer, x.reshape(-1, 4))
    np.testing.assert_allclose(np.asarray(y).reshape(-1, 4), want, rtol=1e-4, atol=1e-5)
    yj, auxj = mt.jit(lambda m, v: m(v))(layer, x)
    np.testing.assert_allclose(np.asarray(yj), np.asarray(y), rtol=1e-6, atol=1e-6)
    assert int(auxj["dropped"]) == int(aux["dropped"]) == want_aux["dropped"]
    assert layer.capacity(24) == math.ceil(2 * 24 / 4 * 0.75)


def test_aux_loss_is_one_when_balanced_and_e_when_collapsed():
    layer = nn.MoE(2, 4, 4, key=mt.random.key(0))
    flat = nn.tree_at(lambda m: m.router, layer, replace=mnp.zeros((4, 2)))
    _, aux = flat(tokens(8, 2))                       # uniform probabilities: ties go to 0
    # every first choice is expert 0 (f = [1, 0, 0, 0]) and P = 1/4 everywhere
    np.testing.assert_allclose(float(aux["aux_loss"]), 4 * 1 * 0.25)
    np.testing.assert_array_equal(np.asarray(aux["load"]), [8, 0, 0, 0])
    assert int(aux["dropped"]) == 8 - layer.capacity(8)
    big = nn.tree_at(lambda m: m.router, layer,
                     replace=mnp.asarray([[100.0, 0], [0, 100], [-100, 0], [0, -100]]))
    x = np.array([[1, 0], [0, 1], [-1, 0], [0, -1]] * 2, np.float32)
    _, aux = big(x)                                   # one-hot probabilities, even split
    np.testing.assert_allclose(float(aux["aux_loss"]), 1.0, rtol=1e-5)
    assert int(aux["dropped"]) == 0


def test_grad_matches_finite_differences(x64):
    layer = nn.MoE(3, 5, 4, k=2, capacity_factor=0.75, dtype=mnp.float64,
                   key=mt.random.key(3))
    x = tokens(10, 3).astype(np.float64)
    r = np.random.default_rng(1).normal(size=(10, 3))

    def loss(m, v):
        y, aux = m(v)
        return mnp.sum(y * r) + 0.5 * aux["aux_loss"]

    assert int(layer(x)[1]["dropped"]) > 0
    gm, gx = mt.grad(loss, argnums=(0, 1))(layer, x)
    eps = 1e-6
    for name in ("router", "w_in", "b_out"):
        p = np.asarray(getattr(layer, name))
        idx = tuple(np.unravel_index(7 % p.size, p.shape))
        bump = np.zeros_like(p)
        bump[idx] = eps
        hi = nn.tree_at(lambda m: getattr(m, name), layer, replace=mnp.asarray(p + bump))
        lo = nn.tree_at(lambda m: getattr(m, name), layer, replace=mnp.asarray(p - bump))
        fd = (float(loss(hi, x)) - float(loss(lo, x))) / (2 * eps)
        np.testing.assert_allclose(np.asarray(getattr(gm, name))[idx], fd, rtol=1e-6,
                                   atol=1e-9)
    for t, c in [(0, 0), (4, 2), (9, 1)]:
        bump = np.zeros_like(x)
        bump[t, c] = eps
        fd = (float(loss(layer, x + bump)) - float(loss(layer, x - bump))) / (2 * eps)
        np.testing.assert_allclose(np.asarray(gx)[t, c], fd, rtol=1e-6, atol=1e-9)


def _layers(k, factor, n_experts=8):
    local = nn.MoE(6, 10, n_experts, k=k, capacity_factor=factor, key=mt.random.key(5))
    ep = nn.MoE(6, 10, n_experts, k=k, capacity_factor=factor, axis_name="e",
                key=mt.random.key(5))
    return local, nn.shard_experts(ep, 4)


def _call(m, v):
    return m(v)


@pytest.mark.parametrize("k,factor", [(1, 2.0), (2, 0.6)])
def test_expert_parallel_under_vmap_equals_local(k, factor):
    local, sharded = _layers(k, factor)
    x = tokens(48, 6, seed=k)
    y, aux = local(x)
    axes = nn.expert_in_axes(sharded)
    ye, auxe = mt.vmap(_call, in_axes=(axes, 0), axis_name="e")(sharded, x.reshape(4, 12, 6))
    np.testing.assert_allclose(np.asarray(ye).reshape(48, 6), np.asarray(y), rtol=1e-5,
                               atol=1e-6)
    for r in range(4):                                # every replica sees the global totals
        np.testing.assert_array_equal(np.asarray(auxe["load"])[r], np.asarray(aux["load"]))
        assert int(np.asarray(auxe["dropped"])[r]) == int(aux["dropped"])
        np.testing.assert_allclose(np.asarray(auxe["aux_loss"])[r], float(aux["aux_loss"]),
                                   rtol=1e-6)
    assert (int(aux["dropped"]) > 0) == (factor < 1)   # a generous capacity drops none


@pytest.mark.parametrize("k,factor", [(1, 1.0), (2, 0.6)])
def test_expert_parallel_under_pmap_equals_local(four_devices, k, factor):
    local, sharded = _layers(k, factor)
    x = tokens(48, 6, seed=k)
    y, aux = local(x)
    axes = nn.expert_in_axes(sharded)
    ye, auxe = mt.pmap(_call, "e", in_axes=(axes, 0))(sharded, x.reshape(4, 12, 6))
    np.testing.assert_allclose(np.asarray(ye).reshape(48, 6), np.asarray(y), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_array_equal(np.asarray(auxe["load"]), np.tile(aux["load"], (4, 1)))
    np.testing.assert_array_equal(np.asarray(auxe["dropped"]), [int(aux["dropped"])] * 4)
    np.testing.assert_allclose(np.asarray(auxe["aux_loss"]), [float(aux["aux_loss"])] * 4,
                               rtol=1e-6)


def _global_loss(r):
    def loss(m, v):
        y, aux = m(v)
        return mnp.sum(y * r) / v.shape[0] + 0.1 * aux["aux_loss"]
    return loss


def test_expert_parallel_grads_equal_local_grads(four_devices):
    """grad around the vmap/pmap, and grad inside the pmap's replicas combined by
    average_grads, both give the local layer's gradient (resharded)."""
    local, sharded = _layers(2, 0.6)
    x = tokens(48, 6, seed=3)
    r = np.random.default_rng(4).normal(size=(48, 6)).astype(np.float32)
    want = nn.shard_experts(mt.grad(_global_loss(r))(local, x), 4)
    axes = nn.expert_in_axes(sharded)
    xs, rs = x.reshape(4, 12, 6), r.reshape(4, 12, 6)

    def replica_loss(m, v, rr):                       # this replica's share of the loss
        y, aux = m(v)
        return mnp.sum(y * rr) / 48 + 0.1 * aux["aux_loss"] / 4

    def check(got):
        for name in ("router", "w_in", "b_in", "w_out", "b_out"):
            np.testing.assert_allclose(np.asarray(getattr(got, name)),
                                       np.asarray(getattr(want, name)), rtol=2e-4, atol=1e-6)

    for mapped in (mt.vmap(replica_loss, in_axes=(axes, 0, 0), axis_name="e"),
                   mt.pmap(replica_loss, "e", in_axes=(axes, 0, 0))):
        check(mt.grad(lambda m: mnp.sum(mapped(m, xs, rs)))(sharded))

    def inside(m, v, rr):                             # each replica: its own mean loss
        return nn.average_grads(mt.grad(_global_loss(rr))(m, v), "e")

    check(mt.pmap(inside, "e", in_axes=(axes, 0, 0), out_axes=axes)(sharded, xs, rs))


def test_errors_name_the_layer():
    layer = nn.MoE(4, 8, 6, key=mt.random.key(0))
    with pytest.raises(ValueError, match=r"MoE\(d_model=4.*expects input \(\.\.\., 4\)"):
        layer(np.ones((3, 5), np.float32))
    with pytest.raises(ValueError, match="k must be 1 or 2"):
        nn.MoE(4, 8, 6, k=3, key=mt.random.key(0))
    with pytest.raises(ValueError, match="do not divide among 4 replicas"):
        nn.shard_experts(layer, 4)
    unsharded = nn.MoE(4, 8, 8, axis_name="e", key=mt.random.key(0))
    with pytest.raises(ValueError, match="multiple of the axis size"):
        mt.vmap(_call, in_axes=(None, 0), axis_name="e")(unsharded,
                                                         np.ones((2, 3, 4), np.float32))
    with pytest.raises(NameError, match="unbound axis name 'e'"):
        nn.MoE(4, 8, 8, axis_name="e", key=mt.random.key(0))(np.ones((3, 4), np.float32))
