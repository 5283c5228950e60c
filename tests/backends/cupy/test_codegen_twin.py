"""The generated fused kernels (backends/cupy/fusion.py, codegen*.py) run on the CPU twin
(twin.py: the same CUDA source built by g++ with a shim, over NumPy buffers) and compute
what the NumPy backend computes for the same equations.

Each test traces functions to jaxprs, plans them, evaluates every equation eagerly on the
NumPy backend (the reference value of every variable), then runs each fused group's kernel
on the twin on the reference values of its inputs and compares its outputs: integers and
bools exactly, floats within a few ulps (the C library and NumPy approximate exp, sin, ...
differently) and within a summation-order tolerance after a reduction. Kernels are
compiled in batches (one module for many kernels), as the backend compiles one module per
jitted function. Nothing here ran on a GPU.
"""

import shutil

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mytorch as mt
from mytorch import lax
from mytorch.backends.cupy import codegen, fusion
from mytorch.backends.cupy import twin as twin_mod
from mytorch.backends.numpy import numpy_backend
from mytorch.core import dtypes
from mytorch.core.aval import ShapedArray
from mytorch.core.jaxpr import Literal, Var, sub_jaxprs
from mytorch.lax import elementwise as ew

BF16 = np.dtype(dtypes.bfloat16)
ALL = [np.dtype(t) for t in (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8,
                             np.uint16, np.uint32, np.uint64, np.float16, np.float32,
                             np.float64)] + [BF16, np.dtype(np.complex64),
                                             np.dtype(np.complex128)]
APPROX = {  # libm and NumPy approximate these differently (a few ulps)
    "exp", "exp2", "log", "log1p", "expm1", "cbrt", "sin", "cos", "tan", "asin", "acos",
    "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "logistic", "erf", "erfc",
    "erf_inv", "lgamma", "digamma", "pow", "atan2", "integer_pow", "sqrt", "rsqrt", "sign",
    "abs", "div", "reciprocal"}
RTOL = {np.dtype(np.float16): 4e-3, BF16: 2e-2, np.dtype(np.float32): 2e-5,
        np.dtype(np.float64): 1e-12, np.dtype(np.complex64): 2e-5,
        np.dtype(np.complex128): 1e-12}
pytestmark = pytest.mark.skipif(shutil.which("g++") is None,
                                reason="the CPU twin needs a host C++ compiler (g++)")


@pytest.fixture
def x64():
    mt.config.update("enable_x64", True)
    yield
    mt.config.update("enable_x64", False)


@pytest.fixture(scope="module")
def runtime(tmp_path_factory):
    return twin_mod.TwinRuntime(cache=tmp_path_factory.getbasetemp() / "twin")


# ---- reference values and running the plan ------------------------------------------------
def reference_env(jaxpr, consts, args):
    """{Var: NumPy value} of every variable of `jaxpr`, each equation bound eagerly (the
    NumPy backend's kernels)."""
    env = {}
    for v, x in zip(jaxpr.constvars, consts, strict=True):
        env[v] = x
    for v, x in zip(jaxpr.invars, args, strict=True):
        env[v] = x
    for eqn in jaxpr.eqns:
        ins = [v.val if type(v) is Literal else env[v] for v in eqn.invars]
        outs = eqn.primitive.bind(*ins, **eqn.params)
        outs = outs if eqn.primitive.multiple_results else [outs]
        for v, o in zip(eqn.outvars, outs, strict=True):
            if type(v) is Var:
                env[v] = o
    return env


def host(x):
    try:
        return np.asarray(x)
    except TypeError:  # PRNG keys and other opaque values are no kernel's operands
        return None


def compile_steps(runtime, steps, **run):
    kernels = [s.kernel for s in steps if isinstance(s, fusion.Fused)]
    if not kernels:
        return {}
    return runtime.compile(codegen.module_source(kernels), codegen.signatures(kernels))


