"""The carry-type rule of scan / fori_loop / while_loop / map: a carry that starts as a
Python scalar (weakly typed) takes the dtype the body gives it; results keep the body's
weak types. Expected dtypes, weak types and values are JAX's (0.10), written out; the
property tests compare with the loop definition (a Python loop), jit with the un-jitted
function, vmap with a loop over examples, and gradients with float64 finite differences."""

import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch import lax
from tests.autodiff.fd import check_grads

h16 = mnp.arange(3, dtype=mnp.float16)
x32 = mnp.array([1.0, 1.5, 2.0])
i8 = mnp.arange(3, dtype=mnp.int8)
bf16 = mnp.arange(3, dtype=mnp.bfloat16)


def _leaves(out):
    return [(str(v.dtype), bool(v.weak_type), np.asarray(v).tolist())
            for v in mt.tree_util.tree_leaves(out)]


# name: (program, JAX's [(dtype, weak_type, value) per result leaf])
JAX_CASES = {
    "scan_f16": (lambda: lax.scan(lambda c, v: (c + v, c), 0.0, h16),
                 [("float16", False, 3.0), ("float16", False, [0.0, 0.0, 1.0])]),
    "scan_int_into_f16": (lambda: lax.scan(lambda c, v: (c + v, c * 2), 0, h16),
                          [("float16", False, 3.0), ("float16", False, [0.0, 0.0, 2.0])]),
    "scan_bf16": (lambda: lax.scan(lambda c, v: (c * 0.5 + v, c), 1.0, bf16),
                  [("bfloat16", False, 2.625), ("bfloat16", False, [1.0, 0.5, 1.25])]),
    "scan_reverse": (lambda: lax.scan(lambda c, v: (c + v, c), 0, h16, reverse=True),
                     [("float16", False, 3.0), ("float16", False, [3.0, 2.0, 0.0])]),
    "fori_x": (lambda: lax.fori_loop(0, 3, lambda i, a: a + x32[i], 0),
               [("float32", False, 4.5)]),
    "fori_plus_int8": (lambda: lax.fori_loop(0, 3, lambda i, a: a + 1, 0) + i8,
                       [("int8", False, [3, 4, 5])]),
    "while_plus_int8": (lambda: lax.while_loop(lambda a: a < 3, lambda a: a + 1, 0) + i8,
                        [("int8", False, [3, 4, 5])]),
    "while_int_to_float": (lambda: lax.while_loop(lambda a: a < 3, lambda a: a + 1.5, 0),
                           [("float32", False, 3.0)]),
    "fori_const_body_strong_init": (
        lambda: lax.fori_loop(0, 3, lambda i, a: 1.0, mnp.float32(0)), [("float32", True, 1.0)]),
    "fori_weak_float_strong_body": (lambda: lax.fori_loop(0, 3, lambda i, a: a + x32[i], 0.0),
                                    [("float32", False, 4.5)]),
    "fori_zero_trips": (lambda: lax.fori_loop(0, 0, lambda i, a: a + x32[i], 0),
                        [("float32", False, 0.0)]),
    "scan_stays_weak": (lambda: lax.scan(lambda c, v: (c + 1, c), 0, None, length=3),
                        [("int32", True, 3), ("int32", True, [0, 1, 2])]),
    "while_stays_weak": (lambda: lax.while_loop(lambda a: a < 3, lambda a: a + 1, 0),
                         [("int32", True, 3)]),
    "while_f16": (lambda: lax.while_loop(lambda a: a < 3, lambda a: a + h16[1], 0),
                  [("float16", False, 3.0)]),
    "weak_int_then_weak_float": (lambda: lax.fori_loop(0, 3, lambda i, a: a + 0.5, 0),
                                 [("float32", False, 1.5)]),
    "fori_index_is_weak": (lambda: lax.fori_loop(0, 3, lambda i, a: a + i, mnp.int8(0)),
                           [("int8", False, 3)]),
    "fori_unroll": (lambda: lax.fori_loop(0, 3, lambda i, a: a + x32[i], 0, unroll=2),
                    [("float32", False, 4.5)]),
    "fori_unroll_true": (lambda: lax.fori_loop(0, 3, lambda i, a: a + i, 0, unroll=True),
                         [("int32", True, 3)]),
    "pair_carry": (lambda: lax.fori_loop(0, 3, lambda i, c: (c[0] + h16[i], c[1] + 1), (0, 0)),
                   [("float16", False, 3.0), ("int32", True, 3)]),
    "dict_carry": (lambda: lax.scan(lambda c, v: ({"a": c["a"] + v, "b": c["b"] * 2}, None),
                                    {"a": 0, "b": 1.0}, h16)[0],
                   [("float16", False, 3.0), ("float32", True, 8.0)]),
    "nested": (lambda: lax.fori_loop(
        0, 2, lambda j, b: b + lax.fori_loop(0, 3, lambda i, a: a + h16[i], 0), 0),
        [("float16", False, 6.0)]),
    # jit
    "jit_fori": (lambda: mt.jit(lambda: lax.fori_loop(0, 3, lambda i, a: a + 1, 0))(),
                 [("int32", True, 3)]),
    "jit_fori_weak_arg": (
        lambda: mt.jit(lambda z: lax.fori_loop(0, 3, lambda i, a: a + 1, z))(0),
        [("int32", True, 3)]),
    "jit_scan_f16": (lambda: mt.jit(lambda h: lax.scan(lambda c, v: (c + v, c), 0.0, h))(h16),
                     [("float16", False, 3.0), ("float16", False, [0.0, 0.0, 1.0])]),
    "jit_while_f16": (lambda: mt.jit(lambda h: lax.while_loop(
        lambda a: a < 3, lambda a: a + h[1], 0))(h16), [("float16", False, 3.0)]),
    "jit_fori_traced_bounds": (lambda: mt.jit(lambda n: lax.fori_loop(
        0, n, lambda i, a: a + x32[i], 0))(3), [("float32", False, 4.5)]),
    "jit_fori_traced_bounds_i8": (lambda: mt.jit(lambda n: lax.fori_loop(
        0, n, lambda i, a: a + i, mnp.int8(0)))(3), [("int8", False, 3)]),
    # vmap
    "vmap_scan": (lambda: mt.vmap(lambda h: lax.scan(lambda c, v: (c + v, c), 0.0, h)[0])(
        mnp.ones((2, 3), mnp.float16)), [("float16", False, [3.0, 3.0])]),
    "vmap_fori": (lambda: mt.vmap(lambda y: lax.fori_loop(0, 3, lambda i, a: a + y, 0))(h16),
                  [("float16", False, [0.0, 3.0, 6.0])]),
    "vmap_while_batched_pred": (lambda: mt.vmap(lambda y: lax.while_loop(
        lambda a: a < y, lambda a: a + 1, 0))(mnp.array([1, 3], mnp.int8)),
        [("int32", True, [1, 3])]),
    "vmap_while_f16": (lambda: mt.vmap(lambda y: lax.while_loop(
        lambda a: a < 2, lambda a: a + y, 0))(h16[1:]), [("float16", False, [2.0, 2.0])]),
    # differentiation
    "grad_fori": (lambda: mt.grad(lambda w: lax.fori_loop(0, 3, lambda i, a: a + w * i, 0))(
        2.0), [("float32", True, 3.0)]),
    "jit_grad_fori": (lambda: mt.jit(mt.grad(
        lambda w: lax.fori_loop(0, 3, lambda i, a: a + w * i, 0)))(2.0),
        [("float32", True, 3.0)]),
    "grad_fori_f16": (lambda: mt.grad(lambda w: lax.fori_loop(
        0, 3, lambda i, a: a + w * h16[i], 0))(mnp.float16(1)), [("float16", False, 3.0)]),
    "grad_scan_f16": (lambda: mt.grad(lambda w: lax.scan(
        lambda c, v: (c + w * v, c), 0, h16)[0].astype(mnp.float32))(mnp.float16(2)),
        [("float16", False, 3.0)]),
    "jvp_fori": (lambda: mt.jvp(lambda w: lax.fori_loop(0, 3, lambda i, a: a + w * h16[i], 0),
                                (mnp.float16(1),), (mnp.float16(1),)),
                 [("float16", False, 3.0), ("float16", False, 3.0)]),
    "jvp_while": (lambda: mt.jvp(lambda w: lax.while_loop(
        lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] + w * h16[c[0]]), (0, 0))[1],
        (mnp.float16(1),), (mnp.float16(1),)),
        [("float16", False, 3.0), ("float16", False, 3.0)]),
    # lax.map(batch_size=)
    "map_batch_size": (lambda: lax.map(lambda v: v * 2, x32, batch_size=2),
                       [("float32", False, [2.0, 3.0, 4.0])]),
    "map_batch_size_tree": (lambda: lax.map(lambda v: (v[0] * 2, v[1].sum()),
                                            (mnp.arange(5.0), mnp.ones((5, 2))), batch_size=3),
                            [("float32", False, [0.0, 2.0, 4.0, 6.0, 8.0]),
                             ("float32", False, [2.0, 2.0, 2.0, 2.0, 2.0])]),
    "map_batch_size_divides": (lambda: lax.map(lambda v: v * 2, mnp.arange(4), batch_size=2),
                               [("int32", False, [0, 2, 4, 6])]),
    "map_batch_size_weak": (lambda: lax.map(lambda v: v * 2.0, mnp.arange(4), batch_size=3),
                            [("float32", True, [0.0, 2.0, 4.0, 6.0])]),
}


