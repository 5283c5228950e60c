"""Donated buffers: updated in place when nothing else can read them, copied otherwise."""

import numpy as np

import mytorch as mt
import mytorch.numpy as mnp


def _address(a):
    return a._buf.__array_interface__["data"][0]  # an int: holds no reference


def test_an_unshared_donated_buffer_is_updated_in_place():
    f = mt.jit(lambda x: x * 3.0 + 1.0, donate_argnums=0)
    for _ in range(3):  # the tracing call and the cached fast path
        x = mnp.asarray(np.arange(5, dtype=np.float32))
        addr = _address(x)
        out = f(x)
        np.testing.assert_array_equal(np.asarray(out), np.arange(5) * 3.0 + 1.0)
        assert _address(out) == addr


def test_a_shared_donated_buffer_is_copied_first():
    f = mt.jit(lambda x: x * 3.0 + 1.0, donate_argnums=0)
    for _ in range(3):
        x = mnp.asarray(np.arange(5, dtype=np.float32))
        y = mt.lax.stop_gradient(x)  # eagerly a second array on the same buffer
        assert y._buf is x._buf
        np.testing.assert_array_equal(np.asarray(f(x)), np.arange(5) * 3.0 + 1.0)
        np.testing.assert_array_equal(np.asarray(y), np.arange(5))


def test_donated_pytree_leaves_and_the_invalidated_array():
    @mt.jit
    def step(p, g):
        return {k: p[k] - 0.5 * g[k] for k in p}

    step = mt.jit(step.__wrapped__, donate_argnums=0)
    p = {"w": mnp.ones((3, 2)), "b": mnp.zeros(2)}
    g = {"w": mnp.ones((3, 2)), "b": mnp.ones(2)}
    new = step(p, g)
    np.testing.assert_array_equal(np.asarray(new["w"]), np.full((3, 2), 0.5))
    np.testing.assert_array_equal(np.asarray(new["b"]), np.full(2, -0.5))
    try:
        p["w"].shape
    except RuntimeError as err:
        assert "donated to jit(step)" in str(err)
    else:
        raise AssertionError("a donated array must not be usable")
    np.testing.assert_array_equal(np.asarray(g["w"]), np.ones((3, 2)))  # not donated