def check_close(want, got, what, approx=True, reduced=False):
    """`got` equals `want`: exactly for integers and bools (and floats unless `approx`),
    within the dtype's tolerance otherwise (scaled by the magnitudes when `reduced`)."""
    want, got = np.asarray(want), np.asarray(got)
    assert got.shape == want.shape and got.dtype == want.dtype, (what, got.dtype, want.dtype)
    if want.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want, err_msg=what)
        return
    w = want.astype(np.complex128 if want.dtype.kind == "c" else np.float64)
    g = got.astype(w.dtype)
    if not approx:
        same = (w == g) | (np.isnan(w) & np.isnan(g)) if w.dtype.kind == "f" else (
            ((w.real == g.real) | (np.isnan(w.real) & np.isnan(g.real)))
            & ((w.imag == g.imag) | (np.isnan(w.imag) & np.isnan(g.imag))))
        assert same.all(), f"{what}: {w[~same][:5]} vs {g[~same][:5]}"
        return
    rtol = RTOL[want.dtype]
    finite = np.abs(w[np.isfinite(w)])
    scale = finite.max() if finite.size else 1.0  # cancellation in chains and sums
    np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * (scale if reduced else min(scale, 1)),
                               equal_nan=True, err_msg=what)


def check_plans(runtime, cases, grid=None, exact=False, **kernel_options):
    """Plan each (jaxpr, consts, args) of `cases`, compile all their fused kernels as one
    module, run each group on the twin on reference inputs and compare with the reference
    outputs. Returns the plans."""
    plans = [(fusion.plan(jaxpr, **kernel_options), reference_env(jaxpr, consts, args))
             for jaxpr, consts, args in cases]
    fns = compile_steps(runtime, [s for steps, _ in plans for s in steps])
    for steps, env in plans:
        for step in steps:
            if not isinstance(step, fusion.Fused):
                continue
            ins = [host(env[v]) for v in step.invars]
            outs = step.kernel.run(fns, np, ins, grid=grid)
            reduced = step.kernel.strategy != "elementwise"
            for v, got in zip(step.outvars, outs, strict=True):
                check_close(host(env[v]), got, f"{step.kernel.name} -> {v.aval.str_short()}",
                            approx=not exact or reduced, reduced=reduced)
    return [steps for steps, _ in plans]


def check_plan(runtime, jaxpr, consts, args, grid=None, **kernel_options):
    """check_plans of one jaxpr: its steps."""
    return check_plans(runtime, [(jaxpr, consts, args)], grid, **kernel_options)[0]


def trace(f, *args):
    closed = mt.make_jaxpr(f)(*args)
    return closed.jaxpr, closed.consts


def values(dt, shape, rng, positive=False):
    """Random values of `dt`: moderate floats (positive ones when `positive`), full-range
    integers, both bools."""
    dt = np.dtype(dt)
    if dt == np.bool_:
        return rng.integers(0, 2, shape).astype(np.bool_)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max, shape, dtype=dt, endpoint=True)
    x = rng.standard_normal(shape) * 2
    if dt.kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    if positive:
        x = np.abs(x) + 1.25
    return np.asarray(x).astype(dt)


# ---- every elementwise primitive x every dtype: one-equation kernels -----------------------
ELEMENTWISE = sorted((p for p in vars(ew).values() if getattr(p, "kind", None) == "elementwise"),
                     key=lambda p: p.name)
POSITIVE = {"log", "log1p", "sqrt", "rsqrt", "lgamma", "digamma", "acosh", "pow", "erf_inv"}


def _params(prim, dt):
    if prim is ew.integer_pow_p:
        return {"y": 3}
    if prim is ew.round_p:
        return {"rounding_method": 1}
    if prim is ew.convert_element_type_p:
        return {"new_dtype": np.dtype(np.float32 if dt.kind in "biu" else np.int32),
                "weak_type": False}
    if prim is ew.bitcast_convert_type_p:
        return {"new_dtype": np.dtype(f"i{dt.itemsize}") if dt.kind != "c" else dt}
    return {}


