"""Every primitive, eagerly on GPU arrays against the same call on CPU arrays (values and
gradients), from the table in cases*.py; the non-elementwise rows also under jit.

`MYTORCH_GPU_TESTS_QUICK=1` keeps every non-elementwise row but only a sample of the
elementwise ones (the float32 rows and every fourth of the others), for a device whose
time is short: each distinct kernel costs a compilation on a fresh machine.
"""

import contextlib
import functools
import operator
import os

import numpy as np
import pytest

import mytorch as mt
import mytorch.numpy as mnp
from tests.gpu import cases_elementwise
from tests.gpu.cases import all_cases
from tests.gpu.compare import GRAD_TOL, assert_matches
from tests.gpu.conftest import placed_on

pytestmark = pytest.mark.gpu

CASES = all_cases()
if os.environ.get("MYTORCH_GPU_TESTS_QUICK") == "1":
    _ELEMENTWISE = {c.name for c in cases_elementwise.CASES}
    _others = [c for c in CASES if c.name in _ELEMENTWISE and "f32" not in c.name]
    CASES = [c for c in CASES if c.name not in _ELEMENTWISE or "f32" in c.name] + _others[::4]
GRAD_CASES = [c for c in CASES if c.grad]
JIT_CASES = [c for c in CASES if c.jit]


@contextlib.contextmanager
def x64_if(flag):
    old = mt.config.enable_x64
    mt.config.update("enable_x64", bool(flag) or old)
    try:
        yield
    finally:
        mt.config.update("enable_x64", old)


def run(fn, args, device):
    """`fn` on `args` (NumPy) placed on `device`, new arrays created there too."""
    with placed_on(device):
        return fn(*[mt.device_put(a, device) for a in args])


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_eager(case, gpu, cpu):
    with x64_if(case.x64):
        args = case.draw()
        want = run(case.fn, args, cpu)
        got = run(case.fn, args, gpu)
        assert_matches(got, want, device=gpu, tol=case.tol)


@pytest.mark.parametrize("case", JIT_CASES, ids=lambda c: c.name)
def test_jit(case, gpu, cpu):
    with x64_if(case.x64):
        args = case.draw()
        want = run(case.fn, args, cpu)
        got = run(mt.jit(case.fn), args, gpu)
        assert_matches(got, want, device=gpu, tol=case.tol)


def _weighted_loss(fn, n_args):
    """loss(*args, *weights) = sum over the float outputs of (output * weight): a
    cotangent that differs per element, so transposed indexing errors show."""

    def loss(*a):
        outs = [o for o in mt.tree_util.tree_leaves(fn(*a[:n_args]))
                if mnp.issubdtype(o.dtype, mnp.floating)]
        # (no Python 0 to start the sum: a Python scalar is made on the default device)
        return functools.reduce(operator.add, [mnp.sum((o * w).astype(mnp.float32))
                                               for o, w in zip(outs, a[n_args:], strict=True)])

    return loss


def _weights(case, args):
    outs = mt.tree_util.tree_leaves(run(case.fn, args, mt.devices("cpu")[0]))
    rng = np.random.default_rng(1)
    return [rng.standard_normal(o.shape).astype(o.dtype) for o in outs
            if mnp.issubdtype(o.dtype, mnp.floating)]


@pytest.mark.parametrize("case", GRAD_CASES, ids=lambda c: c.name)
def test_grad(case, gpu, cpu):
    with x64_if(case.x64):
        args = case.draw()
        grad = mt.grad(_weighted_loss(case.fn, len(args)), argnums=case.grad)
        full = args + _weights(case, args)
        want = run(grad, full, cpu)
        got = run(grad, full, gpu)
        assert_matches(got, want, device=gpu, tol=case.grad_tol, table=GRAD_TOL, what="grad")
