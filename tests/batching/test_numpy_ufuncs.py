"""vmap of every elementwise function of mytorch.numpy against the loop definition.

The unary and binary functions come from the tables of tests/numpy/test_ufuncs.py (dtypes,
value ranges, Python scalar operands); the rest (where, clip, divmod, frexp, isclose, ...)
have their own tests. Operands broadcast against each other per example, and each may be
batched at any axis or left unbatched.
"""

import functools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mytorch.numpy as mnp
from tests.batching.numpy_vmap_util import (
    Op,
    draw_n,
    draw_values,
    shapes_broadcasting_to,
    vmap_case,
)
from tests.batching.vmap_check import check_vmap
from tests.numpy.test_ufuncs import BINARY, UNARY, _is_float, _scalar
from tests.strategies import broadcastable_shapes, shapes

pytestmark = pytest.mark.filterwarnings("ignore:.*encountered in:RuntimeWarning")

_ALIASES = [  # functions not in the tables: (name, the tabled function it equals)
    ("atan2", "arctan2"), ("pow", "power"), ("bitwise_left_shift", "left_shift"),
    ("bitwise_right_shift", "right_shift"), ("bitwise_invert", "invert"),
]


def _spec_operand(data, spec, dtype, shape, n, batched, first):
    """(value, in_axis): an array with a batch axis at a drawn position, an unbatched
    array, or a Python scalar (closed over, never batched: batched is None); values as
    the spec allows."""
    lo, hi = (spec.lo, spec.hi) if first else (spec.lo2, spec.hi2)
    if batched is None:
        v = _scalar(data.draw, dtype, lo, hi)
        return (1 if spec.nonzero and v == 0 else v), "scalar"
    pos = data.draw(st.integers(0, len(shape)), label="bdim") if batched else None
    full = shape if pos is None else shape[:pos] + (n,) + shape[pos:]
    if dtype.kind == "u" and lo is not None:
        lo = max(lo, 0)
    if _is_float(dtype):
        lo = hi = None  # float exponents etc. may be anything
    v = draw_values(data, dtype, full, min_value=lo, max_value=hi, allow_nan=spec.nan,
                    allow_inf=spec.nan)
    if spec.nonzero:
        v = np.where(v == 0, np.ones((), v.dtype), v)
    if pos is None:
        return v, None
    return v, data.draw(st.sampled_from([pos, pos - len(full)]), label="in_axis")


def _check_elementwise(data, spec, fn, per_shapes):
    """vmap(fn) over operands of the given per-example shapes (scalars closed over)."""
    n = draw_n(data)
    # per operand: batched, unbatched or a Python scalar; some array operand is batched
    # unless all are scalars (then vmap gets axis_size)
    kinds = st.sampled_from([True, False, None] if spec.scalars else [True, False])
    flags = data.draw(st.lists(kinds, min_size=len(per_shapes), max_size=len(per_shapes)),
                      label="batched")
    if False in flags and True not in flags:
        flags[flags.index(False)] = True
    dts = [data.draw(st.sampled_from(spec.dtypes), label="dtype") for _ in per_shapes]
    vals = [_spec_operand(data, spec, d, s, n, f, k == 0)
            for k, (d, s, f) in enumerate(zip(dts, per_shapes, flags, strict=True))]
    arr_pos = [k for k, (_, ax) in enumerate(vals) if ax != "scalar"]

    def f(*arrs):
        full = [v for v, _ in vals]
        for k, a in zip(arr_pos, arrs, strict=True):
            full[k] = a
        return fn(*full)

    args = tuple(vals[k][0] for k in arr_pos)
    in_axes = tuple(vals[k][1] for k in arr_pos)
    size = n if all(ax is None for ax in in_axes) else None
    out_axes = data.draw(st.sampled_from([0, -1]), label="out_axes")
    check_vmap(f, args, in_axes=in_axes, out_axes=out_axes, size=size, **spec.tol)


@pytest.mark.parametrize("spec", UNARY, ids=repr)
@settings(max_examples=3)
@given(data=st.data())
def test_unary(spec, data):
    shape = data.draw(shapes(max_dims=3, max_side=4), label="shape")
    _check_elementwise(data, spec, spec.fn, [shape])


