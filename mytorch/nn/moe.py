"""A mixture-of-experts feed-forward block (`MoE`) with a top-k softmax router, Switch's
load-balancing loss and a capacity per expert, run with all experts on one device or with
the experts sharded over the devices of a named axis.

    moe = mt.nn.MoE(64, 256, n_experts=8, k=1, key=mt.random.key(0))
    y, aux = moe(x)                          # x f32[tokens, 64] -> y f32[tokens, 64]
    loss = task_loss + 0.01 * aux["aux_loss"]

Expert parallelism: the same layer with `axis_name` set runs inside `pmap` (or `vmap`) over
that axis; each replica holds `n_experts / axis_size` experts and its own tokens, which
travel to their experts' replicas and back with `lax.all_to_all`. `shard_experts` and
`expert_in_axes` prepare a model's parameters for that pmap; the results equal the local
layer's on the same global tokens.
"""

import math

import mytorch.numpy as mnp
from mytorch import lax
from mytorch import random as _random
from mytorch import tree_util
from mytorch.core.source_info import user_error
from mytorch.nn._checks import as_array, check_inexact, positive_int, shape_error
from mytorch.nn._filtering import tree_at
from mytorch.nn.activations import gelu, one_hot, softmax
from mytorch.nn.conv import default_dtype
from mytorch.nn.module import Module, field

__all__ = ["MoE", "shard_experts", "unshard_experts", "expert_in_axes", "average_grads"]

# the expert parameters, stacked along a leading expert axis
_EXPERT_FIELDS = ("w_in", "b_in", "w_out", "b_out")


