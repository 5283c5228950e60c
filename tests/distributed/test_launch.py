"""The launcher (`python -m mytorch.distributed.launch`): output prefixed by rank, exit
status propagation, and fail-fast: the first failed rank is named and the others stopped."""

import os
import subprocess
import sys

import pytest

from mytorch.distributed import launch

pytestmark = pytest.mark.mpi


def test_output_is_prefixed_by_rank_line_by_line(launch_script):
    run = launch_script("""
        import os, sys
        r = os.environ["MYTORCH_PROCESS_ID"]
        print(f"hello from {r}\\nsecond line", sys.argv[1:])
        print(f"to stderr {r}", file=sys.stderr)
        sys.stdout.write("no newline at the end")
    """, args=("a", "--b"))
    assert run.returncode == 0, run
    for rank in (0, 1):
        assert run.lines(rank) == [f"hello from {rank}", "second line ['a', '--b']",
                                   "no newline at the end"], run
        assert run.lines(rank, "stderr") == [f"to stderr {rank}"], run
    assert all(ln.startswith("[rank ") for ln in run.stdout.splitlines()), run


def test_the_first_nonzero_exit_status_is_returned(launch_script):
    run = launch_script("""
        import os, sys, time
        if os.environ["MYTORCH_PROCESS_ID"] == "1":
            sys.exit(3)
        time.sleep(30)
    """)
    assert run.returncode == 3, run
    assert run.seconds < 15, run
    assert "rank 1 failed first: exited with status 3" in run.stderr, run
    assert "stopped rank 0" in run.stderr, run


def test_an_exception_is_reported_with_the_users_line(launch_script):
    run = launch_script("""
        import os
        import numpy as np
        if os.environ["MYTORCH_PROCESS_ID"] == "0":
            np.zeros(2) @ np.zeros(3)
    """)
    assert run.returncode == 1, run
    assert "rank 0 failed first: ValueError: matmul" in run.stderr, run
    assert "script.py:5)" in run.stderr, run
    assert any("Traceback" in ln for ln in run.lines(0, "stderr")), run
    assert "runpy" not in run.stderr  # the runner's own frames are not shown


def test_a_killed_worker_stops_the_others_within_the_timeout(launch_script):
    run = launch_script("""
        import os, signal
        import numpy as np
        import mytorch.distributed as dist

        dist.initialize()
        from mpi4py import MPI
        from mytorch.distributed.mpi import MpiCommunicator

        comm = MpiCommunicator(MPI.COMM_WORLD)
        comm.allreduce(np.ones(3), "sum")  # both ranks are up
        print("first collective done")
        if comm.rank == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        comm.allreduce(np.ones(3), "sum")
        print("not reached")
    """, timeout=10)
    assert run.returncode == 128 + 9, run
    assert run.seconds < 10, run
    assert run.lines(0) == run.lines(1) == ["first collective done"], run
    assert "rank 1 failed first: killed by signal SIGKILL" in run.stderr, run
    assert "stopped rank 0" in run.stderr, run


def test_every_rank_succeeding_returns_zero(launch_script):
    run = launch_script("print('fine')", n=3)
    assert run.returncode == 0, run
    assert sorted(run.stdout.splitlines()) == [f"[rank {r}] fine" for r in range(3)]
    assert "failed" not in run.stderr


def test_launcher_errors(tmp_path, monkeypatch):
    script = tmp_path / "s.py"
    script.write_text("print(1)")
    with pytest.raises(FileNotFoundError, match="no script"):
        launch.launch(str(tmp_path / "missing.py"), mpiexec="/bin/true")
    with pytest.raises(ValueError, match="positive int"):
        launch.launch(str(script), num_processes=0, mpiexec="/bin/true")
    with pytest.raises(ValueError, match="--timeout must be a positive"):
        launch.launch(str(script), timeout=0, mpiexec="/bin/true")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="no mpiexec on PATH: pip install"):
        launch.launch(str(script))


def test_command_line_usage_errors():
    done = subprocess.run([sys.executable, "-m", "mytorch.distributed.launch", "-n", "2",
                           "/nonexistent/script.py"], capture_output=True, text=True)
    assert done.returncode == 2
    assert "no script '/nonexistent/script.py'" in done.stderr
    done = subprocess.run([sys.executable, "-m", "mytorch.distributed", "--help"],
                          capture_output=True, text=True)
    assert done.returncode == 0 and "-n NUM_PROCESSES" in done.stdout


def test_each_rank_gets_its_share_of_the_cores_unless_the_user_set_it(monkeypatch):
    monkeypatch.setattr(launch.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3},
                        raising=False)
    assert launch.thread_limits({}, 2) == {"OMP_NUM_THREADS": "2",
                                           "OPENBLAS_NUM_THREADS": "2",
                                           "MKL_NUM_THREADS": "2"}
    assert launch.thread_limits({}, 8)["OPENBLAS_NUM_THREADS"] == "1"  # at least one
    mine = launch.thread_limits({"OPENBLAS_NUM_THREADS": "3"}, 2)
    assert "OPENBLAS_NUM_THREADS" not in mine and mine["OMP_NUM_THREADS"] == "2"


def test_the_ranks_see_their_thread_limits(launch_script, monkeypatch):
    for name in launch._THREAD_VARS:
        monkeypatch.delenv(name, raising=False)
    run = launch_script("""
        import os
        print("threads", os.environ["OPENBLAS_NUM_THREADS"], os.environ["OMP_NUM_THREADS"])
    """)
    share = str(max(1, len(os.sched_getaffinity(0)) // 2))
    assert run.returncode == 0, run
    for rank in (0, 1):
        assert run.lines(rank) == [f"threads {share} {share}"], run
