"""lax.while_loop against its Python-loop definition, under jvp/grad (finite differences),
vmap (the per-example loop) and jit (the un-jitted function)."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.backends.numpy.control_flow_while  # noqa: F401  (registers the emitter)
import mytorch.numpy as mnp
from mytorch.core import tree_util
from mytorch.lax.while_loop import while_loop, while_p
from tests.autodiff.fd import check_grads
from tests.batching.vmap_check import assert_tree_close, check_vmap, loop_reference

floats = st.floats(-2.0, 2.0, allow_nan=False, width=32)
shapes = st.sampled_from([(), (3,), (2, 3)])


def _arrays(shape):
    n = int(np.prod(shape))
    return st.lists(floats, min_size=n, max_size=n).map(
        lambda v: np.asarray(v, np.float32).reshape(shape))


# ---- values --------------------------------------------------------------------------------
def _loop_fn(n, scale):
    """A loop over a pytree carry closing over `scale` (an outer value) and `n`."""
    def cond(c):
        return c["i"] < n

    def body(c):
        x, (y, z) = c["x"], c["t"]
        return {"i": c["i"] + 1, "x": mnp.sin(x) * scale + y, "t": (y * 0.5 + z, z - x)}

    return lambda init: while_loop(cond, body, init)


def _reference(n, scale, init):
    i, x, (y, z) = init["i"], init["x"], init["t"]
    while i < n:
        i, x, y, z = i + 1, np.sin(x) * scale + y, y * 0.5 + z, z - x
    return {"i": i, "x": x, "t": (y, z)}


@given(shape=shapes, n=st.integers(0, 5), data=st.data())
def test_values_match_python_loop(shape, n, data):
    x, y, z = (data.draw(_arrays(shape)) for _ in range(3))
    scale = data.draw(_arrays(shape))
    init = {"i": np.int32(0), "x": x, "t": (y, z)}
    got = _loop_fn(n, mnp.asarray(scale))(tree_util.tree_map(mnp.asarray, init))
    want = _reference(n, scale, init)
    assert_tree_close(got, want, rtol=1e-5, atol=1e-5, check_dtype=False)
    assert int(got["i"]) == max(n, 0)


def test_zero_iterations_returns_init():
    x = mnp.asarray([1.0, 2.0])
    out = while_loop(lambda c: c[0] > 10.0, lambda c: (c[0] * 2.0, c[1]), (x[0], x))
    np.testing.assert_array_equal(np.asarray(out[1]), [1.0, 2.0])


def test_body_shape_mismatch_shows_both_sides():
    with pytest.raises(TypeError) as info:
        while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, mnp.ones(4)), (0, mnp.ones(3)))
    msg = str(info.value)
    assert "f32[3]" in msg and "f32[4]" in msg and "init_val" in msg
    assert "test_while_loop.py" in msg


def test_body_structure_and_dtype_mismatch():
    with pytest.raises(TypeError, match="structure"):
        while_loop(lambda c: c[0] < 3, lambda c: [c[0] + 1, c[1]], (0, mnp.ones(3)))
    with pytest.raises(TypeError, match="i32"):
        while_loop(lambda c: c < 3.0, lambda c: mnp.asarray(1, dtype=mnp.int32),
                   mnp.asarray(0.0))


@pytest.mark.parametrize("cond,init", [(lambda c: c, 0.0),             # f32[], not bool
                                       (lambda c: c > 0.0, np.zeros(3))])  # bool[3]
def test_cond_must_return_scalar_bool(cond, init):
    with pytest.raises(TypeError, match="scalar bool"):
        while_loop(cond, lambda c: c + 1.0, mnp.asarray(init, dtype=mnp.float32))


def test_staged_equation_params():
    closed = mt.make_jaxpr(lambda x: while_loop(lambda c: c < x, lambda c: c * 2.0, 1.0))(
        mnp.asarray(5.0))
    (eqn,) = [e for e in closed.jaxpr.eqns if e.primitive is while_p]
    assert eqn.params["cond_nconsts"] == 1 and eqn.params["body_nconsts"] == 0
    assert not eqn.params["body_jaxpr"].constvars


# ---- forward and reverse mode --------------------------------------------------------------
def _poly_loop(n):
    def f(x, w):
        def body(c):
            i, a, b = c
            return i + 1, mnp.tanh(a * w) + b, b * mnp.cos(a)

        return while_loop(lambda c: c[0] < n, body, (0, x, w * 2.0))[1:]

    return f


@settings(max_examples=10, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(0, 4), data=st.data())
def test_derivatives_match_finite_differences(x64, n, data):
    x = data.draw(_arrays((3,))).astype(np.float64)
    w = data.draw(_arrays((3,))).astype(np.float64)
    check_grads(_poly_loop(n), (x, w), modes=("fwd", "rev"))


def test_jvp_tangent_only_through_body_const(x64):
    # the carry's initial tangent is zero; it becomes nonzero through the closed-over w
    def f(w):
        return while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * w + 1.0),
                          (0, mnp.zeros(2, dtype=mnp.float64)))[1]

    check_grads(f, (np.asarray([0.3, -1.2]),), modes=("fwd", "rev"))


def test_data_dependent_trip_count_grad(x64):
    # trip count depends on x; the derivative is that of the unrolled iterations taken
    def f(x):
        return while_loop(lambda c: c[1] < 10.0, lambda c: (c[0] * 1.5, c[1] + c[0]),
                          (x, x))[1]

    check_grads(f, (np.asarray(1.3),), modes=("fwd", "rev"))


def _newton_sqrt(a):
    """sqrt(a) by Newton's method while |x^2 - a| > tol (at most 100 steps: tests never
    hang)."""
    def cond(c):
        return (mnp.abs(c[1] * c[1] - a) > 1e-9 * a) & (c[0] < 100)

    return while_loop(cond, lambda c: (c[0] + 1, 0.5 * (c[1] + a / c[1])), (0, a))[1]


@pytest.mark.parametrize("a", [0.5, 2.0, 9.0, 1234.5])
def test_newton_reverse_mode_matches_implicit_derivative(x64, a):
    a = mnp.asarray(a, dtype=mnp.float64)
    np.testing.assert_allclose(float(_newton_sqrt(a)), np.sqrt(float(a)), rtol=1e-9)
    np.testing.assert_allclose(float(mt.grad(_newton_sqrt)(a)), 0.5 / np.sqrt(float(a)),
                               rtol=1e-6)


def test_newton_grad_under_vmap_both_orders(x64):
    a = np.asarray([0.25, 2.0, 9.0, 400.0])  # different trip counts per element
    want = 0.5 / np.sqrt(a)
    got = mt.vmap(mt.grad(_newton_sqrt))(mnp.asarray(a))
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)
    got = mt.grad(lambda v: mnp.sum(mt.vmap(_newton_sqrt)(v)))(mnp.asarray(a))
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)


def test_vmap_of_grad_masks_finished_elements():
    # each element stops at its own trip count: extra iterations would change its gradient
    def f(n, x):
        return mt.grad(lambda x: mnp.sum(mnp.sin(_count_to(n, x)[1])))(x)

    ns, xs = np.asarray([0, 1, 3, 2], np.int32), np.linspace(-1, 1, 8, dtype=np.float32)
    got = mt.vmap(f)(mnp.asarray(ns), mnp.asarray(xs.reshape(4, 2)))
    assert_tree_close(got, loop_reference(f, (ns, xs.reshape(4, 2)), 0, 0), rtol=1e-4)

    def g(x):  # the predicate reads the carry (which depends on x)
        return mt.grad(lambda x: while_loop(lambda c: c[1] < 3.0,
                                            lambda c: (c[0] * 1.5, c[1] + c[0] * c[0]),
                                            (x, x))[1])(x)

    xs = np.asarray([0.3, 1.0, 2.0, 5.0], np.float32)
    assert_tree_close(mt.vmap(g)(mnp.asarray(xs)), loop_reference(g, (xs,), 0, 0), rtol=1e-4)


def test_forward_over_reverse(x64):
    # the second derivative of sqrt(a) through the Newton loop, and a Hessian vs FD of grad
    a = mnp.asarray(2.0, dtype=mnp.float64)
    _, d2 = mt.jvp(mt.grad(_newton_sqrt), (a,), (mnp.asarray(1.0, dtype=mnp.float64),))
    np.testing.assert_allclose(float(d2), -0.25 * 2.0 ** -1.5, rtol=1e-6)

    def f(x):
        body = lambda c: (c[0] + 1, mnp.sin(c[1]) * x + c[1] * c[1] * 0.1)  # noqa: E731
        return mnp.sum(while_loop(lambda c: c[0] < 4, body, (0, x))[1])

    x, eps, g = np.asarray([0.3, -0.5, 0.8]), 1e-6, mt.grad(f)
    fd = np.stack([(np.asarray(g(mnp.asarray(x + eps * e))) -
                    np.asarray(g(mnp.asarray(x - eps * e)))) / (2 * eps) for e in np.eye(3)])
    np.testing.assert_allclose(np.asarray(mt.hessian(f)(mnp.asarray(x))), fd, rtol=1e-5,
                               atol=1e-6)


def test_vjp_function_under_jit_and_vmap(x64):
    a = mnp.asarray(2.0, dtype=mnp.float64)
    _, vjp_fn = mt.vjp(_newton_sqrt, a)
    want = 0.5 / np.sqrt(2.0)
    np.testing.assert_allclose(float(mt.jit(vjp_fn)(mnp.asarray(1.0))[0]), want, rtol=1e-4)
    got = mt.vmap(vjp_fn)(mnp.asarray([1.0, -2.0]))[0]
    np.testing.assert_allclose(np.asarray(got), [want, -2 * want], rtol=1e-4)


def test_second_order_of_a_staged_loop_says_why(x64):
    # under jit the residuals are on a run-time tape: reverse mode works (test_while_tape),
    # differentiating that again is refused rather than dropping the rows' derivatives
    with pytest.raises(TypeError, match=r"cannot be differentiated again.*fori_loop"):
        mt.jit(mt.grad(mt.grad(_newton_sqrt)))(mnp.asarray(2.0))


# ---- vmap ----------------------------------------------------------------------------------
def _count_to(n, x):
    """Doubles x until the counter reaches n: a batched n means a batched predicate."""
    return while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * 2.0 + 1.0), (0, x))


@settings(max_examples=10, deadline=None)
@given(ns=st.lists(st.integers(0, 5), min_size=1, max_size=4), data=st.data())
def test_vmap_batched_predicate_different_trip_counts(ns, data):
    xs = data.draw(_arrays((len(ns), 2)))
    check_vmap(_count_to, (np.asarray(ns, np.int32), xs), in_axes=(0, 0),
               check_dtype=False)
    check_vmap(_count_to, (np.asarray(ns, np.int32), xs[0]), in_axes=(0, None),
               check_dtype=False)
    check_vmap(_count_to, (np.asarray(ns, np.int32), xs.T.copy()), in_axes=(0, 1),
               check_dtype=False)


@settings(max_examples=10, deadline=None)
@given(n=st.integers(0, 4), data=st.data())
def test_vmap_unbatched_predicate_batched_carry(n, data):
    xs = data.draw(_arrays((3, 2)))
    check_vmap(lambda x: _count_to(n, x), (xs,), check_dtype=False)
    # a batched closed-over value that only reaches the carry through the body
    w = data.draw(_arrays((3,)))
    check_vmap(lambda w: while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] + w),
                                    (0, mnp.zeros(()))), (w,), check_dtype=False)


def test_vmap_batched_predicate_from_carry():
    xs = np.asarray([0.5, 3.0, 40.0, 100.0], np.float32)  # 0..several halvings
    check_vmap(lambda x: while_loop(lambda c: c[1] > 1.0, lambda c: (c[0] + 1, c[1] / 2.0),
                                    (0, x)), (xs,), check_dtype=False)


def test_vmap_of_jvp_and_jvp_of_vmap():
    ns, xs = np.asarray([1, 3], np.int32), np.asarray([[0.5, 1.0], [2.0, 0.1]], np.float32)

    def f(n, x):
        return mt.jvp(lambda x: _count_to(n, mnp.sin(x))[1], (x,), (mnp.ones_like(x),))

    check_vmap(f, (ns, xs), check_dtype=False)


# ---- jit -----------------------------------------------------------------------------------
def test_jit_matches_eager_and_traces_body_once():
    calls = {"body": 0}

    def body(c):
        calls["body"] += 1
        return c[0] + 1, mnp.sin(c[1]) + c[1]

    def f(n, x):
        return while_loop(lambda c: c[0] < n, body, (0, x))

    jf = mt.jit(f)
    x = mnp.asarray([0.1, 0.7, -0.3])
    for n in (0, 1, 7, 3):
        assert_tree_close(jf(n, x), f(n, x), check_dtype=False)
    calls["body"] = 0
    jf(mnp.asarray(25), x)
    assert calls["body"] == 0  # compiled once: no retracing per call or per iteration
    text = jf.lower(5, x).as_text()
    assert "_while" in text and "while_body" in text  # a real loop over a compiled body


def test_jit_of_vmap_and_jvp():
    ns, xs = mnp.asarray([0, 2, 5]), mnp.asarray([0.1, 0.2, 0.3])
    vf = mt.vmap(_count_to)
    assert_tree_close(mt.jit(vf)(ns, xs), vf(ns, xs), check_dtype=False)
    jv = mt.jit(lambda x: mt.jvp(lambda x: _count_to(4, x)[1], (x,), (mnp.ones_like(x),)))
    want = mt.jvp(lambda x: _count_to(4, x)[1], (xs,), (mnp.ones_like(xs),))
    assert_tree_close(jv(xs), want, check_dtype=False)


def test_reverse_mode_of_a_jitted_function_containing_the_loop(x64):
    """grad(jit(f)): jit's partial evaluation runs the loop equation by equation, so the
    while_loop's reverse mode works inside jitted functions too (also nested)."""
    a = mnp.asarray(3.0)
    want = 0.5 / np.sqrt(3.0)
    np.testing.assert_allclose(float(mt.grad(mt.jit(_newton_sqrt))(a)), want, rtol=1e-8)
    outer = mt.jit(lambda v: mt.jit(_newton_sqrt)(v) * 2.0 + mnp.sin(v))
    np.testing.assert_allclose(float(mt.grad(outer)(a)), 2 * want + np.cos(3.0), rtol=1e-8)
    got = mt.vmap(mt.grad(mt.jit(_newton_sqrt)))(mnp.asarray([2.0, 5.0]))
    np.testing.assert_allclose(np.asarray(got), 0.5 / np.sqrt([2.0, 5.0]), rtol=1e-8)


