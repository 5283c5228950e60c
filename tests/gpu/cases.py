"""The table the primitive tests run: one `Case` per representative call of a public
function, its arguments drawn from a seeded generator, which arguments to differentiate,
and tolerances where the dtype's default is not right.

`cases_elementwise.py` and `cases_other.py` hold the rows; `ALL` gathers them. A test on
the CPU (`test_case_table.py`) checks that the rows, traced, use every primitive that is
not covered elsewhere in this folder (collectives in test_nccl.py, pmap...).
"""

import dataclasses
import zlib
from collections.abc import Callable

import numpy as np

from tests.gpu.compare import BF16

F16, F32, F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)
C64, C128 = np.dtype(np.complex64), np.dtype(np.complex128)
I8, I32, U8, U32 = (np.dtype(t) for t in (np.int8, np.int32, np.uint8, np.uint32))
I64 = np.dtype(np.int64)
BOOL = np.dtype(bool)
FLOATS = (F32, F16, BF16)          # the float dtypes every float case runs in
SHORT = {F16: "f16", BF16: "bf16", F32: "f32", F64: "f64", C64: "c64", C128: "c128",
         I8: "i8", I32: "i32", U8: "u8", U32: "u32", I64: "i64", BOOL: "bool"}


@dataclasses.dataclass(frozen=True)
class Case:
    """One call to compare across devices.

    name: unique test id.
    fn: fn(*arrays) -> array or pytree of arrays (parameters are bound in the closure).
    args: one builder per argument, builder(rng) -> NumPy array.
    grad: positions of the arguments to differentiate (float32/float64 ones); () for none.
    tol: (rtol, atol) for the values, where the dtype's default (compare.TOL) is too tight.
    grad_tol: (rtol, atol) for the gradients, likewise.
    x64: run with 64-bit types enabled (float64, complex128, int64 arguments).
    jit: also compare `jit(fn)` (the compiled path for non-elementwise primitives).
    """

    name: str
    fn: Callable
    args: tuple
    grad: tuple = ()
    tol: tuple | None = None
    grad_tol: tuple | None = None
    x64: bool = False
    jit: bool = False

    def draw(self):
        """The arguments as NumPy arrays, the same on every call (seeded by the name)."""
        rng = np.random.default_rng(zlib.crc32(self.name.encode()))
        return [build(rng) for build in self.args]


def uniform(shape, lo=-2.0, hi=2.0, dtype=F32):
    """Uniform floats in [lo, hi) (complex: real and imaginary parts each)."""
    dtype = np.dtype(dtype)

    def build(rng):
        x = rng.uniform(lo, hi, shape)
        if dtype.kind == "c":
            x = x + 1j * rng.uniform(lo, hi, shape)
        return np.asarray(x).astype(dtype)

    return build


def ints(shape, lo, hi, dtype=I32):
    """Uniform integers in [lo, hi)."""
    return lambda rng: np.asarray(rng.integers(lo, hi, shape)).astype(dtype)


def bools(shape):
    return lambda rng: np.asarray(rng.random(shape) < 0.5)


def const(value, dtype=None):
    """A fixed array (special values, index tables)."""
    return lambda rng: np.asarray(value, dtype=dtype)


def spd(n, batch=(), dtype=F32):
    """Symmetric positive definite matrices [*batch, n, n], well conditioned."""

    def build(rng):
        a = rng.standard_normal((*batch, n, n))
        return (a @ np.swapaxes(a, -1, -2) / n + np.eye(n)).astype(dtype)

    return build


def well_conditioned(n, batch=(), dtype=F32):
    """Matrices [*batch, n, n] with a dominant diagonal (far from singular)."""

    def build(rng):
        return (rng.standard_normal((*batch, n, n)) + 3 * np.eye(n)).astype(dtype)

    return build


def permutation_values(shape, dtype=F32):
    """Distinct values (no ties, so sorts and top_k agree on the order)."""

    def build(rng):
        size = int(np.prod(shape))
        return (rng.permutation(size).reshape(shape) / size - 0.5).astype(dtype)

    return build


def all_cases():
    """Every row of the table (elementwise first)."""
    from tests.gpu import cases_elementwise, cases_other

    return cases_elementwise.CASES + cases_other.CASES
