"""GPU benchmarks: fused elementwise chains against unfused CuPy and a device-to-device
copy, and the example models' training steps against PyTorch eager and JAX jit.

    python -m benchmarks.gpu [--quick] [--only chain,mlp,gpt] [--elements 67108864]

(a) Each chain (`x*2+1`, `tanh(x)*y+z`, a GELU-like chain) over 64M elements in float32,
float16 and bfloat16: mytorch's jit (one generated kernel) against the same chain as
unfused CuPy calls (one kernel and one temporary per operation) and `cupy.fuse`. Achieved
bandwidth is (bytes read + bytes written) / time, shown as a fraction of a device-to-device
copy (`cupy.copyto` of one operand's bytes: it reads and writes them once). Target: 0.8.
(b) One training step of examples/mnist_mlp.py's classifier and of examples/gpt_char.py's
GPT (the examples' default sizes, and a larger setting of each), with the batch already on
the GPU: mytorch's jitted step (the example's own code) against the same model written in
PyTorch (eager, torch.nn + torch.optim) and in JAX (jax.jit; Optax where installed), each
only where installed and seeing the GPU (`benchmarks/gpu_models.py`). Targets: faster than
PyTorch eager, within 1.5x of JAX.

Timing: every contender is warmed up (its compilation excluded), then timed in rounds that
interleave the contenders, each sample being several calls between two device-wide
synchronisations (`cudaDeviceSynchronize`, which waits for every library's streams) timed
with perf_counter; the table shows medians. Without a GPU this prints one line saying why
and exits with status 0.
"""

import os

# JAX must not take most of the GPU's memory up front: CuPy and PyTorch share the device
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import argparse  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

ELEMENTS = 64 << 20
COPY_TARGET, TORCH_TARGET, JAX_TARGET = 0.8, 1.0, 1.5


def gpu_or_reason():
    """The first mytorch GPU device, or a str saying why there is none."""
    try:
        import cupy  # noqa: F401
    except ImportError as e:
        return f"CuPy is not installed ({e})"
    import mytorch as mt

    try:
        found = mt.devices("gpu")
    except RuntimeError as e:
        return str(e)
    return found[0] if found else "mt.devices('gpu') is empty"


def synchronize():
    """Wait for all work on the current device, whichever library (stream) queued it."""
    import cupy

    cupy.cuda.runtime.deviceSynchronize()


# ---- timing ---------------------------------------------------------------------------------
def measure(contenders, *, calls, budget_s, min_rounds, max_rounds=200, warmup=3):
    """Median seconds per call of each contender ({name: fn}; fn() runs one call, queued on
    the GPU). Each is called `warmup` times first (compilation, allocator warm-up), then
    rounds take one sample of each in rotating order, a sample being `calls` calls between
    two synchronisations. Returns {name: (median, samples)} or {name: (None, error)}."""
    alive, results = {}, {}
    for name, fn in contenders.items():
        try:
            for _ in range(warmup):
                fn()
            synchronize()
            alive[name] = fn
        except Exception as e:  # a contender that fails is reported, the others go on
            results[name] = (None, f"{type(e).__name__}: {str(e)[:160]}")
    samples = {name: [] for name in alive}
    names = list(alive)
    start, rounds = time.perf_counter(), 0
    while names and rounds < max_rounds and (rounds < min_rounds
                                             or time.perf_counter() - start < budget_s):
        for name in names[rounds % len(names):] + names[:rounds % len(names)]:
            synchronize()
            t0 = time.perf_counter()
            for _ in range(calls):
                alive[name]()
            synchronize()
            samples[name].append((time.perf_counter() - t0) / calls)
        rounds += 1
    for name, s in samples.items():
        results[name] = (statistics.median(s), len(s))
    return results


def fmt_time(seconds):
    if seconds is None:
        return "—"
    return f"{seconds * 1e3:.3f} ms" if seconds < 1 else f"{seconds:.2f} s"


def fmt_ratio(a, b):
    return f"{a / b:.2f}x" if a and b else "—"


