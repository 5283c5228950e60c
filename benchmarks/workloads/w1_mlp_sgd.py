"""W1: one SGD step of an MLP 784-512-512-10 (ReLU, softmax cross-entropy), batch 128,
float32: forward, backward and the parameter update; the step returns the new parameters.

NumPy: hand-written backward pass, parameters updated in place. mytorch / JAX:
`jit(step)` with `grad(loss)`, returning new arrays. PyTorch: eager autograd, in-place
update under no_grad (torch.compile is not measured).
"""

import numpy as np

from benchmarks.harness import Row, Workload
from benchmarks.workloads import _libs, _mlp

KEY = "W1"
TITLE = "MLP SGD step"
SIZES = {"full": dict(dims=(784, 512, 512, 10), batch=128, lr=0.01),
         "tiny": dict(dims=(12, 8, 8, 3), batch=4, lr=0.5)}


def numpy_step(params, x, y, lr):
    """SGD step in place: params[i] -= lr * grad_i; returns params."""
    for p, g in zip(params, _mlp.numpy_grads(params, x, y), strict=True):
        g *= lr
        p -= g
    return params


def _functional_step(grad, xp, logsumexp, lr):
    """The step as a user of a functional library writes it: new params returned."""
    def loss(params, x, y):
        return _mlp.loss(xp, logsumexp, params, x, y)

    def step(params, x, y):
        grads = grad(loss)(params, x, y)
        return [p - lr * g for p, g in zip(params, grads, strict=True)]

    return step


def _make_mytorch(params, x, y, lr):
    import mytorch as mt
    import mytorch.numpy as mnp
    from mytorch.scipy.special import logsumexp

    step = mt.jit(_functional_step(mt.grad, mnp, logsumexp, lr))
    params, x, y = [mnp.asarray(p) for p in params], mnp.asarray(x), mnp.asarray(y)
    return lambda: step(params, x, y)


def _make_mytorch_donated(params, x, y, lr):
    """The step with the parameters donated, each call continuing from the last result."""
    import mytorch as mt
    import mytorch.numpy as mnp
    from mytorch.scipy.special import logsumexp

    step = mt.jit(_functional_step(mt.grad, mnp, logsumexp, lr), donate_argnums=0)
    carry = {"params": [mnp.asarray(p) for p in params]}
    x, y = mnp.asarray(x), mnp.asarray(y)

    def run():
        carry["params"] = step(carry["params"], x, y)
        return carry["params"]

    return run


def _make_jax_donated(params, x, y, lr):
    """JAX's step with the parameters donated, continuing from each result."""
    jax = _libs.jax()
    import jax.numpy as jnp
    from jax.scipy.special import logsumexp

    step = jax.jit(_functional_step(jax.grad, jnp, logsumexp, lr), donate_argnums=0)
    carry = {"params": [jnp.array(p, copy=True) for p in params]}
    x, y = jnp.asarray(x), jnp.asarray(y)

    def run():
        carry["params"] = jax.block_until_ready(step(carry["params"], x, y))
        return carry["params"]

    return run


def _make_jax(params, x, y, lr):
    jax = _libs.jax()
    import jax.numpy as jnp
    from jax.scipy.special import logsumexp

    step = jax.jit(_functional_step(jax.grad, jnp, logsumexp, lr))
    params, x, y = [jnp.asarray(p) for p in params], jnp.asarray(x), jnp.asarray(y)
    return lambda: jax.block_until_ready(step(params, x, y))


def _make_torch(params, x, y, lr):
    torch = _libs.torch()
    params = [torch.from_numpy(p.copy()).requires_grad_() for p in params]
    x, y = torch.from_numpy(x), torch.from_numpy(y)

    def step():
        grads = torch.autograd.grad(_mlp.torch_loss(torch, params, x, y), params)
        with torch.no_grad():
            for p, g in zip(params, grads, strict=True):
                p.sub_(g, alpha=lr)
        return params

    return step


def build(size="full", libs=None):
    """The W1 workload at SIZES[size]."""
    s = SIZES[size]
    rng = np.random.default_rng(1)
    params = _mlp.init_params(rng, s["dims"])
    x = _libs.f32(rng, (s["batch"], s["dims"][0]))
    y = _libs.one_hot(rng, s["batch"], s["dims"][-1])
    lr = s["lr"]
    expected = [a.copy() for a in numpy_step(_libs.copies(params), x, y, lr)]
    mine = _libs.copies(params)
    makers = {"numpy": lambda: lambda: numpy_step(mine, x, y, lr),
              "mytorch": lambda: _make_mytorch(params, x, y, lr),
              "jax": lambda: _make_jax(params, x, y, lr),
              "torch": lambda: _make_torch(params, x, y, lr),
              "mytorch_donated": lambda: _make_mytorch_donated(params, x, y, lr),
              "jax_donated": lambda: _make_jax_donated(params, x, y, lr)}
    contenders = _libs.contenders(makers, _libs.selected(libs))
    dims = "-".join(map(str, s["dims"]))
    return Workload(
        KEY, TITLE, contenders, expected,
        rows=[Row(f"W1 MLP {dims} SGD step, batch {s['batch']}", "numpy",
                  {k: k for k in _libs.LIBS}),
              Row(f"W1 MLP {dims} SGD step, batch {s['batch']}, params donated", "numpy",
                  {"mytorch": "mytorch_donated", "jax": "jax_donated", "torch": "torch"})],
        notes=["NumPy and PyTorch update the parameters in place; mytorch and JAX return "
               "new arrays (the donated row: jit(..., donate_argnums=0), as a training "
               "loop passes them, so new parameters may be written over the old). PyTorch "
               "is eager (torch.compile not measured)."])
