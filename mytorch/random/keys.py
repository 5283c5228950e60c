"""Keys: raw uint32[..., 2] keys and typed `KeyArray`s, seeding, splitting, folding, bits.

Every function here accepts a raw key (a uint32 array whose last axis has size 2, as
`PRNGKey` makes) or a typed key (`KeyArray`, as `key` makes), and returns keys of the kind
it was given. The words are JAX's: the same seed gives the same key, and the same key the
same bits, as `jax.random` with its default threefry implementation
(`jax_threefry_partitionable=True`).
"""

import numpy as np

from mytorch import lax
from mytorch.core import dtypes
from mytorch.core.array import Array, from_numpy
from mytorch.core.config import config
from mytorch.core.source_info import user_error
from mytorch.core.trace import Tracer
from mytorch.core.tree_util import register_pytree_node
from mytorch.numpy._manip_util import static_shape

__all__ = [
    "KeyArray",
    "PRNGKey",
    "bits",
    "clone",
    "fold_in",
    "key",
    "key_data",
    "key_impl",
    "split",
    "wrap_key_data",
]

_U32 = np.dtype(np.uint32)
_UINT = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: _U32, 64: np.dtype(np.uint64)}


class KeyDType:
    """The dtype of typed threefry keys: prints as `key<fry>`, as JAX's."""

    name = "key<fry>"
    itemsize = 8

    def __repr__(self):
        return self.name

    __str__ = __repr__

    def __eq__(self, other):
        return isinstance(other, KeyDType) or other == self.name

    def __hash__(self):
        return hash(self.name)


KEY_DTYPE = KeyDType()


class KeyArray:
    """An array of typed threefry keys, shape `s`, holding its uint32 words `data` (shape
    `(*s, 2)`). A pytree with `data` as its one leaf, so it passes through `jit`, `vmap`,
    `grad` and `tree_map` unchanged; under `vmap` each call sees one key.

    >>> import mytorch as mt
    >>> k1, k2 = mt.random.split(mt.random.key(0))
    >>> k1.shape, k1.dtype
    ((), key<fry>)
    """

    __slots__ = ("_data",)
    __array_priority__ = 100

    def __init__(self, data):
        self._data = data

    @property
    def data(self):
        return self._data

    @property
    def shape(self):
        return tuple(self._data.shape[:-1])

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def dtype(self):
        return KEY_DTYPE

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a single key (a 0-d key array)")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a single key (a 0-d key array)")
        return (self[i] for i in range(self.shape[0]))

    def __getitem__(self, idx):
        idx = idx if isinstance(idx, tuple) else (idx,)
        if any(i is Ellipsis for i in idx):
            idx = (*idx, slice(None))  # the word axis stays whole
        return KeyArray(self._data[idx])

    def reshape(self, *shape):
        shape = shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape
        return KeyArray(self._data.reshape((*shape, 2)))

    def ravel(self):
        return self.reshape(-1)

    flatten = ravel

    @property
    def T(self):
        perm = (*range(self.ndim)[::-1], self.ndim)
        return KeyArray(self._data.transpose(perm))

    def __eq__(self, other):
        if not isinstance(other, KeyArray):
            return NotImplemented
        return (self._data == other._data).all(axis=-1)

    def __ne__(self, other):
        if not isinstance(other, KeyArray):
            return NotImplemented
        return (self._data != other._data).any(axis=-1)

    __hash__ = None

    def __array__(self, dtype=None, copy=None):
        raise TypeError("a typed key array cannot be converted to a NumPy array: take its "
                        "uint32 words with mt.random.key_data(keys)")

    def __repr__(self):
        if not hasattr(self._data, "shape"):  # a tree_map put something else in the leaf
            return f"KeyArray(holding {self._data!r})"
        if isinstance(self._data, Tracer):
            return f"KeyArray(traced {self.shape}, dtype=key<fry>)"
        words = np.asarray(self._data)
        return f"Array({self.shape}, dtype=key<fry>) overlaying:\n{words}"


