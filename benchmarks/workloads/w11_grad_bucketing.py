"""W11: gradient bucketing: a data-parallel gradient step of a model with many parameter
tensors, its gradients averaged over the replicas with one pmean per tensor, run with and
without `mytorch.distributed.bucketing.bucket_psums` (the psums merged into flat buckets of
at most 25 MB, DDP's default).

Rows 1-2 (vmap under jit, below) measure what the pass adds to a compiled step; rows 3-4
run the step with pmap, whose replicas exchange the gradients through a communicator:
over 2 virtual CPU devices (threads) and over 2 MPI processes (`benchmarks/mpi_replicas.py`
under the launcher, see `_mpi.py`; left out where mpi4py or mpiexec is missing), each
with `mt.config.psum_bucket_bytes` = 25 MiB (the default: one bucket here) against 1 (one
psum per tensor).

The model is a deep, narrow MLP (ReLU, softmax cross-entropy; 2 * layers parameter
tensors, each small, so a collective's fixed cost per tensor dominates over its bytes).
The per-replica step `pmean(grad(loss)(params, x_r, y_r), 'i')` is traced once as one
replica of the axis 'i', bucketed or not, and run for all replicas under one
`jit(vmap(..., axis_name='i'))`: each psum is then a reduction over the replica axis of
the batch, so what this measures is the pass's cost in the compiled step (the flattening,
concatenation and slicing a bucket adds), not the communication it saves between
processes.

NumPy: the hand-written backward pass on each replica's shard, averaged (the reference).
"""

import numpy as np

from benchmarks.harness import Contender, Row, Workload
from benchmarks.workloads import _libs, _mlp, _mpi

KEY = "W11"
TITLE = "Gradient bucketing of a data-parallel step"
SIZES = {"full": dict(width=64, layers=24, batch=32, replicas=2),
         "tiny": dict(width=6, layers=4, batch=3, replicas=2)}


def numpy_mean_grads(params, xs, ys):
    """The replicas' gradients averaged: xs f32[replicas, batch, d_0], ys likewise."""
    grads = [_mlp.numpy_grads(params, x, y) for x, y in zip(xs, ys, strict=True)]
    return [np.mean(np.stack(g), axis=0) for g in zip(*grads, strict=True)]


def _replica_step():
    import mytorch as mt
    import mytorch.numpy as mnp
    from mytorch import lax
    from mytorch.scipy.special import logsumexp

    def loss(params, x, y):
        return _mlp.loss(mnp, logsumexp, params, x, y)

    return lambda params, x, y: lax.pmean(mt.grad(loss)(params, x, y), "i")


def _replica_jaxpr(params, xs, ys):
    """The ClosedJaxpr of one replica's step (traced inside a vmap binding 'i', so that its
    psums are staged as they are)."""
    import mytorch as mt
    import mytorch.numpy as mnp

    box, step = [], _replica_step()

    def trace():
        box.append(mt.make_jaxpr(step)(params, xs[0], ys[0]))
        return mnp.zeros(())

    mt.vmap(trace, axis_name="i", axis_size=len(xs))()
    return box[0]


def _make_mytorch(params, xs, ys, bucketed):
    import mytorch as mt
    import mytorch.numpy as mnp
    from mytorch.core.jaxpr import eval_jaxpr
    from mytorch.distributed.bucketing import bucket_psums

    closed = _replica_jaxpr(params, xs, ys)
    if bucketed:
        closed = bucket_psums(closed)

    def replicas(params, x, y):
        return eval_jaxpr(closed.jaxpr, closed.consts, *params, x, y)

    step = mt.jit(mt.vmap(replicas, in_axes=(None, 0, 0), axis_name="i"))
    params, xs, ys = [mnp.asarray(p) for p in params], mnp.asarray(xs), mnp.asarray(ys)
    return lambda: step(params, xs, ys)


def inputs(size):
    """(params, xs, ys) of SIZES[size]: xs f32[replicas, batch, width], ys likewise."""
    s = SIZES[size]
    rng = np.random.default_rng(0)
    dims = (s["width"],) * s["layers"] + (10,)
    params = _mlp.init_params(rng, dims)
    n = s["replicas"] * s["batch"]
    xs = _libs.f32(rng, (n, dims[0])).reshape(s["replicas"], s["batch"], dims[0])
    ys = _libs.one_hot(rng, n, dims[-1]).reshape(s["replicas"], s["batch"], dims[-1])
    return params, xs, ys


