"""Timing harness of the benchmark suite: contenders measured interleaved, medians, a table.

A workload (see `benchmarks/workloads/`) describes a computation as a `Workload`: its
contenders (one per library or variant, each a factory of a zero-argument callable that
runs the computation once and returns its result), the NumPy reference result, and the rows
of the table (which contender is the base of each row's ratios).

How a group of contenders is timed (`measure_group`):

1. each contender is built and called once; that call is the warm-up (excluded) and its
   result is checked against the NumPy reference;
2. each contender gets an inner repeat count so that one sample lasts at least
   `min_sample_s` (a sample is the mean over its inner repeats; first-call latencies use
   one call per sample, each of a freshly built function, its caches cleared untimed);
3. rounds: every round takes one sample of every contender, round-robin, the starting
   contender rotating from round to round, so slow drifts of the machine (frequency,
   other processes) hit every contender alike; the number of rounds follows from the
   time budget, clamped to [min_rounds, max_rounds];
4. the reported time is the median sample; the garbage collector is off while timing.
"""

import dataclasses
import gc
import math
import os
import platform
import statistics
import time
from collections.abc import Callable

COLUMNS = (("mytorch", "mytorch"), ("jax", "JAX"), ("torch", "PyTorch"))


@dataclasses.dataclass
class Contender:
    """One way of running a workload.

    name: unique in the workload ("numpy", "mytorch", "jax_first", ...).
    make: builds and returns the zero-argument callable to time (imports happen here, so
      a missing library or API becomes an error in the table rather than a crash).
    group: contenders of one group are interleaved with each other; groups run apart.
    first_call: time single calls of fresh callables: `make()` then returns a factory,
      called untimed before every sample, whose callable is timed (first-call latency:
      each sample builds a new function and clears caches so no compilation cache hits).
    result: turns what the callable returns into the reference's form (e.g. a model's
      weights transposed to the reference's layout); applied untimed, to the warm-up only.
    check: "values" (the result must equal the reference within the workload's tolerances)
      or "shapes" (only shapes and finiteness: a computation that draws random numbers
      with its own generator, such as dropout, cannot match the reference's values).
    """

    name: str
    make: Callable[[], Callable[[], object]]
    group: str = "steady"
    first_call: bool = False
    result: Callable[[object], object] | None = None
    check: str = "values"


@dataclasses.dataclass
class Row:
    """A table row: `base` is the contender every ratio of the row divides by, named
    `base_label` in the table; `cells` maps a column ("mytorch", "jax", "torch") to the
    contender shown there; `base_vs` names a contender the base time is also compared to."""

    label: str
    base: str
    cells: dict[str, str]
    base_label: str = "NumPy"
    base_vs: str | None = None


@dataclasses.dataclass
class Workload:
    """A benchmark: contenders, the NumPy reference result, rows and notes. `all_cores`:
    its contenders run replicas in parallel (threads or processes), so the harness lifts
    the one-core pinning while it runs (see ALLOWED_CORES). `min_sample_s`, if set, is the
    shortest sample of every contender (several calls back to back, as a training loop
    runs its steps), where the settings' default would time single calls."""

    key: str
    title: str
    contenders: list[Contender]
    expected: object
    rows: list[Row]
    notes: list[str] = dataclasses.field(default_factory=list)
    rtol: float = 1e-4
    atol: float = 1e-5
    all_cores: bool = False
    min_sample_s: float = None


# The cores the process may run on before `python -m benchmarks` pinned it to one; a
# workload with `all_cores` (replicas that must overlap) runs on these.
ALLOWED_CORES = None


@dataclasses.dataclass
class Settings:
    """How long to measure: per-group time budget (s), round limits, sample length (s)."""

    budget_s: float = 12.0
    min_rounds: int = 7
    max_rounds: int = 300
    min_sample_s: float = 2e-3


DEFAULT = Settings()
QUICK = Settings(budget_s=0.6, min_rounds=3, max_rounds=15, min_sample_s=1e-3)


@dataclasses.dataclass
class Stats:
    """Timing of one contender: seconds per call (median, quartiles), how many samples,
    calls per sample, and process CPU time over wall time (about 1 when single-threaded)."""

    median: float
    q1: float
    q3: float
    samples: int
    number: int
    cpu_per_wall: float


@dataclasses.dataclass
class Outcome:
    """What became of a contender: its stats, or the error that stopped it, and whether
    its result matched the reference."""

    stats: Stats | None = None
    error: str | None = None
    mismatch: str | None = None


# ---- results ------------------------------------------------------------------------------
def to_numpy(tree):
    """A result as nested lists of NumPy arrays (copies: later in-place steps can't change
    them); accepts NumPy, mytorch, JAX and PyTorch arrays inside tuples/lists/dicts."""
    import numpy as np

    if isinstance(tree, dict):
        return {k: to_numpy(v) for k, v in sorted(tree.items())}
    if isinstance(tree, (list, tuple)):
        return [to_numpy(v) for v in tree]
    if hasattr(tree, "detach"):  # a torch tensor, maybe requiring grad
        tree = tree.detach().cpu().numpy()
    return np.array(tree, copy=True)


