"""W10: data-parallel W1: the SGD step of the MLP 784-512-512-10 at global batch 256 on one
device and split over two replicas, each taking half the batch, the gradients averaged
with `pmean` (every replica then applies the same update).

- NumPy: the hand-written step on the whole batch (the reference), and the same step on
  two threads, each computing the gradient of its half, the halves averaged: how much two
  replicas can overlap on this machine at all;
- mytorch, one device: `jit(step)` on the whole batch (the base of the data-parallel rows);
- mytorch, pmap over 2 virtual CPU devices: replicas on two threads of this process;
- mytorch, pmap over 2 MPI processes: `benchmarks/mpi_replicas.py` under the launcher, one
  device per process, driven from this process (see `_mpi.py`); left out, with a note,
  where mpi4py or mpiexec is missing.

Every version starts from the same parameters and batch each call and returns the new
parameters, checked against the NumPy step before timing. The workload runs on all the
cores the harness may use (the replicas must overlap), BLAS on one thread per replica.
"""

import threading

import numpy as np

from benchmarks.harness import Contender, Row, Workload
from benchmarks.workloads import _libs, _mlp, _mpi
from benchmarks.workloads.w1_mlp_sgd import numpy_step

KEY = "W10"
TITLE = "Data-parallel MLP SGD step (pmap over threads and MPI processes)"
SIZES = {"full": dict(dims=(784, 512, 512, 10), batch=256, lr=0.01, replicas=2),
         "tiny": dict(dims=(12, 8, 8, 3), batch=8, lr=0.5, replicas=2)}


def inputs(size):
    """(params, x, y, lr) of SIZES[size]: the initial parameters and the global batch."""
    s = SIZES[size]
    rng = np.random.default_rng(1)
    params = _mlp.init_params(rng, s["dims"])
    x = _libs.f32(rng, (s["batch"], s["dims"][0]))
    y = _libs.one_hot(rng, s["batch"], s["dims"][-1])
    return params, x, y, s["lr"]


def numpy_threads_step(params, x, y, lr, replicas):
    """The NumPy step with each of `replicas` threads computing the gradient of its slice
    of the batch; the gradients averaged, then the update in place; returns params."""
    xs, ys = np.split(x, replicas), np.split(y, replicas)
    grads = [None] * replicas

    def replica(r):
        grads[r] = _mlp.numpy_grads(params, xs[r], ys[r])

    threads = [threading.Thread(target=replica, args=(r,)) for r in range(1, replicas)]
    for t in threads:
        t.start()
    replica(0)
    for t in threads:
        t.join()
    for i, p in enumerate(params):
        g = grads[0][i]
        for other in grads[1:]:
            g += other[i]
        g *= lr / replicas
        p -= g
    return params


def pmap_step(size, devices):
    """The pmap'd step over `devices` (one replica each, batch / len(devices) examples):
    a zero-argument callable returning the new parameters (a list of arrays)."""
    import mytorch as mt
    import mytorch.numpy as mnp
    from mytorch import lax
    from mytorch.scipy.special import logsumexp

    params, x, y, lr = inputs(size)
    n = len(devices)

    def loss(params, x, y):
        return _mlp.loss(mnp, logsumexp, params, x, y)

    def step(params, x, y):
        grads = lax.pmean(mt.grad(loss)(params, x, y), "batch")
        return [p - lr * g for p, g in zip(params, grads, strict=True)]

    pstep = mt.pmap(step, "batch", in_axes=(None, 0, 0), out_axes=None, devices=devices)
    params = [mnp.asarray(p) for p in params]
    xs, ys = x.reshape(n, -1, x.shape[1]), y.reshape(n, -1, y.shape[1])
    return lambda: pstep(params, xs, ys)


def _make_mytorch(size):
    import mytorch as mt
    import mytorch.numpy as mnp
    from mytorch.scipy.special import logsumexp

    from benchmarks.workloads.w1_mlp_sgd import _functional_step

    params, x, y, lr = inputs(size)
    step = mt.jit(_functional_step(mt.grad, mnp, logsumexp, lr))
    params, x, y = [mnp.asarray(p) for p in params], mnp.asarray(x), mnp.asarray(y)
    return lambda: step(params, x, y)


def _make_pmap_threads(size):
    import mytorch as mt

    n = SIZES[size]["replicas"]
    if mt.config.num_cpu_devices < n:
        mt.config.update("num_cpu_devices", n)
    return pmap_step(size, mt.devices()[:n])


def build(size="full", libs=None):
    """The W10 workload at SIZES[size] (NumPy and mytorch only)."""
    s = SIZES[size]
    params, x, y, lr = inputs(size)
    n = s["replicas"]
    expected = [a.copy() for a in numpy_step(_libs.copies(params), x, y, lr)]
    own = lambda step: (lambda p: lambda: step(p))(_libs.copies(params))  # noqa: E731
    makers = {"numpy": lambda: own(lambda p: numpy_step(p, x, y, lr)),
              "numpy_threads": lambda: own(lambda p: numpy_threads_step(p, x, y, lr, n))}
    contenders = [Contender(name, make) for name, make in makers.items()]
    notes = ["mytorch's steps start from the same parameters every call and return new "
             "ones; NumPy's update theirs in place, continuing (the same work). The first "
             "step of each is checked against NumPy's. The workload runs unpinned, BLAS on "
             "one thread per replica; a 2-replica ratio near 0.5 means the replicas "
             "overlap fully. Each sample is at least 50 ms of steps run back to back."]
    rows = [Row(f"W10 MLP SGD step, global batch {s['batch']}: NumPy on {n} threads "
                f"(batch {s['batch'] // n} each)", "numpy_threads", {},
                base_label=f"NumPy, {n} threads", base_vs="numpy")]
    if "mytorch" in _libs.selected(libs):
        contenders += [Contender("mytorch", lambda: _make_mytorch(size)),
                       Contender("mytorch_pmap", lambda: _make_pmap_threads(size))]
        label = f"W10 MLP SGD step, global batch {s['batch']}"
        rows = [Row(f"{label}, one device (jit)", "numpy", {"mytorch": "mytorch"}),
                Row(f"{label}, pmap over {n} virtual CPU devices (threads)", "mytorch",
                    {"mytorch": "mytorch_pmap"}, base_label="mytorch, 1 device")] + rows
        why = _mpi.missing()
        if why is None:
            contenders.append(Contender(
                "mytorch_mpi", lambda: _mpi.contender_fn("w10", size=size),
                result=_mpi.result))
            rows.insert(2, Row(f"{label}, pmap over {n} MPI processes", "mytorch",
                               {"mytorch": "mytorch_mpi"}, base_label="mytorch, 1 device"))
        else:
            notes.append(f"the MPI row is left out: {why}")
    # a sample is several steps back to back, as a training loop runs them (a single
    # timed call would also time the MPI ranks waking up after the other contenders ran)
    return Workload(KEY, TITLE, contenders, expected, rows, notes=notes, all_cores=True,
                    min_sample_s=0.05)