def pmap_step(size, devices, bucket_bytes):
    """The replicas' step pmap'd over `devices` (one per replica) with
    `psum_bucket_bytes` = bucket_bytes while it runs (pmap compiles its body per setting):
    a zero-argument callable returning the averaged gradients (a list of arrays)."""
    import mytorch as mt
    import mytorch.numpy as mnp

    params, xs, ys = inputs(size)
    pstep = mt.pmap(_replica_step(), "i", in_axes=(None, 0, 0), out_axes=None,
                    devices=devices)
    params, xs, ys = [mnp.asarray(p) for p in params], mnp.asarray(xs), mnp.asarray(ys)

    def run():
        default = mt.config.psum_bucket_bytes
        mt.config.update("psum_bucket_bytes", bucket_bytes)
        try:
            return pstep(params, xs, ys)
        finally:
            mt.config.update("psum_bucket_bytes", default)

    return run


def _make_pmap_threads(size, bucket_bytes):
    import mytorch as mt

    n = SIZES[size]["replicas"]
    if mt.config.num_cpu_devices < n:
        mt.config.update("num_cpu_devices", n)
    return pmap_step(size, mt.devices()[:n], bucket_bytes)


def build(size="full", libs=None):
    """The W11 workload at SIZES[size] (mytorch only: the pass is mytorch's)."""
    s = SIZES[size]
    params, xs, ys = inputs(size)
    first = lambda out: [g[0] for g in out]  # noqa: E731 -- every replica holds the mean
    makers = {"numpy": lambda: lambda: numpy_mean_grads(params, xs, ys),
              "mytorch_unbucketed": lambda: _make_mytorch(params, xs, ys, False),
              "mytorch_bucketed": lambda: _make_mytorch(params, xs, ys, True)}
    contenders = _libs.contenders(makers, _libs.selected(libs))
    for c in contenders:
        if c.name != "numpy":
            c.result = first
    tensors = 2 * s["layers"]
    label = f"W11 {tensors}-tensor MLP gradient, {s['replicas']} replicas x {s['batch']}"
    rows = [Row(f"{label}, one psum per tensor", "numpy", {"mytorch": "mytorch_unbucketed"}),
            Row(f"{label}, bucketed (25 MB) against unbucketed", "mytorch_unbucketed",
                {"mytorch": "mytorch_bucketed"}, base_label="mytorch unbucketed")]
    notes = ["Rows 1-2: the replicas are the examples of a vmap with axis_name='i' under "
             "jit: the psums are reductions over the replica axis, so the bucketed row shows "
             "what the pass adds to the compiled step (flatten, concatenate, slice). The "
             "pmap rows run unpinned: their psums go through the threads' or MPI's "
             "communicator."]
    if "mytorch" in _libs.selected(libs):
        contenders += _pmap_contenders(size, s["replicas"], label, rows, notes)
    return Workload(KEY, TITLE, contenders, numpy_mean_grads(params, xs, ys), rows,
                    notes=notes, all_cores=True, min_sample_s=0.05)


def _pmap_contenders(size, n, label, rows, notes):
    """The pmap contenders (threads, and MPI where it runs), their rows added to `rows`;
    their steps return the mean gradients once (out_axes=None)."""
    contenders = []
    kinds = [("threads", f"pmap over {n} virtual CPU devices", _make_pmap_threads, None)]
    why = _mpi.missing()
    if why is None:
        kinds.append(("mpi", f"pmap over {n} MPI processes",
                      lambda size, b: _mpi.contender_fn("w11", size=size, bucket_bytes=b),
                      _mpi.result))
    else:
        notes.append(f"the MPI rows are left out: {why}")
    for kind, what, make, result in kinds:
        one, bucketed = f"mytorch_{kind}_per_tensor", f"mytorch_{kind}_bucketed"
        contenders += [Contender(one, lambda m=make: m(size, 1), result=result),
                       Contender(bucketed, lambda m=make: m(size, 25 * 2**20), result=result)]
        rows.append(Row(f"{label}, {what}, bucketed (25 MiB) against one psum per tensor",
                        one, {"mytorch": bucketed}, base_label=f"{kind}, per tensor",
                        base_vs="numpy"))
    return contenders
