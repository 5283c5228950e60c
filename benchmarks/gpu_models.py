"""The training steps `python -m benchmarks.gpu` times: the digits MLP of
examples/mnist_mlp.py and the character GPT of examples/gpt_char.py, in mytorch (the
examples' own model and jitted step), PyTorch (eager: torch.nn, torch.optim) and JAX
(jax.jit; Optax where installed, else the same optimiser written out), all on one GPU
with the batch already there.

Equivalence: the same layer sizes, activations (ReLU; tanh-approximated GELU), dropout
0.2 after each hidden ReLU of the MLP (each library draws its own masks; mytorch and JAX
split a key before every step, outside the jitted step, as the example does), softmax
cross-entropy with label smoothing 0.1 and Adam (lr 2e-3) for the MLP; pre-norm blocks,
causal attention through each library's fused attention call, tied output embedding,
global-norm clipping at 1, AdamW (b2 0.99, weight decay 0.1) on a warmup-cosine schedule for
the GPT. Weights are initialised by each library; the first step's losses are shown as a
sanity check (about log(classes) and log(vocab)).
"""

import functools
import importlib.util
import math
import pathlib

import numpy as np

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"
# (label, settings); the first of each is the example's default size
MLP_SIZES = [("digits MLP 64-256-256-10, batch 64 (the example)",
              dict(dims=(64, 256, 256, 10), batch=64)),
             ("MLP 784-2048-2048-10, batch 1024",
              dict(dims=(784, 2048, 2048, 10), batch=1024))]
GPT_SIZES = [("char-GPT ctx 64, dim 128, 4 heads, depth 3, batch 32 (the example)",
              dict(vocab=103, context=64, dim=128, heads=4, depth=3, batch=32)),
             ("char-GPT ctx 256, dim 384, 6 heads, depth 6, batch 32",
              dict(vocab=103, context=256, dim=384, heads=6, depth=6, batch=32))]
DROPOUT, SMOOTHING, MLP_LR = 0.2, 0.1, 2e-3
GPT_LR, GPT_STEPS, B1, B2, EPS, WD = 3e-3, 1000, 0.9, 0.99, 1e-8, 0.1


@functools.cache
def example(name):
    """examples/<name>.py as a module (loaded once)."""
    spec = importlib.util.spec_from_file_location(f"{name}_example", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Stepper:
    """A training loop's state: each call runs one step; `first_loss` is the loss the first
    step returned (read once, after timing)."""

    def __init__(self, step, read_loss):
        self._step, self._read, self._first = step, read_loss, None

    def __call__(self):
        loss = self._step()
        if self._first is None:
            self._first = loss

    @property
    def first_loss(self):
        return None if self._first is None else float(self._read(self._first))


def _mlp_batch(s):
    rng = np.random.default_rng(0)
    x = rng.random((s["batch"], s["dims"][0])).astype(np.float32)
    y = rng.integers(0, s["dims"][-1], s["batch"]).astype(np.int32)
    return x, y


def _gpt_batch(s):
    rng = np.random.default_rng(1)
    ids = rng.integers(0, s["vocab"], (s["batch"], s["context"] + 1)).astype(np.int32)
    return ids[:, :-1], ids[:, 1:]


def warmup_cosine(step, peak=GPT_LR, steps=GPT_STEPS):
    """The example's schedule: linear warmup over steps // 20, cosine decay to peak / 10."""
    warmup = max(1, steps // 20)
    if step < warmup:
        return peak * step / warmup
    t = min(step - warmup, steps - warmup) / (steps - warmup)
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * t)))


# ---- mytorch: the examples' own code -----------------------------------------------------------
def mytorch_mlp(s, device):
    import mytorch as mt

    mnist = example("mnist_mlp")
    dims = s["dims"]
    model = mnist.Classifier(dims[0], dims[-1], dims[1], len(dims) - 2, DROPOUT,
                             key=mt.random.key(0))
    optimizer = mt.optim.adam(MLP_LR)
    train_step, _ = mnist.make_steps(optimizer, SMOOTHING)
    state = mt.device_put({"model": model, "opt": optimizer.init(model),
                           "key": mt.random.key(1)}, device)
    x, y = mt.device_put(_mlp_batch(s), device)

    def step():
        state["key"], k = mt.random.split(state["key"])
        state["model"], state["opt"], loss = train_step(state["model"], state["opt"], x, y, k)
        return loss

    return Stepper(step, float)


