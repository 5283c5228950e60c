"""Multi-head attention as an Equinox-style module: `MultiheadAttention`.

    mha = mt.nn.MultiheadAttention(num_heads=4, query_size=64, key=mt.random.key(0))
    y = mha(x, x, x, is_causal=True)                  # self-attention: f32[T, 64] -> f32[T, 64]
    y = mha(q, kv, kv, mask=pad)                      # pad: bool[S], False = ignore that key

The attention itself is `mt.nn.dot_product_attention` (one primitive: a blocked online
softmax on the CPU, a fused kernel on the GPU), except while attention dropout is active,
which needs the attention weights themselves.
"""

import math

import mytorch.numpy as mnp
from mytorch import random as _random
from mytorch.core.source_info import user_error
from mytorch.nn.activations import softmax
from mytorch.nn.attention import dot_product_attention
from mytorch.nn.conv import default_dtype, shape_str
from mytorch.nn.dropout import Dropout
from mytorch.nn.linear import Linear
from mytorch.nn.module import Module, field
from mytorch.vectorize import vmap

__all__ = ["MultiheadAttention"]


class MultiheadAttention(Module):
    """Multi-head attention (Vaswani et al.), with Equinox's parameters and call:

        MHA(Q, K, V) = concat_i(softmax(Q W^Q_i (K W^K_i)^T / sqrt(qk_size)) V W^V_i) W^O

    Args:
      num_heads: number of heads h.
      query_size: features of the query; key_size and value_size default to it.
      output_size: features of the output (default query_size).
      qk_size, vo_size: per-head sizes of queries/keys and of values (default
        query_size // num_heads).
      use_query_bias, use_key_bias, use_value_bias, use_output_bias: biases of the four
        projections (all off by default, as in Equinox).
      dropout_p: dropout on the attention weights (training mode only).
      inference: start in inference mode (no dropout); see `mt.nn.inference_mode`.
      dtype: of the parameters (default float32, float64 under enable_x64).
      key: PRNG key for the initialisation (keyword only).

    Fields: `query_proj, key_proj, value_proj, output_proj` (`Linear`s: `[query_size ->
    h * qk_size]`, `[key_size -> h * qk_size]`, `[value_size -> h * vo_size]`,
    `[h * vo_size -> output_size]`) and `dropout` (a `Dropout`).
    """

    query_proj: Linear
    key_proj: Linear
    value_proj: Linear
    output_proj: Linear
    dropout: Dropout
    num_heads: int = field(static=True)
    query_size: int = field(static=True)
    key_size: int = field(static=True)
    value_size: int = field(static=True)
    output_size: int = field(static=True)
    qk_size: int = field(static=True)
    vo_size: int = field(static=True)
    use_query_bias: bool = field(static=True)
    use_key_bias: bool = field(static=True)
    use_value_bias: bool = field(static=True)
    use_output_bias: bool = field(static=True)

    def __init__(self, num_heads, query_size, key_size=None, value_size=None, output_size=None,
                 qk_size=None, vo_size=None, use_query_bias=False, use_key_bias=False,
                 use_value_bias=False, use_output_bias=False, dropout_p=0.0, inference=False,
                 dtype=None, *, key):
        dtype = default_dtype(dtype)
        key_size = query_size if key_size is None else key_size
        value_size = query_size if value_size is None else value_size
        output_size = query_size if output_size is None else output_size
        qk_size = query_size // num_heads if qk_size is None else qk_size
        vo_size = query_size // num_heads if vo_size is None else vo_size
        if num_heads < 1 or qk_size < 1 or vo_size < 1:
            raise user_error(ValueError, f"MultiheadAttention: num_heads ({num_heads}), qk_size "
                             f"({qk_size}) and vo_size ({vo_size}) must be positive (the "
                             "per-head sizes default to query_size // num_heads)")
        qkey, kkey, vkey, okey = _random.split(key, 4)
        self.query_proj = Linear(query_size, num_heads * qk_size, use_query_bias, dtype,
                                 key=qkey)
        self.key_proj = Linear(key_size, num_heads * qk_size, use_key_bias, dtype, key=kkey)
        self.value_proj = Linear(value_size, num_heads * vo_size, use_value_bias, dtype,
                                 key=vkey)
        self.output_proj = Linear(num_heads * vo_size, output_size, use_output_bias, dtype,
                                  key=okey)
        self.dropout = Dropout(dropout_p, inference=inference)
        self.num_heads = num_heads
        self.query_size = query_size
        self.key_size = key_size
        self.value_size = value_size
        self.output_size = output_size
        self.qk_size = qk_size
        self.vo_size = vo_size
        self.use_query_bias = use_query_bias
        self.use_key_bias = use_key_bias
        self.use_value_bias = use_value_bias
        self.use_output_bias = use_output_bias

    def __call__(self, query, key_, value, mask=None, *, key=None, inference=None,
                 process_heads=None, is_causal=False):
        """Attend from `query` to (`key_`, `value`).

        Args:
          query: `[T, query_size]`; key_: `[S, key_size]`; value: `[S, value_size]`. All
            three may carry the same leading batch `[N, ...]`.
          mask: optional bool, True = attend: `[T, S]`, per head `[num_heads, T, S]`, or a
            key padding mask `[S]`; with a batch also `[N, S]`, `[N, T, S]` or
            `[N, num_heads, T, S]` (a mask of an unbatched shape is shared by the batch).
          key: PRNG key for attention dropout (needed only while it is active); with a batch
            it is split into one key per example, so the call equals `vmap` over the batch
            with `random.split(key, N)`.
          inference: overrides the dropout's inference flag for this call.
          process_heads: optional `f(q [T, h, qk], k [S, h, qk], v [S, h, vo]) -> (q, k, v)`
            of the same shapes, applied to the projected heads (e.g. rotary embeddings);
            mapped over the batch.
          is_causal: query t attends only keys s <= t (combined with `mask`).

        Returns:
          `[T, output_size]` (or `[N, T, output_size]`).
        """
        query, key_, value = self._check_inputs(query, key_, value)
        batched = query.ndim == 3
        q = self._project(self.query_proj, query)
        k = self._project(self.key_proj, key_)
        v = self._project(self.value_proj, value)
        if process_heads is not None:
            q, k, v = self._process(process_heads, q, k, v, batched)
        if not batched:
            q, k, v = q[None], k[None], v[None]
        mask = None if mask is None else self._mask4(mask, q.shape[0], q.shape[1], k.shape[1],
                                                     batched)
        inference = self.dropout.inference if inference is None else inference
        if inference or self.dropout.p == 0:
            out = self._attend(q, k, v, mask, is_causal)
        else:
            out = self._attend_with_dropout(q, k, v, mask, is_causal, key, batched)
        out = out.reshape(*out.shape[:2], self.num_heads * self.vo_size)
        out = self._project(self.output_proj, out, heads=False)
        return out if batched else out[0]

    # ---- helpers --------------------------------------------------------------------------
    def _check_inputs(self, query, key_, value):
        query, key_, value = mnp.asarray(query), mnp.asarray(key_), mnp.asarray(value)
        lead = query.shape[:-2] if query.ndim in (2, 3) else None
        ok = (lead is not None and key_.ndim == value.ndim == query.ndim
              and key_.shape[:-2] == value.shape[:-2] == lead
              and query.shape[-1] == self.query_size and key_.shape[-1] == self.key_size
              and value.shape[-1] == self.value_size and key_.shape[-2] == value.shape[-2])
        if not ok:
            raise user_error(ValueError, "MultiheadAttention expected query, key and value of "
                             f"shapes (T, {self.query_size}), (S, {self.key_size}), "
                             f"(S, {self.value_size}) (an optional leading batch N on all), got "
                             f"{shape_str(query)}, {shape_str(key_)}, {shape_str(value)}")
        return query, key_, value

    def _project(self, proj, x, heads=True):
        """Apply a Linear to every position: `[..., D] -> [..., h, size]` (or `[..., out]`)."""
        lead = x.shape[:-1]
        flat = vmap(proj)(x.reshape(math.prod(lead), x.shape[-1]))
        size = flat.shape[-1]
        if heads:
            return flat.reshape(*lead, self.num_heads, size // self.num_heads)
        return flat.reshape(*lead, size)

    def _process(self, process_heads, q, k, v, batched):
        shapes = (q.shape, k.shape, v.shape)
        fn = vmap(process_heads) if batched else process_heads
        q, k, v = fn(q, k, v)
        if (q.shape, k.shape, v.shape) != shapes:
            raise user_error(ValueError, "MultiheadAttention: process_heads must not change "
                             f"the shapes of the heads {shapes}, got "
                             f"{(q.shape, k.shape, v.shape)}")
        return q, k, v

    def _mask4(self, mask, n, t, s, batched):
        """The mask as bool `[N or 1, heads or 1, T or 1, S]`."""
        mask = mnp.asarray(mask)
        h = self.num_heads
        shared = {(s,): (1, 1, 1, s), (t, s): (1, 1, t, s), (h, t, s): (1, h, t, s)}
        per_example = {(n, s): (n, 1, 1, s), (n, t, s): (n, 1, t, s),
                       (n, h, t, s): (n, h, t, s)} if batched else {}
        shape = shared.get(tuple(mask.shape)) or per_example.get(tuple(mask.shape))
        if shape is None or mask.dtype != mnp.bool_:
            forms = f"[{s}], [{t}, {s}], [{h}, {t}, {s}]"
            if batched:
                forms += f", [{n}, {s}], [{n}, {t}, {s}], [{n}, {h}, {t}, {s}]"
            raise user_error(ValueError, "MultiheadAttention expected a bool mask of shape "
                             f"{forms} (True = attend), got {shape_str(mask)}")
        return mask.reshape(shape)

    def _attend(self, q, k, v, mask, is_causal):
        """The fused attention; it needs one head size for q/k and v, so the smaller side is
        zero-padded (which changes no dot product) and the output sliced back."""
        qk, vo = q.shape[-1], v.shape[-1]
        if qk < vo:
            pad = [(0, 0)] * 3 + [(0, vo - qk)]
            q, k = mnp.pad(q, pad), mnp.pad(k, pad)
        elif vo < qk:
            v = mnp.pad(v, [(0, 0)] * 3 + [(0, qk - vo)])
        out = dot_product_attention(q, k, v, mask=mask, scale=1 / math.sqrt(qk),
                                    is_causal=is_causal)
        return out[..., :vo]

    def _attend_with_dropout(self, q, k, v, mask, is_causal, key, batched):
        """Attention with dropout on the weights, per example and head as Equinox draws it:
        the key splits into one key per head (after one per example when batched)."""
        if key is None:
            raise user_error(RuntimeError, "MultiheadAttention needs a key while attention "
                             "dropout is active: call mha(q, k, v, key=key), or pass "
                             "inference=True (see mt.nn.inference_mode)")
        logits = mnp.einsum("btnh,bsnh->bnts", q, k) / math.sqrt(q.shape[-1])
        t, s = logits.shape[-2:]
        keep = None if mask is None else mask
        if is_causal:
            causal = mnp.tril(mnp.ones((t, s), dtype=mnp.bool_))
            keep = causal if keep is None else mnp.logical_and(keep, causal)
        if keep is not None:
            logits = mnp.where(keep, logits, mnp.finfo(logits.dtype).min)
        compute = mnp.promote_types(logits.dtype, mnp.float32)
        weights = softmax(logits.astype(compute), axis=-1).astype(logits.dtype)
        keys = _random.split(key, q.shape[0]) if batched else key[None]
        heads = self.num_heads

        def drop_example(w, example_key):  # w: [heads, T, S]
            head_keys = _random.split(example_key, heads)
            return vmap(lambda wh, kh: self.dropout(wh, key=kh, inference=False))(w, head_keys)

        weights = vmap(drop_example)(weights, keys)
        return mnp.einsum("bnts,bsnh->btnh", weights, v)
