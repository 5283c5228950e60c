"""W9: the training step of examples/mnist_mlp.py: an MLP 64-256-256-10 classifier (ReLU,
softmax cross-entropy against labels smoothed by 0.1, Adam with learning rate 2e-3) on a
batch of 64 8x8 digits, float32; each call is one step continuing from the last.

Each library's version is written the way its users write it:

- mytorch: the example's own `Classifier` (mt.nn.Linear layers, mt.nn.Dropout) and its
  `make_steps` (mt.nn.one_hot / smooth_labels / softmax_cross_entropy, mt.optim.adam, one
  mt.jit step returning (model, opt_state, loss)), loaded from examples/mnist_mlp.py;
- JAX: a plain pytree of parameters, jax.nn, Optax's adam and loss functions (a
  hand-written Adam when Optax is not installed), jax.jit;
- PyTorch: torch.nn.Sequential, torch.nn.CrossEntropyLoss(label_smoothing=0.1) and
  torch.optim.Adam, eager, one thread;
- NumPy: forward and backward by hand, Adam in place (the reference).

Row 1 has no dropout: every library starts from the same NumPy-initialised weights and its
first step must agree with the NumPy reference (weights after the step, and the loss before
it). Row 2 has dropout 0.2 after each hidden ReLU, drawn by each library's own generator
(mytorch and JAX split a key before every step, outside the jitted step, as the example
does): only shapes and finiteness are checked. The batch arrives as NumPy arrays, f32 images
and int32 labels, as the example's data loader gives it.
"""

import functools
import importlib.util
import pathlib

import numpy as np

from benchmarks.harness import Contender, Row, Workload
from benchmarks.workloads import _libs, _mlp

KEY = "W9"
TITLE = "Training step of examples/mnist_mlp.py"
SIZES = {"full": dict(dims=(64, 256, 256, 10), batch=64),
         "tiny": dict(dims=(12, 8, 8, 3), batch=4)}
LR, B1, B2, EPS = 2e-3, 0.9, 0.999, 1e-8
SMOOTHING, DROPOUT = 0.1, 0.2
EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "mnist_mlp.py"


# ---- NumPy reference ----------------------------------------------------------------------
def smoothed_one_hot(y, classes):
    """f32[batch, classes]: one-hot rows of the int labels y, smoothed by SMOOTHING."""
    out = np.full((len(y), classes), SMOOTHING / classes, dtype=np.float32)
    out[np.arange(len(y)), y] += 1.0 - SMOOTHING
    return out


def numpy_loss_and_grads(params, x, labels, rng=None):
    """(loss, grads) of the mean softmax cross-entropy of the MLP (params [W0, b0, ...],
    W_i f32[d_i, d_i+1]) against soft labels f32[batch, classes], by a hand-written
    backward pass. With `rng`, each hidden ReLU output is followed by inverted dropout
    (keep probability 1 - DROPOUT), so h > 0 exactly where the ReLU passed and the unit was
    kept: the backward mask is h > 0, scaled by 1 / keep."""
    n, keep = len(params) // 2, 1.0 - DROPOUT
    acts = [x]
    for i in range(n):
        z = acts[-1] @ params[2 * i]
        z += params[2 * i + 1]
        if i < n - 1:
            np.maximum(z, 0.0, out=z)
            if rng is not None:
                z *= rng.random(z.shape, dtype=np.float32) < keep
                z *= z.dtype.type(1.0 / keep)
        acts.append(z)
    dz = acts.pop()  # logits, turned in place into d loss / d logits = (softmax - y) / batch
    dz -= dz.max(axis=1, keepdims=True)
    lse = np.log(np.exp(dz).sum(axis=1))
    loss = dz.dtype.type(np.mean(lse - (dz * labels).sum(axis=1)))
    np.exp(dz, out=dz)
    dz /= dz.sum(axis=1, keepdims=True)
    dz -= labels
    dz *= dz.dtype.type(1.0 / len(x))
    grads = [None] * len(params)
    for i in reversed(range(n)):
        h = acts[i]
        grads[2 * i] = h.T @ dz
        grads[2 * i + 1] = dz.sum(axis=0)
        if i > 0:
            dh = dz @ params[2 * i].T
            np.multiply(dh, h > 0, out=dh)
            if rng is not None:
                dh *= dh.dtype.type(1.0 / keep)
            dz = dh
    return loss, grads