register_pytree_node(KeyArray, lambda k: ((k._data,), None), lambda _, leaves: KeyArray(*leaves))


# ---- checking and wrapping ---------------------------------------------------------------
def _describe(value):
    if isinstance(value, (Array, np.ndarray)):
        return f"{dtypes.short_name(value.dtype)}{list(value.shape)}"
    return f"{type(value).__name__} {value!r:.40}"


def check_key(name, key, allow_batched=False):
    """(uint32[..., 2] words of `key`, whether it was typed). A single key is required
    unless `allow_batched`; anything else raises a TypeError/ValueError naming `name`."""
    if isinstance(key, KeyArray):
        data, typed = key._data, True
    elif isinstance(key, (Array, np.ndarray)):
        if key.dtype != _U32 or key.ndim < 1 or key.shape[-1] != 2:
            raise user_error(TypeError, f"{name}: expected a PRNG key (a typed key from "
                             "mt.random.key(seed), or a raw uint32[2] key from PRNGKey), got "
                             f"{_describe(key)}")
        data, typed = (from_numpy(key) if isinstance(key, np.ndarray) else key), False
    else:
        raise user_error(TypeError, f"{name}: expected a PRNG key, got {_describe(key)}; "
                         "make one with mt.random.key(seed) and pass it instead of the seed")
    if not allow_batched and data.ndim != 1:
        shape = tuple(data.shape[:-1]) if typed else tuple(data.shape)
        raise user_error(ValueError, f"{name} takes a single key, but was given a key array "
                         f"of shape {shape}; map over the keys with mt.vmap")
    return data, typed


def wrap(data, typed):
    """Keys of the kind (typed or raw) that the caller passed in."""
    return KeyArray(data) if typed else data


def canonical_shape(name, shape):
    """`shape` as a tuple of non-negative Python ints, or a clear error."""
    if isinstance(shape, (float, np.floating)) or (
            isinstance(shape, (tuple, list))
            and any(isinstance(d, (float, np.floating)) for d in shape)):
        raise user_error(TypeError, f"{name}: shape must be a tuple of ints, got {shape!r}")
    out = static_shape(name, shape)
    if any(d < 0 for d in out):
        raise user_error(ValueError, f"{name}: shape must have non-negative entries, got "
                         f"{out}")
    return out


# ---- seeding -----------------------------------------------------------------------------
def _seed_words(name, seed):
    """The uint32[2] words of the key for an integer `seed` (JAX's layout: the high and
    low 32 bits of the seed as a 64-bit integer, or (0, seed) for 32-bit seeds)."""
    if isinstance(seed, KeyArray):
        raise user_error(TypeError, f"{name} takes an integer seed, but was given a key")
    if isinstance(seed, (bool, np.bool_)) or not isinstance(
            seed, (int, np.integer, np.ndarray, Array)):
        raise user_error(TypeError, f"{name} takes an integer seed, got {_describe(seed)}")
    if isinstance(seed, int):
        if config.enable_x64:
            if not -(2**63) <= seed < 2**64:
                raise user_error(OverflowError, f"{name}: seed {seed} does not fit in 64 bits")
            value = seed % 2**64
        else:
            value = seed % 2**32  # a 32-bit seed, as JAX canonicalises Python ints
        return from_numpy(np.array([value >> 32, value & 0xFFFFFFFF], _U32))
    seed = from_numpy(np.asarray(seed)) if not isinstance(seed, Array) else seed
    if seed.ndim != 0:
        raise user_error(TypeError, f"{name} takes a scalar seed, got {_describe(seed)}; "
                         "map over seeds with mt.vmap")
    if not dtypes.is_int(seed.dtype):
        raise user_error(TypeError, f"{name} takes an integer seed, got {_describe(seed)}")
    if seed.dtype.itemsize == 8:
        hi = lax.convert_element_type(lax.shift_right_logical(seed, lax.full_like(seed, 32)),
                                      _U32)
    else:
        hi = lax.full((), 0, _U32)
    lo = lax.convert_element_type(seed, _U32)  # wraps modulo 2**32
    return lax.concatenate([lax.reshape(hi, (1,)), lax.reshape(lo, (1,))], 0)