def _operand_avals(prim, dt, shape):
    if prim is ew.select_n_p:
        return [ShapedArray(shape, np.bool_), ShapedArray(shape, dt), ShapedArray(shape, dt)]
    if prim is ew.clamp_p:
        return [ShapedArray((), dt), ShapedArray(shape, dt), ShapedArray((), dt)]
    for n in (1, 2):
        avals = [ShapedArray(shape, dt), ShapedArray(() if n == 2 and dt.kind == "f" else shape,
                                                     dt)][:n]
        try:
            prim._abstract_eval(*avals, **_params(prim, dt))
            return avals
        except (TypeError, ValueError):
            continue
    return None


def elementwise_cases():
    """(prim, operand avals, params) of every elementwise primitive and dtype with a CUDA
    expression; shapes alternate between one that vectorises (32 elements) and one that
    does not (35), and float binaries take a 0-d second operand."""
    cases = []
    for prim in ELEMENTWISE:
        for dt in ALL:
            shape = (4, 8) if len(cases) % 2 else (5, 7)
            avals = _operand_avals(prim, dt, shape)
            if avals is None:
                continue
            params = _params(prim, dt)
            try:
                fusion.elementwise_kernel(prim, avals, params)
            except TypeError:
                continue
            cases.append((prim, avals, params))
    return cases


def test_every_elementwise_primitive_and_dtype_matches_numpy(runtime):
    cases = elementwise_cases()
    assert len(cases) > 400
    kernels = [fusion.elementwise_kernel(p, a, k) for p, a, k in cases]
    fns = runtime.compile(codegen.module_source(kernels), codegen.signatures(kernels))
    rng = np.random.default_rng(0)
    assert {k.vec for k in kernels} >= {1, 2, 4}
    for (prim, avals, params), kernel in zip(cases, kernels, strict=True):
        ins = [values(a.dtype, a.shape, rng, positive=prim.name in POSITIVE) for a in avals]
        if prim is ew.clamp_p and avals[0].dtype.kind in "iu":
            ins[0], ins[2] = np.minimum(ins[0], ins[2]), np.maximum(ins[0], ins[2])
        want = numpy_backend.kernel(prim)(*ins, **params)
        (got,) = kernel.run(fns, np, ins)
        check_close(want, got, f"{prim.name} {[str(a.dtype) for a in avals]}",
                    approx=prim.name in APPROX)


# ---- broadcasts, converts, chains, several outputs -----------------------------------------
def _broadcast_corpus(rng):
    f32 = np.float32
    x34 = rng.standard_normal((3, 4)).astype(f32)
    return [
        (lambda x, b: mt.numpy.exp(x) + b, (x34, rng.standard_normal(4).astype(f32))),
        (lambda x, b: x * b - 1.0, (rng.standard_normal((2, 3, 4)).astype(f32),
                                    rng.standard_normal((3, 1)).astype(f32))),
        (lambda x, s: mt.numpy.tanh(x * s), (x34, np.array(1.5, f32))),
        (lambda x: mt.numpy.broadcast_to(x, (2, 3, 4)) * 2.0, (x34,)),
        (lambda x: (x + 1.0).reshape(4, 3) * 3.0, (x34,)),
        (lambda x: mt.numpy.expand_dims(mt.numpy.sin(x), 1) + mt.numpy.ones((3, 5, 4), f32),
         (x34,)),
        (lambda x: mt.numpy.squeeze(x, 1) * 2.0, (rng.standard_normal((3, 1, 4)).astype(f32),)),
        (lambda x, y: x + y, (np.zeros((0, 4), f32), np.zeros((0, 4), f32))),
        (lambda x, y: x * 2.0 + y, (np.zeros((2, 0, 3), f32), np.zeros((3,), f32))),
        (lambda x: x + 1.0, (np.array(2.5, f32),)),
        (lambda x: lax.broadcasted_iota(np.int32, (3, 5), 1) * x, (np.int32(3),)),
        (lambda x: lax.broadcasted_iota(np.float32, (4, 3), 0) + x, (x34.T.copy(),)),
        (lambda x: (x > 0).astype(np.int8) * 3, (x34,)),
        (lambda x: (x.astype(np.float16) * 3.0).astype(np.float32) + x, (x34,)),
        (lambda x: (x.astype(dtypes.bfloat16) + 1.0).astype(np.int32), (x34 * 40,)),
        (lambda x: mt.numpy.where(x > 0, x, 0.1 * x) + (x * 3).astype(np.int32),
         (x34,)),
        (lambda x, y: (x + y, x * y, mt.numpy.maximum(x, y)),
         (x34, rng.standard_normal((3, 4)).astype(f32))),
        (lambda x: (lax.complex(x, -x) * (1.0 + 2.0j), mt.numpy.abs(x) - 1), (x34,)),
        (lambda x: (x.astype(np.uint8) >> 2) ^ np.uint8(0xA5), (np.abs(x34) * 50,)),
    ]


