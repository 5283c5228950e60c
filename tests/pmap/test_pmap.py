"""pmap: the API (pytrees, in_axes/out_axes, static and donated arguments, devices), its
errors, sharded results, and its compositions with grad, vmap and jit."""

import functools

import numpy as np
import pytest

import mytorch as mt
import mytorch.numpy as mnp
from mytorch import lax
from mytorch.core.sharded import ShardedArray

RNG = np.random.default_rng(1)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def test_runs_one_replica_per_device_and_shards_the_result(eight_devices):
    x = rand(4, 3)
    y = mt.pmap(lambda v: v * 2 + 1)(x)
    assert isinstance(y, ShardedArray) and y.shape == (4, 3) and y.dtype == np.float32
    assert y.devices() == set(eight_devices[:4])
    assert [s.device for s in y.shards] == list(eight_devices[:4])
    assert not y.is_gathered()
    np.testing.assert_allclose(np.asarray(y), x * 2 + 1)
    np.testing.assert_allclose(np.asarray(y[1]), x[1] * 2 + 1)
    np.testing.assert_allclose(mt.device_get(y), x * 2 + 1)
    np.testing.assert_allclose(np.asarray(y + 1), x * 2 + 2)  # eager ops gather


def test_pytrees_in_axes_out_axes_and_static_args():
    def f(params, batch, scale):
        return {"out": batch["x"] @ params["w"] * scale, "w": params["w"]}

    params = {"w": rand(3, 2)}
    batch = {"x": rand(5, 2, 3)}  # mapped along axis 1 (size 2)
    pf = mt.pmap(f, in_axes=({"w": None}, {"x": 1}, None), out_axes={"out": 1, "w": None},
                 static_broadcasted_argnums=2)
    out = pf(params, batch, 3.0)
    want = np.einsum("bnk,kj->bnj", batch["x"], params["w"]) * 3.0
    np.testing.assert_allclose(np.asarray(out["out"]), want, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(out["w"]), params["w"])
    np.testing.assert_allclose(np.asarray(pf(params, batch, 2.0)["out"]), want / 3 * 2,
                               rtol=1e-5)


def test_no_mapped_argument_needs_axis_size():
    out = mt.pmap(lambda: lax.axis_index("i") * 2, axis_name="i", axis_size=3)()
    np.testing.assert_array_equal(np.asarray(out), [0, 2, 4])
    with pytest.raises(ValueError, match="axis_size"):
        mt.pmap(lambda: lax.axis_index("i"), axis_name="i")()


def test_explicit_devices(eight_devices):
    devs = [eight_devices[5], eight_devices[2]]
    y = mt.pmap(lambda v: lax.psum(v, "i") + lax.axis_index("i"), "i", devices=devs)(
        np.ones((2, 3), np.float32))
    assert [s.device for s in y.shards] == devs
    np.testing.assert_array_equal(np.asarray(y), [[2, 2, 2], [3, 3, 3]])


def test_error_mapped_size_is_not_the_number_of_devices(eight_devices):
    with pytest.raises(ValueError, match=r"size 3 but pmap runs on 2 devices.*test_pmap"):
        mt.pmap(lambda v: v, devices=eight_devices[:2])(np.ones((3, 2), np.float32))


def test_error_more_devices_than_exist():
    with pytest.raises(ValueError, match=r"needs 9 devices, but there are 8.*"
                                         r"num_cpu_devices.*test_pmap"):
        mt.pmap(lambda v: v)(np.ones((9, 2), np.float32))


def test_error_unknown_axis_name_lists_the_names_in_scope():
    with pytest.raises(NameError, match=r"(?s)unbound axis name 'j'.*\['i'\].*test_pmap"):
        mt.pmap(lambda v: lax.psum(v, "j"), axis_name="i")(np.ones((2, 2), np.float32))


def test_error_mapped_axes_of_different_sizes():
    with pytest.raises(ValueError, match="different sizes"):
        mt.pmap(lambda a, b: a + b)(np.ones((2, 2), np.float32), np.ones((3, 2), np.float32))


