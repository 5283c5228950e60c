"""The fusion plan (backends/cupy/fusion.py): which equations fuse, that every value read
later is stored, that dependences and effects keep their order; the generated source's
shape; and the CPU twin runtime's errors and caches."""

import shutil
import struct
import subprocess

import numpy as np
import pytest

import mytorch as mt
from mytorch import lax
from mytorch.backends.cupy import codegen, fusion
from mytorch.backends.cupy.codegen_emit import literal
from mytorch.backends.cupy import twin as twin_mod
from mytorch.core.aval import ShapedArray
from mytorch.core.jaxpr import Var
from mytorch.lax import elementwise as ew
from tests.backends.cupy import test_codegen_twin as corpus

F32 = np.float32


def plan_of(f, *args):
    jaxpr, _ = corpus.trace(f, *args)
    return jaxpr, fusion.plan(jaxpr)


def kinds(steps):
    return [("F", [e.primitive.name for e in s.eqns]) if isinstance(s, fusion.Fused)
            else ("E", s.eqn.primitive.name) for s in steps]


def check_dataflow(jaxpr, steps):
    """Every step reads only values defined before it (inputs, constants, earlier steps'
    stored outputs), and every jaxpr output is defined."""
    defined = set(jaxpr.invars) | set(jaxpr.constvars)
    planned = []
    for s in steps:
        eqns = s.eqns if isinstance(s, fusion.Fused) else [s.eqn]
        planned += eqns
        reads = s.invars if isinstance(s, fusion.Fused) else s.eqn.invars
        for v in reads:
            assert type(v) is not Var or v in defined, f"{kinds([s])} reads an undefined value"
        inner = {v for e in eqns for v in e.outvars}
        for e in eqns:  # inside a group, operands come from the group or its inputs
            for v in e.invars:
                assert type(v) is not Var or v in inner or v in defined or v in s.invars
        defined |= set(s.outvars if isinstance(s, fusion.Fused) else s.eqn.outvars)
    for v in jaxpr.outvars:
        assert type(v) is not Var or v in defined
    # an equation is planned once, unless it computes a 0-d value that several groups
    # compute for themselves (an inlined scalar)
    counts = {}
    for e in planned:
        counts[id(e)] = counts.get(id(e), 0) + 1
    for e in planned:
        assert counts[id(e)] == 1 or all(v.aval.shape == () for v in e.outvars), e


def test_a_chain_with_broadcast_and_trailing_sum_is_one_kernel():
    def f(x, b):
        y = mt.numpy.exp(x) + b
        return y * 2.0, mt.numpy.sum(y * y, axis=1)

    jaxpr, steps = plan_of(f, np.ones((3, 4), F32), np.ones(4, F32))
    assert kinds(steps) == [("F", ["exp", "broadcast_in_dim", "add", "mul", "mul",
                                   "reduce_sum"])]
    (step,) = steps
    assert [v.aval.shape for v in step.outvars] == [(3, 4), (3,)]
    assert step.outvars == jaxpr.outvars and step.invars == jaxpr.invars
    src = step.kernel.source
    for prim in ("exp", "broadcast_in_dim", "add", "mul", "reduce_sum"):
        assert f"/* {prim} */" in src
    assert src.count('extern "C" __global__') == 1 and step.kernel.name in src
    check_dataflow(jaxpr, steps)


def test_values_read_later_are_stored_and_intermediates_are_not():
    def f(x):
        a = mt.numpy.sin(x)
        b = a * 3.0          # only read inside the group
        c = b + 1.0
        return c, a @ x.T    # a is read by the dot after the group

    jaxpr, steps = plan_of(f, np.ones((3, 3), F32))
    fused = [s for s in steps if isinstance(s, fusion.Fused)]
    stored = {v.aval.str_short() for s in fused for v in s.outvars}
    assert len(fused[0].outvars) == 2 and "f32[3,3]" in stored
    b = next(e.outvars[0] for e in jaxpr.eqns if e.primitive is ew.mul_p)
    assert all(b not in s.outvars for s in fused)
    check_dataflow(jaxpr, steps)


def test_siblings_reading_one_input_share_a_kernel_even_after_a_reduction():
    def f(x, y):
        s = mt.numpy.sum(x * x, axis=1)
        return s, mt.numpy.tanh(x) + y, mt.numpy.exp(y)

    jaxpr, steps = plan_of(f, np.ones((3, 4), F32), np.ones((3, 4), F32))
    assert kinds(steps) == [("F", ["mul", "reduce_sum", "tanh", "add", "exp"])]
    assert [v.aval.shape for v in steps[0].outvars] == [(3,), (3, 4), (3, 4)]
    check_dataflow(jaxpr, steps)


