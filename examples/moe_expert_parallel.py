"""Train a small mixture-of-experts character GPT with its experts sharded over 4 devices.

    python examples/moe_expert_parallel.py               # about a minute on 2 CPU cores
    python examples/moe_expert_parallel.py --steps 100 --experts 4 --k 2

The model is the char GPT of examples/gpt_char.py with each block's MLP replaced by an
`mt.nn.MoE` layer (a top-k router over 8 experts), trained on the same text (the help
topics that ship with Python). It runs on 4 virtual CPU devices as one pmap over the axis
"expert", which is both the data axis and the expert axis:

* each device takes a quarter of every batch, and holds a copy of the dense parameters
  (embeddings, attention, norms, routers) and a quarter of each layer's experts;
* in each MoE layer a device routes its own tokens, sends each to the device holding its
  expert with `lax.all_to_all`, runs its own experts on what it receives, and sends the
  results back with a second all_to_all;
* gradients: the dense ones are averaged over the devices (`pmean`), the expert ones stay
  where their experts live (`mt.nn.average_grads` does both), and every device applies
  AdamW to what it holds.

As it trains it prints the loss, the load balancing loss, how many tokens each expert of
each layer received, and how many were dropped for lack of capacity.
"""

import argparse
import os
import sys
import time

# Four replicas share two cores: one BLAS thread each.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402  (after the thread settings)

import mytorch as mt  # noqa: E402
import mytorch.numpy as mnp  # noqa: E402
from mytorch import lax, nn, optim, tree_util  # noqa: E402
from gpt_char import CausalSelfAttention, batches, load_text  # noqa: E402  (examples/)

AXIS = "expert"


# ---- model --------------------------------------------------------------------------------

class MoEBlock(nn.Module):
    """x + attn(ln(x)), then x + moe(ln(x)); returns the MoE layer's statistics too."""

    ln1: nn.LayerNorm
    attn: CausalSelfAttention
    ln2: nn.LayerNorm
    moe: nn.MoE

    def __init__(self, dim, heads, experts, k, capacity_factor, *, key):
        k1, k2 = mt.random.split(key)
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = CausalSelfAttention(dim, heads, key=k1)
        self.moe = nn.MoE(dim, 2 * dim, experts, k=k, capacity_factor=capacity_factor,
                          axis_name=AXIS, key=k2)

    def __call__(self, x):
        x = x + self.attn(self.ln1(x))
        y, aux = self.moe(self.ln2(x))       # the tokens of all sequences compete for slots
        return x + y, aux


class MoEGPT(nn.Module):
    """tokens i32[batch, seq] -> (logits f32[batch, seq, vocab], the blocks' MoE
    statistics); the output layer is the token embedding transposed."""

    tok: nn.Embedding
    pos: nn.Embedding
    blocks: list
    ln: nn.LayerNorm

    def __init__(self, vocab, context, dim, heads, depth, experts, k, capacity_factor, *,
                 key):
        keys = mt.random.split(key, depth + 2)
        init = nn.initializers.normal(0.02)
        self.tok = nn.Embedding(vocab, dim, weight=init(keys[0], (vocab, dim)))
        self.pos = nn.Embedding(context, dim, weight=init(keys[1], (context, dim)))
        self.blocks = [MoEBlock(dim, heads, experts, k, capacity_factor, key=kb)
                       for kb in keys[2:]]
        self.ln = nn.LayerNorm(dim)

    def __call__(self, tokens):
        x = self.tok(tokens) + self.pos(mnp.arange(tokens.shape[-1]))
        stats = []
        for block in self.blocks:
            x, aux = block(x)
            stats.append(aux)
        return self.ln(x) @ self.tok.weight.T, stats


# ---- expert-parallel training -------------------------------------------------------------

def place(tree, n):
    """Every leaf with a leading axis of the n devices: each MoE's experts split among
    them (`shard_experts`), every other parameter copied to each."""
    sharded = nn.shard_experts(tree, n)
    axes = nn.expert_in_axes(sharded)
    return tree_util.tree_map(
        lambda ax, leaf: leaf if ax == 0 else mnp.broadcast_to(leaf, (n, *leaf.shape)),
        axes, sharded, is_leaf=lambda v: v is None)


def make_steps(optimizer, aux_weight, devices):
    """The pmap'd training step and loss: every argument has the device axis first."""
    def loss_fn(model, x, y):
        logits, stats = model(x)
        task = mnp.mean(nn.softmax_cross_entropy_with_integer_labels(logits, y))
        balance = sum(s["aux_loss"] for s in stats) / len(stats)
        return task + aux_weight * balance, (task, balance, stats)

    def step(model, opt_state, x, y):
        (_, (task, balance, stats)), grads = mt.value_and_grad(loss_fn, has_aux=True)(
            model, x, y)
        grads = nn.average_grads(grads, AXIS)
        updates, opt_state = optimizer.update(grads, opt_state, model)
        report = {"loss": lax.pmean(task, AXIS), "balance": balance,
                  "load": mnp.stack([s["load"] for s in stats]),
                  "dropped": mnp.stack([s["dropped"] for s in stats])}
        return optim.apply_updates(model, updates), opt_state, report

    def evaluate(model, x, y):
        return lax.pmean(loss_fn(model, x, y)[1][0], AXIS)

    return (mt.pmap(step, AXIS, devices=devices),
            mt.pmap(evaluate, AXIS, devices=devices, out_axes=None),
            mt.pmap(optimizer.init, AXIS, devices=devices))


