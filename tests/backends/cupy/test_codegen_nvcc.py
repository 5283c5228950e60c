"""The generated fused kernels compile for the GPU: `nvcc --ptx -arch=sm_90` of one module
holding the corpus of test_codegen_twin.py (every elementwise primitive x dtype, broadcast
and reduction fusions by thread and by block, 64-bit indices, the example models' training
steps). Skips only where nvcc is absent. This checks the source, not its results on a GPU."""

import shutil
import subprocess
import time

import numpy as np
import pytest

import mytorch as mt
from mytorch.backends.cupy import codegen, fusion
from tests.backends.cupy import test_codegen_twin as corpus


def _kernels_of(f, *args, **options):
    jaxpr, _ = corpus.trace(f, *args)
    return [s.kernel for s in fusion.plan(jaxpr, **options) if isinstance(s, fusion.Fused)]


def _step_kernels():
    from tests.examples.test_examples import load

    mnist = load("mnist_mlp")
    key = mt.random.key(0)
    model = mnist.Classifier(64, 10, 32, 2, 0.1, key=key)
    optimizer = mt.optim.adam(1e-3)
    step, _ = mnist.make_steps(optimizer, 0.1)
    x, y = np.zeros((16, 64), np.float32), np.zeros(16, np.int32)
    jaxpr, _ = corpus._inner(mt.make_jaxpr(step)(model, optimizer.init(model), x, y, key))
    out = [s.kernel for s in fusion.plan(jaxpr) if isinstance(s, fusion.Fused)]
    gpt = load("gpt_char")
    model = gpt.GPT(17, 8, 16, 2, 1, key=mt.random.key(1))
    optimizer = gpt.make_optimizer(gpt.parse_args(["--steps", "10"]))
    for policy in ("float32", "params=float32,compute=bfloat16,output=float32"):
        step, _ = gpt.make_steps(optimizer, mt.mixed_precision.get_policy(policy))
        ids = np.zeros((4, 8), np.int32)
        jaxpr, _ = corpus._inner(mt.make_jaxpr(step)(model, optimizer.init(model), ids, ids))
        out += [s.kernel for s in fusion.plan(jaxpr) if isinstance(s, fusion.Fused)]
    return out


def corpus_kernels():
    """Every kernel of the twin tests' corpus (built, not run)."""
    kernels = [fusion.elementwise_kernel(p, a, k) for p, a, k in corpus.elementwise_cases()]
    rng = np.random.default_rng(0)
    for f, args in corpus._broadcast_corpus(rng):
        kernels += _kernels_of(f, *args) + _kernels_of(f, *args, index64=True)
    x, b = np.zeros((3, 1367), np.float32), np.zeros(1367, np.float16)  # a vector tail
    kernels += _kernels_of(lambda x, b: x * 2.0 + b.astype(np.float32), x, b)
    for f, x in corpus._arg_corpus(rng):
        for strategy in ("thread", "block"):
            kernels += _kernels_of(f, x, reduce_strategy=strategy)
    mt.config.update("enable_x64", True)
    try:
        for f, dt, shape in corpus.REDUCTIONS:
            x = corpus.values(dt, shape, rng)
            for strategy in ("thread", "block"):
                kernels += _kernels_of(f, x, reduce_strategy=strategy)
            kernels += _kernels_of(f, x, index64=True)
    finally:
        mt.config.update("enable_x64", False)
    return kernels + _step_kernels()


def test_generated_kernels_compile_with_nvcc(tmp_path):
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is not on PATH")
    kernels = corpus_kernels()
    assert len({k.name for k in kernels}) > 600
    assert {k.strategy for k in kernels} == {"elementwise", "thread", "block"}
    cu = tmp_path / "fused.cu"
    cu.write_text(codegen.module_source(kernels))
    start = time.perf_counter()
    done = subprocess.run([nvcc, "--ptx", "-arch=sm_90", "-w", str(cu), "-o",
                           str(tmp_path / "fused.ptx")], check=False, capture_output=True,
                          text=True)
    seconds = time.perf_counter() - start
    assert done.returncode == 0, done.stderr[-4000:]
    ptx = (tmp_path / "fused.ptx").read_text()
    for k in kernels:
        assert f".entry {k.name}(" in ptx
    assert "ld.global.v4.f32" in ptx or "ld.global.nc.v4.f32" in ptx  # vectorised loads
    assert seconds < 60, f"nvcc took {seconds:.1f} s"
