"""Sums ending a compiled fused run (backends/numpy/fusion_sums.py) against the un-jitted
program: a float sum over the last axis (NumPy's pairwise order) or over a first axis of
up to 256 rows (row after row) must equal the eager kernel's bit for bit, for drawn
shapes, dtypes, broadcast and 0-d operands, NaN and infinities; a transposed operand is
summed value after value (to rounding); the fallback without a compiler is exact too.
"""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch.backends.numpy import fusion, fusion_sums, native

pytestmark = pytest.mark.skipif(not native.available(),
                                reason=f"no compiled loops here: {native.unavailable_reason()}")


def _bits(x):
    x = np.asarray(x)
    return x.view(f"u{x.dtype.itemsize}")


def _same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(_bits(got)[~nan], _bits(want)[~nan])


def _summing_loops(f, *args):
    """The compiled loops of jit(f) that end in a sum (their `doc` lists reduce_sum)."""
    mt.clear_caches()
    text = mt.jit(f).lower(*args).compile().as_text()
    return [line for line in text.splitlines()
            if line.startswith("# _nat") and "reduce_sum" in line]


def _values(rng, shape, dt, specials):
    x = (rng.standard_normal(shape) * 10.0 ** rng.integers(-2, 3, shape)).astype(dt)
    if specials and x.size:
        flat = x.reshape(-1)
        picks = rng.integers(0, flat.size, 3)
        flat[picks] = [np.nan, np.inf, -np.inf]
    return x


@settings(max_examples=30, deadline=None)
@given(rows=st.integers(1, 40), n=st.sampled_from([13, 64, 127, 128, 129, 200, 256, 300,
                                                  1000, 1031, 4100]),
       dt=st.sampled_from([np.float32, np.float64]), specials=st.booleans(),
       seed=st.integers(0, 2**16))
def test_row_sums_match_eager_bit_for_bit(rows, n, dt, specials, seed):
    """sum(x * y + c, axis=-1) and sum((x - m[:, None])**2, axis=-1) with the row's mean m
    broadcast along it: NumPy's pairwise sum of each row, exactly."""
    rng = np.random.default_rng(seed)
    x, y = _values(rng, (rows, n), dt, specials), _values(rng, (rows, n), dt, False)
    m = _values(rng, (rows,), dt, False)

    def f(x, y, m):
        d = x - m[:, None]
        return mnp.sum(x * y + 1.5, axis=-1), mnp.sum(d * d, axis=1), x * y

    if rows * n >= fusion.NATIVE_MIN_SIZE:
        assert _summing_loops(f, x, y, m)
    with mt.config.override(enable_x64=True):
        got, want = mt.jit(f)(x, y, m), f(*(mnp.asarray(a) for a in (x, y, m)))
    for g, w in zip(got, want, strict=True):
        _same(g, w)


@settings(max_examples=30, deadline=None)
@given(rows=st.integers(1, fusion_sums.COLUMN_ROWS), cols=st.sampled_from([5, 64, 130, 700]),
       dt=st.sampled_from([np.float32, np.float64]), specials=st.booleans(),
       seed=st.integers(0, 2**16))
def test_column_sums_match_eager_bit_for_bit(rows, cols, dt, specials, seed):
    """A bias gradient (the ReLU mask product summed over the batch) and a sum of a
    column-broadcast value: the rows added in order, exactly as np.add.reduce."""
    rng = np.random.default_rng(seed)
    dh, h = _values(rng, (rows, cols), dt, specials), _values(rng, (rows, cols), dt, False)
    b = _values(rng, (cols,), dt, False)

    def f(dh, h, b):
        dz = dh * (h > 0)
        return dz, mnp.sum(dz, axis=0), mnp.sum(h * b[None, :] - 0.25, axis=0)

    if rows * cols >= fusion.NATIVE_MIN_SIZE:
        assert _summing_loops(f, dh, h, b)
    with mt.config.override(enable_x64=True):
        got, want = mt.jit(f)(dh, h, b), f(*(mnp.asarray(a) for a in (dh, h, b)))
    for g, w in zip(got, want, strict=True):
        _same(g, w)


def _reducing_loops(f, *args, name):
    mt.clear_caches()
    text = mt.jit(f).lower(*args).compile().as_text()
    return [line for line in text.splitlines() if line.startswith("# _nat") and name in line]


