"""CompileOptions and the backend compile interface `compile(jaxpr, consts, options)`.

A recording backend registered for one test shows what jit and eager loops hand a backend:
the options (device, donated inputs, name, debug_nans, axis environment) and the buffers
they donate. Values are checked against NumPy."""

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch.backends.numpy import NumpyBackend, numpy_backend
from mytorch.core.backend import (
    Backend, CompileOptions, Device, available_platforms, get_backend, register_backend,
    unregister_backend,
)

_HERE = r"test_compile_options\.py:\d+"


def _jaxpr(f, *args):
    return mt.make_jaxpr(f)(*args).jaxpr


# ---- CompileOptions ----------------------------------------------------------------------
def test_defaults():
    o = CompileOptions()
    assert (o.device, o.donated, o.axis_env, o.debug_nans, o.name) == (None, (), (), False, "f")
    assert o.donated_flags(3) == (False, False, False)
    assert o.donated_flags(0) == ()


def test_frozen_and_replace():
    o = CompileOptions(name="step")
    with pytest.raises(dataclasses.FrozenInstanceError):
        o.name = "other"
    r = dataclasses.replace(o, donated=(True,))
    assert (r.name, r.donated, o.donated) == ("step", (True,), ())


@settings(max_examples=25, deadline=None)
@given(donated=st.lists(st.booleans(), max_size=6),
       sizes=st.lists(st.integers(1, 8), max_size=3),
       debug_nans=st.booleans(), name=st.sampled_from(["f", "step", "<lambda>"]))
def test_hashable_and_equal_by_value(donated, sizes, debug_nans, name):
    """Lists and NumPy bools normalise to tuples of Python bools: equal options hash equal
    and key one dict entry."""
    device = mt.devices()[0]
    axis_env = [[f"ax{i}", s] for i, s in enumerate(sizes)]
    a = CompileOptions(device=device, donated=list(donated), axis_env=axis_env,
                       debug_nans=debug_nans, name=name)
    b = CompileOptions(device=device, donated=tuple(np.bool_(d) for d in donated),
                       axis_env=tuple((f"ax{i}", s) for i, s in enumerate(sizes)),
                       debug_nans=np.bool_(debug_nans), name=name)
    assert a == b and hash(a) == hash(b)
    assert len({a: 1, b: 2}) == 1
    assert all(type(d) is bool for d in a.donated) and type(a.debug_nans) is bool
    assert a.axis_env == tuple((f"ax{i}", s) for i, s in enumerate(sizes))
    if donated:
        assert a.donated_flags(len(donated)) == tuple(donated)
    assert a != dataclasses.replace(a, name=name + "_other")


@pytest.mark.parametrize("kwargs, err, message", [
    ({"donated": (True, 1)}, TypeError, r"donated must hold one bool per input, got int 1"),
    ({"donated": ("yes",)}, TypeError, r"donated must hold one bool per input, got str"),
    ({"axis_env": (("i", 0),)}, ValueError, r"\(name, size\) pairs .* got \('i', 0\)"),
    ({"axis_env": (("i", 2.0),)}, ValueError, r"\(name, size\) pairs .* got \('i', 2\.0\)"),
    ({"axis_env": (("i", True),)}, ValueError, r"\(name, size\) pairs .* got \('i', True\)"),
    ({"axis_env": (("i", 2, 3),)}, ValueError, r"\(name, size\) pairs"),
    ({"axis_env": ("i",)}, ValueError, r"\(name, size\) pairs .* got 'i'"),
    ({"axis_env": (([1], 2),)}, ValueError, r"\(name, size\) pairs"),
    ({"axis_env": (("i", 2), ("i", 3))}, ValueError, r"names an axis twice: \['i', 'i'\]"),
    ({"name": ""}, TypeError, r"name must be a non-empty str"),
    ({"name": 3}, TypeError, r"name must be a non-empty str"),
    ({"device": "cpu"}, TypeError, r"device must be a Device or None, got str"),
    ({"debug_nans": 1}, TypeError, r"debug_nans must be a bool, got int"),
])
def test_invalid_options_name_the_field_and_the_user_line(kwargs, err, message):
    with pytest.raises(err, match=r"CompileOptions\(name=.*\): .*" + message + ".* at " + _HERE):
        CompileOptions(**kwargs)


