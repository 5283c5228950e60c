"""Fused patterns under jit on the GPU: each pattern jitted on the GPU against the same
function un-jitted on the CPU and un-jitted on the GPU, and its gradient (jitted on the
GPU) against the CPU's."""

import dataclasses
from collections.abc import Callable

import numpy as np
import pytest

import mytorch as mt
import mytorch.numpy as mnp
from mytorch import nn
from tests.gpu.cases import BF16, F16, bools, ints, uniform
from tests.gpu.compare import GRAD_TOL, assert_matches
from tests.gpu.test_primitives import _weighted_loss, run

pytestmark = pytest.mark.gpu
LOOSE = (1e-4, 1e-5)
BIG = (1 << 20) + 5  # past one grid of blocks: grid-stride loops and a vector tail


@dataclasses.dataclass(frozen=True)
class Pattern:
    name: str
    fn: Callable
    args: tuple
    grad: tuple = ()
    tol: tuple | None = None

    def draw(self):
        rng = np.random.default_rng(len(self.name) * 7919 + sum(map(ord, self.name)))
        return [b(rng) for b in self.args]


def gelu_chain(x):
    return 0.5 * x * (1 + mnp.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))


def softmax(x):
    e = mnp.exp(x - mnp.max(x, axis=-1, keepdims=True))
    return e / mnp.sum(e, axis=-1, keepdims=True)


def multi_output(x, y):
    a = x * y
    b = mnp.exp(a) - 1
    return a, b, mnp.sum(b, axis=1), mnp.max(a)


PATTERNS = [
    Pattern("affine", lambda x: x * 2 + 1, (uniform((5, 37)),), grad=(0,)),
    Pattern("tanh_mul_add", lambda x, y, z: mnp.tanh(x) * y + z, (uniform((5, 37)),) * 3,
            grad=(0, 1, 2)),
    Pattern("gelu_f32", gelu_chain, (uniform((7, 129)),), grad=(0,)),
    Pattern("gelu_bf16", gelu_chain, (uniform((7, 129), dtype=BF16),)),
    Pattern("gelu_f16", gelu_chain, (uniform((7, 129), dtype=F16),)),
    Pattern("affine_big", lambda x, y: mnp.tanh(x) * y + 1.0, (uniform(BIG), uniform(BIG)),
            grad=(0, 1)),
    Pattern("bf16_big", lambda x, y: (x * y + 1).astype(mnp.bfloat16),
            (uniform(BIG, dtype=BF16), uniform(BIG, dtype=BF16))),
    Pattern("unaligned_slices", lambda x: mnp.sin(x[1:]) * x[:-1] + x[3:-2].sum(),
            (uniform(4099),), grad=(0,), tol=LOOSE),
    Pattern("transposed_operand", lambda x, y: mnp.exp(x.T) * y, (uniform((33, 17)),
                                                                 uniform((17, 33))),
            grad=(0, 1)),
    Pattern("broadcast_outer", lambda x, y, z: (x[:, None] + y[None, :]) * z,
            (uniform(31), uniform(45), uniform((31, 45))), grad=(0, 1, 2)),
    Pattern("broadcast_middle", lambda x, y: mnp.maximum(x, 0) * y,
            (uniform((4, 1, 9)), uniform((3, 1))), grad=(0, 1)),
    Pattern("scalar_operands", lambda x, s: mnp.where(x > s, x * s, -x) + 2.5,
            (uniform((6, 10)), uniform(())), grad=(0, 1)),
    Pattern("convert_chain", lambda x: (mnp.log1p(x.astype(mnp.float32) ** 2)
                                        .astype(mnp.bfloat16) * 3).astype(mnp.float16),
            (uniform((8, 50), dtype=F16),)),
    Pattern("int_chain", lambda i, j: ((i * 3 + j) % 7 - (i >> 1)) ^ j,
            (ints((9, 40), 0, 1000), ints((9, 40), 0, 1000))),
    Pattern("bool_chain", lambda a, b, x: mnp.logical_and(a, ~b) | (x > 0.5),
            (bools((5, 21)), bools((5, 21)), uniform((5, 21)))),
    Pattern("compare_select_convert", lambda x, y: mnp.where(x < y, x, y).astype(mnp.int32)
            + (x > 0).astype(mnp.int32), (uniform((5, 21), -9, 9), uniform((5, 21), -9, 9))),
    Pattern("sum_ends_chain", lambda x, y: mnp.sum(mnp.exp(x - 1) * y, axis=-1),
            (uniform((33, 257)), uniform((33, 257))), grad=(0, 1), tol=LOOSE),
    Pattern("sum_axis0_strided", lambda x: mnp.sum(x * x, axis=0), (uniform((513, 7)),),
            grad=(0,), tol=LOOSE),
    Pattern("sum_all_big", lambda x: mnp.sum(mnp.abs(x) + 1), (uniform(BIG),), grad=(0,),
            tol=(1e-4, 1e-2)),
    Pattern("max_middle_axis", lambda x: mnp.max(mnp.sin(x), axis=1), (uniform((6, 40, 5)),),
            grad=(0,)),
    Pattern("mean_bf16", lambda x: mnp.mean(x * 2, axis=-1), (uniform((6, 300), dtype=BF16),),
            tol=(2e-2, 2e-2)),
    Pattern("softmax", softmax, (uniform((9, 130), -4, 4),), grad=(0,), tol=LOOSE),
    Pattern("layer_norm", lambda x: nn.standardize(x, axis=-1) * 1.5 + 0.2,
            (uniform((9, 130)),), grad=(0,), tol=LOOSE),
    Pattern("multi_output", multi_output, (uniform((6, 70)), uniform((6, 70))), grad=(0, 1),
            tol=LOOSE),
    Pattern("matmul_then_chain", lambda x, w, b: nn.relu(x @ w + b) * 0.5,
            (uniform((16, 32)), uniform((32, 24)), uniform(24)), grad=(0, 1, 2), tol=LOOSE),
    Pattern("cross_entropy", lambda x, y: mnp.mean(nn.softmax_cross_entropy(x, y)),
            (uniform((8, 10), -3, 3), uniform((8, 10), 0, 1)), grad=(0,), tol=LOOSE),
    Pattern("complex_chain", lambda x, y: mnp.abs(mnp.exp(x + 1j * y)) * mnp.cos(y),
            (uniform((5, 17)), uniform((5, 17))), grad=(0, 1)),
    Pattern("nan_inf_propagation", lambda x: mnp.sqrt(x) + mnp.log(x) * 0.0,
            (uniform((4, 9), -1, 1),)),
]


