"""Start a multi-process run: `python -m mytorch.distributed.launch -n N script.py [args]`.

Starts N processes of `script.py` through `mpiexec` (the one on PATH: the mpich wheel's),
each supervised by `worker.py`, which prefixes every line the rank writes with
`[rank r] ` (stdout and stderr alike). When a rank fails (an uncaught exception, a non-zero
exit status, a signal), the launcher waits a moment for the others to report their own
errors, stops the remaining ranks, says which rank failed first and why, and returns that
rank's exit status (128 + the signal number for a rank killed by a signal). A run in which
every rank succeeds returns 0.

Options: `--timeout S` sets MYTORCH_COLLECTIVE_TIMEOUT (seconds a collective may wait for
its peers) for every rank.

The ranks share this machine's cores: unless the environment already says how many
threads BLAS and OpenMP may use, each rank gets its share (cores // N, at least 1) through
OMP_NUM_THREADS and OPENBLAS_NUM_THREADS, as torchrun does. Without it, N ranks each
starting a thread per core oversubscribe the cores many times over (a data-parallel step
on 2 ranks of a 2-core machine ran 17x slower).
"""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

__all__ = ["main", "launch", "thread_limits"]

_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")

# after the first failure, how long the other ranks may take to report their own errors
# (e.g. both sides of a mismatched schedule) before they are stopped
_GRACE_S = 1.0
# how long stopped ranks get to end after SIGTERM before they are killed
_KILL_AFTER_S = 3.0
_POLL_S = 0.05
_PROG = "mytorch.distributed.launch"
# the reports of worker.py: a rank's error summary or failed exit; its success
_FAILED, _DONE = ("failure-", "exit-"), "done-"


def thread_limits(environ, num_processes):
    """{variable: value} of the thread limits each of `num_processes` ranks gets: its share
    of this machine's cores, for each of OMP/OPENBLAS/MKL_NUM_THREADS that `environ` does
    not set already (the user's setting wins)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (
        os.cpu_count() or 1)
    share = str(max(1, cores // num_processes))
    return {name: share for name in _THREAD_VARS if name not in environ}


def launch(script, args=(), num_processes=2, timeout=None, mpiexec=None):
    """Run `script` with `args` on `num_processes` ranks through mpiexec; returns the exit
    status (0, or the first failed rank's), after reporting failures on stderr."""
    if not isinstance(num_processes, int) or num_processes < 1:
        raise ValueError(f"{_PROG}: the number of processes must be a positive int, got "
                         f"{num_processes!r}")
    mpiexec = mpiexec or shutil.which("mpiexec")
    if mpiexec is None:
        raise FileNotFoundError(f"{_PROG}: no mpiexec on PATH: pip install "
                                f"'mytorch[distributed]' (mpi4py and the mpich wheel, which "
                                f"provides mpiexec)")
    if not os.path.isfile(script):
        raise FileNotFoundError(f"{_PROG}: no script {script!r}")
    folder = tempfile.mkdtemp(prefix="mytorch-launch-")
    env = dict(os.environ, MYTORCH_LAUNCH_DIR=folder, PYTHONUNBUFFERED="1")
    env.update(thread_limits(os.environ, num_processes))
    if timeout is not None:
        if not timeout > 0:
            raise ValueError(f"{_PROG}: --timeout must be a positive number of seconds, got "
                             f"{timeout!r}")
        env["MYTORCH_COLLECTIVE_TIMEOUT"] = repr(float(timeout))
    worker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "worker.py")
    command = [mpiexec, "-n", str(num_processes), sys.executable, worker, script, *args]
    try:
        job = subprocess.Popen(command, env=env, start_new_session=True)
        stopped_at = _supervise(job, folder)
        failures, done = _read_reports(folder, stopped_at)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if not failures:
        return job.returncode
    # neither failed nor done: stopped (by the launcher, or by MPI's process manager)
    return _report(failures, [r for r in range(num_processes)
                              if r not in failures and r not in done])


def _supervise(job, folder):
    """Wait for `job` to end; stop it `_GRACE_S` after the first failure report. Returns
    when it was stopped (time.time()), or None if it ended by itself."""
    first = None
    try:
        while job.poll() is None:
            if first is None and any(n.startswith(_FAILED) for n in os.listdir(folder)):
                first = time.monotonic()
            if first is not None and time.monotonic() - first > _GRACE_S:
                return _stop(job)
            time.sleep(_POLL_S)
    except KeyboardInterrupt:
        _stop(job)
        raise
    return None


def _stop(job):
    """Stop every process of the job (mpiexec, its proxies, the ranks): SIGTERM, then
    SIGKILL for what is left after `_KILL_AFTER_S`."""
    at = time.time()
    for sig, wait in ((signal.SIGTERM, _KILL_AFTER_S), (signal.SIGKILL, None)):
        try:
            os.killpg(job.pid, sig)
        except ProcessLookupError:
            break
        try:
            job.wait(timeout=wait)
            break
        except subprocess.TimeoutExpired:
            continue
    return at


def _read_reports(folder, stopped_at):
    """({rank: record}, {rank}): the ranks that failed by themselves (before any stop),
    each with the earliest time, the summary of its error and its exit status where known;
    and the ranks that succeeded."""
    failures, done = {}, set()
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".json"):
            continue
        with open(os.path.join(folder, name)) as f:
            record = json.load(f)
        if name.startswith(_DONE):
            done.add(record["rank"])
            continue
        if not name.startswith(_FAILED) or (stopped_at is not None
                                            and record["time"] > stopped_at):
            continue  # ended by a stop, not a failure of its own
        merged = failures.setdefault(record["rank"], {"time": record["time"]})
        merged["time"] = min(merged["time"], record["time"])
        for key in ("summary", "returncode", "signal"):
            if key in record:
                merged[key] = record[key]
    return failures, done


def _why(record):
    if "summary" in record:
        return record["summary"]
    if "signal" in record:
        return f"killed by signal {record['signal']}"
    return f"exited with status {record['returncode']}"


def _status(record):
    code = record.get("returncode", 1)
    return code if code > 0 else 128 - code


def _report(failures, rest):
    """Print which rank failed first and why (and the others, and the ranks `rest` that
    were stopped); returns the exit status of the rank that failed first."""
    order = sorted(failures, key=lambda r: failures[r]["time"])
    first = order[0]
    lines = [f"{_PROG}: rank {first} failed first: {_why(failures[first])}"]
    lines += [f"{_PROG}: rank {r} failed too: {_why(failures[r])}" for r in order[1:]]
    if rest:
        lines.append(f"{_PROG}: stopped rank{'s' if len(rest) > 1 else ''} "
                     f"{', '.join(map(str, rest))}")
    sys.stdout.flush()
    print("\n".join(lines), file=sys.stderr, flush=True)
    return _status(failures[first])


def main(argv=None):
    """The command line: `-n N [--timeout S] script.py [args...]`; returns the exit
    status."""
    parser = argparse.ArgumentParser(
        prog=f"python -m {_PROG}",
        description="Run a script on N processes through mpiexec, output prefixed by rank.")
    parser.add_argument("-n", "--num-processes", type=int, required=True,
                        help="how many processes to start")
    parser.add_argument("--timeout", type=float, default=None,
                        help="seconds a collective may wait for its peers "
                             "(MYTORCH_COLLECTIVE_TIMEOUT)")
    parser.add_argument("script", help="the Python script every process runs")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="the script's arguments")
    ns = parser.parse_args(argv)
    try:
        return launch(ns.script, ns.args, ns.num_processes, ns.timeout)
    except (FileNotFoundError, ValueError) as e:
        print(e, file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
