"""mt.mixed_precision: policy casting of mixed pytrees, policy strings, loss scales against
their closed-form rules, bfloat16 training against the float32 run, a skipped step on an
injected inf gradient, and float16 gradients that underflow unless the loss is scaled."""

import collections

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch.mixed_precision import (
    DynamicLossScale,
    NoOpLossScale,
    Policy,
    StaticLossScale,
    all_finite,
    get_policy,
    half_dtype,
    select_tree,
)

tree_map = mt.tree_util.tree_map
BF16 = np.dtype(ml_dtypes.bfloat16)
State = collections.namedtuple("State", ["count", "mu"])


# Policies ----------------------------------------------------------------------------------------

def _mixed_tree():
    return {"w": mnp.ones((2, 3)), "h": np.full(2, 0.5, np.float16), "i": mnp.arange(3),
            "b": mnp.array([True]), "key": mnp.array([0, 42], mnp.uint32), "lr": 0.1,
            "none": None, "state": State(mnp.zeros((), mnp.int32), mnp.zeros(2, mnp.bfloat16))}


def _dtypes_of(tree):
    return tree_map(lambda x: np.dtype(x.dtype).name if hasattr(x, "dtype") else type(x).__name__,
                    tree)


def test_policy_casts_only_floating_array_leaves():
    policy = Policy(mnp.float32, mnp.bfloat16, mnp.float16)
    tree = _mixed_tree()
    for cast, name in ((policy.cast_to_compute, "bfloat16"), (policy.cast_to_output, "float16"),
                       (policy.cast_to_param, "float32")):
        for fn, lr in ((cast, "float"), (mt.jit(cast), name)):  # jit makes 0.1 an f32[]
            out = fn(tree)
            assert _dtypes_of(out) == {
                "w": name, "h": name, "i": "int32", "b": "bool", "key": "uint32", "lr": lr,
                "none": None, "state": State("int32", name)}
            np.testing.assert_array_equal(np.asarray(out["w"], np.float32), np.ones((2, 3)))
    out = policy.cast_to_compute(tree)
    assert out["lr"] == 0.1 and out["key"] is tree["key"] and out["i"] is tree["i"]
    assert isinstance(out["h"], np.ndarray)  # NumPy leaves stay NumPy, as in jmp
    batched = mt.vmap(policy.cast_to_compute)(mnp.ones((4, 3)))
    assert batched.dtype == BF16 and batched.shape == (4, 3)


def test_casting_is_differentiable():
    policy = get_policy("p=f32,c=bf16,o=f32")

    def f(w):
        wc = policy.cast_to_compute(w)
        return policy.cast_to_output(mnp.sum(wc * wc))

    g = mt.grad(f)(mnp.array([1.5, -2.0, 0.25]))
    assert g.dtype == np.float32
    np.testing.assert_array_equal(g, [3.0, -4.0, 0.5])  # exact in bfloat16


@pytest.mark.parametrize("spec,expected", [
    ("params=float32,compute=bfloat16,output=float32", ("float32", "bfloat16", "float32")),
    ("p=f32,c=bf16,o=f32", ("float32", "bfloat16", "float32")),
    ("c=f16", ("float32", "float16", "float32")),
    (" Compute = half , OUTPUT=f16", ("float32", "float16", "float16")),
    ("float32", ("float32",) * 3),
    ("bf16", ("bfloat16",) * 3),
    ("half", ("float16",) * 3),
    ("full", ("float32",) * 3),
    ("p=f64,c=f32,o=f64", ("float64", "float32", "float64")),
])
def test_get_policy_strings(spec, expected):
    policy = get_policy(spec)
    got = (policy.param_dtype, policy.compute_dtype, policy.output_dtype)
    assert tuple(np.dtype(d).name for d in got) == expected
    assert get_policy(str(policy)) == policy and get_policy(policy) is policy
    assert hash(policy) == hash(get_policy(str(policy)))


