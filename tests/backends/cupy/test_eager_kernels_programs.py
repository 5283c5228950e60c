"""The GPU backend's eager kernels (backends/cupy/kernels_*.py) shadow the NumPy backend's
while real programs run eagerly on the CPU.

Every call of a NumPy kernel that has a GPU kernel also runs the GPU kernel on copies of the
same operands with the same params (NumPy buffers, so `xp` is NumPy) and compares the
results: same shapes and dtypes, equal integers and bools, floats within a tolerance of the
dtype; the GPU kernel must not write its operands nor return a view of one. The programs
reach every kernel with the params real code binds (gather/scatter dimension numbers,
convolution layouts, attention masks, derivatives' kernels).

This checks the kernels' Python logic only. CuPy's own behaviour (cuBLAS, cuSOLVER, CUB
sorts, atomics) is checked on a GPU, by the gpu-marked suite in tests/gpu.
"""

import contextlib

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch import lax
from mytorch.backends.cupy import kernels_all  # noqa: F401  (registers the GPU kernels)
from mytorch.backends.cupy.kernels import KERNELS
from mytorch.checkpoint import name_p
from mytorch.core.backend import get_backend

_RTOL = {"float16": 2e-2, "bfloat16": 5e-2, "float32": 2e-5, "float64": 1e-12,
         "complex64": 2e-5, "complex128": 1e-12}


def assert_close(name, got, want):
    """`got` (the GPU kernel's result) matches `want` (the NumPy kernel's)."""
    if isinstance(want, (list, tuple)):
        assert isinstance(got, (list, tuple)) and len(got) == len(want), name
        for g, w in zip(got, want, strict=True):
            assert_close(name, g, w)
        return
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{name}: shape {got.shape} != {want.shape}"
    assert got.dtype == want.dtype, f"{name}: dtype {got.dtype} != {want.dtype}"
    if want.dtype.kind not in "fcV" or want.dtype.name not in _RTOL:
        np.testing.assert_array_equal(got, want, err_msg=name)
        return
    g, w = got.astype(np.complex128), want.astype(np.complex128)
    finite = np.isfinite(w)
    np.testing.assert_array_equal(np.isnan(g), np.isnan(w), err_msg=f"{name}: NaNs")
    np.testing.assert_array_equal(g[~finite & ~np.isnan(w)], w[~finite & ~np.isnan(w)],
                                  err_msg=f"{name}: infs")
    scale = max(1.0, float(np.abs(w[finite]).max(initial=0)))
    np.testing.assert_allclose(g[finite], w[finite], rtol=_RTOL[want.dtype.name],
                               atol=_RTOL[want.dtype.name] * scale, err_msg=name)


def _views_of(out, bufs):
    outs = out if isinstance(out, (list, tuple)) else [out]
    return any(isinstance(o, np.ndarray) and isinstance(b, np.ndarray) and o.size
               and np.shares_memory(o, b) for o in outs for b in bufs)


@contextlib.contextmanager
def shadowing():
    """Within the block, every GPU kernel runs beside its NumPy kernel (eagerly: jit off);
    yields the set of primitives seen."""
    cpu = get_backend("cpu")
    seen = set()

    def shadow(prim, cpu_fn, gpu_fn):
        def run(*bufs, **params):
            want = cpu_fn(*bufs, **params)
            before = [np.array(b, copy=True) for b in bufs]
            got = gpu_fn(*before, **params)
            assert not _views_of(got, before), f"{prim.name}: a result is a view of an operand"
            for b, b0 in zip(bufs, before, strict=True):
                assert np.asarray(b).tobytes() == b0.tobytes(), f"{prim.name} wrote an operand"
            assert_close(prim.name, got, want)
            seen.add(prim)
            return want

        return run

    saved = {p: cpu.kernels.get(p) for p in KERNELS}
    try:
        for prim, gpu_fn in KERNELS.items():
            cpu.kernels[prim] = shadow(prim, cpu.kernel(prim), gpu_fn)
        with mt.disable_jit():
            yield seen
    finally:
        for prim, fn in saved.items():
            if fn is None:
                cpu.kernels.pop(prim, None)
            else:
                cpu.kernels[prim] = fn


