"""pmap merges its body's gradient psums into buckets of `config.psum_bucket_bytes`."""

import numpy as np
import pytest

import mytorch as mt
import mytorch.numpy as mnp
from mytorch import lax
from mytorch import pmap_rules


@pytest.fixture
def bucket_bytes():
    before = mt.config.psum_bucket_bytes
    yield lambda n: mt.config.update("psum_bucket_bytes", n)
    mt.config.update("psum_bucket_bytes", before)


def _forward(p, x):
    h = x
    for k in sorted(p):
        h = mnp.tanh(h @ p[k])
    return h


def _step(params, x):
    return lax.pmean(mt.grad(lambda p: mnp.sum(mnp.square(_forward(p, x))))(params), "d")


def _psums_compiled():
    """The number of psum equations in the bodies pmap compiled most recently."""
    _, reps = list(pmap_rules._replicas.values())[-1]
    return sum(e.primitive.name == "psum" for e in reps.closed.jaxpr.eqns)


@pytest.mark.parametrize("n", [2, 4])
def test_one_bucket_or_one_psum_per_gradient_same_bits(bucket_bytes, n):
    rng = np.random.default_rng(0)
    params = {f"w{i}": mnp.asarray(rng.normal(size=(4, 4)).astype(np.float32) * 0.5)
              for i in range(5)}
    x = mnp.asarray(rng.normal(size=(n, 3, 4)).astype(np.float32))
    step = mt.pmap(_step, "d", in_axes=(None, 0), devices=mt.devices()[:n])
    results = {}
    for size, want_psums in ((1, 5), (2**20, 1)):
        bucket_bytes(size)
        results[size] = step(params, x)
        assert _psums_compiled() == want_psums
    for k in params:  # a psum of a concatenation sums the same numbers: the same bits
        np.testing.assert_array_equal(np.asarray(results[1][k]), np.asarray(results[2**20][k]))
    # and the mean gradient is the single-device gradient of the mean loss
    whole = mt.grad(lambda p: sum(
        mnp.sum(mnp.square(_forward(p, x[i]))) for i in range(n)) / n)(params)
    for k in params:
        np.testing.assert_allclose(np.asarray(results[1][k])[0], np.asarray(whole[k]),
                                   rtol=2e-5, atol=1e-6)

