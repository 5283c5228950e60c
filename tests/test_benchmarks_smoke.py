"""The benchmark code computes what it claims: every workload's mytorch version, run once at
a tiny size, agrees with its hand-written NumPy reference (and so do the NumPy variants and,
where installed, the JAX and PyTorch versions). The harness's interleaving, error handling
and table are checked with fake contenders. No timing is asserted."""

import importlib.util

import numpy as np
import pytest

from benchmarks import harness
from benchmarks.workloads import WORKLOADS

OTHER_LIBS = [lib for lib in ("jax", "torch") if importlib.util.find_spec(lib)]


def _flat(tree):
    """The arrays of a result (nested lists/tuples of NumPy/mytorch/JAX/torch arrays)."""
    if isinstance(tree, (list, tuple)):
        return [a for t in tree for a in _flat(t)]
    if hasattr(tree, "detach"):
        tree = tree.detach().numpy()
    return [np.array(tree)]


def _run_once(contender):
    """One call's result in the reference's form (`Contender.result` applied)."""
    fn = contender.make()
    out = (fn() if contender.first_call else fn)()
    return contender.result(out) if contender.result else out


def _assert_agrees(got, want, name, check="values"):
    """Values agree (or, for check="shapes", same shapes, float32 and finite)."""
    got, want = _flat(got), _flat(want)
    assert len(got) == len(want), f"{name}: {len(got)} results, expected {len(want)}"
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert g.dtype == np.float32, f"{name} result {i} is {g.dtype}, expected float32"
        if check == "shapes":
            assert g.shape == w.shape and np.isfinite(g).all(), f"{name} result {i}"
            continue
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5, err_msg=f"{name} result {i}")


def _contenders(key, libs):
    workload = WORKLOADS[key].build("tiny", libs)
    return workload, [c for c in workload.contenders if not c.name.startswith("numpy")]


@pytest.mark.parametrize("key", list(WORKLOADS))
def test_mytorch_version_matches_numpy(key):
    workload, mine = _contenders(key, ("mytorch",))
    assert mine, f"{key} has no mytorch contender"
    for c in mine:
        _assert_agrees(_run_once(c), workload.expected, f"{key} {c.name}", c.check)


@pytest.mark.parametrize("key", list(WORKLOADS))
def test_numpy_versions_match_the_reference(key):
    """Every NumPy contender (W4's in-place one included) agrees with the expected result
    on its first call (later calls may update parameters in place)."""
    workload = WORKLOADS[key].build("tiny", ())
    for c in workload.contenders:
        _assert_agrees(_run_once(c), workload.expected, f"{key} {c.name}", c.check)


_PAIRS = [(key, lib) for key in WORKLOADS for lib in OTHER_LIBS
          if lib not in getattr(WORKLOADS[key], "CANNOT", {})]


@pytest.mark.parametrize("key,lib", _PAIRS)
def test_other_library_versions_match_numpy(key, lib):
    workload, theirs = _contenders(key, (lib,))
    assert theirs, f"{key} has no {lib} contender"
    for c in theirs:
        _assert_agrees(_run_once(c), workload.expected, f"{key} {c.name}", c.check)


@pytest.mark.skipif("jax" not in OTHER_LIBS, reason="JAX is not installed")
def test_w8_has_no_jax_version_because_jax_cannot_do_it():
    """W8's missing JAX column is JAX's limit: its reverse mode refuses a while_loop."""
    import jax

    assert "jax" in WORKLOADS["W8"].CANNOT
    f = lambda x: jax.lax.while_loop(lambda c: c[0] < 3,  # noqa: E731
                                     lambda c: (c[0] + 1, c[1] * 2.0), (0, x))[1]
    with pytest.raises(ValueError, match="(?i)reverse-mode"):
        jax.grad(f)(1.0)


