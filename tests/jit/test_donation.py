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


def _adam(p, m, v, x):
    g = x.T @ (x @ p)  # an allocated intermediate that dies inside the fused update
    m = 0.9 * m + 0.1 * g
    v = 0.999 * v + 0.001 * g * g
    return p - 0.01 * m / (mnp.sqrt(v) + 1e-8), m, v


def test_fused_update_writes_over_dying_inputs(monkeypatch):
    """A fused run may write a result over an input it has finished reading (a donated
    buffer or a dead intermediate): values match eager, nothing aliases wrongly."""
    from mytorch.backends.numpy import fusion, native

    monkeypatch.setattr(native, "available", lambda: False)  # the blocks (native: elsewhere)
    monkeypatch.setattr(fusion, "MIN_SIZE", 4)
    monkeypatch.setattr(fusion, "BLOCK_BYTES", 32)
    monkeypatch.setattr(fusion, "MIN_BLOCK", 1)
    mt.clear_caches()
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(s).astype(np.float32) for s in ((6, 5), (6, 5), (6, 5), (3, 6))]
    args[2] = np.abs(args[2])
    want = _adam(*[mnp.asarray(a) for a in args])
    f = mt.jit(_adam, donate_argnums=(0, 1, 2))
    for _ in range(2):
        mine = [mnp.asarray(a) for a in args]
        addrs = {_address(a) for a in mine[:3]}
        got = f(*mine)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5, atol=1e-6)
        assert len({_address(o) for o in got}) == 3  # three distinct results
        assert {_address(o) for o in got} <= addrs | {_address(o) for o in got}
    mt.clear_caches()
    undonated = mt.jit(_adam)(*[mnp.asarray(a) for a in args])
    for g, w in zip(undonated, want, strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5, atol=1e-6)
