"""The NumPy code generator's per-call shortcuts against eager mytorch and NumPy: literal
operands of ufuncs as 0-d arrays of their dtype, maximum/minimum/clamp reading a literal
from a constant array of the result's shape, and outer products (per-example gradients)
computed by filling a buffer with the broadcast operand and multiplying in place, and
broadcasts read in full made as strided views directly. Each must give exactly the eager
values, dtypes and weak types."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch import lax
from tests.strategies import arrays, shapes

_DTYPES = [np.float32, np.float64, np.int8, np.int32, np.uint8]


def _same(jitted, eager):
    j, e = np.asarray(jitted), np.asarray(eager)
    assert j.dtype == e.dtype and j.shape == e.shape
    assert jitted.weak_type == eager.weak_type
    if j.dtype.kind == "f":  # bit for bit, NaN payloads aside
        np.testing.assert_array_equal(np.isnan(j), np.isnan(e))
        ok = ~np.isnan(j)
        np.testing.assert_array_equal(j[ok].view(f"u{j.itemsize}"),
                                      e[ok].view(f"u{e.itemsize}"))
    else:
        np.testing.assert_array_equal(j, e)


def _check(f, *args):
    with mt.config.override(enable_x64=True):
        jitted, eager = mt.jit(f)(*args), f(*args)
        for a, b in zip(jitted if isinstance(jitted, tuple) else (jitted,),
                        eager if isinstance(eager, tuple) else (eager,), strict=True):
            _same(a, b)


# ---- literal operands ------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", _DTYPES)
def test_literal_operands_compute_in_the_arrays_dtype(dtype):
    x = np.arange(-6, 6).astype(dtype).reshape(3, 4)
    if np.dtype(dtype).kind == "u":
        x = np.arange(12).astype(dtype).reshape(3, 4)

    def f(x):
        return x * 3 + 7, x - 1, 2 * x, x // 2 if x.dtype.kind != "f" else x / 4, x == 2

    with mt.config.override(enable_x64=True):
        _check(f, mnp.asarray(x))
        assert "_s" in mt.jit(f).lower(mnp.asarray(x)).as_text()


def test_float_literals_round_to_the_arrays_dtype_and_keep_weak_types():
    x = mnp.asarray(np.linspace(-3, 3, 17, dtype=np.float32))
    _check(lambda x: (x * 0.1 + 1e-8, x / 3.0, mnp.maximum(x, 0.3) * 1e30), x)
    _check(lambda t: t * 0.5 + 1.0, mnp.asarray(2.0))  # a weak 0-d argument
    text = mt.jit(lambda x: x * 0.1).lower(x).as_text()
    assert "# _s" in text and "(float32)" in text  # what the global holds is shown


# ---- maximum / minimum / clamp with a literal -------------------------------------------------
@settings(max_examples=30, deadline=None)
@given(shape=shapes(min_dims=1, max_dims=3, max_side=9), data=st.data())
def test_max_min_with_literals_match_eager(shape, data):
    x = data.draw(arrays(np.float32, shape, allow_nan=True, allow_inf=True))
    x = mnp.asarray(x)
    _check(lambda x: (mnp.maximum(x, 0.0), mnp.minimum(x, -0.0), mnp.maximum(1.5, x),
                      lax.clamp(-1.0, x, 2.0), mnp.maximum(x, float("nan"))), x)


def test_relu_reads_a_constant_array_and_its_gradient_matches():
    x = mnp.asarray(np.random.default_rng(0).standard_normal((64, 32)).astype(np.float32))
    x = mnp.where(x > 1.5, 0.0, x)  # exact zeros: the subgradient 0.5 there
    f = lambda x: mnp.sum(mnp.maximum(x, 0.0) ** 2)
    assert "_full" in mt.jit(lambda x: mnp.maximum(x, 0.0)).lower(x).as_text()
    _check(lambda x: (mnp.maximum(x, 0.0), mt.grad(f)(x)), x)


def test_integer_max_and_a_big_array_keep_the_scalar_path():
    xi = mnp.asarray(np.arange(-5, 5, dtype=np.int32))
    _check(lambda x: (mnp.maximum(x, 0), mnp.minimum(x, 3)), xi)
    big = mt.ShapeDtypeStruct(((1 << 20) + 1,), np.float32)
    assert "_full" not in mt.jit(lambda x: mnp.maximum(x, 0.0) * 2.0).lower(big).as_text()


# ---- outer products --------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_per_example_gradients_match_the_closed_form(dtype):
    rng = np.random.default_rng(1)
    w, xs = rng.standard_normal(16).astype(dtype), rng.standard_normal((128, 16)).astype(dtype)
    ys = (rng.random(128) > 0.5).astype(dtype)

    def loss(w, x, y):
        z = mnp.dot(x, w)
        return mnp.logaddexp(0.0, z) - y * z

    with mt.config.override(enable_x64=True):
        f = mt.vmap(mt.grad(loss), in_axes=(None, 0, 0))
        args = [mnp.asarray(a) for a in (w, xs, ys)]
        assert "_fill_mul" in mt.jit(f).lower(*args).as_text()
        _same(mt.jit(f)(*args), f(*args))
        r = 1 / (1 + np.exp(-(xs @ w))) - ys
        tol = 1e-5 if dtype == np.float32 else 1e-12  # sigmoid as exp(z - logaddexp(0, z))
        np.testing.assert_allclose(np.asarray(mt.jit(f)(*args)), r[:, None] * xs,
                                   rtol=tol, atol=tol)


@settings(max_examples=25, deadline=None)
@given(b=st.integers(1, 40), m=st.integers(1, 40), n=st.integers(1, 70),
       order=st.sampled_from(["bm,bn->bmn", "b,bn->bn", "bn,b->bn", "m,n->mn"]))
def test_outer_products_of_every_orientation_match_eager(b, m, n, order):
    rng = np.random.default_rng(b * 1000 + m * 10 + n)
    lhs_spec, rhs_spec = order.split("->")[0].split(",")
    size = {"b": b, "m": m, "n": n}
    lhs = mnp.asarray(rng.standard_normal([size[c] for c in lhs_spec]).astype(np.float32))
    rhs = mnp.asarray(rng.standard_normal([size[c] for c in rhs_spec]).astype(np.float32))
    lb = tuple(i for i, c in enumerate(lhs_spec) if c == "b")
    rb = tuple(i for i, c in enumerate(rhs_spec) if c == "b")

    def f(x, y):
        out = lax.dot_general(x, y, (((), ()), (lb, rb)))
        return out, out + 1.0  # a second reader: the product's buffer is not reused

    _check(f, lhs, rhs)


# ---- broadcasts read in full ------------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(shape=shapes(min_dims=0, max_dims=3, max_side=4), data=st.data(),
       dtype=st.sampled_from([np.float32, np.int8, np.bool_]),
       transposed=st.booleans())
def test_broadcasts_match_numpy_for_every_layout(shape, data, dtype, transposed):
    x = data.draw(arrays(dtype, shape))
    extra = data.draw(st.lists(st.integers(0, 3), min_size=1, max_size=2))

    def f(x):
        y = x.T if transposed else x  # a non-contiguous source
        d = tuple(range(len(extra), len(extra) + y.ndim))
        b = lax.broadcast_in_dim(y, tuple(extra) + y.shape, d)
        return b, b.astype(np.float32) * 2.0

    jitted, eager = mt.jit(f)(mnp.asarray(x)), f(mnp.asarray(x))
    for a, b in zip(jitted, eager, strict=True):
        _same(a, b)
    src = x.T if transposed else x
    np.testing.assert_array_equal(np.asarray(jitted[0]),
                                  np.broadcast_to(src, tuple(extra) + src.shape))


# ---- select_n with a +0 operand -----------------------------------------------------------------
@pytest.mark.parametrize("zero", [0.0, -0.0])
@pytest.mark.parametrize("side", [0, 1])
def test_select_with_a_zero_operand_is_bit_exact(zero, side):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((80, 70)).astype(np.float32)  # above np.where's small size
    x[0, :5] = [np.inf, -np.inf, np.nan, -0.0, 0.0]
    which = x > 0.1
    which[0, :5] = True

    def f(p, x):
        z = lax.broadcast_in_dim(lax.convert_element_type(zero, np.float32), x.shape, ())
        return lax.select_n(p, *((z, x) if side == 0 else (x, z)))

    p, xm = mnp.asarray(which), mnp.asarray(x)
    jitted, eager = mt.jit(f)(p, xm), f(p, xm)
    _same(jitted, eager)
    expected = np.where(which, *((x, np.float32(zero)) if side == 0 else (np.float32(zero), x)))
    np.testing.assert_array_equal(np.asarray(jitted).view(np.uint32), expected.view(np.uint32))


# ---- abs of a negation ----------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_abs_of_a_negation_reads_x_and_keeps_every_bit(dtype):
    x = np.array([0.0, -0.0, 1.5, -2.5, np.inf, -np.inf, np.nan, -np.nan, 1e-45], dtype)
    f = lambda x: (mnp.abs(0.0 - x), mnp.abs(-x), mnp.abs(-0.0 - x) * 2.0,
                   mnp.logaddexp(0.0, x))
    with mt.config.override(enable_x64=True):
        xm = mnp.asarray(x)
        text = mt.jit(lambda x: mnp.abs(0.0 - x)).lower(xm).as_text()
        assert "np_subtract" not in text and "np_absolute(a0" in text
        jitted, eager = mt.jit(f)(xm), f(xm)
        for a, b in zip(jitted, eager, strict=True):
            _same(a, b)
        np.testing.assert_array_equal(np.asarray(jitted[0]).view(f"u{x.itemsize}"),
                                      np.abs(x).view(f"u{x.itemsize}"))


@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.uint8, np.bool_])
def test_a_0d_select_matches_eager(dtype):
    def f(p, a, b):
        return lax.select_n(p, a, b), lax.select_n(p, b, 1 if dtype != np.bool_ else True)

    for p in (True, False):
        args = (mnp.asarray(np.bool_(p)), mnp.asarray(dtype(0)), mnp.asarray(dtype(1)))
        for a, b in zip(mt.jit(f)(*args), f(*args), strict=True):
            _same(a, b)
