"""The generic call-primitive rules (`def_call_rules`): a call primitive defined here, a
"named block", gets jvp, grad, vmap, jit and their compositions from them, checked against
finite differences, the loop definition of vmap and the un-wrapped function; its DCE rule
prunes the called jaxpr; and jit's rule caches (the same rules with caching on) hit."""

import numpy as np
import pytest

import mytorch as mt
import mytorch.numpy as mnp
from mytorch.core.jaxpr import eval_jaxpr
from mytorch.core.primitive import Primitive
from mytorch.core.trace import aval_of
from mytorch.transforms import call_rules
from mytorch.transforms.call_rules import clear_rule_caches, def_call_rules
from mytorch.transforms.closure import trace_closed_over
from mytorch.transforms.dce import dce_jaxpr

# ---- the test primitive: a named block that runs its jaxpr -------------------------------
block_p = Primitive("test_named_block", multiple_results=True, kind="call")
block_p.inline_param = "jaxpr"  # jit inlines it, like any call
roles = []
calls = []  # (role, operand origins, result origins) of each call a rule makes


@block_p.def_abstract_eval
def _block_abstract_eval(*avals, jaxpr, name):
    return jaxpr.out_avals


@block_p.def_impl
def _block_impl(*args, jaxpr, name):
    return eval_jaxpr(jaxpr, [], *args)


def _rebind(params, jaxpr, role, operands, results):
    roles.append(role)
    calls.append((role, list(operands), list(results)))
    name = params["name"]
    return dict(jaxpr=jaxpr, name=f"{role}({name})" if role in ("jvp", "transpose", "vmap")
                else name)


def _save_everything(prim, *avals, **params):
    return True


def_call_rules(block_p, rebind=_rebind, saveable=lambda params: _save_everything,
               name=lambda params: params["name"], cache=False)


def named_block(fun, name):
    """`fun(*arrays) -> list` run as one named_block equation."""

    def run(*xs):
        xs = [mnp.asarray(x) for x in xs]
        jaxpr, consts = trace_closed_over(lambda *a: list(fun(*a)), [aval_of(x) for x in xs],
                                          name)
        return block_p.bind(*consts, *xs, jaxpr=jaxpr, name=name)

    return run


def body(x, y):
    return [mnp.sin(x) * y, mnp.exp(x) + y * y, x * 2.0]


block = named_block(body, "body")


def scalar(fn):
    """A scalar loss of the three outputs that weighs each differently."""

    def loss(x, y):
        a, b, c = fn(x, y)
        return mnp.sum(a * a) + 0.5 * mnp.sum(b) + mnp.sum(mnp.cos(c))

    return loss


def numeric_grad(f, x, y, eps=1e-6):
    """Central differences of scalar `f` in each entry of x and y (float64 arrays)."""
    grads = []
    for which in range(2):
        args = [x.copy(), y.copy()]
        g = np.zeros_like(args[which])
        for i in np.ndindex(g.shape):
            up = [a.copy() for a in args]
            dn = [a.copy() for a in args]
            up[which][i] += eps
            dn[which][i] -= eps
            g[i] = (float(f(*up)) - float(f(*dn))) / (2 * eps)
        grads.append(g)
    return grads


@pytest.fixture
def xy(x64):
    rng = np.random.default_rng(0)
    return rng.normal(size=(3,)), rng.normal(size=(3,))


def test_eager_and_jit_match_the_unwrapped_function(xy):
    x, y = xy
    for fn in (block, mt.jit(block)):
        for got, want in zip(fn(x, y), body(mnp.asarray(x), mnp.asarray(y))):
            np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12)


def test_jvp_against_finite_differences_and_the_unwrapped_jvp(xy):
    x, y = xy
    tx, ty = np.ones(3), np.linspace(-1.0, 1.0, 3)
    roles.clear()
    outs, t_outs = mt.jvp(block, (x, y), (tx, ty))
    assert "jvp" in roles  # the JVP is another named_block
    _, want = mt.jvp(body, (mnp.asarray(x), mnp.asarray(y)), (mnp.asarray(tx), mnp.asarray(ty)))
    eps = 1e-6
    up, dn = body(mnp.asarray(x + eps * tx), mnp.asarray(y + eps * ty)), \
        body(mnp.asarray(x - eps * tx), mnp.asarray(y - eps * ty))
    for t, w, u, d in zip(t_outs, want, up, dn):
        np.testing.assert_allclose(np.asarray(t), np.asarray(w), rtol=1e-12)
        np.testing.assert_allclose(np.asarray(t), (np.asarray(u) - np.asarray(d)) / (2 * eps),
                                   rtol=1e-6, atol=1e-8)


def test_jvp_with_a_zero_tangent(xy):
    x, y = xy
    f = lambda x: block(x, mnp.asarray(y))  # noqa: E731  (y is a constant of the block)
    _, t_outs = mt.jvp(f, (x,), (np.ones(3),))
    _, want = mt.jvp(lambda x: body(x, mnp.asarray(y)), (mnp.asarray(x),), (mnp.ones(3),))
    for t, w in zip(t_outs, want):
        np.testing.assert_allclose(np.asarray(t), np.asarray(w), rtol=1e-12)