@pytest.mark.parametrize("name", sorted(JAX_CASES))
def test_matches_jax(name):
    program, expected = JAX_CASES[name]
    assert _leaves(program()) == expected


def test_long_eager_scan_keeps_weak_types():
    """Eager scans run compiled: the results keep the types the abstract evaluation gives."""
    carry, ys = lax.scan(lambda c, v: (c + 1, c * 2), 0, None, length=20)
    assert _leaves(carry) == [("int32", True, 20)]
    assert ys.weak_type and ys.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(ys), 2 * np.arange(20))
    c16, _ = lax.scan(lambda c, v: (c + v, None), 0.0, mnp.ones(20, mnp.float16))
    assert _leaves(c16) == [("float16", False, 20.0)]


# ---- against the loop definition, under jit and vmap ---------------------------------------
DTYPES = ["float16", "bfloat16", "float32", "int8", "int16", "int32", "uint8"]
BODIES = {  # (carry, x) -> carry, the same in the Python loop and in the traced body
    "add": lambda c, v: c + v,
    "affine": lambda c, v: c * 2 + v,
    "scaled": lambda c, v: c + v * 3,
}


def _python_loop(body, init, xs):
    c = init
    for i in range(xs.shape[0]):
        c = body(c, xs[i])
    return mnp.asarray(c)


