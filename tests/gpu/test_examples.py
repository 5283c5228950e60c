"""The example models' training steps on the GPU: a few steps of the digits MLP
(examples/mnist_mlp.py) and of the character GPT (examples/gpt_char.py), small settings,
give the CPU's losses and parameters within tolerance."""

import argparse
import functools

import numpy as np
import pytest

import mytorch as mt
from mytorch.mixed_precision import get_policy
from tests.examples import test_examples
from tests.gpu.compare import assert_matches
from tests.gpu.conftest import placed_on

pytestmark = pytest.mark.gpu


@functools.cache
def load(name):
    """The example module, loaded once (so its classes compare equal across runs)."""
    return test_examples.load(name)


def assert_params_track(got, want, device, max_move):
    """The trained parameters agree: all on `device`, at least 99 % of all entries within
    (1e-4, 1e-5), and every entry within `max_move`. Adam moves an entry by about the
    learning rate per step whatever its gradient's size, so where a gradient is 0 up to
    rounding (a key projection's bias under softmax, for one) the direction of that entry's
    steps is noise: `max_move` is twice the sum of the learning rates of the steps."""
    assert mt.tree_util.tree_structure(got) == mt.tree_util.tree_structure(want)
    close, total = 0, 0
    for i, (g, w) in enumerate(zip(mt.tree_util.tree_leaves(got),
                                   mt.tree_util.tree_leaves(want), strict=True)):
        assert g.device == device, f"parameter {i} lives on {g.device}"
        g, w = np.asarray(g, np.float32), np.asarray(w, np.float32)
        err = np.abs(g - w)
        assert err.max() <= max_move, f"parameter {i} differs by {err.max():.3g}"
        close += int((err <= 1e-5 + 1e-4 * np.abs(w)).sum())
        total += w.size
    assert close >= 0.99 * total, f"{total - close} of {total} parameter entries differ"


def _train(step, state, batches, device):
    """Run `step(*state, *batch) -> (*state, loss)` over `batches` on `device`; returns
    (the losses, the final state)."""
    with placed_on(device):
        state = mt.device_put(state, device)
        losses = []
        for batch in batches:
            *state, loss = step(*state, *mt.device_put(batch, device))
            losses.append(loss)
    return losses, state


def _mlp_run(device, dropout, backend_options=None):
    mnist = load("mnist_mlp")
    rng = np.random.default_rng(0)
    with placed_on(device):
        key = mt.random.key(0)
        model = mnist.Classifier(64, 10, 128, 2, dropout, key=key)
        optimizer = mt.optim.adam(2e-3)
        opt_state = optimizer.init(model)
        train_step, correct = mnist.make_steps(optimizer, 0.1)
        if backend_options:  # the same step, compiled with these options
            train_step = mt.jit(train_step.__wrapped__, backend_options=backend_options)
        keys = mt.random.split(mt.random.key(1), 4)
    batches = [(rng.random((64, 64), np.float32), rng.integers(0, 10, 64).astype(np.int32), k)
               for k in keys]
    losses, (model, opt_state) = _train(train_step, (model, opt_state), batches, device)
    with placed_on(device):
        x, y = mt.device_put((batches[0][0], batches[0][1]), device)
        hits = correct(model, x, y)
    return losses, model, hits


@pytest.mark.parametrize("dropout", [0.0, 0.2], ids=["no_dropout", "dropout"])
def test_digits_mlp_steps_match_cpu(dropout, gpu, cpu):
    want = _mlp_run(cpu, dropout)  # dropout masks: the same random bits on both devices
    got = _mlp_run(gpu, dropout)
    assert_matches(got[0], want[0], device=gpu, tol=(1e-5, 1e-6), what="losses")
    assert_params_track(got[1], want[1], gpu, max_move=2 * 4 * 2e-3)  # 4 steps, lr 2e-3
    assert int(got[2]) == int(want[2])


def test_digits_mlp_steps_under_cuda_graph(gpu, cpu):
    want = _mlp_run(cpu, 0.2)
    got = _mlp_run(gpu, 0.2, backend_options={"cuda_graph": True})
    assert_matches(got[0], want[0], device=gpu, tol=(1e-5, 1e-6), what="losses")
    assert_params_track(got[1], want[1], gpu, max_move=2 * 4 * 2e-3)


def _gpt_run(device, bf16):
    gpt = load("gpt_char")
    args = argparse.Namespace(steps=20, lr=3e-3)
    rng = np.random.default_rng(1)
    with placed_on(device):
        model = gpt.GPT(40, 16, 32, 4, 2, key=mt.random.key(2))
        optimizer = gpt.make_optimizer(args)
        opt_state = optimizer.init(model)
        policy = get_policy("params=float32,compute=bfloat16,output=float32" if bf16
                            else "float32")
        train_step, loss_fn = gpt.make_steps(optimizer, policy)
    ids = rng.integers(0, 40, (3, 4, 17)).astype(np.int32)
    batches = [(b[:, :-1], b[:, 1:]) for b in ids]
    return _train(train_step, (model, opt_state), batches, device)


def test_char_gpt_steps_match_cpu(gpu, cpu):
    want_losses, (want_model, _) = _gpt_run(cpu, bf16=False)
    got_losses, (got_model, _) = _gpt_run(gpu, bf16=False)
    assert_matches(got_losses, want_losses, device=gpu, tol=(1e-4, 1e-5), what="losses")
    # the schedule: lr 0, then about 3e-3 (a warmup of one step of 20)
    assert_params_track(got_model, want_model, gpu, max_move=2 * 3 * 3e-3)


def test_char_gpt_bf16_steps_track_cpu(gpu, cpu):
    want_losses, _ = _gpt_run(cpu, bf16=True)
    got_losses, (model, _) = _gpt_run(gpu, bf16=True)
    # bfloat16 products: accumulation order changes the last bits, so the losses agree to
    # about 1 % and every parameter stays finite
    assert_matches(got_losses, want_losses, device=gpu, tol=(2e-2, 2e-2), what="losses")
    assert all(np.isfinite(np.asarray(p, np.float32)).all()
               for p in mt.tree_util.tree_leaves(model))
