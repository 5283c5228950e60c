"""`a @ b.T` with a transposed C-contiguous `b`: the swapped product and a compiled transpose
of the result, or a compiled transpose of a small `b` first.

OpenBLAS computes `a @ b.T` (a f32[m, k], b f32[n, k], both C-contiguous) markedly slower
than `b @ a.T` when m is small against n: it packs the transposed `b` column by column.
`b @ a.T` is the same product with the roles swapped, and its result is the wanted one
transposed; a tiled transpose (a compiled generalized ufunc, `transposer`) brings it back to
C order for much less than the difference (measured here: m=128, n=512, k=512: 760 us
against 690 + 12 us; m=64, n=1024, k=512: 910 against 720 us). Both orders compute every
element as the same dot product of a row of `a` and a row of `b` through the same kernels, so
the values are those of the plain product up to BLAS's own choice of summation order.

Where `b` is small (a layer's weights in the backward pass, `dz @ W.T`), transposing `b`
itself into C order (`W.T` copied) and taking the plain product `a @ W.T.copy()` is faster
still: float32, m=128, n=256, k=256: 204-287 us as NT against 187-232 us (dz of a 10-class
output layer, m=128, n=512, k=10: 27-42 against 19-31 us). In float64 the copy loses (the
transpose is not vectorised there, and OpenBLAS's NT dgemm loses little).

`pays(m, n, k, dtype)` and `copies(m, n, k, dtype)` are the measured rules, applied by
shapes where the product is traced (jit) or run (eager); `matmul` and `matmul_copied` the
runtimes, which look at the operands' layouts and take the plain product unless `b` is a
transposed C-contiguous matrix (and, to swap, `a` C-contiguous), or where the transpose
cannot be built.
"""

import functools

import numpy as np

from mytorch.backends.numpy import native

MAX_ROWS = 256  # m: larger products are as fast as NT (or faster: m=512 loses 5-8 %)
MIN_RATIO = 4  # n / m
MIN_WORK = 1 << 22  # m * n * k: below, the transpose eats the gain
# copying b transposed (float32; where the swap does not apply): measured on a grid of
# m 32-512, n 10-1024, k 10-512; with larger b (n * k) or n the NT product is as fast
COPY_MIN_ROWS = 32
COPY_MAX_COLS = 512  # n (m=256, n=1024, k=10: the copy lost 13 %)
COPY_MAX_B = 1 << 17  # n * k
COPY_MIN_WORK = 1 << 18  # m * n * k: tiny products (32 x 10 x 512) lose to the call

_BODY = r"""
template <typename T>
static inline void tile(const char *in, char *out, npy_intp s_in_n, npy_intp s_in_m,
                        npy_intp s_out_m, npy_intp s_out_n, npy_intp n, npy_intp m) {
  for (npy_intp j = 0; j < n; ++j)
    for (npy_intp i = 0; i < m; ++i)
      *(T *)(out + i * s_out_m + j * s_out_n) = *(const T *)(in + j * s_in_n + i * s_in_m);
}
#ifdef __AVX__
/* out (8 rows of ldo floats) = the transpose of in (8 rows of ldi floats) */
static inline void tr8(const float *in, npy_intp ldi, float *out, npy_intp ldo) {
  __m256 r0 = _mm256_loadu_ps(in), r1 = _mm256_loadu_ps(in + ldi),
         r2 = _mm256_loadu_ps(in + 2 * ldi), r3 = _mm256_loadu_ps(in + 3 * ldi),
         r4 = _mm256_loadu_ps(in + 4 * ldi), r5 = _mm256_loadu_ps(in + 5 * ldi),
         r6 = _mm256_loadu_ps(in + 6 * ldi), r7 = _mm256_loadu_ps(in + 7 * ldi);
  __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1),
         t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3),
         t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5),
         t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
  __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE),
         s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE),
         s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE),
         s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  _mm256_storeu_ps(out, _mm256_permute2f128_ps(s0, s4, 0x20));
  _mm256_storeu_ps(out + ldo, _mm256_permute2f128_ps(s1, s5, 0x20));
  _mm256_storeu_ps(out + 2 * ldo, _mm256_permute2f128_ps(s2, s6, 0x20));
  _mm256_storeu_ps(out + 3 * ldo, _mm256_permute2f128_ps(s3, s7, 0x20));
  _mm256_storeu_ps(out + 4 * ldo, _mm256_permute2f128_ps(s0, s4, 0x31));
  _mm256_storeu_ps(out + 5 * ldo, _mm256_permute2f128_ps(s1, s5, 0x31));
  _mm256_storeu_ps(out + 6 * ldo, _mm256_permute2f128_ps(s2, s6, 0x31));
  _mm256_storeu_ps(out + 7 * ldo, _mm256_permute2f128_ps(s3, s7, 0x31));
}
#endif
/* out (m, n) = transpose of in (n, m), in blocks of B x B */
template <typename T>
static void transpose(char **args, const npy_intp *dims, const npy_intp *steps) {
  const npy_intp B = 32, n = dims[1], m = dims[2];
  const npy_intp s_in_n = steps[2], s_in_m = steps[3], s_out_m = steps[4], s_out_n = steps[5];
  for (npy_intp o = 0; o < dims[0]; ++o) {
    const char *in = args[0] + o * steps[0];
    char *out = args[1] + o * steps[1];
    for (npy_intp j0 = 0; j0 < n; j0 += B)
      for (npy_intp i0 = 0; i0 < m; i0 += B) {
        const npy_intp bn = n - j0 < B ? n - j0 : B, bm = m - i0 < B ? m - i0 : B;
        const char *src = in + j0 * s_in_n + i0 * s_in_m;
        char *dst = out + i0 * s_out_m + j0 * s_out_n;
#ifdef __AVX__
        if (sizeof(T) == 4 && s_in_m == 4 && s_out_n == 4 && bn == B && bm == B &&
            s_in_n % 4 == 0 && s_out_m % 4 == 0) {
          for (npy_intp j = 0; j < B; j += 8)
            for (npy_intp i = 0; i < B; i += 8)
              tr8((const float *)(src + j * s_in_n + i * 4), s_in_n / 4,
                  (float *)(dst + i * s_out_m + j * 4), s_out_m / 4);
          continue;
        }
#endif
        tile<T>(src, dst, s_in_n, s_in_m, s_out_m, s_out_n, bn, bm);
      }
  }
}
"""

