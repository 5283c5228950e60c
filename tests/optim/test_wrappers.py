"""Wrappers: MultiSteps, apply_if_finite, masked, inject_hyperparams, multi_transform, chain;
clipping and noise transformations against their formulas."""

import numpy as np
import pytest

import mytorch as mt
import mytorch.numpy as mnp
from mytorch import optim

from ._data import GRADS, P0, as_mt, run


def _close(a, b, **kw):
    for x, y in zip(mt.tree_util.tree_leaves(a), mt.tree_util.tree_leaves(b), strict=True):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), **{"rtol": 1e-6, **kw})


# ---- MultiSteps --------------------------------------------------------------------------------

@pytest.mark.parametrize("jit", [False, True])
def test_multisteps_equals_the_averaged_gradient_step(jit):
    k = 2
    ms = optim.MultiSteps(optim.adam(0.05), every_k_schedule=k)
    p_ms, state = as_mt(P0), ms.init(as_mt(P0))
    update = mt.jit(ms.update) if jit else ms.update
    seen = []
    for g in GRADS:
        u, state = update(as_mt(g), state, p_ms)
        p_ms = optim.apply_updates(p_ms, u)
        seen.append(bool(ms.has_updated(state)))
    assert seen == [False, True, False, True]
    assert int(state.gradient_step) == 2 and int(state.mini_step) == 0
    mean = [mt.tree_util.tree_map(lambda a, b: (a + b) / 2, GRADS[i], GRADS[i + 1])
            for i in (0, 2)]
    p_ref, _ = run(optim.adam(0.05), grads=mean)
    _close(p_ms, p_ref, rtol=1e-5)


def test_multisteps_in_between_updates_are_zero_and_state_accumulates():
    ms = optim.MultiSteps(optim.sgd(1.0), every_k_schedule=3, use_grad_mean=False)
    state = ms.init(as_mt(P0))
    u, state = ms.update(as_mt(GRADS[0]), state)
    assert all(not np.any(np.asarray(x)) for x in mt.tree_util.tree_leaves(u))
    u, state = ms.update(as_mt(GRADS[1]), state)
    np.testing.assert_allclose(np.asarray(state.acc_grads["w"]),
                               GRADS[0]["w"] + GRADS[1]["w"], rtol=1e-6)
    u, state = ms.update(as_mt(GRADS[2]), state)
    total = GRADS[0]["w"] + GRADS[1]["w"] + GRADS[2]["w"]
    np.testing.assert_allclose(np.asarray(u["w"]), -total, rtol=1e-6)
    assert not np.any(np.asarray(state.acc_grads["w"]))
    assert state.acc_grads["w"].dtype == mnp.float32


def test_multisteps_schedule_of_k():
    # k = 1 for the first inner step, then 2
    ms = optim.MultiSteps(optim.sgd(1.0), lambda step: mnp.where(step < 1, 1, 2))
    step = mt.jit(ms.update)
    state = ms.init(as_mt(P0))
    emitted = []
    for g in GRADS:
        u, state = step(as_mt(g), state)
        emitted.append(bool(np.any(np.asarray(u["w"]))))
    assert emitted == [True, False, True, False]


def test_multisteps_skips_non_finite_gradients_when_asked():
    ms = optim.MultiSteps(optim.sgd(1.0), 2, should_skip_update_fn=optim.skip_not_finite)
    state = ms.init(as_mt(P0))
    bad = dict(GRADS[0], b=np.array([np.inf, 0.0], np.float32))
    u, state = ms.update(as_mt(bad), state)
    assert int(state.mini_step) == 0 and int(state.skip_state["num_not_finite"]) == 1
    assert not np.any(np.asarray(u["b"]))
    u, state = mt.jit(ms.update)(as_mt(GRADS[1]), state)
    assert int(state.mini_step) == 1


def test_multisteps_bad_every_k():
    with pytest.raises(ValueError, match=r"MultiSteps: every_k_schedule must be at least 1.*0"):
        optim.MultiSteps(optim.sgd(0.1), every_k_schedule=0)
    with pytest.raises(TypeError, match=r"MultiSteps: every_k_schedule must be a positive int "
                       r"or a callable.*float 2\.5"):
        optim.MultiSteps(optim.sgd(0.1), every_k_schedule=2.5)


# ---- apply_if_finite ---------------------------------------------------------------------------