def test_a_failing_replica_raises_its_own_error_and_the_next_call_works():
    def f(v):
        return mt.pure_callback(check, mt.ShapeDtypeStruct((), np.float32), v) + lax.psum(v, "i")

    def check(v):
        if float(v) < 0:
            raise ArithmeticError("negative input")
        return np.float32(v)

    pf = mt.pmap(f, axis_name="i")
    with pytest.raises(ArithmeticError, match="negative input"):
        pf(np.array([1.0, -1.0, 2.0], np.float32))
    np.testing.assert_allclose(np.asarray(pf(np.array([1.0, 2.0, 3.0], np.float32))),
                               [7.0, 8.0, 9.0])


def test_sharded_result_fed_back_stays_in_place():
    pf = mt.pmap(lambda v: v * 2)
    y = pf(rand(4, 8))
    z = pf(y)
    assert not y.is_gathered()  # read shard by shard, never gathered
    shards = [s._buf for s in y.shards]
    w = pf(z)
    np.testing.assert_allclose(np.asarray(w), np.asarray(y) * 4, rtol=1e-6)
    assert all(a is b for a, b in zip(shards, [s._buf for s in y.shards]))
    # other devices, or a different mapped axis: gathered, and still correct
    y2 = mt.pmap(lambda v: v + 1, in_axes=1)(mnp.asarray(np.asarray(y)).T)
    np.testing.assert_allclose(np.asarray(y2), np.asarray(y) + 1)


def test_donate_argnums():
    x = mt.device_put(rand(4, 16))
    keep = np.asarray(x).copy()
    y = mt.pmap(lambda v: v * 3, donate_argnums=0)(x)
    np.testing.assert_allclose(np.asarray(y), keep * 3, rtol=1e-6)
    with pytest.raises(RuntimeError, match="donated"):
        np.asarray(x)
    z = mt.pmap(lambda v: v + 1, donate_argnums=(0,))(y)  # a sharded array, in place
    np.testing.assert_allclose(np.asarray(z), keep * 3 + 1, rtol=1e-6)
    with pytest.raises(RuntimeError, match="donated"):
        np.asarray(y)


def _loss(w, xb, yb):
    h = mnp.tanh(xb @ w["a"] + w["b"])
    return mnp.mean((h @ w["c"] - yb) ** 2)


