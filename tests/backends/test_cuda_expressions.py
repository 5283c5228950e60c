"""The CUDA expressions (backends/cupy/expressions.py) compute what the NumPy kernels compute.

Each expression is evaluated on edge values (0, -0.0, +-inf, NaN, integer limits, -1, shifts
0..width+1, zero divisors) by a C program built with the host C compiler (the shim in
c_harness.py stands in for CUDA's half-precision names), and compared with the NumPy
backend's eager kernel bit for bit (every NaN equals every NaN; bools compare as truth
values). Functions that libm and NumPy compute with their own approximations (exp, sin, pow,
...) may differ by a few ulps on ordinary finite nonzero values (lgamma, digamma and erf_inv
also by 1e-15 absolute near their zeros, where CPython's lgamma and libm's differ); everywhere
else, and on every non-finite or zero result, the match is exact.

Complex operands (every pair of the parts 0, -0, +-1, +-inf, NaN, huge and tiny, and more)
are compared part by part; the approximate functions may also differ by a few ulps of the
result's magnitude, times the amplification of a rounding by NumPy's formula where that is
ill-conditioned (pow as exp(b log a), log1p through hypot(1 + x, y)): their results differ
from the exact values by as much in NumPy. The same cases run on the GPU where one answers.
"""

import shutil
import subprocess

import numpy as np
import pytest

from mytorch.backends.cupy import expressions as cx
from mytorch.backends.numpy import numpy_backend
from mytorch.core import dtypes
from mytorch.core.aval import ShapedArray
from mytorch.lax import elementwise as ew
from tests.backends import c_harness

BF16 = np.dtype(dtypes.bfloat16)
COMPLEX = [np.dtype(np.complex64), np.dtype(np.complex128)]
ALL = [np.dtype(t) for t in (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8,
                             np.uint16, np.uint32, np.uint64, np.float16, np.float32,
                             np.float64)] + [BF16] + COMPLEX
FLOATS = [np.dtype(np.float16), BF16, np.dtype(np.float32), np.dtype(np.float64)]
APPROX = {  # computed by libm/NumPy approximations: a few ulps apart on finite values
    ew.exp_p, ew.exp2_p, ew.log_p, ew.log1p_p, ew.expm1_p, ew.cbrt_p, ew.sin_p, ew.cos_p,
    ew.tan_p, ew.asin_p, ew.acos_p, ew.atan_p, ew.sinh_p, ew.cosh_p, ew.tanh_p, ew.asinh_p,
    ew.acosh_p, ew.atanh_p, ew.logistic_p, ew.erf_p, ew.erfc_p, ew.erf_inv_p, ew.lgamma_p,
    ew.digamma_p, ew.pow_p, ew.atan2_p, ew.integer_pow_p,
}
ULPS = 4
# on complex operands also those built on hypot (CUDA's is not correctly rounded)
COMPLEX_APPROX = APPROX | {ew.sqrt_p, ew.rsqrt_p, ew.sign_p}
# what NumPy computes on complex operands and the CUDA expressions do not
COMPLEX_MISSING = {ew.asin_p, ew.acos_p, ew.atan_p, ew.asinh_p, ew.acosh_p, ew.atanh_p}
NEAR_ZEROS = {ew.lgamma_p, ew.digamma_p, ew.erf_inv_p}  # absolute error counts near roots
UNARY = [p for p in sorted(cx.PRIMITIVES, key=lambda p: p.name) if p not in (
    ew.select_n_p, ew.clamp_p, ew.convert_element_type_p, ew.bitcast_convert_type_p,
    ew.integer_pow_p, ew.round_p) and p.name in {
    "neg", "abs", "sign", "floor", "ceil", "exp", "exp2", "log", "log1p", "expm1", "sqrt",
    "rsqrt", "cbrt", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh",
    "asinh", "acosh", "atanh", "logistic", "erf", "erfc", "erf_inv", "lgamma", "digamma",
    "is_finite", "not", "square", "reciprocal", "stop_gradient", "real", "imag", "conj"}]
BINARY = [p for p in sorted(cx.PRIMITIVES, key=lambda p: p.name) if p.name in {
    "add", "sub", "mul", "div", "rem", "pow", "max", "min", "atan2", "nextafter", "and",
    "or", "xor", "eq", "ne", "lt", "le", "gt", "ge", "complex"}]
SHIFTS = [ew.shift_left_p, ew.shift_right_arithmetic_p, ew.shift_right_logical_p]


