"""W11: gradient bucketing: a data-parallel gradient step of a model with many parameter
tensors, its gradients averaged over the replicas with one pmean per tensor, run with and
without `mytorch.distributed.bucketing.bucket_psums` (the psums merged into flat buckets of
at most 25 MB, DDP's default).

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

from benchmarks.harness import Row, Workload
from benchmarks.workloads import _libs, _mlp

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


def build(size="full", libs=None):
    """The W11 workload at SIZES[size] (mytorch only: the pass is mytorch's)."""
    s = SIZES[size]
    rng = np.random.default_rng(0)
    dims = (s["width"],) * s["layers"] + (10,)
    params = _mlp.init_params(rng, dims)
    n = s["replicas"] * s["batch"]
    xs = _libs.f32(rng, (n, dims[0])).reshape(s["replicas"], s["batch"], dims[0])
    ys = _libs.one_hot(rng, n, dims[-1]).reshape(s["replicas"], s["batch"], dims[-1])
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
    return Workload(
        KEY, TITLE, contenders, numpy_mean_grads(params, xs, ys),
        rows=[Row(f"{label}, one psum per tensor", "numpy",
                  {"mytorch": "mytorch_unbucketed"}),
              Row(f"{label}, bucketed (25 MB) against unbucketed", "mytorch_unbucketed",
                  {"mytorch": "mytorch_bucketed"}, base_label="mytorch unbucketed")],
        notes=["Replicas are the examples of a vmap with axis_name='i' under jit: the psums "
               "are reductions over the replica axis, so the bucketed row shows what the "
               "pass adds to the compiled step (flatten, concatenate, slice); the saving in "
               "collectives shows across pmap's devices and processes."])
