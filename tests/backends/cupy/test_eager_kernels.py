"""The GPU backend's eager kernels (backends/cupy/kernels_*.py): every primitive that needs
one has one; their Python logic, run with NumPy buffers (`xp` is NumPy), gives the NumPy
backend's results on hypothesis-drawn shapes, dtypes and params (0-d, size-0 axes, negative
axes); the helpers of their CuPy-only paths (ranked scatter rounds, potrf's failure mask,
the lexsort of stable argsorts, the log-step scan) agree with NumPy's own functions; and no
kernel module calls a NumPy function on a buffer (which would copy device data to the host)
outside the documented host fallback.

CuPy's own behaviour (cuBLAS, cuSOLVER, CUB sorts, atomics) is only checked on a GPU, by
the gpu-marked suite in tests/gpu; nothing here runs on one.
"""

import ast
import importlib
import pathlib

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import mytorch.numpy  # noqa: F401  (defines every primitive)
from mytorch.backends.cupy import kernels_all  # noqa: F401
from mytorch.backends.cupy import kernels_common, kernels_indexing, kernels_linalg
from mytorch.backends.cupy import kernels_sorting
from mytorch.backends.cupy.expressions import has_expression
from mytorch.backends.cupy.kernels import KERNELS
from mytorch.checkpoint import name_p
from mytorch.core.ad_util import add_any_p, zeros_p
from mytorch.core.backend import get_backend
from mytorch.core.primitive import registry
from mytorch.lax import prng
from mytorch.lax import reductions as r
from mytorch.lax import sorting as so
from mytorch.lax import structural as s
from tests.backends.cupy.test_eager_kernels_programs import assert_close
from tests.strategies import arrays, shapes

CPU = get_backend("cpu")
BF16 = np.dtype(ml_dtypes.bfloat16)
KERNEL_DIR = pathlib.Path(kernels_common.__file__).parent


def _cpu_kernel(prim):
    try:
        return CPU.kernel(prim)
    except NotImplementedError:
        return None


def _check(prim, *bufs, **params):
    """The GPU kernel of `prim` on NumPy buffers equals the NumPy kernel."""
    want = CPU.kernel(prim)(*bufs, **params)
    got = KERNELS[prim](*[np.array(b, copy=True) for b in bufs], **params)
    assert_close(prim.name, got, want)


# ---- coverage ----------------------------------------------------------------------------
def test_every_primitive_has_a_gpu_kernel():
    """Every primitive the NumPy backend runs eagerly has a GPU kernel, but elementwise
    primitives with a CUDA expression (generated kernels), call primitives (host loops
    over compiled bodies) and the NumPy code generator's own (kind "backend")."""
    need = [p for p in registry().values()
            if p.kind not in ("call", "backend") and not has_expression(p)
            and _cpu_kernel(p) is not None]
    missing = sorted(p.name for p in need if p not in KERNELS)
    assert not missing, f"primitives without a GPU eager kernel: {missing}"
    assert len(need) >= 50


def test_only_eig_falls_back_to_the_host():
    on_host = sorted(p.name for p, fn in KERNELS.items() if getattr(fn, "runs_on_host", False))
    assert on_host == ["eig"]


# ---- no host copies ------------------------------------------------------------------------
# NumPy functions that take no buffer: dtypes, their limits, shape arithmetic, error flags
_ALLOWED_NP = {"dtype", "iinfo", "finfo", "errstate", "broadcast_shapes"}