def _check_impl(name, impl):
    """Only threefry2x32 exists: accept its names (and the typed keys' dtype) or None."""
    if impl is not None and impl not in ("threefry2x32", KEY_DTYPE):
        raise user_error(ValueError, f"{name}: only the 'threefry2x32' implementation exists, "
                         f"got impl={impl!r}")


def PRNGKey(seed, *, impl=None):
    """A raw key for an integer seed: a uint32[2] array (JAX's legacy key).

    Args:
      seed: a Python int (64 bits with x64, else taken modulo 2**32) or a 0-d integer array.

    Returns:
      uint32[2]: the high and low 32-bit words of the seed, the same words as JAX's.

    >>> import mytorch as mt
    >>> mt.random.PRNGKey(42)
    Array([ 0, 42], dtype=uint32)
    """
    _check_impl("PRNGKey", impl)
    return _seed_words("PRNGKey", seed)


def key(seed, *, impl=None, dtype=None):
    """A typed key (a 0-d `KeyArray`) for an integer seed; the words are `PRNGKey(seed)`'s.

    >>> import mytorch as mt
    >>> mt.random.key_data(mt.random.key(7))
    Array([0, 7], dtype=uint32)
    """
    _check_impl("key", impl)
    _check_impl("key", dtype)
    return KeyArray(_seed_words("key", seed))


def key_data(keys):
    """The uint32 words `(*keys.shape, 2)` of typed (or raw) keys."""
    data, _ = check_key("key_data", keys, allow_batched=True)
    return data


def wrap_key_data(key_bits_array, *, impl=None, dtype=None):
    """Typed keys of shape `s` from uint32 words of shape `(*s, 2)`.

    Raises:
      TypeError: words that are not uint32 with a last axis of size 2.
    """
    _check_impl("wrap_key_data", impl)
    _check_impl("wrap_key_data", dtype)
    if isinstance(key_bits_array, KeyArray):
        raise user_error(TypeError, "wrap_key_data takes uint32 words, got a typed key")
    data, _ = check_key("wrap_key_data", key_bits_array, allow_batched=True)
    return KeyArray(data)


def key_impl(keys):
    """The name of the keys' implementation: always 'threefry2x32'."""
    check_key("key_impl", keys, allow_batched=True)
    return "threefry2x32"


def clone(key):
    """A copy of `key` (keys are immutable values, so this is `key` itself, as in JAX)."""
    check_key("clone", key, allow_batched=True)
    return key


# ---- hashing counters --------------------------------------------------------------------
def _words(data):
    return lax.index_in_dim(data, 0, axis=data.ndim - 1, keepdims=False), lax.index_in_dim(
        data, 1, axis=data.ndim - 1, keepdims=False)


def hash_counts(data, shape):
    """Threefry of the counters 0, 1, ..., prod(shape)-1 laid out in `shape` (as a 64-bit
    iota split into high and low words) under the key words `data`: two uint32 arrays."""
    size = int(np.prod(shape, dtype=np.int64))
    if size >= 2**32:
        raise user_error(ValueError, f"random bits of shape {shape} need more than 2**32 "
                         "counters")
    hi = lax.full((), 0, _U32)
    lo = lax.reshape(lax.iota(_U32, size), shape) if shape else lax.full((), 0, _U32)
    k1, k2 = _words(data)
    return lax.threefry2x32(k1, k2, hi, lo)


def random_bits(data, bit_width, shape):
    """uint{bit_width} bits of `shape` from the single key `data` (JAX's layout)."""
    bits1, bits2 = hash_counts(data, shape)
    dtype = _UINT[bit_width]
    if bit_width == 64:
        hi = lax.convert_element_type(bits1, dtype)
        lo = lax.convert_element_type(bits2, dtype)
        return lax.bitwise_or(lax.shift_left(hi, lax.full((), 32, dtype)), lo)
    out = lax.bitwise_xor(bits1, bits2)
    return out if bit_width == 32 else lax.convert_element_type(out, dtype)


