"""jit's trace-time warning about Python loops that unroll into huge jaxprs."""

import warnings

import numpy as np
import pytest

import mytorch as mt
import mytorch.numpy as mnp
from mytorch.transforms.optimize import unroll_warning


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


def test_no_warning_for_many_independent_equations_from_one_line():
    """A tree_map over many parameters (an optimiser's update on one line) makes many
    equations from one line, but as short independent chains: not an unrolled loop."""
    params = {f"w{i}": mnp.full(2, float(i)) for i in range(250)}

    def update(params):
        return mt.tree_util.tree_map(lambda p: mnp.sqrt(p * p + 1.0) * 0.5 - p / 3.0, params)

    closed = mt.make_jaxpr(update)(params)
    assert len(closed.jaxpr.eqns) > 1000  # all from one line, counted as before
    assert unroll_warning(closed, chain=0) is not None
    assert unroll_warning(closed) is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = mt.jit(update)(params)
    want = {k: np.sqrt(np.asarray(v) ** 2 + 1) * 0.5 - np.asarray(v) / 3
            for k, v in params.items()}
    for k in params:
        np.testing.assert_allclose(np.asarray(out[k]), want[k], rtol=1e-6)