def test_apply_if_finite_skips_and_counts():
    tx = optim.apply_if_finite(optim.adam(0.1), max_consecutive_errors=2)
    p = as_mt(P0)
    state = tx.init(p)
    step = mt.jit(tx.update)
    u, state = step(as_mt(GRADS[0]), state, p)
    inner_after_one = state.inner_state
    for i, bad in enumerate([np.nan, np.inf]):
        g = dict(GRADS[1], w=np.full((2, 2), bad, np.float32))
        u, state = step(as_mt(g), state, p)
        assert all(not np.any(np.asarray(x)) for x in mt.tree_util.tree_leaves(u))
        assert int(state.notfinite_count) == i + 1 and int(state.total_notfinite) == i + 1
        assert not bool(state.last_finite)
        _close(state.inner_state, inner_after_one)
    # a third consecutive error exceeds max_consecutive_errors: the inner update runs
    u, state = step(as_mt(dict(GRADS[1], b=np.array([np.nan, 1.0], np.float32))), state, p)
    assert int(state.inner_state[0].count) == 2
    assert np.isnan(np.asarray(u["b"])).any()
    u, state = step(as_mt(GRADS[2]), state, p)
    assert int(state.notfinite_count) == 0 and int(state.total_notfinite) == 3
    assert bool(state.last_finite)


# ---- masked / multi_transform ------------------------------------------------------------------

def test_masked_leaves_pass_through_and_state_covers_masked_in_leaves():
    tx = optim.masked(optim.sgd(0.1, momentum=0.9), {"b": False, "w": True})
    state = tx.init(as_mt(P0))
    trace = state.inner_state[0].trace
    assert isinstance(trace["b"], optim.MaskedNode) and trace["w"].shape == (2, 2)
    u, state = tx.update(as_mt(GRADS[0]), state)
    np.testing.assert_array_equal(np.asarray(u["b"]), GRADS[0]["b"])
    np.testing.assert_allclose(np.asarray(u["w"]), -0.1 * GRADS[0]["w"], rtol=1e-6)


def test_masked_with_callable_and_prefix_masks():
    params = {"layer": {"w": mnp.ones((2, 2)), "b": mnp.ones(2)}, "emb": mnp.ones(3)}
    grads = mt.tree_util.tree_map(lambda x: x * 2.0, params)
    by_rank = optim.masked(optim.scale(0.0), lambda p: mt.tree_util.tree_map(
        lambda x: x.ndim > 1, p))
    u, _ = by_rank.update(grads, by_rank.init(params))
    assert float(mnp.sum(u["layer"]["w"])) == 0.0 and float(mnp.sum(u["emb"])) == 6.0
    prefix = optim.masked(optim.scale(0.0), {"layer": True, "emb": False})
    u, _ = prefix.update(grads, prefix.init(params))
    assert float(mnp.sum(u["layer"]["b"])) == 0.0 and float(mnp.sum(u["emb"])) == 6.0


def test_adamw_mask_limits_weight_decay():
    p = {"b": mnp.array([1.0]), "w": mnp.array([1.0])}
    g = {"b": mnp.array([0.0]), "w": mnp.array([0.0])}
    opt = optim.adamw(1.0, weight_decay=0.5, mask={"b": False, "w": True})
    u, _ = opt.update(g, opt.init(p), p)
    assert float(u["b"][0]) == 0.0 and float(u["w"][0]) == -0.5


def test_multi_transform_routes_by_label():
    opt = optim.multi_transform({"fast": optim.sgd(1.0), "frozen": optim.set_to_zero()},
                                {"b": "frozen", "w": "fast"})
    u, _ = opt.update(as_mt(GRADS[0]), opt.init(as_mt(P0)))
    assert not np.any(np.asarray(u["b"]))
    np.testing.assert_allclose(np.asarray(u["w"]), -GRADS[0]["w"])
    with pytest.raises(ValueError, match=r"multi_transform: labels \['slow'\] have no"):
        optim.multi_transform({"fast": optim.sgd(1.0)}, {"b": "slow", "w": "fast"}).init(
            as_mt(P0))


def test_mask_leaves_must_be_bools():
    with pytest.raises(TypeError, match=r"masked: mask leaves must be Python bools, got str"):
        optim.masked(optim.scale(1.0), {"b": "yes", "w": True}).init(as_mt(P0))


# ---- inject_hyperparams, chain, named_chain -----------------------------------------------------

