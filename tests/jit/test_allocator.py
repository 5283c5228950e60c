"""The heap setting behind `tune_malloc` (mytorch/backends/numpy/allocator.py)."""

import sys

import numpy as np
import pytest

import mytorch as mt
from mytorch.backends.numpy import allocator


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_glibc_accepts_the_settings_and_the_defaults():
    assert allocator.tune(True)
    assert allocator.tune(False)
    assert allocator.tune(True)


def test_the_option_toggles_and_results_do_not_change():
    f = mt.jit(lambda x: (x * 2.0).sum())
    x = mt.numpy.asarray(np.arange(300_000, dtype=np.float32))
    want = float(np.arange(300_000, dtype=np.float64).sum() * 2)
    for on in (False, True):
        mt.config.update("tune_malloc", on)
        np.testing.assert_allclose(float(f(x)), want, rtol=1e-5)
    assert mt.config.tune_malloc is True
