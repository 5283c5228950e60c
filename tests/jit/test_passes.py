"""The jaxpr optimisation passes (inline, DCE, CSE, constant folding, simplification and
the `optimize` pipeline): each keeps the program's values on random programs (against the
unoptimised jaxpr and NumPy), type-checks, leaves its input untouched, and does (or, where
it would be wrong, does not do) each rewrite."""

import time
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch.checkpoint import checkpoint_p, checkpoint_policies
from mytorch.core import dtypes, staging
from mytorch.core.ad_util import add_any_p, zeros_p
from mytorch.core.array import from_numpy
from mytorch.core.aval import ShapedArray
from mytorch.core.jaxpr import (
    ClosedJaxpr, DropVar, Jaxpr, JaxprEqn, Literal, Var, check_jaxpr, eval_jaxpr,
)
from mytorch.core import primitive as primitive_module
from mytorch.core.primitive import Primitive
from mytorch.core.source_info import SourceInfo
from mytorch.lax import elementwise as ew
from mytorch.lax import reductions as red
from mytorch.lax import structural as stl
from mytorch.transforms import optimize as opt
from mytorch.transforms.cse import cse
from mytorch.transforms.dce import dce_closed, dce_jaxpr
from mytorch.transforms.fold import fold_constants
from mytorch.transforms.inline import inline_calls
from mytorch.transforms.optimize import inline_early, optimize, unroll_warning
from mytorch.transforms.simplify import lossless, simplify
from tests.jit.random_programs import programs

F32, F16 = np.dtype(np.float32), np.dtype(np.float16)


# ---- test primitives ----------------------------------------------------------------------
EFFECTS = []
effect_p = Primitive("test_passes_effect")
effect_p.effectful = True
effect_p.def_abstract_eval(lambda x: x)
effect_p.def_lowering("cpu", lambda x: EFFECTS.append(np.array(x)) or x)

collective_p = Primitive("test_passes_collective", kind="collective")
collective_p.def_abstract_eval(lambda x: x)
collective_p.def_lowering("cpu", lambda x: x)

pair_p = Primitive("test_passes_pair", multiple_results=True)
pair_p.def_abstract_eval(lambda x, **_: [x, x])
pair_p.def_lowering("cpu", lambda x, **_: [x + 1, x * 2])

# Test-only primitives stay out of the registry, which other tests (every primitive has a
# jit case, a rule table) walk; binding a primitive does not need it.
for _p in (effect_p, collective_p, pair_p):
    primitive_module._REGISTRY.pop(_p.name, None)


# ---- building jaxprs by hand ------------------------------------------------------------
def lit(value, dtype=F32, weak=True):
    value = np.asarray(value, dtype)
    return Literal(from_numpy(value, weak_type=weak), ShapedArray((), dtype, weak))


class Builder:
    """Builds a ClosedJaxpr equation by equation (outputs typed by abstract evaluation)."""

    def __init__(self):
        self.invars, self.eqns, self.constvars, self.consts = [], [], [], []

    def arg(self, shape, dtype=F32, weak=False):
        self.invars.append(Var(ShapedArray(shape, dtype, weak)))
        return self.invars[-1]

    def const(self, value):
        value = from_numpy(np.asarray(value))
        self.constvars.append(Var(value.aval))
        self.consts.append(value)
        return self.constvars[-1]

    def __call__(self, prim, *ins, **params):
        avals = prim.abstract_eval(*[v.aval for v in ins], **params)
        outs = [Var(a) for a in avals]
        self.eqns.append(JaxprEqn(prim, ins, params, outs, None))
        return outs if prim.multiple_results else outs[0]

    def build(self, *outs):
        jaxpr = Jaxpr(self.constvars, self.invars, self.eqns, list(outs))
        return ClosedJaxpr(jaxpr, self.consts)


def run(closed, *args):
    return [np.asarray(x) for x in eval_jaxpr(closed.jaxpr, closed.consts,
                                              *[mnp.asarray(a) for a in args])]


def prims(closed):
    return [e.primitive.name for e in closed.eqns]


def snapshot(closed):
    """Everything a pass must not change in its input."""
    j = closed.jaxpr
    return (str(j), list(j.eqns), [list(e.invars) for e in j.eqns],
            [list(e.outvars) for e in j.eqns], [dict(e.params) for e in j.eqns],
            list(j.outvars), list(j.constvars), list(closed.consts))


def assert_same_values(got, want, rtol=1e-6, atol=1e-6):
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, g.dtype, w.shape, w.dtype)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