def _same(a, b):
    assert (a.dtype, a.weak_type) == (b.dtype, b.weak_type)
    np.testing.assert_array_equal(np.asarray(a, np.float64), np.asarray(b, np.float64))


@settings(max_examples=30, deadline=None)
@given(dtype=st.sampled_from(DTYPES), init=st.sampled_from([0, 1, 0.0, 2.0]),
       body=st.sampled_from(sorted(BODIES)), n=st.integers(1, 4), loop=st.sampled_from(
           ["scan", "fori", "while"]))
def test_carry_type_matches_python_loop(dtype, init, body, n, loop):
    """A Python-scalar carry ends with the dtype and weak type the Python loop ends with."""
    f = BODIES[body]
    xs = mnp.asarray(np.arange(1, n + 1) % 3, dtype=dtype)

    def run(xs):
        if loop == "scan":
            return lax.scan(lambda c, v: (f(c, v), None), init, xs)[0]
        if loop == "fori":
            return lax.fori_loop(0, n, lambda i, c: f(c, xs[i]), init)
        return lax.while_loop(lambda s: s[0] < n, lambda s: (s[0] + 1, f(s[1], xs[s[0]])),
                              (0, init))[1]

    want = _python_loop(f, init, xs)
    _same(run(xs), want)
    _same(mt.jit(run)(xs), want)
    batch = mnp.stack([xs, xs[::-1]])
    got = mt.vmap(run)(batch)
    for k in range(2):
        _same(got[k], _python_loop(f, init, batch[k]))