@pytest.mark.parametrize("spec", BINARY, ids=repr)
@settings(max_examples=4)
@given(data=st.data())
def test_binary(spec, data):
    s1 = data.draw(shapes(max_dims=3, max_side=4), label="s1")
    s2 = data.draw(broadcastable_shapes(s1, max_dims=3), label="s2")
    if data.draw(st.booleans()):
        s1, s2 = s2, s1
    _check_elementwise(data, spec, spec.fn, [s1, s2])


_BY_NAME = {s.name: s for s in UNARY + BINARY}


@pytest.mark.parametrize("alias, name", _ALIASES, ids=[a[0] for a in _ALIASES])
@settings(max_examples=4)
@given(data=st.data())
def test_aliases(alias, name, data):
    spec = _BY_NAME[name]
    shape = data.draw(shapes(max_dims=2, max_side=3), label="shape")
    arity = 2 if spec in BINARY else 1
    _check_elementwise(data, spec, getattr(mnp, alias), [shape] * arity)


@settings(max_examples=15)
@given(data=st.data())
def test_where_three_operands(data):
    s = data.draw(shapes(max_dims=3, max_side=3), label="shape")
    sc, sx, sy = (shapes_broadcasting_to(data, s) for _ in range(3))
    dx, dy = (data.draw(st.sampled_from([np.float32, np.int32, np.int8])) for _ in range(2))
    vmap_case(data, mnp.where, [Op(sc, np.bool_), Op(sx, dx), Op(sy, dy)])


@settings(max_examples=8)
@given(data=st.data())
def test_where_with_python_scalars_and_size(data):
    shape = data.draw(shapes(min_dims=1, max_dims=2, max_side=4), label="shape")
    vmap_case(data, lambda c, x: mnp.where(c, x, 0.5), [Op(shape, np.bool_), Op(shape)])
    # one-argument where is nonzero, traceable with a static size
    k = data.draw(st.integers(0, 5), label="size")
    vmap_case(data, lambda c: mnp.where(c, size=k, fill_value=-1),
              [Op(shape, np.bool_, batch=True)])


@settings(max_examples=15)
@given(data=st.data())
def test_clip_bounds_batched_or_not(data):
    shape = data.draw(shapes(max_dims=3, max_side=3), label="shape")
    lo_s, hi_s = (data.draw(st.sampled_from([(), shape[-1:], shape])) for _ in range(2))
    dt = data.draw(st.sampled_from([np.float32, np.int32, np.uint8]), label="dtype")
    kw = {"min_value": 0, "max_value": 50}
    vmap_case(data, lambda x, lo, hi: mnp.clip(x, lo, hi),
              [Op(shape, dt, **kw), Op(lo_s, dt, **kw), Op(hi_s, dt, **kw)])
    vmap_case(data, lambda x: x.clip(max=3), [Op(shape, dt, batch=True, **kw)])
    vmap_case(data, lambda x, lo: mnp.clip(x, min=lo), [Op(shape, dt, **kw), Op(lo_s, dt, **kw)])


@pytest.mark.parametrize("name", ["divmod", "frexp", "modf"])
@settings(max_examples=8)
@given(data=st.data())
def test_two_result_ufuncs(name, data):
    shape = data.draw(shapes(max_dims=3, max_side=3), label="shape")
    fn = getattr(mnp, name)
    if name == "divmod":
        dt = data.draw(st.sampled_from([np.float32, np.int32, np.int8]), label="dtype")
        s2 = data.draw(broadcastable_shapes(shape, max_dims=3), label="s2")
        ops = [Op(shape, dt, min_value=-50, max_value=50),
               Op(s2, dt, min_value=1, max_value=9)]
    else:
        ops = [Op(shape, np.float32, allow_nan=True, allow_inf=True)]
    out_axes = data.draw(st.sampled_from([0, -1, (0, -1)]), label="out_axes")
    vmap_case(data, fn, ops, out_axes=out_axes)


