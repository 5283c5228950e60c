"""examples/moe_expert_parallel.py: a short run on 4 virtual CPU devices learns and prints
each MoE layer's per-expert load and dropped tokens."""

import re

import numpy as np
import pytest

import mytorch as mt
from tests.examples.test_examples import load


@pytest.fixture
def restore_devices():
    before = mt.config.num_cpu_devices
    yield
    mt.config.update("num_cpu_devices", before)


def test_short_run_learns_and_prints_the_load(restore_devices, capsys):
    example = load("moe_expert_parallel")
    result = example.main(["--steps", "40", "--log-every", "10", "--batch-size", "16",
                           "--context", "32", "--eval-batches", "2"])
    out = capsys.readouterr().out
    first, last = result["history"][0][1], result["history"][-1][1]
    assert abs(first - np.log(103)) < 0.3           # starts near a uniform guess
    assert last < first - 1.0
    assert "(2 on each of 4 devices)" in out
    lines = re.findall(r"layer (\d) load per expert \[([\d ]+)\]  dropped (\d+)", out)
    assert len(lines) == 2 * 5                      # 2 layers, steps 0, 10, 20, 30, 39
    for _, counts, dropped in lines:
        counts = [int(c) for c in counts.split()]
        assert len(counts) == 8 and sum(counts) == 16 * 32   # top-1: one choice per token
        assert 0 <= int(dropped) <= 16 * 32
    assert result["load"].shape == (2, 8) and result["load"].sum() == 2 * 16 * 32