def test_policy_helpers():
    policy = get_policy("p=f32,c=bf16,o=f32")
    assert str(policy) == "p=f32,c=bf16,o=f32"
    assert str(policy.with_output_dtype(mnp.bfloat16)) == "p=f32,c=bf16,o=bf16"
    assert str(policy.with_compute_dtype("float16")) == "p=f32,c=f16,o=f32"
    assert str(policy.with_param_dtype(mnp.bfloat16)) == "p=bf16,c=bf16,o=f32"
    assert half_dtype() == np.float16
    assert mt.mixed_precision.cast_to_half(mnp.ones(2)).dtype == np.float16
    assert mt.mixed_precision.cast_to_full(mnp.ones(2, mnp.bfloat16)).dtype == np.float32

    run = mt.jit(lambda x, policy: policy.cast_to_compute(x) * 2, static_argnums=1)
    assert run(mnp.ones(2), policy).dtype == BF16  # a Policy is hashable: a static argument
    assert run(mnp.ones(2), get_policy("float32")).dtype == np.float32


def test_policy_errors():
    with pytest.raises(ValueError, match=r"get_policy: unknown key 'x' in 'p=f32,x=bf16'.*"
                       r"params/p, compute/c and output/o.*test_mixed_precision\.py"):
        get_policy("p=f32,x=bf16")
    with pytest.raises(ValueError, match=r"get_policy: unknown dtype 'f8' in 'c=f8'"):
        get_policy("c=f8")
    with pytest.raises(ValueError, match=r"unknown dtype 'int32'"):
        get_policy("int32")
    with pytest.raises(TypeError, match=r"get_policy: expected a policy string.*got int"):
        get_policy(3)
    with pytest.raises(TypeError, match=r"Policy compute_dtype: expected a floating dtype.*"
                       r"got <class 'numpy.int32'>"):
        Policy(mnp.float32, np.int32, mnp.float32)


# Loss scales -------------------------------------------------------------------------------------

def test_noop_and_static_loss_scales():
    tree = {"a": mnp.array([1.0, 2.0]), "b": mnp.array(3.0)}
    noop = NoOpLossScale()
    assert noop.loss_scale == 1 and noop.scale(tree) is tree and noop.unscale(tree) is tree
    assert noop.adjust(mnp.array(False)) is noop
    static = StaticLossScale(mnp.float32(128.0))
    np.testing.assert_array_equal(static.scale(tree)["a"], [128.0, 256.0])
    np.testing.assert_array_equal(static.unscale(static.scale(tree))["a"], [1.0, 2.0])
    assert static.adjust(mnp.array(False)) is static
    assert mt.tree_util.tree_leaves(static) == [static.loss_scale]
    out = mt.jit(lambda s, t: s.unscale(t))(static, tree)
    np.testing.assert_array_equal(out["b"], 3.0 / 128.0)


def _reference_adjust(scale, counter, finite, period, factor, floor):
    """The rule, in plain Python."""
    if finite:
        counter += 1
        if counter == period:
            scale, counter = scale * factor, 0
    else:
        scale, counter = scale / factor, 0
    return (max(scale, floor) if floor is not None else scale), counter


@settings(max_examples=20)
@given(flags=st.lists(st.booleans(), min_size=1, max_size=12), period=st.integers(1, 4),
       factor=st.sampled_from([2, 4, 1.5]), floor=st.sampled_from([None, 1.0, 0.25]))
def test_dynamic_loss_scale_follows_its_rule(flags, period, factor, floor):
    s = DynamicLossScale(mnp.float32(4.0), period=period, factor=factor, min_loss_scale=floor)
    adjust = mt.jit(lambda s, f: s.adjust(f))
    scale, counter = 4.0, 0
    for f in flags:
        s = adjust(s, mnp.array(f))
        scale, counter = _reference_adjust(scale, counter, f, period, factor, floor)
        np.testing.assert_allclose(float(s.loss_scale), scale, rtol=1e-6)
        assert int(s.counter) == counter
        assert s.loss_scale.dtype == np.float32 and s.counter.dtype == np.int32
    assert (s.period, s.factor, s.min_loss_scale) == (period, factor, floor)