@settings(max_examples=15, deadline=None)
@given(dtype=st.sampled_from(["float16", "bfloat16", "float32"]), n=st.integers(0, 3))
def test_weak_carry_stays_weak_without_promotion(dtype, n):
    """A body that keeps the carry weak (Python-scalar arithmetic only) returns a weak
    carry, which then takes the dtype of the array it meets."""
    out = lax.fori_loop(0, n, lambda i, a: a * 2.0 + 1.0, 1.0)
    assert out.weak_type and out.dtype == np.float32
    arr = mnp.ones(2, dtype)
    assert (out * arr).dtype == np.dtype(arr.dtype)
    np.testing.assert_allclose(float(out), 2.0 ** (n + 1) - 1)


# ---- derivatives: float64 finite differences ------------------------------------------------
def test_grads_through_promoted_carries(x64):
    def fori(w):
        return lax.fori_loop(0, 3, lambda i, a: a * mnp.sin(w) + w * i, 0)

    def scan(w):
        return lax.scan(lambda c, v: (c * 0.5 + mnp.cos(w * v), None), 0, mnp.arange(3.0))[0]

    def while_(w):
        return lax.while_loop(lambda s: s[0] < 3, lambda s: (s[0] + 1, s[1] * w + 1.0),
                              (0, 0))[1]

    for f in (fori, scan, while_):
        check_grads(f, (np.asarray(0.7),), order=2)
        # the weak scalar argument's gradient is weak, of the default float dtype
        g = mt.grad(f)(0.7)
        assert g.weak_type and g.dtype == np.float64


# ---- errors --------------------------------------------------------------------------------
def test_fori_loop_errors_name_fori_loop_the_carry_and_the_fix():
    with pytest.raises(TypeError) as e:
        lax.fori_loop(0, 3, lambda i, a: a + x32[i], mnp.int32(0))
    msg = str(e.value)
    assert msg.startswith("fori_loop:") and "scan" not in msg
    assert "init_val has type i32[] but body_fun returns f32[]" in msg
    assert "test_weak_carries.py" in msg and ".astype(mnp.int32)" in msg


def test_carry_path_and_both_types_in_the_error():
    with pytest.raises(TypeError) as e:
        lax.scan(lambda c, v: ({"a": c["a"], "b": c["b"].astype(mnp.float16)}, v),
                 {"a": 0.0, "b": mnp.float32(1)}, x32)
    msg = str(e.value)
    assert msg.startswith("scan:") and "init['b'] has type f32[] but f returns f16[]" in msg
    with pytest.raises(TypeError, match=r"init_val\[1\] has type f32\[2\] but body_fun "
                                        r"returns f32\[3\].*shape"):
        lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, mnp.ones(3)), (0, mnp.ones(2)))


@pytest.mark.parametrize("init,body,types", [
    (True, lambda a: a + 1, "bool[] but body_fun returns i32[]"),          # bool is not weak
    (0.0, lambda a: (a + 1).astype(mnp.int32), "f32[] but body_fun returns i32[]"),
])
def test_weak_carry_that_cannot_take_the_body_dtype(init, body, types):
    """A Python float carry does not become an int (the types promote to float), and a
    Python bool is not weak: both are errors, as in JAX."""
    with pytest.raises(TypeError, match=r"while_loop: body_fun.*\n(.*\n)*.*" + re.escape(types)):
        lax.while_loop(lambda a: a < 3, body, init)


