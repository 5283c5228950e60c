"""Data-parallel training with pmap: the digits MLP, each device taking a slice of every batch.

    python examples/data_parallel.py                  # 2 virtual CPU devices
    python examples/data_parallel.py --devices 4 --check
    python -m mytorch.distributed.launch -n 2 examples/data_parallel.py   # 2 processes (MPI)

The model, data and optimizer are those of examples/mnist_mlp.py (scikit-learn's 8x8
digits, an MLP, Adam), without dropout. Each step splits the global batch into one slice
per device; every replica computes the gradient of its slice's mean loss, `lax.pmean`
averages the gradients (the mean over equal slices is the gradient of the whole batch's
mean loss), and every replica applies the same update, so the parameters stay identical on
every device. The step is one pmap: the parameters and optimizer state go in whole
(`in_axes=None`) and come back from replica 0 (`out_axes=None`).

Started through the launcher, the script calls `mytorch.distributed.initialize()` and runs
one replica per process over `mt.devices()`, the global devices; each process reads its
own slice of the batch, which every process draws from the same key.

`--check` also trains on one device, on the same global batches with the same key, and
checks that the two loss curves agree to float32 rounding (relative 1e-5, or 1e-5 of the
first loss once the losses are small: the two sum the batch in a different order, and
over many steps those roundings compound): data parallelism changes where the work runs,
not what is computed.
"""

import argparse
import os
import sys
import time

# Each replica multiplies small matrices: one BLAS thread each is as fast as several, and
# the replicas (threads or processes) share the cores.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402  (after the thread settings)

import mytorch as mt  # noqa: E402
import mytorch.numpy as mnp  # noqa: E402
from mytorch import lax, nn, optim  # noqa: E402
from mnist_mlp import load_digits  # noqa: E402  (examples/: the same data and split)


def launched():
    """Whether this process was started by `python -m mytorch.distributed.launch`."""
    return "MYTORCH_PROCESS_ID" in os.environ


def loss_fn(model, x, y):
    """Mean cross-entropy of `model` on x f32[batch, 64], y i32[batch]."""
    return mnp.mean(nn.softmax_cross_entropy_with_integer_labels(mt.vmap(model)(x), y))


def make_parallel_step(optimizer, devices):
    """One training step on len(devices) replicas: x f32[n, batch / n, 64] and y
    i32[n, batch / n], slice r on device r; returns the new model and optimizer state and
    the mean loss over the whole batch."""
    def step(model, opt_state, x, y):
        loss, grads = mt.value_and_grad(loss_fn)(model, x, y)
        grads, loss = lax.pmean((grads, loss), "batch")
        updates, opt_state = optimizer.update(grads, opt_state, model)
        return optim.apply_updates(model, updates), opt_state, loss

    return mt.pmap(step, "batch", in_axes=(None, None, 0, 0), out_axes=None, devices=devices)


def make_single_step(optimizer):
    """The same step on one device and the whole batch."""
    @mt.jit
    def step(model, opt_state, x, y):
        loss, grads = mt.value_and_grad(loss_fn)(model, x, y)
        updates, opt_state = optimizer.update(grads, opt_state, model)
        return optim.apply_updates(model, updates), opt_state, loss

    return step


def train(args, devices=None, progress=True):
    """Train with `devices` (None: on one device, without pmap); returns the loss curve
    (one value per step), the test accuracy and the time taken."""
    key = mt.random.key(args.seed)
    data_key, init_key, key = mt.random.split(key, 3)
    x_train, y_train, x_test, y_test = load_digits(data_key)
    model = nn.MLP(x_train.shape[1], 10, args.width, args.depth, key=init_key)
    optimizer = optim.adam(args.lr)
    opt_state = optimizer.init(model)
    n = None if devices is None else len(devices)
    step = make_single_step(optimizer) if n is None else make_parallel_step(optimizer, devices)
    if n is not None and args.batch_size % n:
        raise SystemExit(f"--batch-size {args.batch_size} must be a multiple of the "
                         f"{n} devices")

    steps_per_epoch = len(x_train) // args.batch_size
    losses = []
    bar = _progress(steps_per_epoch * args.epochs, progress,
                    "single device" if n is None else f"{n} replicas")
    start = time.perf_counter()
    for _ in range(args.epochs):
        key, shuffle_key = mt.random.split(key)
        order = np.asarray(mt.random.permutation(shuffle_key, len(x_train)))
        for i in range(steps_per_epoch):
            idx = order[i * args.batch_size:(i + 1) * args.batch_size]
            x, y = x_train[idx], y_train[idx]
            if n is not None:                 # slice r of the batch goes to device r
                x, y = x.reshape(n, -1, x.shape[1]), y.reshape(n, -1)
            model, opt_state, loss = step(model, opt_state, x, y)
            losses.append(float(loss))
            bar.set_postfix(loss=f"{losses[-1]:.4f}")
            bar.update(1)
    bar.close()
    seconds = time.perf_counter() - start
    logits = mt.vmap(model)(x_test)
    accuracy = float(np.mean(np.argmax(np.asarray(logits), -1) == y_test))
    return {"losses": losses, "test_accuracy": accuracy, "seconds": seconds}


def _progress(total, enabled, desc):
    """A tqdm progress bar over `total` steps (silent when not `enabled`)."""
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="step", file=sys.stdout, disable=not enabled)


def print_curve(name, losses, every):
    print(f"{name}: " + " ".join(f"{losses[i]:.4f}" for i in range(0, len(losses), every)))


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--devices", type=int, default=2,
                   help="virtual CPU devices (ignored under the launcher: one per process)")
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--batch-size", type=int, default=64, help="the global batch")
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--width", type=int, default=256)
    p.add_argument("--depth", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--check", action="store_true",
                   help="also train on one device and check that the loss curves agree")
    return p.parse_args(argv)


def devices_for(args):
    """The devices to train on: every process's under the launcher, else --devices virtual
    CPU devices (configured before the first use of the devices)."""
    if launched():
        import mytorch.distributed as dist

        dist.initialize()
        return mt.devices()
    mt.config.update("num_cpu_devices", max(args.devices, mt.config.num_cpu_devices))
    return mt.devices()[:args.devices]


def main(argv=None):
    args = parse_args(argv)
    devices = devices_for(args)
    leader = mt.process_index() == 0
    result = train(args, devices, progress=leader and not launched())
    losses = result["losses"]
    every = max(1, len(losses) // 10)
    where = (f"{mt.process_count()} processes" if mt.process_count() > 1
             else f"{len(devices)} devices")
    if leader:
        print_curve(f"loss on {where}", losses, every)
        print(f"test accuracy {result['test_accuracy']:.2%} after {len(losses)} steps in "
              f"{result['seconds']:.1f} s ({1e3 * result['seconds'] / len(losses):.2f} "
              f"ms/step)")
    if args.check:
        single = train(args, None, progress=False)
        if leader:
            print_curve("loss on 1 device", single["losses"], every)
        scale = abs(float(single["losses"][0]))
        np.testing.assert_allclose(losses, single["losses"], rtol=1e-5, atol=1e-5 * scale,
                                   err_msg="data-parallel and single-device losses differ")
        if leader:
            gap = np.max(np.abs(np.asarray(losses) - np.asarray(single["losses"])))
            print(f"check: the {len(losses)} losses agree to rtol 1e-5, atol 1e-5 x the "
                  f"first loss (largest difference {gap:.1e}, first loss {scale:.3f})")
    return result


if __name__ == "__main__":
    main()
