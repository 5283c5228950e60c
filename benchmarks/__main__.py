"""Run the benchmark suite and print a markdown table of times and ratios.

    python -m benchmarks [--quick] [--only W1,W4] [--libs mytorch,jax] [--no-pin]
                         [--json results.json]

Every library runs on one thread: the thread variables of OpenMP / OpenBLAS / MKL are set
to 1 and XLA is told not to use its Eigen thread pool before anything imports NumPy, JAX
or PyTorch, torch.set_num_threads(1) is called, and the process is pinned to one core
(XLA's CPU runtime still starts worker threads; on one core they cannot run in parallel).
Workloads whose replicas run in parallel (W10, W11) run on every core the process
started with, and the pinning is restored after them.
"""

import os
import sys


def _single_thread(pin):
    """Set the thread variables (before NumPy/JAX/PyTorch are imported) and pin the
    process to its first allowed core when `pin`; returns a warning or None."""
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS"):
        os.environ[var] = "1"
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_cpu_multi_thread_eigen" not in flags:
        os.environ["XLA_FLAGS"] = (flags + " --xla_cpu_multi_thread_eigen=false").strip()
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    global _ALLOWED_CORES
    _ALLOWED_CORES = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    if pin and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    late = [m for m in ("numpy", "jax", "torch") if m in sys.modules]
    return f"{', '.join(late)} imported before the thread settings" if late else None


_ALLOWED_CORES = None
_WARNING = _single_thread(pin="--no-pin" not in sys.argv)

import argparse  # noqa: E402 -- after the thread settings, on purpose
import datetime  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402

from benchmarks import harness  # noqa: E402
from benchmarks.workloads import WORKLOADS  # noqa: E402
from benchmarks.workloads._libs import LIBS  # noqa: E402


def _parse(argv):
    p = argparse.ArgumentParser(prog="python -m benchmarks",
                                description="mytorch (jit) against NumPy, JAX and PyTorch")
    p.add_argument("--quick", action="store_true",
                   help="few rounds per workload: a smoke run, not a measurement")
    p.add_argument("--only", default="", help="comma-separated workload keys, e.g. W1,W4")
    p.add_argument("--libs", default=None,
                   help="comma-separated libraries besides NumPy (default: mytorch and "
                        "every installed one of jax, torch)")
    p.add_argument("--no-pin", action="store_true",
                   help="do not pin the process to one core")
    p.add_argument("--json", default=None, help="also write the raw timings here")
    return p.parse_args(argv)


def _select(only):
    keys = [k.strip().upper() for k in only.split(",") if k.strip()] or list(WORKLOADS)
    unknown = [k for k in keys if k not in WORKLOADS]
    if unknown:
        raise SystemExit(f"unknown workload {', '.join(unknown)}; "
                         f"choose from {', '.join(WORKLOADS)}")
    return keys


def _log(msg):
    print(msg, file=sys.stderr, flush=True)


def _dump(path, results):
    data = {w.key: {name: {"error": o.error, "mismatch": o.mismatch,
                           **({k: getattr(o.stats, k) for k in
                               ("median", "q1", "q3", "samples", "number", "cpu_per_wall")}
                              if o.stats else {})}
                    for name, o in outcomes.items()}
            for w, outcomes in results}
    with open(path, "w") as f:
        json.dump(data, f, indent=1)


def main(argv=None):
    """Run the selected workloads and print the table, the notes and the machine."""
    args = _parse(argv)
    harness.ALLOWED_CORES = _ALLOWED_CORES
    settings = harness.QUICK if args.quick else harness.DEFAULT
    libs = tuple(x.strip() for x in args.libs.split(",") if x.strip()) if args.libs else None
    if libs is not None and not set(libs) <= set(LIBS):
        raise SystemExit(f"unknown library in --libs {args.libs}; choose from {', '.join(LIBS)}")
    if _WARNING:
        _log(f"warning: {_WARNING}; thread limits may not apply")
    start, results = time.perf_counter(), []
    for key in _select(args.only):
        _log(f"{key}: {WORKLOADS[key].TITLE}")
        workload = WORKLOADS[key].build("full", libs)
        results.append((workload, harness.run_workload(workload, settings, _log)))
    print(f"## mytorch benchmarks ({'quick' if args.quick else 'default'} run, "
          f"{datetime.date.today().isoformat()})\n")
    print(harness.render_table(results))
    print("\nTimes are medians over interleaved rounds; ratio = contender time / base time "
          "(lower is better). Base is NumPy unless the Base column says otherwise.\n")
    for line in harness.render_notes(results):
        print(line)
    print("\nMachine:")
    for line in harness.machine_description():
        print(line)
    if args.json:
        _dump(args.json, results)
    _log(f"total {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
