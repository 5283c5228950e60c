"""W3: a 6-layer width-256 MLP (ReLU, softmax cross-entropy, batch 128) trained with
Adam: the latency of the first call (trace + compile + run) and the steady step time.

First call: every sample builds a new step function (fresh closures) and clears the
library's caches untimed (`mt.clear_caches()` where it exists, `jax.clear_caches()`), then
times `jit(step)(state...)` until the result is ready. Its row divides by JAX's first call
(target: mytorch <= 0.1x). PyTorch has no compilation: its first call is the first eager
step of a new model and optimizer. Steady state: the same step called again, against a
hand-written in-place NumPy Adam step.

The step takes and returns (params, m, v) (Adam moments); t, the step number, is 1.
"""

import numpy as np

from benchmarks.harness import Contender, Row, Workload
from benchmarks.workloads import _libs, _mlp

KEY = "W3"
TITLE = "Adam step: first call and steady state"
SIZES = {"full": dict(dims=(256,) * 6 + (10,), batch=128),
         "tiny": dict(dims=(6,) * 6 + (3,), batch=4)}
LR, B1, B2, EPS = 1e-3, 0.9, 0.999, 1e-8


def numpy_step(params, m, v, t, x, y):
    """Adam step in place on (params, m, v) (see `_mlp.adam_in_place`); returns
    (params, m, v)."""
    _mlp.adam_in_place(params, _mlp.numpy_grads(params, x, y), m, v, t, LR, B1, B2, EPS)
    return params, m, v


def functional_step(grad, xp, logsumexp):
    """A new Adam step function (new closures every call), as a user of a functional
    library writes it: (params, m, v, t, x, y) -> (params, m, v)."""
    def loss(params, x, y):
        return _mlp.loss(xp, logsumexp, params, x, y)

    def step(params, m, v, t, x, y):
        grads = grad(loss)(params, x, y)
        m = [B1 * mi + (1 - B1) * g for mi, g in zip(m, grads, strict=True)]
        v = [B2 * vi + (1 - B2) * g * g for vi, g in zip(v, grads, strict=True)]
        m_scale, v_scale = 1 / (1 - B1**t), 1 / (1 - B2**t)
        params = [p - LR * (mi * m_scale) / (xp.sqrt(vi * v_scale) + EPS)
                  for p, mi, vi in zip(params, m, v, strict=True)]
        return params, m, v

    return step


def _mytorch_parts(state):
    import mytorch as mt
    import mytorch.numpy as mnp
    from mytorch.scipy.special import logsumexp

    args = _convert(mnp.asarray, state)
    return mt, lambda: functional_step(mt.grad, mnp, logsumexp), args


def _jax_parts(state):
    jax = _libs.jax()
    from jax.scipy.special import logsumexp

    args = _convert(jax.numpy.asarray, state)
    return jax, lambda: functional_step(jax.grad, jax.numpy, logsumexp), args


def _convert(asarray, state):
    params, m, v, t, x, y = state
    return ([asarray(a) for a in params], [asarray(a) for a in m], [asarray(a) for a in v],
            asarray(np.float32(t)), asarray(x), asarray(y))


def _make_mytorch(state):
    mt, new_step, args = _mytorch_parts(state)
    step = mt.jit(new_step())
    return lambda: step(*args)


def _make_mytorch_donated(state):
    """The step with params and Adam state donated (jit(..., donate_argnums=(0, 1, 2))), as
    a training loop passes them: each call continues from the previous call's result."""
    mt, new_step, args = _mytorch_parts(state)
    step = mt.jit(new_step(), donate_argnums=(0, 1, 2))
    carry = {"state": list(args[:3])}

    def run():
        out = step(*carry["state"], *args[3:])
        carry["state"] = list(out)
        return out

    return run


def _make_mytorch_first(state):
    mt, new_step, args = _mytorch_parts(state)

    def fresh():
        if hasattr(mt, "clear_caches"):
            mt.clear_caches()
        step = mt.jit(new_step())
        return lambda: step(*args)

    return fresh


