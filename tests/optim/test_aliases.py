"""Each optimiser against its closed-form update, computed here with NumPy over several
steps, for a pytree and for a scalar parameter, with constant and scheduled rates."""

import numpy as np
import pytest

import mytorch as mt
import mytorch.numpy as mnp
from mytorch import optim

from ._data import GRADS, P0, as_mt, run

SCALAR_P0 = np.float32(1.5)
SCALAR_GRADS = [np.float32(g) for g in (0.5, -0.25, 1.0, 0.125, -0.75)]


def _lr(lr, t):
    return lr(t) if callable(lr) else lr


def np_sgd(lr, momentum=None, nesterov=False):
    def step(p, g, st, t):
        if momentum is None:
            return p - _lr(lr, t) * g, st
        tr = g + momentum * st.get("trace", 0.0)
        d = g + momentum * tr if nesterov else tr
        return p - _lr(lr, t) * d, {"trace": tr}
    return step


def np_adam(lr, b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0, wd=0.0):
    def step(p, g, st, t):
        m = (1 - b1) * g + b1 * st.get("m", 0.0)
        v = (1 - b2) * g * g + b2 * st.get("v", 0.0)
        mh, vh = m / (1 - b1 ** (t + 1)), v / (1 - b2 ** (t + 1))
        d = mh / (np.sqrt(vh + eps_root) + eps) + wd * p
        return p - _lr(lr, t) * d, {"m": m, "v": v}
    return step


def np_lion(lr, b1=0.9, b2=0.99, wd=1e-3):
    def step(p, g, st, t):
        m = st.get("m", 0.0)
        d = np.sign((1 - b1) * g + b1 * m) + wd * p
        return p - _lr(lr, t) * d, {"m": (1 - b2) * g + b2 * m}
    return step


def np_rmsprop(lr, decay=0.9, eps=1e-8, centered=False, momentum=None, eps_in_sqrt=True):
    def step(p, g, st, t):
        nu = (1 - decay) * g * g + decay * st.get("nu", 0.0)
        mu = (1 - decay) * g + decay * st.get("mu", 0.0)
        var = nu - mu * mu if centered else nu
        d = g / np.sqrt(var + eps) if eps_in_sqrt else g / (np.sqrt(var) + eps)
        u = -_lr(lr, t) * d
        new = {"nu": nu, "mu": mu}
        if momentum is not None:
            u = u + momentum * st.get("tr", 0.0)
            new["tr"] = u
        return p + u, new
    return step


def np_adagrad(lr, init=0.1, eps=1e-7):
    def step(p, g, st, t):
        s = g * g + st.get("s", init)
        return p - _lr(lr, t) * g / np.sqrt(s + eps), {"s": s}
    return step


def np_lamb(lr, b1=0.9, b2=0.999, eps=1e-6, wd=0.0):
    adam_dir = np_adam(1.0, b1, b2, eps)

    def step(p, g, st, t):
        q, new = adam_dir(p, g, st, t)
        d = (p - q) + wd * p
        pn, dn = np.linalg.norm(p), np.linalg.norm(d)
        ratio = 1.0 if pn == 0 or dn == 0 else pn / dn
        return p - _lr(lr, t) * ratio * d, new
    return step


def np_run(step, params, grads):
    """Applies `step` leaf by leaf (each leaf its own state) in float64."""
    leaves = {k: np.asarray(v, np.float64) for k, v in params.items()}
    states = {k: {} for k in leaves}
    for t, g in enumerate(grads):
        for k, leaf in list(leaves.items()):
            leaves[k], states[k] = step(leaf, np.asarray(g[k], np.float64), states[k], t)
    return leaves


SCHED = optim.linear_schedule(0.1, 0.02, 3)


def np_sched(t):
    return 0.1 + (0.02 - 0.1) * min(t, 3) / 3


CASES = [
    ("sgd", lambda: optim.sgd(0.1), np_sgd(0.1)),
    ("sgd_momentum", lambda: optim.sgd(0.1, momentum=0.9), np_sgd(0.1, 0.9)),
    ("sgd_nesterov_sched", lambda: optim.sgd(SCHED, 0.8, nesterov=True),
     np_sgd(np_sched, 0.8, True)),
    ("adam", lambda: optim.adam(0.05), np_adam(0.05)),
    ("adam_eps_root_sched", lambda: optim.adam(SCHED, b1=0.8, eps_root=1e-4),
     np_adam(np_sched, b1=0.8, eps_root=1e-4)),
    ("adamw", lambda: optim.adamw(0.05, weight_decay=0.1), np_adam(0.05, wd=0.1)),
    ("lion", lambda: optim.lion(0.01, weight_decay=0.1), np_lion(0.01, wd=0.1)),
    ("rmsprop", lambda: optim.rmsprop(0.01), np_rmsprop(0.01)),
    ("rmsprop_eps_out", lambda: optim.rmsprop(0.01, eps=1e-3, eps_in_sqrt=False),
     np_rmsprop(0.01, eps=1e-3, eps_in_sqrt=False)),
    ("rmsprop_centered_momentum",
     lambda: optim.rmsprop(SCHED, decay=0.8, centered=True, momentum=0.5),
     np_rmsprop(np_sched, 0.8, centered=True, momentum=0.5)),
    ("adagrad", lambda: optim.adagrad(0.1), np_adagrad(0.1)),
    ("lamb", lambda: optim.lamb(0.05, weight_decay=0.01), np_lamb(0.05, wd=0.01)),
]