def edge_values(dt):
    """Edge values of `dt` (zeros, +-1, limits, and for floats +-inf, NaN, halves, tiny),
    then a few seeded random ones (spread over the exponents for floats)."""
    rng = np.random.default_rng(15)
    if dt.kind == "c":
        return _complex_edge_values(dt, rng)
    if dt == np.bool_:
        return np.array([False, True])
    if dt.kind in "iu":
        info = np.iinfo(dt)
        bits = dt.itemsize * 8
        vals = [0, 1, 2, 3, 7, 100, bits, bits + 1, info.max, info.max - 1]
        if dt.kind == "i":
            vals += [-1, -2, -7, -100, info.min, info.min + 1]
        else:
            vals += [1 << (bits - 1)]
        rand = rng.integers(info.min, info.max, 6, dtype=dt, endpoint=True)
        return np.concatenate([np.array(vals, dtype=dt), rand])
    f = np.finfo(np.float32 if dt == BF16 else dt)
    vals = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 0.1, 3.7, -3.7, 0.999, 11.0,
            -7.5, 100.25, 1e30, -1e30, np.inf, -np.inf, np.nan, float(f.max), -float(f.max),
            float(f.tiny)]
    rand = rng.standard_normal(6) * np.exp2(rng.integers(-30, 30, 6))
    with np.errstate(all="ignore"):
        out = np.concatenate([vals, rand]).astype(dt)
    if dt != BF16:
        out = np.append(out, np.array(f.smallest_subnormal, dt))
    return out


def _complex_edge_values(dt, rng):
    """Every pair of the parts 0, -0, +-1, +-inf, NaN, huge and tiny (so +-1, +-i and
    every non-finite kind), values near |z| = 1 and where exp overflows in steps, then
    seeded random ones."""
    f = np.finfo(dt)
    parts = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, float(f.max), float(f.tiny)]
    re, im = np.meshgrid(parts, parts, indexing="ij")
    grid = re.ravel() + 0j
    grid.imag = im.ravel()
    special = [0.6 + 0.8j, 0.7 - 0.3j, 1.25 + 0.5j, -0.5 + 0.75j, 2.5 - 3.7j, 100 + 1j,
               -100 - 2j, 710 + 0.5j, -0.5 - 800j, 3e38 + 3e38j, 1e-40 + 1e-41j,
               1e-300 - 2e-300j, 2.0 + 0j, 0.5 - 0j, 5 + 1e-20j]
    rand = (rng.standard_normal(8) * np.exp2(rng.integers(-12, 12, 8))
            + 1j * rng.standard_normal(8) * np.exp2(rng.integers(-12, 12, 8)))
    with np.errstate(all="ignore"):
        return np.concatenate([grid, special, rand]).astype(dt)


def _pairs(x, y):
    a, b = np.meshgrid(x, y, indexing="ij")
    return a.ravel(), b.ravel()


def _accepts(prim, avals, **params):
    try:
        prim._abstract_eval(*avals, **params)
    except (TypeError, ValueError):
        return False
    return True


def _case(prim, operands, **params):
    """(template, operands, out dtype, expected, params) for `prim` on 1-d `operands`."""
    avals = [ShapedArray(a.shape, a.dtype) for a in operands]
    out_dtype = prim._abstract_eval(*avals, **params).dtype
    expected = np.asarray(numpy_backend.kernel(prim)(*operands, **params))
    template = cx.expression(prim, [a.dtype for a in operands], out_dtype, **params)
    return template, list(operands), out_dtype, expected.astype(out_dtype, copy=False), params


def cases_for(dt):
    """Every expression whose first operand has dtype `dt`, on edge values."""
    x = edge_values(dt)
    xs, ys = _pairs(x, x)
    out = []
    missing = COMPLEX_MISSING if dt.kind == "c" else set()
    for prim in UNARY:
        if _accepts(prim, [ShapedArray((), dt)]) and prim not in missing:
            out.append((prim, _case(prim, [x])))
    for prim in BINARY:
        if _accepts(prim, [ShapedArray((), dt)] * 2):
            out.append((prim, _case(prim, [xs, ys])))
    if dt.kind in "iu":
        bits = dt.itemsize * 8
        s = np.array(list(range(bits + 2)) + [100] + ([-1, -100] if dt.kind == "i" else []))
        a, b = _pairs(x, s.astype(dt))
        out += [(p, _case(p, [a, b])) for p in SHIFTS]
    if dt != np.bool_:
        inexact = dt in FLOATS or dt.kind == "c"
        for y in (0, 1, 2, 3, 5, 300) + ((-1, -2, -7, -150) if inexact else ()):
            out.append((ew.integer_pow_p, _case(ew.integer_pow_p, [x], y=y)))
        lo, mid, hi = _triples(x[::3] if dt.kind == "c" else x)
        out.append((ew.clamp_p, _case(ew.clamp_p, [lo, mid, hi])))
    if dt in FLOATS:
        for method in (0, 1):
            out.append((ew.round_p, _case(ew.round_p, [x], rounding_method=method)))
    out += _select_cases(x)
    for new in ALL:
        out.append((ew.convert_element_type_p,
                    _case(ew.convert_element_type_p, [x], new_dtype=new, weak_type=False)))
        if (new.itemsize == dt.itemsize and dt != np.bool_ and new != np.bool_
                and dt != np.complex128):  # no other 16-byte dtype
            out.append((ew.bitcast_convert_type_p,
                        _case(ew.bitcast_convert_type_p, [x], new_dtype=new)))
    return out