def test_broadcast_convert_and_multi_output_chains_match_numpy(runtime):
    rng = np.random.default_rng(1)
    cases = [(*trace(f, *args), args) for f, args in _broadcast_corpus(rng)]
    for steps in check_plans(runtime, cases):
        assert any(isinstance(s, fusion.Fused) for s in steps)


# ---- reductions ending a group --------------------------------------------------------------
REDUCTIONS = [
    (lambda x: mt.numpy.sum(mt.numpy.exp(x) * 2.0, axis=1), np.float32, (6, 70)),
    (lambda x: mt.numpy.sum(x * x, axis=0), np.float32, (50, 5)),
    (lambda x: mt.numpy.sum(x + 1.0, axis=(0, 2)), np.float64, (4, 3, 5)),
    (lambda x: mt.numpy.sum(x - 1.0, axis=-1), np.float16, (3, 200)),
    (lambda x: mt.numpy.sum(x * 2.0), BF16, (7, 9)),
    (lambda x: mt.numpy.max(mt.numpy.sin(x), axis=-2), np.float32, (3, 300, 2)),
    (lambda x: mt.numpy.min(x, axis=(1,)), np.int16, (4, 9)),
    (lambda x: mt.numpy.max(x + 3, axis=1), np.int64, (3, 100)),
    (lambda x: mt.numpy.prod(x * 0.5 + 1.0, axis=0), np.float32, (5, 4)),
    (lambda x: mt.numpy.sum(x * 3, axis=1), np.int32, (4, 500)),
    (lambda x: mt.numpy.sum(x, axis=1), np.uint8, (3, 90)),
    (lambda x: mt.numpy.all(x > 0, axis=0), np.float32, (70, 3)),
    (lambda x: mt.numpy.any(x > 1.5, axis=1), np.float32, (3, 7)),
    (lambda x: lax.reduce_xor(x, (1,)), np.uint32, (5, 6)),
    (lambda x: lax.reduce_and(x, (0,)), np.int8, (9, 4)),
    (lambda x: mt.numpy.sum(x * (1 + 1j), axis=1), np.complex64, (3, 80)),
    (lambda x: mt.numpy.sum(x, axis=1), np.float32, (4, 0)),
    (lambda x: mt.numpy.max(x, axis=1), np.float32, (0, 3)),
    (lambda x: mt.numpy.sum(x, axis=()), np.float32, (2, 3)),
]


@pytest.mark.parametrize("strategy", [None, "thread", "block"])
def test_reductions_ending_a_group_match_numpy(runtime, strategy, x64):
    rng = np.random.default_rng(2)
    xs = [values(dt, shape, rng) for _, dt, shape in REDUCTIONS]
    cases = [(*trace(f, x), [x]) for (f, _, _), x in zip(REDUCTIONS, xs, strict=True)]
    plans = check_plans(runtime, cases, reduce_strategy=strategy, reduce_block=32)
    fused = sum(s.kernel.strategy != "elementwise" for steps in plans for s in steps
                if isinstance(s, fusion.Fused))
    assert fused >= len(REDUCTIONS) - 2