@pytest.mark.parametrize("name,make,ref", CASES, ids=[c[0] for c in CASES])
def test_pytree_params_match_closed_form(name, make, ref):
    params, _ = run(make())
    expected = np_run(ref, P0, GRADS)
    for k in expected:
        np.testing.assert_allclose(np.asarray(params[k]), expected[k], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name,make,ref", CASES, ids=[c[0] for c in CASES])
def test_scalar_param_matches_closed_form_eagerly(name, make, ref):
    params, _ = run(make(), grads=[{"x": g} for g in SCALAR_GRADS],
                    params={"x": SCALAR_P0}, jit=False)
    expected = np_run(ref, {"x": SCALAR_P0}, [{"x": g} for g in SCALAR_GRADS])
    assert params["x"].shape == ()
    np.testing.assert_allclose(np.asarray(params["x"]), expected["x"], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name,make,ref", CASES[:8], ids=[c[0] for c in CASES[:8]])
def test_bare_array_params(name, make, ref):
    # params need not be a container: a single array is a pytree too
    opt = make()
    p = mnp.asarray(P0["w"])
    state = opt.init(p)
    for g in GRADS:
        u, state = opt.update(mnp.asarray(g["w"]), state, p)
        p = optim.apply_updates(p, u)
    expected = np_run(ref, {"w": P0["w"]}, GRADS)["w"]
    np.testing.assert_allclose(np.asarray(p), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name,make,ref", CASES, ids=[c[0] for c in CASES])
def test_jit_equals_eager_and_traces_once(name, make, ref):
    opt = make()
    traces = []

    def step(params, state, grads):
        traces.append(1)
        updates, state = opt.update(grads, state, params)
        return optim.apply_updates(params, updates), state

    jitted = mt.jit(step)
    p_jit = p_eager = as_mt(P0)
    s_jit = s_eager = opt.init(p_jit)
    for g in GRADS:
        p_jit, s_jit = jitted(p_jit, s_jit, as_mt(g))
        p_eager, s_eager = step(p_eager, s_eager, as_mt(g))
    assert len(traces) == 1 + len(GRADS)  # one trace under jit, then every eager step
    for a, b in zip(mt.tree_util.tree_leaves((p_jit, s_jit)),
                    mt.tree_util.tree_leaves((p_eager, s_eager)), strict=True):
        assert a.dtype == b.dtype
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6, atol=1e-7)


def test_states_are_pytrees_of_arrays_with_int32_counts():
    opt = optim.chain(optim.clip_by_global_norm(1.0), optim.adamw(SCHED))
    state = opt.init(as_mt(P0))
    clip_state, (adam_state, wd_state, sched_state) = state
    assert adam_state.count.dtype == mnp.int32 and adam_state.count.shape == ()
    assert sched_state.count.dtype == mnp.int32
    assert clip_state == optim.EmptyState() and wd_state == optim.EmptyState()
    doubled = mt.tree_util.tree_map(lambda x: x * 2, state)
    assert mt.tree_util.tree_structure(doubled) == mt.tree_util.tree_structure(state)
    _, state = opt.update(as_mt(GRADS[0]), state, as_mt(P0))
    assert int(state[1][0].count) == 1 and int(state[1][2].count) == 1


def test_updates_are_the_negated_scaled_direction():
    u, _ = optim.sgd(0.5).update({"a": mnp.array([2.0, -4.0])}, optim.sgd(0.5).init(None))
    np.testing.assert_array_equal(np.asarray(u["a"]), [-1.0, 2.0])
    u, _ = optim.scale_by_learning_rate(0.5, flip_sign=False).update(mnp.array(2.0), ())
    assert float(u) == 1.0


def test_lion_update_is_the_sign():
    opt = optim.lion(0.1, weight_decay=0.0)
    p = mnp.array([1.0, 1.0, 1.0])
    u, _ = opt.update(mnp.array([3.0, -1e-3, 0.0]), opt.init(p), p)
    np.testing.assert_array_equal(np.asarray(u), np.float32([-0.1, 0.1, 0.0]))