@pytest.mark.parametrize("p", PATTERNS, ids=lambda p: p.name)
def test_jit_matches_unjitted(p, gpu, cpu):
    args = p.draw()
    want = run(p.fn, args, cpu)
    assert_matches(run(mt.jit(p.fn), args, gpu), want, device=gpu, tol=p.tol,
                   what="jit on the gpu vs the cpu")
    assert_matches(run(p.fn, args, gpu), want, device=gpu, tol=p.tol,
                   what="eager on the gpu vs the cpu")


@pytest.mark.parametrize("p", [p for p in PATTERNS if p.grad], ids=lambda p: p.name)
def test_jit_grad(p, gpu, cpu):
    args = p.draw()
    outs = mt.tree_util.tree_leaves(run(p.fn, args, cpu))
    rng = np.random.default_rng(2)
    weights = [rng.standard_normal(o.shape).astype(o.dtype) for o in outs
               if mnp.issubdtype(o.dtype, mnp.floating)]
    grad = mt.grad(_weighted_loss(p.fn, len(args)), argnums=p.grad)
    want = run(grad, args + weights, cpu)
    got = run(mt.jit(grad), args + weights, gpu)
    assert_matches(got, want, device=gpu, tol=p.tol and (10 * p.tol[0], 10 * p.tol[1]),
                   table=GRAD_TOL, what="jit(grad) on the gpu vs grad on the cpu")


@pytest.mark.filterwarnings("ignore:jit.*tracing again")
def test_jit_reuses_compiled_kernels_and_retraces_per_shape(gpu, cpu):
    f = mt.jit(lambda x: mnp.tanh(x) * 2)
    for n in (5, 5, 300, 5, 70000):
        x = np.linspace(-1, 1, n, dtype=np.float32)
        assert_matches(run(f, [x], gpu), run(f, [x], cpu), device=gpu)


def test_vmap_under_jit(gpu, cpu):
    f = mt.jit(mt.vmap(lambda x, w: mnp.sum(mnp.tanh(x @ w) ** 2), in_axes=(0, None)))
    rng = np.random.default_rng(3)
    args = [rng.standard_normal((6, 3, 8), np.float32), rng.standard_normal((8, 4), np.float32)]
    assert_matches(run(f, args, gpu), run(f, args, cpu), device=gpu, tol=LOOSE)


def test_float32_inputs_float16_compute(gpu, cpu):
    # the mixed-precision pattern: casts at the edges of a fused chain
    def f(x, w):
        h = (x.astype(mnp.float16) @ w.astype(mnp.float16)).astype(mnp.float32)
        return mnp.sum(nn.gelu(h), axis=-1)

    rng = np.random.default_rng(4)
    args = [rng.standard_normal((32, 64), np.float32),
            rng.standard_normal((64, 48), np.float32) / 8]
    assert_matches(run(mt.jit(f), args, gpu), run(f, args, cpu), device=gpu, tol=(2e-2, 2e-2))