def test_groups_are_capped_in_size():
    def f(lr, *xs):
        return [x * lr + 1.0 for x in xs]

    xs = [np.ones(4, F32)] * 150
    jaxpr, steps = plan_of(f, np.float32(0.1), *xs)
    sizes = [len(s.eqns) for s in steps]
    assert sum(sizes) == 300 and max(sizes) <= fusion.MAX_GROUP_EQNS and len(steps) == 2
    check_dataflow(jaxpr, steps)


def test_reduction_schedules_and_block_sizes_follow_the_extents():
    def schedule(shape, axis):
        jaxpr, steps = plan_of(lambda x: mt.numpy.sum(x, axis=axis), np.ones(shape, F32))
        return steps[0].kernel.strategy, steps[0].kernel.block

    assert schedule((100, 64), 1) == ("thread", 256)       # short rows
    assert schedule((100, 65), 1) == ("block", 128)        # no more threads than elements
    assert schedule((100, 1000), 1) == ("block", 256)
    assert schedule((3000, 2048), 0) == ("thread", 256)    # a column sum, many outputs
    assert schedule((4, 70000), 1) == ("block", 1024)      # few long rows


def test_a_dot_between_elementwise_ops_splits_the_chain_without_a_cycle():
    def f(x, w):
        a = mt.numpy.exp(x)
        return a + a @ w   # joining `a`'s group would need the dot before and after it

    jaxpr, steps = plan_of(f, np.ones((3, 3), F32), np.ones((3, 3), F32))
    assert [k[0] for k in kinds(steps)] == ["F", "E", "F"]
    assert steps[1].eqn.primitive.name == "dot_general"
    check_dataflow(jaxpr, steps)


def test_independent_producers_merge_into_their_consumer_group():
    def f(x, y):
        return mt.numpy.exp(x) * mt.numpy.log(y) + lax.broadcasted_iota(F32, (4, 5), 1)

    jaxpr, steps = plan_of(f, np.ones((4, 5), F32), np.ones((4, 5), F32))
    assert kinds(steps) == [("F", ["exp", "log", "mul", "iota", "add"])]


def test_values_of_other_shapes_and_reduction_results_start_new_groups():
    def f(x, y):
        s = mt.numpy.sum(mt.numpy.exp(x), axis=1)     # ends its group
        return mt.numpy.tanh(y) * 2.0, s * 3.0 + 1.0   # y has another shape

    jaxpr, steps = plan_of(f, np.ones((3, 4), F32), np.ones((5,), F32))
    groups = sorted(k[1] for k in kinds(steps))
    assert groups == [["exp", "reduce_sum"], ["mul", "add"], ["tanh", "mul"]]
    check_dataflow(jaxpr, steps)


def test_groups_read_only_by_other_groups_are_computed_inside_them():
    def f(x, v, s):
        y = (x + 1.0).reshape(4, 3) * 3.0        # [3,4] -> [4,3]: one kernel
        row = mt.numpy.exp(v)                     # [3], read only by the next group
        t = s * 2.0                               # 0-d, read by two groups
        return y * t, x * row[:, None] + t

    jaxpr, steps = plan_of(f, np.ones((3, 4), F32), np.ones(3, F32), np.float32(2))
    assert all(isinstance(st, fusion.Fused) for st in steps) and len(steps) == 2
    shapes = sorted(st.kernel.shape for st in steps)
    assert shapes == [(3, 4), (4, 3)]
    scalar = next(e for e in jaxpr.eqns if e.outvars[0].aval.shape == ())
    assert all(scalar in st.eqns for st in steps)   # computed by both
    assert all(len(st.outvars) == 1 for st in steps)
    check_dataflow(jaxpr, steps)


def test_a_reshape_read_by_a_non_fused_op_stays_an_equation():
    def f(x, w):
        return x.reshape(12) @ w, mt.numpy.expand_dims(x, 0) @ w.reshape(1, 4, 3)

    jaxpr, steps = plan_of(f, np.ones((3, 4), F32), np.ones(12, F32))
    assert not any(isinstance(s, fusion.Fused) for s in steps)
    assert {"reshape", "broadcast_in_dim", "dot_general"} <= {k[1] for k in kinds(steps)}
    check_dataflow(jaxpr, steps)


def test_transposes_and_unsupported_ops_are_not_fused():
    def f(x):
        return mt.numpy.cumsum(x.T * 2.0, axis=0), lax.reshape(x, (4, 3), (1, 0))

    jaxpr, steps = plan_of(f, np.ones((3, 4), F32))
    eqn_steps = {k[1] for k in kinds(steps) if k[0] == "E"}
    assert {"transpose", "cumsum", "reshape"} <= eqn_steps
    check_dataflow(jaxpr, steps)