def mytorch_gpt(s, device):
    import argparse

    import mytorch as mt
    from mytorch.mixed_precision import get_policy

    gpt = example("gpt_char")
    model = gpt.GPT(s["vocab"], s["context"], s["dim"], s["heads"], s["depth"],
                    key=mt.random.key(0))
    optimizer = gpt.make_optimizer(argparse.Namespace(steps=GPT_STEPS, lr=GPT_LR))
    train_step, _ = gpt.make_steps(optimizer, get_policy("float32"))
    state = mt.device_put({"model": model, "opt": optimizer.init(model)}, device)
    x, y = mt.device_put(_gpt_batch(s), device)

    def step():
        state["model"], state["opt"], loss = train_step(state["model"], state["opt"], x, y)
        return loss

    return Stepper(step, float)


# ---- PyTorch, eager ------------------------------------------------------------------------
def torch_mlp(s, device_index):
    import torch

    nn, dev = torch.nn, torch.device("cuda", device_index)
    dims, layers = s["dims"], []
    for i, (a, b) in enumerate(zip(dims[:-1], dims[1:], strict=True)):
        layers.append(nn.Linear(a, b))
        if i < len(dims) - 2:
            layers += [nn.ReLU(), nn.Dropout(DROPOUT)]
    model = nn.Sequential(*layers).to(dev).train()
    loss_fn = nn.CrossEntropyLoss(label_smoothing=SMOOTHING)
    opt = torch.optim.Adam(model.parameters(), lr=MLP_LR)
    x, y = (torch.from_numpy(a).to(dev) for a in _mlp_batch(s))
    y = y.long()

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss.detach()

    return Stepper(step, lambda t: t.item())


def _torch_gpt_model(s):
    import torch

    nn, F = torch.nn, torch.nn.functional

    class Block(nn.Module):
        def __init__(self, dim, heads):
            super().__init__()
            self.heads = heads
            self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
            self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
            self.fc, self.out = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)

        def forward(self, x):
            b, t, d = x.shape
            q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, d // self.heads) \
                .permute(2, 0, 3, 1, 4)
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
            return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(s["vocab"], s["dim"])
            self.pos = nn.Embedding(s["context"], s["dim"])
            nn.init.normal_(self.tok.weight, std=0.02)
            nn.init.normal_(self.pos.weight, std=0.02)
            self.blocks = nn.ModuleList(Block(s["dim"], s["heads"]) for _ in range(s["depth"]))
            self.ln = nn.LayerNorm(s["dim"])

        def forward(self, ids):
            x = self.tok(ids) + self.pos(torch.arange(ids.shape[-1], device=ids.device))
            for block in self.blocks:
                x = block(x)
            return self.ln(x) @ self.tok.weight.T

    return GPT()


