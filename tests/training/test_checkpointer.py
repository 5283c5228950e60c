"""mt.Checkpointer: atomic saves under SIGKILL, keeping the last k steps, and resuming a
training run (hand-written SGD; mt.optim.adam with a typed key) from the newest checkpoint
with bit-identical final parameters."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import mytorch as mt
import mytorch.numpy as mnp


def _same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.tobytes() == b.tobytes()


_SLOW_WRITER = textwrap.dedent("""
    import os, sys, time
    import numpy as np
    import mytorch as mt

    real_fdopen = os.fdopen

    class Slow:  # each chunk takes a while, so the parent can kill us part-way
        def __init__(self, f):
            self.f = f
        def write(self, b):
            n = self.f.write(b)
            self.f.flush()
            time.sleep(0.05)
            return n
        def __getattr__(self, name):
            return getattr(self.f, name)
        def __enter__(self):
            return self
        def __exit__(self, *exc):
            return self.f.__exit__(*exc)

    os.fdopen = lambda *a, **k: Slow(real_fdopen(*a, **k))
    tree = {f"w{i}": np.full((256, 1024), i, np.float32) for i in range(60)}
    ckpt = mt.Checkpointer(sys.argv[1], max_to_keep=3)
    print("start", flush=True)
    ckpt.save(2, tree)
