"""One rank of a launched run: the process mpiexec starts, supervising the user's script.

    python worker.py SCRIPT [ARGS...]        the rank's supervisor (what mpiexec runs)
    python worker.py --run SCRIPT [ARGS...]  the script itself, in the supervisor's child

The supervisor runs the script in a child process (which inherits MPI's environment, so
the child is the MPI process), copies the child's stdout and stderr line by line with the
prefix `[rank r] `, and when the child ends writes a report for the launcher: the time, and the exit status
or the signal that killed it, or that the rank was stopped from outside (by a signal to
the supervisor, which it passes on to the child) or succeeded. A rank with no report was
killed with its supervisor. The child (`--run`) writes the summary
of an uncaught exception (or of a non-zero `sys.exit`) the moment it happens, then exits
at once: peers would otherwise wait in MPI's finalization. Reports go to the folder named
by MYTORCH_LAUNCH_DIR; without it (a script not started by the launcher) nothing is written.

This file uses only the standard library and is run by path, so a rank's supervisor does
not import mytorch.
"""

import json
import os
import runpy
import signal
import subprocess
import sys
import threading
import time
import traceback

# the environment variables MPI implementations give each process its rank and size in
_RANK_VARS = ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK")
_SIZE_VARS = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE")
# the files of the frames between the runner and the user's script
_RUNNER_FILES = (__file__, runpy.__file__, "<frozen runpy>")


def report_failure(summary):
    """Record why this rank failed (`summary`, one line) for the launcher, unless a
    failure was already recorded for it; a no-op outside a launched run."""
    folder, rank = os.environ.get("MYTORCH_LAUNCH_DIR"), os.environ.get("MYTORCH_PROCESS_ID")
    if not folder or rank is None:
        return
    _write_report(os.path.join(folder, f"failure-{rank}.json"),
                  {"rank": int(rank), "time": time.time(), "summary": summary})


def _write_report(path, record):
    if os.path.exists(path):
        return
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        json.dump(record, f)
    os.replace(tmp, path)  # the launcher never sees half a report


def _env_int(names):
    for name in names:
        if name in os.environ:
            return int(os.environ[name])
    raise RuntimeError(f"mytorch.distributed.worker: none of {', '.join(names)} is set: "
                       f"this file is run by mpiexec, through `python -m "
                       f"mytorch.distributed.launch`")


def _die_with_parent():
    """In the child before exec: be killed when the supervisor dies (Linux), so a rank
    stopped by the launcher leaves no orphan blocked in a collective."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _copy_lines(source, sink, prefix):
    """Copy the bytes of `source` to `sink` a line at a time, each line prefixed."""
    for line in iter(source.readline, b""):
        if not line.endswith(b"\n"):
            line += b"\n"
        sink.write(prefix + line)
        sink.flush()
    source.close()


def supervise(argv):
    """Run `argv` (script and arguments) as this rank's child; returns the exit status."""
    rank, size = _env_int(_RANK_VARS), _env_int(_SIZE_VARS)
    env = dict(os.environ, MYTORCH_PROCESS_ID=str(rank), MYTORCH_NUM_PROCESSES=str(size))
    # MPICH's process manager talks to its processes over an inherited descriptor
    keep = (int(os.environ["PMI_FD"]),) if "PMI_FD" in os.environ else ()
    child = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--run", *argv],
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             pass_fds=keep, preexec_fn=_die_with_parent)
    stopped = []

    def forward(signum, _frame):
        stopped.append(signum)
        child.send_signal(signum)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    prefix = f"[rank {rank}] ".encode()
    copies = [threading.Thread(target=_copy_lines, args=(pipe, sink, prefix), daemon=True)
              for pipe, sink in ((child.stdout, sys.stdout.buffer),
                                 (child.stderr, sys.stderr.buffer))]
    for t in copies:
        t.start()
    code = child.wait()
    for t in copies:
        t.join(timeout=5)
    folder = os.environ.get("MYTORCH_LAUNCH_DIR")
    if folder:
        # a rank stopped from outside (the launcher, MPI's process manager) did not fail
        record = {"rank": rank, "time": time.time(), "returncode": code}
        if code < 0:
            record["signal"] = signal.Signals(-code).name
        kind = "done" if code == 0 else "stopped" if stopped else "exit"
        _write_report(os.path.join(folder, f"{kind}-{rank}.json"), record)
    return code if code >= 0 else 128 - code


def _exit_now(status):
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


def run(argv):
    """Run the script `argv[0]` as `__main__` with arguments `argv[1:]`, reporting an
    uncaught exception or a non-zero exit status before exiting."""
    script = argv[0]
    sys.argv = list(argv)
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as e:
        if e.code is None or e.code == 0:
            raise
        status = e.code if isinstance(e.code, int) else 1
        if not isinstance(e.code, int):
            print(e.code, file=sys.stderr)
        report_failure(f"exited with status {status}")
        _exit_now(status)
    except BaseException as e:  # noqa: BLE001  (reported, then the process ends)
        tb = e.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename in _RUNNER_FILES:
            tb = tb.tb_next  # the frames of this runner are not the user's
        traceback.print_exception(type(e), e, tb)
        frames = traceback.extract_tb(tb)
        # the script's innermost line, where the error surfaced in the user's code
        ours = [f for f in frames if f.filename == script] or frames
        where = f" (at {ours[-1].filename}:{ours[-1].lineno})" if ours else ""
        message = str(e).strip().splitlines()
        report_failure(f"{type(e).__name__}: {message[0] if message else ''}{where}")
        _exit_now(1)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--run"]:
        run(sys.argv[2:])
    else:
        sys.exit(supervise(sys.argv[1:]))
