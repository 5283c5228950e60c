"""The blocked `dot_product_attention` primitive against naive NumPy softmax(q kᵀ·scale) v,
forward and forward+backward (gradients of sum(out * g) with respect to q, k and v).

    python -m benchmarks.attention [--seq 256,1024,4096] [--batch 1] [--heads 8] [--dim 64]
                                   [--causal] [--blocks 128,256,512] [--repeat 5]

Prints, per sequence length, the median time of each and its ratio to NumPy, with the peak
memory (tracemalloc) of one call: the naive version holds the [B, N, T, S] score matrix
(and its gradient), the blocked one a block of it. `--blocks` times the forward+backward
of several key-block sizes (how the kernel's BLOCK was chosen). Run it on one thread
(OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1) to compare like with like.
"""

import argparse
import statistics
import time
import tracemalloc

import numpy as np

import mytorch as mt
import mytorch.numpy as mnp
from mytorch.backends.numpy import attention as kernels


def naive_forward(q, k, v, scale, causal):
    """[B, T, N, H] layout; the whole score matrix at once (the reference design)."""
    s = np.einsum("btnh,bsnh->bnts", q, k, optimize=True)
    s *= scale
    if causal:
        np.copyto(s, -np.inf, where=~np.tri(*s.shape[-2:], dtype=bool))
    s -= s.max(axis=-1, keepdims=True)
    np.exp(s, out=s)
    s /= s.sum(axis=-1, keepdims=True)
    return np.einsum("bnts,bsnh->btnh", s, v, optimize=True), s


def naive_forward_backward(q, k, v, g, scale, causal):
    """(out, dq, dk, dv) with the hand-written softmax backward."""
    out, p = naive_forward(q, k, v, scale, causal)
    dv = np.einsum("bnts,btnh->bsnh", p, g, optimize=True)
    ds = np.einsum("btnh,bsnh->bnts", g, v, optimize=True)
    ds -= np.einsum("bnts,bnts->bnt", ds, p)[..., None]
    ds *= p
    ds *= scale
    dq = np.einsum("bnts,bsnh->btnh", ds, k, optimize=True)
    dk = np.einsum("bnts,btnh->bsnh", ds, q, optimize=True)
    return out, dq, dk, dv


def median_time(fn, repeat):
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def peak_mib(fn):
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 2**20


def contenders(q, k, v, g, causal):
    scale = 1.0 / np.sqrt(q.shape[-1])
    qm, km, vm, gm = (mnp.asarray(x) for x in (q, k, v, g))

    def loss(q, k, v):
        return mnp.sum(mt.nn.dot_product_attention(q, k, v, is_causal=causal) * gm)

    fwd = mt.jit(lambda q, k, v: mt.nn.dot_product_attention(q, k, v, is_causal=causal))
    fwd_bwd = mt.jit(mt.value_and_grad(loss, argnums=(0, 1, 2)))
    return {
        "forward": (lambda: naive_forward(q, k, v, scale, causal),
                    lambda: np.asarray(fwd(qm, km, vm))),
        "forward+backward": (lambda: naive_forward_backward(q, k, v, g, scale, causal),
                             lambda: [np.asarray(x) for x in mt.tree_util.tree_leaves(
                                 fwd_bwd(qm, km, vm))]),
    }


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seq", default="256,1024,4096")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--dim", type=int, default=64)
    p.add_argument("--causal", action="store_true")
    p.add_argument("--blocks", default="")
    p.add_argument("--repeat", type=int, default=5)
    a = p.parse_args(argv)
    rng = np.random.default_rng(0)
    print(f"batch {a.batch}, heads {a.heads}, head_dim {a.dim}, float32, "
          f"causal={a.causal}, BLOCK={kernels.BLOCK}")
    print("| T | pass | naive NumPy | blocked | ratio | naive peak | blocked peak |")
    print("|---|---|---|---|---|---|---|")
    for T in (int(t) for t in a.seq.split(",")):
        q, k, v, g = (rng.standard_normal((a.batch, T, a.heads, a.dim)).astype(np.float32)
                      for _ in range(4))
        for name, (naive, blocked) in contenders(q, k, v, g, a.causal).items():
            tn, tb = median_time(naive, a.repeat), median_time(blocked, a.repeat)
            print(f"| {T} | {name} | {tn * 1e3:.1f} ms | {tb * 1e3:.1f} ms | {tb / tn:.2f} | "
                  f"{peak_mib(naive):.0f} MiB | {peak_mib(blocked):.0f} MiB |")
        for size in (int(b) for b in a.blocks.split(",") if b):
            old, kernels.BLOCK = kernels.BLOCK, size
            try:
                fb = contenders(q, k, v, g, a.causal)["forward+backward"][1]
                print(f"|   BLOCK={size} | forward+backward | | "
                      f"{median_time(fb, a.repeat) * 1e3:.1f} ms | | | {peak_mib(fb):.0f} MiB |")
            finally:
                kernels.BLOCK = old


if __name__ == "__main__":
    main()