def _triples(x):
    idx = np.arange(len(x))
    i, j, k = np.meshgrid(idx[::2], idx, idx[1::3], indexing="ij")
    return x[i.ravel()], x[j.ravel()], x[k.ravel()]


def _select_cases(x):
    n = len(x)
    c0, c1, c2 = x, np.roll(x, 1), np.roll(x, 2)
    which_b = (np.arange(n) % 2).astype(np.bool_)
    which_i = (np.arange(n) % 5 - 1).astype(np.int32)  # -1..3: clipped to 0..2
    return [(ew.select_n_p, _case(ew.select_n_p, [which_b, c0, c1])),
            (ew.select_n_p, _case(ew.select_n_p, [which_i, c0, c1, c2]))]


def _ordered(bits, nbytes):
    """Float bit patterns as integers ordered like the floats (for ulp distances)."""
    signed = bits.astype(np.uint64).astype(np.int64) if nbytes == 8 else bits.astype(np.int64)
    top = np.int64(1) << np.int64(8 * nbytes - 1)
    if nbytes < 8:
        signed = np.where(signed >= top, signed - (top << 1), signed)
    return np.where(signed < 0, -(signed & (top - 1 if nbytes < 8 else np.iinfo(np.int64).max)),
                    signed)


def _condition(prim, ops, params):
    """How much NumPy's complex formula amplifies a rounding, relative to the result's larger
    part (the same amplification applies to NumPy's result as to the C one): for power,
    exp(b log a) with b not an integer of magnitude below 100, 1 + |b log a| (inf where
    that is not finite); for log1p, log(hypot(1 + x, y)) + i atan2(y, 1 + x), one over the
    result's magnitude; 1 elsewhere."""
    if not ops or ops[0].dtype.kind != "c":
        return 1.0
    a = ops[0].astype(np.complex128)
    if prim is ew.log1p_p:
        with np.errstate(all="ignore"):
            return 1.0 + 1.0 / np.abs(np.log(1 + a))
    if prim is ew.integer_pow_p:
        b = np.full(len(a), params["y"], np.complex128)
    elif prim is ew.pow_p:
        b = ops[1].astype(np.complex128)
    else:
        return 1.0
    integral = (b.imag == 0) & (np.abs(b.real) < 100) & (b.real == np.round(b.real))
    with np.errstate(all="ignore"):
        w = np.abs(b * np.log(a))
    return np.where(integral, 1.0, np.where(np.isnan(w), np.inf, 1.0 + w))


def _complex_mismatches(prim, expected, got_bits, condition=1.0):
    """Each part compared as a float; the approximate functions may also differ by a few
    ulps of the larger part (a part can be far smaller than |w|), times the `condition`.
    Where that exceeds 1/eps, or an ill-conditioned result overflowed, the result is lost to
    rounding (in NumPy too): only each part's class (NaN, infinite, finite) must match."""
    dt = expected.dtype
    got = np.ascontiguousarray(got_bits).view(dt).reshape(-1)
    part = np.dtype(f"f{dt.itemsize // 2}")
    eps = np.finfo(part).eps
    with np.errstate(all="ignore"):
        scale = np.maximum(np.abs(expected.real), np.abs(expected.imag)).astype(np.float64)
        lost = (eps * condition >= 1) | ((condition > 1) & ~np.isfinite(scale))
    bad = np.zeros(len(expected), np.bool_)
    for want, have in ((expected.real, got.real), (expected.imag, got.imag)):
        wb = np.ascontiguousarray(want).view(f"u{part.itemsize}").astype(np.uint64)
        gb = np.ascontiguousarray(have).view(f"u{part.itemsize}").astype(np.uint64)
        wf, gf = want.astype(np.float64), have.astype(np.float64)
        wrong = (wb != gb) & ~(np.isnan(wf) & np.isnan(gf))
        if prim in COMPLEX_APPROX:
            ulps = np.abs(_ordered(wb, part.itemsize) - _ordered(gb, part.itemsize))
            with np.errstate(all="ignore"):
                near = (ulps <= ULPS) | (np.abs(wf - gf) / condition <= ULPS * eps * scale)
            zeros = (wf == 0) & (gf == 0) & (condition <= 1)  # signed zeros must match
            wrong &= ~(np.isfinite(wf) & np.isfinite(gf) & near & ~zeros)
            wrong &= ~(lost & (np.isnan(wf) == np.isnan(gf)) & (np.isinf(wf) == np.isinf(gf)))
        bad |= wrong
    return np.flatnonzero(bad)


