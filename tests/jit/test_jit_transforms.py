"""jit composed with the other transformations: grad/jvp/vjp/linearize/hessian of jit, jit of
them, vmap of jit and jit of vmap, nested jit, custom rules and checkpoint on either side of
jit, and random programs through all of these. Derivatives are checked against float64
central finite differences (tests/autodiff/fd.py), values against the un-jitted function
or the loop definition of vmap; compiled derivatives are not retraced on later calls.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch import lax, tree_util
from mytorch.backends.numpy import numpy_backend
from tests.autodiff.fd import check_grads
from tests.batching.vmap_check import assert_tree_close, check_vmap
from tests.jit.random_programs import programs

X64 = dict(suppress_health_check=[HealthCheck.function_scoped_fixture])


# ---- smooth functions of float64 arrays (x: (3, 4), y: (4, 2)) -----------------------------
def f_mlp(x, y):
    h = mnp.tanh(x @ y) * mnp.sin(x[:, :1])
    return mnp.sum(h * h) + mnp.sum(mnp.exp(-x * x))


def f_lse(x, y):
    z = x @ y
    m = mnp.max(z, axis=1, keepdims=True)
    return mnp.sum(mnp.log(mnp.sum(mnp.exp(z - m), axis=1)) + m[:, 0]) + mnp.mean(x ** 3)


def f_vec(x, y):
    """Several outputs, a pytree: ((3, 2), {"b": (4,), "c": ()})."""
    a = mnp.sin(x) @ y
    return a * 2.0, {"b": mnp.sum(mnp.cos(x) * x, axis=0), "c": mnp.sum(a * a)}


SCALAR_FNS = [f_mlp, f_lse]


def _args(seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((3, 4)), rng.standard_normal((4, 2))


def _mt(args):
    return [mnp.asarray(a) for a in args]


# ---- derivatives of jit and jit of derivatives ----------------------------------------------
@pytest.mark.parametrize("f", SCALAR_FNS + [f_vec], ids=lambda f: f.__name__)
def test_derivatives_of_jit_match_finite_differences(x64, f):
    check_grads(mt.jit(f), _args(), order=2)


@pytest.mark.parametrize("f", SCALAR_FNS, ids=lambda f: f.__name__)
def test_grad_compositions_match_the_unjitted_grad(x64, f):
    args = _mt(_args(1))
    want = mt.grad(f, argnums=(0, 1))(*args)
    for got in (mt.grad(mt.jit(f), argnums=(0, 1))(*args),
                mt.jit(mt.grad(f, argnums=(0, 1)))(*args),
                mt.jit(mt.grad(mt.jit(f), argnums=(0, 1)))(*args),
                mt.grad(mt.jit(mt.jit(f)), argnums=(0, 1))(*args)):
        assert_tree_close(got, want, rtol=1e-12, atol=1e-12)


def test_value_and_grad_of_jit(x64):
    args = _mt(_args(2))
    v, g = mt.value_and_grad(mt.jit(f_mlp))(*args)
    v0, g0 = mt.value_and_grad(f_mlp)(*args)
    assert_tree_close((v, g), (v0, g0), rtol=1e-12, atol=1e-12)


def test_hessian_through_jit(x64):
    x = mnp.asarray(np.random.default_rng(3).standard_normal(4))

    def f(v):
        return mnp.sum(mnp.sin(v) * v[::-1]) + mnp.prod(mnp.tanh(v))

    want = np.asarray(mt.hessian(f)(x))
    for h in (mt.hessian(mt.jit(f)), mt.jit(mt.hessian(f)), mt.jit(mt.hessian(mt.jit(f)))):
        np.testing.assert_allclose(np.asarray(h(x)), want, rtol=1e-10, atol=1e-12)
    eps, fd = 1e-5, np.empty((4, 4))
    grad = mt.jit(mt.grad(f))
    for i in range(4):
        e = np.zeros(4)
        e[i] = eps
        fd[:, i] = (np.asarray(grad(x + e)) - np.asarray(grad(x - e))) / (2 * eps)
    np.testing.assert_allclose(want, fd, rtol=1e-6, atol=1e-8)


def test_jvp_and_linearize_of_jit(x64):
    args = _mt(_args(4))
    ts = _mt(_args(5))
    want = mt.jvp(f_vec, args, ts)
    assert_tree_close(mt.jvp(mt.jit(f_vec), args, ts), want, rtol=1e-12, atol=1e-12)
    assert_tree_close(mt.jit(lambda a, t: mt.jvp(f_vec, a, t))(args, ts), want, rtol=1e-12,
                      atol=1e-12)
    out, f_jvp = mt.linearize(mt.jit(f_vec), *args)
    assert_tree_close(out, want[0], rtol=1e-12, atol=1e-12)
    assert_tree_close(f_jvp(*ts), want[1], rtol=1e-12, atol=1e-12)
    assert_tree_close(mt.jit(f_jvp)(*ts), want[1], rtol=1e-12, atol=1e-12)


def test_vjp_with_several_outputs(x64):
    args = _mt(_args(6))
    rng = np.random.default_rng(7)
    ct = (mnp.asarray(rng.standard_normal((3, 2))),
          {"b": mnp.asarray(rng.standard_normal(4)), "c": mnp.asarray(1.5)})
    out0, vjp0 = mt.vjp(f_vec, *args)
    out1, vjp1 = mt.vjp(mt.jit(f_vec), *args)
    assert_tree_close(out1, out0, rtol=1e-12, atol=1e-12)
    assert_tree_close(vjp1(ct), vjp0(ct), rtol=1e-12, atol=1e-12)
    assert_tree_close(mt.jit(vjp1)(ct), vjp0(ct), rtol=1e-12, atol=1e-12)
    # a zero cotangent for one output
    ct0 = (ct[0] * 0.0, ct[1])
    assert_tree_close(vjp1(ct0), vjp0(ct0), rtol=1e-12, atol=1e-12)


# ---- vmap ---------------------------------------------------------------------------------
@pytest.mark.parametrize("in_axes", [0, 1, (0, None), (None, 1), (-1, 0)])
def test_vmap_of_jit_and_jit_of_vmap_match_the_loop(in_axes):
    rng = np.random.default_rng(8)

    def f(x, y):
        return mnp.tanh(x @ y), mnp.sum(x, axis=0)

    axes = in_axes if isinstance(in_axes, tuple) else (in_axes, in_axes)

    def arg(shape, ax):
        if ax is None:
            return rng.standard_normal(shape).astype(np.float32)
        s = list(shape)
        s.insert(ax % (len(shape) + 1), 5)
        return rng.standard_normal(s).astype(np.float32)

    x, y = arg((3, 4), axes[0]), arg((4, 2), axes[1])
    want = check_vmap(f, (x, y), in_axes=in_axes)
    check_vmap(mt.jit(f), (x, y), in_axes=in_axes)
    got = mt.jit(mt.vmap(f, in_axes=in_axes))(x, y)
    assert_tree_close(got, want, rtol=1e-5, atol=1e-6)
    got = mt.jit(mt.vmap(mt.jit(f), in_axes=in_axes, out_axes=1))(x, y)
    assert_tree_close(got, mt.vmap(f, in_axes=in_axes, out_axes=1)(x, y), rtol=1e-5, atol=1e-6)


def test_vmap_of_grad_of_jit(x64):
    xs = np.random.default_rng(9).standard_normal((4, 3, 4))
    y = _args(9)[1]
    g = mt.grad(mt.jit(f_mlp))
    got = mt.vmap(g, in_axes=(0, None))(xs, y)
    want = np.stack([np.asarray(mt.grad(f_mlp)(mnp.asarray(x), mnp.asarray(y))) for x in xs])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12)
    got = mt.jit(mt.vmap(g, in_axes=(0, None)))(xs, y)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12)


# ---- nested jit ---------------------------------------------------------------------------
def _has_jit(jaxpr):
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "jit":
            return True
        for p in eqn.params.values():
            inner = getattr(p, "jaxpr", p)
            if hasattr(inner, "eqns") and _has_jit(inner):
                return True
    return False


def test_nested_jit_is_inlined():
    inner = mt.jit(lambda x: mnp.sin(x) * 2.0)
    middle = mt.jit(lambda x, y: inner(x) + inner(y) * x)
    outer = mt.jit(lambda x, y: middle(x, y) - inner(y))
    x, y = mnp.ones((2, 3)), mnp.full((2, 3), 0.5)
    lowered = outer.lower(x, y)
    assert not _has_jit(lowered.jaxpr.jaxpr)
    assert "jit" not in lowered.as_text().replace("jit(", "")
    want = (np.sin(1.0) * 2 + np.sin(0.5) * 2) - np.sin(0.5) * 2
    np.testing.assert_allclose(np.asarray(outer(x, y)), np.full((2, 3), want), rtol=1e-6)


# ---- custom rules and checkpoint on either side of jit -------------------------------------
@mt.custom_jvp
def soft_abs(x):
    return mnp.sqrt(x * x + 1.0)


soft_abs.defjvp(lambda p, t: (soft_abs(p[0]), t[0] * p[0] / soft_abs(p[0])))


@mt.custom_jvp
def jitted_inside(x):
    return mt.jit(lambda v: mnp.tanh(v) * v)(x)


jitted_inside.defjvp(lambda p, t: (jitted_inside(p[0]), mt.jit(
    lambda v, dv: (mnp.tanh(v) + v * (1 - mnp.tanh(v) ** 2)) * dv)(p[0], t[0])))


@mt.custom_vjp
def scaled_sin(x, s):
    return mnp.sin(x) * s


scaled_sin.defvjp(lambda x, s: (scaled_sin(x, s), (x, s)),
                  lambda res, ct: (mt.jit(lambda x, s, c: mnp.cos(x) * s * c)(*res, ct),
                                   mnp.sum(mnp.sin(res[0]) * ct)))

CUSTOM = {
    "custom_jvp": lambda x: mnp.sum(soft_abs(x) * x),
    "custom_jvp_with_jit_inside": lambda x: mnp.sum(jitted_inside(x)),
    "custom_vjp_with_jit_in_bwd": lambda x: mnp.sum(scaled_sin(x, mnp.sum(x)) ** 2),
    "checkpoint": lambda x: mnp.sum(mt.checkpoint(lambda v: mnp.sin(mnp.sin(v)) * v)(x)),
    "jit_inside_checkpoint": lambda x: mnp.sum(mt.checkpoint(mt.jit(
        lambda v: mnp.exp(mnp.tanh(v))))(x)),
    "checkpoint_inside_jit_inside_custom": lambda x: mnp.sum(soft_abs(mt.jit(mt.checkpoint(
        lambda v: v * mnp.cos(v)))(x))),
}


@pytest.mark.parametrize("name", sorted(CUSTOM))
def test_custom_rules_and_checkpoint_with_jit(x64, name):
    f = CUSTOM[name]
    x = np.random.default_rng(10).standard_normal(5)
    modes = ("rev",) if "vjp" in name else ("fwd", "rev")
    check_grads(mt.jit(f), (x,), order=1, modes=modes)
    want = mt.grad(f)(mnp.asarray(x))
    for g in (mt.jit(mt.grad(f)), mt.grad(mt.jit(f)), mt.jit(mt.grad(mt.jit(f)))):
        assert_tree_close(g(x), want, rtol=1e-12, atol=1e-12)
    assert_tree_close(mt.jit(f)(x), f(mnp.asarray(x)), rtol=1e-12, atol=1e-12)


def test_custom_vjp_rule_is_used_under_jit():
    @mt.custom_vjp
    def clipped(x):
        return x * 1.0

    clipped.defvjp(lambda x: (clipped(x), None), lambda _, ct: (mnp.clip(ct, -1.0, 1.0),))
    f = lambda x: mnp.sum(clipped(x) * 5.0)  # noqa: E731
    x = mnp.ones(3)
    for g in (mt.grad(f), mt.jit(mt.grad(f)), mt.grad(mt.jit(f))):
        assert np.asarray(g(x)).tolist() == [1.0, 1.0, 1.0]


# ---- no retracing of compiled derivatives ---------------------------------------------------
class Counter:
    def __init__(self, fn):
        self.fn, self.calls = fn, 0

    def __call__(self, *args):
        self.calls += 1
        return self.fn(*args)


@pytest.fixture
def compiles(monkeypatch):
    """A list that grows by one per backend compilation."""
    log, compile_ = [], numpy_backend.compile

    def counting(*args, **kwargs):
        log.append(args[3] if len(args) > 3 else kwargs.get("name"))
        return compile_(*args, **kwargs)

    monkeypatch.setattr(numpy_backend, "compile", counting)
    return log


TRANSFORMS = {  # name -> (transform of a function of (x, y), whether x is batched)
    "grad": (lambda f: mt.grad(f, argnums=(0, 1)), False),
    "vmap": (lambda f: mt.vmap(f, in_axes=(0, None)), True),
    "vmap_grad": (lambda f: mt.vmap(mt.grad(f), in_axes=(0, None)), True),
    "jvp": (lambda f: lambda x, y: mt.jvp(f, (x, y), (x, y)), False),
    "hessian": (lambda f: mt.hessian(f), False),
    "value_and_grad": (lambda f: mt.value_and_grad(f), False),
}


@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_transformed_jit_does_not_retrace_or_recompile(name, compiles):
    body = Counter(lambda x, y: mnp.sum(mnp.tanh(x @ y)))
    transform, batched = TRANSFORMS[name]
    g = transform(mt.jit(body))
    x, y = mnp.ones((2, 3, 4) if batched else (3, 4)), mnp.ones((4, 2)) * 0.1
    first = g(x, y)
    traces, compiled = body.calls, len(compiles)
    assert traces == 1
    second = g(x * 0.5 + 0.25, y)
    assert body.calls == traces, "the jitted body ran again"
    assert len(compiles) == compiled, f"recompiled: {compiles[compiled:]}"
    assert tree_util.tree_structure(first) == tree_util.tree_structure(second)
    want = transform(body.fn)(x * 0.5 + 0.25, y)
    assert_tree_close(second, want, rtol=1e-5, atol=1e-6)


def test_jit_called_repeatedly_traces_once(compiles):
    body = Counter(lambda x: x * 2.0 + 1.0)
    f = mt.jit(body)
    for k in range(10):
        assert float(f(mnp.full((3,), float(k)))[0]) == 2.0 * k + 1.0
    assert body.calls == 1 and len(compiles) == 1


# ---- random programs -----------------------------------------------------------------------
def _close(got, want, **tol):
    """Values within tolerance; against eager results (arrays), the same dtypes and weak
    types too."""
    for g, w in zip(tree_util.tree_leaves(got), tree_util.tree_leaves(want), strict=True):
        if isinstance(w, mt.Array):
            assert (g.dtype, g.weak_type) == (w.dtype, w.weak_type), (g.aval, w.aval)
        g, w = np.asarray(g, np.float64), np.asarray(w, np.float64)
        assert g.shape == w.shape, (g.shape, w.shape)
        scale = max(1.0, float(np.max(np.abs(w[np.isfinite(w)]), initial=0.0)))
        np.testing.assert_allclose(g, w, rtol=tol["rtol"], atol=tol["atol"] * scale,
                                   equal_nan=True)


@settings(max_examples=40)
@given(program=programs(), special=st.booleans(), seed=st.integers(0, 2 ** 16))
def test_random_programs_jit_matches_numpy_and_eager(program, special, seed):
    args = program.sample_args(np.random.default_rng(seed), special=special)
    xs = [mnp.asarray(a) for a in args]
    before = [a.copy() for a in args]
    got = mt.jit(program)(*xs)
    _close(got, program.reference(*args), rtol=2e-5, atol=2e-5)
    _close(got, program(*xs), rtol=1e-6, atol=1e-6)
    for x, b in zip(xs, before):
        np.testing.assert_array_equal(np.asarray(x), b)


def _scalar(program):
    def loss(*xs):
        return sum(mnp.sum(mnp.tanh(o)) for o in program(*xs))
    return loss


@settings(max_examples=20)
@given(program=programs(max_steps=6), seed=st.integers(0, 2 ** 16))
def test_random_programs_grad_with_jit(program, seed):
    args = [mnp.asarray(a) for a in program.sample_args(np.random.default_rng(seed))]
    loss = _scalar(program)
    argnums = tuple(range(len(args)))
    want = mt.grad(loss, argnums=argnums)(*args)
    for g in (mt.jit(mt.grad(loss, argnums=argnums)), mt.grad(mt.jit(loss), argnums=argnums),
              mt.grad(_scalar_of_jit(program), argnums=argnums)):
        _close(g(*args), want, rtol=1e-4, atol=1e-5)


def _scalar_of_jit(program):
    jitted = mt.jit(lambda *xs: program(*xs))

    def loss(*xs):
        return sum(mnp.sum(mnp.tanh(o)) for o in jitted(*xs))
    return loss


@settings(max_examples=20)
@given(program=programs(max_steps=6), n=st.integers(1, 3), seed=st.integers(0, 2 ** 16))
def test_random_programs_vmap_with_jit(program, n, seed):
    rng = np.random.default_rng(seed)
    batches = [np.stack([program.sample_args(rng)[i] for _ in range(n)])
               for i in range(len(program.in_shapes))]
    want = [np.stack(outs) for outs in zip(*[program.reference(*[b[k] for b in batches])
                                              for k in range(n)])]
    for vf in (mt.jit(mt.vmap(program)), mt.vmap(mt.jit(program)),
               mt.jit(mt.vmap(mt.jit(program)))):
        _close(vf(*batches), want, rtol=2e-5, atol=2e-5)


@settings(max_examples=10, **X64)
@given(program=programs(max_steps=5, names=[
    "sin", "tanh", "exp_tanh", "neg", "square", "mul_one", "half", "add", "mul", "sub",
    "transpose", "reshape_rev", "sum_keep", "sum_all", "broadcast_lead", "matmul_const",
    "grad_sin", "ckpt_sig", "logaddexp_lit"]), seed=st.integers(0, 2 ** 16))
def test_random_smooth_programs_grad_of_jit_matches_finite_differences(x64, program, seed):
    args = [a.astype(np.float64) for a in program.sample_args(np.random.default_rng(seed))]
    check_grads(mt.jit(_scalar(program)), args, order=1)


def test_lax_level_program_with_literals_under_all_compositions(x64):
    def f(x):
        return lax.integer_pow(x, 3) * 0.5 + lax.logistic(x) - lax.clamp(-0.5, x, 0.5) ** 2
    x = np.linspace(-2, 2, 7)
    check_grads(mt.jit(lambda v: mnp.sum(f(v))), (x,), order=2)
    check_vmap(mt.jit(f), (x.reshape(7, 1),))


def test_static_arguments_keywords_and_integer_outputs_under_transforms():
    def f(x, n, *, scale):
        return mnp.sum(mnp.sin(x) ** n) * scale, mnp.argmax(x)

    jf = mt.jit(f, static_argnums=1)
    x = mnp.asarray(np.linspace(0, 1, 4, dtype=np.float32))
    s = mnp.asarray(np.float32(3.0))
    for argnums in (0, (0, 1)):
        want = mt.grad(lambda v, c: f(v, 3, scale=c)[0], argnums=argnums)(x, s)
        got = mt.grad(lambda v, c: jf(v, 3, scale=c)[0], argnums=argnums)(x, s)
        assert_tree_close(got, want, rtol=1e-6, atol=1e-6)
    xs = mnp.asarray(np.random.default_rng(11).standard_normal((3, 4)).astype(np.float32))
    want = mt.vmap(lambda v: f(v, 2, scale=s))(xs)
    assert_tree_close(mt.vmap(lambda v: jf(v, 2, scale=s))(xs), want, rtol=1e-6, atol=1e-6)
    assert_tree_close(mt.jit(mt.vmap(lambda v: jf(v, 2, scale=s)))(xs), want, rtol=1e-6,
                      atol=1e-6)