def test_options_are_keyword_only():
    with pytest.raises(TypeError):
        CompileOptions(None, (True,))


# ---- Backend.compile checks the options against the jaxpr ----------------------------------
def test_donated_length_must_match_the_inputs():
    jaxpr = _jaxpr(lambda x, y: x * y, np.ones(3, np.float32), np.ones(3, np.float32))
    with pytest.raises(ValueError, match=r"compile\(axpy\): donated has 1 flags for a jaxpr "
                                         r"of 2 inputs at " + _HERE):
        numpy_backend.compile(jaxpr, [], CompileOptions(donated=(True,), name="axpy"))
    with pytest.raises(ValueError, match=r"donated has 3 flags for a jaxpr of 2 inputs"):
        CompileOptions(donated=(True, False, True)).donated_flags(2)


def test_consts_must_match_the_constvars():
    closed = mt.make_jaxpr(lambda x: x + np.arange(3.0, dtype=np.float32))(np.ones(3, np.float32))
    n = len(closed.jaxpr.constvars)
    with pytest.raises(ValueError, match=rf"compile\(f\): {n + 1} constants for a jaxpr of "
                                         rf"{n} constvars at " + _HERE):
        numpy_backend.compile(closed.jaxpr, [*closed.consts, 1.0], CompileOptions())


def test_options_must_be_compile_options():
    jaxpr = _jaxpr(lambda x: x + 1.0, np.ones(2, np.float32))
    with pytest.raises(TypeError, match=r"compile: options must be a CompileOptions, got "
                                        r"tuple at " + _HERE):
        numpy_backend.compile(jaxpr, [], (False,))


def test_a_device_of_another_backend_is_refused():
    jaxpr = _jaxpr(lambda x: x + 1.0, np.ones(2, np.float32))
    other = Device("other", 0, Backend())
    with pytest.raises(ValueError, match=r"compile\(g\): the cpu backend cannot compile for "
                                         r"CudaDevice\(id=0\) at " + _HERE):
        numpy_backend.compile(jaxpr, [], CompileOptions(device=other, name="g"))


def test_a_backend_without_a_compiler_says_so():
    jaxpr = _jaxpr(lambda x: x + 1.0, np.ones(2, np.float32))

    class NoCompiler(Backend):
        platform = "nocompiler"

    with pytest.raises(NotImplementedError, match="the nocompiler backend has no compiler"):
        NoCompiler().compile(jaxpr, [], CompileOptions())


def test_numpy_backend_compiles_with_the_options_name_and_donation():
    x = np.array([1.0, -2.0, 3.5], np.float32)
    y = np.array([0.5, 4.0, -1.0], np.float32)
    jaxpr = _jaxpr(lambda a, b: a * 2.0 + b, x, y)
    fn, text = numpy_backend.compile(jaxpr, [], CompileOptions(donated=(True, False),
                                                                name="axpy"))
    assert "def axpy(" in text
    xb = x.copy()
    (out,) = fn(xb, y.copy())
    np.testing.assert_array_equal(out, x * 2.0 + y)
    assert np.shares_memory(out, xb)  # the donated input's buffer holds the result
    fn, _ = numpy_backend.compile(jaxpr, [], CompileOptions(name="axpy"))
    xb = x.copy()
    (out,) = fn(xb, y)
    np.testing.assert_array_equal(out, x * 2.0 + y)
    np.testing.assert_array_equal(xb, x)  # not donated: left as it was
    assert not np.shares_memory(out, xb)


def test_numpy_donate_reuses_only_an_unshared_buffer():
    owned = np.arange(4.0)
    assert numpy_backend.donate(owned) is owned  # this frame's is the only reference
    shared = np.arange(4.0)
    alias = shared
    copied = numpy_backend.donate(shared)
    assert copied is not shared and copied is not alias
    np.testing.assert_array_equal(copied, np.arange(4.0))
    view = np.arange(6.0)[::2]
    assert numpy_backend.donate(view) is not view
    frozen = np.arange(3.0)
    frozen.flags.writeable = False
    kept = numpy_backend.donate(frozen)
    assert kept is not frozen and kept.flags.writeable
    np.testing.assert_array_equal(kept, frozen)


