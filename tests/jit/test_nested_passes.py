"""`optimize` inside the jaxprs that equations hold (cond branches, while cond and body,
scan bodies, nested loops), and the simplification/splat rules being the primitives' own:
the no-ops disappear from the generated code, every held jaxpr keeps its signature, and
values match the un-jitted function and NumPy."""

import ast
import pathlib
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch import lax
from mytorch.core import primitive as primitive_module
from mytorch.core import staging
from mytorch.core.array import from_numpy
from mytorch.core.aval import ShapedArray
from mytorch.core.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var, check_jaxpr
from mytorch.core.primitive import Primitive
from mytorch.lax import elementwise as ew
from mytorch.lax import structural as stl
from mytorch.transforms.fold import fold_constants
from mytorch.transforms.optimize import optimize, optimize_body
from mytorch.transforms.simplify import SplatRule, simplify, unit_rule

ROOT = pathlib.Path(__file__).resolve().parents[2]


def held(closed, prim_name):
    """The jaxprs held by the first `prim_name` equation of `closed` (searched
    recursively), as a flat list of Jaxprs."""
    for eqn in closed.jaxpr.eqns if isinstance(closed, ClosedJaxpr) else closed.eqns:
        subs = []
        for value in eqn.params.values():
            for v in value if isinstance(value, tuple) else (value,):
                if isinstance(v, (Jaxpr, ClosedJaxpr)):
                    subs.append(v.jaxpr if isinstance(v, ClosedJaxpr) else v)
        if eqn.primitive.name == prim_name:
            return subs
        for sub in subs:
            found = held(sub, prim_name)
            if found:
                return found
    return []


def prims(jaxpr):
    return [e.primitive.name for e in jaxpr.eqns]


def signature(jaxpr):
    return ([v.aval for v in jaxpr.constvars], [v.aval for v in jaxpr.invars],
            [v.aval for v in jaxpr.outvars])


def cond_f(p, x):
    return lax.cond(p, lambda x: x * 1.0 + 0.0, lambda x: x, x)


def while_f(x):
    return lax.while_loop(lambda c: c[0] < 3,
                          lambda c: (c[0] + 1, c[1] * 1.0 + 2.0), (0, x))[1]


# ---- cond and while: the generated code ---------------------------------------------------
def test_cond_branch_loses_its_no_ops_in_the_generated_code():
    x = mnp.asarray(np.array([1.5, -2.0, 0.25], np.float32))
    text = mt.jit(cond_f).lower(True, x).as_text()
    branch1 = text[text.index("def cond_f_branch1"):text.index("def cond_f(")]
    assert "np_multiply" not in branch1 and "np_add" not in branch1
    assert "return [a0]" in branch1
    for p in (True, False):
        np.testing.assert_array_equal(np.asarray(mt.jit(cond_f)(p, x)),
                                      np.asarray(cond_f(p, x)))
    np.testing.assert_array_equal(np.asarray(mt.jit(cond_f)(True, x)), np.asarray(x))


def test_while_body_loses_its_multiply_by_one_in_the_generated_code():
    x = mnp.asarray(np.array([1.0, -3.0], np.float32))
    text = mt.jit(while_f).lower(x).as_text()
    body = text[text.index("def while_f_while_body"):text.index("def while_f(")]
    assert "np_multiply" not in body and "1.0" not in body
    added = re.search(r"np_add\(a1, (_s\d+)\)", body)  # 2.0 as a 0-d float32 global
    assert added and f"{added[1]} = 2.0 (float32)" in text
    expected = np.array([1.0, -3.0], np.float32)
    for _ in range(3):
        expected = expected * np.float32(1.0) + np.float32(2.0)
    np.testing.assert_array_equal(np.asarray(mt.jit(while_f)(x)), expected)
    np.testing.assert_array_equal(np.asarray(while_f(x)), expected)