def _mismatches(prim, expected, got_bits, condition=1.0):
    dt = expected.dtype
    if dt.kind == "c":
        return _complex_mismatches(prim, expected, got_bits, condition)
    if dt == np.bool_:
        return np.flatnonzero((got_bits != 0) != expected)
    want = expected.view(np.dtype(f"u{dt.itemsize}")).astype(np.uint64)
    bad = want != got_bits
    if dt in FLOATS:
        got = got_bits.astype(np.dtype(f"u{dt.itemsize}")).view(dt)
        with np.errstate(all="ignore"):
            wf, gf = expected.astype(np.float64), got.astype(np.float64)
        bad &= ~(np.isnan(wf) & np.isnan(gf))
        if prim in APPROX:
            close = np.abs(_ordered(want, dt.itemsize) - _ordered(got_bits, dt.itemsize))
            near = close <= ULPS
            if prim in NEAR_ZEROS:
                with np.errstate(invalid="ignore"):
                    near |= np.abs(wf - gf) <= 1e-15 * np.maximum(1.0, np.abs(wf))
            bad &= ~(np.isfinite(wf) & np.isfinite(gf) & (wf != 0) & near)
    return np.flatnonzero(bad)


def _shown(bits, dt):
    """The C result's bits, and the value for a complex dtype."""
    if dt.kind == "c":
        return repr(np.ascontiguousarray(bits).view(dt).reshape(()))
    return f"bits {int(bits):#x}"


@pytest.fixture(scope="module")
def cc():
    path = c_harness.compiler()
    if path is None:
        pytest.skip("no host C compiler (gcc or cc) on PATH")
    return path


@pytest.mark.parametrize("dt", ALL, ids=str)
def test_expressions_match_numpy_kernels(dt, cc, tmp_path):
    cases = cases_for(dt)
    results = c_harness.run(cc, tmp_path, f"ew_{dt}", cx.PRELUDE, cx.ctype,
                            [(t, ops, o) for _, (t, ops, o, _, _) in cases])
    failures = _failures(cases, results, "C")
    assert not failures, "\n".join(failures[:20])


def _failures(cases, results, where):
    """A line per case whose results (bits) differ from NumPy's beyond the tolerances."""
    failures = []
    for (prim, (template, ops, _, expected, params)), got in zip(cases, results, strict=True):
        bad = _mismatches(prim, expected, got, _condition(prim, ops, params))
        if bad.size:
            i = bad[0]
            failures.append(f"{prim.name} {template}: inputs {[o[i] for o in ops]} -> "
                            f"numpy {expected[i]!r}, {where} {_shown(got[i], expected.dtype)}")
    return failures


def test_bitcast_width_changes_match_numpy(cc, tmp_path):
    cases, expect = [], []
    for src, dst in [(np.uint32, np.uint8), (np.float32, np.uint16), (np.float64, np.int32),
                     (np.int64, np.float16), (BF16, np.uint8), (np.complex64, np.float32),
                     (np.complex64, np.uint16)]:
        x = edge_values(np.dtype(src))
        want = numpy_backend.kernel(ew.bitcast_convert_type_p)(x, new_dtype=np.dtype(dst))
        for part in range(want.shape[-1]):
            t = cx.expression(ew.bitcast_convert_type_p, [src], dst)
            cases.append((t, [x, np.full(len(x), part, np.int32)], np.dtype(dst)))
            expect.append(want[:, part])
        back = numpy_backend.kernel(ew.bitcast_convert_type_p)(want, new_dtype=np.dtype(src))
        t = cx.expression(ew.bitcast_convert_type_p, [dst] * want.shape[-1], src)
        cases.append((t, [want[:, k] for k in range(want.shape[-1])], np.dtype(src)))
        expect.append(back)
    results = c_harness.run(cc, tmp_path, "bitcast", cx.PRELUDE, cx.ctype, cases)
    for want, got in zip(expect, results, strict=True):
        np.testing.assert_array_equal(
            want.view(np.dtype(f"u{want.dtype.itemsize}")).astype(np.uint64), got)


