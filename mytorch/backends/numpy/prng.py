"""NumPy kernels of the threefry-2x32 random-bit primitive (mytorch/lax/prng.py).

Whole-array uint32 arithmetic (NumPy wraps modulo 2**32), twenty rounds unrolled in five
groups of four with a key injection after each group; no Python loop over elements. The
rounds update two result buffers and one scratch buffer in place.

Written for any array module (`xp`, NumPy by default): the GPU backend registers the same
kernel with CuPy's (backends/cupy/kernels_prng.py), whose uint32 arithmetic also wraps
modulo 2**32 with logical shifts, so the bits are the same. Only NumPy takes the scalar
shortcut for tiny inputs (on a GPU it would cost a copy to the host).

Where compiled loops are available (native.py), NumPy arrays go through one compiled ufunc
instead, the same rounds in C on each element's registers (about 10x faster than the
115 whole-array passes); the bits are the same.
"""

import functools
import math

import numpy as np

from mytorch.backends.numpy import native, numpy_backend
from mytorch.lax import prng

_U32 = np.uint32
_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = _U32(0x1BD11BDA)  # Threefish's key-schedule constant


# up to this many counter pairs the rounds run on Python ints: a key split or fold_in hashes
# one or two pairs, where 115 whole-array NumPy calls would cost ~100x the arithmetic
_SCALAR_SIZE = 8
_MASK = 0xFFFFFFFF


def _threefry_scalar(k1, k2, x, y):
    """One counter pair through the 20 rounds, on Python ints (the same schedule)."""
    ks = (k1, k2, k1 ^ k2 ^ 0x1BD11BDA)
    x, y = (x + k1) & _MASK, (y + k2) & _MASK
    for group in range(5):
        for r in _ROTATIONS[group % 2]:
            x = (x + y) & _MASK
            y = (((y << r) | (y >> (32 - r))) & _MASK) ^ x
        x = (x + ks[(group + 1) % 3]) & _MASK
        y = (y + ks[(group + 2) % 3] + group + 1) & _MASK
    return x, y


def _rounds_c(k1, k2, x1, x2, out1, out2):
    """C++ statements: the 20 rounds of one counter pair."""
    lines = [f"const uint32_t k0 = {k1}, k1 = {k2}, k2 = k0 ^ k1 ^ 0x1BD11BDAu;",
             "const uint32_t ks[3] = {k0, k1, k2};",
             f"uint32_t x = {x1} + k0, y = {x2} + k1;"]
    for group in range(5):
        for r in _ROTATIONS[group % 2]:
            lines.append(f"x += y; y = ((y << {r}) | (y >> {32 - r})) ^ x;")
        lines.append(f"x += ks[{(group + 1) % 3}]; y += ks[{(group + 2) % 3}] + {group + 1}u;")
    lines.append(f"{out1} = x; {out2} = y;")
    return "\n      ".join(lines)


_LOOP = """static void mt_loop(char **args, const npy_intp *dims, const npy_intp *steps,
                    void *data) {
  const npy_intp n = dims[0];
  if (steps[0] == 0 && steps[1] == 0 && (steps[2] == 0 || steps[2] == 4)
      && (steps[3] == 0 || steps[3] == 4) && steps[4] == 4 && steps[5] == 4) {
    /* one key, each counter word contiguous or one value: vectorised */
    const uint32_t key1 = *(const uint32_t *)args[0], key2 = *(const uint32_t *)args[1];
    const uint32_t *c1 = (const uint32_t *)args[2], *c2 = (const uint32_t *)args[3];
    uint32_t *o1 = (uint32_t *)args[4], *o2 = (uint32_t *)args[5];
    if (steps[2] == 4 && steps[3] == 4) {
      #pragma omp simd
      for (npy_intp i = 0; i < n; i++) {
        @FAST11@
      }
    } else if (steps[3] == 4) {
      const uint32_t hi = c1[0];
      #pragma omp simd
      for (npy_intp i = 0; i < n; i++) {
        @FAST01@
      }
    } else {
      #pragma omp simd
      for (npy_intp i = 0; i < n; i++) {
        @FAST_0@
      }
    }
    return;
  }
  for (npy_intp i = 0; i < n; i++) {
    @SLOW@
  }
}
"""


@functools.lru_cache(maxsize=None)
def _compiled():
    """The compiled threefry ufunc (key1, key2, x1, x2) -> (x, y), or None."""
    if not native.available():
        return None
    at = lambda k: f"*(const uint32_t *)(args[{k}] + i * steps[{k}])"  # noqa: E731
    put = lambda k: f"*(uint32_t *)(args[{k}] + i * steps[{k}])"  # noqa: E731
    body = _LOOP.replace("@SLOW@", _rounds_c(at(0), at(1), at(2), at(3), put(4), put(5)))
    for tag, c1, c2 in (("11", "c1[i]", "c2[i]"), ("01", "hi", "c2[i]"),
                        ("_0", "c1[i * (steps[2] / 4)]", "c2[0]")):
        body = body.replace(f"@FAST{tag}@", _rounds_c("key1", "key2", c1, c2, "o1[i]", "o2[i]"))
    u32 = np.dtype(_U32).num
    try:
        return native.compile_ufuncs([(body, (u32,) * 6, 4, 2, "threefry2x32", None)])[0]
    except (native.NativeCompileError, OSError, ImportError) as e:
        native.failed(e)
        return None


@numpy_backend.register(prng.threefry2x32_p)
def _threefry2x32(key1, key2, x1, x2, xp=np):
    key1, key2, x1, x2 = (xp.asarray(a, _U32) for a in (key1, key2, x1, x2))
    shape = np.broadcast_shapes(key1.shape, key2.shape, x1.shape, x2.shape)
    if xp is np and (fn := _compiled()) is not None:
        return list(fn(key1, key2, x1, x2))
    if xp is np and math.prod(shape) <= _SCALAR_SIZE:
        pairs = [_threefry_scalar(*map(int, t)) for t in zip(
            *(np.broadcast_to(a, shape).ravel() for a in (key1, key2, x1, x2)))]
        out = np.array(pairs, _U32).reshape(len(pairs), 2)
        return [out[:, 0].reshape(shape).copy(), out[:, 1].reshape(shape).copy()]
    ks = (key1, key2, key1 ^ key2 ^ _PARITY)
    x = xp.empty(shape, _U32)
    y = xp.empty(shape, _U32)
    if math.prod(shape) == 0:  # (another module's size-0 operands)
        return [x, y]
    scratch = xp.empty(shape, _U32)
    xp.add(x1, ks[0], out=x)
    xp.add(x2, ks[1], out=y)
    for group in range(5):
        for r in _ROTATIONS[group % 2]:
            x += y
            xp.left_shift(y, _U32(r), out=scratch)  # y = rotl(y, r) ^ x
            y >>= _U32(32 - r)
            y |= scratch
            y ^= x
        x += ks[(group + 1) % 3]
        y += ks[(group + 2) % 3]
        y += _U32(group + 1)
    return [x, y]