""")


def test_sigkill_mid_write_leaves_the_previous_checkpoint_intact(tmp_path):
    ckpt = mt.Checkpointer(tmp_path, max_to_keep=3)
    old = {"w0": mnp.full((256, 1024), -1.0)}
    ckpt.save(1, old)
    script = tmp_path / "writer.py"
    script.write_text(_SLOW_WRITER)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.Popen([sys.executable, str(script), str(tmp_path)],
                            stdout=subprocess.PIPE, env=env)
    try:
        assert proc.stdout.readline().strip() == b"start"
        deadline = time.monotonic() + 60
        temps = []
        while time.monotonic() < deadline:  # wait until part of the new file is on disk
            temps = [n for n in os.listdir(tmp_path) if n.endswith(".tmp")]
            if temps and os.path.getsize(tmp_path / temps[0]) > 4 * 2**20:
                break
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL
    assert temps and os.path.exists(tmp_path / temps[0])  # the partial write is left behind
    assert 0 < os.path.getsize(tmp_path / temps[0]) < 60 * 2**20
    assert ckpt.all_steps() == [1] and ckpt.latest_step() == 1
    np.testing.assert_array_equal(ckpt.restore(like=old)["w0"], np.full((256, 1024), -1.0))
    mt.Checkpointer(tmp_path)  # a new Checkpointer sweeps the crashed run's temporary file
    assert not [n for n in os.listdir(tmp_path) if n.endswith(".tmp")]


# Checkpointer ------------------------------------------------------------------------------------

def test_checkpointer_keeps_the_last_k(tmp_path):
    ckpt = mt.Checkpointer(tmp_path / "run", max_to_keep=2)
    assert ckpt.all_steps() == [] and ckpt.latest_step() is None
    for step in (0, 5, 10, 15):
        ckpt.save(step, {"w": mnp.full((2,), float(step))})
    assert ckpt.all_steps() == [10, 15] and ckpt.latest_step() == 15
    assert sorted(os.listdir(tmp_path / "run")) == ["ckpt_10.safetensors", "ckpt_15.safetensors"]
    np.testing.assert_array_equal(ckpt.restore()["w"], [15.0, 15.0])
    np.testing.assert_array_equal(ckpt.restore(10)["w"], [10.0, 10.0])
    ckpt.save(mnp.asarray(20), {"w": mnp.zeros(2)})  # a concrete int array is a step
    assert ckpt.all_steps() == [15, 20]
    keep_all = mt.Checkpointer(tmp_path / "run", max_to_keep=None)
    keep_all.save(21, {})
    keep_all.save(22, {})
    assert keep_all.all_steps() == [15, 20, 21, 22]
    (tmp_path / "run" / "notes.txt").write_text("not a checkpoint")
    assert keep_all.all_steps() == [15, 20, 21, 22]


def test_checkpointer_errors(tmp_path):
    ckpt = mt.Checkpointer(tmp_path)
    with pytest.raises(FileNotFoundError, match=r"Checkpointer.restore: no checkpoint in"):
        ckpt.restore()
    ckpt.save(3, {"a": 1})
    with pytest.raises(FileNotFoundError, match=r"no checkpoint of step 4 .*steps: \[3\]"):
        ckpt.restore(4)
    with pytest.raises(TypeError, match=r"Checkpointer.save: step must be a non-negative int, "
                       r"got -1"):
        ckpt.save(-1, {})
    with pytest.raises(TypeError, match=r"step must be a non-negative int, got 1.5"):
        ckpt.save(1.5, {})
    with pytest.raises(ValueError, match=r"max_to_keep must be a positive int or None, got 0"):
        mt.Checkpointer(tmp_path, max_to_keep=0)


# Resuming a training run -------------------------------------------------------------------------

def _init_params():
    rng = np.random.default_rng(0)
    return {"w1": mnp.asarray(rng.normal(size=(3, 8)).astype(np.float32) * 0.5),
            "b1": mnp.zeros(8), "w2": mnp.asarray(rng.normal(size=(8, 1)).astype(np.float32))}


_X = np.random.default_rng(1).normal(size=(64, 3)).astype(np.float32)
_Y = np.sin(_X.sum(axis=1, keepdims=True))


def _loss(params, x, y):
    h = mnp.tanh(x @ params["w1"] + params["b1"])
    return mnp.mean((h @ params["w2"] - y) ** 2)


def _next_key(key):
    """A hand-written counter-based generator on a uint32[2] key (32-bit LCG + step)."""
    state = key[0] * mnp.uint32(1664525) + mnp.uint32(1013904223)
    return mnp.stack([state, key[1] + mnp.uint32(1)])


@mt.jit
def _train_step(params, momentum, key):
    key = _next_key(key)
    start = (key[0] >> 27).astype(mnp.int32)  # a minibatch of 16 drawn from the key
    x = mt.lax.dynamic_slice_in_dim(mnp.asarray(_X), start * 1, 16)
    y = mt.lax.dynamic_slice_in_dim(mnp.asarray(_Y), start * 1, 16)
    grads = mt.grad(_loss)(params, x, y)
    momentum = mt.tree_util.tree_map(lambda m, g: 0.9 * m + g, momentum, grads)
    params = mt.tree_util.tree_map(lambda p, m: p - 0.05 * m, params, momentum)
    return params, momentum, key


def _state0():
    params = _init_params()
    return {"params": params, "opt_state": mt.tree_util.tree_map(mnp.zeros_like, params),
            "step": 0, "key": mnp.array([42, 0], dtype=mnp.uint32)}


def _run(state, until, ckpt=None):
    params, mom, key = state["params"], state["opt_state"], state["key"]
    for step in range(state["step"], until):
        params, mom, key = _train_step(params, mom, key)
        if ckpt is not None:
            ckpt.save(step + 1, {"params": params, "opt_state": mom, "step": step + 1,
                                 "key": key})
    return params


def test_resuming_from_the_newest_checkpoint_gives_the_same_final_params(tmp_path):
    final = _run(_state0(), 12)
    ckpt = mt.Checkpointer(tmp_path, max_to_keep=3)
    _run(_state0(), 7, ckpt)  # the run stops ("crashes") after step 7
    assert ckpt.all_steps() == [5, 6, 7]
    resumed = mt.Checkpointer(tmp_path, max_to_keep=3)
    state = resumed.restore(like=_state0())
    assert state["step"] == 7 and state["key"].dtype == mnp.uint32
    resumed_final = _run(state, 12, resumed)
    for k in final:
        _same_bits(resumed_final[k], final[k])
    assert resumed.latest_step() == 12
    assert not np.array_equal(final["w1"], _init_params()["w1"])


@mt.jit
def _adam_step(params, opt_state, key):
    key, sub = mt.random.split(key)
    idx = (mt.random.uniform(sub, (16,)) * 64).astype(mnp.int32)
    grads = mt.grad(_loss)(params, mnp.asarray(_X)[idx], mnp.asarray(_Y)[idx])
    updates, opt_state = _ADAM.update(grads, opt_state, params)
    return mt.optim.apply_updates(params, updates), opt_state, key


_ADAM = mt.optim.adam(1e-2)


def _adam_run(state, until, ckpt=None):
    params, opt_state, key = state["params"], state["opt_state"], state["key"]
    for step in range(state["step"], until):
        params, opt_state, key = _adam_step(params, opt_state, key)
        if ckpt is not None and (step + 1) % 2 == 0:
            ckpt.save(step + 1, {"params": params, "opt_state": opt_state, "step": step + 1,
                                 "key": key})
    return params


def test_resuming_an_adam_run_with_a_typed_key(tmp_path):
    def fresh():
        params = _init_params()
        return {"params": params, "opt_state": _ADAM.init(params), "step": 0,
                "key": mt.random.key(0)}

    final = _adam_run(fresh(), 10)
    ckpt = mt.Checkpointer(tmp_path, max_to_keep=2)
    _adam_run(fresh(), 7, ckpt)  # stops after step 7; the newest checkpoint is step 6
    assert ckpt.all_steps() == [4, 6]
    state = mt.Checkpointer(tmp_path).restore(like=mt.eval_shape(fresh))
    assert int(state["step"]) == 6 and int(state["opt_state"][0].count) == 6
    state["step"] = int(state["step"])
    resumed = _adam_run(state, 10)
    for k in final:
        _same_bits(resumed[k], final[k])
