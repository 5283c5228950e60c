"""The MPI communicator across 2 processes: every operation against its NumPy definition,
the schedule check (a diff on every rank, never a hang) and the collective timeout."""

import pytest

pytestmark = pytest.mark.mpi

OPERATIONS = """
    import numpy as np
    import ml_dtypes
    import mytorch.distributed as dist

    dist.initialize()
    from mpi4py import MPI
    from mytorch.distributed.mpi import MpiCommunicator

    comm = MpiCommunicator(MPI.COMM_WORLD.Dup())
    r, n = comm.rank, comm.size
    rng = np.random.default_rng(0)  # the same draws on every rank: each knows all inputs
    for dtype in (np.float32, np.float64, np.int32, np.int64, np.float16, np.complex64,
                  ml_dtypes.bfloat16, np.bool_):
        for shape in ((), (3,), (2, 3, 4)):
            xs = (rng.normal(size=(n, *shape)) * 4).astype(dtype)
            if dtype == np.bool_:
                xs = rng.normal(size=(n, *shape)) > 0
            x = xs[r].copy()
            ops = ("sum",) if dtype == np.complex64 else ("sum", "max", "min")
            for op in ops:
                want = {"sum": lambda a: a.sum(0, dtype=a.dtype) if a.dtype != np.bool_
                        else a.any(0), "max": lambda a: a.max(0),
                        "min": lambda a: a.min(0)}[op](xs)
                got = comm.allreduce(x, op)
                assert got.dtype == x.dtype and got.shape == x.shape, (dtype, shape, op)
                tol = 1e-2 if dtype in (np.float16, ml_dtypes.bfloat16) else 1e-6
                np.testing.assert_allclose(got.astype(np.float64) if dtype != np.complex64
                                           else got, want.astype(got.dtype), rtol=tol,
                                           err_msg=f"allreduce {op} {dtype} {shape}")
            np.testing.assert_array_equal(comm.allgather(x), xs)
            np.testing.assert_array_equal(x, xs[r])  # the argument is left unchanged
            full = (rng.normal(size=(n, n, *shape)) * 4).astype(dtype)
            if dtype == np.bool_:
                full = rng.normal(size=(n, n, *shape)) > 0
            mine = full[r]                      # rank r's operand: (n, *shape)
            got = comm.all_to_all(mine)
            np.testing.assert_array_equal(got, full[:, r])
            if dtype not in (np.complex64, np.bool_):
                got = comm.reduce_scatter(mine, "sum")
                want = full[:, r].astype(np.float64).sum(0)
                np.testing.assert_allclose(got.astype(np.float64), want, rtol=1e-2, atol=1e-2)
                assert got.dtype == mine.dtype and got.shape == shape
                got = comm.reduce_scatter(mine, "max")
                np.testing.assert_array_equal(got, full[:, r].max(0))
            for pairs in ([(0, 1), (1, 0)], [(0, 1)], [(1, 1)], [(1, 0)], [(0, 0), (1, 1)], []):
                got = comm.permute(x, pairs)
                src = [s for s, d in pairs if d == r]
                want = xs[src[0]] if src else np.zeros_like(x)
                np.testing.assert_array_equal(got, want, err_msg=f"permute {pairs}")
    comm.barrier()
    comm.check_schedule(b"same schedule", lambda: ["never called"])
    comm.group_start(); got = comm.allreduce(np.float32(r + 1), "sum"); comm.group_end()
    assert got == 3.0
    for bad in (lambda: comm.all_to_all(np.zeros(3)), lambda: comm.permute(np.zeros(2),
                [(0, 1), (1, 1)]), lambda: comm.allreduce(np.zeros(2), "prod")):
        try:
            bad()
        except ValueError as e:
            print("error:", str(e).split(":")[0])
    comm.close()
    print("ok", repr(comm))
"""


def test_every_operation_matches_numpy(launch_script):
    run = launch_script(OPERATIONS)
    assert run.returncode == 0, run
    for rank in (0, 1):
        assert run.lines(rank)[-1] == f"ok MpiCommunicator(rank={rank}, size=2)", run
        assert run.lines(rank).count("error: MpiCommunicator.all_to_all") == 1, run
        assert run.lines(rank).count("error: MpiCommunicator.permute") == 1, run
        assert run.lines(rank).count("error: MpiCommunicator.allreduce") == 1, run


DIVERGENT = """
    import numpy as np
    import mytorch.distributed as dist
    from mytorch.errors import CollectiveError

    dist.initialize()
    from mpi4py import MPI
    from mytorch.distributed.mpi import MpiCommunicator

    comm = MpiCommunicator(MPI.COMM_WORLD)
    schedule = ["psum i float32[4]", "all_gather i float32[4]", "psum i float32[]"]
    if comm.rank == 1:
        schedule[1] = "ppermute i float32[4]"
    try:
        comm.check_schedule("\\n".join(schedule).encode(), lambda: schedule)
    except CollectiveError as e:
        print(e)
        raise
    print("not raised")
"""


def test_divergent_schedule_raises_a_diff_on_every_rank(launch_script):
    run = launch_script(DIVERGENT, timeout=20)
    assert run.returncode == 1, run
    assert run.seconds < 15, run
    for rank, other in ((0, 1), (1, 0)):
        out = "\n".join(run.lines(rank))
        assert f"rank {rank} and rank {other}" in out, run
        assert f"--- rank {rank}" in out and f"+++ rank {other}" in out, run
        mine, theirs = ("all_gather", "ppermute") if rank == 0 else ("ppermute", "all_gather")
        assert f"-{mine} i float32[4]" in out and f"+{theirs} i float32[4]" in out, run
        assert "CollectiveError" in "\n".join(run.lines(rank, "stderr")), run
    assert "not raised" not in run.stdout
    assert "failed first: CollectiveError: rank" in run.stderr, run


def test_a_collective_past_the_timeout_names_the_rank_and_aborts_the_job(launch_script):
    run = launch_script("""
        import time
        import numpy as np
        import mytorch.distributed as dist

        dist.initialize()
        from mpi4py import MPI
        from mytorch.distributed.mpi import MpiCommunicator

        comm = MpiCommunicator(MPI.COMM_WORLD)
        if comm.rank == 1:
            time.sleep(60)  # never joins the collective
        comm.allreduce(np.ones((2, 3), np.float32), "sum")
        print("not reached")
    """, timeout=2)
    assert run.returncode != 0, run
    assert run.seconds < 20, run
    assert "not reached" not in run.stdout
    assert ("rank 0 failed first: CollectiveError: rank 0 of 2: the allreduce(sum) of "
            "float32[2, 3] did not complete within 2 s") in run.stderr, run


def test_timeout_raises_when_not_aborting(launch_script):
    run = launch_script("""
        import time
        import numpy as np
        import mytorch.distributed as dist
        from mytorch.errors import CollectiveError

        dist.initialize()
        from mpi4py import MPI
        from mytorch.distributed.mpi import MpiCommunicator

        comm = MpiCommunicator(MPI.COMM_WORLD, abort_on_timeout=False)
        if comm.rank == 1:
            time.sleep(4)
            print("rank 1 done")
        else:
            for _ in range(2):
                try:
                    comm.allgather(np.ones(3))
                except CollectiveError as e:
                    print(type(e).__name__, e)
    """, timeout=1)
    assert run.returncode == 0, run
    out = run.lines(0)
    assert out[0].startswith("CollectiveError rank 0 of 2: the allgather of float64[3] did "
                             "not complete within 1 s"), run
    assert "an earlier collective failed" in out[1], run