def test_w1_numpy_reference_is_the_gradient_step():
    """The hand-written backward pass of W1 against float64 central differences of the
    loss along a random direction (independent of every library's autodiff)."""
    from benchmarks.workloads import _mlp

    rng = np.random.default_rng(0)
    params = [p.astype(np.float64) for p in _mlp.init_params(rng, (5, 4, 3))]
    x, y = rng.standard_normal((6, 5)), np.eye(3)[rng.integers(0, 3, 6)]

    def loss(ps):
        h = np.maximum(x @ ps[0] + ps[1], 0) @ ps[2] + ps[3]
        m = h.max(1, keepdims=True)
        return np.mean(np.log(np.exp(h - m).sum(1)) + m[:, 0] - (h * y).sum(1))

    grads = _mlp.numpy_grads([p.copy() for p in params], x, y)
    d = [rng.standard_normal(p.shape) for p in params]
    eps = 1e-6
    fd = (loss([p + eps * t for p, t in zip(params, d, strict=True)])
          - loss([p - eps * t for p, t in zip(params, d, strict=True)])) / (2 * eps)
    assert np.isclose(sum(np.sum(g * t) for g, t in zip(grads, d, strict=True)), fd,
                      rtol=1e-6, atol=1e-9)


# ---- harness ------------------------------------------------------------------------------
def _fake_workload(calls):
    def make(name, value):
        def fn():
            calls.append(name)
            return np.float32(value)
        return lambda: fn

    def broken():
        raise AttributeError("module 'mytorch' has no attribute 'jit'")

    contenders = [harness.Contender("numpy", make("numpy", 1.0)),
                  harness.Contender("mytorch", make("mytorch", 1.0)),
                  harness.Contender("jax", make("jax", 2.0)),
                  harness.Contender("torch", broken)]
    rows = [harness.Row("fake", "numpy", {k: k for k in ("mytorch", "jax", "torch")})]
    return harness.Workload("W0", "fake", contenders, np.float32(1.0), rows)


def test_harness_interleaves_and_reports_errors_and_mismatches():
    calls = []
    workload = _fake_workload(calls)
    settings = harness.Settings(budget_s=0.0, min_rounds=4, max_rounds=4, min_sample_s=0.0)
    outcomes = harness.run_workload(workload, settings)
    assert outcomes["torch"].error.startswith("AttributeError")
    assert outcomes["jax"].mismatch and not outcomes["mytorch"].mismatch
    timed = calls[-12:]  # 4 rounds x 3 live contenders, one call per sample
    rounds = [timed[i:i + 3] for i in range(0, 12, 3)]
    assert all(sorted(r) == ["jax", "mytorch", "numpy"] for r in rounds)
    assert len({r[0] for r in rounds}) == 3, "the first contender of a round rotates"
    for name in ("numpy", "mytorch", "jax"):
        s = outcomes[name].stats
        assert s.samples == 4 and s.number == 1 and s.q1 <= s.median <= s.q3
    table = harness.render_table([(workload, outcomes)])
    assert "| fake | NumPy |" in table and "(MISMATCH)" in table and "error" in table
    notes = "\n".join(harness.render_notes([(workload, outcomes)]))
    assert "W0 torch: not measured, AttributeError" in notes and "W0 jax: RESULT MISMATCH" in notes


def test_first_call_contenders_build_a_fresh_function_per_sample():
    built = []

    def factory():
        built.append(object())
        return lambda: np.float32(1.0)

    workload = harness.Workload(
        "W0", "fake", [harness.Contender("mine", lambda: factory, first_call=True)],
        np.float32(1.0), [])
    settings = harness.Settings(budget_s=0.0, min_rounds=5, max_rounds=5, min_sample_s=1.0)
    stats = harness.run_workload(workload, settings)["mine"].stats
    assert stats.number == 1 and stats.samples == 5 and len(built) == 1 + 5