def test_dynamic_loss_scale_grows_after_period_good_steps_and_eager_equals_jit():
    s = DynamicLossScale(mnp.float32(2.0**10), period=3)
    jitted = mt.jit(lambda s, f: s.adjust(f))
    eager = s
    for i in range(7):
        s, eager = jitted(s, mnp.array(True)), eager.adjust(True)
        assert float(s.loss_scale) == float(eager.loss_scale)
        assert int(s.counter) == int(eager.counter) == (i + 1) % 3
    assert float(s.loss_scale) == 2.0**12  # grew after steps 3 and 6
    assert float(s.adjust(mnp.array(False)).loss_scale) == 2.0**11
    batch = DynamicLossScale(mnp.array([4.0, 4.0, 4.0]), mnp.array([0, 2, 2], mnp.int32),
                             period=3)  # vmap over a batch of loss scales == one by one
    out = mt.vmap(lambda s, f: s.adjust(f))(batch, mnp.array([True, True, False]))
    np.testing.assert_array_equal(out.loss_scale, [4.0, 8.0, 2.0])
    np.testing.assert_array_equal(out.counter, [1, 0, 0])


def test_dynamic_loss_scale_is_a_pytree_that_checkpoints(tmp_path):
    s = DynamicLossScale(mnp.float32(512.0), mnp.array(5, mnp.int32), period=10)
    paths = [mt.tree_util.keystr(p) for p, _ in mt.tree_util.tree_flatten_with_path(s)[0]]
    assert paths == [".loss_scale", ".counter"]
    mt.save(tmp_path / "s.safetensors", {"loss_scale": s})
    out = mt.load(tmp_path / "s.safetensors", like={"loss_scale": DynamicLossScale(
        mnp.float32(1.0), period=10)})["loss_scale"]
    assert isinstance(out, DynamicLossScale) and out.period == 10
    assert float(out.loss_scale) == 512.0 and int(out.counter) == 5


def test_loss_scale_errors():
    with pytest.raises(ValueError, match=r"DynamicLossScale: period must be a positive int, "
                       r"got 0"):
        DynamicLossScale(mnp.float32(1.0), period=0)
    with pytest.raises(ValueError, match=r"factor must be a number > 1, got 1"):
        DynamicLossScale(mnp.float32(1.0), factor=1)
    s = DynamicLossScale(mnp.float32(1.0))
    with pytest.raises(TypeError, match=r"DynamicLossScale.adjust: expected a scalar bool "
                       r"predicate \(bool\[\]\), got f32\[2\].*test_mixed_precision\.py"):
        s.adjust(mnp.ones(2))
    with pytest.raises(TypeError, match=r"select_tree: expected a scalar bool predicate.*"
                       r"got bool\[2\]"):
        select_tree(mnp.ones(2) > 0, mnp.ones(2), mnp.zeros(2))
    with pytest.raises(TypeError, match=r"select_tree: the two trees differ in a leaf: "
                       r"f32\[2\] against bf16\[2\]"):
        select_tree(mnp.array(True), mnp.ones(2), mnp.ones(2, mnp.bfloat16))


# all_finite and select_tree ----------------------------------------------------------------------

@settings(max_examples=15)
@given(values=st.lists(st.sampled_from([0.0, 1.5, -2.0, np.inf, -np.inf, np.nan]),
                       min_size=0, max_size=6),
       dtype=st.sampled_from([np.float32, np.float16, BF16]))
def test_all_finite_matches_numpy(values, dtype):
    x = np.array(values, dtype)
    tree = {"x": mnp.asarray(x), "i": mnp.arange(3), "s": mnp.array(1.0)}
    expected = bool(np.isfinite(x.astype(np.float32)).all())
    assert bool(all_finite(tree)) == expected
    assert bool(mt.jit(lambda t: all_finite(t))(tree)) == expected  # a fresh cache