@pytest.fixture(scope="module")
def gpu_nvcc(tmp_path_factory):
    """nvcc's path when it is on PATH and a GPU answers (a probe program runs)."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is not on PATH")
    probe = [("{0}", [np.zeros(1, np.int32)], np.dtype(np.int32))]
    exe = c_harness.build_cuda(nvcc, tmp_path_factory.mktemp("probe"), "probe", cx.PRELUDE,
                               cx.ctype, probe)
    if subprocess.run([str(exe)], check=False, capture_output=True).returncode != 0:
        pytest.skip("no GPU")
    return nvcc


@pytest.mark.parametrize("dt", ALL, ids=str)
def test_expressions_on_the_gpu_match_numpy_kernels(dt, gpu_nvcc, tmp_path):
    # the same cases and tolerances as on the host, computed by kernels as the CuPy backend
    # compiles them (nvcc's defaults, fma contraction and CUDA's libm)
    cases = cases_for(dt)
    exe = c_harness.build_cuda(gpu_nvcc, tmp_path, f"ew_{dt}", cx.PRELUDE, cx.ctype,
                               [(t, ops, o) for _, (t, ops, o, _, _) in cases])
    done = subprocess.run([str(exe)], check=True, capture_output=True, text=True)
    results = c_harness.parse(done.stdout, [(t, ops, o) for _, (t, ops, o, _, _) in cases])
    failures = _failures(cases, results, "GPU")
    assert not failures, "\n".join(failures[:20])


@pytest.mark.parametrize("prim", sorted(
    (p for p in vars(ew).values() if getattr(p, "kind", None) == "elementwise"),
    key=lambda p: p.name), ids=lambda p: p.name)
def test_every_elementwise_primitive_has_an_expression(prim):
    assert cx.has_expression(prim)


def test_numpy_lgamma_overflows_to_inf():
    # lgamma(x) >= x (log x - 1) for x >= e, beyond float64's max here
    x = np.array([1e306, 1.7e308, np.finfo(np.float64).max])
    np.testing.assert_array_equal(numpy_backend.kernel(ew.lgamma_p)(x), np.full(3, np.inf))


def test_unsupported_dtype_names_the_primitive_and_dtype():
    with pytest.raises(TypeError, match=r"'pow' on int32"):
        cx.expression(ew.pow_p, [np.int32, np.int32], np.int32)
    with pytest.raises(TypeError, match=r"no C type for dtype datetime64\[s\]"):
        cx.ctype(np.dtype("datetime64[s]"))
    with pytest.raises(TypeError, match="bitcasting uint8 to float32 takes 4 operands"):
        cx.expression(ew.bitcast_convert_type_p, [np.uint8], np.float32)


@pytest.mark.parametrize("dt", COMPLEX, ids=str)
def test_complex_functions_without_an_expression_raise(dt):
    for prim in sorted(COMPLEX_MISSING, key=lambda p: p.name):
        assert _accepts(prim, [ShapedArray((), dt)])  # NumPy computes them
        with pytest.raises(TypeError, match=f"no expression for '{prim.name}' on {dt}"):
            cx.expression(prim, [dt], dt)
    with pytest.raises(TypeError, match="'bitcast_convert_type' on complex128"):
        cx.expression(ew.bitcast_convert_type_p, [np.complex128], np.float64)


def test_complex_parts_are_structs_of_two_floats():
    assert (cx.ctype(np.complex64), cx.ctype(np.complex128)) == ("mt_c64", "mt_c128")
    assert "typedef struct { float re, im; } mt_c64;" in cx.PRELUDE
    assert "typedef struct { double re, im; } mt_c128;" in cx.PRELUDE


def test_expressions_compile_with_nvcc(tmp_path):
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is not on PATH")
    kernels = []
    for dt in ALL:
        for k, (_, (template, ops, out_dtype, _, _)) in enumerate(cases_for(dt)):
            params = ", ".join(f"const {cx.ctype(a.dtype)}* a{j}" for j, a in enumerate(ops))
            expr = template.format(*(f"a{j}[i]" for j in range(len(ops))))
            kernels.append(
                f'extern "C" __global__ void k_{dt}_{k}({params}, {cx.ctype(out_dtype)}* out,'
                f" int n) {{\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                f"  if (i < n) out[i] = {expr};\n}}\n")
    cu = tmp_path / "expressions.cu"
    cu.write_text(cx.PRELUDE + "".join(kernels))
    cmd = [nvcc, "--ptx", "-arch=sm_80", str(cu), "-o", str(tmp_path / "k.ptx")]
    done = subprocess.run(cmd, check=False, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-4000:]