def test_inject_hyperparams_state_holds_changeable_rates():
    opt = optim.inject_hyperparams(optim.sgd)(learning_rate=0.1, momentum=0.5)
    p = as_mt(P0)
    state = opt.init(p)
    assert float(state.hyperparams["learning_rate"]) == pytest.approx(0.1)
    assert state.hyperparams["learning_rate"].dtype == mnp.float32
    state.hyperparams["learning_rate"] = mnp.asarray(0.0)
    step = mt.jit(opt.update)
    u, state = step(as_mt(GRADS[0]), state, p)
    assert not np.any(np.asarray(u["w"]))
    state.hyperparams["learning_rate"] = mnp.asarray(1.0)
    u, state = step(as_mt(GRADS[1]), state, p)
    expected = GRADS[1]["w"] + 0.5 * GRADS[0]["w"]
    np.testing.assert_allclose(np.asarray(u["w"]), -expected, rtol=1e-6)


def test_inject_hyperparams_schedule_is_recorded():
    opt = optim.inject_hyperparams(optim.adam)(learning_rate=optim.linear_schedule(1.0, 0.0, 4))
    state = opt.init(as_mt(P0))
    lrs = []
    for g in GRADS:
        _, state = opt.update(as_mt(g), state)
        lrs.append(float(state.hyperparams["learning_rate"]))
    np.testing.assert_allclose(lrs, [1.0, 0.75, 0.5, 0.25])
    with pytest.raises(ValueError, match="inject_hyperparams: static_args"):
        optim.inject_hyperparams(optim.adam, static_args=("nope",))


def test_chain_and_named_chain_compose_in_order():
    tx = optim.chain(optim.scale(2.0), optim.clip(1.0), optim.scale(-1.0))
    u, _ = tx.update(mnp.array([0.25, 1.0, -3.0]), tx.init(None))
    np.testing.assert_array_equal(np.asarray(u), [-0.5, -1.0, 1.0])
    nc = optim.named_chain(("clip", optim.clip(1.0)), ("sgd", optim.sgd(1.0, momentum=0.5)))
    state = nc.init(mnp.zeros(3))
    assert set(state) == {"clip", "sgd"}
    u, state = nc.update(mnp.array([0.25, 1.0, -3.0]), state)
    np.testing.assert_array_equal(np.asarray(u), [-0.25, -1.0, 1.0])
    with pytest.raises(ValueError, match=r"chain: 3 transformations but the state holds 2"):
        tx.update(mnp.zeros(3), ((), ()))


# ---- clipping and friends ----------------------------------------------------------------------

@pytest.mark.parametrize("max_norm", [0.1, 0.5, 10.0])
def test_clip_by_global_norm_formula(max_norm):
    g = as_mt(GRADS[0])
    norm = np.sqrt(sum(np.sum(np.asarray(v, np.float64) ** 2) for v in GRADS[0].values()))
    u, _ = mt.jit(optim.clip_by_global_norm(max_norm).update)(g, optim.EmptyState())
    scale = 1.0 if norm < max_norm else max_norm / norm
    for k in GRADS[0]:
        np.testing.assert_allclose(np.asarray(u[k]), GRADS[0][k] * scale, rtol=1e-6)
    assert float(optim.global_norm(u)) == pytest.approx(min(norm, max_norm), rel=1e-6)


def test_clip_by_global_norm_errors_and_empty_trees():
    with pytest.raises(ValueError, match=r"clip_by_global_norm: max_norm must be non-negative, "
                       r"got -1\.0"):
        optim.clip_by_global_norm(-1.0)
    assert optim.clip_by_global_norm(1.0).update({}, optim.EmptyState())[0] == {}


def test_clip_and_block_rms():
    u, _ = optim.clip(0.5).update({"a": mnp.array([-2.0, 0.25, 3.0])}, optim.EmptyState())
    np.testing.assert_array_equal(np.asarray(u["a"]), [-0.5, 0.25, 0.5])
    assert optim.clip_by_value is optim.clip
    x = np.array([3.0, -4.0], np.float32)  # rms = sqrt(12.5)
    u, _ = optim.clip_by_block_rms(1.0).update([mnp.asarray(x), mnp.array([0.1])], ())
    np.testing.assert_allclose(np.asarray(u[0]), x / np.sqrt(12.5), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(u[1]), [0.1])


def test_zero_nans_and_set_to_zero_and_identity():
    tx = optim.zero_nans()
    state = tx.init({"a": mnp.zeros(2), "b": mnp.zeros(1)})
    u, state = tx.update({"a": mnp.array([np.nan, 1.0]), "b": mnp.array([2.0])}, state)
    np.testing.assert_array_equal(np.asarray(u["a"]), [0.0, 1.0])
    assert bool(state.found_nan["a"]) and not bool(state.found_nan["b"])
    z, _ = optim.set_to_zero().update({"a": mnp.ones(2)}, ())
    assert not np.any(np.asarray(z["a"]))
    i, _ = optim.identity().update({"a": mnp.ones(2)}, ())
    np.testing.assert_array_equal(np.asarray(i["a"]), [1.0, 1.0])