def _make_jax(state):
    jax, new_step, args = _jax_parts(state)
    step = jax.jit(new_step())
    return lambda: jax.block_until_ready(step(*args))


def _make_jax_donated(state):
    """JAX's step with params and Adam state donated, continuing from each result."""
    jax, new_step, args = _jax_parts(state)
    step = jax.jit(new_step(), donate_argnums=(0, 1, 2))
    carry = {"state": [[jax.numpy.array(a, copy=True) for a in group] for group in args[:3]]}

    def run():
        out = jax.block_until_ready(step(*carry["state"], *args[3:]))
        carry["state"] = list(out)
        return out

    return run


def _make_jax_first(state):
    jax, new_step, args = _jax_parts(state)

    def fresh():
        jax.clear_caches()
        step = jax.jit(new_step())
        return lambda: jax.block_until_ready(step(*args))

    return fresh


def _make_torch(state):
    """A PyTorch model and torch.optim.Adam; every call is one training step."""
    torch = _libs.torch()
    params, _, _, _, x, y = state
    params = [torch.from_numpy(p.copy()).requires_grad_() for p in params]
    x, y = torch.from_numpy(x), torch.from_numpy(y)
    opt = torch.optim.Adam(params, lr=LR, betas=(B1, B2), eps=EPS)

    def step():
        opt.zero_grad()
        _mlp.torch_loss(torch, params, x, y).backward()
        opt.step()
        moments = [[opt.state[p][key] for p in params] for key in ("exp_avg", "exp_avg_sq")]
        return params, *moments

    return step


def build(size="full", libs=None):
    """The W3 workload at SIZES[size]."""
    s = SIZES[size]
    rng = np.random.default_rng(3)
    params = _mlp.init_params(rng, s["dims"])
    zeros = [np.zeros_like(p) for p in params]
    x = _libs.f32(rng, (s["batch"], s["dims"][0]))
    y = _libs.one_hot(rng, s["batch"], s["dims"][-1])
    state = (params, zeros, zeros, 1, x, y)
    mine = (_libs.copies(params), _libs.copies(zeros), _libs.copies(zeros), 1, x, y)
    expected = numpy_step(_libs.copies(params), _libs.copies(zeros), _libs.copies(zeros),
                          1, x, y)
    chosen = _libs.selected(libs)
    steady = _libs.contenders({"numpy": lambda: lambda: numpy_step(*mine),
                               "mytorch": lambda: _make_mytorch(state),
                               "jax": lambda: _make_jax(state),
                               "torch": lambda: _make_torch(state)}, chosen)
    steady += [Contender(f"{lib}_donated", make) for lib, make in (
        ("mytorch", lambda: _make_mytorch_donated(state)),
        ("jax", lambda: _make_jax_donated(state))) if lib in chosen]
    first = [Contender(f"{lib}_first", make, group="first call", first_call=True)
             for lib, make in (("mytorch", lambda: _make_mytorch_first(state)),
                               ("jax", lambda: _make_jax_first(state)),
                               ("torch", lambda: lambda: _make_torch(state)))
             if lib in chosen]
    layers = f"{len(s['dims']) - 1}-layer width-{s['dims'][1]}"
    return Workload(
        KEY, TITLE, steady + first, expected,
        rows=[Row(f"W3 {layers} MLP Adam, first call", "jax_first",
                  {lib: f"{lib}_first" for lib in _libs.LIBS}, base_label="JAX first call"),
              Row(f"W3 {layers} MLP Adam, steady step", "numpy",
                  {lib: lib for lib in _libs.LIBS}),
              Row(f"W3 {layers} MLP Adam, steady step, state donated", "numpy",
                  {"mytorch": "mytorch_donated", "jax": "jax_donated",
                   "torch": "torch"})],
        notes=["the first-call row divides by JAX's first call (trace + compile + run, "
               "caches cleared); PyTorch's first call is an eager step of a new model with "
               "a new torch.optim.Adam.",
               "the donated row jits the step with donate_argnums=(0, 1, 2) (params, m, v), "
               "as a training loop would, so the update may be written over the old state "
               "as the NumPy reference and torch.optim do; PyTorch is the same as above."])
