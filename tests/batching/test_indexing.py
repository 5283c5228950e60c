"""vmap of the indexing primitives (dynamic_slice, dynamic_update_slice, gather, scatter*)
against the loop definition: every combination of batched and unbatched operands, batch dims
at any position, out-of-bounds and negative indices in every mode, repeated scatter indices,
and compositions with grad and with a second vmap."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mytorch as mt
from mytorch import lax
from tests.batching.vmap_check import assert_tree_close, check_vmap, loop_reference

SCATTERS = {"scatter": lax.scatter, "scatter_add": lax.scatter_add,
            "scatter_mul": lax.scatter_mul, "scatter_min": lax.scatter_min,
            "scatter_max": lax.scatter_max}
START_DTYPES = [np.int8, np.int16, np.int32, np.uint8, np.uint32]


# ---- strategies ---------------------------------------------------------------------------
@st.composite
def index_configs(draw, max_rank=3):
    """A valid gather/scatter layout: the operand shape, the dimension-number fields (index
    map, collapsed/inserted dims, one optional batching-dim pair), window sizes, the shape
    of the index batch, and where the window dims go in the gather output / the updates."""
    rank = draw(st.integers(1, max_rank))
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=rank, max_size=rank)))
    dims = list(range(rank))
    obatch = sorted(draw(st.permutations(dims))[:draw(st.integers(0, 1))])
    rest = [d for d in dims if d not in obatch]
    index_map = tuple(draw(st.permutations(rest))[:draw(st.integers(0, len(rest)))])
    sizes = [min(1, shape[d]) if d in obatch else draw(st.integers(0, shape[d]))
             for d in dims]
    collapsed = tuple(d for d in rest if sizes[d] == 1 and draw(st.booleans()))
    window = [d for d in rest if d not in collapsed]
    n_batch = draw(st.integers(len(obatch), len(obatch) + 2))
    batch_shape = [draw(st.integers(0, 3)) for _ in range(n_batch)]
    ibatch = tuple(draw(st.permutations(range(n_batch)))[:len(obatch)])
    for o, i in zip(obatch, ibatch):
        batch_shape[i] = shape[o]
    out_rank = len(window) + n_batch
    window_pos = tuple(sorted(draw(st.permutations(range(out_rank)))[:len(window)]))
    wins, batch = iter(sizes[d] for d in window), iter(batch_shape)
    out_shape = tuple(next(wins) if p in window_pos else next(batch) for p in range(out_rank))
    return {"shape": shape, "index_map": index_map, "collapsed": collapsed,
            "obatch": tuple(obatch), "ibatch": ibatch, "sizes": tuple(sizes),
            "window_pos": window_pos, "indices_shape": tuple(batch_shape) + (len(index_map),),
            "out_shape": out_shape}


def gather_dnums(c):
    return lax.GatherDimensionNumbers(
        offset_dims=c["window_pos"], collapsed_slice_dims=c["collapsed"],
        start_index_map=c["index_map"], operand_batching_dims=c["obatch"],
        start_indices_batching_dims=c["ibatch"])


def scatter_dnums(c):
    return lax.ScatterDimensionNumbers(
        update_window_dims=c["window_pos"], inserted_window_dims=c["collapsed"],
        scatter_dims_to_operand_dims=c["index_map"], operand_batching_dims=c["obatch"],
        scatter_indices_batching_dims=c["ibatch"])


def index_values(shape, c):
    """Index vectors: in bounds, out of bounds on both sides, with repeats."""
    hi = max(c["shape"], default=0) + 2
    return st.lists(st.integers(-2, hi), min_size=int(np.prod(shape)),
                    max_size=int(np.prod(shape))).map(
        lambda v: np.asarray(v, np.int32).reshape(shape))


def float_values(shape, lo=-4.0, hi=4.0, dtype=np.float32):
    """Floats in [lo, hi] on a coarse grid (so min/max ties and exact products occur)."""
    n = int(np.prod(shape))
    return st.lists(st.integers(int(lo * 4), int(hi * 4)), min_size=n, max_size=n).map(
        lambda v: (np.asarray(v, np.float64) / 4).astype(dtype).reshape(shape))


@st.composite
def batched(draw, values, shape, size, mapped):
    """(array, in_axis): `values(shape)` with a batch dim of `size` at a drawn position
    (given as a negative axis half the time), or an unbatched array and None."""
    if not mapped:
        return draw(values(shape)), None
    pos = draw(st.integers(0, len(shape)))
    full = shape[:pos] + (size,) + shape[pos:]
    axis = pos - len(full) if draw(st.booleans()) else pos
    return draw(values(full)), axis


def batching_pattern(n):
    """Which of n operands are batched: at least one."""
    return st.lists(st.booleans(), min_size=n, max_size=n).filter(any)


def out_axis(draw, rank):
    return draw(st.integers(-(rank + 1), rank))


# ---- gather -------------------------------------------------------------------------------
@given(data=st.data())
def test_gather(data):
    c = data.draw(index_configs())
    mode = data.draw(st.sampled_from(["clip", "fill", "promise_in_bounds"]))
    size = data.draw(st.integers(0, 3))
    mx, mi = data.draw(batching_pattern(2))
    x, xa = data.draw(batched(float_values, c["shape"], size, mx))
    i, ia = data.draw(batched(lambda s: index_values(s, c), c["indices_shape"], size, mi))
    dn = gather_dnums(c)

    def f(x, i):
        return lax.gather(x, i, dn, c["sizes"], mode=mode)

    check_vmap(f, (x, i), in_axes=(xa, ia), out_axes=out_axis(data.draw, len(c["out_shape"])))


@given(data=st.data())
def test_gather_integer_operand_and_fill_value(data):
    c = data.draw(index_configs(max_rank=2))
    size = data.draw(st.integers(1, 3))
    mx, mi = data.draw(batching_pattern(2))
    x, xa = data.draw(batched(lambda s: float_values(s, -9, 9, np.int32), c["shape"], size,
                              mx))
    i, ia = data.draw(batched(lambda s: index_values(s, c), c["indices_shape"], size, mi))

    def f(x, i):
        return lax.gather(x, i, gather_dnums(c), c["sizes"], mode="fill", fill_value=-7)

    check_vmap(f, (x, i), in_axes=(xa, ia))


# ---- scatter family -----------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(SCATTERS))
@settings(max_examples=15)
@given(data=st.data())
def test_scatter(name, data):
    c = data.draw(index_configs())
    mode = data.draw(st.sampled_from(["clip", "drop", "promise_in_bounds"]))
    size = data.draw(st.integers(0, 3))
    mx, mi, mu = data.draw(batching_pattern(3))
    lo, hi = (0.5, 2.0) if name == "scatter_mul" else (-4.0, 4.0)
    x, xa = data.draw(batched(lambda s: float_values(s, lo, hi), c["shape"], size, mx))
    i, ia = data.draw(batched(lambda s: index_values(s, c), c["indices_shape"], size, mi))
    u, ua = data.draw(batched(lambda s: float_values(s, lo, hi), c["out_shape"], size, mu))
    op, dn = SCATTERS[name], scatter_dnums(c)

    def f(x, i, u):
        return op(x, i, u, dn, mode=mode)

    check_vmap(f, (x, i, u), in_axes=(xa, ia, ua),
               out_axes=out_axis(data.draw, len(c["shape"])))


def test_scatter_repeated_indices_keep_each_examples_winner():
    # per example, several updates hit one element: the batched scatter picks the same one
    x = np.zeros((3, 4), np.float32)
    i = np.array([[[1], [1], [2], [1]], [[0], [0], [0], [3]], [[3], [2], [3], [2]]], np.int32)
    u = np.arange(12, dtype=np.float32).reshape(3, 4) + 1
    dn = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                     scatter_dims_to_operand_dims=(0,))

    def f(x, i, u):
        return lax.scatter(x, i, u, dn)

    for axes in [(0, 0, 0), (None, 0, 0), (0, 0, None), (1, 0, 1)]:
        args = (x.T if axes[0] == 1 else x, i, u.T if axes[2] == 1 else u)
        args = tuple(a[0] if d is None else a for a, d in zip(args, axes))
        check_vmap(f, args, in_axes=axes)
    want = np.array([[0, 4, 3, 0], [7, 0, 0, 8], [0, 0, 12, 11]], np.float32)
    np.testing.assert_array_equal(mt.vmap(f)(x, i, u), want)


# ---- dynamic_slice, dynamic_update_slice --------------------------------------------------
@st.composite
def starts(draw, shape, size, allow_batched=True):
    """One start per dim: a drawn integer dtype, values far out of bounds on both sides,
    each batched (along axis 0 or -1) or not."""
    out, axes = [], []
    for n in shape:
        dtype = np.dtype(draw(st.sampled_from(START_DTYPES)))
        info = np.iinfo(dtype)
        elems = st.integers(max(info.min, -n - 3), min(info.max, n + 3))
        if allow_batched and draw(st.booleans()):
            out.append(np.asarray(draw(st.lists(elems, min_size=size, max_size=size)), dtype))
            axes.append(draw(st.sampled_from([0, -1])))
        else:
            out.append(np.asarray(draw(elems), dtype))
            axes.append(None)
    return out, axes


@given(data=st.data())
def test_dynamic_slice(data):
    shape = tuple(data.draw(st.lists(st.integers(0, 4), max_size=3)))
    sizes = tuple(data.draw(st.integers(0, n)) for n in shape)
    size = data.draw(st.integers(0, 3))
    s, s_axes = data.draw(starts(shape, size))
    mx = data.draw(st.booleans()) or all(a is None for a in s_axes)
    x, xa = data.draw(batched(float_values, shape, size, mx))

    def f(x, *s):
        return lax.dynamic_slice(x, [mt.numpy.asarray(v) for v in s], sizes)

    check_vmap(f, (x, *s), in_axes=(xa, *s_axes), out_axes=out_axis(data.draw, len(sizes)))


@given(data=st.data())
def test_dynamic_update_slice(data):
    shape = tuple(data.draw(st.lists(st.integers(0, 4), max_size=3)))
    u_shape = tuple(data.draw(st.integers(0, n)) for n in shape)
    size = data.draw(st.integers(0, 3))
    s, s_axes = data.draw(starts(shape, size))
    mx, mu = data.draw(st.lists(st.booleans(), min_size=2, max_size=2))
    if not (mx or mu or any(a is not None for a in s_axes)):
        mx = True
    x, xa = data.draw(batched(float_values, shape, size, mx))
    u, ua = data.draw(batched(lambda sh: float_values(sh, 10, 20), u_shape, size, mu))

    def f(x, u, *s):
        return lax.dynamic_update_slice(x, u, [mt.numpy.asarray(v) for v in s])

    check_vmap(f, (x, u, *s), in_axes=(xa, ua, *s_axes),
               out_axes=out_axis(data.draw, len(shape)))


def test_dynamic_slice_batched_start_is_clamped_like_the_loop():
    x = np.arange(10, dtype=np.float32)
    s = np.array([-100, -3, 0, 7, 8, 100], np.int32)
    got = mt.vmap(lambda i: lax.dynamic_slice(x, (i,), (4,)))(s)
    want = np.stack([x[b:b + 4] for b in (0, 6, 0, 6, 6, 6)])  # wrapped once, then clamped
    np.testing.assert_array_equal(got, want)
    u = np.full(4, -1.0, np.float32)
    got = mt.vmap(lambda i: lax.dynamic_update_slice(x, u, (i,)))(s)
    want = np.stack([np.concatenate([x[:b], u, x[b + 4:]]) for b in (0, 6, 0, 6, 6, 6)])
    np.testing.assert_array_equal(got, want)


def test_batching_rules_emit_no_per_example_work():
    # one gather / scatter however large the batch: no loop over examples in the jaxpr
    x = np.zeros((7, 5, 3), np.float32)
    i = np.zeros((7, 2, 1), np.int32)
    dn = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
                                    start_index_map=(0,))
    text = str(mt.make_jaxpr(mt.vmap(lambda x, i: lax.gather(x, i, dn, (1, 3))))(x, i))
    assert text.count("gather") == 1
    s = np.zeros(7, np.int32)
    text = str(mt.make_jaxpr(mt.vmap(lambda x, s: lax.dynamic_slice(x, (s, 0), (2, 3))))(x, s))
    assert text.count("gather") == 1 and "dynamic_slice" not in text


# ---- composition with grad ---------------------------------------------------------------
def _loss(y, w):
    """<y, w> as one dot product (a scalar that depends on every element of y)."""
    flat = lax.reshape(y, (int(np.prod(y.shape)),))
    return lax.dot_general(flat, lax.reshape(w, flat.shape), (((0,), (0,)), ((), ())))


def _weights(shape):
    return (np.sin(np.arange(int(np.prod(shape)), dtype=np.float64) + 1.0)
            .astype(np.float32).reshape(shape))


@settings(max_examples=15)
@given(data=st.data())
def test_vmap_of_grad_of_gather(data):
    c = data.draw(index_configs())
    mode = data.draw(st.sampled_from(["clip", "fill"]))
    size = data.draw(st.integers(1, 3))
    mx, mi = data.draw(batching_pattern(2))
    x, xa = data.draw(batched(float_values, c["shape"], size, mx))
    i, ia = data.draw(batched(lambda s: index_values(s, c), c["indices_shape"], size, mi))
    w = _weights(c["out_shape"])

    def g(x, i):
        return mt.grad(lambda x: _loss(lax.gather(x, i, gather_dnums(c), c["sizes"],
                                                  mode=mode), w))(x)

    check_vmap(g, (x, i), in_axes=(xa, ia), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", sorted(SCATTERS))
@settings(max_examples=8)
@given(data=st.data())
def test_vmap_of_grad_of_scatter(name, data):
    c = data.draw(index_configs(max_rank=2))
    mode = data.draw(st.sampled_from(["clip", "drop"]))
    size = data.draw(st.integers(1, 3))
    mx, mi, mu = data.draw(batching_pattern(3))
    lo, hi = (-2.0, 2.0) if name == "scatter_mul" else (-4.0, 4.0)
    x, xa = data.draw(batched(lambda s: float_values(s, lo, hi), c["shape"], size, mx))
    i, ia = data.draw(batched(lambda s: index_values(s, c), c["indices_shape"], size, mi))
    u, ua = data.draw(batched(lambda s: float_values(s, lo, hi), c["out_shape"], size, mu))
    op, dn, w = SCATTERS[name], scatter_dnums(c), _weights(c["shape"])

    def g(x, i, u):
        return mt.grad(lambda x, u: _loss(op(x, i, u, dn, mode=mode), w), argnums=(0, 1))(x, u)

    check_vmap(g, (x, i, u), in_axes=(xa, ia, ua), rtol=1e-4, atol=1e-4)


@settings(max_examples=15)
@given(data=st.data())
def test_vmap_of_grad_of_dynamic_slices(data):
    shape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    sizes = tuple(data.draw(st.integers(0, n)) for n in shape)
    size = data.draw(st.integers(1, 3))
    s, s_axes = data.draw(starts(shape, size))
    mx, mu = data.draw(st.lists(st.booleans(), min_size=2, max_size=2))
    if not (mx or mu or any(a is not None for a in s_axes)):
        mx = True
    x, xa = data.draw(batched(float_values, shape, size, mx))
    u, ua = data.draw(batched(float_values, sizes, size, mu))
    w_slice, w_full = _weights(sizes), _weights(shape)

    def g(x, u, *s):
        s = [mt.numpy.asarray(v) for v in s]
        d_slice = mt.grad(lambda x: _loss(lax.dynamic_slice(x, s, sizes), w_slice))(x)
        d_update = mt.grad(lambda x, u: _loss(lax.dynamic_update_slice(x, u, s), w_full),
                           argnums=(0, 1))(x, u)
        return d_slice, d_update

    check_vmap(g, (x, u, *s), in_axes=(xa, ua, *s_axes), rtol=1e-5, atol=1e-5)


def _grad_of_vmap_case(f, args, in_axes, argnums, out_shape_of):
    """grad(<vmap(f)(*args), W>) against the per-example grads: stacked along the arg's
    batch axis, or summed over the examples for an unbatched arg."""
    size = next(np.shape(a)[d] for a, d in zip(args, in_axes) if d is not None)
    W = _weights((size, *out_shape_of))

    def total(*diff):
        full = list(args)
        for k, v in zip(argnums, diff):
            full[k] = v
        return _loss(mt.vmap(f, in_axes=in_axes)(*full), W)

    got = mt.grad(total, argnums=tuple(range(len(argnums))))(*[args[k] for k in argnums])
    per = []
    for b in range(size):
        ex = [a if d is None else np.take(a, b, axis=d) for a, d in zip(args, in_axes)]

        def one(*diff, ex=ex, b=b):
            full = list(ex)
            for k, v in zip(argnums, diff):
                full[k] = v
            return _loss(f(*full), W[b])

        per.append(mt.grad(one, argnums=tuple(range(len(argnums))))(
            *[ex[k] for k in argnums]))
    want = []
    for j, k in enumerate(argnums):
        items = [np.asarray(p[j]) for p in per]
        d = in_axes[k]
        want.append(np.sum(items, axis=0) if d is None else np.stack(items, axis=d))
    assert_tree_close(list(got), want, rtol=1e-4, atol=1e-4)


@settings(max_examples=15)
@given(data=st.data())
def test_grad_of_vmap_of_gather(data):
    c = data.draw(index_configs())
    size = data.draw(st.integers(1, 3))
    mx, mi = data.draw(st.lists(st.booleans(), min_size=2, max_size=2))
    x, xa = data.draw(batched(float_values, c["shape"], size, mx))
    i, ia = data.draw(batched(lambda s: index_values(s, c), c["indices_shape"], size,
                              mi or not mx))
    mode = data.draw(st.sampled_from(["clip", "fill"]))

    def f(x, i):
        return lax.gather(x, i, gather_dnums(c), c["sizes"], mode=mode, fill_value=0)

    _grad_of_vmap_case(f, (x, i), (xa, ia), (0,), c["out_shape"])


@pytest.mark.parametrize("name", sorted(SCATTERS))
@settings(max_examples=6)
@given(data=st.data())
def test_grad_of_vmap_of_scatter(name, data):
    c = data.draw(index_configs(max_rank=2))
    size = data.draw(st.integers(1, 3))
    mx, mi, mu = data.draw(batching_pattern(3))
    x, xa = data.draw(batched(lambda s: float_values(s, -2, 2), c["shape"], size, mx))
    i, ia = data.draw(batched(lambda s: index_values(s, c), c["indices_shape"], size, mi))
    u, ua = data.draw(batched(lambda s: float_values(s, -2, 2), c["out_shape"], size, mu))
    op, dn = SCATTERS[name], scatter_dnums(c)

    def f(x, i, u):
        return op(x, i, u, dn, mode="drop")

    _grad_of_vmap_case(f, (x, i, u), (xa, ia, ua), (0, 2), c["shape"])


@settings(max_examples=15)
@given(data=st.data())
def test_grad_of_vmap_of_dynamic_slices(data):
    shape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    sizes = tuple(data.draw(st.integers(0, n)) for n in shape)
    size = data.draw(st.integers(1, 3))
    s, s_axes = data.draw(starts(shape, size))
    mx, mu = data.draw(st.lists(st.booleans(), min_size=2, max_size=2))
    mx = mx or all(a is None for a in s_axes)  # dynamic_slice needs a batched operand
    x, xa = data.draw(batched(float_values, shape, size, mx))
    u, ua = data.draw(batched(float_values, sizes, size, mu))

    def ds(x, *s):
        return lax.dynamic_slice(x, [mt.numpy.asarray(v) for v in s], sizes)

    def dus(x, u, *s):
        return lax.dynamic_update_slice(x, u, [mt.numpy.asarray(v) for v in s])

    _grad_of_vmap_case(ds, (x, *s), (xa, *s_axes), (0,), sizes)
    _grad_of_vmap_case(dus, (x, u, *s), (xa, ua, *s_axes), (0, 1), shape)


def test_grad_of_scatter_into_an_empty_operand():
    # the read-back of an empty operand's windows is zeros (no gather can collapse or batch
    # a size-0 dim); vmap of a batched scatter into a size-0 operand batches such a dim
    dn = lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(),
                                     scatter_dims_to_operand_dims=(), operand_batching_dims=(0,),
                                     scatter_indices_batching_dims=(0,))
    x, i, u = np.zeros((0, 0), np.float32), np.zeros((0, 0), np.int32), np.zeros((0, 0),
                                                                                 np.float32)
    for op in SCATTERS.values():
        gx, gu = mt.grad(lambda x, u, op=op: _loss(op(x, i, u, dn), x), argnums=(0, 1))(x, u)
        assert np.shape(gx) == (0, 0) and np.shape(gu) == (0, 0)


# ---- nested vmap --------------------------------------------------------------------------
def _check_nested(f, args, inner, outer):
    """vmap(vmap(f, inner), outer) against the double loop."""
    got = mt.vmap(mt.vmap(f, in_axes=inner), in_axes=outer)(*args)
    want = loop_reference(lambda *a: loop_reference(f, a, inner, 0), args, outer, 0)
    if want is not None:
        assert_tree_close(got, want)


@settings(max_examples=15)
@given(data=st.data())
def test_nested_vmap_gather_and_scatter(data):
    c = data.draw(index_configs(max_rank=2))
    n_in, n_out = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3))
    name = data.draw(st.sampled_from(sorted(SCATTERS)))

    def twice(values, shape, pattern):
        """An array with an inner batch dim of n_in and/or an outer one of n_out."""
        (m_in, m_out), d_in, d_out = pattern, None, None
        if m_in:
            d_in = data.draw(st.integers(0, len(shape)))
            shape = shape[:d_in] + (n_in,) + shape[d_in:]
        if m_out:
            d_out = data.draw(st.integers(0, len(shape)))
            shape = shape[:d_out] + (n_out,) + shape[d_out:]
        return data.draw(values(shape)), d_in, d_out

    # the gather's operands (x, i) must hold an inner and an outer batch dim between them
    pat = data.draw(st.lists(st.tuples(st.booleans(), st.booleans()), min_size=3,
                             max_size=3).filter(lambda p: any(m for m, _ in p[:2])
                                                and any(m for _, m in p[:2])))
    x, xi, xo = twice(float_values, c["shape"], pat[0])
    i, ii, io = twice(lambda s: index_values(s, c), c["indices_shape"], pat[1])
    u, ui, uo = twice(float_values, c["out_shape"], pat[2])
    gdn, sdn, op = gather_dnums(c), scatter_dnums(c), SCATTERS[name]

    _check_nested(lambda x, i: lax.gather(x, i, gdn, c["sizes"]), (x, i), (xi, ii), (xo, io))
    _check_nested(lambda x, i, u: op(x, i, u, sdn), (x, i, u), (xi, ii, ui), (xo, io, uo))
