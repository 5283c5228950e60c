"""Control flow under jit on the GPU (host loops over compiled bodies): scan, while_loop,
cond, fori_loop and their gradients, against the CPU."""

import numpy as np
import pytest

import mytorch as mt
import mytorch.lax as lax
import mytorch.numpy as mnp
from tests.gpu.compare import GRAD_TOL, assert_matches
from tests.gpu.test_primitives import run

pytestmark = pytest.mark.gpu
LOOSE = (1e-4, 1e-5)
RNG = np.random.default_rng(5)
W = RNG.standard_normal((8, 8), np.float32) / 3
XS = RNG.standard_normal((50, 4, 8), np.float32)


def rnn_loss(w, xs):
    """A 50-step tanh RNN over xs [steps, batch, 8], scanned; mean squared final state."""
    def body(h, x):
        h = mnp.tanh(h @ w + x)
        return h, mnp.sum(h)

    h, sums = lax.scan(body, mnp.zeros((4, 8)), xs)
    return mnp.mean(h ** 2) + 1e-3 * mnp.sum(sums)


def newton_sqrt(a):
    """sqrt(a) by Newton's iteration until converged: a data-dependent trip count."""
    def cond(c):
        x, i = c
        return (mnp.max(mnp.abs(x * x - a)) > 1e-5) & (i < 100)

    def body(c):
        x, i = c
        return (x + a / x) / 2, i + 1

    return lax.while_loop(cond, body, (a, 0))


def branchy(p, x):
    """cond inside scan inside cond."""
    def step(c, xi):
        c = lax.cond(xi > 0, lambda c: c * 1.1 + xi, lambda c: mnp.sin(c) - xi, c)
        return c, c

    return lax.cond(p, lambda x: lax.scan(step, x[0], x)[1], lambda x: x * 2, x)


def fori_dynamic(n, x):
    return lax.fori_loop(0, n, lambda i, c: c * 0.5 + mnp.cos(c + i), x)


@pytest.mark.parametrize("fn,args", [
    (rnn_loss, (W, XS)),
    (newton_sqrt, (np.linspace(0.5, 9, 33, dtype=np.float32),)),
    (branchy, (np.bool_(True), RNG.standard_normal(40).astype(np.float32))),
    (branchy, (np.bool_(False), RNG.standard_normal(40).astype(np.float32))),
    (fori_dynamic, (np.int32(13), RNG.standard_normal(7).astype(np.float32))),
], ids=["scan_rnn", "while_newton", "cond_scan_cond", "cond_false", "fori_dynamic"])
def test_loops_under_jit(fn, args, gpu, cpu):
    assert_matches(run(mt.jit(fn), list(args), gpu), run(fn, list(args), cpu), device=gpu,
                   tol=LOOSE)


def test_scan_grad_under_jit(gpu, cpu):
    grad = mt.jit(mt.value_and_grad(rnn_loss, argnums=(0, 1)))
    assert_matches(run(grad, [W, XS], gpu), run(grad, [W, XS], cpu), device=gpu,
                   tol=(1e-4, 1e-5), table=GRAD_TOL)


def test_while_grad_under_jit(gpu, cpu):
    def loss(x):
        return mnp.sum(lax.while_loop(lambda c: c[1] < 6, lambda c: (mnp.sin(c[0]) * 1.5,
                                                                     c[1] + 1), (x, 0))[0])

    x = [RNG.standard_normal(9).astype(np.float32)]
    grad = mt.jit(mt.grad(loss))
    assert_matches(run(grad, x, gpu), run(grad, x, cpu), device=gpu, table=GRAD_TOL)


def test_training_loop_in_a_fori_loop(gpu, cpu):
    def train(w, xs):
        def step(i, w):
            return w - 0.05 * mt.grad(rnn_loss)(w, xs[:, :, :] * (1 + 0.01 * i))
        return lax.fori_loop(0, 5, step, w)

    assert_matches(run(mt.jit(train), [W, XS[:10]], gpu), run(train, [W, XS[:10]], cpu),
                   device=gpu, tol=(1e-4, 1e-5))


@pytest.mark.parametrize("fn,args,loop", [
    (rnn_loss, (W, XS), "scan"),
    (newton_sqrt, (np.linspace(0.5, 9, 33, dtype=np.float32),), "while"),
], ids=["scan", "while_data_dependent"])
def test_cuda_graph_option_with_loops(fn, args, loop, gpu, cpu):
    """A step with host loops under cuda_graph either gives plain jit's results on every
    call or refuses at once with an error naming the loop and the option."""
    graphed = mt.jit(fn, backend_options={"cuda_graph": True})
    want = run(fn, list(args), cpu)
    try:
        got = run(graphed, list(args), gpu)
    except ValueError as e:
        assert "cuda_graph" in str(e) and loop in str(e), str(e)
        return
    assert_matches(got, want, device=gpu, tol=LOOSE)
    for _ in range(2):
        assert_matches(run(graphed, list(args), gpu), want, device=gpu, tol=LOOSE)
