"""The tracer protocol (`known_value`, `is_known`, `is_differentiated`): each interpreter's
tracer answers for its own trace, whatever traces lie below it."""

import numpy as np

import mytorch as mt
from mytorch.core.array import from_numpy
from mytorch.core.trace import is_differentiated, is_known, known_value


def _probe(seen):
    """A function recording what the protocol says of its argument, returning it."""
    def f(x):
        seen.append((known_value(x), is_known(x), is_differentiated(x)))
        return x * 2.0
    return f


X = np.arange(6.0, dtype=np.float32).reshape(3, 2)


def test_arrays_are_known_and_not_differentiated():
    x = from_numpy(X)
    np.testing.assert_array_equal(known_value(x), X)
    assert is_known(x) and not is_differentiated(x)
    assert is_known(1.5) and not is_differentiated(1.5)


def test_jvp_tracer_over_concrete_value():
    seen = []
    mt.jvp(_probe(seen), (from_numpy(X),), (from_numpy(np.ones_like(X)),))
    (value, known, diff), = seen
    np.testing.assert_array_equal(value, X)
    assert known and diff


def test_batch_tracer_shows_the_whole_batch():
    seen = []
    mt.vmap(_probe(seen))(from_numpy(X))
    (value, known, diff), = seen
    np.testing.assert_array_equal(value, X)  # all 3 rows, not one element
    assert known and not diff


def test_batch_of_jvp_tracers_over_concrete_values():
    # vmap outside, jvp inside: the JVP tracer's primal is a batch tracer
    seen = []

    def f(x):
        return mt.jvp(_probe(seen), (x,), (mt.numpy.ones_like(x),))[1]

    mt.vmap(f)(from_numpy(X))
    (value, known, diff), = seen
    np.testing.assert_array_equal(value, X)
    assert known and diff


def test_jvp_of_batch_tracers_over_concrete_values():
    # jvp outside, vmap inside: the batch tracer holds a JVP tracer
    seen = []
    mt.jvp(mt.vmap(_probe(seen)), (from_numpy(X),), (from_numpy(np.ones_like(X)),))
    (value, known, diff), = seen
    np.testing.assert_array_equal(value, X)
    assert known and diff


def test_staged_tracers_are_not_known():
    seen = []
    mt.jit(_probe(seen))(from_numpy(X))
    (value, known, diff), = seen
    assert value is None and not known and not diff


def test_jvp_over_staged_values_is_differentiated_but_not_known():
    seen = []

    def f(x):
        return mt.jvp(_probe(seen), (x,), (x,))[1]

    mt.jit(f)(from_numpy(X))
    (value, known, diff), = seen
    assert value is None and not known and diff


def test_batch_under_jit_is_not_known():
    seen = []
    mt.jit(mt.vmap(_probe(seen)))(from_numpy(X))
    (value, known, diff), = seen
    assert value is None and not known and not diff
