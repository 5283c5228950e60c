"""pmap over the GPUs with NCCL: every collective and a data-parallel training step
against the same computation on one device (the CPU). Needs at least 2 GPUs."""

import numpy as np
import pytest

import mytorch as mt
import mytorch.lax as lax
import mytorch.numpy as mnp
from tests.gpu.compare import assert_matches
from tests.gpu.conftest import placed_on

pytestmark = pytest.mark.gpu
TOL = (1e-5, 1e-6)


@pytest.fixture
def devs(gpus):
    if len(gpus) < 2:
        pytest.skip(f"fewer than 2 GPUs for NCCL (found {len(gpus)})")
    return gpus


def _pmap(fn, devs, **kw):
    return mt.pmap(fn, axis_name="i", devices=devs, **kw)


def _data(devs, *shape, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((len(devs), *shape)).astype(np.float32)


def _close(got, want, tol=TOL):
    np.testing.assert_allclose(np.asarray(got), want, rtol=tol[0], atol=tol[1])


def test_psum_pmax_pmin_pmean(devs):
    x = _data(devs, 3, 5)
    got = _pmap(lambda a: (lax.psum(a, "i"), lax.pmax(a, "i"), lax.pmin(a, "i"),
                           lax.pmean(a, "i")), devs)(x)
    n = len(devs)
    for g, w in zip(got, (x.sum(0), x.max(0), x.min(0), x.mean(0)), strict=True):
        _close(g, np.broadcast_to(w, (n, 3, 5)), (1e-5, 1e-5))


def test_psum_of_ints_and_bf16(devs):
    x = np.arange(len(devs) * 6, dtype=np.int32).reshape(len(devs), 6)
    np.testing.assert_array_equal(np.asarray(_pmap(lambda a: lax.psum(a, "i"), devs)(x)),
                                  np.broadcast_to(x.sum(0), x.shape))
    y = (np.arange(len(devs) * 4).reshape(len(devs), 4) / 8).astype(mnp.bfloat16)
    got = _pmap(lambda a: lax.psum(a, "i"), devs)(y)
    _close(np.asarray(got).astype(np.float32),
           np.broadcast_to(y.astype(np.float32).sum(0), y.shape), (1e-2, 1e-2))


def test_all_gather_tiled_and_stacked(devs):
    x = _data(devs, 2, 3)
    stacked = _pmap(lambda a: lax.all_gather(a, "i"), devs)(x)
    tiled = _pmap(lambda a: lax.all_gather(a, "i", axis=1, tiled=True), devs)(x)
    for d in range(len(devs)):
        _close(np.asarray(stacked)[d], x)
        _close(np.asarray(tiled)[d], np.concatenate(list(x), axis=1))


def test_ppermute_ring_and_axis_index(devs):
    n = len(devs)
    x = _data(devs, 4)
    ring = [(i, (i + 1) % n) for i in range(n)]
    got = _pmap(lambda a: (lax.ppermute(a, "i", ring), lax.axis_index("i")), devs)(x)
    _close(got[0], np.roll(x, 1, axis=0))
    np.testing.assert_array_equal(np.asarray(got[1]), np.arange(n))


def test_psum_scatter_and_all_to_all(devs):
    n = len(devs)
    x = _data(devs, n * 2, 3)
    scattered = _pmap(lambda a: lax.psum_scatter(a, "i", tiled=True), devs)(x)
    _close(scattered, x.sum(0).reshape(n, 2, 3), (1e-5, 1e-5))
    swapped = _pmap(lambda a: lax.all_to_all(a, "i", 0, 0, tiled=True), devs)(x)
    want = x.reshape(n, n, 2, 3).transpose(1, 0, 2, 3).reshape(n, n * 2, 3)
    _close(swapped, want)


def test_results_live_on_the_gpus(devs):
    out = _pmap(lambda a: a * 2, devs)(_data(devs, 3))
    shards = getattr(out, "addressable_shards", None)
    if shards is not None:
        assert [s.device for s in shards] == list(devs)
    _close(out, _data(devs, 3) * 2)


def _loss(w, x, y):
    return mnp.mean((mnp.tanh(x @ w["a"]) @ w["b"] - y) ** 2)


def test_data_parallel_step_matches_one_device(devs, cpu):
    """Each GPU takes a shard of the batch, grads are averaged with pmean: the update equals
    one full-batch step on the CPU."""
    n = len(devs)
    rng = np.random.default_rng(3)
    w = {"a": rng.standard_normal((8, 16), np.float32) / 3,
         "b": rng.standard_normal((16, 2), np.float32) / 3}
    x = rng.standard_normal((n * 4, 8)).astype(np.float32)
    y = rng.standard_normal((n * 4, 2)).astype(np.float32)

    def step(w, x, y):
        loss, g = mt.value_and_grad(_loss)(w, x, y)
        g = lax.pmean(g, "i")
        return mt.tree_util.tree_map(lambda p, d: p - 0.1 * d, w, g), lax.pmean(loss, "i")

    p_step = _pmap(step, devs, in_axes=(None, 0, 0))
    for _ in range(3):
        w_new, loss = p_step(w, x.reshape(n, 4, 8), y.reshape(n, 4, 2))
        with placed_on(cpu):
            args = mt.device_put((w, x, y), cpu)
            ref_loss, ref_g = mt.value_and_grad(_loss)(*args)
        ref_w = {k: w[k] - 0.1 * np.asarray(ref_g[k]) for k in w}
        for k in w:
            for d in range(n):
                _close(np.asarray(w_new[k])[d], ref_w[k], (1e-4, 1e-5))
        _close(np.asarray(loss), np.full(n, float(ref_loss)), (1e-5, 1e-6))
        w = {k: np.asarray(w_new[k])[0] for k in w}


def test_pmap_of_jit_with_grad(devs, cpu):
    x = _data(devs, 5, seed=4)
    f = _pmap(mt.jit(mt.grad(lambda a: mnp.sum(mnp.sin(a) * lax.psum(a, "i")))), devs)
    with placed_on(cpu):
        want = mt.vmap(mt.grad(lambda a: mnp.sum(mnp.sin(a) * lax.psum(a, "i"))),
                       axis_name="i")(mt.device_put(x, cpu))
    assert_matches(np.asarray(f(x)), np.asarray(want), tol=(1e-5, 1e-6))
