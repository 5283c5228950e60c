"""Differential tests on random programs: for programs drawn by hypothesis from a pool of
mytorch.numpy operations, vmap agrees with the loop, vmap(grad) with the loop of grads,
grad(vmap) with the grad of the loop, and jacfwd/jacrev with each other and with central
finite differences (float64)."""

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch.scipy import special
from tests.batching.vmap_check import assert_tree_close, check_vmap

SHAPE = (3, 4)
_W = np.linspace(-1.0, 1.0, 16).reshape(4, 4)


def _keep_shape_sum(a, axis):
    return a - mnp.sum(a, axis=axis, keepdims=True) * 0.25


# one-operand steps: shape (3, 4) -> (3, 4); smooth where the loop draws values
UNARY = {
    "sin": mnp.sin,
    "tanh": mnp.tanh,
    "exp_tanh": lambda a: mnp.exp(mnp.tanh(a)),
    "square": lambda a: a * a * 0.5,
    "center_rows": lambda a: _keep_shape_sum(a, 1),
    "center_cols": lambda a: _keep_shape_sum(a, 0),
    "matmul": lambda a: a @ _W,
    "flip": lambda a: a[::-1, ::-1],
    "roll_cols": lambda a: mnp.concatenate([a[:, 1:], a[:, :1]], axis=1),
    "transpose_trip": lambda a: mnp.reshape(a.T, (4, 3)).T.reshape(SHAPE),
    "cumsum": lambda a: mnp.cumsum(a, axis=1) * 0.3,
    "softmax": lambda a: special.softmax(a, axis=-1),
    "logsumexp_b": lambda a: a - special.logsumexp(a, axis=0, keepdims=True),
    "pad_slice": lambda a: mnp.pad(a, ((1, 1), (0, 2)))[1:-1, 2:],
    "gather_rows": lambda a: a[mnp.array([2, 0, 1])],
    "scatter_add": lambda a: a.at[mnp.array([0, 2, 0])].add(a[1]),
    "sort_rows": lambda a: mnp.sort(a, axis=1),
    "max_bcast": lambda a: a + mnp.max(a, axis=1, keepdims=True),
    "where_pos": lambda a: mnp.where(a > 0, a, 0.1 * a),
    "outer_mean": lambda a: a * mnp.mean(a, axis=0)[None, :],
    "norm": lambda a: a / (1.0 + mnp.linalg.norm(a)),
}
BINARY = {
    "add": lambda a, b: a + b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / (1.5 + mnp.tanh(b)),
    "hypot_like": lambda a, b: mnp.sqrt(a * a + b * b + 1.0),
    "einsum": lambda a, b: mnp.einsum("ij,kj->ik", a, b) @ mnp.ones((3, 4)) * 0.1,
    "maximum": mnp.maximum,
}


@st.composite
def programs(draw):
    """A list of steps (op name, operand indices) over the inputs (x, y) and earlier
    values; the program's output is the last value."""
    steps = []
    n_values = 2
    for _ in range(draw(st.integers(1, 5))):
        if draw(st.booleans()):
            name = draw(st.sampled_from(sorted(UNARY)))
            steps.append((name, (draw(st.integers(0, n_values - 1)),)))
        else:
            name = draw(st.sampled_from(sorted(BINARY)))
            steps.append((name, (draw(st.integers(0, n_values - 1)),
                                 draw(st.integers(0, n_values - 1)))))
        n_values += 1
    return steps


def run(steps, x, y):
    values = [mnp.asarray(x), mnp.asarray(y)]  # the loop reference passes NumPy arrays
    for name, ins in steps:
        fn = UNARY.get(name) or BINARY[name]
        values.append(fn(*[values[i] for i in ins]))
    return values[-1]


def scalar(steps):
    return lambda x, y: mnp.sum(mnp.sin(run(steps, x, y)))


@settings(max_examples=30, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(programs(), st.integers(1, 4), st.sampled_from([(0, None), (None, 0), (0, 0),
                                                       (1, 2), (-1, 0)]), st.data())
def test_vmap_and_vmap_of_grad_match_loops(x64, steps, n, in_axes, data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 16)))

    def arg(axis):
        if axis is None:
            return rng.standard_normal(SHAPE)
        shape = list(SHAPE)
        shape.insert(axis % 3, n)
        return rng.standard_normal(shape)

    x, y = arg(in_axes[0]), arg(in_axes[1])
    check_vmap(lambda a, b: run(steps, a, b), (x, y), in_axes=in_axes, rtol=1e-10,
               atol=1e-12)
    check_vmap(mt.grad(scalar(steps), argnums=(0, 1)), (x, y), in_axes=in_axes,
               rtol=1e-9, atol=1e-11)

    def total(a, b):
        return mnp.sum(mt.vmap(scalar(steps), in_axes=in_axes)(a, b))

    def total_loop(a, b):
        def take(v, i, d):
            return v if d is None else mnp.take(v, i, axis=d)
        return sum(scalar(steps)(take(a, i, in_axes[0]), take(b, i, in_axes[1]))
                   for i in range(n))

    assert_tree_close(mt.grad(total, argnums=(0, 1))(x, y),
                      mt.grad(total_loop, argnums=(0, 1))(x, y), rtol=1e-9, atol=1e-11)


@settings(max_examples=20, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(programs(), st.data())
def test_jacobians_agree_with_finite_differences(x64, steps, data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 16)))
    x, y = rng.standard_normal(SHAPE), rng.standard_normal(SHAPE)

    def f(a):
        return run(steps, a, mnp.asarray(y))

    jf = np.asarray(mt.jacfwd(f)(mnp.asarray(x)))
    jr = np.asarray(mt.jacrev(f)(mnp.asarray(x)))
    assert jf.shape == SHAPE + SHAPE
    np.testing.assert_allclose(jf, jr, rtol=1e-9, atol=1e-11)
    eps = 1e-6
    fd = np.empty(SHAPE + SHAPE)
    for idx in np.ndindex(*SHAPE):
        e = np.zeros(SHAPE)
        e[idx] = eps
        fd[(...,) + idx] = (np.asarray(f(mnp.asarray(x + e)))
                            - np.asarray(f(mnp.asarray(x - e)))) / (2 * eps)
    np.testing.assert_allclose(jf, fd, rtol=1e-5, atol=1e-6)
    hess = np.asarray(mt.hessian(lambda a: mnp.sum(mnp.sin(f(a))))(mnp.asarray(x)))
    np.testing.assert_allclose(hess, np.swapaxes(hess.reshape(12, 12), 0, 1).reshape(hess.shape),
                               rtol=1e-7, atol=1e-9)
