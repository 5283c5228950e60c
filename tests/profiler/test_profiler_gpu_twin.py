"""mt.profiler on the GPU backend's compiler, run on its CPU twin (generated CUDA kernels
built by the host C++ compiler, NumPy buffers): each step (fused group or equation) is
timed between device synchronisations. Nothing here stands for a GPU run."""

import os

import numpy as np
import pytest

import mytorch as mt
import mytorch.numpy as mnp
from tests.twin_fixtures import twin_devices

HERE = os.path.basename(__file__)


@pytest.fixture
def twin(tmp_path_factory):
    with twin_devices(1, tmp_path_factory.getbasetemp() / "twin") as devices:
        yield devices[0]


def test_gpu_program_steps_are_timed_on_the_twin(twin):
    def f(x, w):
        h = mnp.tanh(x @ w)
        return (h * 2.0 + 1.0).sum()

    x = mt.device_put(mnp.ones((64, 32)), twin)
    w = mt.device_put(mnp.ones((32, 16)), twin)
    g = mt.jit(f)
    plain = g.lower(x, w).as_text()
    expected = float(g(x, w))
    with mt.profiler.trace(print_table=False) as prof:
        out = g(x, w)
        g(x, w)
    assert float(out) == expected == pytest.approx(np.tanh(32.0) * 2 * 64 * 16 + 64 * 16)
    rows = prof.rows(kinds={"eqn", "fused"})
    dot = next(r for r in rows if r.name == "dot_general")
    assert dot.calls == 2 and dot.shapes == "f32[64,32], f32[32,16] -> f32[64,16]"
    assert f"{HERE}:" in dot.source and dot.scope == "f"
    fused = next(r for r in rows if r.kind == "fused")
    assert fused.name.startswith("fused[tanh,mul,add") and fused.calls == 2
    fn = next(r for r in prof.rows() if r.kind == "function")
    assert fn.calls == 2 and fn.total_s >= dot.total_s + fused.total_s
    assert 0 < prof.recorded_s <= prof.wall_s
    assert g.lower(x, w).as_text() == plain
