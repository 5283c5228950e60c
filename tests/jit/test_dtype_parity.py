"""jit keeps eager dtypes and weak types exactly: every output of a jitted program has the
dtype, weak type, shape and values of the un-jitted program (the reference), in particular
where operands are literals and constants: Python scalars and NumPy scalars of every dtype
(float16, bfloat16, int8, uint8, ... with a Python int or float beside them), in every
primitive (dot_general, select_n, clamp, pow, integer and comparison ops, reductions, pad
values, scatter/gather fills, and inside cond, scan and while bodies), through grad, and in
fused elementwise blocks. A program the eager path rejects must be rejected under jit with
the same error class.
"""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch import lax
from mytorch.core.trace import to_concrete
from tests.jit.jit_cases import BF16, CASES, DTYPES, F32, F64, I64
from tests.jit.random_programs import programs
from tests.jit.test_codegen import assert_same

I8, U8, F16 = np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.float16)
I32, BOOL = np.dtype(np.int32), np.dtype(np.bool_)
OPERAND_DTYPES = [F32, F16, BF16, I8, U8, I32, BOOL]
SCALARS = [2.5, 2, -1, -0.0, True, np.float32(2.0), np.int8(3), np.float16(1.5), np.uint8(7),
           float("nan")]  # the first is hypothesis' first pick
_INDICES = np.array([0, 2, -7, 9])


def _check_parity(fn, args, what):
    """jit(fn)(*args) has the eager result's types and values (twice: traced, then cached),
    or both raise the same error class."""
    try:
        want = fn(*args)
    except Exception as e:  # noqa: BLE001 - any eager error must be jit's error too
        with pytest.raises(type(e)):
            mt.jit(fn)(*args)
        return
    # a Python scalar the eager program returns comes out of jit as a (weak) 0-d array
    want = mt.tree_util.tree_map(lambda w: w if isinstance(w, mt.Array) else to_concrete(w),
                                 want)
    jitted = mt.jit(fn)
    assert_same(jitted(*args), want, what=f"{what} (traced)")
    assert_same(jitted(*args), want, what=f"{what} (cached)")


def _operand(dt, shape):
    values = (np.arange(int(np.prod(shape))) % 7 - 2).reshape(shape)
    return mnp.asarray(values.astype(dt))