def test_while_cond_and_body_keep_their_signatures():
    closed = mt.make_jaxpr(while_f)(mnp.ones(2))
    before = held(closed, "while")
    after = held(optimize(closed), "while")
    assert [signature(j) for j in after] == [signature(j) for j in before]
    assert prims(after[1]) == ["add", "add"]  # counter + 1, x + 2.0
    check_jaxpr(optimize(closed))


# ---- the pipeline inside bodies -----------------------------------------------------------
def fold_body(i, c):
    one = lax.add(mnp.float32(1.0), mnp.float32(0.0))  # folds to a Literal
    return c * one + lax.iota(mnp.float32, 3)


def test_folding_inside_a_loop_body_makes_literals_only():
    """The iota of the body is not turned into a constant (a body has no constants): its
    signature stays, and the folded 1.0 lets simplify drop the multiply."""
    f = lambda x: lax.fori_loop(0, 3, fold_body, x)
    closed = mt.make_jaxpr(f)(mnp.ones(3))
    (body,) = held(closed, "scan")
    (new,) = held(optimize(closed), "scan")
    assert signature(new) == signature(body)
    assert prims(new) == ["iota", "add"]
    x = np.array([0.5, 1.0, -2.0], np.float32)
    expected = x + 3 * np.arange(3, dtype=np.float32)
    np.testing.assert_array_equal(np.asarray(mt.jit(f)(mnp.asarray(x))), expected)


def test_nested_bodies_are_optimised_recursively():
    """A cond inside a while body inside a scan body: the innermost branch is cleaned."""

    def inner(c):
        return lax.cond(c[0] % 2 == 0, lambda v: lax.neg(lax.neg(v)) * 1.0, lambda v: v + 0.0 - 1.0,
                        c[1])

    def f(x):
        def step(carry, _):
            out = lax.while_loop(lambda c: c[0] < 2, lambda c: (c[0] + 1, inner(c)),
                                 (0, carry))[1]
            return out, out

        return lax.scan(step, x, None, length=2)

    closed = mt.make_jaxpr(f)(mnp.ones(2))
    branches = held(optimize(closed), "cond")
    assert [prims(b) for b in branches] == [["sub"], []]
    x = mnp.asarray(np.array([3.0, -1.0], np.float32))
    got, want = mt.jit(f)(x), f(x)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    # numpy: per while loop, i = 0 (cond true: x) then i = 1 (x - 1)
    np.testing.assert_array_equal(np.asarray(got[1]),
                                  np.array([[2.0, -2.0], [1.0, -3.0]], np.float32))


def test_cse_and_dce_inside_a_body_keep_its_outputs():
    def body(c):
        i, x = c
        unused = mnp.exp(x)  # noqa: F841 -- dead: dce removes it, not the carry
        return i + 1, mnp.sin(x) + mnp.sin(x)

    f = lambda x: lax.while_loop(lambda c: c[0] < 2, body, (0, x))
    closed = mt.make_jaxpr(f)(mnp.ones(2))
    (_, body_jaxpr) = held(optimize(closed), "while")
    assert sorted(prims(body_jaxpr)) == ["add", "add", "sin"]
    assert len(body_jaxpr.outvars) == 2
    x = mnp.asarray(np.array([0.5, 2.0], np.float32))
    want = np.array([0.5, 2.0], np.float32)
    for _ in range(2):
        want = np.sin(want) + np.sin(want)
    np.testing.assert_allclose(np.asarray(mt.jit(f)(x)[1]), want, rtol=1e-6)


def test_effects_inside_a_body_survive():
    seen = []

    def body(c):
        i, x = c
        mt.debug.callback(lambda v: seen.append(int(v)), i)
        return i + 1, x * 1.0

    f = mt.jit(lambda x: lax.while_loop(lambda c: c[0] < 3, body, (0, x))[1])
    np.testing.assert_array_equal(np.asarray(f(mnp.ones(2))), np.ones(2, np.float32))
    assert seen == [0, 1, 2]