# ---- every pass on random programs --------------------------------------------------------
PASSES = {
    "inline": inline_calls,
    "inline_early": lambda c: inline_calls(c, inline_early),
    "dce": dce_closed,
    "dce_jaxpr": lambda c: ClosedJaxpr(dce_jaxpr(c.jaxpr), c.consts),
    "cse": cse,
    "fold": fold_constants,
    "simplify": simplify,
    "optimize": optimize,
}


@pytest.mark.parametrize("name", sorted(PASSES))
@settings(max_examples=20)
@given(program=programs(), seed=st.integers(0, 2 ** 16), special=st.booleans())
def test_pass_preserves_values_on_random_programs(name, program, seed, special):
    args = program.sample_args(np.random.default_rng(seed), special=special)
    closed = mt.make_jaxpr(program)(*args)
    before = snapshot(closed)
    out = PASSES[name](closed)
    assert snapshot(closed) == before, "the pass changed its input"
    check_jaxpr(out)
    assert [v.aval for v in out.jaxpr.invars] == [v.aval for v in closed.jaxpr.invars]
    assert [v.aval for v in out.jaxpr.outvars] == [v.aval for v in closed.jaxpr.outvars]
    want = run(closed, *args)
    assert_same_values(run(out, *args), want)
    assert_same_values(want, program.reference(*args), rtol=2e-4, atol=1e-5)


@settings(max_examples=15)
@given(program=programs(max_steps=10), seed=st.integers(0, 2 ** 16))
def test_optimize_never_grows_and_is_idempotent_in_size(program, seed):
    args = program.sample_args(np.random.default_rng(seed))
    closed = mt.make_jaxpr(program)(*args)
    once = optimize(closed)
    twice = optimize(once)
    assert len(twice.eqns) <= len(once.eqns)
    assert not any(e.primitive.inline_param for e in once.eqns)
    assert_same_values(run(twice, *args), run(closed, *args))


# ---- simplify -----------------------------------------------------------------------------
UNIT_CASES = [  # (primitive, unit, position of the unit)
    (ew.add_p, 0.0, 1), (ew.add_p, 0.0, 0), (ew.add_p, -0.0, 1), (ew.sub_p, 0.0, 1),
    (ew.mul_p, 1.0, 1), (ew.mul_p, 1.0, 0), (ew.div_p, 1.0, 1), (add_any_p, 0.0, 1),
]


@pytest.mark.parametrize("prim,unit,pos", UNIT_CASES)
@pytest.mark.parametrize("splat", [False, True])
def test_simplify_removes_units(prim, unit, pos, splat):
    b = Builder()
    x = b.arg((2, 3))
    u = lit(unit, weak=not splat and prim is not add_any_p)
    if splat or prim is add_any_p:
        u = b(stl.broadcast_in_dim_p, u, shape=(2, 3), broadcast_dimensions=())
    y = b(prim, *((x, u) if pos == 1 else (u, x)))
    z = b(ew.sin_p, y)
    closed = b.build(z, y)
    out = dce_closed(simplify(closed))
    assert prims(out) == ["sin"] and out.jaxpr.outvars[1] is x
    assert out.jaxpr.eqns[0].invars == [x]
    xv = np.array([[1.5, -2.0, 0.25], [3.0, 0.0, -1.0]], np.float32)
    assert_same_values(run(out, xv), run(closed, xv))


def test_simplify_keeps_units_on_the_wrong_side():
    b = Builder()
    x = b.arg((3,))
    y = b(ew.sub_p, lit(0.0), x)  # 0 - x is -x, not x
    z = b(ew.div_p, lit(1.0), x)  # 1 / x
    assert len(simplify(b.build(y, z)).eqns) == 2


@pytest.mark.parametrize("unit", [0.0, -0.0])
def test_simplify_keeps_mul_by_zero(unit):
    b = Builder()
    x = b.arg((3,))
    closed = b.build(b(ew.mul_p, x, lit(unit)))
    out = optimize(closed)
    assert prims(out) == ["mul"]
    got = run(out, np.array([np.nan, np.inf, 2.0], np.float32))[0]
    assert np.isnan(got[0]) and np.isnan(got[1]) and got[2] == 0.0


