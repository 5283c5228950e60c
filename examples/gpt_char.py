"""Train a small character-level GPT on the Python documentation that ships with Python.

    python examples/gpt_char.py            # about 3 minutes on one CPU core
    python examples/gpt_char.py --bf16     # compute in bfloat16, parameters in float32

(`--bf16` runs the mixed-precision policy; on a CPU it is about 1.8x slower than float32,
since NumPy has no bfloat16 kernels and every product is computed in float32 after a
conversion. On hardware with bfloat16 units it is the faster mode.)

The text is `pydoc_data.topics` (the help topics of the Python reference, about 465,000
characters), split 90/10 into training and validation text. The model is a decoder-only
Transformer: token and position embeddings, pre-norm blocks of causal multi-head
self-attention (`mt.nn.dot_product_attention`, one primitive whose NumPy kernel works on
blocks of keys with an online softmax) and a GELU MLP, a final layer norm, and an output
layer tied to the token embedding. It trains with AdamW on a warmup-cosine schedule with
gradient clipping, reports the validation loss (nats per character) against the unigram
baseline (the cross-entropy of the validation text under the training text's character
frequencies), and prints a sample.
"""

import argparse
import math
import sys
import time

import numpy as np

import mytorch as mt
import mytorch.numpy as mnp
from mytorch import nn, optim
from mytorch.mixed_precision import get_policy


# ---- model --------------------------------------------------------------------------------

