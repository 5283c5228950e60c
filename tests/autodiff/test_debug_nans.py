"""debug_nans points at the user's line where a NaN first appears, forward and backward."""

import pytest

import mytorch as mt
import mytorch.numpy as mnp


def _log_where(x):
    y = mnp.where(x > 0, mnp.log(x), 0.0)  # NAN-LINE: the where trap
    return y.sum()


def _line_of(marker):
    import inspect

    src, start = inspect.getsourcelines(_log_where)
    return start + next(i for i, line in enumerate(src) if marker in line)


def test_forward_nan_names_primitive_and_line(debug_nans):
    with pytest.raises(FloatingPointError, match=r"log produced a NaN .*test_debug_nans.py:\d+"):
        mnp.log(mnp.array([-1.0, 2.0]))


def test_backward_nan_points_at_forward_line(debug_nans):
    with pytest.raises(FloatingPointError) as info:
        mt.grad(_log_where)(mnp.array([0.0, 1.0]))
    assert f"test_debug_nans.py:{_line_of('NAN-LINE')}" in str(info.value)


def test_no_check_without_the_flag():
    g = mt.grad(_log_where)(mnp.array([0.0, 1.0]))
    assert mnp.isnan(g[0]) and float(g[1]) == 1.0


def test_jit_compiled_code_checks_and_names_the_line(debug_nans):
    import inspect

    line = inspect.currentframe().f_lineno + 1
    f = mt.jit(lambda x: mnp.log(x) * 2.0)
    with pytest.raises(FloatingPointError) as info:
        f(mnp.array([-1.0, 2.0]))
    assert "log(f32[2])" in str(info.value) and "jit-compiled" in str(info.value)
    assert f"test_debug_nans.py:{line}" in str(info.value)
    assert float(f(mnp.array([1.0, 2.0]))[0]) == 0.0  # NaN-free inputs pass


def test_jit_grad_nan_points_at_forward_line(debug_nans):
    with pytest.raises(FloatingPointError) as info:
        mt.jit(mt.grad(_log_where))(mnp.array([0.0, 1.0]))
    assert f"test_debug_nans.py:{_line_of('NAN-LINE')}" in str(info.value)


def test_turning_debug_nans_on_recompiles():
    f = mt.jit(lambda x: mnp.log(x))
    f(mnp.array([-1.0]))  # compiled without checks: NaN passes silently
    mt.config.update("debug_nans", True)
    try:
        with pytest.raises(FloatingPointError):
            f(mnp.array([-1.0]))
    finally:
        mt.config.update("debug_nans", False)