def test_simplify_respects_types():
    b = Builder()
    x = b.arg((3,), weak=True)
    s = b.arg(())
    y = b(ew.mul_p, x, lit(1.0, weak=False))  # strong result: not x
    ones = b(stl.broadcast_in_dim_p, lit(1.0), shape=(3,), broadcast_dimensions=())
    z = b(ew.mul_p, s, ones)  # f32[3], not the 0-d s
    w = b(ew.add_p, s, lit(0.0))  # f32[] strong = s's type: simplified
    out = simplify(b.build(y, z, w))
    assert prims(out) == ["mul", "broadcast_in_dim", "mul"]
    assert out.jaxpr.outvars[2] is s


def test_simplify_neg_neg():
    b = Builder()
    x = b.arg((3,))
    n1 = b(ew.neg_p, x)
    n2 = b(ew.neg_p, n1)
    n3 = b(ew.neg_p, n2)
    out = dce_closed(simplify(b.build(n2, n3)))
    assert out.jaxpr.outvars[0] is x and prims(out) == ["neg"]


def test_simplify_integer_pow_one():
    b = Builder()
    x = b.arg((3,))
    p1 = b(ew.integer_pow_p, x, y=1)
    p2 = b(ew.integer_pow_p, p1, y=2)
    out = dce_closed(simplify(b.build(p1, p2)))
    assert out.jaxpr.outvars[0] is x and prims(out) == ["integer_pow"]
    x_np = np.array([1.5, -2.0, 3.0], np.float32)
    np.testing.assert_array_equal(np.asarray(out(x_np)[1]), x_np ** 2)


@settings(max_examples=20)
@given(st.data())
def test_simplify_composes_transposes(data):
    shape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=4)))
    perms = data.draw(st.lists(st.permutations(range(len(shape))), min_size=1, max_size=4))
    b = Builder()
    x = b.arg(shape)
    y = x
    for p in perms:
        y = b(stl.transpose_p, y, permutation=tuple(p))
    closed = b.build(y)
    out = dce_closed(simplify(closed))
    composed = np.arange(len(shape))
    for p in perms:
        composed = composed[list(p)]
    identity = list(composed) == list(range(len(shape)))
    assert prims(out) == ([] if identity else ["transpose"])
    xv = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    assert_same_values(run(out, xv), run(closed, xv))
    assert_same_values(run(out, xv), [np.transpose(xv, composed)])


def test_simplify_reshapes():
    b = Builder()
    x = b.arg((2, 3, 4))
    r1 = b(stl.reshape_p, x, new_sizes=(6, 4), dimensions=None)
    r2 = b(stl.reshape_p, r1, new_sizes=(24,), dimensions=None)
    r3 = b(stl.reshape_p, r2, new_sizes=(2, 3, 4), dimensions=None)  # back to x
    t1 = b(stl.reshape_p, x, new_sizes=(4, 6), dimensions=(2, 0, 1))
    t2 = b(stl.reshape_p, t1, new_sizes=(24,), dimensions=None)  # keeps the dimensions
    same = b(stl.reshape_p, x, new_sizes=(2, 3, 4), dimensions=(0, 1, 2))
    closed = b.build(r2, r3, t2, same)
    out = dce_closed(simplify(closed))
    assert prims(out) == ["reshape", "reshape"]
    assert out.jaxpr.outvars[1] is x and out.jaxpr.outvars[3] is x
    assert out.jaxpr.eqns[1].params["dimensions"] == (2, 0, 1)
    xv = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    assert_same_values(run(out, xv), run(closed, xv))
    assert_same_values(run(out, xv)[2:3], [np.transpose(xv, (2, 0, 1)).reshape(-1)])


def test_simplify_identities_and_broadcasts():
    b = Builder()
    x = b.arg((2, 3))
    outs = [
        b(stl.transpose_p, x, permutation=(0, 1)),
        b(stl.broadcast_in_dim_p, x, shape=(2, 3), broadcast_dimensions=(0, 1)),
        b(stl.squeeze_p, x, dimensions=()),
        b(red.reduce_sum_p, x, axes=()),
        b(red.reduce_max_p, x, axes=()),
        b(stl.rev_p, x, dimensions=()),
        b(stl.slice_p, x, start_indices=(0, 0), limit_indices=(2, 3), strides=None),
        b(stl.pad_p, x, lit(0.0, weak=False), padding_config=((0, 0, 0), (0, 0, 0))),
        b(stl.concatenate_p, x, dimension=0),
        b(ew.convert_element_type_p, x, new_dtype=F32, weak_type=False),
        b(ew.select_n_p, b(ew.gt_p, x, lit(0.0)), x, x),
    ]
    out = dce_closed(simplify(b.build(*outs)))
    assert out.eqns == [] and all(v is x for v in out.jaxpr.outvars)

    b = Builder()
    x = b.arg((3,))
    y = b(stl.broadcast_in_dim_p, x, shape=(1, 3), broadcast_dimensions=(1,))
    z = b(stl.broadcast_in_dim_p, y, shape=(2, 4, 3), broadcast_dimensions=(1, 2))
    kept = b(ew.convert_element_type_p, x, new_dtype=F32, weak_type=True)  # weak changes
    closed = b.build(z, kept)
    out = dce_closed(simplify(closed))
    assert prims(out) == ["broadcast_in_dim", "convert_element_type"]
    assert out.eqns[0].params["broadcast_dimensions"] == (2,)
    assert_same_values(run(out, np.arange(3, dtype=np.float32)),
                       run(closed, np.arange(3, dtype=np.float32)))


