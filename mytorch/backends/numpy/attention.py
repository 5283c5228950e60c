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

Causal and local-window masks are static, so each key block only visits the query rows that
can attend one of its keys (about half the work for causal attention). A skipped row sees
the block as fully masked: nothing, unless the row is masked everywhere, in which case JAX's
semantics (every masked logit is the same large negative number) make it the mean of v —
those rows get that contribution in closed form.

Grouped-query attention: the G = N / K query heads that share a key/value head are stacked
into one [T·G, H] matrix (row t·G + g), so each block is one batched matmul per (batch, kv
head). float16/bfloat16 inputs are computed in float32 (float64 stays float64).

The kernels are written for any array module: they take `xp` (NumPy by default), and the GPU
backend registers them with CuPy's (backends/cupy/kernels_attention.py), where every block
is a few cuBLAS batched matmuls and CuPy elementwise kernels; the masked-row checks
(`.any()`) read one flag to the host per block there.
"""

import numpy as np

from mytorch.backends.numpy import numpy_backend
from mytorch.lax.attention import (
    dot_product_attention_bwd_p,
    dot_product_attention_p,
    dot_product_attention_tangent_p,
    split_operands,
)

# columns of keys per block: the fastest of 64..1024 on a 2-core CPU for T = S in
# 256..4096, H = 64 (python -m benchmarks.attention --blocks ...); the score block is
# B·N·T·BLOCK numbers
BLOCK = 256
# the logit JAX substitutes for masked positions (finite, so fully masked rows average v)
MASKED = -0.7 * float(np.finfo(np.float32).max)


def _acc_dtype(dtype):
    return np.float64 if dtype == np.float64 else np.float32


class _Problem:
    """The operands in the kernels' layout: q as [B, K, T·G, H], k and v as [B, K, S, H],
    bias and mask viewed as [b, k, t, g, s]; the block-wise logits."""

    def __init__(self, ops, scale, is_causal, local_window, xp):
        q, k = ops["q"], ops["k"]
        self.xp = xp
        self.B, self.T, self.N, self.H = q.shape
        _, self.S, self.K, _ = k.shape
        self.G = self.N // self.K
        self.acc = _acc_dtype(q.dtype)
        self.scale, self.is_causal, self.window = scale, is_causal, local_window
        self.q = self.heads_first(q)
        self.k = self.kv_heads_first(k)
        self.v = self.kv_heads_first(ops["v"])
        self.bias = self.grouped(ops.get("bias"))
        self.mask = self.grouped(ops.get("mask"))
        self.q_lens, self.kv_lens = ops.get("q_lens"), ops.get("kv_lens")
        self.masked = (self.mask is not None or is_causal or local_window is not None
                       or self.q_lens is not None or self.kv_lens is not None)

    # ---- layouts ------------------------------------------------------------------------
    def heads_first(self, x):
        """[B, T, N, H] -> [B, K, T·G, H] in the accumulation dtype."""
        x = x.reshape(self.B, self.T, self.K, self.G, self.H).transpose(0, 2, 1, 3, 4)
        return self.xp.ascontiguousarray(x, dtype=self.acc).reshape(self.B, self.K, -1, self.H)

    def kv_heads_first(self, x):
        return self.xp.ascontiguousarray(x.transpose(0, 2, 1, 3), dtype=self.acc)

    def heads_last(self, x, dtype):
        """[B, K, T·G, H] -> [B, T, N, H] of `dtype`, with padded query rows zeroed."""
        x = x.reshape(self.B, self.K, self.T, self.G, self.H).transpose(0, 2, 1, 3, 4)
        x = x.reshape(self.B, self.T, self.N, self.H)
        if self.q_lens is not None:
            x = x * (self.xp.arange(self.T)[None, :] < self.q_lens[:, None])[:, :, None, None]
        return self.xp.ascontiguousarray(x, dtype=dtype)

    def rows_of(self, x):
        """A per-row array [B, N, T] -> [B, K, T·G, 1]."""
        x = x.reshape(self.B, self.K, self.G, self.T).transpose(0, 1, 3, 2)
        return self.xp.ascontiguousarray(x, dtype=self.acc).reshape(self.B, self.K, -1, 1)

    def rows_to(self, x):
        """[B, K, T·G, 1] -> [B, N, T]."""
        x = x.reshape(self.B, self.K, self.T, self.G).transpose(0, 1, 3, 2)
        return self.xp.ascontiguousarray(x).reshape(self.B, self.N, self.T)

    def without_padded_rows(self, x):
        """`x` [B, K, T·G, H] with the query rows past q_lens zeroed (a new array)."""
        if self.q_lens is None:
            return x
        valid = self.xp.arange(self.T)[None, :] < self.q_lens[:, None]
        shape = (self.B, self.K, self.T, self.G, self.H)
        return (x.reshape(shape) * valid[:, None, :, None, None]).reshape(x.shape)

    def grouped(self, x):
        """bias/mask (or a bias tangent) [b, n, t, s] viewed as [b, k, t, g, s]."""
        if x is None:
            return None
        b, n, t, s = x.shape
        if n == self.N and n > 1:
            x = x.reshape(b, self.K, self.G, t, s).transpose(0, 1, 3, 2, 4)
        else:
            x = x.reshape(b, 1, t, 1, s)
        return x.astype(self.acc, copy=False) if x.dtype != np.bool_ else x

    # ---- blocks ---------------------------------------------------------------------------
    def blocks(self):
        """(j0, j1, t0, t1): each key block and the query rows [t0, t1) that may attend one
        of its keys (by the causal and window masks)."""
        out = []
        for j0 in range(0, self.S, BLOCK):
            j1 = min(j0 + BLOCK, self.S)
            t0, t1 = 0, self.T
            if self.is_causal:
                t0 = max(t0, j0)
            if self.window is not None:
                left, right = self.window
                t0, t1 = max(t0, j0 - right), min(t1, j1 + left)
            t0 = min(t0, self.T)
            out.append((j0, j1, t0, max(t0, t1)))
        return out

    @staticmethod
    def _cut(x, t0, t1, j0, j1):
        """x [..., t, g, s] restricted to rows [t0, t1) and columns [j0, j1) (broadcast
        dims of size 1 stay)."""
        if x.shape[-3] != 1:
            x = x[..., t0:t1, :, :]
        return x if x.shape[-1] == 1 else x[..., j0:j1]

    def rows(self, x, t0, t1):
        """The [.., T·G, ..] rows of query positions [t0, t1)."""
        return x[:, :, t0 * self.G:t1 * self.G]

    def keep(self, j0, j1, t0, t1):
        """Where the block's logits are attended: bool broadcastable to
        [B, K, t1-t0, G, j1-j0], or None when nothing is masked."""
        if not self.masked:
            return None
        keep = self.xp.ones((1, 1, 1, 1, 1), bool)
        rows = self.xp.arange(t0, t1)[:, None, None]
        cols = self.xp.arange(j0, j1)[None, None, :]
        if self.mask is not None:
            keep = keep & self._cut(self.mask, t0, t1, j0, j1)
        if self.is_causal:
            keep = keep & (cols <= rows)
        if self.window is not None:
            left, right = self.window
            keep = keep & (rows <= cols + left) & (rows >= cols - right)
        if self.kv_lens is not None:
            keep = keep & (cols < self.kv_lens[:, None, None, None, None])
        if self.q_lens is not None:
            keep = keep & (rows < self.q_lens[:, None, None, None, None])
        return keep

    def logits(self, j0, j1, t0, t1):
        """(the block's masked logits [B, K, (t1-t0)·G, j1-j0], its keep mask or None)."""
        s = self.xp.matmul(self.rows(self.q, t0, t1), self.k[:, :, j0:j1].swapaxes(-1, -2))
        s *= self.scale
        s5 = self.view5(s, t0, t1)
        if self.bias is not None:
            s5 += self._cut(self.bias, t0, t1, j0, j1)
        keep = self.keep(j0, j1, t0, t1)
        if keep is not None:
            self.xp.copyto(s5, MASKED, where=~keep)
        return s, keep

    def view5(self, x, t0, t1):
        return x.reshape(self.B, self.K, t1 - t0, self.G, x.shape[-1])

    def probs(self, s, lse):
        """The block's probabilities exp(s - lse), in place of the logits `s`. A fully masked
        row (lse = MASKED + log S, which rounds to MASKED) is uniform: 1 / S."""
        self.xp.subtract(s, lse, out=s)
        p = self.xp.exp(s, out=s)
        if self.masked:
            full = lse <= 0.5 * MASKED
            if full.any():
                self.xp.copyto(p, 1.0 / self.S, where=full)
        return p

    def unmasked(self, x, keep, t0, t1):
        """Zero `x` ([B, K, rows, cols]) where the logits were masked (constant there)."""
        if keep is not None:
            self.xp.copyto(self.view5(x, t0, t1), 0.0, where=~keep)
        return x

    def sum_to(self, ds, shape, j0, j1, t0, t1, out):
        """Add the block's logit cotangents ds [B, K, (t1-t0)·G, cols] into `out` (the
        bias's shape [b, n, t, s])."""
        b, n, t, s = shape
        ds5 = self.view5(ds, t0, t1)
        kept = (b > 1, n > 1, t > 1, n > 1, s > 1)
        axes = tuple(i for i, k in enumerate(kept) if not k)
        red = ds5.sum(axis=axes, keepdims=True) if axes else ds5
        red = red.transpose(0, 1, 3, 2, 4).reshape(b, n, red.shape[2], red.shape[4])
        rows = slice(t0, t1) if t > 1 else slice(None)
        out[:, :, rows, slice(j0, j1) if s > 1 else slice(None)] += red

    def skipped(self, t0, t1):
        """Slices of the [.., T·G, ..] rows a block with query rows [t0, t1) skips."""
        return [slice(a * self.G, b * self.G) for a, b in ((0, t0), (t1, self.T)) if b > a]


@numpy_backend.register(dot_product_attention_p)
def _attention(*args, scale, is_causal, local_window, optional, xp=np):
    ops, _ = split_operands(args, optional)
    pb = _Problem(ops, scale, is_causal, local_window, xp)
    rows = (pb.B, pb.K, pb.T * pb.G, 1)
    m = xp.full(rows, -np.inf, pb.acc)
    total = xp.zeros(rows, pb.acc)
    acc = xp.zeros((pb.B, pb.K, pb.T * pb.G, pb.H), pb.acc)
    with np.errstate(all="ignore"):
        for j0, j1, t0, t1 in pb.blocks():
            for r in pb.skipped(t0, t1):
                _update_masked(xp, m[:, :, r], total[:, :, r], acc[:, :, r],
                               pb.v[:, :, j0:j1])
            if t1 > t0:
                s, _ = pb.logits(j0, j1, t0, t1)
                r = slice(t0 * pb.G, t1 * pb.G)
                _update(xp, m[:, :, r], total[:, :, r], acc[:, :, r], s, pb.v[:, :, j0:j1])
        out = acc / total if pb.S else acc
        lse = m + xp.log(total)
    return [pb.heads_last(out, ops["q"].dtype), pb.rows_to(lse).astype(pb.acc, copy=False)]


def _update(xp, m, total, acc, s, v):
    """One online-softmax step over logits s (overwritten) and values v, in place."""
    m_new = xp.maximum(m, s.max(axis=-1, keepdims=True))
    alpha = xp.exp(m - m_new)
    xp.subtract(s, m_new, out=s)
    p = xp.exp(s, out=s)
    total *= alpha
    total += p.sum(axis=-1, keepdims=True)
    acc *= alpha
    acc += xp.matmul(p, v)
    m[...] = m_new


def _update_masked(xp, m, total, acc, v):
    """The online-softmax step of a block whose logits are all MASKED, in closed form: it
    changes only rows that have seen no attended logit yet (exp(MASKED - m) = 0 otherwise)."""
    if not (m <= 0.5 * MASKED).any():
        return
    m_new = xp.maximum(m, MASKED)
    alpha, w = xp.exp(m - m_new), xp.exp(MASKED - m_new)
    total *= alpha
    total += v.shape[2] * w
    acc *= alpha
    acc += w * v.sum(axis=2, keepdims=True)
    m[...] = m_new


def _residuals(pb, out, lse):
    return pb.heads_first(out), pb.rows_of(lse)


@numpy_backend.register(dot_product_attention_bwd_p)
def _attention_bwd(*args, scale, is_causal, local_window, optional, wrt, xp=np):
    ops, (out, lse, ct) = split_operands(args, optional)
    pb = _Problem(ops, scale, is_causal, local_window, xp)
    o, lse = _residuals(pb, out, lse)
    ct = pb.without_padded_rows(pb.heads_first(ct))
    delta = (ct * o).sum(axis=-1, keepdims=True)
    dq = xp.zeros_like(pb.q)
    dk, dv = xp.zeros_like(pb.k), xp.zeros_like(pb.v)
    dbias = xp.zeros(ops["bias"].shape, pb.acc) if "bias" in wrt else None
    full = lse <= 0.5 * MASKED if pb.masked else None  # fully masked rows: p = 1 / S
    ct_full = ct * full / pb.S if full is not None and full.any() else None
    with np.errstate(all="ignore"):
        for j0, j1, t0, t1 in pb.blocks():
            if ct_full is not None and "v" in wrt:
                for r in pb.skipped(t0, t1):
                    dv[:, :, j0:j1] += ct_full[:, :, r].sum(axis=2, keepdims=True)
            if t1 <= t0:
                continue
            s, keep = pb.logits(j0, j1, t0, t1)
            p = pb.probs(s, pb.rows(lse, t0, t1))
            c = pb.rows(ct, t0, t1)
            if "v" in wrt:
                dv[:, :, j0:j1] += xp.matmul(p.swapaxes(-1, -2), c)
            ds = xp.matmul(c, pb.v[:, :, j0:j1].swapaxes(-1, -2))
            ds -= pb.rows(delta, t0, t1)
            ds *= p
            pb.unmasked(ds, keep, t0, t1)
            if "q" in wrt:
                pb.rows(dq, t0, t1)[...] += xp.matmul(ds, pb.k[:, :, j0:j1])
            if "k" in wrt:
                dk[:, :, j0:j1] = xp.matmul(ds.swapaxes(-1, -2), pb.rows(pb.q, t0, t1))
            if dbias is not None:
                pb.sum_to(ds, dbias.shape, j0, j1, t0, t1, dbias)
    dtype = ops["q"].dtype
    grads = {
        "q": lambda: pb.heads_last(dq * scale, dtype),
        "k": lambda: xp.ascontiguousarray((dk * scale).transpose(0, 2, 1, 3), dtype=dtype),
        "v": lambda: xp.ascontiguousarray(dv.transpose(0, 2, 1, 3), dtype=dtype),
        "bias": lambda: dbias.astype(ops["bias"].dtype, copy=False),
    }
    return [grads[name]() for name in wrt]


@numpy_backend.register(dot_product_attention_tangent_p)
def _attention_tangent(*args, scale, is_causal, local_window, optional, tangents, xp=np):
    ops, (out, lse, *dots) = split_operands(args, optional)
    dots = dict(zip(tangents, dots, strict=True))
    pb = _Problem(ops, scale, is_causal, local_window, xp)
    o, lse = _residuals(pb, out, lse)
    dq = pb.heads_first(dots["q"]) if "q" in dots else None
    dk, dv = (pb.kv_heads_first(dots[n]) if n in dots else None for n in ("k", "v"))
    dbias = pb.grouped(dots.get("bias"))
    weighted = xp.zeros_like(pb.q)  # Σ p ṡ v + Σ p v̇
    mean = xp.zeros((*pb.q.shape[:3], 1), pb.acc)  # Σ p ṡ
    full = lse <= 0.5 * MASKED if pb.masked else None  # fully masked rows: p = 1 / S
    full = full / pb.S if full is not None and full.any() and dv is not None else None
    with np.errstate(all="ignore"):
        for j0, j1, t0, t1 in pb.blocks():
            if full is not None:
                for r in pb.skipped(t0, t1):
                    weighted[:, :, r] += full[:, :, r] * dv[:, :, j0:j1].sum(2, keepdims=True)
            if t1 <= t0:
                continue
            s, keep = pb.logits(j0, j1, t0, t1)
            p = pb.probs(s, pb.rows(lse, t0, t1))
            w = pb.rows(weighted, t0, t1)
            if dv is not None:
                w += xp.matmul(p, dv[:, :, j0:j1])
            sdot = xp.zeros_like(p)
            if dq is not None:
                sdot += xp.matmul(pb.rows(dq, t0, t1), pb.k[:, :, j0:j1].swapaxes(-1, -2))
            if dk is not None:
                sdot += xp.matmul(pb.rows(pb.q, t0, t1), dk[:, :, j0:j1].swapaxes(-1, -2))
            sdot *= scale
            if dbias is not None:
                pb.view5(sdot, t0, t1)[...] += pb._cut(dbias, t0, t1, j0, j1)
            pb.unmasked(sdot, keep, t0, t1)
            sdot *= p
            pb.rows(mean, t0, t1)[...] += sdot.sum(axis=-1, keepdims=True)
            w += xp.matmul(sdot, pb.v[:, :, j0:j1])
    return pb.heads_last(weighted - mean * o, ops["q"].dtype)
