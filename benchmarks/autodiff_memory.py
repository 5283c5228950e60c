"""Peak memory of reverse mode for a deep tanh MLP, with and without checkpointing.

    python -m benchmarks.autodiff_memory [--depth 50] [--width 512] [--batch 256]

Prints the bytes of saved residuals (what the backward pass keeps) and the peak traced
host memory (tracemalloc sees NumPy's buffers) of one gradient evaluation.
"""

import argparse
import tracemalloc

import numpy as np

import mytorch as mt
import mytorch.numpy as mnp
from mytorch.core.trace import aval_of
from mytorch.transforms.partial_eval import linearize_flat


def mlp(layer):
    def loss(ws, x):
        h = x
        for w in ws:
            h = layer(w, h)
        return (h * h).mean()

    return loss


def tanh_layer(w, h):
    return mnp.tanh(h @ w)


def residual_bytes(loss, ws, x):
    leaves = [*ws, x]
    _, linear, _ = linearize_flat(lambda *a: [loss(list(a[:-1]), a[-1])], leaves)
    own = {id(v) for v in leaves}
    return sum(aval_of(c).size * aval_of(c).dtype.itemsize
               for c in linear.consts if id(c) not in own)


def peak_bytes(loss, ws, x):
    grad = mt.grad(loss)
    grad(ws, x)  # warm up
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    grad(ws, x)
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    return peak


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depth", type=int, default=50)
    parser.add_argument("--width", type=int, default=512)
    parser.add_argument("--batch", type=int, default=256)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    ws = [mnp.asarray((rng.standard_normal((args.width, args.width)) / np.sqrt(args.width))
                      .astype(np.float32)) for _ in range(args.depth)]
    x = mnp.asarray(rng.standard_normal((args.batch, args.width)).astype(np.float32))
    act = args.batch * args.width * 4
    print(f"{args.depth}-layer tanh MLP, width {args.width}, batch {args.batch}; "
          f"one activation = {act / 2**20:.2f} MiB")
    print(f"{'variant':<28}{'residuals MiB':>14}{'per layer':>11}{'peak MiB':>10}")
    for name, layer in [
        ("plain", tanh_layer),
        ("checkpoint (save nothing)", mt.checkpoint(tanh_layer)),
        ("checkpoint (save dots)", mt.checkpoint(
            tanh_layer, policy=mt.checkpoint_policies.dots_saveable)),
    ]:
        loss = mlp(layer)
        res = residual_bytes(loss, ws, x)
        peak = peak_bytes(loss, ws, x)
        print(f"{name:<28}{res / 2**20:>14.1f}{res / args.depth / act:>10.2f}x"
              f"{peak / 2**20:>10.1f}")


if __name__ == "__main__":
    main()