def test_effectful_equations_never_fuse_and_keep_their_order(monkeypatch):
    monkeypatch.setattr(ew.exp_p, "effectful", True)
    monkeypatch.setattr(ew.log_p, "effectful", True)

    def f(x, y):
        a = mt.numpy.log(y) * 2.0
        b = mt.numpy.exp(x) * 3.0
        return a + 1.0, b

    jaxpr, steps = plan_of(f, np.ones(3, F32), np.ones(3, F32))
    order = [k[1] for k in kinds(steps) if k[0] == "E"]
    assert order == ["log", "exp"]
    for s in steps:
        if isinstance(s, fusion.Fused):
            assert all(not e.primitive.effectful for e in s.eqns)
    check_dataflow(jaxpr, steps)


def test_the_training_step_plan_keeps_every_value_it_needs():
    from tests.examples.test_examples import load

    gpt = load("gpt_char")
    model = gpt.GPT(17, 8, 16, 2, 1, key=mt.random.key(1))
    optimizer = gpt.make_optimizer(gpt.parse_args(["--steps", "10"]))
    step, _ = gpt.make_steps(optimizer, mt.mixed_precision.get_policy("float32"))
    ids = np.zeros((4, 8), np.int32)
    jaxpr, _ = corpus._inner(mt.make_jaxpr(step)(model, optimizer.init(model), ids, ids))
    steps = fusion.plan(jaxpr)
    check_dataflow(jaxpr, steps)
    fused = [s for s in steps if isinstance(s, fusion.Fused)]
    assert len(steps) < len(jaxpr.eqns) / 3
    assert max(len(s.eqns) for s in fused) >= 20


# ---- the generated source ------------------------------------------------------------------
def test_module_source_holds_the_prelude_once_and_each_kernel_once():
    k1 = fusion.elementwise_kernel(ew.exp_p, [ShapedArray((4,), F32)], {})
    k2 = fusion.elementwise_kernel(ew.exp_p, [ShapedArray((4,), F32)], {})
    k3 = fusion.elementwise_kernel(ew.add_p, [ShapedArray((4,), F32)] * 2, {})
    assert k1.name == k2.name != k3.name and k1.name.startswith("mt_exp_")
    src = codegen.module_source([k1, k2, k3])
    assert src.count(f"void {k1.name}(") == 1 and src.count("mt_vec {") == 1
    assert codegen.signatures([k1, k3]) == {k1.name: ("ptr", "ptr"),
                                            k3.name: ("ptr", "ptr", "ptr")}


def test_literals_are_exact_constants():
    assert literal(0.1, F32) == "mt_f32_from(0x3dcccccdu)"
    assert literal(-np.inf, np.float64) == "mt_f64_from(0xfff0000000000000ULL)"
    assert literal(-1, np.int64) == ("((long long)(unsigned long long)"
                                             "0xffffffffffffffffULL)")
    assert literal(True, np.bool_) == "true"
    assert literal(1 - 2j, np.complex64) == ("mt_mk_c64(mt_f32_from(0x3f800000u), "
                                                     "mt_f32_from(0xc0000000u))")


def test_memoised_literals_keep_signed_zeros_nan_payloads_and_types_apart():
    """literal() is memoised; the key must tell apart values that compare equal."""
    neg_nan = struct.unpack("<d", struct.pack("<Q", 0xFFF8000000000000))[0]
    cases = [(0.0, "mt_f32_from(0x0u)"), (-0.0, "mt_f32_from(0x80000000u)"),
             (float("nan"), "mt_f32_from(0x7fc00000u)"), (neg_nan, "mt_f32_from(0xffc00000u)"),
             (np.float32(-0.0), "mt_f32_from(0x80000000u)"),
             (np.asarray(np.float32(-0.0)), "mt_f32_from(0x80000000u)")]
    for _ in range(2):  # the second round reads the memo
        for value, text in cases:
            assert literal(value, F32) == text, value
    assert literal(True, np.int32) != literal(True, np.bool_)
    one = "mt_f64_from(0x3ff0000000000000ULL)"
    assert literal(1, np.float64) == literal(1.0, np.float64) == one


def test_elementwise_kernel_without_an_expression_names_the_primitive():
    with pytest.raises(TypeError, match="asin has no generated GPU kernel for operands c64"):
        fusion.elementwise_kernel(ew.asin_p, [ShapedArray((3,), np.complex64)], {})


def test_run_checks_its_inputs():
    k = fusion.elementwise_kernel(ew.exp_p, [ShapedArray((4,), F32)], {})
    with pytest.raises(ValueError, match=r"input 0 must be f32\[4\], got float64\[4\]"):
        k.run({}, np, [np.zeros(4)])


# ---- the twin runtime ---------------------------------------------------------------------
needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="no host C++ compiler")
SOURCE = r'''
extern "C" __global__ void mt_test_scale(const float* __restrict__ x, float* __restrict__ y,
                                         int n, double s) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    y[i] = (float)(x[i] * s);
}
'''


