"""W10 as a training loop runs it: the data-parallel MLP step (784-512-512-10, SGD, global
batch 256) timed inside the replicas, steps back to back, against the one-device jit step
timed in the same run.

    python -m benchmarks.data_parallel_loop [--rounds R]

starts itself on 2 ranks through `python -m mytorch.distributed.launch` and prints, as
timed on rank 0: the median step of `jit(step)` on the whole batch on one device (rank 1
idle at a barrier), of `pmap(step)` over the 2 processes (one replica each) and, in this
process before the launch, of `pmap(step)` over 2 virtual CPU devices (threads); and the
ratios of the two pmap steps to the one-device step. `python -m benchmarks`' W10 times
the same steps from its harness process, one command per step (the MPI ranks wait on a
socket between steps); here nothing stands between two steps but the loop.
"""

import argparse
import os
import statistics
import subprocess
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, _REPO)


def _median_ms(fn, rounds, steps=5, before=None):
    """Median over `rounds` samples of `steps` back-to-back calls of fn, ms per call."""
    fn()
    fn()
    samples = []
    for _ in range(rounds):
        if before is not None:
            before()
        t0 = time.perf_counter()
        for _ in range(steps):
            fn()
        samples.append((time.perf_counter() - t0) / steps)
    return 1e3 * statistics.median(samples)


def _threads(rounds):
    """(one-device ms, pmap over 2 virtual devices ms) in this process."""
    import mytorch as mt

    from benchmarks.workloads import w10_data_parallel as w10

    mt.config.update("num_cpu_devices", 2)
    one = w10._make_mytorch("full")
    two = w10.pmap_step("full", mt.devices()[:2])
    return _median_ms(one, rounds), _median_ms(two, rounds)


def rank_main(rounds):
    """On each rank: time the one-device step on rank 0 alone, then the pmap step."""
    import mytorch as mt
    import mytorch.distributed as dist

    from benchmarks.workloads import w10_data_parallel as w10

    dist.initialize()
    comm = dist.world_communicator()
    if mt.process_index() == 0:
        one = _median_ms(w10._make_mytorch("full"), rounds)
    comm.barrier()
    two = _median_ms(w10.pmap_step("full", mt.devices()), rounds, before=comm.barrier)
    if mt.process_index() == 0:
        print(f"RESULT {one} {two}", flush=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=30)
    p.add_argument("--rank", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.rank:
        return rank_main(args.rounds)
    one_t, two_t = _threads(args.rounds)
    command = [sys.executable, "-m", "mytorch.distributed.launch", "-n", "2",
               os.path.abspath(__file__), "--rank", "--rounds", str(args.rounds)]
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    one_m, two_m = (float(v) for v in out.split("RESULT")[1].split())
    print("| step, global batch 256 | ms | ratio to one device (same process) |")
    print("|---|---|---|")
    print(f"| jit, one device (threads run) | {one_t:.2f} | 1 |")
    print(f"| pmap, 2 virtual CPU devices (threads) | {two_t:.2f} | {two_t / one_t:.2f}x |")
    print(f"| jit, one device (MPI run, rank 0 alone) | {one_m:.2f} | 1 |")
    print(f"| pmap, 2 MPI processes | {two_m:.2f} | {two_m / one_m:.2f}x |")


if __name__ == "__main__":
    main()