def test_reverse_mode_tape_loops_are_optimised_and_keep_their_values():
    """grad of a while loop makes a while_tape (forward, recording) and a scan reading its
    tape (backward): both bodies lose the no-ops and keep their signatures, except the tape row
    that held the constant 1.0 of `* 1.0` (the tangent's factor): once the multiplication
    is gone nothing reads it, so the recording body no longer returns it and the reading
    step no longer takes it. The gradient is the chain rule of sin(sin(sin(x))) in NumPy."""

    def f(x):
        step = lambda c: (c[0] + 1, mnp.sin(c[1]) * 1.0 + 0.0)
        return mnp.sum(lax.while_loop(lambda c: c[0] < 3, step, (0, x))[1])

    closed = mt.make_jaxpr(mt.grad(f))(mnp.ones(3))
    out = optimize(closed)
    one = ShapedArray((), np.dtype(np.float32), weak_type=True)  # the row of the 1.0
    (cond_b, body_b), (cond_a, body_a) = held(closed, "while_tape"), held(out, "while_tape")
    assert signature(cond_a) == signature(cond_b)
    _, ins, outs = signature(body_b)
    assert outs[-1] == one and signature(body_a) == ([], ins, outs[:-1])
    (step_b,), (step_a,) = held(closed, "scan"), held(out, "scan")
    _, ins, outs = signature(step_b)
    assert one in ins and signature(step_a) == ([], [a for a in ins if a != one], outs)
    forward = held(out, "while_tape")[-1]
    assert "mul" not in prims(forward) and prims(forward).count("add") == 1
    x = np.array([0.3, -1.2, 2.0], np.float32)
    s1 = np.sin(x.astype(np.float64))
    s2 = np.sin(s1)
    want = np.cos(s2) * np.cos(s1) * np.cos(x.astype(np.float64))
    got = mt.jit(mt.grad(f))(mnp.asarray(x))
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-6)


def test_a_jaxpr_held_twice_is_optimised_once():
    body = mt.make_jaxpr(lambda x: x * 1.0)(mnp.ones(2)).jaxpr
    memo = {}
    first = optimize_body(body, memo)
    assert optimize_body(body, memo) is first
    assert prims(first) == []
    clean = mt.make_jaxpr(lambda x: mnp.sin(x))(mnp.ones(2)).jaxpr
    assert optimize_body(clean) is clean  # nothing to do: the same object


@settings(max_examples=15, deadline=None)
@given(st.lists(st.floats(-1e3, 1e3, width=32), min_size=0, max_size=4),
       st.booleans(), st.integers(0, 3))
def test_values_match_eager(values, pred, n):
    x = mnp.asarray(np.array(values, np.float32))

    def f(p, x):
        y = lax.cond(p, lambda v: v * 1.0 + 0.0, lambda v: v - 0.0, x)
        return lax.fori_loop(0, n, lambda i, c: (c / 1.0) * 1.0 + 1.0, y)

    want = np.array(values, np.float32)
    for _ in range(n):  # the loop definition, rounding to float32 at every step
        want = want + np.float32(1.0)
    np.testing.assert_array_equal(np.asarray(mt.jit(f)(pred, x)), want)
    np.testing.assert_array_equal(np.asarray(f(pred, x)), want)


def test_checked_nested_optimisation(monkeypatch):
    monkeypatch.setattr(staging, "CHECK_EVERY_JAXPR", True)
    x = mnp.ones(3)
    np.testing.assert_array_equal(np.asarray(mt.jit(while_f)(x)), np.full(3, 7, np.float32))


# ---- the rules belong to the primitives ---------------------------------------------------
def test_lax_primitives_carry_their_simplify_rules():
    for p in (ew.add_p, ew.sub_p, ew.mul_p, ew.div_p, ew.neg_p, ew.convert_element_type_p,
              ew.select_n_p, ew.integer_pow_p, stl.transpose_p, stl.reshape_p,
              stl.broadcast_in_dim_p, stl.squeeze_p, stl.rev_p, stl.slice_p, stl.pad_p,
              stl.concatenate_p):
        assert callable(p.rule("simplify"))
    assert isinstance(stl.broadcast_in_dim_p.rule("splat"), SplatRule)
    with pytest.raises(NotImplementedError, match="'simplify' rule of 'sin'"):
        ew.sin_p.rule("simplify")