def make_numpy(params, x, y, dropout):
    """The NumPy training step: each call updates the parameters in place and returns
    (params, loss)."""
    state = {"params": _libs.copies(params), "m": [np.zeros_like(p) for p in params],
             "v": [np.zeros_like(p) for p in params], "t": 0}
    rng = np.random.default_rng(9) if dropout else None
    classes = params[-1].shape[0]

    def step():
        loss, grads = numpy_loss_and_grads(state["params"], x, smoothed_one_hot(y, classes),
                                           rng)
        state["t"] += 1
        _mlp.adam_in_place(state["params"], grads, state["m"], state["v"], state["t"], LR,
                           B1, B2, EPS)
        return state["params"], loss

    return step


# ---- mytorch: the example's own model and step ----------------------------------------------
@functools.cache
def example():
    """examples/mnist_mlp.py as a module (loaded once)."""
    spec = importlib.util.spec_from_file_location("mnist_mlp_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def make_mytorch(params, x, y, dropout):
    """The example's Classifier with the NumPy weights put in, its jitted train_step and
    mt.optim.adam; with dropout, a key split before every step as the example's loop does."""
    import mytorch as mt
    import mytorch.numpy as mnp

    ex = example()
    dims = [p.shape[0] for p in params[::2]] + [params[-1].shape[0]]
    model = ex.Classifier(dims[0], dims[-1], dims[1], len(dims) - 2,
                          DROPOUT if dropout else 0.0, key=mt.random.key(0))
    treedef = mt.tree_util.tree_structure(model)
    model = mt.tree_util.tree_unflatten(
        treedef, [mnp.asarray(np.ascontiguousarray(p.T)) for p in params])
    optimizer = mt.optim.adam(LR)
    train_step, _ = ex.make_steps(optimizer, SMOOTHING)
    carry = {"model": model, "opt_state": optimizer.init(model), "key": mt.random.key(9)}

    def step():
        step_key = None
        if dropout:
            carry["key"], step_key = mt.random.split(carry["key"])
        carry["model"], carry["opt_state"], loss = train_step(
            carry["model"], carry["opt_state"], x, y, step_key)
        return carry["model"], loss

    return step


def _mytorch_result(out):
    """(model, loss) -> ([W0, b0, ...] in the reference's [in, out] layout, loss)."""
    import mytorch as mt

    model, loss = out
    leaves = [np.asarray(a) for a in mt.tree_util.tree_leaves(model)]
    return [a.T if a.ndim == 2 else a for a in leaves], loss


# ---- JAX ------------------------------------------------------------------------------------
def _hand_written_adam(jnp):
    """Optax-style (init, update) of Adam for JAX without Optax."""
    import jax

    def init(params):
        zeros = jax.tree.map(jnp.zeros_like, params)
        return jnp.zeros((), jnp.int32), zeros, zeros

    def update(grads, state, params=None):
        count, mu, nu = state
        count = count + 1
        mu = jax.tree.map(lambda m, g: B1 * m + (1 - B1) * g, mu, grads)
        nu = jax.tree.map(lambda v, g: B2 * v + (1 - B2) * g * g, nu, grads)
        c1, c2 = 1 - B1 ** count, 1 - B2 ** count
        updates = jax.tree.map(lambda m, v: -LR * (m / c1) / (jnp.sqrt(v / c2) + EPS), mu, nu)
        return updates, (count, mu, nu)

    return init, update


def make_jax(params, x, y, dropout):
    """A plain parameter list, jax.nn, Optax (when installed) and jax.jit."""
    jax = _libs.jax()
    import jax.numpy as jnp

    try:
        import optax
    except ImportError:
        optax = None
    if optax is not None:
        opt = optax.adam(LR)
        init, update, apply_updates = opt.init, opt.update, optax.apply_updates
        smooth, cross_entropy = optax.smooth_labels, optax.softmax_cross_entropy
    else:
        init, update = _hand_written_adam(jnp)
        apply_updates = functools.partial(jax.tree.map, lambda p, u: p + u)
        classes = params[-1].shape[0]
        smooth = lambda labels, alpha: labels * (1 - alpha) + alpha / classes  # noqa: E731
        cross_entropy = lambda logits, labels: -jnp.sum(  # noqa: E731
            labels * jax.nn.log_softmax(logits), axis=-1)
    keep = 1.0 - DROPOUT

    def loss_fn(params, x, y, key):
        h, n = x, len(params) // 2
        keys = jax.random.split(key, n - 1) if key is not None else [None] * (n - 1)
        for i in range(n - 1):
            h = jax.nn.relu(h @ params[2 * i] + params[2 * i + 1])
            if keys[i] is not None:
                h = jnp.where(jax.random.bernoulli(keys[i], keep, h.shape), h / keep, 0)
        logits = h @ params[-2] + params[-1]
        labels = smooth(jax.nn.one_hot(y, logits.shape[-1]), SMOOTHING)
        return cross_entropy(logits, labels).mean()

    @jax.jit
    def train_step(params, opt_state, x, y, key):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y, key)
        updates, opt_state = update(grads, opt_state, params)
        return apply_updates(params, updates), opt_state, loss

    start = [jnp.asarray(p) for p in params]
    carry = {"params": start, "opt_state": init(start), "key": jax.random.key(9)}

    def step():
        step_key = None
        if dropout:
            carry["key"], step_key = jax.random.split(carry["key"])
        carry["params"], carry["opt_state"], loss = train_step(
            carry["params"], carry["opt_state"], x, y, step_key)
        return jax.block_until_ready((carry["params"], loss))

    return step