@settings(max_examples=10)
@given(data=st.data())
def test_ldexp_float_power_round(data):
    shape = data.draw(shapes(max_dims=3, max_side=3), label="shape")
    s2 = data.draw(broadcastable_shapes(shape, max_dims=3), label="s2")
    vmap_case(data, mnp.ldexp, [Op(shape, max_value=100, min_value=-100),
                                Op(s2, np.int32, min_value=-10, max_value=10)])
    vmap_case(data, mnp.float_power, [Op(shape, min_value=0.1, max_value=5),
                                      Op(s2, min_value=-3, max_value=3)], rtol=1e-6)
    decimals = data.draw(st.integers(-2, 3), label="decimals")
    dt = data.draw(st.sampled_from([np.float32, np.int32, np.float16]), label="dtype")
    fn = data.draw(st.sampled_from([mnp.round, mnp.around]), label="round")
    vmap_case(data, functools.partial(fn, decimals=decimals), [Op(shape, dt)])
    vmap_case(data, lambda x: x.round(decimals), [Op(shape, np.float32, batch=True)])


@settings(max_examples=10)
@given(data=st.data())
def test_nan_to_num(data):
    shape = data.draw(shapes(max_dims=3, max_side=3), label="shape")
    kw = data.draw(st.fixed_dictionaries({}, optional={
        "nan": st.floats(-5, 5), "posinf": st.floats(0, 1e3), "neginf": st.floats(-1e3, 0)}),
        label="kw")
    dt = data.draw(st.sampled_from([np.float32, np.float16, np.int32]), label="dtype")
    vmap_case(data, lambda x: mnp.nan_to_num(x, **kw),
              [Op(shape, dt, allow_nan=True, allow_inf=True)])


@settings(max_examples=12)
@given(data=st.data())
def test_isclose_allclose_array_equal(data):
    shape = data.draw(shapes(max_dims=3, max_side=3), label="shape")
    s2 = data.draw(broadcastable_shapes(shape, max_dims=3), label="s2")
    equal_nan = data.draw(st.booleans(), label="equal_nan")
    rtol = data.draw(st.sampled_from([1e-5, 0.5]), label="rtol")
    vals = {"min_value": -2, "max_value": 2, "allow_nan": True, "allow_inf": True}
    ops = [Op(shape, **vals), Op(s2, **vals)]
    vmap_case(data, lambda a, b: mnp.isclose(a, b, rtol=rtol, atol=0.1, equal_nan=equal_nan),
              ops)
    vmap_case(data, lambda a, b: mnp.allclose(a, b, rtol=rtol, equal_nan=equal_nan), ops)
    vmap_case(data, lambda a, b: mnp.array_equiv(a, b), ops)
    ints = [Op(shape, np.int8, min_value=0, max_value=1), Op(s2, np.int8, min_value=0,
                                                              max_value=1)]
    vmap_case(data, lambda a, b: mnp.array_equal(a, b, equal_nan=equal_nan), ops)
    vmap_case(data, mnp.array_equal, ints)
    vmap_case(data, mnp.array_equiv, ints)


@settings(max_examples=10)
@given(data=st.data())
def test_operators(data):
    """Array operators under vmap: the fast lax path and the promoting path (the loop
    reference passes unbatched operands as NumPy arrays, hence the asarray)."""
    shape = data.draw(shapes(max_dims=3, max_side=3), label="shape")
    s2 = data.draw(broadcastable_shapes(shape, max_dims=3), label="s2")
    d1, d2 = (data.draw(st.sampled_from([np.float32, np.int32, np.int8, np.float16]))
              for _ in range(2))
    kw = {"min_value": 1, "max_value": 20}
    ops = [Op(shape, d1, **kw), Op(s2, d2, **kw)]
    vmap_case(data, lambda a, b: _arith(mnp.asarray(a), mnp.asarray(b)), ops, rtol=2e-3,
              atol=2e-3)
    ints = [Op(shape, np.int32, min_value=0, max_value=7), Op(s2, np.uint8, max_value=7)]
    vmap_case(data, lambda a, b: _bits(mnp.asarray(a), mnp.asarray(b)), ints)


def _arith(a, b):
    return (a + b, a - b, a * b, a / b, a // b, a % b, a ** 2, -a, abs(a), a < b, a == b,
            a >= 1.5, 2 * a, 1 - b, divmod(a, b))


def _bits(a, b):
    return a & b, a | b, a ^ b, ~a, a << b, a >> 1, 3 >> b