def torch_gpt(s, device_index):
    import torch

    dev = torch.device("cuda", device_index)
    model = _torch_gpt_model(s).to(dev).train()
    params = list(model.parameters())
    opt = torch.optim.AdamW(params, lr=GPT_LR, betas=(B1, B2), eps=EPS, weight_decay=WD)
    x, y = (torch.from_numpy(a).to(dev).long() for a in _gpt_batch(s))
    count = [0]

    def step():
        opt.zero_grad(set_to_none=True)
        logits = model(x)
        loss = torch.nn.functional.cross_entropy(logits.view(-1, logits.shape[-1]),
                                                 y.view(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        for group in opt.param_groups:
            group["lr"] = warmup_cosine(count[0])
        opt.step()
        count[0] += 1
        return loss.detach()

    return Stepper(step, lambda t: t.item())


# ---- JAX, jit --------------------------------------------------------------------------------
def _adam(jax, jnp, lr, b2, weight_decay=0.0, clip=None):
    """Optax-style (init, update) of Adam(W) with optional global-norm clipping; `lr` is a
    number or a function of the step count (for JAX without Optax)."""

    def init(params):  # (two trees of zeros: the step donates its state's buffers)
        return (jnp.zeros((), jnp.int32), jax.tree.map(jnp.zeros_like, params),
                jax.tree.map(jnp.zeros_like, params))

    def update(grads, state, params):
        if clip is not None:
            norm = jnp.sqrt(sum(jnp.sum(g * g) for g in jax.tree.leaves(grads)))
            scale = jnp.minimum(1.0, clip / norm)
            grads = jax.tree.map(lambda g: g * scale, grads)
        count, mu, nu = state
        rate = lr(count) if callable(lr) else lr
        count = count + 1
        mu = jax.tree.map(lambda m, g: B1 * m + (1 - B1) * g, mu, grads)
        nu = jax.tree.map(lambda v, g: b2 * v + (1 - b2) * g * g, nu, grads)
        c1, c2 = 1 - B1 ** count, 1 - b2 ** count
        updates = jax.tree.map(lambda m, v, p: -rate * ((m / c1) / (jnp.sqrt(v / c2) + EPS)
                                                        + weight_decay * p), mu, nu, params)
        return updates, (count, mu, nu)

    return init, update


def _jax_cosine(jnp, peak=GPT_LR, steps=GPT_STEPS):
    warmup = max(1, steps // 20)

    def schedule(count):
        t = jnp.clip(count - warmup, 0, steps - warmup) / (steps - warmup)
        decay = peak * (0.1 + 0.9 * 0.5 * (1 + jnp.cos(jnp.pi * t)))
        return jnp.where(count < warmup, peak * count / warmup, decay)

    return schedule


def _optimizer(jax, jnp, kind):
    """(init, update, how it is written) of the MLP's Adam or the GPT's clipped AdamW."""
    try:
        import optax
    except ImportError:
        optax = None
    if optax is not None:
        if kind == "mlp":
            opt = optax.adam(MLP_LR)
        else:
            opt = optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(
                optax.warmup_cosine_decay_schedule(0.0, GPT_LR, max(1, GPT_STEPS // 20),
                                                   GPT_STEPS, GPT_LR / 10),
                b1=B1, b2=B2, eps=EPS, weight_decay=WD))
        return opt.init, opt.update, "Optax"
    if kind == "mlp":
        init, update = _adam(jax, jnp, MLP_LR, 0.999)
    else:
        init, update = _adam(jax, jnp, _jax_cosine(jnp), B2, WD, clip=1.0)
    return init, update, "a hand-written optimiser (no Optax)"


def _jax_step(jax, loss_fn, update):
    @functools.partial(jax.jit, donate_argnums=(0, 1))
    def train_step(params, opt_state, *batch):
        loss, grads = jax.value_and_grad(loss_fn)(params, *batch)
        updates, opt_state = update(grads, opt_state, params)
        return jax.tree.map(lambda p, u: p + u, params, updates), opt_state, loss

    return train_step


def jax_mlp(s, jdev):
    import jax
    import jax.numpy as jnp

    init, update, _ = _optimizer(jax, jnp, "mlp")
    dims, keep = s["dims"], 1.0 - DROPOUT
    rng = np.random.default_rng(2)
    params = [[(rng.standard_normal((a, b)) / np.sqrt(a)).astype(np.float32),
               np.zeros(b, np.float32)] for a, b in zip(dims[:-1], dims[1:], strict=True)]

    def loss_fn(params, x, y, key):
        keys = jax.random.split(key, len(params) - 1)
        h = x
        for (w, b), k in zip(params[:-1], keys, strict=True):
            h = jax.nn.relu(h @ w + b)
            h = jnp.where(jax.random.bernoulli(k, keep, h.shape), h / keep, 0)
        logits = h @ params[-1][0] + params[-1][1]
        labels = jax.nn.one_hot(y, dims[-1]) * (1 - SMOOTHING) + SMOOTHING / dims[-1]
        return -jnp.mean(jnp.sum(labels * jax.nn.log_softmax(logits), axis=-1))

    train_step = _jax_step(jax, loss_fn, update)
    params = jax.device_put(params, jdev)
    state = {"params": params, "opt": init(params), "key": jax.device_put(jax.random.key(1),
                                                                          jdev)}
    x, y = jax.device_put(_mlp_batch(s), jdev)

    def step():
        state["key"], k = jax.random.split(state["key"])
        state["params"], state["opt"], loss = train_step(state["params"], state["opt"], x, y,
                                                         k)
        return loss

    return Stepper(step, float)


def _jax_gpt_params(s, rng):
    d, depth = s["dim"], s["depth"]

    def dense(a, b):
        return [(rng.uniform(-1, 1, (a, b)) / np.sqrt(a)).astype(np.float32),
                np.zeros(b, np.float32)]

    def norm():
        return [np.ones(d, np.float32), np.zeros(d, np.float32)]

    blocks = [{"ln1": norm(), "qkv": dense(d, 3 * d), "proj": dense(d, d), "ln2": norm(),
               "fc": dense(d, 4 * d), "out": dense(4 * d, d)} for _ in range(depth)]
    return {"tok": (rng.standard_normal((s["vocab"], d)) * 0.02).astype(np.float32),
            "pos": (rng.standard_normal((s["context"], d)) * 0.02).astype(np.float32),
            "blocks": blocks, "ln": norm()}


def jax_gpt(s, jdev):
    import jax
    import jax.numpy as jnp

    init, update, _ = _optimizer(jax, jnp, "gpt")
    heads = s["heads"]

    def layer_norm(x, p):
        mean = jnp.mean(x, axis=-1, keepdims=True)
        var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
        return (x - mean) * jax.lax.rsqrt(var + 1e-5) * p[0] + p[1]

    def dense(x, p):
        return x @ p[0] + p[1]

    def forward(params, ids):
        b, t = ids.shape
        x = params["tok"][ids] + params["pos"][jnp.arange(t)]
        for blk in params["blocks"]:
            d = x.shape[-1]
            q, k, v = jnp.split(dense(layer_norm(x, blk["ln1"]), blk["qkv"])
                                .reshape(b, t, 3, heads, d // heads), 3, axis=2)
            a = jax.nn.dot_product_attention(q[:, :, 0], k[:, :, 0], v[:, :, 0],
                                             is_causal=True)
            x = x + dense(a.reshape(b, t, d), blk["proj"])
            h = jax.nn.gelu(dense(layer_norm(x, blk["ln2"]), blk["fc"]), approximate=True)
            x = x + dense(h, blk["out"])
        return layer_norm(x, params["ln"]) @ params["tok"].T

    def loss_fn(params, x, y):
        logp = jax.nn.log_softmax(forward(params, x))
        return -jnp.mean(jnp.take_along_axis(logp, y[..., None], axis=-1))

    train_step = _jax_step(jax, loss_fn, update)
    params = jax.device_put(_jax_gpt_params(s, np.random.default_rng(3)), jdev)
    state = {"params": params, "opt": init(params)}
    x, y = jax.device_put(_gpt_batch(s), jdev)

    def step():
        state["params"], state["opt"], loss = train_step(state["params"], state["opt"], x, y)
        return loss

    return Stepper(step, float)


# ---- the table ------------------------------------------------------------------------------
def _torch_device():
    """The CUDA device index PyTorch uses, or why PyTorch is left out."""
    if importlib.util.find_spec("torch") is None:
        return "not installed"
    import torch

    if not torch.cuda.is_available():
        return "sees no GPU"
    return torch.cuda.current_device()


def _jax_device():
    """JAX's first GPU, or why JAX is left out."""
    if importlib.util.find_spec("jax") is None:
        return "not installed"
    import jax

    try:
        return jax.devices("gpu")[0]
    except RuntimeError as e:
        return f"sees no GPU ({str(e)[:80]})"


def model_rows(device, models, quick, measure):
    """(markdown table, targets missed, notes) of the selected models ("mlp", "gpt")."""
    from benchmarks.gpu import JAX_TARGET, TORCH_TARGET, fmt_ratio, fmt_time, table

    torch_dev, jax_dev = _torch_device(), _jax_device()
    notes = [f"{lib}: {why}" for lib, why in (("PyTorch", torch_dev), ("JAX", jax_dev))
             if isinstance(why, str)]
    if not isinstance(jax_dev, str):
        import jax
        import jax.numpy as jnp

        notes.append(f"JAX {jax.__version__} uses {_optimizer(jax, jnp, 'mlp')[2]}")
    if not isinstance(torch_dev, str):
        import torch

        notes.append(f"PyTorch {torch.__version__}, eager (torch.nn, torch.optim defaults)")
    builders = {"mlp": (MLP_SIZES, mytorch_mlp, torch_mlp, jax_mlp),
                "gpt": (GPT_SIZES, mytorch_gpt, torch_gpt, jax_gpt)}
    settings = dict(calls=5 if quick else 20, budget_s=1.0 if quick else 6.0,
                    min_rounds=3 if quick else 10)
    rows, missed = [], []
    for model in models:
        sizes, mk_mt, mk_torch, mk_jax = builders[model]
        for label, s in sizes[:1] if quick else sizes:
            steppers, errors = {}, []
            for name, make, dev in (("mytorch", mk_mt, device), ("torch", mk_torch, torch_dev),
                                    ("jax", mk_jax, jax_dev)):
                if isinstance(dev, str):
                    continue
                try:
                    steppers[name] = make(s, dev)
                except Exception as e:
                    errors.append(f"{name}: {type(e).__name__}: {str(e)[:120]}")
            times = measure(steppers, **settings)
            t = {k: v[0] for k, v in times.items()}
            errors += [f"{k}: {v[1]}" for k, v in times.items() if v[0] is None]
            first = ", ".join(f"{k} {st.first_loss:.3f}" for k, st in steppers.items()
                              if t.get(k) is not None)
            mt_t, torch_t, jax_t = t.get("mytorch"), t.get("torch"), t.get("jax")
            if mt_t and torch_t and mt_t / torch_t >= TORCH_TARGET:
                missed.append(f"{label}: {mt_t / torch_t:.2f}x PyTorch eager")
            if mt_t and jax_t and mt_t / jax_t > JAX_TARGET:
                missed.append(f"{label}: {mt_t / jax_t:.2f}x JAX jit")
            rows.append([label, fmt_time(mt_t), fmt_time(torch_t), fmt_ratio(mt_t, torch_t),
                         fmt_time(jax_t), fmt_ratio(mt_t, jax_t),
                         "; ".join([first] + errors)])
            del steppers
    header = ["model", "mytorch jit", "PyTorch eager", "mytorch / PyTorch", "JAX jit",
              "mytorch / JAX", "first-step loss; errors"]
    return table(header, rows), missed, notes
