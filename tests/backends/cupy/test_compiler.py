"""The GPU jit compiler end to end on the CPU twin: fusion, one generated CUDA module per
program (built by g++ over NumPy buffers), eager kernels for the rest, host loops for control
flow, donation and graph replay, against the same functions on the CPU backend. This checks
the compiler's logic and the generated kernels; CuPy and the GPU are checked only on one
(tests/gpu)."""

import numpy as np
import pytest

import mytorch as mt
import mytorch.numpy as mnp
from tests.examples.test_examples import load


def CPU():  # noqa: N802
    return mt.devices("cpu")[0]


def on(device, tree):
    return mt.device_put(tree, device)


def same(got, want, rtol=1e-5, atol=1e-6):
    got_leaves, want_leaves = mt.tree_util.tree_leaves(got), mt.tree_util.tree_leaves(want)
    assert len(got_leaves) == len(want_leaves)
    for g, w in zip(got_leaves, want_leaves):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(np.asarray(g, np.float64) if g.dtype.kind == "V" else
                                   np.asarray(g), np.asarray(w), rtol=rtol, atol=atol)


def _chain(x, y):
    return mnp.tanh(x * 2.0 + 1.0) * y - mnp.exp(-x) / (1.0 + y * y)


def _reduction(x, y):
    return mnp.sum(mnp.square(x - y), axis=-1), mnp.max(x * y, axis=0)


def _mixed(x, y):
    z = x @ y.T  # cuBLAS between two fused chains
    return mnp.mean(mnp.maximum(z, 0.0) + 1.0), (z > 0).astype(mnp.int32).sum(axis=1)


def _control_flow(x, y):
    total = mt.lax.fori_loop(0, 3, lambda i, c: c + x * i, mnp.zeros_like(x))
    carry, ys = mt.lax.scan(lambda c, row: (c + row, c * row), mnp.zeros(x.shape[1]), x)
    branch = mt.lax.cond(mnp.sum(y) > 0, lambda v: v * 2.0, lambda v: v - 1.0, y)
    return total, carry, ys, branch


@pytest.mark.parametrize("f", [_chain, _reduction, _mixed, _control_flow])
def test_jit_on_the_twin_matches_the_cpu(twin, f):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((5, 4)).astype(np.float32)
    y = rng.standard_normal((5, 4)).astype(np.float32)
    want = mt.jit(f)(*on(CPU(), (x, y)))
    got = mt.jit(f)(*on(twin, (x, y)))
    for leaf in mt.tree_util.tree_leaves(got):
        assert leaf.device is twin
    same(got, want)


def test_gradients_on_the_twin_match_the_cpu(twin):
    def loss(w, x):
        return mnp.mean(mnp.tanh(x @ w) ** 2) + 0.1 * mnp.sum(w * w)

    rng = np.random.default_rng(2)
    w = rng.standard_normal((4, 3)).astype(np.float32)
    x = rng.standard_normal((6, 4)).astype(np.float32)
    g = mt.jit(mt.grad(loss))
    same(g(*on(twin, (w, x))), g(*on(CPU(), (w, x))))


def test_the_text_shows_one_cuda_module_with_the_fused_kernel(twin):
    x = on(twin, np.ones((8, 3), np.float32))
    text = mt.jit(_chain).lower(x, x).as_text()
    assert "__global__" in text and "CUDA module" in text
    assert text.count('extern "C" __global__') >= 1
    assert "fused" in text


def test_donated_inputs_give_the_same_results(twin):
    f = mt.jit(lambda a, b: (a * 2.0 + b, mnp.sum(a)), donate_argnums=(0,))
    x = np.arange(6, dtype=np.float32)
    got = f(*on(twin, (x, x)))
    same(got, (x * 2 + x, np.float32(x.sum())))


def test_cuda_graph_option_replays_with_new_inputs(twin):
    f = mt.jit(_chain, backend_options={"cuda_graph": True})
    rng = np.random.default_rng(3)
    for _ in range(4):  # run, capture, then replays over new inputs
        x, y = (rng.standard_normal((7, 2)).astype(np.float32) for _ in range(2))
        same(f(*on(twin, (x, y))), mt.jit(_chain)(*on(CPU(), (x, y))))


def test_cuda_graph_refuses_host_reads(twin):
    f = mt.jit(lambda x: mt.lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 2),
                                           (0, x))[1],
               backend_options={"cuda_graph": True})
    with pytest.raises(ValueError, match=r"cuda_graph.*host loops or reads values back to "
                                         r"the host \(while\)"):
        f(on(twin, np.ones(3, np.float32)))


def test_unknown_gpu_option_is_an_error(twin):
    f = mt.jit(_chain, backend_options={"cuda_grahp": True})
    x = on(twin, np.ones(2, np.float32))
    with pytest.raises(ValueError, match="unknown GPU backend option 'cuda_grahp'"):
        f(x, x)
    one = on(CPU(), np.ones(2, np.float32))
    np.testing.assert_allclose(np.asarray(f(one, one)), np.asarray(_chain(one, one)),
                               rtol=1e-6)