@pytest.fixture
def shadowed():
    with shadowing() as seen:
        yield seen


def _rand(rng, *shape, dtype=np.float32):
    return mnp.asarray(rng.standard_normal(shape).astype(dtype))


def _spd(rng, n, batch=()):
    a = rng.standard_normal((*batch, n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def _structural(rng):
    x = _rand(rng, 2, 3, 4)
    mnp.transpose(x, (2, 0, 1)) + 0
    mnp.flip(x, (0, 2))
    mnp.reshape(x, (4, 6))
    mnp.squeeze(mnp.reshape(x, (1, 24, 1)), (0, 2))
    mnp.concatenate([x, x], axis=-1)
    x[1:, ::2, -3:]
    lax.pad(x, mnp.float32(-1.0), [(1, -1, 1), (0, 2, 0), (-2, 1, 2)])
    mnp.broadcast_to(x[:, :1], (5, 2, 3, 4))
    lax.iota(np.int32, 7)
    lax.broadcasted_iota(np.float32, (3, 4), 1)
    mt.grad(lambda v: mnp.sum(mt.ad_checkpoint.checkpoint_name(v * v, "sq") + v))(x)
    mt.grad(lambda v: mnp.sum(mnp.where(v > 0, v, 0.0)))(x)


def _reductions(rng):
    x = _rand(rng, 3, 300, 2)
    for dt in (np.float32, np.float16, "bfloat16", np.int8, np.uint16):
        y = x.astype(dt) if dt != np.uint16 else (x * 10).astype(np.int32).astype(dt)
        mnp.sum(y, axis=1), mnp.prod(y[:, :5], axis=(0, 2)), mnp.max(y, axis=(0, 1))
        mnp.min(y, axis=-1), mnp.argmax(y, axis=1), mnp.argmin(y, axis=0)
        lax.cumsum(y, 1), lax.cumprod(y[:, :6], 1, reverse=True)
        lax.cummax(y, 1), lax.cummin(y, 0, reverse=True)
    lax.cumlogsumexp(x, 1), lax.cumlogsumexp(x.astype(np.float16), 1, reverse=True)
    lax.reduce_max(mnp.zeros((3, 0)), (1,))
    lax.reduce_min(mnp.zeros((0, 2), np.int32), (0,))
    b = mnp.asarray(rng.random((4, 5)) > 0.5)
    mnp.all(b, axis=1), mnp.any(b, axis=0)
    ints = mnp.asarray(rng.integers(0, 1000, (4, 5, 3)).astype(np.int32))
    for op in (lax.reduce_and, lax.reduce_or, lax.reduce_xor):
        op(ints, (0, 2)), op(b, (1,)), op(ints[:, :0], (1,))
    lax.reduce_and(ints.astype(np.uint8), (1,))
    nan = mnp.asarray(np.array([[1.0, np.nan, 3.0, np.nan]], np.float32))
    mnp.argmax(nan, axis=1), mnp.max(nan, axis=1), lax.cummax(nan, 1)


def _dots(rng):
    a, b = _rand(rng, 2, 3, 4), _rand(rng, 2, 4, 5)
    mnp.matmul(a, b), mnp.einsum("bij,bjk->ik", a, b), mnp.dot(a[0], b[0])
    mnp.matmul(a.astype(np.float16), b.astype(np.float16))
    mnp.matmul(a.astype("bfloat16"), b.astype("bfloat16"))
    lax.dot_general(a.astype(np.float16), b.astype(np.float16), (((2,), (1,)), ((0,), (0,))),
                    preferred_element_type=np.float32)
    ia = mnp.asarray(rng.integers(-100, 100, (3, 4)).astype(np.int8))
    mnp.matmul(ia, ia.T), mnp.matmul(ia > 0, ia.T > 0)
    c = (a + 1j * a).astype(np.complex64)
    mnp.matmul(c, b.astype(np.complex64))
    mnp.matmul(mnp.zeros((0, 3)), mnp.zeros((3, 2)))


def _convolutions(rng):
    x, w = _rand(rng, 2, 3, 9, 8), _rand(rng, 4, 3, 3, 2)
    lax.conv_general_dilated(x, w, (2, 1), [(1, 0), (2, -1)], lhs_dilation=(1, 2),
                             rhs_dilation=(2, 1))
    xn = mnp.transpose(x, (0, 2, 3, 1))
    lax.conv_general_dilated(xn, mnp.transpose(w, (2, 3, 1, 0)), (1, 1), "SAME",
                             dimension_numbers=("NHWC", "HWIO", "NHWC"))
    lax.conv_general_dilated(_rand(rng, 2, 4, 7), _rand(rng, 6, 2, 3), (1,), "VALID",
                             feature_group_count=2)
    lax.conv_general_dilated(_rand(rng, 4, 3, 7), _rand(rng, 6, 3, 3), (1,), "VALID",
                             batch_group_count=2)
    lax.conv_general_dilated(x.astype(np.float16), w.astype(np.float16), (1, 1), "VALID")
    mt.grad(lambda x, w: mnp.sum(lax.conv_general_dilated(x, w, (1, 1), "SAME") ** 2),
            argnums=(0, 1))(x, w)
    lax.reduce_window_sum(x, (1, 1, 3, 2), (1, 1, 2, 1), [(0, 0), (0, 0), (1, 1), (0, 1)])
    lax.reduce_window_max(x, (1, 3, 9, 9), (1, 1, 1, 1), [(0, 0), (0, 0), (4, 4), (4, 4)])
    lax.reduce_window_min(x.astype("bfloat16"), (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
    lax.reduce_window_sum(x.astype(np.float16), (1, 1, 2, 2), (1, 1, 1, 1), "VALID",
                          base_dilation=(1, 1, 2, 1), window_dilation=(1, 1, 1, 2))
    mt.grad(lambda x: mnp.sum(lax.reduce_window_max(x, (1, 1, 2, 2), (1, 1, 2, 2),
                                                    "VALID")))(x)


def _indexing(rng):
    x = _rand(rng, 6, 5)
    i = mnp.asarray(np.array([4, 0, 4, 2, 4, 7, -8], np.int32))
    x[i], x[:, i[:3]], x[2, 1:4], x[mnp.asarray(np.array([[1, 2], [3, 3]]))]
    for dt in (np.float32, np.float16, np.int32, np.int8, np.int64, np.complex64, bool):
        y = x.astype(dt) if dt is not np.int64 else (x * 9).astype(np.int32)
        v = mnp.concatenate([y, y[:1]])
        y.at[i].set(v), y.at[i].add(v), y.at[i].multiply(v)
        if dt not in (np.complex64,):
            y.at[i].min(v), y.at[i].max(v)
    x.at[i].get(mode="fill", fill_value=-3.0)
    x.at[i].add(1.0, mode="drop"), x.at[i].set(2.0, mode="clip")
    lax.dynamic_slice(x, (mnp.int32(4), mnp.int32(-1)), (3, 2))
    lax.dynamic_update_slice(x, _rand(rng, 2, 2), (mnp.int32(5), mnp.int32(1)))
    mt.grad(lambda x: mnp.sum(x[i] ** 2) + mnp.sum(lax.dynamic_slice(x, (1, 2), (2, 2))))(x)
    batched = mt.vmap(lambda a, j: a[j])(_rand(rng, 3, 5, 2),
                                         mnp.asarray(np.array([[0, 4], [1, 1], [3, 2]])))
    mt.vmap(lambda a, j, u: a.at[j].add(u))(_rand(rng, 3, 5), mnp.asarray(np.array(
        [[0, 0], [1, 4], [3, 3]])), _rand(rng, 3, 2))
    return batched


def _sorting_fft_prng(rng):
    x = mnp.asarray(np.array([[3.0, np.nan, -1.0, 3.0, 0.0, -0.0, np.inf, 2.0]] * 2,
                             np.float32))
    mnp.sort(x, axis=1), mnp.argsort(x, axis=-1), mnp.sort(_rand(rng, 4, 3), axis=0)
    lax.sort((mnp.asarray(np.array([2, 1, 2, 1, 0], np.int32)), _rand(rng, 5), _rand(rng, 5)),
             num_keys=2)
    lax.top_k(x, 5), lax.top_k(x.astype("bfloat16"), 3)
    lax.top_k(mnp.asarray(np.array([3, 1, 3, 7], np.uint8)), 2)
    lax.top_k(mnp.asarray(np.array([True, False, True])), 2)
    z = _rand(rng, 3, 8)
    mnp.fft.fft(z), mnp.fft.ifft(z.astype(np.complex64)), mnp.fft.rfftn(z)
    mnp.fft.irfft(mnp.fft.rfft(z), n=8)
    key = mt.random.key(0)
    mt.random.split(key, 3), mt.random.fold_in(key, 7)
    mt.random.normal(key, (3, 5)), mt.random.uniform(key, (11,)), mt.random.bits(key, (0,))


def _linalg(rng):
    a = mnp.asarray(_spd(rng, 4, (2,)))
    mnp.linalg.cholesky(a)
    mnp.linalg.cholesky(mnp.asarray(-np.eye(3)[None].repeat(2, 0)))
    l_ = lax.linalg.cholesky(a)
    lax.linalg.triangular_solve(l_, _rand(rng, 2, 4, 3, dtype=np.float64), left_side=True,
                                lower=True)
    lax.linalg.triangular_solve(l_, _rand(rng, 2, 3, 4, dtype=np.float64), lower=True,
                                transpose_a=True, unit_diagonal=True)
    lax.linalg.triangular_solve(mnp.zeros((3, 3)), mnp.ones((3, 2)), left_side=True)
    g = _rand(rng, 2, 5, 3, dtype=np.float64)
    lax.linalg.lu(g), lax.linalg.lu(g.astype(np.complex64)), lax.linalg.lu(mnp.zeros((3, 3)))
    mnp.linalg.qr(g), mnp.linalg.qr(g, mode="complete")
    mnp.linalg.eigh(a), mnp.linalg.svd(g), mnp.linalg.svd(g, compute_uv=False)
    mnp.linalg.svd(g, full_matrices=False)
    mnp.linalg.eig(a), mt.scipy.linalg.eig(a[0], left=True, right=True)
    dl, du = _rand(rng, 2, 6, dtype=np.float64), _rand(rng, 2, 6, dtype=np.float64)
    dl, du = dl.at[:, 0].set(0.0), du.at[:, -1].set(0.0)
    d = _rand(rng, 2, 6, dtype=np.float64) * 0.1
    lax.linalg.tridiagonal_solve(dl, d, du, _rand(rng, 2, 6, 3, dtype=np.float64))
    lax.linalg.tridiagonal_solve(dl, d + 10, du, _rand(rng, 2, 6, 1, dtype=np.float64))


def _attention(rng):
    q, k, v = _rand(rng, 2, 5, 4, 8), _rand(rng, 2, 7, 2, 8), _rand(rng, 2, 7, 2, 8)
    bias = _rand(rng, 1, 4, 5, 7)
    mask = mnp.asarray(rng.random((2, 1, 5, 7)) > 0.3)
    mt.nn.dot_product_attention(q, k, v, bias=bias, mask=mask)
    mt.nn.dot_product_attention(q, k, v, is_causal=True)
    loss = lambda q, k, v, b: mnp.sum(  # noqa: E731
        mt.nn.dot_product_attention(q, k, v, bias=b, is_causal=True) ** 2)
    mt.grad(loss, argnums=(0, 1, 2, 3))(q, k, v, bias)
    mt.jvp(lambda q, k: mt.nn.dot_product_attention(q, k, v, mask=mask), (q, k), (q, k))
    mt.nn.dot_product_attention(q.astype(np.float16), k.astype(np.float16),
                                v.astype(np.float16))


_PROGRAMS = [_structural, _reductions, _dots, _convolutions, _indexing, _sorting_fft_prng,
             _attention]


@pytest.mark.parametrize("program", _PROGRAMS, ids=lambda p: p.__name__.strip("_"))
def test_gpu_kernels_match_numpy_kernels(shadowed, program):
    program(np.random.default_rng(0))
    assert shadowed, "no kernel ran"


def test_linalg_kernels_match_numpy_kernels(shadowed, x64):
    _linalg(np.random.default_rng(1))
    assert shadowed


def test_programs_reach_every_gpu_kernel(shadowed, x64):
    """The programs above exercise every registered GPU kernel (so a new kernel gets a
    program)."""
    rng = np.random.default_rng(2)
    for program in [*_PROGRAMS, _linalg]:
        program(rng)
    # `name` runs its kernel in compiled code only (eagerly its impl is the identity):
    # test_eager_kernels.py calls it directly; primitives defined outside the library
    # (mytorch.extend, whose tests register GPU kernels) are not the library's kernels
    missing = sorted(p.name for p in KERNELS if p not in shadowed and p is not name_p
                     and p.kind != "extension")
    assert not missing, f"GPU kernels no program runs: {missing}"


# ---- drawn shapes and params ---------------------------------------------------------------
_AT_DTYPES = st.sampled_from([np.float32, np.float16, "bfloat16", np.int32, np.int8, np.uint8,
                              np.int64, np.bool_, np.complex64])


@given(data=st.data(), dtype=_AT_DTYPES, shape=st.tuples(st.integers(1, 5), st.integers(1, 4)),
       n=st.integers(0, 9))
def test_gather_scatter_drawn(data, dtype, shape, n):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    x = mnp.asarray((rng.standard_normal(shape) * 4).astype(dtype))
    idx = mnp.asarray(rng.integers(-shape[0] - 2, shape[0] + 2, (n,)).astype(np.int32))
    updates = mnp.asarray((rng.standard_normal((n, shape[1])) * 3).astype(dtype))
    mode = data.draw(st.sampled_from(["clip", "drop", "fill", None]))
    with shadowing():
        x.at[idx].get(mode=mode if mode != "drop" else "fill")
        x.at[:, idx[:1]].get(mode="clip")
        ops = ["set", "add", "multiply"] + (["min", "max"] if dtype != np.complex64 else [])
        for op in ops:
            getattr(x.at[idx], op)(updates, mode=mode if mode != "fill" else "drop")


@given(data=st.data(), nsp=st.integers(1, 2), groups=st.sampled_from([(1, 1), (2, 1), (1, 2)]))
def test_convolution_drawn(data, nsp, groups):
    g, b = groups
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    draw = data.draw
    n, i, o = 2 * b, draw(st.integers(1, 2)), 2 * draw(st.integers(1, 2))
    spatial = tuple(draw(st.integers(1, 6)) for _ in range(nsp))
    kernel = tuple(draw(st.integers(1, 3)) for _ in range(nsp))
    x = _rand(rng, n, i * g, *spatial)
    w = _rand(rng, o, i, *kernel)
    strides = tuple(draw(st.integers(1, 2)) for _ in range(nsp))
    pads = [(draw(st.integers(-1, 2)), draw(st.integers(-1, 2))) for _ in range(nsp)]
    lhs_d = tuple(draw(st.integers(1, 2)) for _ in range(nsp))
    rhs_d = tuple(draw(st.integers(1, 2)) for _ in range(nsp))
    with shadowing() as seen:
        try:
            lax.conv_general_dilated(x, w, strides, pads, lhs_dilation=lhs_d,
                                     rhs_dilation=rhs_d, feature_group_count=g,
                                     batch_group_count=b)
        except (ValueError, TypeError):  # an empty or invalid window: the primitive's error
            return
        window = (1, 1, *kernel)
        for op in (lax.reduce_window_sum, lax.reduce_window_max, lax.reduce_window_min):
            op(x, window, (1, 1, *strides), [(0, 0), (0, 0), *[(max(lo, 0), max(hi, 0))
                                                                for lo, hi in pads]])
    assert seen