def compare(got, want, rtol, atol):
    """None when the two results agree leaf by leaf (shapes and values within
    rtol * |want| + atol), else a message naming the first leaf that differs."""
    import numpy as np

    got, want = to_numpy(got), to_numpy(want)
    leaves_got, leaves_want = _leaves(got), _leaves(want)
    if len(leaves_got) != len(leaves_want):
        return f"{len(leaves_got)} result arrays, expected {len(leaves_want)}"
    for i, (g, w) in enumerate(zip(leaves_got, leaves_want, strict=True)):
        if g.shape != w.shape:
            return f"result {i} has shape {g.shape}, expected {w.shape}"
        err = np.abs(g.astype(np.float64) - w.astype(np.float64))
        bad = err > atol + rtol * np.abs(w.astype(np.float64))
        if bad.any():
            return (f"result {i} differs at {int(bad.sum())} of {w.size} entries "
                    f"(max abs error {err.max():.3g})")
    return None


def compare_shapes(got, want):
    """None when the two results have the same number of arrays, each of the reference's
    shape, all finite; else a message naming the first that is not."""
    import numpy as np

    leaves_got, leaves_want = _leaves(to_numpy(got)), _leaves(to_numpy(want))
    if len(leaves_got) != len(leaves_want):
        return f"{len(leaves_got)} result arrays, expected {len(leaves_want)}"
    for i, (g, w) in enumerate(zip(leaves_got, leaves_want, strict=True)):
        if g.shape != w.shape:
            return f"result {i} has shape {g.shape}, expected {w.shape}"
        if not np.isfinite(g).all():
            return f"result {i} has {int((~np.isfinite(g)).sum())} non-finite entries"
    return None


def check_result(contender, out, workload):
    """None when a contender's output `out` passes its check against the workload's
    reference (see `Contender.result` and `Contender.check`), else what is wrong."""
    if contender.result is not None:
        out = contender.result(out)
    if contender.check == "shapes":
        return compare_shapes(out, workload.expected)
    if contender.check != "values":
        raise ValueError(f"{contender.name}: check must be 'values' or 'shapes', "
                         f"got {contender.check!r}")
    return compare(out, workload.expected, workload.rtol, workload.atol)


def _leaves(tree):
    if isinstance(tree, dict):
        return [x for v in tree.values() for x in _leaves(v)]
    if isinstance(tree, list):
        return [x for v in tree for x in _leaves(v)]
    return [tree]


# ---- timing -------------------------------------------------------------------------------
def _calibrate(fn, min_sample_s):
    """Calls per sample so that one sample lasts at least min_sample_s, from the fastest of
    three calls (the second and third call of a jitted function may still do one-time
    work, such as generating its cache-hit path; only a call over a second ends early)."""
    best = math.inf
    for _ in range(3):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
        if best > 1.0:
            break
    return max(1, math.ceil(min_sample_s / max(best, 1e-9))), best


def _sample(fn, number):
    """Wall seconds per call over `number` calls, and the process CPU seconds spent."""
    c0, t0 = time.process_time(), time.perf_counter()
    for _ in range(number):
        fn()
    wall = time.perf_counter() - t0
    return wall / number, time.process_time() - c0, wall


def _prepare(c, workload):
    """Build and warm up a contender: (fn or factory or None, Outcome, warm-up seconds)."""
    try:
        fn = c.make()
        t0 = time.perf_counter()
        out = (fn() if c.first_call else fn)()
        seconds = time.perf_counter() - t0
        mismatch = check_result(c, out, workload)
        return fn, Outcome(mismatch=mismatch), seconds
    except Exception as e:  # noqa: BLE001 -- one broken contender must not stop the suite
        return None, Outcome(error=f"{type(e).__name__}: {e}".splitlines()[0][:200]), 0.0


def measure_group(contenders, workload, settings):
    """Time one group of contenders interleaved; returns {name: Outcome}."""
    outcomes, fns, numbers, per_round = {}, {}, {}, 0.0
    for c in contenders:
        fn, outcomes[c.name], one = _prepare(c, workload)
        if fn is None:
            continue
        if c.first_call:
            numbers[c.name] = 1
        else:
            numbers[c.name], one = _calibrate(fn, settings.min_sample_s)
        fns[c.name] = fn
        per_round += numbers[c.name] * one
    live = [c for c in contenders if c.name in fns]
    if not live:
        return outcomes
    rounds = int(settings.budget_s / max(per_round, 1e-9))
    rounds = max(settings.min_rounds, min(settings.max_rounds, rounds))
    samples = {c.name: [] for c in live}
    cpu = {c.name: [0.0, 0.0] for c in live}
    gc.collect()
    gc.disable()
    try:
        for r in range(rounds):
            for c in live[r % len(live):] + live[:r % len(live)]:
                fn = fns[c.name]() if c.first_call else fns[c.name]
                per_call, cpu_s, wall = _sample(fn, numbers[c.name])
                samples[c.name].append(per_call)
                cpu[c.name][0] += cpu_s
                cpu[c.name][1] += wall
    finally:
        gc.enable()
    for c in live:
        s = sorted(samples[c.name])
        q = statistics.quantiles(s, n=4) if len(s) > 1 else [s[0]] * 3
        outcomes[c.name].stats = Stats(statistics.median(s), q[0], q[2], len(s),
                                       numbers[c.name], cpu[c.name][0] / cpu[c.name][1])
    return outcomes


