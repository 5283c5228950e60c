"""debug.print, debug.callback and pure_callback: values against NumPy, vmap against the
loop of examples, grad against the un-transformed function and analytic/finite-difference
derivatives, staged programs (make_jaxpr + eval_jaxpr) against eager runs, and errors; then
the same under `mt.jit`: prints at run time on every call, in program order.
"""

import contextlib
import io

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch.core.ad_util import UndefinedPrimal
from mytorch.debugging import HostFn, debug_callback_p, pure_callback_p
from mytorch.transforms.dce import dce_jaxpr
from tests.autodiff.fd import check_grads
from tests.strategies import FLOAT_DTYPES, INT_DTYPES, arrays, shapes


@contextlib.contextmanager
def captured():
    """Collect what is printed inside the block: `with captured() as out: ...; out()`."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        yield lambda: buf.getvalue().splitlines()


def numpy_lines(fmt, *values, **kw):
    return [fmt.format(*values, **kw)]


def eqn_names(jaxpr):
    return [e.primitive.name for e in getattr(jaxpr, "jaxpr", jaxpr).eqns]


def spec(x):
    return mt.ShapeDtypeStruct(np.shape(x), np.asarray(x).dtype)


# ---- debug.print / debug.callback eagerly --------------------------------------------------
@given(x=arrays(st.sampled_from(FLOAT_DTYPES + INT_DTYPES), shapes(max_dims=3)))
def test_print_eager_formats_numpy_values(x):
    with captured() as out:
        mt.debug.print("x = {} / {x2}", mnp.asarray(x), x2=mnp.asarray(x))
    assert out() == "x = {} / {}".format(x, x).splitlines()


def test_print_pytrees_and_format_specs():
    a, b = np.float32(1.5), np.arange(3, dtype=np.int32)
    with captured() as out:
        mt.debug.print("{0:.3f} {t[1]} {d[k]}", mnp.asarray(a), t=(a, mnp.asarray(b)),
                       d={"k": mnp.asarray(b)})
    assert out() == ["1.500 [0 1 2] [0 1 2]"]


def test_callback_gets_numpy_copies_with_structure():
    seen = []
    x, y = np.arange(6, dtype=np.float32).reshape(2, 3), np.int32(7)
    xa = mnp.asarray(x)
    assert mt.debug.callback(lambda p, *, k: seen.append((p, k)), (xa, [y]), k={"z": xa}) \
        is None
    (p, k), = seen
    assert isinstance(p, tuple) and isinstance(p[1], list) and set(k) == {"z"}
    for got, want in [(p[0], x), (p[1][0], y), (k["z"], x)]:
        assert isinstance(got, np.ndarray) and got.dtype == np.asarray(want).dtype
        np.testing.assert_array_equal(got, want)
    p[0][0, 0] = k["z"][0, 1] = 99.0  # copies: the immutable array does not change
    np.testing.assert_array_equal(np.asarray(xa), x)


def test_pure_callback_cannot_write_into_its_operand():
    def host(a):
        a += 1.0
        return a

    xa = mnp.arange(3.0)
    with pytest.raises(ValueError, match="read-only"):
        mt.pure_callback(host, spec(np.ones(3, np.float32)), xa)
    np.testing.assert_array_equal(np.asarray(xa), np.arange(3.0))


class _UserError(Exception):
    pass


def _raise(*args):
    raise _UserError("from the host")


def test_callback_exception_propagates_eager_staged_and_vmapped():
    x = mnp.arange(3.0)
    with pytest.raises(_UserError, match="from the host"):
        mt.debug.callback(_raise, x)
    closed = mt.make_jaxpr(lambda x: mt.debug.callback(_raise, x) or x)(x)  # traces fine
    with pytest.raises(_UserError):
        mt.eval_jaxpr(closed.jaxpr, closed.consts, x)
    with pytest.raises(_UserError):
        mt.vmap(lambda x: mt.debug.callback(_raise, x) or x)(x)
    with pytest.raises(_UserError):
        mt.pure_callback(_raise, spec(np.ones(3, np.float32)), x)


def test_non_array_argument_is_a_clear_error():
    with pytest.raises(TypeError, match="debug.print: arguments must be arrays.*str"):
        mt.debug.print("{}", "text")
    with pytest.raises(TypeError, match="format must be a str"):
        mt.debug.print(3)


# ---- staging: no run at trace time, program order --------------------------------------------
def _three_prints(x):
    mt.debug.print("a {}", x)
    y = mnp.sin(x)
    mt.debug.print("b {}", y)
    z = y * 2.0
    mt.debug.print("c {} {}", x, z)
    return z.sum()


def test_staged_prints_at_run_time_in_program_order():
    x = np.linspace(-1, 1, 4).astype(np.float32)
    with captured() as out:
        closed = mt.make_jaxpr(_three_prints)(mnp.asarray(x))
    assert out() == []  # nothing printed while tracing
    mt.check_jaxpr(closed)
    names = eqn_names(closed)
    assert names.count("debug_callback") == 3
    cb = [i for i, n in enumerate(names) if n == "debug_callback"]
    assert cb[0] < names.index("sin") < cb[1] < names.index("mul") < cb[2]
    with captured() as eager:
        _three_prints(mnp.asarray(x))
    for _ in range(2):  # once per evaluation
        with captured() as out:
            mt.eval_jaxpr(closed.jaxpr, closed.consts, mnp.asarray(x))
        assert out() == eager()
    y = np.sin(x)
    assert eager() == ["a {}".format(x), "b {}".format(y),
                       *"c {} {}".format(x, y * np.float32(2)).splitlines()]


def test_effect_flags_and_zero_results():
    assert debug_callback_p.effectful and not pure_callback_p.effectful
    assert debug_callback_p.multiple_results
    host = HostFn(lambda *a: None, "f", None)
    assert debug_callback_p.abstract_eval(mt.ShapedArray((3,), np.float32), callback=host) \
        == []
    # a print has no outputs, yet it must survive on its own (it is effectful); an unused
    # pure_callback may go
    closed = mt.make_jaxpr(
        lambda x: (mt.pure_callback(np.sin, spec(np.ones(3, np.float32)), x), x)[1])(
        mnp.ones(3))
    assert eqn_names(closed) == ["pure_callback"]
    assert eqn_names(dce_jaxpr(closed.jaxpr)) == []


def test_transpose_rule_is_a_no_op():
    host = HostFn(lambda *a: None, "f", None)
    rule = debug_callback_p.rule("transpose")
    x = mnp.ones(3)
    assert rule([], x, UndefinedPrimal(mt.ShapedArray((3,), np.float32)), callback=host) \
        == [None, None]


# ---- vmap: once per example, in order ------------------------------------------------------
def _loop_lines(f, args, in_axes):
    size = next(np.shape(a)[d] for a, d in zip(args, in_axes) if d is not None)
    with captured() as out:
        for i in range(size):
            f(*[mnp.asarray(a if d is None else np.take(a, i, axis=d))
                for a, d in zip(args, in_axes)])
    return out()


@settings(max_examples=15)
@given(data=st.data())
def test_vmap_prints_per_example_like_the_loop(data):
    shape = data.draw(shapes(min_dims=1, max_dims=3, max_side=4))
    ax = data.draw(st.integers(0, len(shape) - 1))
    x = data.draw(arrays(np.float32, shape, min_value=-10, max_value=10))
    y = data.draw(arrays(np.int32, (2,), min_value=-5, max_value=5))

    def first(x, y):
        mt.debug.print("x={} y={}", x, y)

    def second(x, y):
        mt.debug.callback(lambda a, b: print("cb", a.shape, a.sum(), b.sum()), mnp.cos(x), y)

    def f(x, y):
        first(x, y)
        second(x, y)
        return x

    with captured() as out:
        mt.vmap(f, in_axes=(ax, None))(mnp.asarray(x), mnp.asarray(y))
    # each callback runs over the examples in order, callbacks in program order
    want = [*_loop_lines(first, [x, y], [ax, None]), *_loop_lines(second, [x, y], [ax, None])]
    assert out() == want
    closed = mt.make_jaxpr(mt.vmap(f, in_axes=(ax, None)))(mnp.asarray(x), mnp.asarray(y))
    assert eqn_names(closed).count("debug_callback") == 2  # one bind each, not a loop


def test_nested_vmap_prints_like_the_double_loop():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    z = np.float32(0.5)

    def f(x, z):
        mt.debug.print("{} {}", x, z)
        return x

    g = mt.vmap(mt.vmap(f, in_axes=(1, None)), in_axes=(2, None))
    with captured() as out:
        g(mnp.asarray(x), mnp.asarray(z))
    want = []
    for i in range(4):
        for j in range(3):
            want += "{} {}".format(x[:, j, i], z).splitlines()
    assert out() == want


def test_vmap_of_unbatched_print_prints_once():
    with captured() as out:
        mt.vmap(lambda x, c: mt.debug.print("c={}", c) or x, in_axes=(0, None))(
            mnp.arange(3.0), mnp.asarray(np.float32(2)))
    assert out() == ["c=2.0"]


# ---- differentiation: primal values, once ----------------------------------------------------
def test_grad_prints_primal_values_once():
    x = np.array([0.5, -1.0, 2.0], np.float32)
    with captured() as eager:
        _three_prints(mnp.asarray(x))
    for transform in (mt.grad, mt.value_and_grad, lambda f: mt.grad(mt.grad(
            lambda s: f(s * mnp.asarray(x))))):
        arg = mnp.asarray(np.float32(1)) if transform not in (mt.grad, mt.value_and_grad) \
            else mnp.asarray(x)
        with captured() as out:
            transform(_three_prints)(arg)
        assert out() == eager(), transform


def test_jvp_vjp_linearize_print_primals_in_forward_pass_only():
    x = np.array([0.5, -1.0], np.float32)
    with captured() as eager:
        _three_prints(mnp.asarray(x))
    with captured() as out:
        mt.jvp(_three_prints, (mnp.asarray(x),), (mnp.ones(2),))
    assert out() == eager()
    with captured() as out:
        _, vjp_fn = mt.vjp(_three_prints, mnp.asarray(x))
        assert out() == eager()
        vjp_fn(mnp.asarray(np.float32(1)))
        _, f_jvp = mt.linearize(_three_prints, mnp.asarray(x))
        f_jvp(mnp.ones(2))
    assert out() == eager() * 2  # neither the backward pass nor the linear map prints
    _, f_jvp = mt.linearize(_three_prints, mnp.asarray(x))
    assert "debug_callback" not in eqn_names(mt.make_jaxpr(f_jvp)(mnp.ones(2)))


def test_staged_grad_prints_in_forward_part():
    x = mnp.asarray(np.array([0.25, 1.5], np.float32))
    closed = mt.make_jaxpr(mt.grad(_three_prints))(x)
    assert eqn_names(closed).count("debug_callback") == 3
    with captured() as eager:
        _three_prints(x)
    with captured() as out:
        mt.eval_jaxpr(closed.jaxpr, closed.consts, x)
    assert out() == eager()


def test_dce_keeps_prints_and_checkpoint_under_grad_prints_once():
    x = mnp.asarray(np.array([0.25, -1.5], np.float32))
    kept = eqn_names(dce_jaxpr(mt.make_jaxpr(lambda x: (_three_prints(x), x + 1.0)[1])(x).jaxpr))
    assert kept.count("debug_callback") == 3 and "reduce_sum" not in kept  # only prints read
    with captured() as eager:
        _three_prints(x)
    with captured() as out:
        g = mt.grad(mt.checkpoint(_three_prints))(x)
    assert out() == eager()  # the forward part runs the prints; recomputation does not
    np.testing.assert_allclose(np.asarray(g), 2 * np.cos(np.asarray(x)), rtol=1e-6)


# ---- pure_callback ----------------------------------------------------------------------------
@given(x=arrays(st.sampled_from(FLOAT_DTYPES), shapes(max_dims=3), min_value=-5, max_value=5))
def test_pure_callback_matches_numpy(x):
    out = mt.pure_callback(lambda a: {"s": np.sin(a), "n": np.int32(a.size)},
                           {"s": spec(x), "n": mt.ShapeDtypeStruct((), np.int32)},
                           mnp.asarray(x))
    assert out["s"].dtype == x.dtype and out["n"].dtype == np.int32
    np.testing.assert_array_equal(np.asarray(out["s"]), np.sin(x))
    assert int(out["n"]) == x.size


def test_pure_callback_staged_runs_at_run_time():
    calls = []

    def host(a, *, k):
        calls.append(a.shape)
        return np.cumsum(a) * k

    x, k = np.arange(4, dtype=np.float32), np.float32(3)
    closed = mt.make_jaxpr(lambda x, k: mt.pure_callback(host, spec_like(x), x, k=k) + 1.0)(
        mnp.asarray(x), mnp.asarray(k))
    assert calls == [] and eqn_names(closed) == ["pure_callback", "add"]
    got = mt.eval_jaxpr(closed.jaxpr, closed.consts, mnp.asarray(x), mnp.asarray(k))[0]
    np.testing.assert_allclose(np.asarray(got), np.cumsum(x) * k + 1)
    assert calls == [(4,)]


def test_pure_callback_result_never_aliases_its_operand():
    x = mnp.arange(3.0)
    y = mt.pure_callback(lambda a: a, spec(np.ones(3, np.float32)), x)
    assert not np.shares_memory(np.asarray(y), np.asarray(x))
    np.testing.assert_array_equal(np.asarray(y), np.asarray(x))


def _host_affine(x, y):
    """A host function on one example (x: f32[3], y: f32[2]) or a leading batch."""
    return np.tanh(x)[..., :2] * y + np.sum(x, axis=-1, keepdims=True)


@pytest.mark.parametrize("method", [None, "sequential", "expand_dims", "broadcast_all"])
@pytest.mark.parametrize("y_batched", [False, True])
def test_pure_callback_vmap_methods_match_the_loop(method, y_batched):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3, 5)).astype(np.float32)  # batch along axis 1
    y = rng.normal(size=(5, 2) if y_batched else (2,)).astype(np.float32)
    shapes_seen = []

    def host(a, b):
        shapes_seen.append((a.shape, b.shape))
        return _host_affine(a, b)

    def f(x, y):
        return mt.pure_callback(host, mt.ShapeDtypeStruct((2,), np.float32), x, y,
                                vmap_method=method)

    in_axes = (1, 0 if y_batched else None)
    got = mt.vmap(f, in_axes=in_axes)(mnp.asarray(x), mnp.asarray(y))
    want = np.stack([_host_affine(x[:, i], y[i] if y_batched else y) for i in range(5)])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)
    if method in (None, "sequential"):
        assert shapes_seen == [((3,), (2,))] * 5
    else:
        y_shape = (5, 2) if y_batched or method == "broadcast_all" else (1, 2)
        assert shapes_seen == [((5, 3), y_shape)]
    closed = mt.make_jaxpr(mt.vmap(f, in_axes=in_axes))(mnp.asarray(x), mnp.asarray(y))
    assert eqn_names(closed).count("pure_callback") == 1  # the loop runs at run time


@pytest.mark.parametrize("method", [None, "expand_dims", "broadcast_all"])
def test_pure_callback_nested_vmap(method):
    x = np.arange(12, dtype=np.float32).reshape(4, 3)

    def f(x, c):
        return mt.pure_callback(lambda a, b: np.square(a) + b, spec(np.float32(0)), x, c,
                                vmap_method=method)

    c = np.float32(1.5)
    got = mt.vmap(mt.vmap(f, in_axes=(0, None)), in_axes=(1, None))(
        mnp.asarray(x), mnp.asarray(c))
    np.testing.assert_allclose(np.asarray(got), (np.square(x) + c).T)


def test_pure_callback_vmap_size_zero_batch():
    got = mt.vmap(lambda x: mt.pure_callback(np.sin, spec(np.float32(0)), x))(
        mnp.zeros((0,)))
    assert got.shape == (0,) and got.dtype == np.float32


def test_pure_callback_with_integer_operand_under_grad():
    def f(x, n):
        scale = mt.pure_callback(lambda k: np.float32(k * 2), spec(np.float32(0)), n)
        return (mnp.sin(x) * scale).sum()

    x = np.array([0.3, 1.2], np.float32)
    g = mt.grad(f)(mnp.asarray(x), mnp.asarray(np.int32(3)))
    np.testing.assert_allclose(np.asarray(g), 6 * np.cos(x), rtol=1e-6)


# ---- pure_callback in custom derivatives: host code in the backward pass -------------------
@mt.custom_vjp
def host_sin(x):
    return mt.pure_callback(np.sin, spec_like(x), x)


def spec_like(x):
    return mt.ShapeDtypeStruct(x.shape, x.dtype)


def _host_sin_fwd(x):
    mt.debug.print("fwd {}", x)
    return host_sin(x), x


def _host_sin_bwd(x, g):
    mt.debug.print("bwd {}", g)
    return (g * mt.pure_callback(np.cos, spec_like(x), x),)


host_sin.defvjp(_host_sin_fwd, _host_sin_bwd)


def test_pure_callback_in_custom_vjp_grad_is_analytic():
    x = np.array([0.1, -0.7, 2.0], np.float32)
    w = np.array([1.0, 2.0, -3.0], np.float32)

    def loss(x):
        return (host_sin(x) * mnp.asarray(w)).sum()

    with captured() as out:
        g = mt.grad(loss)(mnp.asarray(x))
    np.testing.assert_allclose(np.asarray(g), w * np.cos(x), rtol=1e-6)
    # forward then backward, each once, the backward pass with the cotangent
    assert out() == ["fwd {}".format(x), "bwd {}".format(w)]
    gv = mt.vmap(mt.grad(loss))(mnp.asarray(np.stack([x, 2 * x])))
    np.testing.assert_allclose(np.asarray(gv), w * np.cos(np.stack([x, 2 * x])), rtol=1e-6)


def test_pure_callback_in_custom_vjp_matches_finite_differences(x64):
    def f(x):
        return host_sin(x) * mnp.cos(x)

    with captured():
        check_grads(f, [np.array([0.3, -1.1, 2.5])], modes=("rev",))


def test_staged_grad_of_custom_vjp_prints_backward_after_forward():
    x = np.array([0.5, 1.0], np.float32)
    closed = mt.make_jaxpr(mt.grad(lambda x: host_sin(x).sum()))(mnp.asarray(x))
    with captured() as out:
        got = mt.eval_jaxpr(closed.jaxpr, closed.consts, mnp.asarray(x))[0]
    np.testing.assert_allclose(np.asarray(got), np.cos(x), rtol=1e-6)
    assert out() == ["fwd {}".format(x), "bwd {}".format(np.ones(2, np.float32))]


# ---- errors ----------------------------------------------------------------------------------
def _wrong_shape(a):
    return a[:2]


def test_wrong_result_shape_names_callback_declared_and_got():
    x = mnp.arange(3.0)
    msg = r"_wrong_shape.*returned f32\[2\] for result 0.*declares f32\[3\]"
    with pytest.raises(ValueError, match=msg):
        mt.pure_callback(_wrong_shape, spec(np.ones(3, np.float32)), x)
    with pytest.raises(ValueError, match=msg):  # also per example under vmap
        mt.vmap(lambda x: mt.pure_callback(_wrong_shape, spec(np.ones(3, np.float32)), x))(
            mnp.ones((2, 3)))
    with pytest.raises(TypeError, match=r"returned i32\[3\].*declares f32\[3\]"):
        mt.pure_callback(lambda a: a.astype(np.int32), spec(np.ones(3, np.float32)), x)
    with pytest.raises(ValueError, match="returned 1 arrays.*declares 2"):
        mt.pure_callback(np.sin, (spec(np.ones(3, np.float32)),) * 2, x)
    with pytest.raises(ValueError, match=r"expand_dims.*returned f32\[3\].*f32\[2,3\]"):
        mt.vmap(lambda x: mt.pure_callback(lambda a: a[0], spec(np.ones(3, np.float32)), x,
                                           vmap_method="expand_dims"))(mnp.ones((2, 3)))


def test_grad_through_pure_callback_suggests_custom_rules():
    def f(x):
        return mt.pure_callback(np.exp, spec_like(x), x).sum()

    for transform in (mt.grad, lambda f: lambda x: mt.jvp(f, (x,), (x,))):
        with pytest.raises(ValueError, match=r"differentiate through the host function `exp`"
                                             r".*custom_jvp or mt\.custom_vjp"):
            transform(f)(mnp.ones(2))


def test_bad_arguments_of_pure_callback():
    x = mnp.ones(2)
    with pytest.raises(ValueError, match="vmap_method must be one of.*'vectorized'"):
        mt.pure_callback(np.sin, spec(np.ones(2, np.float32)), x, vmap_method="vectorized")
    with pytest.raises(TypeError, match=r"\.shape and \.dtype.*got int"):
        mt.pure_callback(np.sin, 3, x)


# ---- jit ---------------------------------------------------------------------------------------
def test_jit_prints_each_call_at_run_time():
    f = mt.jit(_three_prints)
    x = np.array([0.5, -2.0], np.float32)
    with captured() as eager:
        _three_prints(mnp.asarray(x))
    for _ in range(3):  # compiled once, prints on every call, in program order
        with captured() as out:
            f(mnp.asarray(x))
        assert out() == eager()
    with captured() as out:
        f.lower(mnp.asarray(x))  # tracing and compiling print nothing
    assert out() == []


def test_jit_vmap_and_nested_jit_print_per_example():
    x = np.arange(6, dtype=np.float32).reshape(3, 2)

    def f(x):
        mt.debug.print("{}", x)
        return x * 2.0

    want = ["{}".format(row) for row in x]
    for g in (mt.jit(mt.vmap(f)), mt.vmap(mt.jit(f)), mt.jit(mt.vmap(mt.jit(f)))):
        with captured() as out:
            g(mnp.asarray(x))
        assert out() == want


def test_jit_grad_prints_primals_once():
    x = mnp.asarray(np.array([0.25, 1.5], np.float32))
    with captured() as eager:
        _three_prints(x)
    for g in (mt.jit(mt.grad(_three_prints)), mt.grad(mt.jit(_three_prints))):
        for _ in range(2):
            with captured() as out:
                g(x)
            assert out() == eager()


def test_jit_callback_keeps_values_when_buffers_are_reused():
    saved = []

    @mt.jit
    def f(x):
        y = x * 2.0
        mt.debug.callback(saved.append, y)
        z = mnp.sin(y) + 1.0  # y is dead here: compiled code may reuse its buffer
        return z * 3.0

    x = np.linspace(0, 1, 5).astype(np.float32)
    f(mnp.asarray(x))
    f(mnp.asarray(x + 1))
    np.testing.assert_array_equal(saved[0], 2 * x)
    np.testing.assert_array_equal(saved[1], 2 * (x + 1))


def test_jit_grad_custom_vjp_prints_in_both_passes():
    x = np.array([0.5, 1.0], np.float32)
    g = mt.jit(mt.grad(lambda x: host_sin(x).sum()))
    for _ in range(2):
        with captured() as out:
            got = g(mnp.asarray(x))
        np.testing.assert_allclose(np.asarray(got), np.cos(x), rtol=1e-6)
        assert out() == ["fwd {}".format(x), "bwd {}".format(np.ones(2, np.float32))]


@pytest.mark.parametrize("method", [None, "expand_dims", "broadcast_all"])
def test_jit_pure_callback_runs_at_run_time_and_vmaps(method):
    calls = []

    def host(a):
        calls.append(a.shape)
        return np.cumsum(a, axis=-1)

    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    f = mt.jit(mt.vmap(lambda x: mt.pure_callback(host, spec_like(x), x,
                                                  vmap_method=method)))
    f.lower(mnp.asarray(x))
    assert calls == []
    for _ in range(2):
        np.testing.assert_allclose(np.asarray(f(mnp.asarray(x))), np.cumsum(x, axis=1))
    assert len(calls) == (4 if method is None else 2)


def test_jit_errors_propagate():
    with pytest.raises(_UserError):
        mt.jit(lambda x: mt.debug.callback(_raise, x) or x)(mnp.ones(2))
    with pytest.raises(ValueError, match=r"_wrong_shape.*f32\[2\].*f32\[3\]"):
        mt.jit(lambda x: mt.pure_callback(_wrong_shape, spec_like(x), x))(mnp.ones(3))
    with pytest.raises(ValueError, match="differentiate through the host function `exp`"):
        mt.jit(mt.grad(lambda x: mt.pure_callback(np.exp, spec_like(x), x).sum()))(
            mnp.ones(2))
