"""A first mytorch program: trace a function to a jaxpr, print it, evaluate it, then train
it with a jit-compiled gradient step.

    python examples/first.py
"""

import numpy as np

import mytorch as mt
import mytorch.numpy as mnp


def predict(w, b, x):
    """A one-layer network: tanh(x @ w + b), batch of rows x: f32[n, d_in]."""
    return mnp.tanh(x @ w + b)


def loss(params, x, y):
    w, b = params["w"], params["b"]
    return mnp.mean((predict(w, b, x) - y) ** 2)


def main():
    rng = np.random.default_rng(0)
    params = {"w": mnp.asarray(rng.normal(size=(3, 2)).astype(np.float32)),
              "b": mnp.zeros(2)}
    x = mnp.asarray(rng.normal(size=(4, 3)).astype(np.float32))
    y = mnp.ones((4, 2))

    closed = mt.make_jaxpr(loss)(params, x, y)
    print("The jaxpr of loss(params, x, y):")
    print(closed)

    eager = loss(params, x, y)
    staged = closed(*mt.tree_util.tree_leaves((params, x, y)))[0]
    print(f"\nloss, run eagerly:        {float(eager):.6f}")
    print(f"loss, by evaluating jaxpr: {float(staged):.6f}")
    assert np.allclose(eager, staged)

    @mt.jit
    def sgd_step(params, x, y):
        grads = mt.grad(loss)(params, x, y)
        return mt.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads)

    print("\nThe NumPy code jit generates for one SGD step:")
    print(sgd_step.lower(params, x, y).as_text())
    for i in range(100):
        params = sgd_step(params, x, y)
    print(f"loss after 100 compiled SGD steps: {float(loss(params, x, y)):.6f}")
    assert float(loss(params, x, y)) < float(eager)


if __name__ == "__main__":
    main()