def train(args, progress=True, log=print):
    """Train as `args` says; returns the loss history, the last load report and timing."""
    mt.config.update("num_cpu_devices", max(args.devices, mt.config.num_cpu_devices))
    devices = mt.devices()[:args.devices]
    n = len(devices)
    text = load_text()
    chars = sorted(set(text))
    index = {c: i for i, c in enumerate(chars)}
    ids = np.array([index[c] for c in text], dtype=np.int32)
    split = int(0.9 * len(ids))
    train_ids, val_ids = ids[:split], ids[split:]

    key = mt.random.key(args.seed)
    init_key, data_key, eval_key = mt.random.split(key, 3)
    model = MoEGPT(len(chars), args.context, args.dim, args.heads, args.depth, args.experts,
                   args.k, args.capacity_factor, key=init_key)
    log(f"{nn.count_params(model):,} parameters, {args.experts} experts per layer "
        f"({args.experts // n} on each of {n} devices), top-{args.k} routing, capacity "
        f"{model.blocks[0].moe.capacity(args.batch_size * args.context)} tokens per expert")
    schedule = optim.warmup_cosine_decay_schedule(
        0.0, args.lr, warmup_steps=max(1, args.steps // 20), decay_steps=args.steps,
        end_value=args.lr / 10)
    optimizer = optim.adamw(schedule, b1=0.9, b2=0.99, weight_decay=0.1)
    step, evaluate, init = make_steps(optimizer, args.aux_weight, devices)
    model = place(model, n)
    opt_state = init(model)

    def shard(a):                             # slice r of the batch goes to device r
        return a.reshape(n, -1, *a.shape[1:])

    history, report = [], None
    bar = _progress(args.steps, progress)
    start = time.perf_counter()
    for i, k in enumerate(mt.random.split(data_key, args.steps)):
        x, y = batches(train_ids, k, args.batch_size, args.context)
        model, opt_state, report = step(model, opt_state, shard(x), shard(y))
        if i % args.log_every == 0 or i == args.steps - 1:
            loss = float(np.asarray(report["loss"])[0])
            history.append((i, loss))
            bar.set_postfix(loss=f"{loss:.3f}")
            _print_load(log, i, loss, report)
        bar.update(1)
    bar.close()
    seconds = time.perf_counter() - start
    val = float(np.mean([float(evaluate(model, *map(shard, batches(val_ids, k, args.batch_size,
                                                                    args.context))))
                         for k in mt.random.split(eval_key, args.eval_batches)]))
    return {"history": history, "val_loss": val, "seconds": seconds,
            "load": np.asarray(report["load"])[0], "dropped": np.asarray(report["dropped"])[0],
            "model": model}


def _print_load(log, step, loss, report):
    """One line per MoE layer: the tokens each expert received, and those dropped."""
    load, dropped = np.asarray(report["load"])[0], np.asarray(report["dropped"])[0]
    balance = float(np.asarray(report["balance"])[0])
    log(f"step {step:4d}  loss {loss:.3f}  balance loss {balance:.3f}")
    for layer, (counts, lost) in enumerate(zip(load, dropped)):
        log(f"    layer {layer} load per expert [{' '.join(f'{c:4d}' for c in counts)}]  "
            f"dropped {int(lost)}")


def _progress(total, enabled):
    """A tqdm progress bar over `total` steps (silent when not `enabled`)."""
    from tqdm import tqdm

    return tqdm(total=total, desc="training", unit="step", file=sys.stdout,
                disable=not enabled)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--devices", type=int, default=4, help="virtual CPU devices")
    p.add_argument("--experts", type=int, default=8, help="experts per MoE layer")
    p.add_argument("--k", type=int, default=1, choices=(1, 2), help="experts per token")
    p.add_argument("--capacity-factor", type=float, default=1.25)
    p.add_argument("--aux-weight", type=float, default=0.01,
                   help="weight of the load balancing loss")
    p.add_argument("--batch-size", type=int, default=16, help="the global batch")
    p.add_argument("--context", type=int, default=32)
    p.add_argument("--dim", type=int, default=64)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--depth", type=int, default=2)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--eval-batches", type=int, default=5)
    p.add_argument("--log-every", type=int, default=100)
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    r = train(args, progress=False)
    first, last = r["history"][0][1], r["history"][-1][1]
    print(f"training loss {first:.3f} -> {last:.3f}, validation loss {r['val_loss']:.3f} "
          f"nats/char after {args.steps} steps in {r['seconds']:.0f} s")
    return r


if __name__ == "__main__":
    main()
