"""The MLP of W1 and W3: initialisation, the loss written once for NumPy-like modules
(mytorch.numpy, jax.numpy), the PyTorch loss, and the hand-written NumPy backward pass.

params is a flat list [W0, b0, W1, b1, ...]: W_i f32[d_i, d_i+1], b_i f32[d_i+1]; hidden
layers are ReLU, the last layer gives logits; the loss is the mean softmax cross-entropy
against one-hot labels y f32[batch, classes].
"""

import math

import numpy as np

from benchmarks.workloads._libs import f32


def init_params(rng, dims):
    """He-initialised weights and small random biases for layer widths `dims`."""
    params = []
    for d_in, d_out in zip(dims[:-1], dims[1:], strict=True):
        params += [f32(rng, (d_in, d_out), np.sqrt(2.0 / d_in)), f32(rng, (d_out,), 0.01)]
    return params


def loss(xp, logsumexp, params, x, y):
    """Mean cross-entropy of the MLP on (x f32[batch, d_0], y f32[batch, classes]), for a
    NumPy-like module `xp` and its `logsumexp`."""
    h, n = x, len(params) // 2
    for i in range(n):
        h = h @ params[2 * i] + params[2 * i + 1]
        if i < n - 1:
            h = xp.maximum(h, 0.0)
    return xp.mean(logsumexp(h, axis=1) - xp.sum(h * y, axis=1))


def torch_loss(torch, params, x, y):
    """The same loss in PyTorch."""
    h, n = x, len(params) // 2
    for i in range(n):
        h = h @ params[2 * i] + params[2 * i + 1]
        if i < n - 1:
            h = torch.relu(h)
    return (torch.logsumexp(h, dim=1) - (h * y).sum(dim=1)).mean()


def numpy_grads(params, x, y):
    """Gradients of `loss` by a hand-written backward pass (activations kept, softmax and
    ReLU masks computed in place); returns a list shaped like params."""
    n = len(params) // 2
    acts = [x]
    for i in range(n):
        z = acts[-1] @ params[2 * i]
        z += params[2 * i + 1]
        if i < n - 1:
            np.maximum(z, 0.0, out=z)
        acts.append(z)
    dz = acts.pop()  # logits, turned in place into d loss / d logits = (softmax - y) / batch
    dz -= dz.max(axis=1, keepdims=True)
    np.exp(dz, out=dz)
    dz /= dz.sum(axis=1, keepdims=True)
    dz -= y
    dz *= 1.0 / len(x)
    grads = [None] * len(params)
    for i in reversed(range(n)):
        h = acts[i]
        grads[2 * i] = h.T @ dz
        grads[2 * i + 1] = dz.sum(axis=0)
        if i > 0:
            dh = dz @ params[2 * i].T
            np.multiply(dh, h > 0, out=dh)  # ReLU: h > 0 exactly where the input was
            dz = dh
    return grads


def adam_in_place(params, grads, m, v, t, lr, b1=0.9, b2=0.999, eps=1e-8):
    """Adam step t (1-based) in place on params and the moments m, v, with the bias
    corrections folded into the step size and epsilon (lr_t = lr sqrt(1 - b2^t) /
    (1 - b1^t), eps_t = eps sqrt(1 - b2^t): the same update as lr m_hat / (sqrt(v_hat) +
    eps)); each gradient buffer is the scratch space."""
    c2 = math.sqrt(1 - b2**t)
    lr_t, eps_t = lr * c2 / (1 - b1**t), eps * c2
    for p, g, mi, vi in zip(params, grads, m, v, strict=True):
        mi *= b1
        g *= 1 - b1
        mi += g  # m = b1 m + (1 - b1) g
        vi *= b2
        g *= g
        g *= (1 - b2) / (1 - b1) ** 2
        vi += g  # v = b2 v + (1 - b2) g^2
        np.sqrt(vi, out=g)
        g += eps_t
        np.divide(mi, g, out=g)
        g *= lr_t
        p -= g
