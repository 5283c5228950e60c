"""Nested pmap (a 2-D mesh of devices) against the un-nested computation (vmap of vmap),
and pmap's partial evaluation inside jit (residuals stacked over the replicas)."""

import numpy as np
import pytest

import mytorch as mt
import mytorch.numpy as mnp
from mytorch import lax

RNG = np.random.default_rng(2)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def inner(v):  # one device of the mesh: v of shape (3,)
    return (lax.psum(v, "model") * lax.axis_index("data")
            + lax.psum(v, ("data", "model")) + lax.axis_index("model"))


def outer(v):  # one row of the mesh: v of shape (n_model, 3)
    return mnp.sin(v).sum() + mt.pmap(inner, "model")(v)


def reference(v):
    return mnp.sin(v).sum() + mt.vmap(inner, axis_name="model")(v)


@pytest.mark.parametrize("shape", [(2, 4, 3), (4, 2, 3), (2, 2, 3)])
def test_nested_pmap_matches_vmap_of_vmap(shape):
    x = rand(*shape)
    got = mt.pmap(outer, "data")(x)
    want = mt.vmap(reference, axis_name="data")(x)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5)


def test_grad_of_nested_pmap():
    x = rand(2, 4, 3)

    def loss(f):
        return lambda x: mnp.sum(f(x) ** 2)

    got = mt.grad(loss(mt.pmap(outer, "data")))(x)
    want = mt.grad(loss(mt.vmap(reference, axis_name="data")))(x)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-4, atol=1e-5)


def test_nested_pmap_needs_the_whole_mesh():
    with pytest.raises(ValueError, match=r"needs 12 devices, but there are 8"):
        mt.pmap(outer, "data")(rand(3, 4, 3))


def test_grad_of_jit_of_pmap_keeps_stacked_residuals():
    x = rand(4, 5)

    def f(x):
        return mnp.sum(mnp.tanh(mt.pmap(lambda v: mnp.sin(v) * lax.axis_index("i"), "i")(x)))

    def g(x):
        return mnp.sum(mnp.tanh(mt.vmap(lambda v: mnp.sin(v) * lax.axis_index("i"),
                                        axis_name="i")(x)))

    np.testing.assert_allclose(np.asarray(mt.grad(mt.jit(f))(x)),
                               np.asarray(mt.grad(g)(x)), rtol=1e-5, atol=1e-6)