def split_data(data, shape):
    """The words `(*shape, 2)` of the keys split from the single key `data`."""
    bits1, bits2 = hash_counts(data, shape)
    return lax.concatenate([lax.expand_dims(bits1, (len(shape),)),
                            lax.expand_dims(bits2, (len(shape),))], len(shape))


# ---- public key operations ---------------------------------------------------------------
def split(key, num=2):
    """Split one key into `num` new keys (an int, or a tuple for a shape of keys).

    Returns:
      Keys of shape `(num,)` (or `num`), of the kind `key` is; raw keys get a trailing 2.

    >>> import mytorch as mt
    >>> mt.random.split(mt.random.PRNGKey(0))
    Array([[1797259609, 2579123966],
           [ 928981903, 3453687069]], dtype=uint32)
    """
    data, typed = check_key("split", key)
    shape = canonical_shape("split", num if isinstance(num, (tuple, list)) else (num,))
    return wrap(_compiled("split", split_data, data, shape), typed)


_COMPILED = {}


def _compiled(name, fn, *args):
    """fn(*args) through a jitted `fn` (the trailing argument static), as JAX compiles its key
    operations: one dispatch of compiled code instead of a dozen eager operations (a split
    costs ~10 us instead of ~300 us); inside a trace it is inlined as usual."""
    from mytorch.jit import jit
    from mytorch.random._common import quiet_call

    compiled = _COMPILED.get(name)
    if compiled is None:
        compiled = _COMPILED[name] = jit(fn, static_argnums=(len(args) - 1,))
    return quiet_call(compiled, *args)


def fold_in(key, data):
    """A new key from `key` and a 32-bit integer `data` (e.g. a step or layer number).

    Args:
      key: a single key. data: a Python int in [0, 2**32) or a 0-d integer array (taken
        modulo 2**32).

    >>> import mytorch as mt
    >>> mt.random.fold_in(mt.random.PRNGKey(0), 1)
    Array([ 928981903, 3453687069], dtype=uint32)
    """
    words, typed = check_key("fold_in", key)
    if isinstance(data, (bool, np.bool_)) or not isinstance(data, (int, np.integer, Array)):
        raise user_error(TypeError, f"fold_in takes an integer `data`, got {_describe(data)}")
    if isinstance(data, int):
        if not 0 <= data < 2**32:
            raise user_error(OverflowError, f"fold_in: data {data} is out of the uint32 range")
        value = from_numpy(np.array(data, _U32))
    else:
        value = from_numpy(np.asarray(data)) if not isinstance(data, Array) else data
        if value.ndim != 0 or not dtypes.is_int(value.dtype):
            raise user_error(TypeError, f"fold_in takes a 0-d integer `data`, got "
                             f"{_describe(data)}; map over it with mt.vmap")
        value = lax.convert_element_type(value, _U32)
    return wrap(_compiled("fold_in", _fold_in_data, words, value, None), typed)


def _fold_in_data(words, value, _static):
    k1, k2 = _words(words)
    out1, out2 = lax.threefry2x32(k1, k2, lax.full((), 0, _U32), value)
    return lax.concatenate([lax.reshape(out1, (1,)), lax.reshape(out2, (1,))], 0)


def bits(key, shape=(), dtype=None):
    """Uniform random bits: unsigned integers of `shape` and `dtype` (uint8, uint16, uint32
    or, with x64, uint64; the default is uint32, uint64 with x64).

    >>> import mytorch as mt
    >>> mt.random.bits(mt.random.key(0), (3,))
    Array([4070199207, 4202968722, 1427181096], dtype=uint32)
    """
    data, _ = check_key("bits", key)
    if dtype is None:
        dtype = np.uint64 if config.enable_x64 else np.uint32
    dtype = dtypes.canonicalize(dtype, explicit=True)
    if not dtypes.is_unsigned_int(dtype):
        raise user_error(ValueError, f"bits: dtype must be an unsigned int dtype, got {dtype}")
    return random_bits(data, dtype.itemsize * 8, canonical_shape("bits", shape))