def test_all_finite_edge_cases_and_vmap():
    assert bool(all_finite({})) and all_finite(None).dtype == np.bool_
    assert bool(all_finite([mnp.zeros((0, 3))]))
    x = np.array([[1.0, 2.0], [np.nan, 1.0], [3.0, -np.inf]], np.float32)
    np.testing.assert_array_equal(mt.vmap(all_finite)(mnp.asarray(x)),
                                  np.isfinite(x).all(axis=1))


def test_select_tree_picks_whole_trees():
    a = {"w": mnp.ones(3), "n": mnp.array(1, mnp.int32), "s": State(2, mnp.zeros(2))}
    b = {"w": mnp.zeros(3), "n": mnp.array(7, mnp.int32), "s": State(5, mnp.ones(2))}
    for fn in (select_tree, mt.jit(select_tree)):
        for pred, src in ((True, a), (False, b)):
            out = fn(mnp.array(pred), a, b)
            for got, want in zip(mt.tree_util.tree_leaves(out), mt.tree_util.tree_leaves(src),
                                 strict=True):
                np.testing.assert_array_equal(got, want)
    preds = mnp.array([True, False])
    out = mt.vmap(select_tree)(preds, mnp.ones((2, 3)), mnp.zeros((2, 3)))
    np.testing.assert_array_equal(out, [[1, 1, 1], [0, 0, 0]])


# Training ----------------------------------------------------------------------------------------

_RNG = np.random.default_rng(0)
_X = _RNG.normal(size=(128, 4)).astype(np.float32)
_Y = (np.sin(_X @ np.array([1.0, -0.5, 0.7, 0.2], np.float32)))[:, None]


def _init_params():
    rng = np.random.default_rng(1)
    return {"w1": mnp.asarray((rng.normal(size=(4, 32)) * 0.5).astype(np.float32)),
            "b1": mnp.zeros(32),
            "w2": mnp.asarray((rng.normal(size=(32, 1)) * 0.2).astype(np.float32)),
            "b2": mnp.zeros(1)}


def _mlp_loss(p, x, y):
    h = mnp.tanh(x @ p["w1"] + p["b1"])
    return mnp.mean((h @ p["w2"] + p["b2"] - y) ** 2)


def _make_step(policy, lr=0.1):
    def step(params, mom, loss_scale, inject):
        def loss_fn(p):
            pc, xc, yc = policy.cast_to_compute((p, mnp.asarray(_X), mnp.asarray(_Y)))
            loss = policy.cast_to_output(_mlp_loss(pc, xc, yc))
            return loss_scale.scale(loss), loss

        grads, loss = mt.grad(loss_fn, has_aux=True)(params)
        grads = policy.cast_to_param(loss_scale.unscale(grads))
        grads = {**grads, "w1": grads["w1"] + inject}  # `inject` = inf simulates an overflow
        finite = all_finite(grads)
        new_mom = tree_map(lambda m, g: 0.9 * m + g, mom, grads)
        new_params = tree_map(lambda p, m: p - lr * m, params, new_mom)
        params, mom = select_tree(finite, (new_params, new_mom), (params, mom))
        return params, mom, loss_scale.adjust(finite), loss
    return step


def _train(policy, loss_scale, steps, inject_at=None, jit=True):
    step = _make_step(policy)
    step = mt.jit(step) if jit else step
    params = _init_params()
    mom = tree_map(mnp.zeros_like, params)
    history = []
    for i in range(steps):
        inject = mnp.float32(np.inf if i == inject_at else 0.0)
        params, mom, loss_scale, loss = step(params, mom, loss_scale, inject)
        history.append((params, mom, loss_scale, float(loss)))
    return history