@pytest.mark.parametrize("n", [1, 2, 4, 8])
def test_data_parallel_grad_equals_single_device_grad(n):
    w = {"a": rand(5, 8), "b": rand(8), "c": rand(8, 1)}
    xs, ys = rand(32, 5), rand(32, 1)

    @functools.partial(mt.pmap, axis_name="batch", in_axes=(None, 0, 0), out_axes=None)
    def step(w, xb, yb):
        return lax.pmean(mt.grad(_loss)(w, xb, yb), "batch")

    got = step(w, xs.reshape(n, 32 // n, 5), ys.reshape(n, 32 // n, 1))
    want = mt.grad(_loss)(w, xs, ys)
    for k in w:
        np.testing.assert_allclose(np.asarray(got[k]), np.asarray(want[k]), rtol=1e-4,
                                   atol=1e-6)


def test_grad_of_pmap_and_jit_around_and_inside():
    w, xs = rand(5), rand(4, 3, 5)

    def per_device(w, x):
        return lax.psum(mnp.sum(mnp.sin(x @ w)), "i")

    pf = mt.pmap(per_device, "i", in_axes=(None, 0), out_axes=None)
    want = mt.grad(lambda w: mnp.sum(mnp.sin(xs.reshape(-1, 5) @ w)))(w)
    np.testing.assert_allclose(mt.grad(lambda w: pf(w, xs))(w), want, rtol=1e-5)
    np.testing.assert_allclose(mt.jit(mt.grad(lambda w: pf(w, xs)))(w), want, rtol=1e-5)
    inner = mt.pmap(mt.jit(per_device), "i", in_axes=(None, 0), out_axes=None)
    np.testing.assert_allclose(mt.grad(lambda w: inner(w, xs))(w), want, rtol=1e-5)
    # grad of a mapped output summed
    g = mt.grad(lambda x: mnp.sum(mt.pmap(lambda v: mnp.sin(v) * lax.pmean(v, "i"), "i")(x)))
    gv = mt.grad(lambda x: mnp.sum(mt.vmap(lambda v: mnp.sin(v) * lax.pmean(v, "i"),
                                           axis_name="i")(x)))
    np.testing.assert_allclose(g(xs), gv(xs), rtol=1e-5, atol=1e-6)


def test_jit_of_pmap_with_static_and_pytree():
    x = rand(2, 4)
    f = mt.jit(mt.pmap(lambda d: {"s": lax.psum(d["v"], "i")}, axis_name="i"))
    np.testing.assert_allclose(np.asarray(f({"v": x})["s"]), np.broadcast_to(x.sum(0), x.shape),
                               rtol=1e-6)


def test_traced_once_per_signature_and_compiled_once():
    calls = []

    def f(v):
        calls.append(1)
        return lax.psum(v, "i")

    pf = mt.pmap(f, "i")
    for _ in range(3):
        pf(rand(2, 3))
    assert len(calls) == 1


def test_eager_ops_on_two_devices_raise(eight_devices):
    a = mt.device_put(mnp.ones(3), eight_devices[1])
    b = mt.device_put(mnp.ones(3), eight_devices[2])
    assert a.device is eight_devices[1]
    assert (a * 2 + 1.0).device is eight_devices[1]  # Python scalars follow
    with pytest.raises(ValueError, match=r"different devices.*CpuDevice\(id=1\).*"
                                         r"CpuDevice\(id=2\).*test_pmap"):
        a + b


def test_jit_drops_an_unused_result_of_pmap():
    x = rand(4, 2)
    f = mt.jit(lambda x: mt.pmap(lambda v: (v * 2, lax.psum(v, "i")), "i")(x)[1])
    np.testing.assert_allclose(np.asarray(f(x)), np.broadcast_to(x.sum(0), x.shape),
                               rtol=1e-6)


def test_the_pmaps_rules_make_map_their_operands_and_results_by_origin():
    from mytorch.core.jaxpr import Jaxpr

    def walk(jaxpr):
        for eqn in jaxpr.eqns:
            if eqn.primitive.name == "pmap":
                yield eqn
            for p in eqn.params.values():
                inner = getattr(p, "jaxpr", p)
                if isinstance(inner, Jaxpr):
                    yield from walk(inner)

    w, xs = rand(5), rand(4, 3, 5)
    f = mt.pmap(lambda w, x: mnp.sin(x @ w) * lax.psum(mnp.sum(x), "i"), "i",
                in_axes=(None, 0))

    def loss(w):
        return mnp.sum(f(w, xs) ** 2)

    want = mt.grad(lambda w: mnp.sum((mnp.sin(xs @ w) * xs.sum()) ** 2))(w)
    # grad of jit splits the pmap inside the jit's jaxpr (partial_eval_jaxpr); grad alone
    # splits it eagerly; vmap of grad batches the transposed pmap
    for g in (mt.grad(mt.jit(loss)), mt.grad(loss)):
        np.testing.assert_allclose(g(w), want, rtol=1e-4)
        names = set()
        for eqn in walk(mt.make_jaxpr(g)(w).jaxpr):
            names.add(eqn.params["name"])
            body = eqn.params["jaxpr"]
            for outer, inner, m in [*zip(eqn.invars, body.invars, eqn.params["in_mapped"]),
                                    *zip(eqn.outvars, body.outvars, eqn.params["out_mapped"])]:
                # a mapped value carries the device axis the body does not see
                assert outer.aval.shape == ((4, *inner.aval.shape) if m else inner.aval.shape)
            assert not any(eqn.params["donated"])
        assert "transpose(jvp(<lambda>))" in names
    ws = np.stack([w, 2 * w])
    got = mt.vmap(mt.grad(loss))(ws)
    np.testing.assert_allclose(got[1], mt.grad(loss)(2 * w), rtol=1e-4)