def _arg_corpus(rng):
    ties = rng.integers(-3, 3, (6, 150)).astype(np.float32)   # many equal values
    ties[1, 40], ties[1, 7], ties[2, :] = np.nan, np.nan, 1.0  # first NaN wins; all equal
    ties[3, 149] = np.inf
    return [
        (lambda x: mt.numpy.argmax(x * 2.0, axis=1), ties),
        (lambda x: mt.numpy.argmin(x - 1.0, axis=1), ties),
        (lambda x: mt.numpy.argmax(x, axis=0), ties.astype(np.float16)),
        (lambda x: mt.numpy.argmin(mt.numpy.abs(x), axis=0), ties.astype(dtypes.bfloat16)),
        (lambda x: mt.numpy.argmax(x + 1, axis=1), rng.integers(0, 4, (5, 90), np.int8)),
        (lambda x: mt.numpy.argmin(x, axis=-1), rng.integers(0, 2, (3, 70)).astype(np.bool_)),
        (lambda x: lax.argmax(x, 1, np.int32) + 1, rng.integers(0, 9, (4, 3), np.uint16)),
    ]


@pytest.mark.parametrize("strategy", ["thread", "block"])
def test_argmax_and_argmin_ending_a_group_match_numpy(runtime, strategy):
    cases = [(*trace(f, x), [x]) for f, x in _arg_corpus(np.random.default_rng(11))]
    plans = check_plans(runtime, cases, reduce_strategy=strategy, reduce_block=64)
    fused = [s for steps in plans for s in steps if isinstance(s, fusion.Fused)
             and s.eqns[-1].primitive.name in ("argmax", "argmin")]
    assert len(fused) == len(cases)


def test_softmax_group_stores_its_elementwise_value_beside_the_sum(runtime):
    def softmax(x):
        e = mt.numpy.exp(x - mt.numpy.max(x, axis=1, keepdims=True))
        return e / mt.numpy.sum(e, axis=1, keepdims=True)

    x = np.random.default_rng(3).standard_normal((5, 130)).astype(np.float32)
    jaxpr, consts = trace(softmax, x)
    steps = check_plan(runtime, jaxpr, consts, [x])
    fused = [s for s in steps if isinstance(s, fusion.Fused)]
    both = [s for s in fused if len(s.outvars) == 2]
    assert both and {v.aval.shape for v in both[0].outvars} == {(5, 130), (5,)}
    assert both[0].kernel.strategy == "block" and "__syncthreads" in both[0].kernel.source


# ---- launch shapes and index widths -------------------------------------------------------
def test_grid_stride_loops_cover_everything_with_one_block(runtime):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((33, 70)).astype(np.float32)
    cases = [(*trace(f, x), [x]) for f in (
        lambda x: mt.numpy.tanh(x) * 2.0 + 1.0, lambda x: x[:, :69] * 3.0,
        lambda x: mt.numpy.sum(x * x, axis=1), lambda x: mt.numpy.sum(x, axis=0))]
    for strategy in ("thread", "block"):
        check_plans(runtime, cases, grid=1, reduce_strategy=strategy, reduce_block=16)


def test_64_bit_indices_forced_on_a_small_size_and_chosen_above_2_31(runtime):
    x = np.random.default_rng(5).standard_normal((6, 45)).astype(np.float32)
    cases = [(*trace(f, x), [x]) for f in (
        lambda x: mt.numpy.exp(x) + mt.numpy.sum(x, axis=0), lambda x: x.T * 2.0 + 1.0,
        lambda x: mt.numpy.sum(mt.numpy.cos(x), axis=1))]
    for steps in check_plans(runtime, cases, index64=True):
        for s in steps:
            if isinstance(s, fusion.Fused):
                assert s.kernel.index64 and "long long i" in s.kernel.source.replace(
                    "long long j", "long long i").replace("long long o", "long long i")
                assert " int i " not in s.kernel.source
    big = ShapedArray((2, 2**30 + 5), np.float32)
    assert fusion.elementwise_kernel(ew.exp_p, [big], {}).index64
    small = ShapedArray((2**30,), np.float32)
    kernel = fusion.elementwise_kernel(ew.exp_p, [small], {})
    assert not kernel.index64 and "long long" not in kernel.source
    reduce = trace(lambda x: mt.numpy.sum(x, axis=1),
                   np.zeros((1, 1), np.float32))[0].eqns[0]
    eqn = reduce.replace(invars=[Var(ShapedArray((3, 2**30), np.float32))],
                         outvars=[Var(ShapedArray((3,), np.float32))])
    assert codegen.FusedKernel([eqn], eqn.invars, eqn.outvars).index64


