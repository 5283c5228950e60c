"""NumPy kernels of the attention primitives (mytorch/lax/attention.py).

Every kernel walks the keys in blocks of `BLOCK` columns and never holds more than one block
of the score matrix: memory O(B·N·T·BLOCK) besides the operands.

- forward: an online softmax. For each key block, the scaled, biased and masked logits s;
  the running row maximum m and sum l are rescaled by exp(m_old - m_new), and so is the
  running output acc (acc = acc·α + exp(s - m)·v). out = acc / l, lse = m + log l.
- backward (flash): each block's probabilities are recomputed as p = exp(s - lse);
  δ = rowsum(ct ∘ out); dp = ct vᵀ; ds = p ∘ (dp - δ) (zero where masked);
  dq += scale·ds k, dk = scale·dsᵀ q, dv = pᵀ ct, dbias = ds summed to the bias's shape.
- tangent: ṡ = scale·(q̇ kᵀ + q k̇ᵀ) + ḃ (zero where masked); accumulating
  Σ p ṡ v, Σ p ṡ and Σ p v̇ over the blocks, ȯ = Σ p ṡ v - (Σ p ṡ)·out + Σ p v̇.

Grouped-query attention: the G = N / K query heads that share a key/value head are stacked
into one [G·T, H] matrix, so each block is one batched matmul per (batch, kv head).
float16/bfloat16 inputs are computed in float32 (float64 stays float64).
"""

import numpy as np

from mytorch.backends.numpy import numpy_backend
from mytorch.lax.attention import (
    dot_product_attention_bwd_p,
    dot_product_attention_p,
    dot_product_attention_tangent_p,
    split_operands,
)

# columns of keys per block: the fastest on a 2-core CPU for T = S in 256..4096, H = 64
# (benchmarks/attention.py), and small enough that a block of scores stays modest
BLOCK = 256
# the logit JAX substitutes for masked positions (finite, so fully masked rows average v)
MASKED = -0.7 * float(np.finfo(np.float32).max)


def _acc_dtype(dtype):
    return np.float64 if dtype == np.float64 else np.float32


