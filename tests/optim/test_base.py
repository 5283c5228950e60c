"""apply_updates, global_norm, counters, tree functions; dtypes; vmap and grad through
optimiser steps; error messages."""

import numpy as np
import pytest

import mytorch as mt
import mytorch.numpy as mnp
from mytorch import optim
from mytorch.optim import tree_utils as tu

from ..autodiff.fd import check_grads
from ._data import GRADS, P0, as_mt, run


def test_apply_updates_casts_to_param_dtype_and_keeps_none():
    params = {"a": mnp.ones(2, mnp.bfloat16), "b": None, "c": mnp.array([1, 2], mnp.int32)}
    updates = {"a": mnp.array([0.5, 0.25], mnp.float32), "b": None,
               "c": mnp.array([0.6, 1.6])}
    out = optim.apply_updates(params, updates)
    assert out["a"].dtype == mnp.bfloat16 and out["b"] is None
    np.testing.assert_array_equal(np.asarray(out["a"].astype(mnp.float32)), [1.5, 1.25])
    assert out["c"].dtype == mnp.int32
    np.testing.assert_array_equal(np.asarray(out["c"]), [1, 3])


def test_apply_updates_structure_error_names_the_path():
    params = {"layer": {"w": mnp.ones(2), "b": mnp.ones(2)}}
    with pytest.raises(ValueError, match=r"apply_updates: params and updates differ in "
                       r"structure at \['layer'\]: params has a dict with keys \('b', 'w'\) "
                       r"but updates has a dict with keys \('b', 'v'\)"):
        optim.apply_updates(params, {"layer": {"v": mnp.ones(2), "b": mnp.ones(2)}})
    with pytest.raises(ValueError, match=r"apply_updates: the update at \['layer'\]\['w'\] has "
                       r"shape \(3,\) but its parameter has shape \(2,\)"):
        optim.apply_updates(params, {"layer": {"w": mnp.ones(3), "b": mnp.ones(2)}})
    with pytest.raises(ValueError, match=r"apply_updates: the update at \['layer'\]\['b'\] is "
                       r"None but its parameter is an array"):
        optim.apply_updates(params, {"layer": {"w": mnp.ones(2), "b": None}})


def test_state_of_other_params_is_reported_with_path():
    opt = optim.adam(0.1)
    state = opt.init({"w": mnp.ones(2)})
    with pytest.raises(ValueError, match=r"scale_by_adam: updates and state.mu differ in "
                       r"structure at the root"):
        opt.update({"w": mnp.ones(2), "b": mnp.ones(1)}, state)


def test_bad_learning_rate_and_missing_params():
    with pytest.raises(TypeError, match=r"scale_by_learning_rate: learning_rate must be a "
                       r"number, a 0-d array or a schedule.*'fast'"):
        optim.adam("fast")
    opt = optim.lamb(0.1)  # needs params even without weight decay, as Optax
    with pytest.raises(ValueError, match=r"add_decayed_weights: this transformation needs the "
                       r"current params: call update\(updates, state, params\)"):
        opt.update(as_mt(GRADS[0]), opt.init(as_mt(P0)))
    tx = optim.scale_by_trust_ratio()
    with pytest.raises(ValueError, match=r"scale_by_trust_ratio: this transformation needs"):
        tx.update(as_mt(GRADS[0]), tx.init(None))


def test_negative_learning_rate_ascends_as_optax():
    # Optax accepts a negative rate (gradient ascent); so do we
    u, _ = optim.sgd(-0.5).update(mnp.array([2.0]), optim.sgd(-0.5).init(None))
    assert float(u[0]) == 1.0


def test_global_norm_and_tree_norms():
    tree = {"a": mnp.array([3.0]), "b": [mnp.array([[4.0]]), mnp.array([0.0, 12.0])]}
    assert float(optim.global_norm(tree)) == pytest.approx(13.0)
    assert float(tu.tree_norm(tree, squared=True)) == pytest.approx(169.0)
    assert float(tu.tree_norm(tree, ord=1)) == pytest.approx(19.0)
    assert float(tu.tree_norm(tree, ord=np.inf)) == pytest.approx(12.0)
    assert float(optim.global_norm({})) == 0.0
    assert tu.tree_size(tree) == 4
    assert float(tu.tree_vdot(tree, tree)) == pytest.approx(169.0)
    assert float(tu.tree_sum(tree)) == pytest.approx(19.0)


def test_safe_increment_saturates():
    top = mnp.asarray(np.iinfo(np.int32).max, mnp.int32)
    assert int(optim.safe_increment(top)) == np.iinfo(np.int32).max
    assert int(optim.safe_increment(mnp.asarray(4, mnp.int32))) == 5
    assert optim.safe_increment(mnp.asarray(4, mnp.int32)).dtype == mnp.int32


def test_tree_functions():
    a = {"x": mnp.array([1.0, 2.0])}
    b = {"x": mnp.array([3.0, 5.0])}
    np.testing.assert_array_equal(np.asarray(tu.tree_add(a, b, a)["x"]), [5.0, 9.0])
    np.testing.assert_array_equal(np.asarray(tu.tree_sub(b, a)["x"]), [2.0, 3.0])
    np.testing.assert_array_equal(np.asarray(tu.tree_add_scale(a, 2.0, b)["x"]), [7.0, 12.0])
    assert tu.tree_zeros_like(a, dtype=mnp.bfloat16)["x"].dtype == mnp.bfloat16
    np.testing.assert_array_equal(np.asarray(tu.tree_where(mnp.array(False), a, b)["x"]),
                                  [3.0, 5.0])
    state = optim.chain(optim.adam(0.1), optim.sgd(0.1, 0.9)).init(a)
    counts = tu.tree_get_all_with_path(state, "count")
    assert len(counts) == 1 and int(counts[0][1]) == 0
    with pytest.raises(ValueError, match=r"tree_sub: tree_x and tree_y differ in structure"):
        tu.tree_sub(a, {"y": mnp.ones(2)})