@settings(max_examples=8, deadline=None)
@given(data=st.data())
def test_broadcast_chains_of_random_shapes_match_numpy(runtime, data):
    rank = data.draw(st.integers(0, 3))
    shape = tuple(data.draw(st.lists(st.integers(0, 5), min_size=rank, max_size=rank)))
    other = tuple(d if data.draw(st.booleans()) else 1 for d in shape)
    cut = data.draw(st.integers(0, rank))
    rng = np.random.default_rng(6)
    x = rng.standard_normal(shape).astype(np.float32)
    y = rng.standard_normal(other[cut:]).astype(np.float32)
    drawn = data.draw(st.lists(st.integers(0, rank - 1), max_size=2)) if rank else []
    axes = tuple(a - rank if a % 2 else a for a in sorted(set(drawn)))  # some negative

    def f(x, y):
        z = mt.numpy.exp(x * 0.5) - y
        return z, mt.numpy.sum(z * z, axis=axes)

    jaxpr, consts = trace(f, x, y)
    check_plan(runtime, jaxpr, consts, [x, y])


# ---- the example models' jit training steps ----------------------------------------------
def _inner(closed):
    """The jaxpr inside a traced jit call (the whole jaxpr when there is none)."""
    eqns = closed.jaxpr.eqns
    if len(eqns) == 1 and eqns[0].primitive.name in ("jit", "pjit"):
        (inner,) = list(sub_jaxprs(eqns[0].params))
        inner = getattr(inner, "jaxpr", inner)
        return inner, getattr(list(sub_jaxprs(eqns[0].params))[0], "consts", [])
    return closed.jaxpr, closed.consts


def _check_step(runtime, step, args):
    closed = mt.make_jaxpr(step)(*args)
    jaxpr, consts = _inner(closed)
    flat = [x._buf if hasattr(x, "_buf") else x for x in mt.tree_util.tree_leaves(args)]
    steps = check_plan(runtime, jaxpr, consts, flat)
    fused = [s for s in steps if isinstance(s, fusion.Fused)]
    assert len(fused) >= 5
    assert sum(len(s.eqns) for s in fused) > 2 * len(fused)  # groups, not single equations
    return steps


def test_digits_mlp_training_step_groups_match_numpy(runtime):
    from tests.examples.test_examples import load

    mnist = load("mnist_mlp")
    key = mt.random.key(0)
    model = mnist.Classifier(64, 10, 32, 2, 0.1, key=key)
    optimizer = mt.optim.adam(1e-3)
    step, _ = mnist.make_steps(optimizer, 0.1)
    rng = np.random.default_rng(7)
    x = rng.random((16, 64)).astype(np.float32)
    y = rng.integers(0, 10, 16).astype(np.int32)
    _check_step(runtime, step, (model, optimizer.init(model), x, y, key))


@pytest.mark.parametrize("policy", ["float32", "params=float32,compute=bfloat16,output=float32"])
def test_char_gpt_training_step_groups_match_numpy(runtime, policy):
    from tests.examples.test_examples import load

    gpt = load("gpt_char")
    model = gpt.GPT(17, 8, 16, 2, 1, key=mt.random.key(1))
    args = gpt.parse_args(["--steps", "10"])
    optimizer = gpt.make_optimizer(args)
    step, _ = gpt.make_steps(optimizer, mt.mixed_precision.get_policy(policy))
    rng = np.random.default_rng(8)
    x = rng.integers(0, 17, (4, 8)).astype(np.int32)
    y = rng.integers(0, 17, (4, 8)).astype(np.int32)
    _check_step(runtime, step, (model, optimizer.init(model), x, y))