# ---- literal operands in every primitive ---------------------------------------------------
LITERAL_PROGRAMS = {
    "add": lambda x, s: x + s, "radd": lambda x, s: s + x, "sub": lambda x, s: x - s,
    "rsub": lambda x, s: s - x, "mul": lambda x, s: x * s, "div": lambda x, s: x / s,
    "rdiv": lambda x, s: s / x, "floordiv": lambda x, s: x // s, "mod": lambda x, s: x % s,
    "pow": lambda x, s: x ** s, "rpow": lambda x, s: s ** x, "square": lambda x, s: (x - s) ** 2,
    "cube": lambda x, s: (x * s) ** 3, "maximum": lambda x, s: mnp.maximum(x, s),
    "minimum": lambda x, s: mnp.minimum(s, x), "eq": lambda x, s: x == s,
    "lt": lambda x, s: x < s, "ge": lambda x, s: s >= x, "and": lambda x, s: x & s,
    "or": lambda x, s: s | x, "xor": lambda x, s: x ^ s, "shift": lambda x, s: x << s,
    "where": lambda x, s: mnp.where(x > s, x, s), "where_lit": lambda x, s: mnp.where(x > 0, s, x),
    "where_two_lits": lambda x, s: mnp.where(x > 0, s, 1),
    "select_n": lambda x, s: lax.select(x > s, x, mnp.full_like(x, s)),
    "clip_lo": lambda x, s: mnp.clip(x, s, None), "clip_hi": lambda x, s: mnp.clip(x, None, s),
    "clamp": lambda x, s: lax.clamp(mnp.asarray(s, x.dtype), x, mnp.asarray(s, x.dtype)),
    "tensordot": lambda x, s: mnp.tensordot(x, s, 0),
    "einsum": lambda x, s: mnp.einsum("...,->...", x, s), "dot": lambda x, s: mnp.dot(x, s),
    "outer": lambda x, s: mnp.outer(x, s),
    "matvec": lambda x, s: mnp.reshape(x, (-1,)) @ mnp.full((x.size,), s, x.dtype),
    "full_like": lambda x, s: mnp.full_like(x, s), "pad": lambda x, s: mnp.pad(x, 1, constant_values=s),
    "at_set": lambda x, s: x.reshape(-1).at[0].set(s),
    "at_add": lambda x, s: x.reshape(-1).at[1].add(s),
    "at_mul": lambda x, s: x.reshape(-1).at[1].multiply(s),
    "at_min": lambda x, s: x.reshape(-1).at[1].min(s),
    "at_max": lambda x, s: x.reshape(-1).at[1].max(s),
    "take_fill": lambda x, s: mnp.take(x.reshape(-1), _INDICES, mode="fill", fill_value=s),
    "concat": lambda x, s: mnp.concatenate([x.reshape(-1), mnp.full((2,), s)]),
    "sum": lambda x, s: mnp.sum(x * s), "max": lambda x, s: mnp.max(x + s),
    "sum_initial": lambda x, s: mnp.sum(x, axis=-1, initial=s),
    "max_initial": lambda x, s: mnp.max(x, axis=-1, initial=s),
    "lax_reduce": lambda x, s: lax.reduce(x, s, lax.add, (0,)),
    "reduce_window": lambda x, s: lax.reduce_window(x.reshape(-1), s, lax.max, (2,), (1,),
                                                    "VALID"),
    "get_fill": lambda x, s: x.reshape(-1).at[_INDICES].get(mode="fill", fill_value=s),
    "prod": lambda x, s: mnp.prod(x + s), "mean": lambda x, s: mnp.mean(x - s),
    "cumsum": lambda x, s: mnp.cumsum(x - s), "cummax": lambda x, s: lax.cummax(
        mnp.reshape(x + s, (-1,)), 0),
    "sort": lambda x, s: mnp.sort((x * s).reshape(-1)), "argmax": lambda x, s: mnp.argmax(x + s),
    "cond": lambda x, s: lax.cond(mnp.sum(x) > 0, lambda v: v * s, lambda v: v + s, x),
    "cond_returns_literal": lambda x, s: lax.cond(mnp.sum(x) > 0, lambda v: s, lambda v: s, x),
    "scan": lambda x, s: lax.scan(lambda c, e: (c + e * s, c * s), x.reshape(-1)[0] * 0,
                                  x.reshape(-1)),
    "scan_literal_carry": lambda x, s: lax.scan(lambda c, e: (c + s, s), s, x.reshape(-1)),
    "while": lambda x, s: lax.while_loop(lambda c: c[1] < 3,
                                         lambda c: (c[0] * s + s, c[1] + 1), (x, 0)),
    "fori": lambda x, s: lax.fori_loop(0, 3, lambda i, v: v + s, x),
    "nextafter": lambda x, s: mnp.nextafter(x, s), "atan2": lambda x, s: mnp.arctan2(x, s),
    "logaddexp": lambda x, s: mnp.logaddexp(x, s), "copysign": lambda x, s: mnp.copysign(x, s),
    "hypot": lambda x, s: mnp.hypot(x, s), "fmod": lambda x, s: mnp.fmod(x, s),
    "sign": lambda x, s: mnp.sign(x - s), "round": lambda x, s: mnp.round(x * s),
    "astype": lambda x, s: (x + s).astype(np.float32),
    "chain": lambda x, s: ((x + s) * s - s) * x,
    "literal_only": lambda x, s: mnp.asarray(s) * 2 + mnp.sum(x) * 0,
}


@pytest.mark.parametrize("name", sorted(LITERAL_PROGRAMS))
@pytest.mark.parametrize("dt", OPERAND_DTYPES, ids=str)
@settings(max_examples=3)
@given(s=st.sampled_from(SCALARS), shape=st.sampled_from([(2, 3), (), (0,)]))
def test_literal_operands_keep_eager_types(name, dt, s, shape):
    _check_parity(lambda x: LITERAL_PROGRAMS[name](x, s), [_operand(dt, shape)],
                  f"{name}({dt}{list(shape)}, {s!r})")


@pytest.mark.parametrize("name", ["add", "mul", "chain", "where", "select_n", "clip_lo",
                                  "pow", "square", "maximum", "lt", "xor"])
@pytest.mark.parametrize("dt", [F32, I8, U8, I32], ids=str)
def test_literal_operands_in_fused_blocks(name, dt, monkeypatch):
    """Arrays large enough for the blocked evaluation of elementwise runs (fusion.py; the
    compiled loops that replace it where a C++ compiler is present are turned off here and
    checked the same way in test_native_loops.py)."""
    from mytorch.backends.numpy import native

    monkeypatch.setattr(native, "available", lambda: False)
    op = LITERAL_PROGRAMS[name]
    x = _operand(dt, (1 << 18,))
    for s in (2, 2.5, np.float32(0.5), True):
        _check_parity(lambda x, s=s: op(op(x, s), s), [x], f"{name}({dt}, {s!r}) fused")