def test_bfloat16_compute_reaches_the_float32_loss():
    """Tolerance (also in docs/mixed_precision.md): after 150 steps, the loss of the
    bfloat16-compute run is within 5 % of the float32 run's, both well below the start."""
    f32 = _train(get_policy("float32"), NoOpLossScale(), 150)
    bf16 = _train(get_policy("p=f32,c=bf16,o=f32"), NoOpLossScale(), 150)
    start, loss32, loss16 = f32[0][3], f32[-1][3], bf16[-1][3]
    assert loss32 < 0.2 * start
    assert abs(loss16 - loss32) <= 0.05 * loss32
    assert all(p.dtype == np.float32 for p in mt.tree_util.tree_leaves(bf16[-1][0]))


def test_an_inf_gradient_skips_exactly_that_step():
    policy = get_policy("p=f32,c=f16,o=f32")
    ls = DynamicLossScale(mnp.float32(2.0**10), period=4)
    run = _train(policy, ls, 10, inject_at=5)
    before, skipped, after = run[4], run[5], run[6]
    for a, b in zip(mt.tree_util.tree_leaves(before[:2]), mt.tree_util.tree_leaves(skipped[:2]),
                    strict=True):  # params and momentum unchanged
        np.testing.assert_array_equal(a, b)
    assert float(before[2].loss_scale) == 2.0**11 and int(before[2].counter) == 1
    assert float(skipped[2].loss_scale) == 2.0**10 and int(skipped[2].counter) == 0
    assert not np.array_equal(after[0]["w1"], skipped[0]["w1"])  # training goes on
    assert run[-1][3] < run[0][3]
    assert all(bool(all_finite(r[0])) for r in run)
    clean = _train(policy, ls, 5)  # steps before the injection match an untouched run
    np.testing.assert_array_equal(clean[-1][0]["w1"], before[0]["w1"])


def test_training_step_jit_equals_eager():
    policy = get_policy("p=f32,c=bf16,o=f32")
    ls = DynamicLossScale(mnp.float32(2.0**8), period=2)
    jitted = _train(policy, ls, 4, inject_at=2)
    eager = _train(policy, ls, 4, inject_at=2, jit=False)
    for (pj, mj, sj, lj), (pe, me, se, le) in zip(jitted, eager, strict=True):
        for a, b in zip(mt.tree_util.tree_leaves((pj, mj)), mt.tree_util.tree_leaves((pe, me)),
                        strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
        assert float(sj.loss_scale) == float(se.loss_scale) and int(sj.counter) == int(se.counter)
        np.testing.assert_allclose(lj, le, rtol=1e-6)


def test_float16_gradients_underflow_unless_the_loss_is_scaled():
    """d loss / d w = 1e-5 * x ~ 1e-8 is below float16's smallest subnormal (6e-8): computed in
    float16 it is 0; with the loss scaled by 2**15 it is representable, and unscaled in
    float32 it matches the float32 gradient to float16 rounding."""
    policy = get_policy("p=f32,c=f16,o=f32")
    x = mnp.asarray(np.linspace(5e-4, 2e-3, 8).astype(np.float32))
    w = mnp.ones(8)

    def loss_fn(w, loss_scale, policy):
        wc, xc = policy.cast_to_compute((w, x))
        loss = policy.cast_to_output(mnp.sum(wc * xc) * mnp.float16(1e-5))
        return loss_scale.scale(loss)

    reference = mt.grad(loss_fn)(w, NoOpLossScale(), get_policy("float32"))
    np.testing.assert_allclose(reference, np.asarray(x) * float(np.float16(1e-5)), rtol=1e-6)
    unscaled = mt.grad(loss_fn)(w, NoOpLossScale(), policy)
    assert unscaled.dtype == np.float32 and not np.any(np.asarray(unscaled))  # all zero
    ls = DynamicLossScale(mnp.float32(2.0**15))
    grads = mt.jit(lambda w, ls: ls.unscale(mt.grad(loss_fn)(w, ls, policy)))(w, ls)
    assert bool(all_finite(grads))
    np.testing.assert_allclose(grads, reference, rtol=2e-3)
