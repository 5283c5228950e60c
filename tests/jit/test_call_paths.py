"""Cache hits of jitted functions taking lists or tuples of arrays (an optimiser step's
parameter lists): the fast path keyed on the lists' structure and the leaves' types gives
what a traced call gives, retraces on any change, and donates as the general path does."""

import numpy as np
import pytest

import mytorch as mt
import mytorch.numpy as mnp


def _arrays(*shapes, start=0.0):
    return [mnp.asarray(np.arange(np.prod(s), dtype=np.float32).reshape(s) + start)
            for s in shapes]


def _step(params, grads, lr):
    return [p - lr * g for p, g in zip(params, grads, strict=True)], lr * 2.0


def _expected(params, grads, lr):
    return ([np.asarray(p) - np.asarray(lr) * np.asarray(g) for p, g in zip(params, grads)],
            np.asarray(lr) * 2)


def _check(out, expected):
    new, lr2 = out
    assert isinstance(new, list) and len(new) == len(expected[0])
    for a, e in zip(new, expected[0], strict=True):
        np.testing.assert_array_equal(np.asarray(a), e)
    np.testing.assert_array_equal(np.asarray(lr2), expected[1])


def test_list_arguments_hit_the_cache_with_the_traced_results():
    f = mt.jit(_step)
    lr = mnp.asarray(np.float32(0.5))
    for k in range(4):  # the tracing call, then cache hits on new values
        params, grads = _arrays((3, 2), (2,), start=k), _arrays((3, 2), (2,), start=-k)
        _check(f(params, grads, lr), _expected(params, grads, lr))


@pytest.mark.parametrize("change", ["length", "shape", "dtype", "container", "leaf"])
def test_a_changed_structure_or_type_retraces(change):
    traces = []

    def step(params, grads, lr):
        traces.append(1)
        return _step(params, grads, lr)

    f = mt.jit(step)
    lr = mnp.asarray(np.float32(0.25))
    params, grads = _arrays((3, 2), (2,)), _arrays((3, 2), (2,), start=1.0)
    f(params, grads, lr)
    f(params, grads, lr)
    assert len(traces) == 1
    if change == "length":
        params, grads = params + _arrays((4,)), grads + _arrays((4,))
    elif change == "shape":
        params, grads = _arrays((2, 3), (2,)), _arrays((2, 3), (2,))
    elif change == "dtype":
        params = [p.astype(mnp.int32) for p in params]
    elif change == "container":
        params, grads = tuple(params), tuple(grads)
    else:  # a Python scalar inside the list: the general path
        grads = [grads[0], 1.0]
    out = f(params, grads, lr)
    assert len(traces) == 2
    new, _ = out
    for a, p, g in zip(new, params, grads, strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(p) - 0.25 * np.asarray(g))


def test_a_weak_scalar_argument_keys_apart_from_a_strong_one():
    f = mt.jit(_step)
    params, grads = _arrays((2,)), _arrays((2,))
    weak = mnp.asarray(0.5)  # a Python float: weakly typed
    strong = mnp.asarray(np.float32(0.5))
    assert f(params, grads, weak)[1].weak_type
    assert not f(params, grads, strong)[1].weak_type
    assert f(params, grads, weak)[1].weak_type


def test_donated_lists_are_written_in_place_on_cache_hits():
    f = mt.jit(_step, donate_argnums=0)
    lr = mnp.asarray(np.float32(0.5))
    for k in range(3):
        params, grads = _arrays((3, 2), (2,), start=k), _arrays((3, 2), (2,))
        expected = _expected(params, grads, lr)
        addresses = [p._buf.__array_interface__["data"][0] for p in params]
        out = f(params, grads, lr)
        _check(out, expected)
        assert [a._buf.__array_interface__["data"][0] for a in out[0]] == addresses
        with pytest.raises(RuntimeError):
            np.asarray(params[0])  # the donated array is invalidated


def test_static_arguments_take_the_general_path():
    f = mt.jit(lambda params, scale: [p * scale for p in params], static_argnums=1)
    params = _arrays((2,), (3,))
    for scale in (2.0, 3.0, 2.0):
        out = f(params, scale)
        for a, p in zip(out, params, strict=True):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(p) * scale)


def test_config_changes_and_disable_jit_are_seen_by_cache_hits():
    calls = []

    def step(params):
        calls.append(1)
        return [p + 1.0 for p in params]

    f = mt.jit(step)
    params = _arrays((2,), (2, 2))
    f(params)
    f(params)
    assert len(calls) == 1
    with mt.disable_jit():
        f(params)
    assert len(calls) == 2  # ran op by op, not the cached code