class MoE(Module):
    """A mixture-of-experts MLP block (Switch Transformer, GShard).

    Each token is routed to the `k` experts with the largest router probabilities
    (`softmax(x @ router.T)`, computed in at least float32); the output is the gate-weighted sum of
    those experts' MLPs, `w_out.T act(w_in.T x + b_in) + b_out`. With k = 1 the gate is the
    chosen expert's probability (Switch); with k = 2 the two chosen probabilities are
    renormalised to sum to 1 (GShard).

    Each expert takes at most `capacity = ceil(k * tokens / n_experts * capacity_factor)`
    tokens. Slots are filled in token order, every token's first choice before any second
    choice (GShard's priority); a choice past the capacity is dropped: it adds nothing to
    the output (a token whose every choice is dropped gets 0, so a residual connection
    around the block passes it through).

    Args:
      d_model: features of a token.
      d_hidden: hidden width of each expert's MLP.
      n_experts: number of experts E.
      k: experts per token, 1 or 2.
      capacity_factor: slack over an even split of the tokens (> 0).
      activation: the experts' hidden activation (static; default gelu).
      axis_name: None (all experts here), or the named axis over which the experts are
        sharded (expert parallelism: call the layer inside a pmap/vmap binding it).
      dtype: of the parameters (default float32, float64 under enable_x64).
      key: PRNG key (keyword-only).

    Parameters: `router` [E, d_model] (normal, std 1/sqrt(d_model)), `w_in` [E, d_model,
    d_hidden], `b_in` [E, d_hidden], `w_out` [E, d_hidden, d_model], `b_out` [E, d_model]
    (uniform in ±1/sqrt(fan_in), as `Linear`). Under expert parallelism each replica holds
    E / axis_size experts of the four expert parameters (see `shard_experts`).

    Call: `x` [..., d_model] -> `(y [..., d_model], aux)`; all leading axes together are
    the tokens that compete for capacity. `aux` is a dict:
      `aux_loss`: Switch's load-balancing loss, `E * sum_e f_e * P_e` (f_e: the fraction
        of tokens whose first choice is e, P_e: the mean router probability of e); 1 when
        balanced; add it to the loss with a small weight (e.g. 0.01).
      `load`: int32 [E], the tokens routed to each expert (all k choices, before capacity).
      `dropped`: int32, the choices dropped for lack of capacity (`capacity(tokens)`
        gives the slots per expert).
    Under expert parallelism they are those of all the replicas' tokens together.
    """

    router: object
    w_in: object
    b_in: object
    w_out: object
    b_out: object
    d_model: int = field(static=True)
    d_hidden: int = field(static=True)
    n_experts: int = field(static=True)
    k: int = field(static=True)
    capacity_factor: float = field(static=True)
    activation: object = field(static=True)
    axis_name: object = field(static=True)

    def __init__(self, d_model, d_hidden, n_experts, k=1, capacity_factor=1.25,
                 activation=gelu, axis_name=None, dtype=None, *, key):
        d_model = positive_int("MoE", "d_model", d_model, allow_zero=False)
        d_hidden = positive_int("MoE", "d_hidden", d_hidden, allow_zero=False)
        n_experts = positive_int("MoE", "n_experts", n_experts, allow_zero=False)
        if k not in (1, 2) or k > n_experts:
            raise user_error(ValueError, f"MoE: k must be 1 or 2 (and at most n_experts="
                             f"{n_experts}), got {k!r}")
        if not capacity_factor > 0:
            raise user_error(ValueError, f"MoE: capacity_factor must be positive, got "
                             f"{capacity_factor!r}")
        dtype = default_dtype(dtype)
        kr, k1, k2, k3, k4 = _random.split(key, 5)
        lim_in, lim_out = 1 / math.sqrt(d_model), 1 / math.sqrt(d_hidden)
        self.router = _random.normal(kr, (n_experts, d_model), dtype) * lim_in
        self.w_in = _random.uniform(k1, (n_experts, d_model, d_hidden), dtype,
                                    minval=-lim_in, maxval=lim_in)
        self.b_in = _random.uniform(k2, (n_experts, d_hidden), dtype, minval=-lim_in,
                                    maxval=lim_in)
        self.w_out = _random.uniform(k3, (n_experts, d_hidden, d_model), dtype,
                                     minval=-lim_out, maxval=lim_out)
        self.b_out = _random.uniform(k4, (n_experts, d_model), dtype, minval=-lim_out,
                                     maxval=lim_out)
        self.d_model, self.d_hidden, self.n_experts = d_model, d_hidden, n_experts
        self.k, self.capacity_factor = int(k), float(capacity_factor)
        self.activation, self.axis_name = activation, axis_name

    def describe(self):
        mode = "" if self.axis_name is None else f", axis_name={self.axis_name!r}"
        return (f"MoE(d_model={self.d_model}, d_hidden={self.d_hidden}, "
                f"n_experts={self.n_experts}, k={self.k}{mode})")

    def capacity(self, tokens):
        """The slots per expert for `tokens` tokens (all replicas' under expert
        parallelism): ceil(k * tokens / n_experts * capacity_factor)."""
        return max(1, math.ceil(self.k * tokens / self.n_experts * self.capacity_factor))

    def __call__(self, x, *, key=None):
        """`x` [..., d_model] -> `(y [..., d_model], aux)`; `key` is unused."""
        x = as_array(x)
        if x.ndim == 0 or x.shape[-1] != self.d_model:
            raise shape_error(self, f"(..., {self.d_model})", x)
        check_inexact(self, x)
        lead = x.shape[:-1]
        tokens = x.reshape(-1, self.d_model)
        replicas = self._replicas()
        route = self._route(tokens, replicas)
        expert_in = mnp.einsum("tec,td->ecd", route["dispatch"], tokens)
        if replicas == 1:
            expert_out = self._experts(expert_in)
        else:
            expert_out = self._experts_sharded(expert_in, replicas)
        y = mnp.einsum("tec,ecd->td", route["combine"], expert_out)
        aux = {"aux_loss": route["aux_loss"], "load": route["load"],
               "dropped": route["dropped"]}
        return y.reshape(*lead, self.d_model), aux

    # ---- routing ------------------------------------------------------------------------

    def _replicas(self):
        """1 locally; the size of `axis_name` under expert parallelism (checked against
        the experts this replica holds)."""
        local = self.w_in.shape[0]
        if self.axis_name is None:
            if local != self.n_experts:
                raise user_error(ValueError, f"{self.describe()}: holds {local} experts, not "
                                 f"{self.n_experts}; a layer with sharded experts needs "
                                 f"axis_name (set it when building the layer)")
            return 1
        replicas = lax.axis_size(self.axis_name)
        if self.n_experts % replicas or local * replicas != self.n_experts:
            raise user_error(ValueError, f"{self.describe()}: {self.n_experts} experts cannot "
                             f"be sharded as {local} per replica over the {replicas} "
                             f"replicas of axis {self.axis_name!r}; n_experts must be a "
                             f"multiple of the axis size, and each replica must hold "
                             f"n_experts / axis_size of them (see mt.nn.shard_experts)")
        return replicas

    def _route(self, tokens, replicas):
        """Top-k routing of `tokens` [T, d]: the dispatch [T, E, C] (1 where a token takes
        slot c of expert e), the combine weights [T, E, C] (dispatch times the gate), and
        the statistics. Under expert parallelism slots are numbered over all replicas'
        tokens in replica order, so each replica fills its own part of the global slots."""
        n, e = tokens.shape[0], self.n_experts
        rdt = mnp.promote_types(tokens.dtype, mnp.float32)   # half precision routes in f32
        logits = mnp.matmul(tokens.astype(rdt), self.router.astype(rdt).T)
        probs = softmax(logits, axis=-1)                                   # [T, E]
        top_p, top_i = lax.top_k(probs, self.k)                            # [T, k]
        gates = top_p if self.k == 1 else top_p / mnp.sum(top_p, axis=-1, keepdims=True)
        masks = [one_hot(top_i[:, j], e, dtype=mnp.int32) for j in range(self.k)]  # [T, E]
        counts = mnp.stack([mnp.sum(m, axis=0) for m in masks])           # [k, E]
        first_fraction = mnp.mean(masks[0].astype(mnp.float32), axis=0)    # f_e
        mean_prob = mnp.mean(probs, axis=0)                                # P_e
        if replicas == 1:
            before = mnp.zeros_like(counts)            # slots taken by earlier replicas
            total = counts
            capacity = self.capacity(n)
        else:
            every = lax.all_gather(counts, self.axis_name)                 # [R, k, E]
            mine = lax.axis_index(self.axis_name)
            earlier = (mnp.arange(replicas) < mine).astype(mnp.int32)
            before = mnp.einsum("r,rke->ke", earlier, every)
            total = mnp.sum(every, axis=0)
            capacity = self.capacity(n * replicas)
            first_fraction = lax.pmean(first_fraction, self.axis_name)
            mean_prob = lax.pmean(mean_prob, self.axis_name)
        dispatch = combine = 0
        dropped = 0
        earlier_choices = mnp.zeros_like(total[0])     # first choices fill slots first
        for j, mask in enumerate(masks):
            slot = mnp.cumsum(mask, axis=0) - 1 + before[j] + earlier_choices     # [T, E]
            position = mnp.sum(slot * mask, axis=-1)                           # [T]
            kept = (position < capacity).astype(tokens.dtype)
            d = (mask.astype(tokens.dtype)[:, :, None]
                 * one_hot(position, capacity, dtype=tokens.dtype)[:, None, :])  # [T, E, C]
            dispatch = dispatch + d
            combine = combine + d * gates[:, j].astype(tokens.dtype)[:, None, None]
            dropped = dropped + mnp.sum(1 - kept.astype(mnp.int32))
            earlier_choices = earlier_choices + total[j]
        if replicas > 1:
            dropped = lax.psum(dropped, self.axis_name)
        load = mnp.sum(total, axis=0)
        aux_loss = e * mnp.sum(first_fraction * mean_prob)
        return {"dispatch": dispatch, "combine": combine, "aux_loss": aux_loss, "load": load,
                "dropped": dropped}

    # ---- experts ------------------------------------------------------------------------

    def _experts(self, h):
        """The local experts' MLPs on their slots: [E_here, C, d] -> [E_here, C, d]."""
        z = mnp.einsum("ecd,edh->ech", h, self.w_in) + self.b_in[:, None, :]
        return mnp.einsum("ech,ehd->ecd", self.activation(z), self.w_out) + self.b_out[:, None]

    def _experts_sharded(self, expert_in, replicas):
        """Slots of all E experts from this replica [E, C, d] -> the experts' outputs for
        them [E, C, d], each expert run by the replica that holds it. Every replica fills
        its own (disjoint) global slots, so the owner adds up what it receives; the owner
        sends its experts' outputs for all slots back to every replica."""
        per = self.n_experts // replicas
        c, d = expert_in.shape[1:]
        parts = expert_in.reshape(replicas, per, c, d)          # block r: replica r's experts
        received = lax.all_to_all(parts, self.axis_name, 0, 0)  # [sender, per, C, d]
        out = self._experts(mnp.sum(received, axis=0))          # [per, C, d]
        back = lax.all_to_all(mnp.broadcast_to(out, (replicas, per, c, d)), self.axis_name,
                              0, 0)                             # [owner, per, C, d]
        return back.reshape(self.n_experts, c, d)


