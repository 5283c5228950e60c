"""pmap over the global devices of 2 processes (one replica per process, MPI between them):
collectives against their NumPy definitions and a data-parallel training step whose
gradient equals the single-process gradient on the whole batch."""

import pytest

pytestmark = pytest.mark.mpi

PMAP = """
    import numpy as np
    import mytorch as mt
    import mytorch.numpy as mnp
    from mytorch import lax
    import mytorch.distributed as dist

    dist.initialize()
    devices = mt.devices()
    assert len(devices) == 2 and devices[mt.process_index()] is mt.local_devices()[0]
    rng = np.random.default_rng(0)  # every process draws the same global arrays
    x = rng.normal(size=(2, 3)).astype(np.float32)

    def run(f, *args, in_axes=0):
        return np.asarray(mt.pmap(f, "i", devices=devices, in_axes=in_axes,
                                  out_axes=None)(*args))

    np.testing.assert_allclose(run(lambda v: lax.psum(v, "i"), x), x.sum(0), rtol=1e-6)
    np.testing.assert_allclose(run(lambda v: lax.pmean(v, "i"), x), x.mean(0), rtol=1e-6)
    np.testing.assert_array_equal(run(lambda v: lax.pmax(v, "i"), x), x.max(0))
    np.testing.assert_array_equal(run(lambda v: lax.all_gather(v, "i"), x), x)
    np.testing.assert_array_equal(run(lambda v: lax.all_gather(v, "i", tiled=True), x),
                                  x.reshape(-1))
    idx = run(lambda v: lax.psum(lax.axis_index("i") * v[0], "i"), x)
    np.testing.assert_allclose(idx, x[1, 0], rtol=1e-6)
    # the local replica's value of a collective that differs per replica
    me = mt.process_index()
    shifted = run(lambda v: lax.psum(lax.ppermute(v, "i", [(0, 1), (1, 0)]) * (
        lax.axis_index("i") == 0), "i"), x)
    np.testing.assert_array_equal(shifted, x[1])

    # a data-parallel training step: each process's replica takes half of the global batch
    params = {"w": rng.normal(size=(3, 4)).astype(np.float32),
              "b": np.zeros(4, np.float32)}
    batch = rng.normal(size=(8, 3)).astype(np.float32)
    target = rng.normal(size=(8, 4)).astype(np.float32)

    def loss(p, xb, yb):
        return mnp.mean((mnp.tanh(xb @ p["w"] + p["b"]) - yb) ** 2)

    def step(p, xb, yb):
        g = mt.grad(loss)(p, xb, yb)
        return lax.pmean(g, "i")

    shards = lambda a: a.reshape(2, a.shape[0] // 2, *a.shape[1:])  # noqa: E731
    pstep = mt.pmap(step, "i", devices=devices, in_axes=(None, 0, 0), out_axes=None)
    want = mt.grad(loss)(params, batch, target)
    for _ in range(3):
        got = pstep(params, shards(batch), shards(target))
        for k in params:
            np.testing.assert_allclose(np.asarray(got[k]), np.asarray(want[k]), rtol=2e-5,
                                       atol=1e-6)
        params = {k: params[k] - 0.5 * np.asarray(got[k]) for k in params}
        want = mt.grad(loss)(params, batch, target)
    print("ok", me)
"""


def test_pmap_collectives_and_a_training_step_on_two_processes(launch_script):
    run = launch_script(PMAP, timeout=30)
    assert run.returncode == 0, run
    assert run.lines(0)[-1] == "ok 0" and run.lines(1)[-1] == "ok 1", run


def test_a_divergent_pmap_raises_on_both_processes_instead_of_hanging(launch_script):
    run = launch_script("""
        import numpy as np
        import mytorch as mt
        from mytorch import lax
        import mytorch.distributed as dist
        from mytorch.errors import CollectiveError

        dist.initialize()
        if mt.process_index() == 0:
            body = lambda v: lax.psum(v, "i")  # noqa: E731
        else:
            body = lambda v: lax.all_gather(v, "i")[0]  # noqa: E731
        try:
            mt.pmap(body, "i", devices=mt.devices(), out_axes=None)(np.ones((2, 3), np.float32))
        except CollectiveError as e:
            print(e)
            raise
    """, timeout=20)
    assert run.returncode == 1, run
    assert run.seconds < 15, run
    for rank, other in ((0, 1), (1, 0)):
        out = "\n".join(run.lines(rank))
        assert f"rank {rank} and rank {other}" in out, run
        assert f"--- rank {rank}" in out and f"+++ rank {other}" in out, run
        assert "psum" in out and "all_gather" in out, run
    assert "failed first: CollectiveError" in run.stderr, run


def test_a_mapped_result_across_processes_reads_whole_on_every_rank_and_feeds_back_in_place(
        launch_script):
    run = launch_script("""
        import numpy as np
        import mytorch as mt
        import mytorch.numpy as mnp
        from mytorch import lax
        import mytorch.distributed as dist

        dist.initialize()
        devices = mt.devices()
        me = mt.process_index()
        x = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)
        f = mt.pmap(lambda v: mnp.sin(v) * (lax.axis_index("i") + 1), "i", devices=devices)
        want = np.sin(x) * np.arange(1, 3, dtype=np.float32)[:, None, None]

        y = f(x)
        assert y.shape == (2, 3, 4) and not y.is_gathered()
        assert [s.device for s in y.shards] == [mt.local_devices()[0]]
        # fed back to the same pmap, the shards are read in place: nothing is gathered
        z = f(y)
        assert not y.is_gathered() and not z.is_gathered()
        np.testing.assert_allclose(np.asarray(z), np.sin(want) * [[[1]], [[2]]], rtol=1e-6)
        np.testing.assert_allclose(np.asarray(y), want, rtol=1e-6)  # the whole, on every rank
        assert y.is_gathered()
        np.testing.assert_allclose(np.asarray(y[1, 2]), want[1, 2], rtol=1e-6)
        np.testing.assert_allclose(mt.device_get({"y": y})["y"], want, rtol=1e-6)
        np.testing.assert_allclose(np.asarray(mnp.sum(y, axis=0)), want.sum(0), rtol=1e-6)

        # indexing first, then an eager op: each gathers its own array
        w = f(x)
        np.testing.assert_allclose(np.asarray(w[0]), want[0], rtol=1e-6)
        v = f(x)
        np.testing.assert_allclose(np.asarray(v * 2), want * 2, rtol=1e-6)
        # out_axes=1: the device axis moved by an eager op, which gathers
        u = mt.pmap(lambda v: v + 1, "i", devices=devices, out_axes=1)(x)
        np.testing.assert_array_equal(np.asarray(u), np.moveaxis(x + 1, 0, 1))
        print("ok", me)
    """, timeout=30)
    assert run.returncode == 0, run
    assert run.lines(0)[-1] == "ok 0" and run.lines(1)[-1] == "ok 1", run
