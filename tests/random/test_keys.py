"""Keys, splitting, folding and bits: JAX 0.10's words written literally (its default
threefry implementation, jax_threefry_partitionable=True); typed and raw keys; jit, vmap
and grad through them; the threefry primitive's rules; errors."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import mytorch as mt
from mytorch import lax
from mytorch.random import KeyArray

R = mt.random

# jax.random.PRNGKey(seed) without x64
PRNGKEY_32 = {0: [0, 0], 1: [0, 1], 42: [0, 42], -1: [0, 4294967295], -7: [0, 4294967289],
              2**31: [0, 2147483648], 2**32 + 5: [0, 5], 2**40 + 3: [0, 3]}
# ... and with x64
PRNGKEY_64 = {0: [0, 0], -1: [4294967295, 4294967295], -7: [4294967295, 4294967289],
              2**32 + 5: [1, 5], 2**40 + 3: [256, 3], 2**63 - 1: [2147483647, 4294967295],
              -(2**63): [2147483648, 0]}
SPLIT_42 = [[1832780943, 270669613], [64467757, 2916123636], [2465931498, 255383827],
            [3134548294, 894150801]]


def words(x):
    return np.asarray(R.key_data(x) if isinstance(x, KeyArray) else x).tolist()


@pytest.mark.parametrize("seed", PRNGKEY_32)
def test_prngkey_matches_jax(seed):
    assert words(R.PRNGKey(seed)) == PRNGKEY_32[seed]
    assert words(R.key(seed)) == PRNGKEY_32[seed]
    assert R.PRNGKey(seed).dtype == np.uint32 and R.PRNGKey(seed).shape == (2,)


@pytest.mark.parametrize("seed", PRNGKEY_64)
def test_prngkey_matches_jax_x64(x64, seed):
    assert words(R.PRNGKey(seed)) == PRNGKEY_64[seed]
    assert words(R.key(np.int64(seed))) == PRNGKEY_64[seed]


def test_array_seeds():
    assert words(R.PRNGKey(np.int32(-1))) == [0, 4294967295]
    assert words(R.PRNGKey(np.uint32(2**32 - 1))) == [0, 4294967295]
    assert words(R.PRNGKey(mt.numpy.asarray(42))) == [0, 42]
    # traced seeds: jit and vmap over seeds
    assert words(mt.jit(R.PRNGKey)(42)) == [0, 42]
    batch = mt.vmap(R.PRNGKey)(np.arange(3, dtype=np.int32))
    assert words(batch) == [[0, 0], [0, 1], [0, 2]]


def test_split_matches_jax():
    k = R.PRNGKey(42)
    assert words(R.split(k)) == SPLIT_42[:2]
    assert words(R.split(k, 3)) == SPLIT_42[:3]
    assert words(R.split(k, (2, 2))) == [SPLIT_42[:2], SPLIT_42[2:]]
    assert R.split(k, 0).shape == (0, 2)
    a, b = R.split(k)
    assert words(R.split(b)[0]) == [3187376881, 129218101]
    assert words(R.split(R.split(a)[1], 4)) == [
        [2829437526, 3258650986], [2451885785, 2215112154], [4179084902, 2188378661],
        [435435197, 103253076]]


def test_typed_keys_split_like_raw_keys():
    k = R.key(42)
    keys = R.split(k, 3)
    assert isinstance(keys, KeyArray) and keys.shape == (3,) and len(keys) == 3
    assert words(keys) == SPLIT_42[:3]
    k1, k2, k3 = keys
    assert isinstance(k1, KeyArray) and k1.shape == () and k1.ndim == 0
    assert words(k3) == SPLIT_42[2]
    assert keys[1:].shape == (2,) and words(keys[..., 0]) == SPLIT_42[0]
    grid = R.split(k, (2, 2))
    assert grid.shape == (2, 2) and grid.reshape(4).shape == (4,)
    assert words(grid.reshape(-1)) == SPLIT_42
    assert str(k.dtype) == "key<fry>" and repr(k).startswith("Array((), dtype=key<fry>)")
    assert bool(k1 == R.split(k, 3)[0]) and not bool(k1 == k2)
    assert bool(k1 != k2)
    assert words(R.wrap_key_data(R.key_data(keys))) == SPLIT_42[:3]
    assert R.clone(k) is k and R.key_impl(k) == "threefry2x32"
    assert words(R.key(42, impl="threefry2x32")) == [0, 42]
    assert words(R.wrap_key_data(R.key_data(keys), dtype=k.dtype)) == SPLIT_42[:3]
    with pytest.raises(ValueError, match="key: only the 'threefry2x32' implementation"):
        R.key(0, impl="rbg")


def test_fold_in_matches_jax():
    k = R.PRNGKey(42)
    assert words(R.fold_in(k, 0)) == [1832780943, 270669613]
    assert words(R.fold_in(k, 7)) == [2547012911, 1371500959]
    assert words(R.fold_in(k, 2**32 - 1)) == [2398536845, 3890976714]
    assert words(R.fold_in(R.key(42), np.int32(7))) == [2547012911, 1371500959]
    assert isinstance(R.fold_in(R.key(42), 7), KeyArray)
    steps = mt.vmap(lambda i: R.fold_in(k, i))(np.arange(8, dtype=np.int32))
    assert words(steps)[7] == [2547012911, 1371500959]


@pytest.mark.parametrize("dtype,expected", [
    ("uint8", [162, 217, 249, 215, 21]),
    ("uint16", [5026, 12505, 63993, 49623, 29461]),
    ("uint32", [2098992034, 2919706841, 2646866425, 2409546199, 1935504149]),
])
def test_bits_matches_jax(dtype, expected):
    out = R.bits(R.key(42), (5,), dtype)
    assert out.dtype == np.dtype(dtype) and np.asarray(out).tolist() == expected
    assert np.asarray(R.bits(R.PRNGKey(42), (5,), dtype)).tolist() == expected


def test_bits_scalar_and_empty():
    assert int(R.bits(R.key(42))) == 2098992034
    assert R.bits(R.key(42), (0, 3)).shape == (0, 3)


def test_bits_uint64_x64(x64):
    assert np.asarray(R.bits(R.key(42), (3,), "uint64")).tolist() == [
        7871734211187709741, 276886910877598708, 10591095138341673235]
    assert R.bits(R.key(42), (2,)).dtype == np.uint64  # the default with x64


def test_jit_equals_eager():
    k = R.key(3)
    for fn in (lambda k: R.split(k, 4), lambda k: R.fold_in(k, 5),
               lambda k: R.bits(k, (2, 3), np.uint16)):
        eager, jitted = fn(k), mt.jit(fn)(k)
        assert type(eager) is type(jitted)
        assert words(eager) == words(jitted)
    raw = R.PRNGKey(3)
    assert words(mt.jit(R.split)(raw)) == words(R.split(raw))


def test_vmap_over_keys_equals_loop():
    keys = R.split(R.key(0), 5)
    batched = mt.vmap(lambda k: R.bits(k, (3,)))(keys)
    loop = np.stack([np.asarray(R.bits(k, (3,))) for k in keys])
    np.testing.assert_array_equal(batched, loop)
    nested = mt.vmap(lambda k: R.split(k, 3))(keys)
    assert isinstance(nested, KeyArray) and nested.shape == (5, 3)
    assert words(nested) == [words(R.split(k, 3)) for k in keys]
    raw = R.split(R.PRNGKey(0), 5)
    assert words(mt.vmap(R.split)(raw)) == [words(R.split(k)) for k in raw]


def test_keys_pass_through_tree_map_and_grad():
    k = R.key(1)
    doubled = mt.tree_util.tree_map(lambda x: x, {"k": k})
    assert isinstance(doubled["k"], KeyArray) and words(doubled["k"]) == words(k)

    def f(x, key):
        return (x * R.bits(key, (3,)).astype(np.float32)).sum()

    g = mt.grad(f)(np.ones(3, np.float32), k)
    np.testing.assert_array_equal(g, np.asarray(R.bits(k, (3,))).astype(np.float32))


# ---- the primitive -----------------------------------------------------------------------
def test_threefry_known_answer():
    # the Random123 known-answer vector for threefry2x32_20 with zero key and counter
    u = np.uint32
    assert [int(w) for w in lax.threefry2x32(u(0), u(0), u(0), u(0))] == [
        0x6B200159, 0x99BA4EFE]


@given(n=st.integers(0, 6), batched=st.sampled_from(["keys", "counts", "both"]))
def test_threefry_batching_equals_loop(n, batched):
    rng = np.random.default_rng(n)
    keys = rng.integers(0, 2**32, (4, 2), dtype=np.uint32)
    counts = rng.integers(0, 2**32, (4, n), dtype=np.uint32)
    key_axis = 0 if batched in ("keys", "both") else None
    count_axis = 0 if batched in ("counts", "both") else None

    def f(k, c):
        return lax.threefry2x32(k[0], k[1], c, c + np.uint32(1))

    args = (keys if key_axis == 0 else keys[0], counts if count_axis == 0 else counts[0])
    out = mt.vmap(f, in_axes=(key_axis, count_axis))(*args)
    for i in range(4):
        ref = f(keys[i] if key_axis == 0 else keys[0], counts[i] if count_axis == 0
                else counts[0])
        for o, r in zip(out, ref, strict=True):
            np.testing.assert_array_equal(o[i], r)


def test_threefry_broadcasts_and_jits():
    u = np.uint32
    counts = np.arange(6, dtype=u).reshape(2, 3)
    out = lax.threefry2x32(u(1), np.array([2], u), counts, u(0))
    assert out[0].shape == (2, 3)
    jitted = mt.jit(lax.threefry2x32)(u(1), np.array([2], u), counts, u(0))
    np.testing.assert_array_equal(out[1], jitted[1])


def test_threefry_errors():
    with pytest.raises(TypeError, match=r"threefry2x32 needs uint32.*i32\[3\]"):
        lax.threefry2x32(np.uint32(0), np.uint32(0), np.arange(3, dtype=np.int32),
                         np.arange(3, dtype=np.int32))
    with pytest.raises(ValueError, match="threefry2x32 cannot broadcast"):
        lax.threefry2x32(np.uint32(0), np.uint32(0), np.zeros(3, np.uint32),
                         np.zeros(4, np.uint32))


# ---- errors ------------------------------------------------------------------------------
def test_key_errors():
    with pytest.raises(TypeError, match=r"split: expected a PRNG key, got int 0.*key\(seed\)"
                                        r".*test_keys.py"):
        R.split(0)
    with pytest.raises(TypeError, match=r"bits: expected a PRNG key.*f32\[2\]"):
        R.bits(np.zeros(2, np.float32))
    with pytest.raises(TypeError, match=r"fold_in: expected a PRNG key.*u32\[3\]"):
        R.fold_in(np.zeros(3, np.uint32), 1)
    with pytest.raises(ValueError, match=r"split takes a single key.*\(3,\).*vmap"):
        R.split(R.split(R.key(0), 3))
    with pytest.raises(TypeError, match="key takes an integer seed, got float"):
        R.key(1.5)
    with pytest.raises(TypeError, match="PRNGKey takes a scalar seed"):
        R.PRNGKey(np.arange(3))
    with pytest.raises(TypeError, match="key takes an integer seed, but was given a key"):
        R.key(R.key(0))
    with pytest.raises(TypeError, match=r"cannot be converted to a NumPy array.*key_data"):
        np.asarray(R.key(0))
    with pytest.raises(OverflowError, match="fold_in: data -1 is out of the uint32 range"):
        R.fold_in(R.key(0), -1)


def test_shape_and_dtype_errors():
    with pytest.raises(TypeError, match=r"split: shape must be a tuple of ints, got \(2.0,\)"):
        R.split(R.key(0), 2.0)
    with pytest.raises(ValueError, match="bits: shape must have non-negative entries"):
        R.bits(R.key(0), (2, -1))
    with pytest.raises(ValueError, match="bits: dtype must be an unsigned int dtype"):
        R.bits(R.key(0), (2,), np.int32)


@pytest.mark.parametrize("module", ["mytorch.random.keys", "mytorch.random.uniform",
                                    "mytorch.random.discrete", "mytorch.lax.prng"])
def test_docstring_examples(module):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module),
                             optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted >= 3


def test_key_array_with_a_non_array_leaf_still_prints():
    """tree_map over a structure holding typed keys may put any value in the key's leaf
    (None from a filter, a shape from tree_map(jnp.shape)); printing it must not fail."""
    keys = mt.random.split(mt.random.key(0), 3)
    emptied = mt.tree_util.tree_map(lambda x: None, keys)
    assert repr(emptied) == "KeyArray(holding None)"
    shapes = mt.tree_util.tree_map(lambda x: x.shape, keys)
    assert repr(shapes) == "KeyArray(holding (3, 2))"