@pytest.mark.parametrize("wrap", [lambda f: f, mt.jit], ids=["eager", "jit"])
def test_grad_against_finite_differences(xy, wrap):
    x, y = xy
    loss = scalar(block)
    roles.clear()
    gx, gy = wrap(mt.grad(loss, argnums=(0, 1)))(x, y)
    if wrap is not mt.jit:
        assert {"known", "staged", "transpose"} <= set(roles)
    nx, ny = numeric_grad(scalar(body), x, y)
    np.testing.assert_allclose(np.asarray(gx), nx, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(np.asarray(gy), ny, rtol=1e-6, atol=1e-8)


def test_grad_of_one_output_leaves_the_others_zero(xy):
    x, y = xy
    g = mt.grad(lambda x: mnp.sum(block(x, mnp.asarray(y))[1]))(x)
    np.testing.assert_allclose(np.asarray(g), np.exp(x), rtol=1e-12)


def test_hessian_against_finite_differences_of_the_gradient(xy):
    x, y = xy
    f = lambda x: scalar(block)(x, mnp.asarray(y))  # noqa: E731
    h = np.asarray(mt.hessian(f)(x))
    g = lambda x: np.asarray(mt.grad(lambda x: scalar(body)(x, mnp.asarray(y)))(x))  # noqa: E731
    eps = 1e-5
    want = np.stack([(g(x + eps * e) - g(x - eps * e)) / (2 * eps) for e in np.eye(3)], 1)
    np.testing.assert_allclose(h, want, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("in_axes", [(0, 0), (0, None), (1, 0)])
def test_vmap_against_the_loop(x64, in_axes):
    rng = np.random.default_rng(1)
    xs = rng.normal(size=(4, 3)) if in_axes[0] == 0 else rng.normal(size=(3, 4))
    ys = rng.normal(size=(4, 3)) if in_axes[1] == 0 else rng.normal(size=(3,))
    roles.clear()
    got = mt.vmap(block, in_axes=in_axes)(xs, ys)
    assert "vmap" in roles
    for k, out in enumerate(got):
        for i in range(4):
            xi = xs[i] if in_axes[0] == 0 else xs[:, i]
            yi = ys if in_axes[1] is None else ys[i]
            np.testing.assert_allclose(np.asarray(out)[i], np.asarray(body(
                mnp.asarray(xi), mnp.asarray(yi))[k]), rtol=1e-12)


@pytest.mark.parametrize("wrap", [lambda f: f, mt.jit], ids=["eager", "jit"])
def test_grad_of_vmap_against_the_loop_of_grads(x64, wrap):
    rng = np.random.default_rng(2)
    xs, y = rng.normal(size=(4, 3)), rng.normal(size=(3,))

    def total(xs, y):
        return mnp.sum(mt.vmap(scalar(block), in_axes=(0, None))(xs, y))

    gxs, gy = wrap(mt.grad(total, argnums=(0, 1)))(xs, y)
    per = [mt.grad(scalar(body), argnums=(0, 1))(mnp.asarray(x), mnp.asarray(y)) for x in xs]
    np.testing.assert_allclose(np.asarray(gxs), np.stack([np.asarray(g[0]) for g in per]),
                               rtol=1e-10)
    np.testing.assert_allclose(np.asarray(gy), sum(np.asarray(g[1]) for g in per), rtol=1e-10)


def test_vmap_of_grad_against_the_loop(x64):
    rng = np.random.default_rng(3)
    xs, ys = rng.normal(size=(4, 3)), rng.normal(size=(4, 3))
    got = mt.vmap(mt.grad(scalar(block)))(xs, ys)
    for i in range(4):
        want = mt.grad(scalar(body))(mnp.asarray(xs[i]), mnp.asarray(ys[i]))
        np.testing.assert_allclose(np.asarray(got)[i], np.asarray(want), rtol=1e-10)


# ---- dead-code elimination ----------------------------------------------------------------
def _block_eqn(jaxpr):
    (eqn,) = [e for e in jaxpr.eqns if e.primitive is block_p]
    return eqn


def test_dce_prunes_the_called_jaxpr_to_the_used_outputs(x64):
    x, y = np.arange(3.0), np.ones(3)
    closed = mt.make_jaxpr(lambda x, y: block(x, y)[2])(x, y)  # reads only x * 2.0
    before = _block_eqn(closed.jaxpr)
    assert len(before.outvars) == 3 and len(before.invars) == 2
    pruned = dce_jaxpr(closed.jaxpr)
    eqn = _block_eqn(pruned)
    assert len(eqn.outvars) == 1 and len(eqn.invars) == 1  # y is no longer read
    inner = eqn.params["jaxpr"]
    assert [e.primitive.name for e in inner.eqns] == ["mul"]
    assert len(inner.invars) == 1 and inner.outvars[0].aval.shape == (3,)
    (got,) = eval_jaxpr(pruned, closed.consts, mnp.asarray(x), mnp.asarray(y))
    np.testing.assert_allclose(np.asarray(got), x * 2.0)


def test_dce_keeps_a_fully_used_call_unchanged(x64):
    closed = mt.make_jaxpr(lambda x, y: block(x, y))(np.ones(3), np.ones(3))
    eqn = _block_eqn(closed.jaxpr)
    assert _block_eqn(dce_jaxpr(closed.jaxpr)) is eqn


def test_dce_prunes_nested_jit_and_checkpoint_calls(x64):
    def f(x, y):
        a, b = mt.checkpoint(lambda x, y: [mnp.sin(x), mnp.exp(y)])(x, y)
        return a

    closed = mt.make_jaxpr(f)(np.ones(3), np.ones(3))
    pruned = dce_jaxpr(closed.jaxpr)
    (eqn,) = pruned.eqns
    assert len(eqn.outvars) == 1 and len(eqn.invars) == 1
    assert [e.primitive.name for e in eqn.params["jaxpr"].eqns] == ["sin"]
    (got,) = eval_jaxpr(pruned, closed.consts, mnp.ones(3), mnp.ones(3))
    np.testing.assert_allclose(np.asarray(got), np.sin(np.ones(3)))

    g = mt.jit(lambda x, y: [x * y, mnp.sin(x)])
    closed = mt.make_jaxpr(lambda x, y: g(x, y)[1])(np.ones(3), np.ones(3))
    (eqn,) = dce_jaxpr(closed.jaxpr).eqns
    assert len(eqn.outvars) == 1 and eqn.params["donated"] == (False,)
    assert [e.primitive.name for e in eqn.params["jaxpr"].eqns] == ["sin"]


# ---- jit's rule caches --------------------------------------------------------------------
def _count(monkeypatch, name):
    calls = []
    real = getattr(call_rules, name)

    def counted(*args, **kwargs):
        calls.append(name)
        return real(*args, **kwargs)

    monkeypatch.setattr(call_rules, name, counted)
    return calls


def test_jit_rules_trace_once_for_repeated_eager_calls(monkeypatch, x64):
    jvps = _count(monkeypatch, "jvp_call_jaxpr")
    splits = _count(monkeypatch, "partial_eval_jaxpr")
    batches = _count(monkeypatch, "batch_jaxpr")
    f = mt.jit(lambda x: mnp.sum(mnp.sin(x) * x))
    g, v = mt.grad(f), mt.vmap(f)
    x = np.linspace(0.0, 1.0, 3)
    clear_rule_caches()
    first = [np.asarray(g(x)), np.asarray(v(np.ones((2, 3))))]
    counts = (len(jvps), len(splits), len(batches))
    assert counts == (1, 1, 1)
    second = [np.asarray(g(x)), np.asarray(v(np.ones((2, 3))))]
    assert (len(jvps), len(splits), len(batches)) == counts  # every rule hit its cache
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    clear_rule_caches()
    g(x)
    assert len(jvps) == 2 and len(splits) == 2


def test_rebind_is_told_the_origin_of_each_operand_and_result(xy):
    x, y = xy
    CONST, RES = call_rules.CONST, call_rules.RESIDUAL
    calls.clear()
    mt.jvp(lambda x: block(x, mnp.asarray(y)), (x,), (np.ones(3),))  # y's tangent is zero
    (role, operands, results), = calls
    assert role == "jvp"
    assert [o for o in operands if o != CONST] == [("operand", 0), ("operand", 1),
                                                   ("operand", 0)]
    assert results == [("result", j) for j in range(3)] * 2

    calls.clear()
    mt.grad(lambda x: mnp.sum(block(x, mnp.asarray(y))[0]))(x)
    by_role = {role: (ops, res) for role, ops, res in calls}
    # the linearized call is the jvp call: primals x, y then x's tangent; 3 + 3 results
    known_ops, known_res = by_role["known"]
    assert known_ops == [("operand", 0), ("operand", 1)]
    n_res = known_res.count(RES)
    assert n_res and known_res == [("result", j) for j in range(3)] + [RES] * n_res
    staged_ops, staged_res = by_role["staged"]
    assert staged_ops == [RES] * n_res + [("operand", 2)]
    assert staged_res == [("result", j) for j in range(3, 6)]
    t_ops, t_res = by_role["transpose"]
    assert t_res == [("operand", n_res)]  # x's tangent: the staged call's last operand
    assert [o for o in t_ops if o != CONST][-1] == ("result", 0)  # only output 0 is read

    closed = mt.make_jaxpr(lambda x, y: block(x, y)[2])(x, y)
    calls.clear()
    dce_jaxpr(closed.jaxpr)
    assert calls == [("dce", [("operand", 0)], [("result", 2)])]


def test_def_call_rules_rejects_an_unknown_transpose_mode():
    with pytest.raises(ValueError, match="transpose must be 'call' or 'inline'"):
        def_call_rules(Primitive("test_bad_call", multiple_results=True, kind="call"),
                       rebind=_rebind, saveable=lambda p: _save_everything, transpose="x")