CONVERT_CHAINS = [  # (source, middle, target, simplified number of converts)
    (F16, F32, F16, 0), (F32, F16, F32, 2), (np.int8, np.int32, F32, 1),
    (np.int32, F32, np.int32, 2), (np.bool_, F16, F32, 1), (np.uint8, F16, np.int32, 1),
    (np.int16, F16, F32, 2), (F32, np.int32, F32, 2),
]


@pytest.mark.parametrize("src,mid,dst,n", CONVERT_CHAINS)
def test_simplify_convert_chains_only_when_exact(src, mid, dst, n):
    b = Builder()
    x = b.arg((5,), np.dtype(src))
    y = b(ew.convert_element_type_p, x, new_dtype=np.dtype(mid), weak_type=False)
    z = b(ew.convert_element_type_p, y, new_dtype=np.dtype(dst), weak_type=False)
    closed = b.build(z)
    out = dce_closed(simplify(closed))
    assert len(out.eqns) == n
    if np.dtype(src).kind == "f":
        xv = np.array([0.1, -1.0, 3.3e4, 65504.0, 1e-3], src)
    elif np.dtype(src).kind == "b":
        xv = np.array([True, False, True, True, False])
    else:
        info = np.iinfo(src)
        xv = np.array([0, 1, 7, info.max, info.min], src)
    assert_same_values(run(out, xv), run(closed, xv), rtol=0, atol=0)


def test_lossless_table():
    assert lossless(np.int16, np.float32) and not lossless(np.int32, np.float32)
    assert not lossless(np.int64, np.float64) and lossless(np.uint8, np.float16)
    assert lossless(dtypes.bfloat16, np.float32) and not lossless(np.float16, dtypes.bfloat16)
    assert not lossless(np.float32, np.int32) and not lossless(np.int32, np.bool_)


# ---- constant folding ---------------------------------------------------------------------
def test_fold_literals_and_consts():
    b = Builder()
    x = b.arg((3,))
    c = b.const(np.array([1.0, 2.0, 3.0], np.float32))
    s = b(ew.add_p, lit(1.0), lit(2.0))  # 3.0: a Literal
    t = b(ew.mul_p, s, lit(2.0))  # 6.0
    cc = b(ew.mul_p, c, t)  # a new constant [6, 12, 18]
    y = b(ew.add_p, x, cc)
    closed = b.build(y, t)
    out = dce_closed(fold_constants(closed))
    assert prims(out) == ["add"]
    assert type(out.jaxpr.outvars[1]) is Literal and float(out.jaxpr.outvars[1].val) == 6.0
    assert [np.asarray(k).tolist() for k in out.consts] == [[6.0, 12.0, 18.0]]
    xv = np.ones(3, np.float32)
    assert_same_values(run(out, xv), run(closed, xv))
    pair = fold_constants((closed.jaxpr, closed.consts))
    assert isinstance(pair, tuple) and len(pair[0].eqns) == 1 and len(pair[1]) == 2


