"""psum bandwidth over MPI: the all-reduce (sum) of a float32 buffer between 2 processes,
against a memory copy of the same size in one process.

    python -m benchmarks.psum_bandwidth [--quick] [--json out.json]

starts itself on 2 ranks through `python -m mytorch.distributed.launch` (unpinned, one
BLAS thread) and prints a markdown table, one row per buffer size (1 KiB .. 64 MiB):

- memcpy: `np.copyto(dst, src)` on rank 0, rank 1 idle (asleep);
- MPI: mpi4py's blocking `comm.Allreduce` on the raw buffers (what MPI itself gives);
- communicator: `MpiCommunicator.allreduce(x, "sum")`, the call compiled replicas make
  (non-blocking MPI polled against the collective timeout, a new result buffer);
- pmap psum: `mt.pmap(lambda x: lax.psum(x, "i"))` over the 2 processes' devices, the
  whole call (argument slicing, dispatch, the replica, the sharded result).

Times are medians over interleaved rounds (each round one sample of each, the first
rotating); every collective sample starts after a barrier, timed on rank 0; a sample
repeats the operation until it lasts at least 2 ms. GB/s is the buffer's size over the
time (for the copy: bytes copied; for an all-reduce: the bytes each rank contributes, the
"algorithm bandwidth" of nccl-tests); ratio = time / memcpy's time.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, _REPO)

import numpy as np  # noqa: E402 -- after the thread settings

SIZES = [2**k for k in range(10, 27, 2)]  # 1 KiB .. 64 MiB
QUICK_SIZES = SIZES[:6]
KINDS = ("memcpy", "mpi", "communicator", "pmap")
_SAMPLE_S = 2e-3


def _parse(argv):
    p = argparse.ArgumentParser(prog="python -m benchmarks.psum_bandwidth",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="sizes up to 1 MiB, few rounds")
    p.add_argument("--json", default=None, help="also write the raw timings here")
    p.add_argument("--out", default=None, help=argparse.SUPPRESS)  # a rank's result file
    return p.parse_args(argv)


def main(argv=None):
    """Run the measurement on 2 ranks through the launcher and print its table."""
    args = _parse(argv)
    from benchmarks.workloads import _mpi

    why = _mpi.missing()
    if why:
        raise SystemExit(f"psum_bandwidth: {why}")
    with tempfile.TemporaryDirectory() as folder:
        out = os.path.join(folder, "result.json")
        command = [sys.executable, "-m", "mytorch.distributed.launch", "-n", "2",
                   os.path.abspath(__file__), "--out", out] + (["--quick"] if args.quick else [])
        status = subprocess.call(command, cwd=_REPO, stdout=sys.stderr)
        if status:
            raise SystemExit(f"psum_bandwidth: the 2-rank run failed (exit status {status})")
        with open(out) as f:
            result = json.load(f)
    print(render(result))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)


def render(result):
    """The markdown table and machine lines of a rank's result."""
    lines = ["| size | memcpy | GB/s | MPI Allreduce | GB/s | ratio | communicator "
             "| GB/s | ratio | pmap psum | GB/s | ratio |", "|" + "---|" * 12]
    from benchmarks.harness import fmt_time

    for row in result["rows"]:
        size, t = row["bytes"], row["median"]
        cells = [_size(size)]
        for kind in KINDS:
            cells += [fmt_time(t[kind]), f"{size / t[kind] / 1e9:.2f}"]
            if kind != "memcpy":
                cells.append(f"{t[kind] / t['memcpy']:.1f}x")
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", f"Rounds per size: {result['rounds']}; times are medians, ratio = time / "
              "memcpy's time.", "", "Machine:"] + [f"- {m}" for m in result["machine"]]
    return "\n".join(lines)


def _size(n):
    return f"{n // 2**20} MiB" if n >= 2**20 else f"{n // 2**10} KiB"


# ---- one rank ---------------------------------------------------------------------------------
def _idle_barrier(comm):
    """A barrier that sleeps while it waits (an idle rank must not take a core)."""
    request = comm.Ibarrier()
    while not request.Test():
        time.sleep(1e-4)


def _operations(comm, size):
    """{kind: zero-argument callable} for a float32 buffer of `size` bytes."""
    import mytorch as mt
    from mytorch import lax
    from mytorch.distributed.mpi import MpiCommunicator

    n = size // 4
    x = np.random.default_rng(comm.Get_rank()).standard_normal(n).astype(np.float32)
    dst, recv = np.empty_like(x), np.empty_like(x)
    endpoint = MpiCommunicator(comm)
    psum = mt.pmap(lambda v: lax.psum(v, "i"), "i", devices=mt.devices())
    stacked = np.broadcast_to(x, (2, n))  # each process reads its own row only
    return {"memcpy": lambda: np.copyto(dst, x),
            "mpi": lambda: comm.Allreduce(x, recv),
            "communicator": lambda: endpoint.allreduce(x, "sum"),
            "pmap": lambda: psum(stacked)}


def _sample(comm, kind, fn, number):
    """Seconds per call of `fn` over `number` calls, timed on rank 0 (memcpy: rank 0 alone)."""
    _idle_barrier(comm)
    if kind == "memcpy" and comm.Get_rank() != 0:
        return 0.0
    t0 = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - t0) / number


def measure(comm, size, rounds):
    """{kind: median seconds per call} for a buffer of `size` bytes."""
    ops = _operations(comm, size)
    numbers = {}
    for kind, fn in ops.items():
        fn()  # warm-up (pmap compiles here)
        one = _sample(comm, kind, fn, 1)
        numbers[kind] = comm.bcast(max(1, int(_SAMPLE_S / max(one, 1e-9)) + 1), root=0)
    samples = {kind: [] for kind in KINDS}
    for r in range(rounds):
        for kind in KINDS[r % len(KINDS):] + KINDS[:r % len(KINDS)]:
            samples[kind].append(_sample(comm, kind, ops[kind], numbers[kind]))
    return {kind: statistics.median(s) for kind, s in samples.items()}


def rank_main(args):
    """One rank: measure every size; rank 0 writes the result to args.out."""
    import mytorch.distributed as dist
    from benchmarks.harness import machine_description

    dist.initialize()
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    sizes, rounds = (QUICK_SIZES, 5) if args.quick else (SIZES, 31)
    rows = []
    for size in sizes:
        rows.append({"bytes": size, "median": measure(comm, size, rounds)})
        if comm.Get_rank() == 0:
            print(f"psum_bandwidth: {_size(size)} done", file=sys.stderr, flush=True)
    if comm.Get_rank() == 0:
        machine = [m.removeprefix("- ") for m in machine_description()]
        machine.append(f"2 MPI processes (mpi4py {_mpi4py_version()}), each on cores "
                       f"{','.join(map(str, sorted(os.sched_getaffinity(0))))}")
        with open(args.out, "w") as f:
            json.dump({"rows": rows, "rounds": rounds, "machine": machine}, f)


def _mpi4py_version():
    import mpi4py

    return mpi4py.__version__


if __name__ == "__main__":
    _args = _parse(sys.argv[1:])
    if _args.out:
        rank_main(_args)
    else:
        main(sys.argv[1:])
