"""Derivative checks against float64 central finite differences (the independent
reference), used by every autodiff test.

    check_grads(f, args, order=2)   f: function of arrays -> array/pytree; args: tuple of
                                    NumPy float64 arrays (x64 must be on: use the fixture)

For each order up to `order` it checks, in a random direction v and a random output
cotangent u:
  * forward mode: jvp(f, x, v) against (f(x + eps v) - f(x - eps v)) / 2 eps;
  * reverse mode: <u, J v> computed with vjp equals <u, jvp> (so vjp is checked against
    the finite difference too);
and then repeats on the derivative function (jvp in direction v) for higher orders.

Complex arguments and results work too: directions are complex, and values are paired by
re(sum(a * b)) (no conjugation), the pairing under which mytorch's (and JAX's) transposes
are transposes; so the reverse-mode check is re(<vjp(u), v>) == re(<u, J v>).
"""

import numpy as np

import mytorch as mt
import mytorch.numpy as mnp
from mytorch import tree_util


def _wide(x):
    """`x` as float64, or complex128 if it is complex."""
    x = np.asarray(x)
    return x.astype(np.complex128 if np.iscomplexobj(x) else np.float64)


def _to_np(tree):
    return [_wide(x) for x in tree_util.tree_leaves(tree)]


def _rand_like(rng, leaves):
    return [rng.standard_normal(np.shape(x)) + 1j * rng.standard_normal(np.shape(x))
            if np.iscomplexobj(x) else rng.standard_normal(np.shape(x)) for x in leaves]


def _inner(a, b):
    return sum(float(np.real(np.sum(_wide(x) * _wide(y)))) for x, y in zip(a, b))


def numerical_jvp(f, args, tangents, eps):
    """Central difference of f at args in direction tangents (NumPy float64 leaves)."""
    plus = [a + eps * t for a, t in zip(args, tangents)]
    minus = [a - eps * t for a, t in zip(args, tangents)]
    fp = _to_np(f(*[mnp.asarray(x) for x in plus]))
    fm = _to_np(f(*[mnp.asarray(x) for x in minus]))
    return [(p - m) / (2 * eps) for p, m in zip(fp, fm)]


def _close(got, want, rtol, atol, what):
    for g, w in zip(got, want):
        np.testing.assert_allclose(_wide(g), w, rtol=rtol, atol=atol, err_msg=what)


def check_jvp(f, args, rng, eps=1e-6, rtol=1e-5, atol=1e-6):
    """Forward mode against central differences; returns the direction used."""
    tangents = _rand_like(rng, args)
    _, t_out = mt.jvp(f, tuple(mnp.asarray(a) for a in args),
                      tuple(mnp.asarray(t) for t in tangents))
    _close(_to_np(t_out), numerical_jvp(f, args, tangents, eps), rtol, atol, "jvp vs FD")
    return tangents


def check_vjp(f, args, rng, eps=1e-6, rtol=1e-5, atol=1e-6):
    """<u, J v> from vjp equals the central-difference directional derivative."""
    tangents = _rand_like(rng, args)
    out, vjp_fn = mt.vjp(f, *[mnp.asarray(a) for a in args])
    out_leaves, out_tree = tree_util.tree_flatten(out)
    us = _rand_like(rng, out_leaves)
    cts = vjp_fn(tree_util.tree_unflatten(out_tree, [mnp.asarray(u) for u in us]))
    lhs = _inner(_to_np(cts), tangents)
    rhs = _inner(us, numerical_jvp(f, args, tangents, eps))
    scale = max(1.0, abs(rhs))
    assert abs(lhs - rhs) <= rtol * scale + atol * len(us), (
        f"vjp vs FD: <vjp(u), v> = {lhs!r}, <u, FD jvp(v)> = {rhs!r}")


def check_grads(f, args, order=1, modes=("fwd", "rev"), eps=1e-6, rtol=1e-5, atol=1e-6,
                seed=0):
    """Check derivatives of f up to `order` in the given modes (x64 must be on)."""
    assert mt.config.enable_x64, "check_grads needs the x64 fixture"
    rng = np.random.default_rng(seed)
    args = [_wide(a) for a in args]
    for k in range(order):
        if "fwd" in modes:
            check_jvp(f, args, rng, eps, rtol, atol)
        if "rev" in modes:
            check_vjp(f, args, rng, eps, rtol, atol)
        if k + 1 < order:
            direction = [mnp.asarray(t) for t in _rand_like(rng, args)]
            f = _directional(f, direction)
        # finite differences of derivatives lose digits: loosen per order
        rtol, atol = rtol * 10, atol * 10


def _directional(f, direction):
    def df(*xs):
        return mt.jvp(f, xs, tuple(direction))[1]

    return df
