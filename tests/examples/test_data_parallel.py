"""examples/data_parallel.py: pmap'd training on virtual CPU devices and on 2 MPI processes
gives the single-device loss curve (its --check), and the model learns."""

import os
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest

import mytorch as mt
from tests.examples.test_examples import EXAMPLES, load

_ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture
def restore_devices():
    before = mt.config.num_cpu_devices
    yield
    mt.config.update("num_cpu_devices", before)


def test_virtual_devices_match_one_device(restore_devices, capsys):
    example = load("data_parallel")
    result = example.main(["--devices", "4", "--epochs", "3", "--check"])
    out = capsys.readouterr().out
    assert "loss on 4 devices:" in out and "loss on 1 device:" in out
    assert "losses agree to rtol 1e-5" in out
    losses = result["losses"]
    assert len(losses) == 3 * (1437 // 64)
    assert np.mean(losses[-5:]) < losses[0] / 4
    assert result["test_accuracy"] > 0.9


@pytest.mark.mpi
def test_two_processes_through_the_launcher():
    pytest.importorskip("mpi4py")
    if shutil.which("mpiexec") is None:
        pytest.skip("no mpiexec on PATH (pip install mpich)")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(_ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    done = subprocess.run(
        [sys.executable, "-m", "mytorch.distributed.launch", "-n", "2",
         str(EXAMPLES / "data_parallel.py"), "--epochs", "2", "--check"],
        capture_output=True, text=True, timeout=120, env=env, cwd=str(_ROOT))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "[rank 0] loss on 2 processes:" in done.stdout
    assert ("[rank 0] check: the 44 losses agree to rtol 1e-5, atol 1e-5 x the first loss"
            in done.stdout)