class _Problem:
    """The operands in the kernels' layout: q as [B, K, G·T, H], k and v as [B, K, S, H],
    bias and mask viewed as [b, k, g, t, s], and the block-wise logits."""

    def __init__(self, ops, scale, is_causal, local_window):
        q, k = ops["q"], ops["k"]
        self.B, self.T, self.N, self.H = q.shape
        _, self.S, self.K, _ = k.shape
        self.G = self.N // self.K
        self.acc = _acc_dtype(q.dtype)
        self.scale, self.is_causal, self.window = scale, is_causal, local_window
        self.q = self.heads_first(q)
        self.k = np.ascontiguousarray(k.transpose(0, 2, 1, 3), dtype=self.acc)
        self.v = np.ascontiguousarray(ops["v"].transpose(0, 2, 1, 3), dtype=self.acc)
        self.bias = self._grouped(ops.get("bias"))
        self.mask = self._grouped(ops.get("mask"))
        self.q_lens, self.kv_lens = ops.get("q_lens"), ops.get("kv_lens")
        self.masked = (self.mask is not None or is_causal or local_window is not None
                       or self.q_lens is not None or self.kv_lens is not None)

    def heads_first(self, x):
        """[B, T, N, H] -> [B, K, G·T, H] in the accumulation dtype."""
        x = x.transpose(0, 2, 1, 3).reshape(self.B, self.K, self.G * self.T, self.H)
        return np.ascontiguousarray(x, dtype=self.acc)

    def heads_last(self, x, dtype):
        """[B, K, G·T, H] -> [B, T, N, H] of `dtype`, with padded query rows zeroed."""
        x = x.reshape(self.B, self.N, self.T, self.H).transpose(0, 2, 1, 3)
        if self.q_lens is not None:
            x = x * (np.arange(self.T)[None, :] < self.q_lens[:, None])[:, :, None, None]
        return np.ascontiguousarray(x, dtype=dtype)

    def without_padded_rows(self, x):
        """`x` [B, K, G·T, H] with the query rows past q_lens zeroed (a new array)."""
        if self.q_lens is None:
            return x
        valid = np.arange(self.T)[None, :] < self.q_lens[:, None]
        shape = (self.B, self.K, self.G, self.T, self.H)
        return (x.reshape(shape) * valid[:, None, None, :, None]).reshape(x.shape)

    def _grouped(self, x):
        if x is None:
            return None
        b, n, t, s = x.shape
        heads = (self.K, self.G) if n == self.N and self.N > 1 else (1, 1)
        x = x.reshape(b, *heads, t, s)
        return x.astype(self.acc, copy=False) if x.dtype != np.bool_ else x

    def blocks(self):
        return [(j, min(j + BLOCK, self.S)) for j in range(0, self.S, BLOCK)]

    def _cols(self, x, j0, j1):
        return x if x.shape[-1] == 1 else x[..., j0:j1]

    def keep(self, j0, j1):
        """Where the block's logits are attended: bool broadcastable to [B, K, G, T, j1-j0],
        or None when nothing is masked."""
        if not self.masked:
            return None
        keep = np.ones((1, 1, 1, 1, 1), bool)
        rows = np.arange(self.T)[:, None]
        cols = np.arange(j0, j1)[None, :]
        if self.mask is not None:
            keep = keep & self._cols(self.mask, j0, j1)
        if self.is_causal:
            keep = keep & (cols <= rows)
        if self.window is not None:
            left, right = self.window
            keep = keep & (rows <= cols + left) & (rows >= cols - right)
        if self.kv_lens is not None:
            keep = keep & (cols[None] < self.kv_lens[:, None, None])[:, None, None]
        if self.q_lens is not None:
            keep = keep & (rows[None] < self.q_lens[:, None, None])[:, None, None]
        return keep

    def logits(self, j0, j1):
        """(the block's masked logits [B, K, G·T, j1-j0], its keep mask or None)."""
        s = np.matmul(self.q, self.k[:, :, j0:j1].swapaxes(-1, -2))
        s *= self.scale
        s5 = s.reshape(self.B, self.K, self.G, self.T, j1 - j0)
        if self.bias is not None:
            s5 += self._cols(self.bias, j0, j1)
        keep = self.keep(j0, j1)
        if keep is not None:
            np.copyto(s5, MASKED, where=~keep)
        return s, keep

    def probs(self, s, lse):
        """The block's probabilities exp(s - lse), in place of the logits `s`. A fully masked
        row (lse = MASKED + log S, which rounds to MASKED) is uniform: 1 / S."""
        np.subtract(s, lse, out=s)
        p = np.exp(s, out=s)
        if self.masked:
            full = lse <= 0.5 * MASKED
            if full.any():
                np.copyto(p, 1.0 / self.S, where=full)
        return p

    def unmasked(self, x, keep):
        """Zero `x` ([B, K, G·T, cols]) where the logits were masked (constant there)."""
        if keep is not None:
            np.copyto(x.reshape(*x.shape[:2], self.G, self.T, -1), 0.0, where=~keep)
        return x

    def sum_to(self, ds, shape, j0, j1, out):
        """Add the block's logit cotangents ds [B, K, G·T, cols] into `out` (the bias's
        shape [b, n, t, s])."""
        b, n, t, s = shape
        ds5 = ds.reshape(self.B, self.K, self.G, self.T, j1 - j0)
        axes = tuple(i for i, keep in enumerate((b > 1, n > 1, n > 1, t > 1, s > 1)) if not keep)
        red = ds5.sum(axis=axes, keepdims=True) if axes else ds5
        red = red.reshape(b, n, t, -1)
        if s == 1:
            out += red
        else:
            out[..., j0:j1] += red


@numpy_backend.register(dot_product_attention_p)
def _attention(*args, scale, is_causal, local_window, optional):
    ops, _ = split_operands(args, optional)
    pb = _Problem(ops, scale, is_causal, local_window)
    rows = (pb.B, pb.K, pb.G * pb.T, 1)
    m = np.full(rows, -np.inf, pb.acc)
    total = np.zeros(rows, pb.acc)
    acc = np.zeros((pb.B, pb.K, pb.G * pb.T, pb.H), pb.acc)
    with np.errstate(all="ignore"):
        for j0, j1 in pb.blocks():
            s, _ = pb.logits(j0, j1)
            m_new = np.maximum(m, s.max(axis=-1, keepdims=True))
            alpha = np.exp(m - m_new)
            np.subtract(s, m_new, out=s)
            p = np.exp(s, out=s)
            total *= alpha
            total += p.sum(axis=-1, keepdims=True)
            acc *= alpha
            acc += np.matmul(p, pb.v[:, :, j0:j1])
            m = m_new
        out = acc / total if pb.S else acc
        lse = (m + np.log(total)).reshape(pb.B, pb.N, pb.T)
    return [pb.heads_last(out, ops["q"].dtype), lse.astype(pb.acc, copy=False)]


