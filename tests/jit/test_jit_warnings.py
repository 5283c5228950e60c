"""jit's trace-time warning about Python loops that unroll into huge jaxprs."""

import warnings

import numpy as np
import pytest

import mytorch as mt
import mytorch.numpy as mnp


def test_jit_warns_about_an_unrolled_loop_at_the_loop_line():
    def body(x):
        for _ in range(1200):
            x = mnp.sin(x)  # UNROLLED
        return x

    line = body.__code__.co_firstlineno + 2
    with pytest.warns(UserWarning, match=rf"test_jit_warnings.py:{line} .*1200 equations"):
        out = mt.jit(body)(mnp.ones(2))
    want = np.ones(2, np.float32)
    for _ in range(1200):
        want = np.sin(want)
    np.testing.assert_allclose(np.asarray(out), want, rtol=1e-5)


def test_no_warning_for_a_short_loop_or_a_cache_hit():
    def body(x):
        for _ in range(10):
            x = mnp.sin(x)
        return x

    f = mt.jit(body)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f(mnp.ones(2))
        f(mnp.ones(2))


def test_toggling_explanations_does_not_retrace():
    calls = []

    def body(x):
        calls.append(1)
        return x * 2.0

    f = mt.jit(body)
    f(mnp.ones(2))
    mt.config.update("explain_cache_misses", True)
    try:
        f(mnp.ones(2))
    finally:
        mt.config.update("explain_cache_misses", False)
    f(mnp.ones(2))
    assert len(calls) == 1