def test_digits_mlp_steps_match_the_cpu(twin):
    """Three training steps of examples/mnist_mlp.py's model (dropout off) on the twin and on
    the CPU from the same parameters."""
    mnist = load("mnist_mlp")
    import mytorch.optim as optim

    with mt.config.override(default_device=CPU()):  # made once, on the CPU
        model = mnist.Classifier(64, 10, 32, 2, 0.0, key=mt.random.key(0))
    optimizer = optim.adam(1e-2)
    train_step, _ = mnist.make_steps(optimizer, 0.1)
    rng = np.random.default_rng(4)
    x = rng.standard_normal((16, 64)).astype(np.float32)
    y = rng.integers(0, 10, 16).astype(np.int32)

    def run(device):
        m = on(device, model)
        state = optimizer.init(m)
        losses = []
        for i in range(3):
            m, state, loss = train_step(m, state, *on(device, (x, y)),
                                        on(device, mt.random.key(i)))
            losses.append(float(loss))
        return losses, m

    (cpu_losses, cpu_model), (gpu_losses, gpu_model) = run(CPU()), run(twin)
    np.testing.assert_allclose(gpu_losses, cpu_losses, rtol=1e-5)
    same(gpu_model, cpu_model, rtol=1e-4, atol=1e-5)


def test_char_gpt_steps_match_the_cpu(twin):
    """Two training steps of examples/gpt_char.py's model on the twin and on the CPU."""
    gpt = load("gpt_char")
    args = gpt.parse_args(["--dim", "32", "--depth", "1", "--context", "16", "--heads", "2"])
    with mt.config.override(default_device=CPU()):  # made once, on the CPU
        model = gpt.GPT(20, 16, 32, 2, 1, key=mt.random.key(0))
    optimizer = gpt.make_optimizer(args)
    train_step, _ = gpt.make_steps(optimizer, gpt.get_policy("float32"))
    rng = np.random.default_rng(5)
    x = rng.integers(0, 20, (4, 16)).astype(np.int32)
    y = rng.integers(0, 20, (4, 16)).astype(np.int32)

    def run(device):
        m = on(device, model)
        state = optimizer.init(m)
        losses = []
        for _ in range(2):
            m, state, loss = train_step(m, state, *on(device, (x, y)))
            losses.append(float(loss))
        return losses

    np.testing.assert_allclose(run(twin), run(CPU()), rtol=1e-5)


def test_pmap_on_two_twin_devices_matches_one_device(twin2):
    """Collectives in the GPU compiler (the twin's replicas exchange through the thread
    communicator, where GPUs use NCCL) and a data-parallel gradient step."""
    rng = np.random.default_rng(6)
    w = rng.standard_normal((3, 2)).astype(np.float32)
    x = rng.standard_normal((2, 5, 3)).astype(np.float32)

    def loss(w, xb):
        return mnp.mean(mnp.tanh(xb @ w) ** 2)

    def step(w, xb):
        g = mt.lax.pmean(mt.grad(loss)(w, xb), "i")
        return w - 0.5 * g, mt.lax.all_gather(mnp.sum(xb), "i"), mt.lax.ppermute(
            xb[0, 0], "i", [(0, 1), (1, 0)])

    new_w, sums, swapped = mt.pmap(step, axis_name="i", in_axes=(None, 0),
                                   devices=twin2)(w, x)
    assert new_w.devices() == set(twin2)
    wc, xc = on(CPU(), (w, x))
    full = mt.grad(lambda w: (loss(w, xc[0]) + loss(w, xc[1])) / 2)(wc)
    same(new_w[0], w - 0.5 * np.asarray(full), rtol=1e-5)
    same(new_w[1], new_w[0])
    np.testing.assert_allclose(np.asarray(sums[0]), x.sum(axis=(1, 2)), rtol=1e-5)
    np.testing.assert_array_equal(np.asarray(swapped), x[::-1, 0, 0])


def test_pmap_with_bucketed_and_scalar_psums_on_the_twin(twin2):
    """psum buckets reshape a 0-d result inside a fused kernel (a 0-d index)."""
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    s = np.array([1.0, 3.0], np.float32)
    f = mt.pmap(lambda a, s: a - 0.1 * mt.lax.pmean(a * 2, "i") + mt.lax.pmean(s, "i"),
                axis_name="i", devices=twin2)
    want = a - 0.1 * (a * 2).mean(axis=0) + s.mean()
    np.testing.assert_allclose(np.asarray(f(a, s)), want, rtol=1e-6)


def test_debug_nans_names_the_equation_on_the_twin(twin):
    f = mt.jit(lambda x: mnp.log(x - 1.0) * 2.0)
    x = on(twin, np.array([0.5, 2.0], np.float32))
    with mt.config.override(debug_nans=True):
        with pytest.raises(FloatingPointError, match=r"debug_nans: log\(f32\[2\]\) at "
                                                     r".*test_compiler.py.*produced a NaN"):
            f(x)
    assert np.isnan(np.asarray(f(x))[0])