def test_add_decayed_weights_with_schedule():
    tx = optim.add_decayed_weights(optim.linear_schedule(1.0, 0.0, 2))
    p = mnp.array([2.0])
    state = tx.init(p)
    outs = []
    for _ in range(3):
        u, state = tx.update(mnp.array([0.0]), state, p)
        outs.append(float(u[0]))
    assert outs == [2.0, 1.0, 0.0]
    with pytest.raises(ValueError, match=r"add_decayed_weights: this transformation needs the "
                       r"current params"):
        optim.add_decayed_weights(0.1).update(mnp.array([0.0]), optim.EmptyState())


def test_add_noise_matches_optax_bits():
    # optax.add_noise(0.01, 0.55, 0) on zeros(3), first step
    tx = optim.add_noise(0.01, 0.55, 0)
    u, state = tx.update({"a": mnp.zeros(3)}, tx.init(None))
    np.testing.assert_allclose(np.asarray(u["a"]), [0.01989074, -0.07701771, -0.1258733],
                               rtol=1e-5)
    assert int(state.count) == 1


def test_trust_ratio_is_one_for_zero_params():
    tx = optim.scale_by_trust_ratio()
    u, _ = tx.update({"a": mnp.array([3.0, 4.0])}, (), {"a": mnp.zeros(2)})
    np.testing.assert_array_equal(np.asarray(u["a"]), [3.0, 4.0])
    u, _ = tx.update({"a": mnp.array([3.0, 4.0])}, (), {"a": mnp.array([0.0, 10.0])})
    np.testing.assert_allclose(np.asarray(u["a"]), [6.0, 8.0], rtol=1e-6)


@pytest.mark.parametrize("make", [
    lambda: optim.MultiSteps(optim.adam(0.05), 2).gradient_transformation(),
    lambda: optim.apply_if_finite(optim.adamw(0.05), 3),
    lambda: optim.inject_hyperparams(optim.adam)(learning_rate=optim.linear_schedule(0.1, 0, 3)),
    lambda: optim.chain(optim.masked(optim.clip(0.1), {"b": True, "w": False}),
                        optim.lamb(optim.cosine_decay_schedule(0.1, 3))),
])
def test_wrapped_states_jit_once_and_match_eager(make):
    opt = make()
    traces = []

    def step(params, state, g):
        traces.append(1)
        u, state = opt.update(g, state, params)
        return optim.apply_updates(params, u), state

    jitted = mt.jit(step)
    pj = pe = as_mt(P0)
    sj = se = opt.init(pj)
    for g in GRADS:
        pj, sj = jitted(pj, sj, as_mt(g))
        pe, se = step(pe, se, as_mt(g))
    assert len(traces) == 1 + len(GRADS)
    _close((pj, sj), (pe, se), atol=1e-7)


def test_state_checkpoint_resume_equals_uninterrupted(tmp_path):
    opt = optim.chain(optim.clip_by_global_norm(1.0),
                      optim.adamw(optim.warmup_cosine_decay_schedule(0.0, 0.1, 2, 4)))
    p = as_mt(P0)
    s = opt.init(p)
    for g in GRADS[:2]:
        u, s = opt.update(as_mt(g), s, p)
        p = optim.apply_updates(p, u)
    mt.save(tmp_path / "ckpt", {"params": p, "opt_state": s})
    restored = mt.load(tmp_path / "ckpt", like={"params": p, "opt_state": s})
    p2, s2 = restored["params"], restored["opt_state"]
    assert type(s2[1][0]) is optim.ScaleByAdamState
    for g in GRADS[2:]:
        u, s = opt.update(as_mt(g), s, p)
        p = optim.apply_updates(p, u)
        u2, s2 = opt.update(as_mt(g), s2, p2)
        p2 = optim.apply_updates(p2, u2)
    _close(p, p2, rtol=0)


