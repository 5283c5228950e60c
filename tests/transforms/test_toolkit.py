"""The transform toolkit: `fixpoint` (bounded mask growth) against hand-computed closures,
and `jvp_jaxpr` against NumPy closed-form derivatives and `mt.jvp` of the traced function,
for every zero/nonzero input mask with and without instantiated output tangents."""

import itertools

import numpy as np
import pytest

import mytorch as mt
import mytorch.numpy as mnp
from mytorch.core.jaxpr import eval_jaxpr
from mytorch.lax.loops import scan
from mytorch.transforms.fixpoint import fixpoint
from mytorch.transforms.jvp import jvp_jaxpr


# ---- fixpoint ----------------------------------------------------------------------------
def _reach_step(edges, calls):
    """A monotone step: a flag is set if it was, or if an edge leads to it from a set one."""
    def step(mask):
        calls.append(list(mask))
        new = list(mask)
        for src, dst in edges:
            new[dst] = new[dst] or mask[src]
        return new, sum(new)
    return step


def test_fixpoint_grows_a_chain_to_its_closure():
    calls = []
    edges = [(0, 1), (1, 2), (2, 3)]  # one new flag per step: the longest possible run
    mask, result = fixpoint(_reach_step(edges, calls), [True, False, False, False, False])
    assert mask == [True, True, True, True, False]
    assert result == 4
    assert len(calls) == 4 <= 5 + 1
    assert calls[-1] == mask  # the result is the step's for the stable mask


def test_fixpoint_stable_start_takes_one_step():
    calls = []
    mask, result = fixpoint(_reach_step([(0, 1)], calls), [False, False])
    assert (mask, result, len(calls)) == ([False, False], 0, 1)


def test_fixpoint_of_an_empty_mask():
    mask, result = fixpoint(lambda m: (m, "done"), [])
    assert (mask, result) == ([], "done")


def test_fixpoint_raises_on_a_step_that_does_not_converge():
    def toggle(mask):
        return [not f for f in mask], None

    with pytest.raises(RuntimeError, match=r"loop_mask: .*did not stop changing within 3 "
                                           r"steps.*not monotone"):
        fixpoint(toggle, [True, False], name="loop_mask")


def test_fixpoint_honours_its_limit():
    calls = []
    with pytest.raises(RuntimeError, match="within 2 steps"):
        fixpoint(_reach_step([(0, 1), (1, 2), (2, 3)], calls), [True, False, False, False],
                 limit=2)
    assert len(calls) == 2


def test_fixpoint_rejects_a_step_that_changes_the_mask_length():
    with pytest.raises(RuntimeError, match="mask of 2 flags into one of 3"):
        fixpoint(lambda m: ([*m, True], None), [True, False], name="grow")


# ---- jvp_jaxpr ---------------------------------------------------------------------------
def _f(x, y, z):
    return [mnp.sin(x) * y, z + 1.0, x * 2.0]


def _closed_form(x, y, z, tx, ty, tz):
    """The tangents of _f's outputs, by hand."""
    return [np.cos(x) * y * tx + np.sin(x) * ty, tz, 2.0 * tx]


_ARGS = [np.array([0.3, -1.2, 2.0], np.float32), np.array([1.5, 0.5, -0.7], np.float32),
         np.array([[4.0, -2.0, 0.25]], np.float32)]
_DIRS = [np.array([1.0, -0.5, 2.0], np.float32), np.array([0.2, 0.3, -1.0], np.float32),
         np.array([[-1.5, 0.5, 3.0]], np.float32)]
# which inputs each output's tangent depends on
_DEPENDS = [(0, 1), (2,), (0,)]


@pytest.mark.parametrize("instantiate", [False, True, [True, False, False]])
@pytest.mark.parametrize("nonzeros", list(itertools.product([False, True], repeat=3)))
def test_jvp_jaxpr_matches_jvp_and_closed_form(nonzeros, instantiate):
    closed = mt.make_jaxpr(_f)(*_ARGS)
    assert not closed.consts
    new, consts, out_nz = jvp_jaxpr(closed.jaxpr, list(nonzeros), instantiate, "f_jvp")
    inst = [instantiate] * 3 if isinstance(instantiate, bool) else instantiate
    expect_nz = [any(nonzeros[i] for i in dep) or i_ for dep, i_ in zip(_DEPENDS, inst)]
    assert out_nz == expect_nz
    n_t = sum(nonzeros)
    assert len(new.invars) == len(consts) + 3 + n_t
    assert len(new.outvars) == 3 + sum(out_nz)

    outs = eval_jaxpr(new, [], *consts, *_ARGS, *[d for d, f in zip(_DIRS, nonzeros) if f])
    dirs = [d if f else np.zeros_like(d) for d, f in zip(_DIRS, nonzeros)]
    ref_out, ref_t = mt.jvp(_f, _ARGS, dirs)
    by_hand = _closed_form(*_ARGS, *dirs)
    for got, want in zip(outs[:3], ref_out):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)
    t_it = iter(outs[3:])
    for flag, want, hand in zip(out_nz, ref_t, by_hand):
        if flag:
            got = np.asarray(next(t_it))
            np.testing.assert_allclose(got, np.asarray(want), rtol=1e-6, atol=1e-6)
            np.testing.assert_allclose(got, hand, rtol=1e-5, atol=1e-6)
        else:  # a tangent left out is zero in the reference too
            np.testing.assert_array_equal(hand, np.zeros_like(hand))


def test_jvp_jaxpr_takes_explicit_avals_and_a_non_float_input():
    def g(x, n):
        return [x * n.astype(np.float32)]

    x, n = np.array([1.0, 2.0], np.float32), np.array([3, 4], np.int32)
    closed = mt.make_jaxpr(g)(x, n)
    avals = [v.aval for v in closed.jaxpr.invars]
    new, consts, out_nz = jvp_jaxpr(closed.jaxpr, [True, False], False, avals=avals)
    assert out_nz == [True]
    _, t = eval_jaxpr(new, [], *consts, x, n, np.array([0.5, -1.0], np.float32))
    np.testing.assert_allclose(np.asarray(t), [1.5, -4.0])


# ---- the loop rules' fixpoints -----------------------------------------------------------
def _rotate(carry, x):
    a, b, c = carry
    return (b, c, c * x), a


def _unrolled(init, xs):
    carry, ys = init, []
    for i in range(xs.shape[0]):
        carry, y = _rotate(carry, xs[i])
        ys.append(y)
    return carry, mnp.stack(ys)


def test_scan_jvp_carries_a_tangent_the_body_passes_along():
    """Only `c` has a tangent at first; the body hands it to `b`, then to `a` (and the ys):
    the fixpoint needs three rounds. Reference: the unrolled Python loop."""
    init = (np.float32(1.0), np.float32(2.0), np.float32(3.0))
    t_init = (np.float32(0.0), np.float32(0.0), np.float32(1.0))
    xs = np.array([0.5, 2.0, -1.0, 1.5], np.float32)

    def run(loop):
        return mt.jvp(lambda a, b, c: loop((a, b, c), xs), init, t_init)

    (out, t_out), (ref, t_ref) = run(lambda i, x: scan(_rotate, i, x)), run(_unrolled)
    for got, want in zip([*out[0], out[1], *t_out[0], t_out[1]],
                         [*ref[0], ref[1], *t_ref[0], t_ref[1]]):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)
    assert float(np.abs(np.asarray(t_out[0][0]))) > 0  # the tangent did reach `a`
