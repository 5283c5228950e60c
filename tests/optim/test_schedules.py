"""Schedules against their formulas (NumPy), at and around their boundaries, with a Python
int count and with an int32 count under jit; Optax's values written literally."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch import optim


def _poly(init, end, power, steps, begin, t):
    c = min(max(t - begin, 0), steps)
    return (init - end) * (1 - c / steps) ** power + end


def _cos(init, steps, alpha, exponent, t):
    c = min(t, steps)
    return init * ((1 - alpha) * (0.5 * (1 + math.cos(math.pi * c / steps))) ** exponent + alpha)


def _warmup_cos(init, peak, warm, steps, end, exponent, t):
    if t < warm:
        return _poly(init, peak, 1, warm, 0, t)
    return _cos(peak, steps - warm, end / peak, exponent, t - warm)


def _exp(init, steps, rate, begin, staircase, end, t):
    d = t - begin
    if d <= 0:
        v = init
    else:
        p = math.floor(d / steps) if staircase else d / steps
        v = init * rate ** p
    if end is not None:
        v = max(v, end) if rate < 1 else min(v, end)
    return v


CASES = [
    ("linear", optim.linear_schedule(1.0, 0.1, 10, transition_begin=3),
     lambda t: _poly(1.0, 0.1, 1, 10, 3, t)),
    ("polynomial", optim.polynomial_schedule(2.0, 0.5, 3.0, 8),
     lambda t: _poly(2.0, 0.5, 3.0, 8, 0, t)),
    ("cosine", optim.cosine_decay_schedule(1.0, 10, alpha=0.1, exponent=2.0),
     lambda t: _cos(1.0, 10, 0.1, 2.0, t)),
    ("warmup_cosine", optim.warmup_cosine_decay_schedule(0.0, 1.0, 5, 20, end_value=0.1),
     lambda t: _warmup_cos(0.0, 1.0, 5, 20, 0.1, 1.0, t)),
    ("exp_staircase", optim.exponential_decay(1.0, 4, 0.5, transition_begin=2, staircase=True,
                                              end_value=0.2),
     lambda t: _exp(1.0, 4, 0.5, 2, True, 0.2, t)),
    ("exp_growth", optim.exponential_decay(1.0, 4, 2.0, end_value=3.0),
     lambda t: _exp(1.0, 4, 2.0, 0, False, 3.0, t)),
    ("piecewise", optim.piecewise_constant_schedule(1.0, {3: 0.5, 8: 0.1}),
     lambda t: 1.0 * (0.5 if t >= 3 else 1.0) * (0.1 if t >= 8 else 1.0)),
    ("warmup_exp", optim.warmup_exponential_decay_schedule(0.0, 1.0, 5, 3, 0.5),
     lambda t: _poly(0.0, 1.0, 1, 5, 0, t) if t < 5 else _exp(1.0, 3, 0.5, 0, False, None,
                                                               t - 5)),
    ("join", optim.join_schedules([optim.constant_schedule(1.0),
                                   optim.linear_schedule(1.0, 0.0, 4)], [6]),
     lambda t: 1.0 if t < 6 else _poly(1.0, 0.0, 1, 4, 0, t - 6)),
]
STEPS = list(range(26))


@pytest.mark.parametrize("name,sched,ref", CASES, ids=[c[0] for c in CASES])
def test_schedule_matches_formula_with_int_and_jitted_count(name, sched, ref):
    expected = np.array([ref(t) for t in STEPS])
    eager = np.array([float(np.asarray(sched(t))) for t in STEPS])
    jitted = mt.jit(sched)
    traced = np.array([float(jitted(mnp.asarray(t, mnp.int32))) for t in STEPS])
    np.testing.assert_allclose(eager, expected, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(traced, expected, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name,sched,ref", CASES, ids=[c[0] for c in CASES])
def test_schedule_vmaps_over_counts(name, sched, ref):
    counts = mnp.arange(26, dtype=mnp.int32)
    out = mt.vmap(lambda c: mnp.asarray(sched(c), mnp.float32))(counts)
    np.testing.assert_allclose(np.asarray(out), [ref(t) for t in STEPS], rtol=1e-6, atol=1e-7)


def test_onecycle_schedules_match_optax():
    # optax.cosine_onecycle_schedule(20, 1.0) and linear_onecycle_schedule(20, 1.0)
    cos = optim.cosine_onecycle_schedule(20, 1.0)
    lin = optim.linear_onecycle_schedule(20, 1.0)
    ts = [0, 3, 6, 7, 12, 17, 19, 20, 25]
    np.testing.assert_allclose(
        [float(cos(t)) for t in ts],
        [0.04000002145767212, 0.5200000405311584, 1.0, 0.9874640107154846,
         0.6112619638442993, 0.10908781737089157, 0.0125399986281991, 3.999999989900971e-06,
         3.999999989900971e-06], rtol=1e-5)
    np.testing.assert_allclose(
        [float(lin(t)) for t in ts],
        [0.03999999910593033, 0.5199999809265137, 1.0, 0.9127272963523865,
         0.4763636589050293, 0.03999999910593033, 0.013335999101400375,
         3.999999989900971e-06, 3.999999989900971e-06], rtol=1e-5)


@settings(max_examples=20)
@given(t=st.integers(0, 2**31 - 2), steps=st.integers(1, 1000), warm=st.integers(0, 50))
def test_warmup_cosine_is_bounded_and_ends_at_end_value(t, steps, warm):
    sched = optim.warmup_cosine_decay_schedule(0.0, 1.0, warm, warm + steps, end_value=0.05)
    v = float(sched(mnp.asarray(t, mnp.int32)))
    assert 0.0 <= v <= 1.0 + 1e-6
    if t >= warm + steps:
        assert v == pytest.approx(0.05, rel=1e-5)


def test_constant_and_degenerate_schedules():
    assert optim.constant_schedule(0.3)(7) == 0.3
    assert optim.polynomial_schedule(1.0, 0.0, 1, 0)(5) == 1.0  # as Optax: constant
    assert optim.exponential_decay(1.0, 10, 0.0)(5) == 1.0
    v = optim.linear_schedule(1.0, 0.0, 10)(5)
    assert v.dtype == mnp.float32 and float(v) == 0.5


def test_schedule_errors():
    with pytest.raises(ValueError, match=r"cosine_decay_schedule: decay_steps must be positive, "
                       r"got 0"):
        optim.cosine_decay_schedule(1.0, 0)
    with pytest.raises(ValueError, match=r"piecewise_constant_schedule: scales must be "
                       r"non-negative"):
        optim.piecewise_constant_schedule(1.0, {3: -0.5})
    with pytest.raises(ValueError, match=r"join_schedules: 2 schedules need 1 boundaries, "
                       r"got 2"):
        optim.join_schedules([optim.constant_schedule(1.0)] * 2, [1, 2])
    with pytest.raises(TypeError, match=r"linear_schedule|polynomial_schedule: "
                       r"transition_steps must be an int, got float 2\.5"):
        optim.linear_schedule(1.0, 0.0, 2.5)
    with pytest.raises(ValueError, match=r"cosine_onecycle_schedule: transition_steps must be "
                       r"positive"):
        optim.cosine_onecycle_schedule(0, 1.0)
