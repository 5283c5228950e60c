"""checkpoint (remat): same derivatives, fewer saved residuals, policies."""

import numpy as np
import pytest

import mytorch as mt
import mytorch.numpy as mnp
from mytorch.core.trace import aval_of
from mytorch.transforms.partial_eval import linearize_flat
from tests.autodiff.fd import check_grads

WIDTH, DEPTH = 16, 50


def _params(seed=0, depth=DEPTH, width=WIDTH):
    rng = np.random.default_rng(seed)
    return [mnp.asarray(rng.standard_normal((width, width)) / np.sqrt(width))
            for _ in range(depth)]


def _layer(w, h):
    return mnp.tanh(h @ w)


def _mlp(layer):
    def f(ws, x):
        h = x
        for w in ws:
            h = layer(w, h)
        return (h ** 2).sum()

    return f


def _residual_bytes(f, ws, x):
    """Bytes of the values the linearized function keeps for the backward pass, not
    counting the parameters and the input themselves."""
    leaves = [*ws, x]
    _, linear, _ = linearize_flat(lambda *a: [f(list(a[:-1]), a[-1])], leaves)
    own = {id(v) for v in leaves}
    return sum(aval_of(c).size * aval_of(c).dtype.itemsize
               for c in linear.consts if id(c) not in own)


def test_checkpoint_gives_the_same_gradient(x64):
    ws, x = _params(depth=5), mnp.asarray(np.random.default_rng(1).standard_normal((4, WIDTH)))
    plain = mt.grad(_mlp(_layer))(ws, x)
    for policy in (None, mt.checkpoint_policies.dots_saveable,
                   mt.checkpoint_policies.everything_saveable):
        remat = mt.grad(_mlp(mt.checkpoint(_layer, policy=policy)))(ws, x)
        for a, b in zip(plain, remat):
            np.testing.assert_allclose(a, b, rtol=1e-12)


def test_checkpoint_matches_finite_differences(x64):
    f = mt.checkpoint(lambda x, y: mnp.sin(x * y) * mnp.exp(-x))
    check_grads(f, (np.array([0.3, 1.2]), np.array([-0.7, 0.4])), order=2)


def test_residuals_are_linear_in_depth_and_fewer_with_checkpoint():
    x = mnp.ones((8, WIDTH))
    plain = [_residual_bytes(_mlp(_layer), _params(depth=d), x) for d in (10, 20, 40)]
    # O(layers): doubling the depth doubles what reverse mode keeps
    assert plain[1] == 2 * plain[0] and plain[2] == 2 * plain[1]
    remat = _residual_bytes(_mlp(mt.checkpoint(_layer)), _params(depth=40), x)
    dots = _residual_bytes(
        _mlp(mt.checkpoint(_layer, policy=mt.checkpoint_policies.dots_saveable)),
        _params(depth=40), x)
    # per layer, plain keeps h (for the dot's transpose) and tanh's output; save-nothing
    # keeps only the layer's input; save-dots keeps the input and the dot's result
    assert remat < plain[2]
    assert remat <= dots <= plain[2]
    assert remat * 2 == plain[2]


def test_checkpoint_in_jaxpr_and_recomputation_in_backward_pass():
    f = mt.checkpoint(lambda x: mnp.sin(mnp.sin(x)))
    text = str(mt.make_jaxpr(mt.grad(lambda x: f(x)))(mnp.array(0.5)))
    assert "checkpoint[" in text
    # the forward block computes only what the output needs; the backward pass
    # recomputes sin(x) (it is not a residual)
    assert text.count("sin") >= 3


def test_checkpoint_static_argnums_and_pytrees():
    def f(params, n):
        out = params["x"]
        for _ in range(n):
            out = mnp.sin(out) * params["s"]
        return out.sum()

    remat = mt.checkpoint(f, static_argnums=(1,))
    p = {"x": mnp.array([0.1, 0.2]), "s": mnp.array(1.5)}
    g1 = mt.grad(lambda p: remat(p, 3))(p)
    g2 = mt.grad(lambda p: f(p, 3))(p)
    for k in p:
        np.testing.assert_allclose(g1[k], g2[k], rtol=1e-6)


def test_checkpoint_runs_plainly_outside_transformations():
    calls = []

    def f(x):
        calls.append(1)
        return x * 2

    assert float(mt.checkpoint(f)(mnp.array(2.0))) == 4.0
    assert len(calls) == 1


@pytest.mark.parametrize("policy", ["nothing", "dots"])
def test_jvp_of_checkpoint(policy, x64):
    pol = None if policy == "nothing" else mt.checkpoint_policies.dots_saveable
    f = mt.checkpoint(lambda w, x: mnp.tanh(x @ w), policy=pol)
    check_grads(f, (np.eye(3) * 0.5 + 0.1, np.arange(6.0).reshape(2, 3) / 6), order=2)


# ---- checkpoint_name and the name-based policies ------------------------------------------
P = mt.checkpoint_policies