def _is_numpy_branch(test):
    """Whether an `if` test is `xp is np` (or starts an `and` with it): its body runs on
    NumPy operands only."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        test = test.values[0]
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name)
            and test.left.id == "xp" and isinstance(test.ops[0], ast.Is)
            and isinstance(test.comparators[0], ast.Name) and test.comparators[0].id == "np")


def _np_calls(tree):
    """(line, dotted name) of every call of `np.<name>...(...)` outside functions allowed
    to touch the host (kernels_common's `on_host` and `_to_host`, indexing's
    `host_value` of a Python scalar) and outside `if xp is np:` branches."""
    out = []

    class Visitor(ast.NodeVisitor):
        def visit_FunctionDef(self, node):
            if node.name not in ("on_host", "_to_host", "host_value"):
                self.generic_visit(node)

        def visit_If(self, node):
            if _is_numpy_branch(node.test):
                for child in node.orelse:
                    self.visit(child)
            else:
                self.generic_visit(node)

        def visit_Call(self, node):
            f, chain = node.func, []
            while isinstance(f, ast.Attribute):
                chain.append(f.attr)
                f = f.value
            if isinstance(f, ast.Name) and f.id in ("np", "numpy") and chain:
                if chain[-1] not in _ALLOWED_NP:
                    out.append((node.lineno, ".".join([f.id, *reversed(chain)])))
            fn = node.func
            if isinstance(fn, ast.Attribute) and (fn.attr == "asnumpy" or (
                    fn.attr == "get" and not node.args and not node.keywords
                    and not (isinstance(fn.value, ast.Name) and fn.value.id == "_MODULE"))):
                out.append((node.lineno, fn.attr))  # CuPy's copies to the host
            self.generic_visit(node)

    Visitor().visit(tree)
    return out


def test_kernels_never_copy_buffers_to_the_host():
    """An AST scan: kernels_*.py call NumPy only for dtypes, limits and shapes (so nothing
    moves device data to the host silently; the host fallback is kernels_common.on_host)."""
    files = sorted(KERNEL_DIR.glob("kernels_*.py"))
    assert len(files) >= 10
    bad = [f"{f.name}:{line}: {name}" for f in files
           for line, name in _np_calls(ast.parse(f.read_text()))]
    assert not bad, "NumPy calls on buffers in GPU kernels:\n" + "\n".join(bad)


def _shared_code(path):
    """The parts of a NumPy backend module that GPU kernels run: every function with an `xp`
    parameter (and what it nests), every class whose `__init__` takes `xp`, and the
    functions kernels_*.py import from it by name."""
    tree = ast.parse(path.read_text())
    module = "mytorch.backends.numpy." + path.stem
    imported = set()
    for f in KERNEL_DIR.glob("kernels_*.py"):
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == module:
                imported |= {a.name for a in node.names}

    def takes_xp(fn):
        args = fn.args
        return any(a.arg == "xp" for a in args.posonlyargs + args.args + args.kwonlyargs)

    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and (takes_xp(node) or node.name in imported):
            out.append(node)
        elif isinstance(node, ast.ClassDef) and any(
                isinstance(n, ast.FunctionDef) and n.name == "__init__" and takes_xp(n)
                for n in node.body):
            out.append(node)
    return out


def test_shared_numpy_kernels_never_copy_buffers_to_the_host():
    """The same scan over the NumPy backend's kernels that the GPU backend registers
    (written for any array module, `xp=`; not the documented host fallback, eig): outside
    `if xp is np:` branches they call NumPy only for dtypes, limits and shapes."""
    shared = {f.split(".")[-1] for f in (
        fn.__wrapped__.__module__ for fn in KERNELS.values()
        if hasattr(fn, "__wrapped__") and not getattr(fn, "runs_on_host", False))
        if f.startswith("mytorch.backends.numpy.")}
    assert {"attention", "convolution", "fft", "indexing", "linalg", "prng",
            "structural"} <= shared
    bad = []
    for name in sorted(shared | {"dot", "reductions"}):
        path = pathlib.Path(importlib.import_module(
            f"mytorch.backends.numpy.{name}").__file__)
        nodes = _shared_code(path)
        assert nodes or name == "reductions", f"no shared code found in {path.name}"
        bad += [f"{path.name}:{line}: {call}" for node in nodes
                for line, call in _np_calls(ast.Module(body=[node], type_ignores=[]))]
    assert not bad, "NumPy calls on buffers in shared kernels:\n" + "\n".join(bad)


def test_the_scan_sees_a_host_copy():
    src = "def k(x):\n    return np.sort(x) + np.dtype('f4').itemsize + x.get()\n"
    assert [n for _, n in _np_calls(ast.parse(src))] == ["np.sort", "get"]
    src = ("def k(x, xp):\n    if xp is np and x.size < 8:\n        return np.sort(x)\n"
           "    else:\n        return np.cumsum(x)\n")
    assert [n for _, n in _np_calls(ast.parse(src))] == ["np.cumsum"]


# ---- structural ----------------------------------------------------------------------------
@given(x=arrays(st.sampled_from([np.float32, np.int8, BF16, np.bool_]), shapes(max_dims=3)),
       data=st.data())
def test_structural(x, data):
    n = x.ndim
    perm = tuple(data.draw(st.permutations(range(n))))
    _check(s.transpose_p, x, permutation=perm)
    _check(s.rev_p, x, dimensions=tuple(data.draw(st.sets(st.integers(0, max(n - 1, 0)),
                                                          max_size=n))) if n else ())
    _check(s.reshape_p, x, new_sizes=(x.size,), dimensions=perm or None)
    _check(s.broadcast_in_dim_p, x, shape=(2, *x.shape), broadcast_dimensions=tuple(
        range(1, n + 1)))
    _check(s.squeeze_p, x.reshape(1, *x.shape), dimensions=(0,))
    _check(s.concatenate_p, x.reshape(1, -1), x.reshape(1, -1), dimension=1)
    if n:
        lo = tuple(data.draw(st.integers(0, d)) for d in x.shape)
        hi = tuple(data.draw(st.integers(a, d)) for a, d in zip(lo, x.shape, strict=True))
        step = tuple(data.draw(st.integers(1, 3)) for _ in x.shape)
        _check(s.slice_p, x, start_indices=lo, limit_indices=hi, strides=step)
    config = tuple((data.draw(st.integers(-2, 2)), data.draw(st.integers(-1, 2)),
                    data.draw(st.integers(0, 2))) for _ in x.shape)
    try:
        want = CPU.kernel(s.pad_p)(x, np.zeros((), x.dtype), padding_config=config)
    except ValueError:  # a negative edge past the dimension: the primitive rejects it too
        return
    got = KERNELS[s.pad_p](x, np.zeros((), x.dtype), padding_config=config)
    assert_close("pad", got, want)


@pytest.mark.parametrize("dtype", [np.int32, np.float32, BF16, np.uint8])
def test_iota_and_zeros_allocate_with_the_array_module(dtype):
    _check(s.iota_p, dtype=np.dtype(dtype), shape=(3, 0, 4), dimension=2)
    _check(s.iota_p, dtype=np.dtype(dtype), shape=(2, 5), dimension=1)
    _check(zeros_p, shape=(2, 3), dtype=np.dtype(dtype), weak_type=False)

    class Module:  # records what a kernel without operands allocates with
        calls = []

        def __getattr__(self, name):
            self.calls.append(name)
            return getattr(np, name)

    with kernels_common.array_module(Module()):
        KERNELS[s.iota_p](dtype=np.dtype(dtype), shape=(2,), dimension=0)
        KERNELS[zeros_p](shape=(2,), dtype=np.dtype(dtype), weak_type=False)
    assert "arange" in Module.calls and "zeros" in Module.calls
    assert kernels_common.creation_module() is np


def test_add_any_and_name():
    x = np.linspace(-3, 3, 6, dtype=np.float32).reshape(2, 3)
    for dt in (np.float32, BF16, np.float16, np.int8):
        _check(add_any_p, x.astype(dt), (x * 0.7).astype(dt))
    out = KERNELS[name_p](x, name="n")
    assert out is not x and not np.shares_memory(out, x)
    np.testing.assert_array_equal(out, x)


# ---- reductions ----------------------------------------------------------------------------
_RED_DTYPES = st.sampled_from([np.float32, np.float16, BF16, np.int8, np.uint16, np.int32,
                               np.bool_])


@given(x=arrays(_RED_DTYPES, shapes(max_dims=3), allow_nan=True, min_value=-4, max_value=4),
       data=st.data())
def test_reductions(x, data):
    axes = tuple(sorted(data.draw(st.sets(st.integers(0, max(x.ndim - 1, 0)),
                                          max_size=x.ndim)))) if x.ndim else ()
    kinds = [r.reduce_max_p, r.reduce_min_p]
    if x.dtype != np.bool_:
        kinds += [r.reduce_sum_p, r.reduce_prod_p]
    if x.dtype.kind in "iub":
        kinds += [r.reduce_and_p, r.reduce_or_p, r.reduce_xor_p]
    for prim in kinds:
        _check(prim, x, axes=axes)
    if x.ndim and x.shape[0] and x.dtype != np.bool_:
        for prim in (r.argmax_p, r.argmin_p):
            _check(prim, x, axes=(0,), index_dtype=np.dtype(np.int32))


@given(x=arrays(st.sampled_from([np.float32, np.float16, BF16, np.int16, np.uint8]),
                shapes(min_dims=1, max_dims=3, max_side=9), allow_nan=True, min_value=-2,
                max_value=2),
       data=st.data())
def test_cumulative_reductions(x, data):
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    reverse = data.draw(st.booleans())
    prims = [r.cumsum_p, r.cummax_p, r.cummin_p, r.cumprod_p]
    if x.dtype.kind == "f" or x.dtype == BF16:
        prims.append(r.cumlogsumexp_p)
    for prim in prims:
        _check(prim, x, axis=axis, reverse=reverse)


@given(x=arrays(np.float64, shapes(min_dims=1, max_dims=2, max_side=40), allow_nan=True,
                allow_inf=True), data=st.data())
def test_log_scan_is_accumulate(x, data):
    axis = data.draw(st.integers(0, x.ndim - 1))
    for op in (np.maximum, np.minimum):
        np.testing.assert_array_equal(kernels_common.log_scan(np, op, x, axis),
                                      op.accumulate(x, axis=axis))


# ---- sorting -------------------------------------------------------------------------------
@given(x=arrays(st.sampled_from([np.float32, BF16, np.int8, np.uint32, np.bool_]),
                shapes(min_dims=1, max_dims=3, max_side=6), allow_nan=True, allow_inf=True,
                min_value=-3, max_value=3),
       data=st.data())
def test_sort_and_top_k(x, data):
    dim = data.draw(st.integers(-x.ndim, x.ndim - 1))
    _check(so.sort_p, x, dimension=dim, is_stable=True, num_keys=1)
    y = (np.arange(x.size) % 3).reshape(x.shape).astype(np.int32)
    _check(so.sort_p, y, x, y, dimension=dim, is_stable=True, num_keys=2)
    _check(so.top_k_p, x, k=data.draw(st.integers(0, x.shape[-1])))


@given(keys=st.lists(arrays(np.int8, (7,), min_value=0, max_value=2), min_size=1,
                     max_size=3))
def test_lexsort_of_stable_argsorts_is_np_lexsort(keys):
    got = kernels_sorting.lexsort(np, keys, -1)
    np.testing.assert_array_equal(got, np.lexsort(keys[::-1]))


# ---- random bits ---------------------------------------------------------------------------
@given(shape=shapes(max_dims=2, max_side=6), data=st.data())
def test_threefry_bits(shape, data):
    u32 = arrays(np.uint32, shape)
    k1, k2 = data.draw(arrays(np.uint32, ())), data.draw(arrays(np.uint32, ()))
    _check(prng.threefry2x32_p, k1, k2, data.draw(u32), data.draw(u32))


# ---- scatter rounds, potrf's failure mask, the host fallback ------------------------------
@given(flat=arrays(np.int64, st.integers(0, 30).map(lambda n: (n,)), min_value=0,
                   max_value=5),
       kind=st.sampled_from(["add", "multiply", "minimum", "maximum", None]), data=st.data())
def test_ranked_scatter_rounds_are_ufunc_at(flat, kind, data):
    """The CuPy path's ranked rounds apply duplicates in NumPy's order (bit for bit)."""
    updates = data.draw(arrays(np.float32, flat.shape, allow_nan=True))
    target = data.draw(arrays(np.float32, (6,)))
    want = target.copy()
    if kind is None:  # (NumPy's fancy assignment: the last write wins)
        want[flat] = updates
    else:
        with np.errstate(invalid="ignore"):
            getattr(np, kind).at(want, flat, updates)
    got = target.copy()
    op = None if kind is None else getattr(np, kind)
    kernels_indexing._ranked_update(np, op, got, flat, updates)
    np.testing.assert_array_equal(got, want)


def test_ranks_count_earlier_equal_positions():
    order, rank = kernels_indexing.ranks(np, np.array([3, 1, 3, 3, 1, 0]))
    np.testing.assert_array_equal(order, [5, 1, 4, 0, 2, 3])
    np.testing.assert_array_equal(rank, [0, 0, 1, 0, 1, 2])


@given(shape=shapes(min_dims=1, max_dims=3, min_side=1), data=st.data())
def test_device_start_windows_are_the_slices(shape, data):
    """The open-mesh window (for starts held on a GPU) selects the clamped slices."""
    sizes = tuple(data.draw(st.integers(0, n)) for n in shape)
    starts = tuple(data.draw(st.integers(-3, n + 3)) for n in shape)
    x = np.arange(np.prod(shape)).reshape(shape)
    device_starts = [np.int32(v) for v in starts]
    np.testing.assert_array_equal(
        x[kernels_indexing.device_window(np, shape, device_starts, sizes)],
        x[kernels_indexing.window_index(np, shape, starts, sizes)])


def test_potrf_failure_becomes_nans():
    good = np.linalg.cholesky(np.array([[4.0, 2.0], [2.0, 3.0]]))
    stopped = np.array([[2.0, 0.0], [1.0, -0.5]])  # potrf stops at a pivot <= 0
    nan_pivot = np.array([[np.nan, 0.0], [1.0, 1.0]])
    out = kernels_linalg.nan_where_not_positive(np, np.stack([good, stopped, nan_pivot]))
    np.testing.assert_array_equal(out[0], good)
    assert np.isnan(out[1:]).all()


def test_on_host_is_the_numpy_kernel_for_numpy_buffers():
    calls = []

    def kernel(x, *, k):
        calls.append(type(x))
        return [x + k, x * k]

    out = kernels_common.on_host(kernel)(np.ones(3), k=2)
    assert calls == [np.ndarray] and [o.tolist() for o in out] == [[3.0] * 3, [2.0] * 3]


# ---- the CuPy-only branches' decisions, with CuPy's entry points stubbed -------------------
class _StubCupyx:
    """cupyx.scatter_add as CuPy documents it: NumPy's add.at for the dtypes with CUDA
    atomics, TypeError for the others. (Only the kernel's dtype handling is under test.)"""

    @staticmethod
    def scatter_add(a, idx, v):
        if a.dtype not in (np.float32, np.float64, np.int32, np.uint32, np.uint64):
            raise TypeError(f"no atomicAdd for {a.dtype}")
        np.add.at(a, idx, v)


@pytest.mark.parametrize("dtype", [np.int8, np.uint16, np.int32, np.int64, np.uint64,
                                   np.float32, np.complex64, np.bool_])
def test_atomic_add_reinterpretations(dtype, monkeypatch):
    """int64 adds as uint64 and 8/16-bit integers in 32 bits give NumPy's wrapped sums;
    complex and bool are left to the ranked rounds."""
    monkeypatch.setitem(__import__("sys").modules, "cupyx", _StubCupyx)
    rng = np.random.default_rng(0)
    flat = rng.integers(0, 5, 40)
    updates = (rng.integers(-2**62, 2**62, 40) if dtype in (np.int64, np.uint64)
               else rng.integers(-200, 200, 40)).astype(dtype)
    target = (np.arange(5) * 77).astype(dtype)
    want = target.copy()
    np.add.at(want, flat, updates)
    got = target.copy()
    done = kernels_indexing._atomic_add(np, got, flat, updates)
    assert done == (dtype not in (np.complex64, np.bool_))
    if done:
        np.testing.assert_array_equal(got, want)


def test_half_products_use_cublas_f32_accumulation_by_default(monkeypatch):
    """CuPy's default compute type accumulates float16/bfloat16 in float32; a half compute
    type set by the user makes the kernel cast to float32 first."""
    rl = pytest.importorskip("cupy._core._routines_linalg")
    from mytorch.backends.cupy.kernels_dot import half_accumulates_in_f32

    assert half_accumulates_in_f32(np.float16) and half_accumulates_in_f32(BF16)
    monkeypatch.setattr(rl, "get_compute_type", lambda dtype: rl.COMPUTE_TYPE_FP16)
    assert not half_accumulates_in_f32(np.float16)


def _xp_names(tree):
    """Every dotted name `xp.a.b` (also `self.xp.a`) a kernel module uses."""
    out = set()
    for node in ast.walk(tree):
        chain, f = [], node
        while isinstance(f, ast.Attribute):
            chain.append(f.attr)
            f = f.value
        if isinstance(f, ast.Name) and f.id == "self" and chain and chain[-1] == "xp":
            chain.pop()
            f = ast.Name(id="xp")
        if isinstance(f, ast.Name) and f.id == "xp" and chain:
            out.add(".".join(reversed(chain)))
    return out


def test_cupy_has_every_function_the_kernels_call():
    """Each `xp.<name>` the kernels use exists in the installed CuPy (no device needed);
    array methods are not checked."""
    cupy = pytest.importorskip("cupy")
    # and the names kernels look up by string or call through xp_of(...)
    names = {"squeeze", "prod", "min", "argmin", "multiply", "fft.fftn", "fft.ifftn",
             "fft.rfftn", "fft.irfftn", "lib.stride_tricks.sliding_window_view"}
    for f in KERNEL_DIR.glob("kernels_*.py"):
        names |= _xp_names(ast.parse(f.read_text()))
    missing = []
    importlib.import_module("cupy.lib.stride_tricks")
    for name in sorted(names):
        obj = cupy
        for i, part in enumerate(name.split(".")):
            if isinstance(obj, type(cupy)) or i == 0:
                if not hasattr(obj, part):
                    missing.append(name)
                    break
                obj = getattr(obj, part)
    assert len(names) > 40
    assert not missing, f"not in CuPy {cupy.__version__}: {missing}"