def _residuals(pb, out, lse):
    return pb.heads_first(out), lse.reshape(pb.B, pb.K, pb.G * pb.T, 1).astype(pb.acc)


@numpy_backend.register(dot_product_attention_bwd_p)
def _attention_bwd(*args, scale, is_causal, local_window, optional, wrt):
    ops, (out, lse, ct) = split_operands(args, optional)
    pb = _Problem(ops, scale, is_causal, local_window)
    o, lse = _residuals(pb, out, lse)
    ct = pb.without_padded_rows(pb.heads_first(ct))
    delta = (ct * o).sum(axis=-1, keepdims=True)
    dq = np.zeros_like(pb.q)
    dk, dv = np.zeros_like(pb.k), np.zeros_like(pb.v)
    dbias = np.zeros(ops["bias"].shape, pb.acc) if "bias" in wrt else None
    with np.errstate(all="ignore"):
        for j0, j1 in pb.blocks():
            s, keep = pb.logits(j0, j1)
            p = pb.probs(s, lse)
            if "v" in wrt:
                dv[:, :, j0:j1] = np.matmul(p.swapaxes(-1, -2), ct)
            ds = np.matmul(ct, pb.v[:, :, j0:j1].swapaxes(-1, -2))
            ds -= delta
            ds *= p
            pb.unmasked(ds, keep)
            if "q" in wrt:
                dq += np.matmul(ds, pb.k[:, :, j0:j1])
            if "k" in wrt:
                dk[:, :, j0:j1] = np.matmul(ds.swapaxes(-1, -2), pb.q)
            if dbias is not None:
                pb.sum_to(ds, dbias.shape, j0, j1, dbias)
    dtype = ops["q"].dtype
    grads = {
        "q": lambda: pb.heads_last(dq * scale, dtype),
        "k": lambda: np.ascontiguousarray((dk * scale).transpose(0, 2, 1, 3), dtype=dtype),
        "v": lambda: np.ascontiguousarray(dv.transpose(0, 2, 1, 3), dtype=dtype),
        "bias": lambda: dbias.astype(ops["bias"].dtype, copy=False),
    }
    return [grads[name]() for name in wrt]


@numpy_backend.register(dot_product_attention_tangent_p)
def _attention_tangent(*args, scale, is_causal, local_window, optional, tangents):
    ops, (out, lse, *dots) = split_operands(args, optional)
    dots = dict(zip(tangents, dots, strict=True))
    pb = _Problem(ops, scale, is_causal, local_window)
    o, lse = _residuals(pb, out, lse)
    dq = pb.heads_first(dots["q"]) if "q" in dots else None
    dk, dv = (np.ascontiguousarray(dots[n].transpose(0, 2, 1, 3), dtype=pb.acc)
              if n in dots else None for n in ("k", "v"))
    dbias = pb._grouped(dots.get("bias"))
    weighted = np.zeros_like(pb.q)  # Σ p ṡ v, then Σ p v̇
    mean = np.zeros((*pb.q.shape[:3], 1), pb.acc)  # Σ p ṡ
    with np.errstate(all="ignore"):
        for j0, j1 in pb.blocks():
            s, keep = pb.logits(j0, j1)
            p = pb.probs(s, lse)
            if dv is not None:
                weighted += np.matmul(p, dv[:, :, j0:j1])
            sdot = np.zeros_like(p)
            if dq is not None:
                sdot += np.matmul(dq, pb.k[:, :, j0:j1].swapaxes(-1, -2))
            if dk is not None:
                sdot += np.matmul(pb.q, dk[:, :, j0:j1].swapaxes(-1, -2))
            sdot *= scale
            if dbias is not None:
                sdot.reshape(pb.B, pb.K, pb.G, pb.T, j1 - j0)[...] += pb._cols(dbias, j0, j1)
            pb.unmasked(sdot, keep)
            sdot *= p
            mean += sdot.sum(axis=-1, keepdims=True)
            weighted += np.matmul(sdot, pb.v[:, :, j0:j1])
    return pb.heads_last(weighted - mean * o, ops["q"].dtype)