# ---- sharding the expert parameters ---------------------------------------------------------

def _is_moe(x):
    return isinstance(x, MoE)


def _map_moe(fn, tree):
    return tree_util.tree_map(lambda m: fn(m) if _is_moe(m) else m, tree, is_leaf=_is_moe)


def shard_experts(tree, n):
    """The parameters of `tree` (a model, or any pytree holding `MoE` layers) laid out for
    `pmap(..., in_axes=expert_in_axes(tree))` over n replicas: every MoE's expert
    parameters [E, ...] become [n, E / n, ...] (replica r holds experts r*E/n ... ); the
    other leaves are unchanged (each replica reads them whole)."""
    n = positive_int("shard_experts", "n", n, allow_zero=False)

    def split(m):
        if m.n_experts % n:
            raise user_error(ValueError, f"shard_experts: {m.describe()} has {m.n_experts} "
                             f"experts, which do not divide among {n} replicas")
        return _replace_experts(m, lambda a: a.reshape(n, a.shape[0] // n, *a.shape[1:]))

    return _map_moe(split, tree)


def unshard_experts(tree):
    """The inverse of `shard_experts`: every MoE's expert parameters [n, E / n, ...] (arrays
    or the sharded arrays a pmap returns) become [E, ...] again."""
    return _map_moe(lambda m: _replace_experts(
        m, lambda a: mnp.reshape(mnp.asarray(a), (-1, *a.shape[2:]))), tree)


def expert_in_axes(tree):
    """The `in_axes` (and `out_axes`) tree for `tree` under expert parallelism: 0 for the
    expert parameters of every MoE (after `shard_experts`), None for every other leaf."""
    def axes(m):
        # a MoE flattens to its array fields in declaration order: router, then the experts'
        treedef = tree_util.tree_structure(m)
        return tree_util.tree_unflatten(treedef, [None] + [0] * len(_EXPERT_FIELDS))

    leaves, treedef = tree_util.tree_flatten(tree, is_leaf=_is_moe)
    return tree_util.tree_unflatten(treedef, [axes(v) if _is_moe(v) else None for v in leaves])


def _replace_experts(m, fn):
    """A copy of MoE `m` with `fn` applied to its four expert parameters."""
    return tree_at(lambda v: tuple(getattr(v, f) for f in _EXPERT_FIELDS), m,
                   replace=tuple(fn(getattr(m, f)) for f in _EXPERT_FIELDS))


def average_grads(grads, axis_name):
    """Inside the replicas of an expert-parallel pmap: the gradient of the mean of the
    replicas' losses, from each replica's gradient of its own loss (`grads`, shaped like
    the model). Replicated leaves are averaged over `axis_name` (`pmean`); the expert
    parameters of each MoE are divided by the axis size, since the backward all_to_all has
    already brought every replica's cotangents to the replica holding the expert."""
    n = lax.axis_size(axis_name)
    leaves, treedef = tree_util.tree_flatten(grads, is_leaf=_is_moe)
    out = []
    for leaf in leaves:
        if _is_moe(leaf):
            router = lax.pmean(leaf.router, axis_name)
            leaf = tree_at(lambda v: v.router, _replace_experts(leaf, lambda g: g / n),
                           replace=router)
        else:
            leaf = lax.pmean(leaf, axis_name)
        out.append(leaf)
    return tree_util.tree_unflatten(treedef, out)