def test_w7_numpy_reference_is_the_gradient():
    """The hand-written backpropagation through time against float64 finite differences."""
    from benchmarks.workloads.w7_rnn_scan import numpy_grads

    rng = np.random.default_rng(0)
    wx, wh = rng.standard_normal((3, 4)) * 0.3, rng.standard_normal((4, 4)) * 0.3
    b, xs, h0 = rng.standard_normal(4) * 0.1, rng.standard_normal((5, 2, 3)), np.zeros((2, 4))

    def loss(wx, wh, b):
        h, total = h0, 0.0
        for x in xs:
            h = np.tanh(x @ wx + h @ wh + b)
            total += (h * h).sum()
        return total

    params = [wx, wh, b]
    for k, g in enumerate(numpy_grads(wx, wh, b, xs, h0)):
        num = np.zeros_like(g)
        for i in np.ndindex(g.shape):
            hi, lo = [p.copy() for p in params], [p.copy() for p in params]
            hi[k][i] += 1e-6
            lo[k][i] -= 1e-6
            num[i] = (loss(*hi) - loss(*lo)) / 2e-6
        np.testing.assert_allclose(g, num, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("dropout", [False, True])
def test_w9_numpy_reference_is_the_gradient(dropout):
    """W9's hand-written loss and backward pass (label smoothing, optional dropout with the
    masks redrawn identically from a seeded generator) against float64 central differences
    along a random direction."""
    from benchmarks.workloads import _mlp
    from benchmarks.workloads.w9_train_step import numpy_loss_and_grads, smoothed_one_hot

    rng = np.random.default_rng(0)
    params = [p.astype(np.float64) for p in _mlp.init_params(rng, (5, 6, 6, 3))]
    x = rng.standard_normal((7, 5))
    labels = smoothed_one_hot(rng.integers(0, 3, 7), 3).astype(np.float64)

    def run(ps):
        masks = np.random.default_rng(5) if dropout else None
        return numpy_loss_and_grads([p.copy() for p in ps], x.copy(), labels, masks)

    loss, grads = run(params)
    d = [rng.standard_normal(p.shape) for p in params]
    eps = 1e-6
    fd = (run([p + eps * t for p, t in zip(params, d, strict=True)])[0]
          - run([p - eps * t for p, t in zip(params, d, strict=True)])[0]) / (2 * eps)
    assert np.isclose(sum(np.sum(g * t) for g, t in zip(grads, d, strict=True)), fd,
                      rtol=1e-6, atol=1e-9)
    h = np.maximum(np.maximum(x @ params[0] + params[1], 0) @ params[2] + params[3], 0)
    z = h @ params[4] + params[5]
    z = z - z.max(1, keepdims=True)
    want = np.mean(np.log(np.exp(z).sum(1)) - (z * labels).sum(1))
    assert np.isclose(loss, want, rtol=1e-12) != dropout  # dropout changes the loss


def test_w9_dropout_rows_really_drop_and_are_checked_for_shapes_only():
    """W9's dropout contenders give finite results of the reference's shapes whose values
    differ from the no-dropout step; a non-finite or misshapen result is reported."""
    workload = WORKLOADS["W9"].build("tiny", ("mytorch",))
    c = next(c for c in workload.contenders if c.name == "mytorch_dropout")
    assert c.check == "shapes"
    out = _run_once(c)
    assert harness.check_result(harness.Contender("x", None), out, workload) is not None
    assert harness.compare_shapes(out, workload.expected) is None
    bad = [[np.full_like(a, np.nan) for a in out[0]], out[1]]
    assert "non-finite" in harness.compare_shapes(bad, workload.expected)
    assert "shape" in harness.compare_shapes([out[0][1:], out[1]], workload.expected) or \
        "result arrays" in harness.compare_shapes([out[0][1:], out[1]], workload.expected)



def test_w10_replicas_compute_the_single_device_step():
    """W10's data-parallel steps (pmap over threads, and over 2 MPI processes where MPI is
    installed) give the parameters of the one-device jit step to float32 rounding."""
    workload = WORKLOADS["W10"].build("tiny", ("mytorch",))
    runs = {c.name: _flat(_run_once(c)) for c in workload.contenders
            if c.name.startswith("mytorch")}
    assert {"mytorch", "mytorch_pmap"} <= set(runs)
    for name, got in runs.items():
        for g, w in zip(got, runs["mytorch"], strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=name)


@pytest.mark.skipif(not hasattr(__import__("os"), "sched_setaffinity"), reason="no affinity")
def test_all_cores_workloads_run_unpinned_and_the_pinning_comes_back():
    """A workload whose replicas must overlap runs on every core the harness started with,
    and the one-core pinning is restored afterwards."""
    import os

    allowed = os.sched_getaffinity(0)
    seen = []

    def make():
        return lambda: seen.append(os.sched_getaffinity(0)) or np.float32(1.0)

    workload = harness.Workload("W0", "fake", [harness.Contender("mine", make)],
                                np.float32(1.0), [], all_cores=True)
    settings = harness.Settings(budget_s=0.0, min_rounds=1, max_rounds=1, min_sample_s=0.0)
    saved = harness.ALLOWED_CORES
    try:
        harness.ALLOWED_CORES = allowed
        os.sched_setaffinity(0, {min(allowed)})
        harness.run_workload(workload, settings)
        assert seen and all(s == allowed for s in seen)
        assert os.sched_getaffinity(0) == {min(allowed)}
    finally:
        harness.ALLOWED_CORES = saved
        os.sched_setaffinity(0, allowed)


def test_psum_bandwidth_table_reads_a_ranks_result():
    """benchmarks/psum_bandwidth.py's table: GB/s as bytes over time, ratios to memcpy."""
    from benchmarks import psum_bandwidth

    result = {"rounds": 3, "machine": ["CPU: test"],
              "rows": [{"bytes": 2**20, "median": {"memcpy": 1e-4, "mpi": 4e-4,
                                                   "communicator": 5e-4, "pmap": 1e-3}}]}
    table = psum_bandwidth.render(result)
    assert "| 1 MiB | 100 us | 10.49 | 400 us | 2.62 | 4.0x | 500 us | 2.10 | 5.0x |" in table
    assert "| 1 ms | 1.05 | 10.0x |" in table and "- CPU: test" in table


def test_mnist_example_script_reads_the_summary_line():
    """benchmarks/mnist_example.py takes accuracy, steps and loop seconds from the line
    that examples/mnist_mlp.py (and the script's PyTorch and JAX versions) print last but
    one; a failed run is reported with its output."""
    from benchmarks import mnist_example

    out = ("training: 100%|##########| 880/880 [00:02<00:00, loss=0.5203]\n"
           "test accuracy 98.89% (train 100.00%) after 880 steps in 2.7 s (3.07 ms/step)\n"
           "checkpoint: ./mnist_mlp.safetensors; plot: ./mnist_mlp.png\n")
    match = mnist_example.LINE.search(out)
    assert match.groups() == ("98.89", "880", "2.7")
    with pytest.raises(SystemExit, match="unknown library"):
        mnist_example.main(["--libs", "mytorch,flax"])


@pytest.mark.mpi
def test_data_parallel_loop_prints_both_ratios(capsys):
    """benchmarks/data_parallel_loop.py runs the W10 step in a loop on threads and on 2 MPI
    processes (through the launcher) and prints each ratio to one device."""
    pytest.importorskip("mpi4py")
    if __import__("shutil").which("mpiexec") is None:
        pytest.skip("no mpiexec on PATH")
    from benchmarks import data_parallel_loop

    data_parallel_loop.main(["--rounds", "2"])
    out = capsys.readouterr().out
    for row in ("pmap, 2 virtual CPU devices (threads)", "pmap, 2 MPI processes"):
        line = next(ln for ln in out.splitlines() if row in ln)
        ratio = float(line.rstrip(" |").split("|")[-1].strip().rstrip("x"))
        assert 0 < ratio < 10, line