def test_scan_body_returning_one_value_names_its_type():
    with pytest.raises(TypeError, match=r"scan: f must return a pair \(carry, y\), got f32\[\]"):
        lax.scan(lambda c, v: c + v, 0.0, x32)
    with pytest.raises(TypeError, match=r"a tuple of 3 values \(f32\[\], f32\[\], f32\[\]\)"):
        lax.scan(lambda c, v: (c + v, c, c), 0.0, x32)


def test_structure_errors_name_the_function_called():
    with pytest.raises(TypeError, match=r"fori_loop: body_fun must return a carry with the same "
                                        r"tree structure as init_val"):
        lax.fori_loop(0, 3, lambda i, a: (a, a), 0.0)
    with pytest.raises(TypeError, match=r"fori_loop: .*\n(.*\n)*.*test_weak_carries.py"):
        mt.jit(lambda n: lax.fori_loop(0, n, lambda i, a: (a, a), 0.0))(3)


def test_fori_loop_unroll_and_bounds():
    want = float(np.sum(np.asarray(x32)))
    for unroll in (1, 2, 3, True, False):
        assert float(lax.fori_loop(0, 3, lambda i, a: a + x32[i], 0.0, unroll=unroll)) == want
    with pytest.raises(ValueError, match=r"fori_loop: unroll=2 needs bounds known"):
        mt.jit(lambda n: lax.fori_loop(0, n, lambda i, a: a + i, 0, unroll=2))(3)
    with pytest.raises(ValueError, match="unroll must be a bool or a non-negative int"):
        lax.fori_loop(0, 3, lambda i, a: a + i, 0, unroll=-1)
    with pytest.raises(TypeError, match="lower and upper must have one dtype"):
        mt.jit(lambda n: lax.fori_loop(mnp.int8(0), n, lambda i, a: a + 1, 0))(mnp.int16(3))


@settings(max_examples=20, deadline=None)
@given(n=st.integers(0, 7), batch_size=st.integers(0, 9))
def test_map_batch_size_matches_numpy(n, batch_size):
    xs = np.arange(n * 2, dtype=np.float32).reshape(n, 2)
    ys, zs = lax.map(lambda v: (mnp.sin(v) * 2.0, v.sum()), mnp.asarray(xs),
                     batch_size=batch_size)
    np.testing.assert_allclose(np.asarray(ys), np.sin(xs) * 2.0, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(zs), xs.sum(axis=1))
    assert ys.shape == (n, 2) and zs.shape == (n,)


def test_map_batch_size_errors():
    with pytest.raises(ValueError, match="map: batch_size must be non-negative, got -1"):
        lax.map(lambda v: v, x32, batch_size=-1)
    with pytest.raises(TypeError, match="map: batch_size must be an int"):
        lax.map(lambda v: v, x32, batch_size=1.5)


def test_map_batch_size_under_grad_jit_vmap(x64):
    xs = mnp.asarray(np.linspace(-1.0, 2.0, 5))

    def f(w):
        return lax.map(lambda v: mnp.sin(v * w), xs, batch_size=2).sum()

    check_grads(f, (np.asarray(1.5),), order=2)
    np.testing.assert_allclose(float(mt.jit(mt.grad(f))(1.5)), float(mt.grad(f)(1.5)),
                               rtol=1e-12)
    ws = mnp.asarray([0.5, 2.0])
    got = mt.vmap(lambda w: lax.map(lambda v: v * w, xs, batch_size=3))(ws)
    np.testing.assert_allclose(np.asarray(got), np.outer(np.asarray(ws), np.asarray(xs)))
