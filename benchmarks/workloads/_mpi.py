"""Contenders that run in other processes: a job of `benchmarks/mpi_replicas.py` started
under `python -m mytorch.distributed.launch -n 2`, driven from the harness's process.

The harness times a contender by calling it; an MPI contender's call sends one command to
every rank over a Unix socket and returns when every rank has answered, so its samples are
interleaved with the in-process contenders' exactly like theirs (while one runs, the others
sleep: the ranks block in a socket read, not in an MPI wait that would spin on a core). The
round trip costs tens of microseconds per call, included in the times.

One job serves every MPI contender of the run (started by the first, stopped at exit).
"""

import atexit
import importlib.util
import os
import shutil
import socket
import subprocess
import sys
import tempfile

import numpy as np

RANKS = 2
_START_TIMEOUT_S = 120.0
_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_job = None


def missing():
    """Why MPI contenders cannot run here (no mpi4py, no mpiexec), or None."""
    if importlib.util.find_spec("mpi4py") is None:
        return "mpi4py is not installed (pip install 'mytorch[distributed]')"
    if shutil.which("mpiexec") is None:
        return "no mpiexec on PATH (pip install 'mytorch[distributed]')"
    return None


class Job:
    """The ranks of `benchmarks/mpi_replicas.py`, each connected to this process."""

    def __init__(self):
        why = missing()
        if why:
            raise RuntimeError(why)
        self.folder = tempfile.mkdtemp(prefix="mytorch-bench-")
        path = os.path.join(self.folder, "control")
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(path)
        server.listen(RANKS)
        server.settimeout(_START_TIMEOUT_S)
        self.log = open(os.path.join(self.folder, "output.txt"), "w+")
        script = os.path.join(_REPO, "benchmarks", "mpi_replicas.py")
        # the ranks get every core the harness may use, whatever its own pinning
        cores = _all_cores()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "mytorch.distributed.launch", "-n", str(RANKS), script, path],
            cwd=_REPO, stdout=self.log, stderr=subprocess.STDOUT,
            preexec_fn=(lambda: os.sched_setaffinity(0, cores)) if cores else None)
        self.ranks = [None] * RANKS
        try:
            for _ in range(RANKS):
                conn, _ = server.accept()
                stream = conn.makefile("rw", buffering=1)
                rank = int(stream.readline().split()[1])
                self.ranks[rank] = (conn, stream)
        except (OSError, ValueError) as e:
            self.close()
            raise RuntimeError(f"the MPI job did not start: {e}; its output: "
                               f"{self.output()[-500:]}") from None
        finally:
            server.close()

    def command(self, *words):
        """Send one command to every rank; returns rank 0's answer (after every rank's)."""
        line = " ".join(map(str, words)) + "\n"
        for _, stream in self.ranks:
            stream.write(line)
            stream.flush()
        answers = [stream.readline().strip() for _, stream in self.ranks]
        for rank, answer in enumerate(answers):
            if not answer.startswith("ok"):
                raise RuntimeError(f"rank {rank} of the MPI job: {answer or 'no answer'}; its "
                                   f"output: {self.output()[-500:]}")
        return answers[0][3:]

    def output(self):
        """What the launcher and the ranks printed so far."""
        self.log.flush()
        with open(self.log.name) as f:
            return f.read()

    def close(self):
        """Stop the ranks (a quit command, then the launcher if it lingers)."""
        for entry in self.ranks:
            if entry is not None:
                try:
                    entry[1].write("quit\n")
                    entry[1].flush()
                except OSError:
                    pass
                entry[0].close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.terminate()
            self.process.wait()
        self.log.close()
        shutil.rmtree(self.folder, ignore_errors=True)


def _all_cores():
    from benchmarks import harness

    return harness.ALLOWED_CORES


def job():
    """The run's MPI job, started on first use."""
    global _job
    if _job is None:
        _job = Job()
        atexit.register(_job.close)
    return _job


def contender_fn(task, **spec):
    """Set up `task` (a name in mpi_replicas.TASKS, with keyword arguments `spec`) on every
    rank; returns the callable that runs it once on all ranks (its result, fetched only when
    asked for, is rank 0's result as a list of NumPy arrays: see `result`)."""
    j = job()
    name = j.command("setup", task, _encode(spec))

    def run():
        j.command("run", name)
        return name

    return run


def result(name):
    """Rank 0's result of the task set up as `name` (after its last run)."""
    j = job()
    path = os.path.join(j.folder, f"{name}.npz")
    j.command("save", name, path)
    with np.load(path) as f:
        return [f[f"a{i}"] for i in range(len(f.files))]


def _encode(spec):
    import json

    return json.dumps(spec, separators=(",", ":"))
