"""Fixtures of the multi-process tests: `launch_script` runs a script on N processes
through `python -m mytorch.distributed.launch` (skipped without mpi4py or mpiexec)."""

import os
import shutil
import subprocess
import sys
import textwrap
import time

import pytest

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class Run:
    """A finished launcher run: its exit status, stdout, stderr and wall time (s)."""

    def __init__(self, returncode, stdout, stderr, seconds):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr
        self.seconds = seconds

    def lines(self, rank, stream="stdout"):
        """The lines rank `rank` wrote to `stream`, without their `[rank r] ` prefix."""
        prefix = f"[rank {rank}] "
        text = getattr(self, stream)
        return [ln[len(prefix):] for ln in text.splitlines() if ln.startswith(prefix)]

    def __repr__(self):
        return (f"Run(returncode={self.returncode}, seconds={self.seconds:.1f})\n"
                f"--- stdout\n{self.stdout}\n--- stderr\n{self.stderr}")


@pytest.fixture
def launch_script(tmp_path):
    """launch_script(source, n=2, args=(), timeout=None, limit=60) -> Run: write `source`
    (dedented) to a file and run it on `n` processes through the launcher."""
    pytest.importorskip("mpi4py")
    if shutil.which("mpiexec") is None:
        pytest.skip("no mpiexec on PATH (pip install mpich)")

    def run(source, n=2, args=(), timeout=None, limit=60):
        script = tmp_path / "script.py"
        script.write_text(textwrap.dedent(source))
        command = [sys.executable, "-m", "mytorch.distributed.launch", "-n", str(n)]
        if timeout is not None:
            command += ["--timeout", str(timeout)]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [_ROOT] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
        start = time.monotonic()
        done = subprocess.run(command + [str(script), *args], capture_output=True, text=True,
                              timeout=limit, env=env, cwd=str(tmp_path))
        return Run(done.returncode, done.stdout, done.stderr, time.monotonic() - start)

    return run
