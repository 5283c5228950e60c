"""Shared drawing helpers for the vmap tests of mytorch.numpy and mytorch.scipy.special.

`vmap_case(data, fn, operands, ...)` draws a batch size, which operands are batched and
where their batch axis sits (positive or negative in_axes), builds the stacked operands
and checks `vmap(fn)` against the loop definition with `check_vmap`.

Shapes, axes and flags are drawn by hypothesis (so they shrink); array values come from
a NumPy generator seeded by a drawn integer, which is much faster than drawing every
element and keeps the many small tests of these files within their time budget. Values
mix a continuous range with a small pool (ties for sorts and arg-reductions), the range
ends, zeros and, when asked, NaN and infinities.
"""

import numpy as np
from hypothesis import strategies as st

from tests.batching.vmap_check import check_vmap


class Op:
    """One array operand of a case: its per-example `shape` and `dtype`, value options
    (min_value, max_value, allow_nan, allow_inf) and whether it may be left unbatched
    (`batch=None`: drawn; True/False: forced)."""

    def __init__(self, shape, dtype=np.float32, batch=None, **kw):
        self.shape, self.dtype, self.batch, self.kw = tuple(shape), np.dtype(dtype), batch, kw


def random_values(rng, dtype, shape, min_value=None, max_value=None, allow_nan=False,
                  allow_inf=False):
    """A NumPy array of `dtype` and `shape` with values in [min_value, max_value]."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < rng.uniform(0.2, 0.8)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        lo = max(info.min, -1000 if min_value is None else int(np.ceil(min_value)))
        hi = min(info.max, 1000 if max_value is None else int(np.floor(max_value)))
        pool = np.array([lo, hi, min(max(0, lo), hi), min(max(1, lo), hi)], np.int64)
        vals = rng.integers(lo, hi + 1, size=shape, dtype=np.int64)
        if rng.random() < 0.5:  # a few distinct values: ties
            vals = rng.choice(np.concatenate([pool, vals.reshape(-1)[:2]]), size=shape)
        return vals.astype(dtype)
    lo = -1e3 if min_value is None else float(min_value)
    hi = 1e3 if max_value is None else float(max_value)
    vals = rng.uniform(lo, hi, size=shape)
    if rng.random() < 0.4:  # ties and exact values: zero, the ends, small integers
        pool = [min(max(v, lo), hi) for v in (lo, hi, 0.0, 1.0, round((lo + hi) / 2))]
        vals = np.where(rng.random(shape) < 0.6, rng.choice(pool, size=shape), vals)
    specials = ([np.nan] if allow_nan else []) + ([np.inf, -np.inf] if allow_inf else [])
    if specials and rng.random() < 0.5:
        vals = np.where(rng.random(shape) < 0.2, rng.choice(specials, size=shape), vals)
    return vals.astype(np.float32).astype(dtype)  # bfloat16 converts from float32


def draw_values(data, dtype, shape, **kw):
    """`random_values` from a generator seeded by hypothesis."""
    seed = data.draw(st.integers(0, 2**32 - 1), label="seed")
    return random_values(np.random.default_rng(seed), dtype, tuple(shape), **kw)


def draw_n(data, min_n=0, max_n=3):
    """A batch size: mostly 2 or 3 (a wrong order of examples shows), sometimes 1 or 0."""
    sizes = [v for v in (2, 3, 1, 0, 2, 3) if min_n <= v <= max_n] or [min_n]
    return data.draw(st.sampled_from(sizes), label="n")


def batched_operand(data, op, n, batched):
    """(array, in_axis): `op` with a batch axis of size n at a drawn position, or not."""
    if not batched:
        return draw_values(data, op.dtype, op.shape, **op.kw), None
    pos = data.draw(st.integers(0, len(op.shape)), label="bdim")
    full = op.shape[:pos] + (n,) + op.shape[pos:]
    x = draw_values(data, op.dtype, full, **op.kw)
    return x, data.draw(st.sampled_from([pos, pos - len(full)]), label="in_axis")


def draw_flags(data, ops):
    """Which operands are batched: forced ones as given, the others drawn, at least one."""
    flags = [op.batch if op.batch is not None else data.draw(st.booleans(), label="batch?")
             for op in ops]
    if not any(flags):
        free = [i for i, op in enumerate(ops) if op.batch is None]
        flags[data.draw(st.sampled_from(free or [0]), label="forced")] = True
    return flags


def vmap_case(data, fn, ops, *, n=None, min_n=0, max_n=3, out_axes=None, rtol=1e-5,
              atol=1e-6, check_dtype=True):
    """Check vmap(fn) on operands drawn from `ops` (a list of `Op`) against the loop.

    `fn` takes the per-example operands positionally. The batch size n (0..3 unless
    given), the batched operands, their batch axes and the output axis (0 or -1 unless
    given) are drawn. Returns the vmapped result.
    """
    if n is None:
        n = draw_n(data, min_n, max_n)
    flags = draw_flags(data, ops)
    pairs = [batched_operand(data, op, n, f) for op, f in zip(ops, flags, strict=True)]
    args = tuple(p[0] for p in pairs)
    in_axes = tuple(p[1] for p in pairs)
    if out_axes is None:
        out_axes = data.draw(st.sampled_from([0, -1]), label="out_axes")
    return check_vmap(fn, args, in_axes=in_axes, out_axes=out_axes, rtol=rtol, atol=atol,
                      check_dtype=check_dtype)


def shapes_broadcasting_to(data, shape):
    """A shape that broadcasts to `shape`: leading dims dropped, some dims set to 1."""
    k = data.draw(st.integers(0, len(shape)), label="rank")
    tail = shape[len(shape) - k:]
    ones = data.draw(st.lists(st.booleans(), min_size=k, max_size=k), label="ones")
    return tuple(1 if o else d for d, o in zip(tail, ones, strict=True))