def _same_up_to_zero_sign(got, want):
    """Equal values (NaN where NaN), a zero of either sign for a zero: a max or min of
    +0.0 and -0.0 may come out with either sign (NumPy's vector loops compare in another
    order than the compiled one)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_array_equal(got[ok], want[ok])  # (+0.0 == -0.0)


@settings(max_examples=30, deadline=None)
@given(rows=st.integers(1, 40), n=st.sampled_from([1, 10, 13, 127, 128, 129, 300, 1031]),
       dt=st.sampled_from([np.float32, np.float64]), specials=st.booleans(),
       zeros=st.booleans(), seed=st.integers(0, 2**16))
def test_row_max_and_min_ending_a_run_match_eager(rows, n, dt, specials, zeros, seed):
    """A softmax's `max(z + b, axis=-1)` and a min over rows, computed in the loop writing
    z + b: NumPy's maximum (minimum) of each row, NaN propagating, infinities kept."""
    rng = np.random.default_rng(seed)
    z, b = _values(rng, (rows, n), dt, specials), _values(rng, (n,), dt, False)
    if zeros:  # rows of signed zeros: the largest value is a zero
        z[: rows // 2] = np.where(rng.random((rows // 2, n)) < 0.5, -0.0, 0.0) - b

    def f(z, b):
        h = z + b
        return mnp.max(h, axis=-1), h

    def g(z, b):
        return mnp.min(z * 2.0, axis=1)

    if rows * n >= fusion.NATIVE_MIN_SIZE:
        assert _reducing_loops(f, z, b, name="reduce_max")
        assert _reducing_loops(g, z, b, name="reduce_min")
    with mt.config.override(enable_x64=True):
        for fn in (f, g):
            got, want = mt.jit(fn)(z, b), fn(mnp.asarray(z), mnp.asarray(b))
            for a, w in zip(mt.tree_util.tree_leaves(got), mt.tree_util.tree_leaves(want),
                            strict=True):
                _same_up_to_zero_sign(a, w)


def test_max_and_sum_make_separate_runs_and_the_log_sum_exp_matches():
    """logsumexp's max (read by the sum's run) ends one run, the sum another. (Rows of no
    values, -inf, never form a compiled run: empty arrays have no loop to run.)"""
    rng = np.random.default_rng(5)
    z = rng.standard_normal((256, 10)).astype(np.float32)

    def f(z):
        return mt.scipy.special.logsumexp(z * 3.0, axis=-1)

    assert _reducing_loops(f, z, name="reduce_max")
    assert _summing_loops(f, z)
    np.testing.assert_allclose(mt.jit(f)(z), f(mnp.asarray(z)), rtol=1e-6)
    empty = np.zeros((600, 0), np.float32)
    np.testing.assert_array_equal(mt.jit(lambda x: mnp.max(x + 1.0, axis=-1,
                                                           initial=-np.inf))(empty),
                                  np.full(600, -np.inf, np.float32))


def test_higher_rank_sums_and_a_sum_read_after_the_run():
    """Rank-3 operands summed over the last and the first axis; a value that reads a sum
    (x - sum) is computed after the run, not inside it."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((6, 5, 70)).astype(np.float32)

    def f(x):
        s = mnp.sum(x * 2.0, axis=-1)
        c = mnp.sum(mnp.abs(x), axis=0)
        return s, c, x * 2.0 - s[..., None]

    assert len(_summing_loops(f, x)) == 2
    for g, w in zip(mt.jit(f)(x), f(mnp.asarray(x)), strict=True):
        _same(g, w)


def test_other_sums_are_left_to_the_reduction_kernels():
    """Sums over a middle axis, over all axes, over more than COLUMN_ROWS rows, and of
    integers are not fused (the eager kernel's own accuracy and types); results match."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((fusion_sums.COLUMN_ROWS + 1, 4, 8)).astype(np.float32)
    for f in (lambda x: mnp.sum(x * x, axis=1), lambda x: mnp.sum(x * x),
              lambda x: mnp.sum(x * x, axis=0),
              lambda x: mnp.sum((x > 0).astype(np.int32) * 3, axis=-1)):
        assert not _summing_loops(f, x)
        _same(mt.jit(f)(x), f(mnp.asarray(x)))


def test_transposed_operands_are_summed_value_after_value():
    """A transposed operand (no contiguous core): the strided loop adds the values in
    order, which equals a float64 reference to float32 rounding."""
    rng = np.random.default_rng(4)
    a = rng.standard_normal((300, 64)).astype(np.float32)

    def f(a):
        return mnp.sum(a.T * 2.0, axis=-1), mnp.sum(a.T + 1.0, axis=0)

    assert _summing_loops(f, a)
    rows, cols = mt.jit(f)(a)
    ref = a.astype(np.float64)
    np.testing.assert_allclose(rows, (ref.T * 2.0).sum(-1), rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(cols, (ref.T + 1.0).sum(0), rtol=1e-5, atol=1e-4)


def test_sums_fall_back_when_the_build_fails(monkeypatch):
    """With the compiler failing, the generalized ufunc's stand-in computes the run with
    the eager kernels: the same values, bit for bit."""
    def fail(*args, **kwargs):
        raise native.NativeCompileError("loop.cc:1: error: simulated")

    monkeypatch.setattr(native, "_build", fail)
    monkeypatch.setattr(native, "_LIBS", {})
    monkeypatch.setattr(native, "_FAILED", [])
    rng = np.random.default_rng(5)
    x = rng.standard_normal((64, 48)).astype(np.float32)

    def f(x):
        return mnp.sum(x * x, axis=0), mnp.sum(x - 1.0, axis=0)

    assert _summing_loops(f, x)
    jf = mt.jit(f)
    with pytest.warns(RuntimeWarning, match="simulated"):
        got = jf(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = f(mnp.asarray(x))
    for g, w in zip(got, want, strict=True):
        _same(g, w)
    mt.clear_caches()