def _named_block(w, x):
    a = mt.ad_checkpoint.checkpoint_name(mnp.sin(x @ w), "a")
    b = mt.ad_checkpoint.checkpoint_name(mnp.tanh(a @ w), "b")
    return (mnp.exp(b) * a).sum()


def _saved(policy, w, x):
    """The residuals the linearized checkpointed block keeps, besides w and x."""
    f = mt.checkpoint(_named_block, policy=policy)
    _, linear, _ = linearize_flat(lambda w, x: [f(w, x)], [w, x])
    return [np.asarray(c) for c in linear.consts if c is not w and c is not x]


def _wx():
    rng = np.random.default_rng(3)
    return (mnp.asarray(rng.standard_normal((3, 3)) / 2), mnp.asarray(rng.standard_normal((2, 3))))


@pytest.mark.parametrize("policy,names", [
    (P.save_only_these_names("a"), ["a"]),
    (P.save_only_these_names("b"), ["b"]),
    (P.save_only_these_names("a", "b"), ["a", "b"]),
    (P.save_only_these_names("c"), []),
    (P.save_any_names_but_these("a"), ["b"]),
    (P.save_any_names_but_these("a", "b"), []),
    (P.save_and_offload_only_these_names(names_which_can_be_saved=["a"],
                                         names_which_can_be_offloaded=["b"]), ["a", "b"]),
])
def test_saved_residuals_are_exactly_the_named_values(policy, names, x64):
    w, x = _wx()
    a = np.sin(np.asarray(x) @ np.asarray(w))
    values = {"a": a, "b": np.tanh(a @ np.asarray(w))}
    saved = _saved(policy, w, x)
    assert len(saved) == len(names)
    for got, name in zip(sorted(saved, key=lambda v: v.sum()),
                         sorted([values[n] for n in names], key=lambda v: v.sum())):
        np.testing.assert_allclose(got, name, rtol=1e-12)


@pytest.mark.parametrize("policy", [
    P.save_only_these_names("a"), P.save_only_these_names("b"), P.save_any_names_but_these("b"),
    P.save_anything_except_these_names("a"), P.nothing_saveable, P.everything_saveable,
    P.dots_saveable, P.dots_with_no_batch_dims_saveable,
    P.save_from_both_policies(P.dots_saveable, P.save_only_these_names("b"))])
def test_named_policies_give_the_plain_gradient(policy, x64):
    w, x = _wx()
    want = mt.grad(_named_block, argnums=(0, 1))(w, x)
    f = mt.checkpoint(_named_block, policy=policy)
    for got in (mt.grad(f, argnums=(0, 1))(w, x), mt.jit(mt.grad(f, argnums=(0, 1)))(w, x)):
        for g, v in zip(got, want):
            np.testing.assert_allclose(g, v, rtol=1e-12)
    check_grads(f, (np.asarray(w), np.asarray(x)), order=2)


def test_checkpoint_name_is_an_identity_under_every_transformation():
    name = mt.ad_checkpoint.checkpoint_name
    x = mnp.asarray(np.arange(6.0, dtype=np.float32).reshape(2, 3))
    np.testing.assert_array_equal(name(x, "n"), x)
    np.testing.assert_array_equal(mt.jit(lambda v: name(v * 2.0, "n") + v)(x), 3 * np.asarray(x))
    np.testing.assert_array_equal(mt.vmap(lambda v: name(v, "n"), in_axes=1)(x), np.asarray(x).T)
    np.testing.assert_array_equal(mt.grad(lambda v: (name(v, "n") ** 2).sum())(x), 2 * np.asarray(x))
    _, t = mt.jvp(lambda v: name(v, "n"), (x,), (mnp.ones((2, 3)),))
    np.testing.assert_array_equal(t, np.ones((2, 3)))
    (ct,) = mt.linear_transpose(lambda v: name(v, "n") * 2.0, x)(mnp.ones((2, 3)))
    np.testing.assert_array_equal(ct, 2 * np.ones((2, 3)))
    tree = name({"p": x, "q": [x]}, "tree")
    np.testing.assert_array_equal(tree["q"][0], x)
    assert "name[name='n']" in str(mt.make_jaxpr(lambda v: name(v, "n"))(x))


def test_saved_residuals_describe_arguments_names_and_outputs(capsys):
    from mytorch.ad_checkpoint import print_saved_residuals, saved_residuals

    w, x = _wx()
    plain = saved_residuals(_named_block, w, x)
    assert [d for _, d in plain[:2]] == ["from the argument w", "from the argument x"]
    assert any(d.startswith("named 'a'") for _, d in plain)
    assert any(d.startswith("output of cos") for _, d in plain)
    only_b = saved_residuals(mt.checkpoint(_named_block, policy=P.save_only_these_names("b")),
                             w, x)
    assert [d.split(" from")[0] for _, d in only_b] == [
        "from the argument w", "from the argument x", "named 'b'"]
    assert [a.shape for a, _ in only_b] == [(3, 3), (2, 3), (2, 3)]
    print_saved_residuals(lambda d: mnp.sin(d["p"]).sum(), {"p": mnp.ones(2)})
    assert capsys.readouterr().out.startswith("f32[2] output of cos from ")