def test_fold_keeps_splats_and_big_results_out_of_constants():
    b = Builder()
    x = b.arg((300, 400))
    big = b.const(np.ones((400, 300), np.float32))  # 120000 elements
    med = b.const(np.ones((200, 300), np.float32))
    one = b(stl.broadcast_in_dim_p, lit(1.0), shape=(300, 400), broadcast_dimensions=())
    two = b(ew.mul_p, one, lit(2.0))  # a splat of 2.0
    y = b(ew.mul_p, two, x)  # reads 2.0 directly
    idx = b(stl.iota_p, dtype=np.dtype(np.int32), shape=(1000,), dimension=0)
    z = b(ew.mul_p, big, lit(3.0))  # 120000 elements: too big to fold
    w = b(stl.transpose_p, med, permutation=(1, 0))  # 60000 elements: folded
    closed = b.build(y, idx, z, w)
    out = dce_closed(fold_constants(closed))
    # the iota has no operands: it is built once at compile time, not on every call
    assert prims(out) == ["mul", "mul"]
    assert [str(v) for v in out.eqns[0].invars[:1]] == ["Literal(2.0:f32[])"]
    assert sorted(np.shape(k) for k in out.consts) == [(300, 200), (400, 300), (1000,)]
    big_iota = b(stl.iota_p, dtype=np.dtype(np.int32), shape=(200_000,), dimension=0)
    assert prims(dce_closed(fold_constants(b.build(big_iota)))) == ["iota"]  # past max_size
    xv = np.random.default_rng(0).standard_normal((300, 400)).astype(np.float32)
    assert_same_values(run(out, xv), run(closed, xv))


def test_fold_small_expansion_and_zeros():
    b = Builder()
    x = b.arg((4,))
    c = b.const(np.array([1.0, 2.0], np.float32))
    bc = b(stl.broadcast_in_dim_p, c, shape=(4, 2), broadcast_dimensions=(1,))  # 8 elements
    zero = b(zeros_p, shape=(4,), dtype=F32, weak_type=False)
    plus = b(ew.add_p, zero, lit(5.0))  # a splat of 5.0
    y = b(ew.mul_p, x, plus)
    closed = b.build(bc, y)
    out = dce_closed(fold_constants(closed))
    assert prims(out) == ["mul"] and out.jaxpr.outvars[0] in out.jaxpr.constvars
    assert_same_values(run(out, np.arange(4, dtype=np.float32)),
                       run(closed, np.arange(4, dtype=np.float32)))


def test_fold_keeps_splat_operands_where_a_literal_would_change_the_result():
    b = Builder()
    x = b.arg((4,))
    s = b.arg(())
    splat = b(stl.broadcast_in_dim_p, lit(3.0), shape=(4,), broadcast_dimensions=())
    sel = b(ew.select_n_p, b(ew.gt_p, x, lit(0.0)), splat, x)  # cases must be full-shaped
    m = b(ew.mul_p, splat, s)  # the only other operand is 0-d: the result would be too
    closed = b.build(sel, m)
    out = fold_constants(closed)
    check_jaxpr(out)
    assert [e.invars[1] for e in out.eqns if e.primitive is ew.select_n_p] == [splat]
    assert [e.invars[0] for e in out.eqns if e.primitive is ew.mul_p] == [splat]
    xv, sv = np.array([1.0, -2.0, 0.5, -0.1], np.float32), np.float32(2.0)
    assert_same_values(run(out, xv, sv), [np.where(xv > 0, xv, 3.0), np.full(4, 6.0, np.float32)])


def test_fold_skips_effects_collectives_and_failures():
    b = Builder()
    e = b(effect_p, lit(1.0))
    c = b(collective_p, lit(2.0))
    nan = b(ew.div_p, lit(0.0), lit(0.0))
    closed = b.build(e, c, nan)
    mt.config.update("debug_nans", True)
    try:
        out = fold_constants(closed)  # 0/0 would raise: left for run time
    finally:
        mt.config.update("debug_nans", False)
    assert prims(out) == ["test_passes_effect", "test_passes_collective", "div"]
    assert prims(fold_constants(closed)) == ["test_passes_effect", "test_passes_collective"]


# ---- CSE ----------------------------------------------------------------------------------
def test_cse_merges_chains_and_literals_by_value():
    b = Builder()
    x = b.arg((2, 3))
    s1, s2 = b(ew.sin_p, x), b(ew.sin_p, x)
    c1, c2 = b(ew.cos_p, s1), b(ew.cos_p, s2)
    a1, a2 = b(ew.add_p, c1, lit(1.0)), b(ew.add_p, c2, lit(1.0))
    m1, m2 = b(ew.add_p, c1, lit(0.0)), b(ew.add_p, c1, lit(-0.0))  # different bits
    w1, w2 = b(ew.add_p, c1, lit(2.0)), b(ew.add_p, c1, lit(2.0, weak=False))
    r1, r2 = b(red.reduce_sum_p, x, axes=(0,)), b(red.reduce_sum_p, x, axes=(1,))
    closed = b.build(a1, a2, m1, m2, w1, w2, r1, r2)
    out = cse(closed)
    assert prims(out).count("sin") == 1 and prims(out).count("cos") == 1
    assert len(out.eqns) == 9
    outs = out.jaxpr.outvars
    assert outs[0] is outs[1] and outs[2] is not outs[3] and outs[4] is not outs[5]
    xv = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert_same_values(run(out, xv), run(closed, xv))


