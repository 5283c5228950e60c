"""End-to-end time of `python examples/mnist_mlp.py` (its default run: start-up, data, jit
compilation, 880 training steps, 40 evaluations, checkpoint and plot), against the same
training written in PyTorch and in JAX + Optax.

    python -m benchmarks.mnist_example [--runs 3] [--libs mytorch,torch,jax] [--threads 1]

Each run starts a fresh Python process; the libraries' runs alternate, so slow
drifts of a shared machine hit both alike. Reported per library: the median (and range)
of the process's wall time, of the training loop's time as the script prints it (steps and
per-epoch evaluations, compilation included) and the final test accuracy.

The PyTorch version (`--worker torch OUT`, run by this script in its own process) is the
example's loop in PyTorch's usual style: the same 1,437 / 360 split of scikit-learn's 8x8
digits (a different random split), `nn.Sequential` of Linear(64, 256)-ReLU-Dropout(0.2)-
Linear(256, 256)-ReLU-Dropout(0.2)-Linear(256, 10), `nn.CrossEntropyLoss(label_smoothing=
0.1)`, `torch.optim.Adam(lr=2e-3)`, batch 64, 40 epochs of 22 steps (a shuffle per epoch,
the last partial batch dropped), the loss read back every 10 steps, test accuracy after
every epoch, a tqdm bar, then the training accuracy, a checkpoint (`torch.save` of the
model's and optimiser's state) and the same loss/accuracy plot. The JAX version (`--worker
jax OUT`) mirrors the example line by line: a parameter list initialised as mt.nn.Linear
does, jax.nn, Optax's adam, smooth_labels and softmax_cross_entropy, a jitted step taking a
key split before each step, the split and shuffles drawn with jax.random, and an .npz
checkpoint. All use their libraries' default threading (OpenBLAS and PyTorch: one thread
per core; XLA: its thread pool), or with `--threads N` the child processes get
OMP_NUM_THREADS, OPENBLAS_NUM_THREADS and MKL_NUM_THREADS set to N (and, for N = 1, XLA's
--xla_cpu_multi_thread_eigen=false).
"""

import argparse
import os
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "mnist_mlp.py"
LINE = re.compile(r"test accuracy ([\d.]+)% .* after (\d+) steps in ([\d.]+) s")


def torch_train(out, epochs=40, batch_size=64, lr=2e-3, width=256, dropout=0.2,
                label_smoothing=0.1, seed=0):
    """The example's training in PyTorch; prints the example's summary line."""
    import numpy as np
    import torch
    from sklearn.datasets import load_digits
    from tqdm import tqdm

    torch.manual_seed(seed)
    digits = load_digits()
    x = torch.from_numpy((digits.data / 16.0).astype(np.float32))
    y = torch.from_numpy(digits.target.astype(np.int64))
    order = torch.randperm(len(x))
    test, train = order[:360], order[360:]
    x_train, y_train, x_test, y_test = x[train], y[train], x[test], y[test]
    nn = torch.nn
    model = nn.Sequential(nn.Linear(x.shape[1], width), nn.ReLU(), nn.Dropout(dropout),
                          nn.Linear(width, width), nn.ReLU(), nn.Dropout(dropout),
                          nn.Linear(width, 10))
    loss_fn = nn.CrossEntropyLoss(label_smoothing=label_smoothing)
    opt = torch.optim.Adam(model.parameters(), lr=lr)

    def accuracy(xs, ys):
        model.eval()
        with torch.no_grad():
            hits = (model(xs).argmax(-1) == ys).sum().item()
        model.train()
        return hits / len(xs)

    steps_per_epoch = len(x_train) // batch_size
    total = steps_per_epoch * epochs
    history = {"step": [], "loss": [], "epoch": [], "test_accuracy": []}
    bar = tqdm(total=total, desc="training", unit="step", file=sys.stdout)
    start = time.perf_counter()
    for epoch in range(epochs):
        perm = torch.randperm(len(x_train))
        for i in range(steps_per_epoch):
            idx = perm[i * batch_size:(i + 1) * batch_size]
            opt.zero_grad()
            loss = loss_fn(model(x_train[idx]), y_train[idx])
            loss.backward()
            opt.step()
            if i % 10 == 0 or i == steps_per_epoch - 1:
                history["step"].append(epoch * steps_per_epoch + i)
                history["loss"].append(loss.item())
                bar.set_postfix(loss=f"{history['loss'][-1]:.4f}")
            bar.update(1)
        history["epoch"].append(epoch + 1)
        history["test_accuracy"].append(accuracy(x_test, y_test))
    bar.close()
    seconds = time.perf_counter() - start
    train_acc = accuracy(x_train, y_train)
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": total},
               out / "mnist_mlp_torch.pt")
    _plot(history, out / "mnist_mlp_torch.png")
    print(f"test accuracy {history['test_accuracy'][-1]:.2%} (train {train_acc:.2%}) after "
          f"{total} steps in {seconds:.1f} s ({1e3 * seconds / total:.2f} ms/step)")