@pytest.mark.parametrize("name", ["add", "div", "pow", "tensordot", "einsum", "where_lit",
                                  "pad", "at_add", "scan", "cond", "sum", "dot", "clip_lo"])
@pytest.mark.parametrize("dt", [F64, I64, F32, I32, np.dtype(np.uint32)], ids=str)
def test_literal_operands_keep_eager_types_x64(x64, name, dt):
    op = LITERAL_PROGRAMS[name]
    for s, shape in itertools.product([2, 2.5, np.float32(3.0), np.int64(2), True],
                                      [(), (3,)]):
        _check_parity(lambda x, s=s: op(x, s), [_operand(dt, shape)], f"{name}({dt}, {s!r})")


# ---- the examples from the issue, with their types stated ------------------------------------
def test_dot_general_of_a_literal_keeps_float32():
    x32 = mnp.asarray(np.array([1.0, 2.0, 3.0], np.float32))
    for f in (lambda x: mnp.tensordot(x, 3.0, 0), lambda x: mnp.einsum("i,->i", x, 2.0),
              lambda x: mnp.tensordot(x, np.float32(3.0), 0)):
        out = mt.jit(f)(x32)
        assert out.dtype == np.float32 and not out.weak_type
        np.testing.assert_array_equal(np.asarray(out), np.asarray(f(x32)))


def test_jit_of_grad_through_dot_of_cond_keeps_float32():
    v = mnp.asarray(np.array([1.0, 2.0, 3.0], np.float32))

    def f(x):
        return mnp.dot(v, lax.cond(x > 0, lambda y: y * v + 2.0, lambda y: v - y, x))

    for x in (1.5, -0.5, mnp.asarray(np.float32(0.25))):
        g = mt.jit(mt.grad(f))(x)
        assert g.dtype == np.float32
        # d/dx dot(v, x v + 2) = |v|^2 = 14; d/dx dot(v, v - x) = -sum(v) = -6
        assert float(g) == (14.0 if float(np.asarray(x)) > 0 else -6.0)
        assert_same(g, mt.grad(f)(x))


@pytest.mark.parametrize("dt", [F16, BF16, I8, U8], ids=str)
def test_narrow_dtypes_with_python_scalars(dt):
    x = _operand(dt, (4,))
    progs = [lambda x: x * 2 + 1, lambda x: mnp.dot(x, x) * 3, lambda x: mnp.tensordot(x, 2, 0),
             lambda x: (x - 1) * (x + 1), lambda x: mnp.where(x > 1, x, 3),
             lambda x, s=2: lax.scan(lambda c, e: (c * s + e, c), x[0], x)]
    for k, f in enumerate(progs):
        _check_parity(f, [x], f"program {k} on {dt}")
    for s in (2, 2.5, True):  # Python scalars as (weakly typed) arguments
        _check_parity(lambda x, s: x * s + s, [x, s], f"x * s + s on {dt} with {s!r}")


# ---- every primitive's example program, with operands closed over ---------------------------
CASE_IDS = [(name, i) for name in sorted(CASES) for i in range(len(CASES[name]))]


def _closed_over(draw, a):
    """`a` as a closed-over constant: a mytorch array or (0-d) a Python scalar."""
    if a.ndim == 0 and draw(st.booleans(), label="as a Python scalar"):
        return a.item() if a.dtype != BF16 else float(a)
    return mnp.asarray(a)


@pytest.mark.parametrize("name,i", CASE_IDS, ids=[f"{n}-{i}" for n, i in CASE_IDS])
@settings(max_examples=4)
@given(data=st.data())
def test_closed_over_operands_keep_eager_types(name, i, data):
    """Each primitive's example with some operands closed over (literals once traced, or
    hoisted constants), down to none left as arguments."""
    fn, args = CASES[name][i](data.draw, DTYPES)
    n = len(args)
    closed = data.draw(st.lists(st.booleans(), min_size=n, max_size=n), label="closed over")
    consts = [_closed_over(data.draw, np.asarray(a)) if c else None
              for a, c in zip(args, closed)]

    def program(*dyn):
        it = iter(dyn)
        return fn(*[k if c else next(it) for k, c in zip(consts, closed)])

    _check_parity(program, [mnp.asarray(a) for a, c in zip(args, closed) if not c], name)


# ---- random programs ----------------------------------------------------------------------
@settings(max_examples=40)
@given(program=programs(), dt=st.sampled_from([F32, F16, BF16]))
def test_random_programs_keep_eager_types(program, dt):
    args = [mnp.asarray(a.astype(dt)) for a in program.sample_args(np.random.default_rng(0))]
    _check_parity(program, args, f"{program} on {dt}")