@needs_gxx
def test_twin_runs_scalar_arguments_and_rejects_strided_buffers(tmp_path):
    rt = twin_mod.TwinRuntime(cache=tmp_path)
    fns = rt.compile(SOURCE, {"mt_test_scale": ("ptr", "ptr", "i32", "f64")})
    x, y = np.arange(10, dtype=F32), np.zeros(10, F32)
    fns["mt_test_scale"](2, 3, [x, y, 10, 0.5])
    np.testing.assert_array_equal(y, x * 0.5)
    with pytest.raises(ValueError, match="argument 0 .* is not C-contiguous"):
        fns["mt_test_scale"](1, 4, [np.zeros(20, F32)[::2], y, 10, 1.0])
    with pytest.raises(TypeError, match="4 arguments expected"):
        fns["mt_test_scale"](1, 4, [x, y])


@needs_gxx
def test_twin_compile_errors_show_the_message_and_numbered_lines(tmp_path):
    rt = twin_mod.TwinRuntime(cache=tmp_path)
    bad = 'extern "C" __global__ void k(float* a) {\n  a[0] = not_declared;\n}\n'
    with pytest.raises(twin_mod.TwinCompileError) as err:
        rt.compile(bad, {"k": ("ptr",)})
    assert "not_declared" in str(err.value) and ">    2 |   a[0] = not_declared;" in str(err.value)
    with pytest.raises(ValueError, match="no kernel named 'nope'"):
        rt.compile(SOURCE, {"nope": ("ptr",)})


@needs_gxx
def test_twin_libraries_are_cached_on_disk(tmp_path, monkeypatch):
    twin_mod.TwinRuntime(cache=tmp_path).compile(SOURCE, {"mt_test_scale": ("ptr", "ptr",
                                                                            "i32", "f64")})
    assert len(list(tmp_path.glob("twin_*.so"))) == 1

    def no_compiler(*a, **k):
        raise AssertionError("compiled again")

    monkeypatch.setattr(subprocess, "run", no_compiler)
    fns = twin_mod.TwinRuntime(cache=tmp_path).compile(
        SOURCE, {"mt_test_scale": ("ptr", "ptr", "i32", "f64")})
    x, y = np.ones(3, F32), np.zeros(3, F32)
    fns["mt_test_scale"](1, 2, [x, y, 3, 2.0])
    np.testing.assert_array_equal(y, 2 * x)


def test_twin_without_a_compiler_says_why(monkeypatch):
    monkeypatch.setattr(twin_mod, "compiler", lambda: None)
    assert not twin_mod.available()
    assert "g++" in twin_mod.unavailable_reason()
    with pytest.raises(RuntimeError, match="host C\\+\\+ compiler"):
        twin_mod.TwinRuntime().compile(SOURCE, {})


@needs_gxx
def test_twin_launches_from_several_threads_do_not_mix(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    x = np.random.default_rng(0).standard_normal((4, 300)).astype(F32)
    jaxpr, _ = corpus.trace(lambda x: mt.numpy.sum(x * x, axis=1) + 0 * x[:, 0], x)
    step = fusion.plan(jaxpr, reduce_strategy="block", reduce_block=32)[0]
    assert step.kernel.strategy == "block"
    y = np.arange(1000, dtype=F32)
    other = fusion.elementwise_kernel(ew.exp_p, [ShapedArray(y.shape, F32)], {})
    rt = twin_mod.TwinRuntime(cache=tmp_path)
    fns = rt.compile(codegen.module_source([step.kernel, other]),
                     codegen.signatures([step.kernel, other]))

    def work(k):
        scale = F32(k + 1)
        (sums,) = step.kernel.run(fns, np, [x * scale])
        (e,) = other.run(fns, np, [y / (k + 1000)])
        return k, sums, e

    with ThreadPoolExecutor(4) as pool:
        for k, sums, e in pool.map(work, range(12)):
            np.testing.assert_allclose(sums, ((x * (k + 1)) ** 2).sum(1), rtol=1e-5)
            np.testing.assert_allclose(e, np.exp(y / (k + 1000)), rtol=1e-6)


@needs_gxx
def test_misaligned_inputs_of_vectorised_kernels_are_copied_first(tmp_path):
    k = fusion.elementwise_kernel(ew.mul_p, [ShapedArray((32,), F32)] * 2, {})
    assert k.vec == 4 and k.vector_inputs == {0, 1}
    fns = twin_mod.TwinRuntime(cache=tmp_path).compile(codegen.module_source([k]),
                                                       codegen.signatures([k]))
    base = np.arange(40, dtype=F32)
    x, y = base[1:33], base[3:35]  # contiguous views, not 16-byte aligned
    assert x.ctypes.data % 16 and y.ctypes.data % 16
    (out,) = k.run(fns, np, [x, y])
    np.testing.assert_array_equal(out, x * y)
    assert out.ctypes.data % 16 == 0