def jax_label():
    """How the JAX column's optimiser is written (Optax's adam, or the fallback)."""
    return "Optax's adam" if _libs.installed("optax") else "a hand-written Adam (no Optax)"


# ---- PyTorch --------------------------------------------------------------------------------
def make_torch(params, x, y, dropout):
    """torch.nn.Sequential (Linear, ReLU[, Dropout] ..., Linear), CrossEntropyLoss with
    label smoothing, torch.optim.Adam; eager, one thread."""
    torch = _libs.torch()
    nn = torch.nn
    layers = []
    for i in range(0, len(params), 2):
        linear = nn.Linear(*params[i].shape)
        with torch.no_grad():
            linear.weight.copy_(torch.from_numpy(params[i].T))
            linear.bias.copy_(torch.from_numpy(params[i + 1]))
        layers.append(linear)
        if i < len(params) - 2:
            layers += [nn.ReLU()] + ([nn.Dropout(DROPOUT)] if dropout else [])
    model = nn.Sequential(*layers).train()
    loss_fn = nn.CrossEntropyLoss(label_smoothing=SMOOTHING)
    opt = torch.optim.Adam(model.parameters(), lr=LR, betas=(B1, B2), eps=EPS)

    def step():
        xb, yb = torch.from_numpy(x), torch.from_numpy(y).long()
        opt.zero_grad()
        loss = loss_fn(model(xb), yb)
        loss.backward()
        opt.step()
        return model, loss

    return step


def _torch_result(out):
    """(model, loss) -> ([W0, b0, ...] in the reference's [in, out] layout, loss)."""
    model, loss = out
    leaves = [p.detach().numpy() for p in model.parameters()]
    return [a.T if a.ndim == 2 else a for a in leaves], loss.detach()


# ---- the workload ---------------------------------------------------------------------------
MAKERS = {"numpy": (make_numpy, None), "mytorch": (make_mytorch, _mytorch_result),
          "jax": (make_jax, None), "torch": (make_torch, _torch_result)}


def build(size="full", libs=None):
    """The W9 workload at SIZES[size]."""
    s = SIZES[size]
    rng = np.random.default_rng(9)
    params = _mlp.init_params(rng, s["dims"])
    x = rng.random((s["batch"], s["dims"][0])).astype(np.float32)  # pixels in [0, 1)
    y = rng.integers(0, s["dims"][-1], s["batch"]).astype(np.int32)
    expected = [[a.copy() for a in out] if isinstance(out, list) else out
                for out in make_numpy(params, x, y, dropout=False)()]
    chosen = ("numpy", *_libs.selected(libs))
    contenders = []
    for dropout in (False, True):
        for lib in chosen:
            make, result = MAKERS[lib]
            contenders.append(Contender(
                lib + ("_dropout" if dropout else ""),
                functools.partial(make, params, x, y, dropout), result=result,
                check="shapes" if dropout else "values"))
    dims = "-".join(map(str, s["dims"]))
    label = f"W9 mnist_mlp.py train step, MLP {dims} Adam, batch {s['batch']}"
    return Workload(
        KEY, TITLE, contenders, expected,
        rows=[Row(f"{label}, no dropout", "numpy", {k: k for k in _libs.LIBS}),
              Row(f"{label}, dropout {DROPOUT}", "numpy_dropout",
                  {k: f"{k}_dropout" for k in _libs.LIBS})],
        notes=["mytorch runs the example's own Classifier and jitted train_step (returns "
               "new arrays, nothing donated); JAX: jax.jit over a parameter list with "
               f"jax.nn and {jax_label()}; PyTorch: nn.Sequential + torch.optim.Adam, eager; "
               "NumPy: hand-written backward pass, Adam in place.",
               "the dropout row's results are checked for shapes and finiteness only "
               "(each library draws its own masks); mytorch and JAX split their key before "
               "each step, outside the jitted step, as the example does."],
        # Adam's first update is lr g / (|g| + eps): for the few gradient entries within a
        # few eps of 0, float32 rounding moves the update by a fraction of lr; lr / 20
        # still catches any wrong update (measured: 1e-5 for JAX and PyTorch, 1e-6 mytorch)
        rtol=1e-4, atol=1e-4)