# ---- a recording backend receives the options ------------------------------------------------
class RecordingBackend(NumpyBackend):
    """NumPy buffers and kernels on a platform of its own, recording each compile."""

    platform = "recording"

    def __init__(self):
        super().__init__()
        self.compiled, self.donations = [], []
        self._devices = [Device(self.platform, 0, self)]

    def devices(self):
        return self._devices

    def kernel(self, prim):
        return numpy_backend.kernel(prim)

    def donate(self, buf):
        self.donations.append(buf.shape)
        return buf.copy()

    def generate(self, jaxpr, consts, options):
        self.compiled.append((jaxpr, options))
        return super().generate(jaxpr, consts, options)


@pytest.fixture
def recording():
    backend = RecordingBackend()
    register_backend(backend)
    mt.clear_caches()
    try:
        yield backend
    finally:
        unregister_backend(backend.platform)
        mt.clear_caches()
    assert backend.platform not in available_platforms()


def test_jit_hands_the_backend_its_options(recording):
    assert get_backend("recording") is recording
    dev = recording.devices()[0]
    x_np = np.array([1.0, 2.0, -3.0, 0.25], np.float32)
    y_np = np.array([2.0, 0.0, 1.5, -1.0], np.float32)

    def axpy(x, y):
        return x * 2.0 + y

    f = mt.jit(axpy, donate_argnums=0)
    for _ in range(2):  # the tracing call and the cached fast path
        x, y = mt.device_put(mnp.asarray(x_np), dev), mt.device_put(mnp.asarray(y_np), dev)
        out = f(x, y)
        np.testing.assert_array_equal(np.asarray(out), x_np * 2.0 + y_np)
        assert out.device is dev
    (jaxpr, options), = recording.compiled
    assert options == CompileOptions(device=dev, donated=(True, False), name="axpy")
    assert len(jaxpr.invars) == 2
    assert recording.donations == [(4,), (4,)]  # the backend decides, on every call


def test_jit_under_debug_nans_says_so_in_the_options(recording):
    dev = recording.devices()[0]
    mt.config.update("debug_nans", True)
    try:
        out = mt.jit(lambda x: x - 1.0)(mt.device_put(mnp.ones(3), dev))
    finally:
        mt.config.update("debug_nans", False)
    np.testing.assert_array_equal(np.asarray(out), np.zeros(3))
    (_, options), = recording.compiled
    assert options.debug_nans and options.donated == (False,) and options.device is dev


def test_an_eager_scan_asks_its_operands_backend(recording):
    """An eager scan is compiled (as one equation) on the operands' device, not the
    default one."""
    dev = recording.devices()[0]
    xs_np = np.arange(20, dtype=np.float32)

    def body(c, x):
        return c + x, c * x

    carry, ys = mt.lax.scan(body, mt.device_put(mnp.zeros(()), dev),
                            mt.device_put(mnp.asarray(xs_np), dev))
    want = np.concatenate([[0.0], np.cumsum(xs_np)[:-1]]).astype(np.float32)
    np.testing.assert_allclose(np.asarray(carry), xs_np.sum())
    np.testing.assert_allclose(np.asarray(ys), want * xs_np)
    names = [o.name for _, o in recording.compiled]
    assert names == ["scan_eager"]
    (_, options), = recording.compiled
    assert options.device is dev and options.donated == () and not options.debug_nans


def test_an_eager_while_loop_gradient_asks_its_operands_backend(recording):
    """Reverse mode of an eager while_loop compiles its tape's cond and body on the
    operands' device; the gradient is the closed-form product of the step derivatives."""
    dev = recording.devices()[0]

    def f(x):
        return mt.lax.while_loop(lambda c: c[1] < 5,
                                 lambda c: (mnp.sin(c[0]) * 1.5, c[1] + 1), (x, 0))[0]

    x0 = np.float32(0.3)
    g = mt.grad(f)(mt.device_put(mnp.asarray(x0), dev))
    c, want = np.float64(x0), 1.0
    for _ in range(5):
        want *= 1.5 * np.cos(c)
        c = 1.5 * np.sin(c)
    np.testing.assert_allclose(np.asarray(g), want, rtol=1e-5)
    assert recording.compiled
    assert all(o.device is dev and o.donated == () for _, o in recording.compiled)
