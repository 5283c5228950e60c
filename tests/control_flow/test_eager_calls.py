"""Call and loop primitives run eagerly are compiled as one equation by their device's
backend: results against NumPy loops, one compilation per program structure, debug_nans
naming the primitive inside the body and the user's line."""

import inspect

import numpy as np
import pytest

import mytorch.numpy as mnp
from mytorch import lax
from mytorch.backends.numpy import numpy_backend
from mytorch.core import backend as backend_module


@pytest.fixture
def compiles(monkeypatch):
    """The names of the programs the NumPy backend compiles inside the test."""
    seen, compile_fn = [], numpy_backend.compile

    def counting(jaxpr, consts, options):
        seen.append(options.name)
        return compile_fn(jaxpr, consts, options)

    monkeypatch.setattr(numpy_backend, "compile", counting)
    backend_module._CALLS.clear()
    return seen


def test_loops_traced_again_from_the_same_code_compile_once(compiles):
    x = np.linspace(-1.0, 1.0, 4).astype(np.float32)
    y, want = mnp.asarray(x), x
    for i in range(6):  # each call traces its branches anew: same structure, one compile
        y = lax.cond(i % 2 == 0, lambda a: a + 1.0, lambda a: a * 2.0, y)
        want = want + np.float32(1.0) if i % 2 == 0 else want * np.float32(2.0)
    np.testing.assert_allclose(np.asarray(y), want, rtol=1e-6)
    for _ in range(3):
        c = lax.fori_loop(0, 5, lambda i, c: c * 0.5 + 1.0, mnp.asarray(x))
    want = x
    for _ in range(5):
        want = want * np.float32(0.5) + np.float32(1.0)
    np.testing.assert_allclose(np.asarray(c), want, rtol=1e-6)
    assert compiles.count("cond_eager") == 1 and compiles.count("scan_eager") == 1


def test_a_different_constant_compiles_a_different_program(compiles):
    x = mnp.asarray([1.0, -1.0])
    a = lax.cond(True, lambda v: v * 0.0, lambda v: v, x)
    b = lax.cond(True, lambda v: v * -0.0, lambda v: v, x)
    assert list(np.signbit(np.asarray(a))) == [False, True]
    assert list(np.signbit(np.asarray(b))) == [True, False]
    assert compiles.count("cond_eager") == 2


def test_eager_loops_keep_the_abstract_evaluation_types():
    (i, v) = lax.while_loop(lambda c: c[0] < 4, lambda c: (c[0] + 1, c[1] * 2), (0, 1.0))
    assert (i.dtype, i.weak_type, int(i)) == (np.int32, True, 4)
    assert (v.dtype, v.weak_type, float(v)) == (np.float32, True, 16.0)
    c, ys = lax.scan(lambda c, x: (c + x, c), 0.0, mnp.arange(3, dtype=mnp.float16))
    assert (c.dtype, c.weak_type, ys.dtype) == (np.float16, False, np.float16)


def test_debug_nans_names_the_primitive_in_an_eager_loop_body_and_the_line(debug_nans):
    line = inspect.currentframe().f_lineno + 1
    body = lambda c, x: (c + mnp.log(x), c)  # noqa: E731
    with pytest.raises(FloatingPointError) as info:
        lax.scan(body, 0.0, mnp.asarray([1.0, -1.0, 2.0]))
    assert "log(" in str(info.value) and f"test_eager_calls.py:{line}" in str(info.value)
    c, _ = lax.scan(body, 0.0, mnp.asarray([1.0, 2.0]))  # NaN-free inputs pass
    np.testing.assert_allclose(float(c), np.log(2.0), rtol=1e-6)
