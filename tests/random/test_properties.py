"""Properties over generated shapes, dtypes and seeds: result shapes and dtypes, ranges,
typed and raw keys drawing the same numbers, jit equal to eager, vmap equal to the loop."""

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mytorch as mt

R = mt.random
FLOATS = [np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16), np.dtype(np.float32)]
shapes = st.lists(st.integers(0, 4), min_size=0, max_size=3).map(tuple)
seeds = st.integers(-(2**31), 2**31 - 1)


@settings(max_examples=15)
@given(shape=shapes, dtype=st.sampled_from(FLOATS), seed=seeds)
def test_uniform_shape_dtype_range(shape, dtype, seed):
    out = R.uniform(R.key(seed), shape, dtype, -2.0, 3.0)
    assert out.shape == shape and out.dtype == dtype
    values = np.asarray(out, np.float32)
    assert ((values >= -2.0) & (values < 3.0)).all()
    np.testing.assert_array_equal(mt.jit(lambda k: R.uniform(k, shape, dtype, -2.0, 3.0))(
        R.key(seed)), out)


@settings(max_examples=15)
@given(shape=shapes, seed=seeds, bounds=st.tuples(st.integers(-300, 300),
                                                  st.integers(1, 300)))
def test_randint_shape_and_range(shape, seed, bounds):
    lo, width = bounds
    out = np.asarray(R.randint(R.key(seed), shape, lo, lo + width))
    assert out.shape == shape and out.dtype == np.int32
    assert ((out >= lo) & (out < lo + width)).all()


@settings(max_examples=10)
@given(n=st.integers(1, 40), seed=seeds)
def test_permutation_is_a_permutation(n, seed):
    out = np.asarray(R.permutation(R.key(seed), n))
    assert sorted(out.tolist()) == list(range(n))
    x = np.arange(n * 2).reshape(n, 2)
    rows = np.asarray(R.permutation(R.key(seed), x))
    assert sorted(map(tuple, rows.tolist())) == list(map(tuple, x.tolist()))


@settings(max_examples=10)
@given(n=st.integers(1, 20), k=st.integers(0, 20), seed=seeds)
def test_choice_without_replacement_is_distinct(n, k, seed):
    k = min(k, n)
    out = np.asarray(R.choice(R.key(seed), n, (k,), replace=False))
    assert len(set(out.tolist())) == k and ((out >= 0) & (out < n)).all()
    p = np.arange(1, n + 1, dtype=np.float32)
    out = np.asarray(R.choice(R.key(seed), n, (k,), replace=False, p=p / p.sum()))
    assert len(set(out.tolist())) == k


def test_split_keys_are_distinct():
    words = np.asarray(R.key_data(R.split(R.key(0), 4096)))
    assert len({tuple(w) for w in words.tolist()}) == 4096
    folded = np.asarray(mt.vmap(lambda i: R.key_data(R.fold_in(R.key(0), i)))(
        np.arange(4096, dtype=np.int32)))
    assert len({tuple(w) for w in folded.tolist()}) == 4096


SAMPLERS = {
    "uniform": lambda k: R.uniform(k, (3,)),
    "normal": lambda k: R.normal(k, (3,)),
    "truncated_normal": lambda k: R.truncated_normal(k, -1.0, 1.0, (3,)),
    "randint": lambda k: R.randint(k, (3,), 0, 7),
    "bernoulli": lambda k: R.bernoulli(k, 0.5, (3,)),
    "categorical": lambda k: R.categorical(k, np.zeros((3, 4), np.float32)),
    "gumbel": lambda k: R.gumbel(k, (3,)),
    "exponential": lambda k: R.exponential(k, (3,)),
    "permutation": lambda k: R.permutation(k, 5),
    "choice": lambda k: R.choice(k, 5, (3,), p=np.full(5, 0.2, np.float32)),
    "laplace": lambda k: R.laplace(k, (3,)),
    "rademacher": lambda k: R.rademacher(k, (3,)),
    "wald": lambda k: R.wald(k, 2.0, (3,)),
    "bits": lambda k: R.bits(k, (3,), np.uint8),
}


@pytest.mark.parametrize("name", SAMPLERS)
def test_typed_raw_jit_vmap_agree(name):
    fn = SAMPLERS[name]
    typed = R.split(R.key(17), 3)
    raw = R.key_data(typed)
    eager = [np.asarray(fn(k)) for k in typed]
    for i in range(3):
        np.testing.assert_array_equal(fn(raw[i]), eager[i])
        np.testing.assert_array_equal(mt.jit(fn)(typed[i]), eager[i])
    np.testing.assert_array_equal(mt.vmap(fn)(typed), np.stack(eager))
    np.testing.assert_array_equal(mt.vmap(fn)(raw), np.stack(eager))
    np.testing.assert_array_equal(mt.jit(mt.vmap(fn))(typed), np.stack(eager))


def test_vmap_over_parameters_equals_loop():
    keys = R.split(R.key(2), 4)
    p = np.array([0.1, 0.4, 0.6, 0.9], np.float32)
    np.testing.assert_array_equal(
        mt.vmap(lambda k, q: R.bernoulli(k, q, (5,)))(keys, p),
        np.stack([R.bernoulli(k, q, (5,)) for k, q in zip(keys, p)]))
    # one key, mapped parameters: every row uses the same draws
    lo = np.array([-2.0, -1.0, 0.0, 0.5], np.float32)
    out = mt.vmap(lambda a: R.truncated_normal(keys[0], a, a + 1.0, (3,)))(lo)
    np.testing.assert_array_equal(out, np.stack(
        [R.truncated_normal(keys[0], a, a + 1.0, (3,)) for a in lo]))
    logits = np.log(np.array([[0.7, 0.3], [0.2, 0.8], [0.5, 0.5]], np.float32))
    np.testing.assert_array_equal(
        mt.vmap(lambda k, lg: R.categorical(k, lg, shape=(6,)))(keys[:3], logits),
        np.stack([R.categorical(k, lg, shape=(6,)) for k, lg in zip(keys[:3], logits)]))


def test_grad_of_reparameterised_samplers(x64):
    from tests.autodiff.fd import check_grads

    key = R.key(5)
    check_grads(lambda lo, hi: R.uniform(key, (4,), np.float64, lo, hi), (-1.0, 2.0))
    check_grads(lambda lo, hi: R.truncated_normal(key, lo, hi, (4,), np.float64),
                (-1.0, 0.5))
    check_grads(lambda s: R.rayleigh(key, s, (3,), np.float64), (2.0,))