def jax_train(out, epochs=40, batch_size=64, lr=2e-3, width=256, dropout=0.2,
              label_smoothing=0.1, seed=0):
    """The example's training in JAX + Optax (a parameter list, jax.nn, a jitted step with
    the dropout key split outside it); prints the example's summary line."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    import optax
    from sklearn.datasets import load_digits
    from tqdm import tqdm

    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int32)
    key = jax.random.key(seed)
    data_key, init_key, key = jax.random.split(key, 3)
    order = np.asarray(jax.random.permutation(data_key, len(x)))
    x_train, y_train, x_test, y_test = x[order[360:]], y[order[360:]], x[order[:360]], \
        y[order[:360]]
    sizes = [x.shape[1], width, width, 10]
    params = []
    for d_in, d_out, k in zip(sizes[:-1], sizes[1:], jax.random.split(init_key, 3),
                              strict=True):
        wk, bk = jax.random.split(k)
        lim = 1 / np.sqrt(d_in)
        params += [jax.random.uniform(wk, (d_in, d_out), minval=-lim, maxval=lim),
                   jax.random.uniform(bk, (d_out,), minval=-lim, maxval=lim)]
    opt = optax.adam(lr)
    opt_state = opt.init(params)

    def forward(params, x, key=None):
        keys = jax.random.split(key, 2) if key is not None else [None, None]
        for i in range(2):
            x = jax.nn.relu(x @ params[2 * i] + params[2 * i + 1])
            if keys[i] is not None:
                keep = jax.random.bernoulli(keys[i], 1 - dropout, x.shape)
                x = jnp.where(keep, x / (1 - dropout), 0)
        return x @ params[4] + params[5]

    def loss_fn(params, x, y, key):
        labels = optax.smooth_labels(jax.nn.one_hot(y, 10), label_smoothing)
        return optax.softmax_cross_entropy(forward(params, x, key), labels).mean()

    @jax.jit
    def train_step(params, opt_state, x, y, key):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y, key)
        updates, opt_state = opt.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    @jax.jit
    def correct(params, x, y):
        return jnp.sum(jnp.argmax(forward(params, x), -1) == y)

    def accuracy(xs, ys):
        return int(correct(params, xs, ys)) / len(xs)

    steps_per_epoch = len(x_train) // batch_size
    total = steps_per_epoch * epochs
    history = {"step": [], "loss": [], "epoch": [], "test_accuracy": []}
    bar = tqdm(total=total, desc="training", unit="step", file=sys.stdout)
    start = time.perf_counter()
    for epoch in range(epochs):
        key, shuffle_key = jax.random.split(key)
        perm = np.asarray(jax.random.permutation(shuffle_key, len(x_train)))
        for i in range(steps_per_epoch):
            idx = perm[i * batch_size:(i + 1) * batch_size]
            key, step_key = jax.random.split(key)
            params, opt_state, loss = train_step(params, opt_state, x_train[idx],
                                                 y_train[idx], step_key)
            if i % 10 == 0 or i == steps_per_epoch - 1:
                history["step"].append(epoch * steps_per_epoch + i)
                history["loss"].append(float(loss))
                bar.set_postfix(loss=f"{history['loss'][-1]:.4f}")
            bar.update(1)
        history["epoch"].append(epoch + 1)
        history["test_accuracy"].append(accuracy(x_test, y_test))
    bar.close()
    seconds = time.perf_counter() - start
    train_acc = accuracy(x_train, y_train)
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    np.savez(out / "mnist_mlp_jax.npz", *[np.asarray(p) for p in params])
    _plot(history, out / "mnist_mlp_jax.png")
    print(f"test accuracy {history['test_accuracy'][-1]:.2%} (train {train_acc:.2%}) after "
          f"{total} steps in {seconds:.1f} s ({1e3 * seconds / total:.2f} ms/step)")


def _plot(history, path):
    """The example's loss/accuracy figure."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.5))
    a.plot(history["step"], history["loss"])
    a.set(xlabel="step", ylabel="training loss", yscale="log", title="loss")
    b.plot(history["epoch"], history["test_accuracy"], marker="o")
    b.set(xlabel="epoch", ylabel="test accuracy", title="accuracy")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def run_once(lib, out, threads=None):
    """One fresh process: (wall seconds, loop seconds, steps, test accuracy %)."""
    env = dict(os.environ)
    if threads:
        env.update({v: str(threads) for v in
                    ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")})
        if threads == 1:
            env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "")
                                + " --xla_cpu_multi_thread_eigen=false").strip()
    if lib == "mytorch":
        cmd = [sys.executable, str(EXAMPLE), "--out", out]
    else:
        cmd = [sys.executable, "-m", "benchmarks.mnist_example", "--worker", lib, out]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    match = LINE.search(proc.stdout)
    if proc.returncode != 0 or match is None:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n"
                           f"{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return wall, float(match.group(3)), int(match.group(2)), float(match.group(1))


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m benchmarks.mnist_example",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=3, help="fresh processes per library")
    p.add_argument("--libs", default="mytorch,torch,jax",
                   help="some of mytorch, torch, jax")
    p.add_argument("--threads", type=int, default=None,
                   help="threads per library (default: the libraries' own default)")
    p.add_argument("--worker", nargs=2, metavar=("LIB", "OUT"), default=None,
                   help="(internal) run the torch or jax training once, writing into OUT")
    args = p.parse_args(argv)
    if args.worker:
        return {"torch": torch_train, "jax": jax_train}[args.worker[0]](args.worker[1])
    libs = [x.strip() for x in args.libs.split(",") if x.strip()]
    unknown = set(libs) - {"mytorch", "torch", "jax"}
    if unknown:
        raise SystemExit(f"unknown library {sorted(unknown)}; choose from mytorch, torch, jax")
    results = {lib: [] for lib in libs}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.runs):
            for lib in libs:
                res = run_once(lib, os.path.join(tmp, lib), args.threads)
                results[lib].append(res)
                print(f"run {r + 1} {lib}: {res[0]:.2f} s wall, loop {res[1]:.1f} s, "
                      f"test accuracy {res[3]:.2f}%", file=sys.stderr, flush=True)
    print("| | process wall time | training loop (880 steps + 40 evals) | per step | "
          "test accuracy |")
    print("|---|---|---|---|---|")
    for lib, rows in results.items():
        walls, loops = [r[0] for r in rows], [r[1] for r in rows]
        steps, acc = rows[0][2], statistics.median(r[3] for r in rows)
        name = {"mytorch": "mytorch `python examples/mnist_mlp.py`",
                "torch": "PyTorch, same training", "jax": "JAX + Optax, same training"}[lib]
        print(f"| {name} | {statistics.median(walls):.2f} s ({min(walls):.2f}-"
              f"{max(walls):.2f}) | {statistics.median(loops):.1f} s ({min(loops):.1f}-"
              f"{max(loops):.1f}) | {1e3 * statistics.median(loops) / steps:.2f} ms | "
              f"{acc:.1f}% |")
    threads = f"{args.threads} thread(s)" if args.threads else "default threads"
    print(f"\nmedians (min-max) of {args.runs} fresh processes per library, interleaved; "
          f"{threads}; {os.cpu_count()} cores")
    return results


if __name__ == "__main__":
    main()