def test_cse_params_by_value_or_identity():
    b = Builder()
    x = b.arg((3,))
    arr = np.array([1, 2])
    p1 = b(pair_p, x, k=(1, (2, 3)), a=arr, d=F32)
    p2 = b(pair_p, x, k=(1, (2, 3)), a=arr, d=np.dtype("float32"))  # equal values: merged
    p3 = b(pair_p, x, k=(1, (2, 3)), a=arr.copy(), d=F32)  # unhashable: identity only
    p4 = b(pair_p, x, k=(1, (2, 3.0)), a=arr, d=F32)  # 3 vs 3.0: different types
    out = cse(b.build(*p1, *p2, *p3, *p4))
    assert len(out.eqns) == 3
    o = out.jaxpr.outvars
    assert o[2] is o[0] and o[3] is o[1] and o[4] is not o[0] and o[6] is not o[0]


def test_cse_never_merges_effects_or_remat_and_respects_dropped_outputs():
    b = Builder()
    x = b.arg((3,))
    e1, e2 = b(effect_p, x), b(effect_p, x)
    body = mt.make_jaxpr(lambda t: mnp.sin(t))(np.ones(3, np.float32)).jaxpr
    k1 = b(checkpoint_p, x, jaxpr=body, policy=checkpoint_policies.nothing_saveable,
           prevent_cse=True)
    k2 = b(checkpoint_p, x, jaxpr=body, policy=checkpoint_policies.nothing_saveable,
           prevent_cse=True)
    f1 = b(checkpoint_p, x, jaxpr=body, policy=None, prevent_cse=False)
    f2 = b(checkpoint_p, x, jaxpr=body, policy=None, prevent_cse=False)
    dropped = b(pair_p, x)
    b.eqns[-1] = b.eqns[-1].replace(outvars=[dropped[0], DropVar(x.aval)])
    used = b(pair_p, x)
    out = cse(b.build(e1, e2, *k1, *k2, *f1, *f2, dropped[0], used[1]))
    assert prims(out) == ["test_passes_effect"] * 2 + ["checkpoint"] * 3 + ["test_passes_pair"] * 2


# ---- DCE ----------------------------------------------------------------------------------
def test_dce_keeps_effects_and_their_inputs():
    b = Builder()
    x = b.arg((3,))
    c = b.const(np.ones(3, np.float32))
    unused = b.const(np.zeros(3, np.float32))
    dead = b(ew.sin_p, unused)
    s = b(ew.cos_p, c)
    b(effect_p, b(ew.mul_p, s, x))  # result unused, effect needed
    y = b(ew.exp_p, x)
    closed = b.build(y)
    out = dce_closed(closed)
    assert dead is not None and prims(out) == ["cos", "mul", "test_passes_effect", "exp"]
    assert out.jaxpr.constvars == [c] and len(out.consts) == 1
    EFFECTS.clear()
    run(out, np.ones(3, np.float32))
    assert len(EFFECTS) == 1
    assert prims(ClosedJaxpr(dce_jaxpr(closed.jaxpr), closed.consts))[0] == "cos"


def test_calls_with_effects_inside_are_kept_and_not_merged():
    inner = Builder()
    t = inner.arg((3,))
    body = inner.build(inner(effect_p, inner(ew.sin_p, t))).jaxpr
    b = Builder()
    x = b.arg((3,))
    for _ in range(2):
        b(checkpoint_p, x, jaxpr=body, policy=None, prevent_cse=False)  # results unused
    y = b(ew.cos_p, x)
    closed = b.build(y)
    out = dce_closed(cse(closed))
    assert prims(out) == ["checkpoint", "checkpoint", "cos"]
    EFFECTS.clear()
    run(optimize(closed), np.zeros(3, np.float32))
    assert len(EFFECTS) == 2


def test_dce_does_not_recurse():
    def f(x):
        mnp.cos(x)  # dead inside the checkpoint
        return mnp.sin(x)

    closed = mt.make_jaxpr(mt.checkpoint(f))(np.ones(3, np.float32))
    out = dce_closed(closed)
    assert out.eqns[0].params["jaxpr"] is closed.eqns[0].params["jaxpr"]


