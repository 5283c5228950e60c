"""64-byte aligned buffers (backends/numpy/aligned.py): large host data becomes an aligned
copy, compiled functions computing large arrays allocate them aligned, and the allocator
behaves as NumPy's own (zeroed memory, resizing, freeing arrays of both kinds).
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch.backends.numpy import aligned, native

pytestmark = pytest.mark.skipif(not aligned.available(),
                                reason=f"no aligned allocator here: {native.unavailable_reason()}")

ALIGNED = "mytorch_aligned64"


def _address(x):
    return np.asarray(x).__array_interface__["data"][0]


@settings(max_examples=20, deadline=None)
@given(st.integers(1, 300), st.integers(1, 300), st.sampled_from([np.float32, np.float64,
                                                                    np.int8, np.complex64]))
def test_host_data_becomes_an_aligned_copy_when_large(rows, cols, dtype):
    host = np.arange(rows * cols).astype(dtype).reshape(rows, cols)
    x = mnp.asarray(host)
    buf = x._buf
    np.testing.assert_array_equal(buf, host)
    assert not np.shares_memory(buf, host)
    if buf.nbytes >= aligned.LARGE_BYTES:  # (float64 becomes float32 without x64)
        assert aligned.handler_name(buf) == ALIGNED and _address(buf) % 64 == 0
    else:
        assert aligned.handler_name(buf) != ALIGNED


def test_compiled_functions_allocate_large_results_aligned():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((200, 300)).astype(np.float32)
    b = rng.standard_normal((300, 100)).astype(np.float32)

    def f(a, b):
        return mnp.maximum(a @ b, 0.0), a * 2.0, mnp.sum(a)

    mt.clear_caches()
    assert "_aligned_enter()" in mt.jit(f).lower(a, b).compile().as_text()
    relu, twice, total = mt.jit(f)(a, b)
    for out in (relu, twice):
        assert aligned.handler_name(out._buf) == ALIGNED and _address(out) % 64 == 0
    np.testing.assert_allclose(np.asarray(relu), np.maximum(a @ b, 0), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(np.asarray(twice), a * 2)
    np.testing.assert_allclose(float(total), a.astype(np.float64).sum(), rtol=1e-5)
    # a function of small arrays does not switch allocators at all
    assert "_aligned_enter" not in mt.jit(f).lower(a[:8, :8], b[:8, :8]).compile().as_text()


def test_the_allocator_zeroes_resizes_and_frees():
    token = aligned.enter()
    try:
        zeros = np.zeros((512, 256))  # calloc
        grown = np.arange(20000.0)
        grown.resize(50000, refcheck=False)  # realloc: the first values kept
        shrunk = np.arange(20000.0)
        shrunk.resize(7, refcheck=False)
        tiny = np.arange(3.0)
        tiny.resize(40000, refcheck=False)
        small = np.ones(3)
        chunks = [np.full(10000 + k, float(k)) for k in range(50)]
    finally:
        aligned.leave(token)
    assert aligned.handler_name(zeros) == ALIGNED and not zeros.any()
    assert _address(zeros) % 64 == 0
    np.testing.assert_array_equal(grown[:20000], np.arange(20000.0))
    np.testing.assert_array_equal(shrunk, np.arange(7.0))
    np.testing.assert_array_equal(tiny[:3], np.arange(3.0))
    assert all(_address(a) % 64 == 0 for a in (grown, shrunk, tiny, small))
    assert small.sum() == 3 and aligned.handler_name(small) == ALIGNED
    assert all(c[-1] == k for k, c in enumerate(chunks))
    del chunks  # freed by the allocator that made them
    after = np.empty(100000)
    assert aligned.handler_name(after) != ALIGNED  # the default allocator is back
    aligned.leave(None)  # a token of nothing: no-op


def test_turned_off_by_the_environment(monkeypatch):
    monkeypatch.setenv("MYTORCH_ALIGNED", "0")
    aligned._module.cache_clear()
    try:
        assert not aligned.available() and aligned.enter() is None
        x = mnp.asarray(np.ones((300, 300), np.float32))
        assert aligned.handler_name(x._buf) != ALIGNED
    finally:
        monkeypatch.delenv("MYTORCH_ALIGNED")
        aligned._module.cache_clear()
    assert aligned.available()
