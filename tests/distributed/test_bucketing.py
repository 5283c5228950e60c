"""bucket_psums: the psums of a per-replica program merged into flat buckets.

Programs are traced per replica, inside a vmap that binds the axis name (so their psums
are staged as psum equations, not batched away), and evaluated under the same vmap: the
bucketed program must give exactly the unbucketed one's values.
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch import lax
from mytorch.core.jaxpr import check_jaxpr, eval_jaxpr
from mytorch.distributed.bucketing import bucket_psums

N = 3  # replicas


def per_replica_jaxpr(fn, *args, axes=(("i", N),)):
    """The ClosedJaxpr of `fn(*args)` traced as one replica of the named `axes`."""
    box = []

    def body():
        box.append(mt.make_jaxpr(fn)(*args))
        return mnp.zeros(())

    for name, size in reversed(axes):
        body = mt.vmap(body, axis_name=name, axis_size=size)
    body()
    return box[0]


def run(closed, *batched, axes=(("i", N),)):
    """`closed` evaluated on every replica: each argument has a leading replica axis per
    named axis (outermost first). NumPy arrays."""
    fn = lambda *a: eval_jaxpr(closed.jaxpr, closed.consts, *a)  # noqa: E731
    for name, _ in reversed(axes):
        fn = mt.vmap(fn, axis_name=name)
    return [np.asarray(y) for y in fn(*batched)]


def count(closed, name="psum"):
    return sum(e.primitive.name == name for e in closed.eqns)


def assert_same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        assert x.dtype == y.dtype and x.shape == y.shape
        np.testing.assert_array_equal(x, y)
        assert x.tobytes() == y.tobytes()  # bit for bit, signed zeros included


def bucketed(closed, bucket_bytes):
    out = bucket_psums(closed, bucket_bytes)
    check_jaxpr(out.jaxpr)
    assert out.in_avals == closed.in_avals and out.out_avals == closed.out_avals
    return out


# ---- an MLP's data-parallel gradient -------------------------------------------------------
def mlp_params(sizes, rng):
    return [{"w": rng.standard_normal((a, b)).astype(np.float32),
             "b": rng.standard_normal(b).astype(np.float32)}
            for a, b in zip(sizes[:-1], sizes[1:], strict=True)]


def mlp_loss(params, x):
    for layer in params[:-1]:
        x = mnp.tanh(x @ layer["w"] + layer["b"])
    return mnp.mean((x @ params[-1]["w"] + params[-1]["b"]) ** 2)


def mean_grad(params, x):
    return lax.pmean(mt.grad(mlp_loss)(params, x), "i")


def grad_step(sizes, seed=0, batch=2):
    rng = np.random.default_rng(seed)
    params = mlp_params(sizes, rng)
    xs = rng.standard_normal((N, batch, sizes[0])).astype(np.float32)
    leaves = mt.tree_util.tree_leaves(params)
    closed = per_replica_jaxpr(mean_grad, params, xs[0])
    args = [np.broadcast_to(v, (N, *v.shape)) for v in leaves] + [xs]
    return closed, args, leaves


@given(sizes=st.lists(st.integers(1, 6), min_size=2, max_size=5), seed=st.integers(0, 99))
def test_mlp_gradient_psums_bucketed_exactly(sizes, seed):
    closed, args, leaves = grad_step(sizes, seed)
    assert count(closed) == len(leaves)  # one psum per gradient
    expected = run(closed, *args)
    total = sum(v.nbytes for v in leaves)
    huge = bucketed(closed, 2**40)
    assert count(huge) == 1
    assert_same(run(huge, *args), expected)
    tiny = bucketed(closed, 1)
    assert count(tiny) == len(leaves)
    assert_same(run(tiny, *args), expected)
    middle = bucketed(closed, max(total // 2, 1))
    assert 1 <= count(middle) <= len(leaves)
    assert_same(run(middle, *args), expected)


def test_bucket_sizes_respected_in_backward_order():
    # five layers of 4x4 weights (64 bytes) and biases (16 bytes): buckets of 80 bytes hold
    # one layer each, formed as the backward pass produces the layers (last layer first)
    closed, args, leaves = grad_step([4] * 6)
    out = bucketed(closed, 80)
    psums = [e for e in out.eqns if e.primitive.name == "psum"]
    assert [e.invars[0].aval.size for e in psums] == [20] * 5
    assert_same(run(out, *args), run(closed, *args))
    # each bucket's psum comes right after its last operand is computed
    where = {v: i for i, e in enumerate(out.eqns) for v in e.outvars}
    for e in psums:
        concat = e.invars[0]
        producer = out.eqns[where[concat]]
        assert producer.primitive.name == "concatenate"
        last_operand = max(where.get(_root(out, v, where), -1) for v in producer.invars)
        between = out.eqns[last_operand + 1:where[concat]]
        assert all(b.primitive.name in ("reshape", "concatenate") for b in between)


def _root(closed, v, where):
    """The variable a bucket reshapes to 1-D (v itself if it was not reshaped)."""
    i = where.get(v)
    if i is not None and closed.eqns[i].primitive.name == "reshape":
        return closed.eqns[i].invars[0]
    return v


def test_bucket_is_emitted_before_the_rest_of_the_backward_pass():
    # with a huge bucket the one psum still waits only for the last gradient: nothing
    # after it but the slices, reshapes and divisions of pmean
    closed, args, _ = grad_step([3, 4, 5, 2])
    out = bucketed(closed, 2**40)
    names = [e.primitive.name for e in out.eqns]
    tail = names[names.index("psum") + 1:]
    assert set(tail) <= {"slice", "reshape", "div"}


# ---- what must not be merged ---------------------------------------------------------------
def test_dependent_psums_are_not_merged():
    def fn(a, b, c):
        s = lax.psum(a, "i")
        t = lax.psum(b * mnp.sum(s), "i")  # reads the first psum's result
        u = lax.psum(c, "i")  # independent of both
        return s, t, u

    rng = np.random.default_rng(1)
    a, b, c = (rng.standard_normal(s).astype(np.float32) for s in ((2, 3), (4,), (5,)))
    closed = per_replica_jaxpr(fn, a, b, c)
    out = bucketed(closed, 2**40)
    assert count(closed) == 3 and count(out) == 2
    # a and c are summed together; b's psum follows after the first psum's result is read
    sizes = [e.invars[0].aval.size for e in out.eqns if e.primitive.name == "psum"]
    assert sizes == [11, 4]
    args = [rng.standard_normal((N, *v.shape)).astype(np.float32) for v in (a, b, c)]
    assert_same(run(out, *args), run(closed, *args))


def test_chain_of_dependent_psums_stays_a_chain():
    def fn(x):
        for _ in range(4):
            x = lax.psum(x, "i") * 0.5
        return x

    x = np.ones((2, 2), np.float32)
    closed = per_replica_jaxpr(fn, x)
    out = bucketed(closed, 2**40)
    assert count(out) == 4
    args = [np.arange(N * 4, dtype=np.float32).reshape(N, 2, 2)]
    assert_same(run(out, *args), run(closed, *args))


def test_mixed_dtypes_get_separate_buckets():
    def fn(a, b, c, d):
        return lax.psum((a, b, c, d), "i")

    vals = [np.ones((2, 3), np.float32), np.ones(4, np.int32), np.ones(3, np.float32),
            np.ones((2, 2), np.int32)]
    closed = per_replica_jaxpr(fn, *vals)
    out = bucketed(closed, 2**40)
    psums = [e for e in out.eqns if e.primitive.name == "psum"]
    assert sorted((str(e.invars[0].aval.dtype), e.invars[0].aval.size) for e in psums) == [
        ("float32", 9), ("int32", 8)]
    rng = np.random.default_rng(2)
    args = [(rng.standard_normal((N, *v.shape)) * 100).astype(v.dtype) for v in vals]
    assert_same(run(out, *args), run(closed, *args))


def test_different_axis_names_are_kept_apart():
    axes = (("i", 2), ("j", 3))

    def fn(a, b, c, d):
        return (lax.psum(a, "i"), lax.psum(b, "j"), lax.psum(c, "i"), lax.psum(d, ("i", "j")),
                lax.psum(a, ("i", "j")))

    vals = [np.ones(s, np.float32) for s in ((2,), (3, 2), (4,), (5,))]
    closed = per_replica_jaxpr(fn, *vals, axes=axes)
    out = bucketed(closed, 2**40)
    groups = sorted((e.params["axis_name"], e.invars[0].aval.size)
                    for e in out.eqns if e.primitive.name == "psum")
    assert groups == [(("i",), 6), (("i", "j"), 7), (("j",), 6)]
    rng = np.random.default_rng(3)
    args = [rng.standard_normal((2, 3, *v.shape)).astype(np.float32) for v in vals]
    assert_same(run(out, *args, axes=axes), run(closed, *args, axes=axes))


@given(shapes=st.lists(st.lists(st.integers(0, 3), max_size=3).map(tuple), min_size=1,
                       max_size=6),
       bucket_bytes=st.sampled_from([1, 8, 24, 2**40]))
def test_scalar_and_empty_operands(shapes, bucket_bytes):
    vals = [np.ones(s, np.float32) for s in shapes]
    closed = per_replica_jaxpr(lambda *xs: lax.psum(xs, "i"), *vals)
    out = bucketed(closed, bucket_bytes)
    empty = sum(v.size == 0 for v in vals)
    merged = [e for e in out.eqns if e.primitive.name == "psum"]
    assert empty + (len(vals) > empty) <= len(merged) <= len(vals)
    producer = {v: e for e in out.eqns for v in e.outvars}
    for e in merged:  # a merged psum stays within the size (one larger operand stays alone)
        if e.invars[0] in producer and producer[e.invars[0]].primitive.name == "concatenate":
            assert e.invars[0].aval.size * 4 <= bucket_bytes
    rng = np.random.default_rng(len(shapes))
    args = [rng.standard_normal((N, *v.shape)).astype(np.float32) for v in vals]
    assert_same(run(out, *args), run(closed, *args))


def test_unread_psum_and_literal_operand():
    def fn(a, b):
        lax.psum(b, "i")  # result unread: still summed, in the bucket
        return lax.psum(a, "i"), lax.psum(1.0, "i")

    a, b = np.ones(3, np.float32), np.ones((2, 2), np.float32)
    closed = per_replica_jaxpr(fn, a, b)
    out = bucketed(closed, 2**40)
    args = [np.arange(N * 3, dtype=np.float32).reshape(N, 3),
            np.ones((N, 2, 2), np.float32)]
    assert_same(run(out, *args), run(closed, *args))


def test_psums_inside_a_jit_are_bucketed_too():
    def fn(a, b):
        return mt.jit(lambda a, b: lax.psum((a * 2.0, b * 3.0), "i"))(a, b)

    a, b = np.ones(3, np.float32), np.ones((2, 2), np.float32)
    closed = per_replica_jaxpr(fn, a, b)
    out = bucketed(closed, 2**40)
    inner = [e for e in out.eqns if e.primitive.name == "jit"]
    assert len(inner) == 1
    assert sum(e.primitive.name == "psum" for e in inner[0].params["jaxpr"].eqns) == 1
    args = [np.arange(N * 3, dtype=np.float32).reshape(N, 3),
            np.arange(N * 4, dtype=np.float32).reshape(N, 2, 2)]
    assert_same(run(out, *args), run(closed, *args))


def test_program_without_mergeable_psums_is_returned_unchanged():
    closed = per_replica_jaxpr(lambda a: lax.psum(a, "i") * 2.0, np.ones(3, np.float32))
    assert bucket_psums(closed).jaxpr is closed.jaxpr


def test_bad_arguments():
    closed = per_replica_jaxpr(lambda a: lax.psum(a, "i"), np.ones(3, np.float32))
    with pytest.raises(TypeError, match="bucket_psums needs a ClosedJaxpr"):
        bucket_psums(closed.jaxpr)
    with pytest.raises(ValueError, match="bucket_bytes must be a positive int, got 0"):
        bucket_psums(closed, 0)
