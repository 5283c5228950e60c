"""Per-example gradients of a logistic-regression loss through `vmap(grad)`, against a
hand-written batched NumPy version (and JAX / PyTorch's vmap(grad) when installed).

    python -m benchmarks.per_example_grads [--dim 256] [--batch 512] [--repeat 50]

Prints the median time of each and its ratio to NumPy. The vmapped gradient is one
batched program (no loop over examples), so the ratio should stay flat as --batch grows.
Until jit exists this measures eager dispatch: vmap(grad) runs a few dozen primitives,
each once, on the whole batch.
"""

import argparse
import statistics
import time

import numpy as np

import mytorch as mt
import mytorch.numpy as mnp


def loss(w, x, y):
    """Logistic loss of one example: x (dim,), y a 0/1 label, w (dim,)."""
    z = mnp.dot(x, w)
    return mnp.logaddexp(0.0, z) - y * z


def numpy_per_example_grads(w, xs, ys):
    """d loss_i / d w for every row: (sigmoid(x_i . w) - y_i) x_i, shape (batch, dim)."""
    z = xs @ w
    return (1.0 / (1.0 + np.exp(-z)) - ys)[:, None] * xs


def median_time(fn, repeat):
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _jax_fn(w, xs, ys):
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None

    def jloss(w, x, y):
        z = jnp.dot(x, w)
        return jnp.logaddexp(0.0, z) - y * z

    f = jax.jit(jax.vmap(jax.grad(jloss), in_axes=(None, 0, 0)))
    args = [jnp.asarray(a) for a in (w, xs, ys)]
    return lambda: f(*args).block_until_ready()


def _torch_fn(w, xs, ys):
    try:
        import torch
        from torch.func import grad, vmap
    except ImportError:
        return None

    def tloss(w, x, y):
        z = torch.dot(x, w)
        return torch.logaddexp(torch.zeros(()), z) - y * z

    f = vmap(grad(tloss), in_dims=(None, 0, 0))
    args = [torch.from_numpy(a) for a in (w, xs, ys)]
    return lambda: f(*args)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dim", type=int, default=256)
    p.add_argument("--batch", type=int, default=512)
    p.add_argument("--repeat", type=int, default=50)
    a = p.parse_args(argv)
    rng = np.random.default_rng(0)
    w = rng.standard_normal(a.dim).astype(np.float32) / np.sqrt(a.dim)
    xs = rng.standard_normal((a.batch, a.dim)).astype(np.float32)
    ys = (rng.random(a.batch) > 0.5).astype(np.float32)

    per_example = mt.vmap(mt.grad(loss), in_axes=(None, 0, 0))
    mw, mxs, mys = mnp.asarray(w), mnp.asarray(xs), mnp.asarray(ys)
    got = np.asarray(per_example(mw, mxs, mys))
    want = numpy_per_example_grads(w, xs, ys)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)

    t_np = median_time(lambda: numpy_per_example_grads(w, xs, ys), a.repeat)
    rows = [("hand-written NumPy", t_np),
            ("mytorch vmap(grad), eager", median_time(
                lambda: per_example(mw, mxs, mys), a.repeat))]
    for name, fn in (("JAX jit(vmap(grad))", _jax_fn(w, xs, ys)),
                     ("PyTorch vmap(grad)", _torch_fn(w, xs, ys))):
        if fn is not None:
            rows.append((name, median_time(fn, a.repeat)))
    print(f"per-example gradients, logistic regression: dim {a.dim}, batch {a.batch}")
    for name, t in rows:
        print(f"  {name:28s} {t * 1e6:10.1f} us   {t / t_np:6.2f}x NumPy")


if __name__ == "__main__":
    main()