# ---- inlining -----------------------------------------------------------------------------
def _nested(x):
    inner = mt.checkpoint(lambda t: mnp.logaddexp(t, 2.0 * t) * mnp.sin(t))
    # (not `** 2` of the result: grad of a nonlinear use of a nested checkpoint's output
    # fails, since partial_eval_jaxpr does not split nested checkpoints; reported)
    return mnp.sum(mt.checkpoint(lambda t: inner(t) + mnp.tanh(t))(x))


def _count_calls(jaxpr):
    n = 0
    for e in jaxpr.eqns:
        if e.primitive.inline_param:
            n += 1 + _count_calls(e.params[e.primitive.inline_param])
    return n


@pytest.mark.parametrize("under_grad", [False, True])
def test_inline_nested_calls(under_grad):
    xv = np.linspace(-1, 1, 5).astype(np.float32)
    fn = mt.grad(_nested) if under_grad else _nested
    closed = mt.make_jaxpr(fn)(xv)
    assert "checkpoint" in prims(closed)
    assert _count_calls(closed.jaxpr) >= (2 if under_grad else 3)  # nested: ckpt(ckpt(jvp))
    before = snapshot(closed)
    out = inline_calls(closed)
    assert snapshot(closed) == before
    assert _count_calls(out.jaxpr) == 0
    check_jaxpr(out)
    assert_same_values(run(out, xv), run(closed, xv))
    assert_same_values(run(out, xv), [np.asarray(fn(mnp.asarray(xv)))])
    early = inline_calls(closed, inline_early)
    assert "custom_jvp_call" not in prims(early) and "checkpoint" in prims(early)
    assert_same_values(run(early, xv), run(closed, xv))


def test_inline_outputs_that_are_inputs_or_literals():
    inner_x = Var(ShapedArray((3,), F32))
    two = lit(2.0)
    callee = Jaxpr([], [inner_x], [], [inner_x, two])  # returns its input and a literal
    b = Builder()
    x = b.arg((3,))
    y = b(ew.sin_p, x)
    o1, o2 = b(checkpoint_p, y, jaxpr=callee, policy=None, prevent_cse=False)
    p1, p2 = b(checkpoint_p, o1, jaxpr=callee, policy=None, prevent_cse=False)  # twice
    z = b(ew.mul_p, p1, o2)
    closed = b.build(z, o1, o2, p2)
    out = inline_calls(closed)
    check_jaxpr(out)
    assert prims(out) == ["sin", "mul"]
    assert out.jaxpr.outvars[1] is y and type(out.jaxpr.outvars[2]) is Literal
    assert out.eqns[1].invars[0] is y
    xv = np.arange(3, dtype=np.float32)
    assert_same_values(run(out, xv), [np.sin(xv) * 2, np.sin(xv), np.float32(2.0),
                                      np.float32(2.0)])


def test_inline_same_callee_twice_gets_fresh_names():
    body = mt.make_jaxpr(lambda t: mnp.exp(mnp.sin(t)))(np.ones(3, np.float32)).jaxpr
    b = Builder()
    x = b.arg((3,))
    (y,) = b(checkpoint_p, x, jaxpr=body, policy=None, prevent_cse=True)
    (z,) = b(checkpoint_p, y, jaxpr=body, policy=None, prevent_cse=True)
    closed = b.build(z)
    out = inline_calls(closed)
    check_jaxpr(out)
    assert prims(out) == ["sin", "exp", "sin", "exp"]
    xv = np.arange(3, dtype=np.float32)
    assert_same_values(run(out, xv), [np.exp(np.sin(np.exp(np.sin(xv))))])


def test_inline_hoists_constants_of_closed_callees():
    w = np.array([1.0, 2.0, 3.0], np.float32)
    callee = mt.make_jaxpr(lambda t: t * w)(np.ones(3, np.float32))
    assert len(callee.consts) == 1
    b = Builder()
    x = b.arg((3,))
    (y,) = b(checkpoint_p, x, jaxpr=callee, policy=None, prevent_cse=False)
    closed = b.build(y)
    out = inline_calls(closed)
    assert prims(out) == ["mul"] and len(out.consts) == 1
    assert_same_values(run(out, w), [w * w])
    assert prims(ClosedJaxpr(inline_calls(closed.jaxpr), [])) == ["checkpoint"]


# ---- the pipeline -------------------------------------------------------------------------
def test_optimize_keeps_checkpoint_recomputation_apart():
    f = mt.checkpoint(lambda t: mnp.sin(mnp.sin(t)))
    xv = np.linspace(-1, 1, 4).astype(np.float32)
    closed = mt.make_jaxpr(mt.value_and_grad(lambda x: mnp.sum(f(x))))(xv)
    merged = dce_closed(cse(inline_calls(closed)))
    out = optimize(closed)
    assert _count_calls(out.jaxpr) == 0
    assert prims(out).count("sin") > prims(merged).count("sin")  # recomputed, not reused
    want = [np.sum(np.sin(np.sin(xv))), np.cos(np.sin(xv)) * np.cos(xv)]
    assert_same_values(run(out, xv), want, rtol=1e-5)