_PREAMBLE = "#ifdef __AVX__\n#include <immintrin.h>\n#endif\n"
_LOOP = ("static void mt_loop(char **args, const npy_intp *dims, const npy_intp *steps, "
         "void *) {{ transpose<{t}>(args, dims, steps); }}\n")


def pays(m, n, k, dtype):
    """Whether `a @ b.T` of a [m, k] and b [n, k] (2-D, float32 or float64; None: mixed
    dtypes) is faster as the swapped product and a transpose (the rule measured here)."""
    return (dtype is not None and np.dtype(dtype) in (np.float32, np.float64) and m <= MAX_ROWS
            and n >= MIN_RATIO * m and m * n * k >= MIN_WORK and native.available())


def copies(m, n, k, dtype):
    """Whether `a @ b.T` of a [m, k] and b [n, k] (2-D, float32) is faster as the plain
    product with `b` transposed into C order first, where `pays` does not hold."""
    return (dtype is not None and np.dtype(dtype) == np.float32 and m >= COPY_MIN_ROWS
            and n <= COPY_MAX_COLS and n * k <= COPY_MAX_B and m * n * k >= COPY_MIN_WORK
            and not pays(m, n, k, dtype) and native.available())


@functools.lru_cache(maxsize=None)
def transposer(dtype):
    """A generalized ufunc "(n,m)->(m,n)" copying its operand transposed, for float32 or
    float64; None where it cannot be built (compiled loops unavailable or failing)."""
    if not native.available():
        return None
    ctype = "float" if np.dtype(dtype) == np.float32 else "double"
    body = _BODY + _LOOP.format(t=ctype)
    num = np.dtype(dtype).num
    try:
        (fn,) = native.compile_ufuncs([(body, (num, num), 1, 1, "transpose", "(n,m)->(m,n)")],
                                     _PREAMBLE)
    except (native.NativeCompileError, OSError, ImportError) as e:
        native.failed(e)
        return None
    return fn


def matmul(a, b, out=None):
    """`a @ b` of float a [m, k] and b [k, n] (the caller has checked `pays`): when `b` is a
    transposed C-contiguous matrix and `a` is C-contiguous, computed as `b.T @ a.T` and
    transposed back; otherwise as it is written."""
    bt = b.T
    if a.dtype != b.dtype or not (bt.flags.c_contiguous and a.flags.c_contiguous):
        return np.matmul(a, b, out=out)
    transpose = transposer(a.dtype)
    if transpose is None:
        return np.matmul(a, b, out=out)
    swapped = np.matmul(bt, a.T)
    return transpose(swapped) if out is None else transpose(swapped, out=out)


def matmul_copied(a, b, out=None):
    """`a @ b` of float a [m, k] and b [k, n] (the caller has checked `copies`): when `b` is
    a transposed C-contiguous matrix, computed as `a @ b.copy()` with the copy made by the
    compiled transpose; otherwise as it is written."""
    bt = b.T
    if a.dtype != b.dtype or not bt.flags.c_contiguous:
        return np.matmul(a, b, out=out)
    transpose = transposer(a.dtype)
    if transpose is None:
        return np.matmul(a, b, out=out)
    return np.matmul(a, transpose(bt), out=out)