twice_p = Primitive("test_nested_twice", kind="elementwise")
twice_p.def_abstract_eval(lambda x, *, times: x)
twice_p.def_lowering("cpu", lambda x, *, times: x * times)
# "twice" by 1 is the identity; by 2 of a twice-by-2 stays (the rule only knows times=1)
twice_p.def_rule("simplify", lambda eqn, defs: eqn.invars[0] if eqn.params["times"] == 1
                 else None)
fill_p = Primitive("test_nested_fill", kind="structural")
fill_p.def_abstract_eval(lambda x, *, shape: ShapedArray(shape, x.dtype, x.weak_type))
fill_p.def_lowering("cpu", lambda x, *, shape: np.broadcast_to(x, shape))
fill_p.def_rule("splat", SplatRule(
    lambda eqn: eqn.invars[0] if type(eqn.invars[0]) is Literal else None,
    lambda lit, out, info: JaxprEqn(fill_p, [lit], {"shape": out.aval.shape}, [out], info)))
for _p in (twice_p, fill_p):
    primitive_module._REGISTRY.pop(_p.name, None)


def lit(value):
    return Literal(from_numpy(np.asarray(value, np.float32), weak_type=True),
                   ShapedArray((), np.dtype(np.float32), True))


def test_simplify_uses_the_rule_the_primitive_registered():
    a = Var(ShapedArray((3,), np.dtype(np.float32)))
    b, c = Var(a.aval), Var(a.aval)
    jaxpr = Jaxpr([], [a], [JaxprEqn(twice_p, [a], {"times": 1}, [b]),
                            JaxprEqn(twice_p, [b], {"times": 2}, [c])], [c])
    out = simplify(jaxpr)
    assert prims(out) == ["test_nested_twice"]
    assert out.eqns[0].invars == [a] and out.eqns[0].params == {"times": 2}


def test_unit_rules_and_folding_read_a_primitives_splat_rule():
    """`x * fill(1.0)` is x by mul's unit rule reading fill's splat rule; `fill(2.0) *
    3.0` folds into a fill of 6.0 built by fill's own `make`."""
    a = Var(ShapedArray((3,), np.dtype(np.float32)))
    ones, twos, six = (Var(ShapedArray((3,), np.dtype(np.float32), True)) for _ in "123")
    y = Var(a.aval)
    jaxpr = Jaxpr([], [a], [
        JaxprEqn(fill_p, [lit(1.0)], {"shape": (3,)}, [ones]),
        JaxprEqn(ew.mul_p, [a, ones], {}, [y]),
        JaxprEqn(fill_p, [lit(2.0)], {"shape": (3,)}, [twos]),
        JaxprEqn(ew.mul_p, [twos, lit(3.0)], {}, [six]),
    ], [y, six])
    out = simplify(jaxpr)
    assert out.outvars[0] is a
    folded, _ = fold_constants((out, []))
    last = folded.eqns[-1]
    assert last.primitive is fill_p and float(last.invars[0].val) == 6.0
    assert last.outvars == [six]
    assert unit_rule(1, (0, 1))(jaxpr.eqns[1], {ones: jaxpr.eqns[0]}) is a


def test_transforms_and_core_never_import_lax():
    """The passes only interpret rules: nothing below lax imports it."""
    for folder in ("mytorch/transforms", "mytorch/core"):
        for path in (ROOT / folder).glob("*.py"):
            tree = ast.parse(path.read_text())
            for node in ast.walk(tree):
                names = []
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom):
                    names = [node.module or ""]
                    if node.module == "mytorch":
                        names += [f"mytorch.{a.name}" for a in node.names]
                assert not any(n == "mytorch.lax" or n.startswith("mytorch.lax.")
                               for n in names), f"{path.name} imports {names}"