def test_partition_freeze_and_selective_transform():
    p = {"enc": mnp.ones(2), "head": mnp.ones(3)}
    assert optim.multi_transform is optim.partition
    sel = optim.selective_transform(optim.sgd(0.1, 0.9), freeze_mask={"enc": True,
                                                                     "head": False})
    state = sel.init(p)
    assert isinstance(state.inner_states["train"].inner_state[0].trace["enc"],
                      optim.MaskedNode)
    u, state = mt.jit(sel.update)(p, state)
    np.testing.assert_array_equal(np.asarray(u["enc"]), [0.0, 0.0])
    np.testing.assert_allclose(np.asarray(u["head"]), [-0.1] * 3, rtol=1e-6)
    fr = optim.freeze({"enc": True, "head": False})
    u, _ = fr.update(p, fr.init(p))
    np.testing.assert_array_equal(np.asarray(u["enc"]), [0.0, 0.0])
    np.testing.assert_array_equal(np.asarray(u["head"]), [1.0] * 3)


def test_chain_accepts_multisteps_objects_and_rejects_non_transformations():
    tx = optim.chain(optim.clip_by_global_norm(1.0), optim.MultiSteps(optim.sgd(1.0), 2))
    state = tx.init(mnp.ones(2))
    u, state = tx.update(mnp.ones(2), state)
    assert not np.any(np.asarray(u))
    u, state = tx.update(mnp.ones(2), state)
    np.testing.assert_allclose(np.asarray(u), [-2 ** -0.5] * 2, rtol=1e-6)
    with pytest.raises(TypeError, match=r"chain: expected a GradientTransformation \(an "
                       r"\(init, update\) pair of functions\), got int 3 at .*test_wrappers"):
        optim.chain(optim.sgd(0.1), 3)
    with pytest.raises(TypeError, match=r"masked: expected a GradientTransformation"):
        optim.masked(optim.sgd, {"a": True})


def test_adaptive_grad_clip_against_numpy():
    rng = np.random.default_rng(1)
    p = {"w": rng.normal(size=(3, 4)), "k": rng.normal(size=(2, 2, 3, 4)),
         "b": rng.normal(size=(4,))}
    g = {k: 3 * rng.normal(size=v.shape) for k, v in p.items()}
    axes = {"w": (0,), "k": (0, 1, 2), "b": (0,)}
    u, _ = mt.jit(optim.adaptive_grad_clip(0.1).update)(as_mt(g), optim.EmptyState(), as_mt(p))
    for k, pk in p.items():
        gn = np.sqrt(np.sum(g[k] ** 2, axis=axes[k], keepdims=True))
        pn = np.sqrt(np.sum(pk ** 2, axis=axes[k], keepdims=True))
        mx = 0.1 * np.maximum(pn, 1e-3)
        ref = np.where(gn < mx, g[k], g[k] * mx / np.maximum(gn, 1e-6))
        np.testing.assert_allclose(np.asarray(u[k]), ref, rtol=1e-5, atol=1e-6)


def test_per_example_global_norm_clip_against_numpy():
    rng = np.random.default_rng(2)
    grads = {"w": rng.normal(size=(5, 3, 2)), "b": 0.1 * rng.normal(size=(5, 2))}
    summed, n = optim.per_example_global_norm_clip(as_mt(grads), 1.5)
    norms = np.sqrt(np.sum(grads["w"] ** 2, axis=(1, 2)) + np.sum(grads["b"] ** 2, axis=1))
    mult = np.minimum(1.5 / norms, 1.0)
    assert int(n) == int(np.sum(mult < 1.0))
    for k, gk in grads.items():
        np.testing.assert_allclose(np.asarray(summed[k]), np.tensordot(mult, gk, 1), rtol=1e-5)
    with pytest.raises(ValueError, match=r"per_example_global_norm_clip: every leaf needs the "
                       r"same batch size on axis 0, got shapes \[\(2,\), \(5, 2\)\]"):
        optim.per_example_global_norm_clip({"a": mnp.ones(2), "b": mnp.ones((5, 2))}, 1.0)


def test_apply_if_finite_and_multisteps_under_vmap_equal_the_loop():
    g = np.array([[1.0, 2.0], [np.nan, 1.0], [0.5, -1.0]], np.float32)
    for tx in (optim.apply_if_finite(optim.sgd(0.1, momentum=0.9), 1),
               optim.MultiSteps(optim.adam(0.1), 2,
                                should_skip_update_fn=optim.skip_not_finite)
               .gradient_transformation()):
        def two_steps(gi, tx=tx):
            p = mnp.zeros(2)
            s = tx.init(p)
            u1, s = tx.update(gi, s, p)
            u2, s = tx.update(mnp.ones(2), s, p)
            return u1 + u2
        batched = mt.vmap(two_steps)(mnp.asarray(g))
        looped = np.stack([np.asarray(two_steps(mnp.asarray(row))) for row in g])
        np.testing.assert_allclose(np.asarray(batched), looped, rtol=1e-6)