# ---- dtypes ------------------------------------------------------------------------------------

def test_mu_dtype_and_accumulator_dtype():
    p = as_mt(P0)
    opt = optim.adam(0.05, mu_dtype=mnp.bfloat16)
    _, state = run(opt)
    assert state[0].mu["w"].dtype == mnp.bfloat16 and state[0].nu["w"].dtype == mnp.float32
    opt = optim.sgd(0.1, momentum=0.9, accumulator_dtype=mnp.bfloat16)
    u, s = opt.update(as_mt(GRADS[0]), opt.init(p))
    assert s[0].trace["w"].dtype == mnp.bfloat16 and u["w"].dtype == mnp.float32
    opt = optim.lion(0.1, mu_dtype="bfloat16")
    assert opt.init(p)[0].mu["b"].dtype == mnp.bfloat16


def test_float64_params_stay_float64(x64):
    for opt in (optim.adam(0.05), optim.sgd(0.1, 0.9), optim.rmsprop(0.01), optim.lamb(0.1)):
        params, state = run(opt, dtype=mnp.float64)
        assert params["w"].dtype == mnp.float64
        assert all(x.dtype in (mnp.float64, mnp.int32)
                   for x in mt.tree_util.tree_leaves(state))


# ---- vmap and grad -----------------------------------------------------------------------------

def test_vmap_over_independent_parameter_sets_equals_loop():
    opt = optim.adamw(0.05, weight_decay=0.1)
    rng = np.random.default_rng(0)
    ps = rng.normal(size=(4, 3)).astype(np.float32)
    gs = rng.normal(size=(3, 4, 3)).astype(np.float32)

    def train(p, g_seq):
        state = opt.init(p)
        for g in g_seq:
            u, state = opt.update(g, state, p)
            p = optim.apply_updates(p, u)
        return p

    batched = mt.vmap(lambda p, g: train(p, [g[0], g[1], g[2]]), in_axes=(0, 1))(
        mnp.asarray(ps), mnp.asarray(gs))
    looped = np.stack([np.asarray(train(mnp.asarray(ps[i]), [mnp.asarray(gs[t, i])
                                                              for t in range(3)]))
                       for i in range(4)])
    np.testing.assert_allclose(np.asarray(batched), looped, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("make", [lambda lr: optim.sgd(lr, momentum=0.9),
                                  lambda lr: optim.adam(lr, eps=1e-3),
                                  lambda lr: optim.rmsprop(lr, eps=1e-3)])
def test_grad_through_optimiser_steps_matches_finite_differences(x64, make):
    # the loss after two steps as a function of the initial params and the learning rate
    def loss_after(p, lr):
        opt = optim.inject_hyperparams(make)(lr)
        state = opt.init(p)
        for _ in range(2):
            g = mt.grad(lambda q: mnp.sum(mnp.sin(q) * q))(p)
            u, state = opt.update(g, state, p)
            p = optim.apply_updates(p, u)
        return mnp.sum(p ** 2)

    check_grads(loss_after, [np.array([0.3, -1.2, 2.0]), np.array(0.1)], rtol=1e-4, atol=1e-5)


def test_tree_get_and_tree_set_on_optimiser_states():
    opt = optim.chain(optim.clip(1.0), optim.inject_hyperparams(optim.adam)(learning_rate=0.1))
    state = opt.init({"w": mnp.ones(2)})
    assert float(tu.tree_get(state, "learning_rate")) == pytest.approx(0.1)
    assert tu.tree_get(state, "missing", default=7) == 7
    with pytest.raises(KeyError, match=r"tree_get: 'count' occurs 2 times"):
        tu.tree_get(state, "count")
    adam_state = tu.tree_get(state, "ScaleByAdamState")
    assert isinstance(adam_state, optim.ScaleByAdamState)
    new = tu.tree_set(state, learning_rate=mnp.asarray(0.5))
    assert float(tu.tree_get(new, "learning_rate")) == 0.5
    assert type(new[1]) is type(state[1])
    assert mt.tree_util.tree_structure(new) == mt.tree_util.tree_structure(state)
    u, _ = opt.update({"w": mnp.array([1.0, -1.0])}, new)
    np.testing.assert_allclose(np.asarray(u["w"]), [-0.5, 0.5], rtol=1e-5)
    with pytest.raises(KeyError, match=r"tree_set: 'lr' is not a key or field"):
        tu.tree_set(state, lr=1.0)


def test_short_tree_namespace():
    tree = {"a": mnp.array([3.0]), "b": mnp.array([4.0])}
    assert optim.tree.norm is tu.tree_norm and optim.tree.get is tu.tree_get
    assert float(optim.tree.norm(tree)) == pytest.approx(5.0)
    np.testing.assert_array_equal(np.asarray(optim.tree.add(tree, tree)["b"]), [8.0])