class CausalSelfAttention(nn.Module):
    """x f32[batch, seq, dim] -> f32[batch, seq, dim]: causal multi-head self-attention."""

    qkv: nn.Linear
    proj: nn.Linear
    heads: int = nn.field(static=True)

    def __init__(self, dim, heads, *, key):
        k1, k2 = mt.random.split(key)
        self.qkv = nn.Linear(dim, 3 * dim, key=k1)
        self.proj = nn.Linear(dim, dim, key=k2)
        self.heads = heads

    def __call__(self, x):
        b, t, d = x.shape
        q, k, v = mnp.split(self.qkv(x).reshape(b, t, 3, self.heads, d // self.heads), 3,
                            axis=2)
        out = nn.dot_product_attention(q[:, :, 0], k[:, :, 0], v[:, :, 0], is_causal=True)
        return self.proj(out.reshape(b, t, d))


class Block(nn.Module):
    """A pre-norm Transformer block: x + attn(ln(x)), then x + mlp(ln(x))."""

    ln1: nn.LayerNorm
    attn: CausalSelfAttention
    ln2: nn.LayerNorm
    fc: nn.Linear
    out: nn.Linear

    def __init__(self, dim, heads, *, key):
        k1, k2, k3 = mt.random.split(key, 3)
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = CausalSelfAttention(dim, heads, key=k1)
        self.fc = nn.Linear(dim, 4 * dim, key=k2)
        self.out = nn.Linear(4 * dim, dim, key=k3)

    def __call__(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.out(nn.gelu(self.fc(self.ln2(x))))


class GPT(nn.Module):
    """tokens i32[batch, seq] -> logits f32[batch, seq, vocab]; the output layer is the
    token embedding transposed (weight tying)."""

    tok: nn.Embedding
    pos: nn.Embedding
    blocks: list
    ln: nn.LayerNorm

    def __init__(self, vocab, context, dim, heads, depth, *, key):
        keys = mt.random.split(key, depth + 2)
        init = nn.initializers.normal(0.02)
        self.tok = nn.Embedding(vocab, dim, weight=init(keys[0], (vocab, dim)))
        self.pos = nn.Embedding(context, dim, weight=init(keys[1], (context, dim)))
        self.blocks = [Block(dim, heads, key=k) for k in keys[2:]]
        self.ln = nn.LayerNorm(dim)

    def __call__(self, tokens):
        x = self.tok(tokens) + self.pos(mnp.arange(tokens.shape[-1]))
        for block in self.blocks:
            x = block(x)
        return self.ln(x) @ self.tok.weight.T


# ---- data ---------------------------------------------------------------------------------

def load_text():
    """The help topics of the Python reference, joined in sorted order of their names."""
    from pydoc_data.topics import topics

    return "".join(topics[name] for name in sorted(topics))


def unigram_loss(train_ids, val_ids, vocab):
    """Cross-entropy (nats/char) of the validation text under the training text's character
    frequencies (add-one smoothed): the loss of a model that ignores context."""
    counts = np.bincount(train_ids, minlength=vocab) + 1.0
    logp = np.log(counts / counts.sum())
    return float(-logp[val_ids].mean())


def batches(ids, key, batch, context):
    """A random batch of (inputs i32[batch, context], targets i32[batch, context])."""
    starts = np.asarray(mt.random.randint(key, (batch,), 0, len(ids) - context - 1))
    rows = starts[:, None] + np.arange(context + 1)
    chunk = ids[rows]
    return chunk[:, :-1], chunk[:, 1:]


# ---- training -----------------------------------------------------------------------------

def make_optimizer(args):
    schedule = optim.warmup_cosine_decay_schedule(
        0.0, args.lr, warmup_steps=max(1, args.steps // 20), decay_steps=args.steps,
        end_value=args.lr / 10)
    return optim.chain(optim.clip_by_global_norm(1.0),
                       optim.adamw(schedule, b1=0.9, b2=0.99, weight_decay=0.1))


def make_steps(optimizer, policy):
    def loss_fn(model, x, y):
        logits = policy.cast_to_compute(model)(policy.cast_to_compute(x))
        logits = policy.cast_to_output(logits).astype(mnp.float32)
        return mnp.mean(nn.softmax_cross_entropy_with_integer_labels(logits, y))

    @mt.jit
    def train_step(model, opt_state, x, y):
        loss, grads = mt.value_and_grad(loss_fn)(model, x, y)
        updates, opt_state = optimizer.update(grads, opt_state, model)
        return optim.apply_updates(model, updates), opt_state, loss

    return train_step, mt.jit(loss_fn)


def evaluate(loss_fn, model, ids, key, batch, context, n):
    """Mean loss over `n` random validation batches."""
    keys = mt.random.split(key, n)
    return float(np.mean([float(loss_fn(model, *batches(ids, k, batch, context)))
                          for k in keys]))


def sample(model, prompt_ids, key, length, context, temperature=0.8):
    """Autoregressive sampling: `length` new token ids after `prompt_ids`. Each step runs
    the model on a fixed-size window (one compilation) and reads the logits at the last
    filled position; a causal model's output there ignores the padding after it."""
    @mt.jit
    def next_token(model, window, position, key):
        logits = model(window[None])[0, position] / temperature
        return mt.random.categorical(key, logits)

    ids = list(prompt_ids)
    for k in mt.random.split(key, length):
        tail = ids[-context:]
        window = np.zeros(context, np.int32)
        window[:len(tail)] = tail
        ids.append(int(next_token(model, window, np.int32(len(tail) - 1), k)))
    return ids


def train(args, progress=True):
    text = load_text()
    chars = sorted(set(text))
    index = {c: i for i, c in enumerate(chars)}
    ids = np.array([index[c] for c in text], dtype=np.int32)
    split = int(0.9 * len(ids))
    train_ids, val_ids = ids[:split], ids[split:]
    baseline = unigram_loss(train_ids, val_ids, len(chars))

    key = mt.random.key(args.seed)
    init_key, data_key, eval_key, sample_key = mt.random.split(key, 4)
    model = GPT(len(chars), args.context, args.dim, args.heads, args.depth, key=init_key)
    optimizer = make_optimizer(args)
    opt_state = optimizer.init(model)
    policy = get_policy("params=float32,compute=bfloat16,output=float32" if args.bf16
                        else "float32")
    train_step, loss_fn = make_steps(optimizer, policy)
    print(f"{len(text):,} characters, vocabulary {len(chars)}, "
          f"{nn.count_params(model):,} parameters; unigram baseline {baseline:.3f} nats/char")

    bar = _progress(args.steps, progress)
    start = time.perf_counter()
    history = []
    for step, k in enumerate(mt.random.split(data_key, args.steps)):
        x, y = batches(train_ids, k, args.batch_size, args.context)
        model, opt_state, loss = train_step(model, opt_state, x, y)
        if step % 25 == 0 or step == args.steps - 1:
            history.append((step, float(loss)))
            bar.set_postfix(loss=f"{history[-1][1]:.3f}")
        bar.update(1)
    bar.close()
    seconds = time.perf_counter() - start
    val = evaluate(loss_fn, model, val_ids, eval_key, args.batch_size, args.context,
                   args.eval_batches)
    prompt = [index[c] for c in "The "]
    text_out = "".join(chars[i] for i in sample(model, prompt, sample_key, args.sample_length,
                                                args.context))
    return {"val_loss": val, "unigram": baseline, "seconds": seconds, "history": history,
            "sample": text_out, "model": model}


def _progress(total, enabled):
    """A tqdm progress bar over `total` steps (silent when not `enabled`)."""
    from tqdm import tqdm

    return tqdm(total=total, desc="training", unit="step", file=sys.stdout,
                disable=not enabled)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--context", type=int, default=64)
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--depth", type=int, default=3)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--eval-batches", type=int, default=20)
    p.add_argument("--sample-length", type=int, default=200)
    p.add_argument("--bf16", action="store_true",
                   help="compute in bfloat16 (parameters and the loss stay float32)")
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    r = train(args)
    print(f"validation loss {r['val_loss']:.3f} nats/char against the unigram baseline "
          f"{r['unigram']:.3f} ({r['val_loss'] / math.log(2):.2f} bits/char) after "
          f"{args.steps} steps in {r['seconds']:.0f} s")
    print("sample:\n" + r["sample"])
    return r


if __name__ == "__main__":
    main()