def run_workload(workload, settings, log=None):
    """Measure every group of a workload; returns {contender name: Outcome}."""
    pinned = _unpin() if workload.all_cores else None
    if workload.min_sample_s is not None and settings.min_sample_s < workload.min_sample_s:
        settings = dataclasses.replace(settings, min_sample_s=workload.min_sample_s)
    try:
        return _run_groups(workload, settings, log)
    finally:
        if pinned is not None:
            os.sched_setaffinity(0, pinned)


def _unpin():
    """Let the process run on ALLOWED_CORES; returns the affinity to restore, or None."""
    if ALLOWED_CORES is None or not hasattr(os, "sched_setaffinity"):
        return None
    pinned = os.sched_getaffinity(0)
    os.sched_setaffinity(0, ALLOWED_CORES)
    return pinned


def _run_groups(workload, settings, log):
    groups = {}
    for c in workload.contenders:
        groups.setdefault(c.group, []).append(c)
    outcomes = {}
    for name, members in groups.items():
        t0 = time.perf_counter()
        outcomes.update(measure_group(members, workload, settings))
        if log:
            log(f"  {workload.key} {name}: {time.perf_counter() - t0:.1f} s")
    return outcomes


# ---- output -------------------------------------------------------------------------------
def fmt_time(seconds):
    """A duration with a unit that keeps 3 significant digits readable."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def _cell(outcome, base):
    """(time text, ratio text) of one table cell."""
    if outcome is None:
        return "n/a", ""
    if outcome.error is not None:
        return "error", ""
    t = outcome.stats.median
    flag = " (MISMATCH)" if outcome.mismatch else ""
    ratio = f"{t / base.stats.median:.2f}x" if base and base.stats else ""
    return fmt_time(t) + flag, ratio


def render_table(results):
    """Markdown table: results is a list of (Workload, {name: Outcome})."""
    head = ["Workload", "Base", "Base time"]
    for _, title in COLUMNS:
        head += [title, "ratio"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for workload, outcomes in results:
        for row in workload.rows:
            base = outcomes.get(row.base)
            base_time, _ = _cell(base, None)
            other = outcomes.get(row.base_vs) if row.base_vs else None
            if other is not None and other.stats and base and base.stats:
                base_time += f" ({base.stats.median / other.stats.median:.2f}x {row.base_vs})"
            cells = [row.label, row.base_label, base_time]
            for key, _ in COLUMNS:
                name = row.cells.get(key)
                cells += list(_cell(outcomes.get(name) if name else None, base))
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def render_notes(results):
    """Lines explaining mismatches, errors, threading and per-workload notes."""
    lines = []
    for workload, outcomes in results:
        for note in workload.notes:
            lines.append(f"- {workload.key}: {note}")
        for name, o in outcomes.items():
            if o.error:
                lines.append(f"- {workload.key} {name}: not measured, {o.error}")
            if o.mismatch:
                lines.append(f"- {workload.key} {name}: RESULT MISMATCH vs NumPy: {o.mismatch}")
            if o.stats and o.stats.cpu_per_wall > 1.3:
                lines.append(f"- {workload.key} {name}: used {o.stats.cpu_per_wall:.1f} cores "
                             "(CPU time / wall time): not single-threaded")
    return lines


def machine_description():
    """Lines describing the CPU, core pinning and library versions."""
    import numpy as np

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name"))
    except (OSError, StopIteration):
        pass
    try:
        pinned = sorted(os.sched_getaffinity(0))
    except AttributeError:
        pinned = None
    lines = [f"- CPU: {cpu}, {os.cpu_count()} logical cores; this process runs on "
             f"{'cores ' + ','.join(map(str, pinned)) if pinned else 'all cores'}"
             + (f" (workloads running replicas: cores {','.join(map(str, sorted(ALLOWED_CORES)))})"
                if ALLOWED_CORES and pinned and set(ALLOWED_CORES) != set(pinned) else ""),
             f"- Python {platform.python_version()}, NumPy {np.__version__} "
             f"(BLAS: {_blas_name(np)})"]
    for mod in ("jax", "jaxlib", "torch"):
        version = _version(mod)
        lines.append(f"- {mod}: {version or 'not installed'}")
    threads = ", ".join(f"{k}={os.environ.get(k, '')}" for k in
                        ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                         "XLA_FLAGS"))
    lines.append(f"- threads: {threads}")
    return lines


def _version(mod):
    from importlib import metadata

    try:
        return metadata.version(mod)
    except metadata.PackageNotFoundError:
        return None


def _blas_name(np):
    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        return f"{blas.get('name', '?')} {blas.get('version', '')}".strip()
    except Exception:  # noqa: BLE001 -- older NumPy: no dict mode
        return "unknown"