def _mlp_step():
    rng = np.random.default_rng(0)
    sizes = [16, 32, 32, 32, 32, 32, 4]
    params = [(rng.standard_normal((a, b)).astype(np.float32) * 0.3,
               np.zeros(b, np.float32)) for a, b in zip(sizes[:-1], sizes[1:])]
    x = rng.standard_normal((8, 16)).astype(np.float32)
    y = rng.standard_normal((8, 4)).astype(np.float32)

    def loss(params, x, y):
        h = x
        for i, (w, b) in enumerate(params):
            h = h @ w + b
            if i < len(params) - 1:
                h = mnp.tanh(h) if i % 2 else mnp.maximum(h, 0.0)
        return mnp.mean((h - y) ** 2) + 1e-4 * sum(mnp.sum(w * w) for w, _ in params)

    def step(params, x, y):
        value, grads = mt.value_and_grad(loss)(params, x, y)
        new = [(w - 0.01 * gw, b - 0.01 * gb) for (w, b), (gw, gb) in zip(params, grads)]
        return value, new

    args = (params, x, y)
    return mt.make_jaxpr(step)(*args), mt.tree_util.tree_leaves(args)


def test_optimize_mlp_training_step_is_fast_and_exact():
    closed, leaves = _mlp_step()
    out = optimize(closed)
    assert len(out.eqns) < len(closed.eqns)
    assert_same_values(run(out, *leaves), run(closed, *leaves), rtol=1e-6, atol=1e-7)
    times = []
    for _ in range(5):
        start = time.perf_counter()
        optimize(closed)
        times.append(time.perf_counter() - start)
    assert min(times) < 0.05, f"optimize took {min(times) * 1e3:.1f} ms on {len(closed.eqns)}"


def test_optimize_checks_when_asked(monkeypatch):
    calls = []
    monkeypatch.setattr(opt, "check_jaxpr", calls.append)
    closed = mt.make_jaxpr(lambda x: mnp.sin(x) * 1.0)(np.ones(3, np.float32))
    monkeypatch.setattr(staging, "CHECK_EVERY_JAXPR", True)
    out = optimize(closed)
    monkeypatch.setattr(staging, "CHECK_EVERY_JAXPR", False)
    optimize(closed)
    assert calls == [out]
    with pytest.raises(TypeError, match="optimize needs a ClosedJaxpr"):
        optimize(closed.jaxpr)


# ---- unroll warnings ----------------------------------------------------------------------
def test_unroll_warning_names_the_line():
    def unrolled(x):
        for _ in range(1001):
            x = x * 1.01  # the line
        return x

    closed = mt.make_jaxpr(unrolled)(np.ones(3, np.float32))
    msg = unroll_warning(closed)
    line = unrolled.__code__.co_firstlineno + 2
    assert msg is not None and f"test_passes.py:{line}" in msg and "1001 equations" in msg
    assert "lax.fori_loop" in msg and "lax.scan" in msg and "unrolled" in msg
    with pytest.warns(UserWarning, match="fori_loop"):
        warnings.warn(msg)
    assert unroll_warning(closed, threshold=1001) is None
    def shorter(x):
        for _ in range(1000):
            x = x * 1.01
        return x

    assert unroll_warning(mt.make_jaxpr(shorter)(np.ones(3, np.float32))) is None


def test_unroll_warning_counts_inside_calls():
    info = SourceInfo("/somewhere/model.py", 7, "layer")
    x = Var(ShapedArray((), F32))
    eqns, v = [], x
    for _ in range(600):
        out = Var(x.aval)
        eqns.append(JaxprEqn(ew.sin_p, [v], {}, [out], info))
        v = out
    body = Jaxpr([], [x], eqns, [v])
    outer = [JaxprEqn(checkpoint_p, [x], dict(jaxpr=body, policy=None, prevent_cse=True),
                      [Var(x.aval)], info) for _ in range(2)]
    closed = ClosedJaxpr(Jaxpr([], [x], outer, [outer[0].outvars[0]]), [])
    msg = unroll_warning(closed)
    assert msg is not None and "model.py:7" in msg and "1202 equations" in msg