def test_reverse_over_reverse_and_compiled_backward_passes(x64):
    """Under an enclosing differentiation the tangent loop is a scan over the stacked
    residuals, so it differentiates again (second and third derivatives of Newton's sqrt
    against the closed forms); a plain vjp records a tape, and its jitted vjp function runs
    the backward loop over that tape compiled."""
    a = mnp.asarray(3.0)
    np.testing.assert_allclose(float(mt.grad(mt.grad(_newton_sqrt))(a)),
                               -0.25 * 3.0 ** -1.5, rtol=1e-8)
    np.testing.assert_allclose(float(mt.grad(mt.grad(mt.grad(_newton_sqrt)))(a)),
                               0.375 * 3.0 ** -2.5, rtol=1e-6)
    for v in (2.0, 7.0):
        _, vjp_fn = mt.vjp(_newton_sqrt, mnp.asarray(v))
        jitted = mt.jit(vjp_fn)
        np.testing.assert_allclose(float(jitted(mnp.asarray(1.5))[0]),
                                   float(vjp_fn(mnp.asarray(1.5))[0]), rtol=1e-12)
        text = jitted.lower(mnp.asarray(1.5)).as_text()
        assert "def vjp_fn_scan_body(" in text and "scan_tape_loop" in text


@pytest.mark.parametrize("loop", ["while", "scan"])
def test_a_zero_step_loop_result_does_not_share_the_operand_buffer(loop):
    # the loop returns its operand's buffer; the compiled code must not then recycle that
    # buffer (the operand dies at the loop) for a later temporary while the result lives
    def f(x):
        y = mnp.cos(x)  # a temporary the compiled code owns
        if loop == "while":
            c = while_loop(lambda c: c[0] < 0, lambda c: (c[0] + 1, c[1] * 2.0), (0, y))[1]
        else:
            c = mt.lax.scan(lambda c, _: (c * 2.0, None), y, None, length=0)[0]
        z = mnp.sin(x) * 3.0
        return c - z * 0.5 + mnp.exp(z)

    x = np.linspace(0, 1, 5, dtype=np.float32)
    want = np.cos(x) - 1.5 * np.sin(x) + np.exp(3.0 * np.sin(x))
    np.testing.assert_allclose(np.asarray(mt.jit(f)(mnp.asarray(x))), want, rtol=1e-5)