def table(header, rows):
    """A markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


# ---- (a) fused elementwise chains -------------------------------------------------------------
def _gelu(m, x):
    return 0.5 * x * (1 + m.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))


# name, number of inputs, chain over an array module m (mytorch.numpy or cupy)
CHAINS = [
    ("x*2+1", 1, lambda m, x: x * 2 + 1),
    ("tanh(x)*y+z", 3, lambda m, x, y, z: m.tanh(x) * y + z),
    ("gelu(x)", 1, _gelu),
]


def chain_rows(device, elements, settings):
    """One table row per chain and dtype."""
    import cupy
    import ml_dtypes

    import mytorch as mt
    import mytorch.numpy as mnp

    rng = np.random.default_rng(0)
    host = rng.standard_normal(elements, dtype=np.float32)
    rows, failures = [], []
    for dtype in (np.dtype(np.float32), np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)):
        itemsize = dtype.itemsize
        src = cupy.empty(elements * itemsize, cupy.uint8)
        dst = cupy.empty_like(src)
        inputs_host = [np.roll(host, i).astype(dtype) for i in range(3)]
        mt_inputs = [mt.device_put(a, device) for a in inputs_host]
        cupy_ok = dtype != np.dtype(ml_dtypes.bfloat16)  # CuPy has no bfloat16 arithmetic
        cp_inputs = [cupy.asarray(a) for a in inputs_host] if cupy_ok else []
        for name, n_in, chain in CHAINS:
            jitted = mt.jit(lambda *a, chain=chain: chain(mnp, *a))
            contenders = {"copy": lambda d=dst, s=src: cupy.copyto(d, s),
                          "mytorch": lambda j=jitted, a=mt_inputs[:n_in]: j(*a)}
            if cupy_ok:
                fused = cupy.fuse(kernel_name=f"chain{CHAINS.index((name, n_in, chain))}")(
                    lambda *a, chain=chain: chain(cupy, *a))
                contenders["cupy"] = lambda c=chain, a=cp_inputs[:n_in]: c(cupy, *a)
                contenders["cupy.fuse"] = lambda f=fused, a=cp_inputs[:n_in]: f(*a)
            times = measure(contenders, **settings)
            check = _check_chain(jitted, mt_inputs[:n_in], chain, inputs_host[:n_in], dtype)
            moved = (n_in + 1) * elements * itemsize
            t_mt, t_copy = times["mytorch"][0], times["copy"][0]
            bandwidth = moved / t_mt if t_mt else None
            copy_bw = 2 * elements * itemsize / t_copy if t_copy else None
            fraction = bandwidth / copy_bw if bandwidth and copy_bw else None
            t_cp = times.get("cupy", (None,))[0]
            if fraction is not None and fraction < COPY_TARGET:
                failures.append(f"{name} {dtype}: {fraction:.2f} of copy bandwidth")
            errors = [f"{k}: {v[1]}" for k, v in times.items() if v[0] is None]
            rows.append([name, str(dtype), fmt_time(t_mt),
                         f"{bandwidth / 1e9:.0f} GB/s" if bandwidth else "—",
                         f"{fraction:.2f}" if fraction else "—", fmt_time(t_cp),
                         fmt_ratio(t_cp, t_mt), fmt_time(times.get("cupy.fuse", (None,))[0]),
                         fmt_time(t_copy), "; ".join([check] + errors)])
    header = ["chain", "dtype", "mytorch jit", "bandwidth", "of copy", "CuPy unfused",
              "CuPy / mytorch", "cupy.fuse", "copy", "check"]
    return table(header, rows), failures


def _check_chain(jitted, mt_inputs, chain, inputs_host, dtype):
    """'ok' when mytorch's result matches the chain in NumPy (float32) on a sample."""
    got = np.asarray(jitted(*mt_inputs)).astype(np.float32)
    sample = slice(0, 1 << 16)
    want = chain(np, *[a[sample].astype(np.float32) for a in inputs_host])
    tol = 1e-5 if dtype == np.float32 else 2e-2
    bad = ~np.isclose(got[sample], want, rtol=tol, atol=tol)
    return "ok" if not bad.any() else f"MISMATCH at {int(bad.sum())} of {bad.size}"


# ---- the command ----------------------------------------------------------------------------
def _parse(argv):
    p = argparse.ArgumentParser(prog="python -m benchmarks.gpu", description=__doc__.split(
        "\n\n")[0])
    p.add_argument("--quick", action="store_true", help="few rounds: a smoke run")
    p.add_argument("--only", default="chain,mlp,gpt",
                   help="comma-separated sections: chain, mlp, gpt")
    p.add_argument("--elements", type=int, default=ELEMENTS,
                   help="elements per operand of the chains (default 64M)")
    return p.parse_args(argv)


def _machine():
    import cupy

    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    runtime = cupy.cuda.runtime.runtimeGetVersion()
    return (f"{name}, {props['totalGlobalMem'] / 2**30:.0f} GiB; CuPy {cupy.__version__}, "
            f"CUDA runtime {runtime // 1000}.{runtime % 1000 // 10}")


def main(argv=None):
    """Run the selected sections and print their tables; exit 0 without a GPU."""
    args = _parse(argv)
    device = gpu_or_reason()
    if isinstance(device, str):
        print(f"benchmarks.gpu: no GPU, nothing measured ({device})")
        return 0
    sections = {s.strip() for s in args.only.split(",") if s.strip()}
    unknown = sections - {"chain", "mlp", "gpt"}
    if unknown:
        raise SystemExit(f"unknown section {', '.join(sorted(unknown))}; choose from chain, "
                         "mlp, gpt")
    quick = args.quick
    print(f"## mytorch GPU benchmarks{' (quick run)' if quick else ''}\n\n{_machine()}\n")
    failures = []
    if "chain" in sections:
        settings = dict(calls=3 if quick else 10, budget_s=0.5 if quick else 3.0,
                        min_rounds=3 if quick else 10)
        text, missed = chain_rows(device, args.elements, settings)
        print(f"### (a) fused elementwise chains, {args.elements:,} elements per operand\n")
        print(text)
        print(f"\nbandwidth = (bytes read + written) / time; 'of copy' divides it by a "
              f"cupy.copyto of one operand's bytes (target >= {COPY_TARGET}).\n")
        failures += missed
    models = [m for m in ("mlp", "gpt") if m in sections]
    if models:
        from benchmarks import gpu_models

        text, missed, notes = gpu_models.model_rows(device, models, quick, measure)
        print("### (b) training steps (batch on the GPU; median time per step)\n")
        print(text)
        print()
        for note in notes:
            print(f"- {note}")
        print(f"\ntargets: mytorch / PyTorch eager < {TORCH_TARGET}, mytorch / JAX jit <= "
              f"{JAX_TARGET}\n")
        failures += missed
    print("targets missed: " + ("; ".join(failures) if failures else "none"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
