"""The in-process communicator (replicas on threads) against NumPy definitions."""

import threading
import time

import numpy as np
import pytest

from mytorch.distributed.threads import ThreadGroup
from mytorch.errors import CollectiveError


def run_ranks(size, fn, timeout=30):
    """fn(comm) on `size` threads, one per rank: [result or exception] by rank."""
    group = ThreadGroup(size)
    out = [None] * size

    def body(r):
        try:
            out[r] = fn(group.communicators[r])
        except BaseException as e:  # noqa: BLE001
            out[r] = e

    threads = [threading.Thread(target=body, args=(r,)) for r in range(size)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
        assert not t.is_alive(), "a rank hung"
    return out


def data(size, shape, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(np.float32) for _ in range(size)]


@pytest.mark.parametrize("size", [1, 2, 3, 4])
@pytest.mark.parametrize("shape", [(), (5,), (300, 200)])  # the large one splits the work
@pytest.mark.parametrize("op,ref", [("sum", np.sum), ("max", np.max), ("min", np.min)])
def test_allreduce(size, shape, op, ref):
    xs = data(size, shape)
    outs = run_ranks(size, lambda c: c.allreduce(xs[c.rank], op))
    want = ref(np.stack(xs), axis=0)
    for r, o in enumerate(outs):
        np.testing.assert_allclose(o, want, rtol=1e-5, atol=1e-5)
        assert o is not xs[r]
    assert len({id(o) for o in outs}) == size  # each rank its own buffer


@pytest.mark.parametrize("size", [1, 2, 4])
def test_allgather_reduce_scatter_all_to_all_permute(size):
    xs = data(size, (size, 3))
    gathered = run_ranks(size, lambda c: c.allgather(xs[c.rank]))
    for o in gathered:
        np.testing.assert_array_equal(o, np.stack(xs))
    scattered = run_ranks(size, lambda c: c.reduce_scatter(xs[c.rank], "sum"))
    for r, o in enumerate(scattered):
        np.testing.assert_allclose(o, sum(x[r] for x in xs), rtol=1e-6)
    exchanged = run_ranks(size, lambda c: c.all_to_all(xs[c.rank]))
    for r, o in enumerate(exchanged):
        np.testing.assert_array_equal(o, np.stack([x[r] for x in xs]))
    pairs = tuple((r, (r + 1) % size) for r in range(size - 1))  # the last sends nothing
    permuted = run_ranks(size, lambda c: c.permute(xs[c.rank], pairs))
    for r, o in enumerate(permuted):
        src = [s for s, d in pairs if d == r]
        np.testing.assert_array_equal(o, xs[src[0]] if src else np.zeros_like(xs[r]))


def test_many_collectives_in_a_row_reuse_the_slots():
    xs = data(3, (4,))

    def fn(c):
        y = xs[c.rank]
        for _ in range(50):
            y = c.allreduce(y, "sum") / 3
            c.barrier()
        return y

    outs = run_ranks(3, fn)
    for o in outs:
        np.testing.assert_allclose(o, np.mean(xs, axis=0), rtol=1e-5)


@pytest.mark.parametrize("shape", [(64, 64), (300, 200)])  # one wait (copied); two waits
def test_an_operand_overwritten_right_after_the_collective_is_not_read(shape):
    """A rank may reuse its operand's buffer as soon as a collective returns (compiled code
    does) while the others still read: every result is still the one of the operands as
    posted."""
    size, rounds = 3, 40
    xs = data(size, shape)

    def fn(c):
        buf, got = xs[c.rank].copy(), []
        for k in range(rounds):
            buf[...] = xs[c.rank] + k
            got.append((c.allgather(buf), c.allreduce(buf, "sum"),
                        c.all_to_all(buf[:size])))
            buf[...] = np.nan  # overwritten at once, as a recycled buffer would be
        return got

    outs = run_ranks(size, fn)
    for r, got in enumerate(outs):
        for k, (gathered, summed, exchanged) in enumerate(got):
            posted = [x + k for x in xs]
            np.testing.assert_array_equal(gathered, np.stack(posted))
            np.testing.assert_allclose(summed, np.sum(posted, axis=0), rtol=1e-5)
            np.testing.assert_array_equal(exchanged, np.stack([p[r] for p in posted]))


def test_timeout_names_rank_and_collective(monkeypatch):
    monkeypatch.setenv("MYTORCH_COLLECTIVE_TIMEOUT", "0.3")

    def fn(c):
        if c.rank == 1:
            time.sleep(1.0)  # never arrives in time
            return c.allreduce(np.ones(2), "sum")
        return c.allreduce(np.ones(2), "sum")

    t0 = time.perf_counter()
    outs = run_ranks(2, fn)
    assert time.perf_counter() - t0 < 10
    for r, o in enumerate(outs):
        assert isinstance(o, CollectiveError), o
        assert f"rank {r}" in str(o) and "allreduce" in str(o)
    assert "within 0.3 s" in str(outs[0]) and "[1]" in str(outs[0])


def test_failing_rank_breaks_the_others_out():
    def fn(c):
        if c.rank == 2:
            c.fail(ValueError("boom"))
            raise ValueError("boom")
        return c.allgather(np.ones(2))

    outs = run_ranks(3, fn)
    assert isinstance(outs[2], ValueError)
    for r in (0, 1):
        assert isinstance(outs[r], CollectiveError)
        msg = str(outs[r])
        assert f"rank {r}" in msg and "allgather" in msg and "rank 2 raised ValueError" in msg


def test_reset_after_failure():
    group = ThreadGroup(2)
    group.fail(0, "test")
    group.reset()
    out = [None, None]

    def body(r):
        out[r] = group.communicators[r].allreduce(np.full(2, r + 1.0), "sum")

    ts = [threading.Thread(target=body, args=(r,)) for r in range(2)]
    [t.start() for t in ts]
    [t.join(10) for t in ts]
    np.testing.assert_array_equal(out[0], [3.0, 3.0])


def test_check_schedule_mismatch_raises_everywhere_with_a_diff():
    schedules = [["psum[('i',)](f32[3])", "all_gather[('i',)](f32[3])"],
                 ["psum[('i',)](f32[3])", "ppermute[('i',)](f32[3])"]]

    def fn(c):
        lines = schedules[c.rank]
        c.check_schedule(repr(lines).encode(), lambda: lines)

    outs = run_ranks(2, fn)
    for r, o in enumerate(outs):
        assert isinstance(o, CollectiveError)
        msg = str(o)
        assert f"rank {r}" in msg and "all_gather" in msg and "ppermute" in msg
        assert "-" in msg and "+" in msg  # a unified diff


def test_check_schedule_agreeing_passes():
    outs = run_ranks(3, lambda c: c.check_schedule(b"same", lambda: ["x"]))
    assert outs == [None, None, None]