def test_long_reductions_with_few_outputs_get_wide_blocks(runtime):
    x = np.random.default_rng(9).standard_normal((2, 65536)).astype(np.float32)
    jaxpr, consts = trace(lambda x: mt.numpy.sum(mt.numpy.abs(x), axis=1), x)
    (steps,) = check_plans(runtime, [(jaxpr, consts, [x])])
    (step,) = steps
    assert step.kernel.strategy == "block" and step.kernel.block == 1024
    assert "sdata[1024]" in step.kernel.source


# ---- random programs: fusable and non-fused operations interleaved ------------------------
def _apply(op, pool, a, b):
    """One operation of a random program on pool values `a` and `b` (pool indices)."""
    x, y = pool[a % len(pool)], pool[b % len(pool)]
    if op == "unary":
        return mt.numpy.tanh(x) * 1.5
    if op == "binary":
        return x * y if x.shape == y.shape else x + 0.5
    if op == "scalar":
        return x * mt.numpy.sum(y) * 0.01
    if op == "broadcast":
        return x[..., None] + mt.numpy.ones((*x.shape, 3), np.float32) if x.ndim < 3 else x
    if op == "sum":
        return mt.numpy.sum(x, axis=-1) if x.ndim else x - 1.0
    if op == "reshape":
        return x.reshape(-1)[::-1] * 2.0 if x.ndim else x
    if op == "transpose":
        return x.T + 1.0
    if op == "cumsum":
        return mt.numpy.cumsum(x, axis=-1) if x.ndim else x
    if op == "convert":
        return x.astype(np.float16).astype(np.float32) + (x > 0).astype(np.float32)
    if op == "where":
        return mt.numpy.where(x > y.mean(), x, -x) if x.ndim else x
    if op == "max":
        return mt.numpy.max(x, axis=0) if x.ndim else x
    if op == "rowscale":
        return x / (1.0 + mt.numpy.exp(mt.numpy.sum(x * x, axis=-1, keepdims=True))) \
            if x.ndim else x
    return x @ x.T if x.ndim == 2 else x * x


OPS = ["unary", "binary", "scalar", "broadcast", "sum", "reshape", "transpose", "cumsum", "dot",
       "convert", "where", "max", "rowscale"]


@settings(max_examples=12, deadline=None)
@given(program=st.lists(st.tuples(st.sampled_from(OPS), st.integers(0, 20), st.integers(0, 20)),
                        min_size=3, max_size=12),
       outs=st.lists(st.integers(0, 20), min_size=1, max_size=3))
def test_random_programs_plan_and_run_like_numpy(runtime, program, outs):
    def f(x, v):
        pool = [x, v]
        for op, a, b in program:
            pool.append(_apply(op, pool, a, b))
        return [pool[i % len(pool)] for i in outs] + [pool[-1]]

    rng = np.random.default_rng(10)
    args = [rng.standard_normal((3, 4)).astype(np.float32),
            rng.standard_normal(4).astype(np.float32)]
    jaxpr, consts = trace(f, *args)
    (steps,) = check_plans(runtime, [(jaxpr, consts, args)])
    defined = set(jaxpr.invars) | set(jaxpr.constvars)
    for s in steps:  # every step reads values defined by earlier steps
        reads = s.invars if isinstance(s, fusion.Fused) else s.eqn.invars
        assert all(type(v) is not Var or v in defined for v in reads)
        defined |= set(s.outvars if isinstance(s, fusion.Fused) else s.eqn.outvars)
    assert all(type(v) is not Var or v in defined for v in jaxpr.outvars)


def test_vector_loops_leave_the_last_elements_to_a_scalar_loop(runtime):
    rng = np.random.default_rng(12)
    x = rng.standard_normal((3, 1367)).astype(np.float32)   # 4101 = 4 * 1025 + 1
    b = rng.standard_normal(1367).astype(np.float16)
    cases = [(*trace(lambda x, b: (x * 2.0 + b.astype(np.float32), (x > 0).astype(np.int8)),
                     x, b), [x, b])]
    (steps,) = check_plans(runtime, cases)
    (step,) = [s for s in steps if isinstance(s, fusion.Fused)]
    assert step.kernel.vec == 4 and "the last 1 elements" in step.kernel.source
    (steps,) = check_plans(runtime, cases, grid=1)
