"""Train a small convolutional network on scikit-learn's bundled 8x8 digits.

    python examples/cnn_digits.py

The network: two blocks of 3x3 convolution, batch normalisation (its running statistics
are explicit state, threaded through the training step), ReLU and 2x2 max pooling, then
dropout and a linear classifier. It trains with Adam and reports the test accuracy on 360
held-out digits, computed with the running statistics (inference mode).
"""

import argparse
import sys
import time

import numpy as np

import mytorch as mt
import mytorch.numpy as mnp
from mytorch import nn, optim


class CNN(nn.Module):
    """images f32[batch, 1, 8, 8] -> logits f32[batch, 10]."""

    conv1: nn.Conv2d
    bn1: nn.BatchNorm
    conv2: nn.Conv2d
    bn2: nn.BatchNorm
    pool: nn.MaxPool2d
    drop: nn.Dropout
    head: nn.Linear

    def __init__(self, channels=(32, 64), classes=10, dropout=0.3, *, key):
        k1, k2, k3 = mt.random.split(key, 3)
        c1, c2 = channels
        self.conv1 = nn.Conv2d(1, c1, 3, padding=1, key=k1)
        self.bn1 = nn.BatchNorm(c1, axis_name=None)   # the batch is the leading axis
        self.conv2 = nn.Conv2d(c1, c2, 3, padding=1, key=k2)
        self.bn2 = nn.BatchNorm(c2, axis_name=None)
        self.pool = nn.MaxPool2d(2, stride=2)
        self.drop = nn.Dropout(dropout)
        self.head = nn.Linear(c2 * 2 * 2, classes, key=k3)

    def __call__(self, x, state, *, key=None, inference=False):
        x, state = self.bn1(self.conv1(x), state, inference=inference)
        x = self.pool(nn.relu(x))                               # [batch, c1, 4, 4]
        x, state = self.bn2(self.conv2(x), state, inference=inference)
        x = self.pool(nn.relu(x))                               # [batch, c2, 2, 2]
        x = self.drop(x.reshape(x.shape[0], -1), key=key, inference=inference)
        return self.head(x), state


def load_digits(key, test_size=360):
    """(x_train f32[n, 1, 8, 8], y_train, x_test, y_test) from scikit-learn's digits."""
    from sklearn.datasets import load_digits as sk_digits

    digits = sk_digits()
    x = (digits.images / 16.0).astype(np.float32)[:, None]
    y = digits.target.astype(np.int32)
    order = np.asarray(mt.random.permutation(key, len(x)))
    return x[order[test_size:]], y[order[test_size:]], x[order[:test_size]], y[order[:test_size]]


def make_steps(optimizer):
    def loss_fn(model, state, x, y, key):
        logits, state = model(x, state, key=key)
        loss = mnp.mean(nn.softmax_cross_entropy_with_integer_labels(logits, y))
        return loss, state

    @mt.jit
    def train_step(model, state, opt_state, x, y, key):
        (loss, state), grads = mt.value_and_grad(loss_fn, has_aux=True)(model, state, x, y,
                                                                        key)
        updates, opt_state = optimizer.update(grads, opt_state, model)
        return optim.apply_updates(model, updates), state, opt_state, loss

    @mt.jit
    def correct(model, state, x, y):
        logits, _ = model(x, state, inference=True)
        return mnp.sum(mnp.argmax(logits, axis=-1) == y)

    return train_step, correct


def train(args, progress=True):
    key = mt.random.key(args.seed)
    data_key, init_key, key = mt.random.split(key, 3)
    x_train, y_train, x_test, y_test = load_digits(data_key)
    model, state = nn.make_with_state(CNN)(key=init_key)
    optimizer = optim.adam(args.lr)
    opt_state = optimizer.init(model)
    train_step, correct = make_steps(optimizer)

    steps_per_epoch = len(x_train) // args.batch_size
    bar = _progress(steps_per_epoch * args.epochs, progress)
    start = time.perf_counter()
    losses = []
    for _ in range(args.epochs):
        key, shuffle_key = mt.random.split(key)
        order = np.asarray(mt.random.permutation(shuffle_key, len(x_train)))
        for i in range(steps_per_epoch):
            idx = order[i * args.batch_size:(i + 1) * args.batch_size]
            key, step_key = mt.random.split(key)
            model, state, opt_state, loss = train_step(model, state, opt_state, x_train[idx],
                                                       y_train[idx], step_key)
            if i % 10 == 0:
                losses.append(float(loss))
                bar.set_postfix(loss=f"{losses[-1]:.4f}")
            bar.update(1)
    bar.close()
    seconds = time.perf_counter() - start
    accuracy = int(correct(model, state, x_test, y_test)) / len(x_test)
    return {"test_accuracy": accuracy, "seconds": seconds, "losses": losses,
            "steps": steps_per_epoch * args.epochs, "params": nn.count_params(model)}


def _progress(total, enabled):
    """A tqdm progress bar over `total` steps (silent when not `enabled`)."""
    from tqdm import tqdm

    return tqdm(total=total, desc="training", unit="step", file=sys.stdout,
                disable=not enabled)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--epochs", type=int, default=15)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    r = train(args)
    print(f"test accuracy {r['test_accuracy']:.2%} after {r['steps']} steps in "
          f"{r['seconds']:.1f} s ({r['params']:,} parameters)")
    return r


if __name__ == "__main__":
    main()
