"""Reverse mode of while_loop where its trip count is only known at run time: under jit,
inside cond/scan bodies, and with checkpoint_every. Derivatives are checked against float64
central finite differences, vmap against the per-example loop, and the tape's bookkeeping
(checkpoint segments, per-element rows of a batched tape) against a plain record."""

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch import lax
from mytorch.backends.numpy.control_flow_scan import prune_scan
from mytorch.backends.numpy.runtime import run_while_tape
from mytorch.backends.numpy.tape import tape_steps, unbox
from mytorch.core.jaxpr import Jaxpr
from mytorch.lax.scan import scan_p
from mytorch.lax.while_tape import TAPE_DTYPE
from tests.batching.vmap_check import assert_tree_close, loop_reference

floats = st.floats(-1.5, 1.5, allow_nan=False)
EVERY = st.sampled_from([None, 1, 2, 3, 5])


def fd_grad(f, args, eps=1e-6):
    """Central finite differences of the scalar f with respect to each of `args`."""
    args = [np.asarray(a, np.float64) for a in args]
    out = []
    for i, a in enumerate(args):
        g = np.zeros_like(a)
        for j in np.ndindex(*a.shape):
            e = np.zeros_like(a)
            e[j] = eps
            hi = [x + e if k == i else x for k, x in enumerate(args)]
            lo = [x - e if k == i else x for k, x in enumerate(args)]
            g[j] = (float(f(*map(mnp.asarray, hi))) - float(f(*map(mnp.asarray, lo)))) / (2 * eps)
        out.append(g)
    return out


def _loop(n, every):
    """sum(final x**2) of n steps mixing the carry with a closed-over weight `w` (a loop
    constant residual) and a counter (the predicate)."""
    def f(x, w):
        def body(c):
            i, x, y = c
            return i + 1, mnp.sin(x) * w + y * 0.5, y - x * x * 0.25
        c = lax.while_loop(lambda c: c[0] < n, body, (0, x, mnp.cos(x)),
                           checkpoint_every=every)
        return mnp.sum(c[1] * c[1] + c[2])
    return f


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(shape=st.sampled_from([(), (3,), (2, 2)]), n=st.integers(0, 7), every=EVERY,
       data=st.data())
def test_jit_grad_and_grad_jit_match_finite_differences(x64, shape, n, every, data):
    size = int(np.prod(shape))
    x = np.asarray(data.draw(st.lists(floats, min_size=size, max_size=size))).reshape(shape)
    w = np.asarray(data.draw(floats))
    f = _loop(n, every)
    want = fd_grad(f, [x, w])
    for g in (mt.jit(mt.grad(f, argnums=(0, 1))), mt.grad(mt.jit(f), argnums=(0, 1)),
              mt.grad(f, argnums=(0, 1))):
        got = g(mnp.asarray(x), mnp.asarray(w))
        for a, b in zip(got, want):
            np.testing.assert_allclose(np.asarray(a), b, rtol=1e-6, atol=1e-7)


def test_jitted_gradient_records_on_a_tape_and_compiles_both_loops():
    f = _loop(3, None)
    x, w = mnp.asarray([0.1, 0.2]), mnp.asarray(0.5)
    lowered = mt.jit(mt.grad(f)).lower(x, w)
    prims = {e.primitive.name for e in lowered.jaxpr.eqns}
    assert {"while_tape", "scan"} <= prims and "while" not in prims
    (bwd,) = [e for e in lowered.jaxpr.eqns if e.primitive.name == "scan"]
    assert bwd.params["tape"] == () and bwd.params["length"] is None
    text = lowered.as_text()
    assert "def f_while_tape_body(" in text and "def f_scan_body(" in text
    assert "scan_tape_loop" in text  # the runner reading the tape


def _newton_sqrt(a, every=None):
    def cond(c):
        return (mnp.abs(c[1] * c[1] - a) > 1e-9 * a) & (c[0] < 100)

    return lax.while_loop(cond, lambda c: (c[0] + 1, 0.5 * (c[1] + a / c[1])), (0, a),
                          checkpoint_every=every)[1]


@pytest.mark.parametrize("every", [None, 1, 4])
def test_newton_under_jit_and_vmap_matches_implicit_derivative(x64, every):
    # different trip counts per element: a batched predicate, a batched tape
    a = np.asarray([0.25, 2.0, 9.0, 1234.5])
    want = 0.5 / np.sqrt(a)  # d sqrt(a)/da: the implicit-function derivative
    g = mt.grad(lambda a: _newton_sqrt(a, every))
    for h in (mt.vmap(mt.jit(g)), mt.jit(mt.vmap(g)),
              mt.jit(mt.grad(lambda v: mnp.sum(mt.vmap(lambda a: _newton_sqrt(a, every))(v)))),
              mt.vmap(g)):
        np.testing.assert_allclose(np.asarray(h(mnp.asarray(a))), want, rtol=1e-7)
    aa = np.stack([a, a * 3.0, a + 1.0])
    got = mt.vmap(mt.vmap(mt.jit(g)))(mnp.asarray(aa))
    np.testing.assert_allclose(np.asarray(got), 0.5 / np.sqrt(aa), rtol=1e-7)


def test_vmap_of_jitted_gradient_with_batched_trip_counts_matches_loop():
    def f(n, x):
        def body(c):
            return c[0] + 1, mnp.sin(c[1]) * 1.5 + c[1] * 0.25
        return mt.grad(lambda x: mnp.sum(lax.while_loop(lambda c: c[0] < n, body,
                                                        (0, x))[1] ** 2))(x)

    ns = np.asarray([0, 3, 1, 5], np.int32)
    xs = np.linspace(-1, 1, 8, dtype=np.float32).reshape(4, 2)
    want = loop_reference(f, (ns, xs), 0, 0)
    assert_tree_close(mt.vmap(mt.jit(f))(mnp.asarray(ns), mnp.asarray(xs)), want, rtol=1e-5)
    assert_tree_close(mt.jit(mt.vmap(f))(mnp.asarray(ns), mnp.asarray(xs)), want, rtol=1e-5)
    # the batch axis of the carry is not the first one
    got = mt.vmap(mt.jit(f), in_axes=(0, 1))(mnp.asarray(ns), mnp.asarray(xs.T.copy()))
    assert_tree_close(got, want, rtol=1e-5)


@settings(max_examples=10, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(x=st.lists(floats, min_size=2, max_size=2), every=EVERY)
def test_while_inside_cond_and_scan_differentiates_in_reverse(x64, x, every):
    def inner(v, n):
        return lax.while_loop(lambda c: c[0] < n,
                              lambda c: (c[0] + 1, c[1] * 0.9 + mnp.sin(c[1])), (0, v),
                              checkpoint_every=every)[1]

    def in_cond(v):
        return lax.cond(mnp.sum(v) > 0, lambda u: mnp.sum(inner(u, 3) ** 2),
                        lambda u: mnp.sum(u * 2.0), v)

    def in_scan(v):
        def step(c, k):  # the trip count of the inner loop changes from step to step
            return inner(c, k) * 0.5 + c, mnp.sum(c)
        c, ys = lax.scan(step, v, mnp.arange(4))
        return mnp.sum(c ** 2) + mnp.sum(ys)

    x = np.asarray(x)
    assume(abs(x.sum()) > 1e-3)  # finite differences must not straddle the branch switch
    for f in (in_cond, in_scan):
        want = fd_grad(f, [x])[0]
        for g in (mt.grad(f), mt.jit(mt.grad(f)), mt.grad(mt.jit(f))):
            np.testing.assert_allclose(np.asarray(g(mnp.asarray(x))), want, rtol=1e-6,
                                       atol=1e-7)


def test_donated_operands_do_not_corrupt_the_tape(x64):
    f = _loop(4, 2)
    x, w = np.asarray([0.3, -0.7]), np.asarray(0.8)
    want = mt.grad(f)(mnp.asarray(x), mnp.asarray(w))
    got = mt.jit(mt.grad(f), donate_argnums=0)(mnp.asarray(x), mnp.asarray(w))
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12)


def test_checkpoint_every_must_be_a_positive_int():
    with pytest.raises(ValueError, match="checkpoint_every must be a positive int"):
        lax.while_loop(lambda c: c < 3, lambda c: c + 1, 0, checkpoint_every=0)


# ---- the tape itself -----------------------------------------------------------------------
def _record(n, every, batch_shape=()):
    """A loop of n steps on NumPy values whose row at step i is [carry before it, i]."""
    def cond(i, x):
        return [np.asarray(i < n)]

    def body(i, x):
        return [i + 1, x * 2.0, x.copy(), np.asarray(i)]

    return run_while_tape(cond, body, 0, 0, 2, batch_shape, every,
                          [np.asarray(0), np.ones(2)])


@given(n=st.integers(0, 12), every=st.integers(1, 5))
def test_checkpointed_tape_keeps_every_kth_carry_and_replays_the_rows(n, every):
    *_, plain = _record(n, None)
    *_, ckpt = _record(n, every)
    tape = unbox(ckpt)
    assert len(tape._snapshots) == -(-n // every) and not tape._rows  # O(N/k) carries kept
    for reverse in (False, True):
        a, b = list(unbox(plain).steps(reverse)), list(tape.steps(reverse))
        assert [int(r[1]) for r in a] == [int(r[1]) for r in b] == (
            list(range(n))[::-1] if reverse else list(range(n)))
        for r, s in zip(a, b):
            np.testing.assert_array_equal(r[0], s[0])


def test_batched_tape_of_independent_elements_aligns_steps_and_masks():
    # three element tapes of different lengths gathered into one batched read
    tapes = [_record(n, None)[-1] for n in (2, 0, 3)]
    batched = np.empty((3,), TAPE_DTYPE)
    for i, t in enumerate(tapes):
        batched[i] = t
    for reverse in (False, True):
        steps = list(tape_steps(batched, (3,), reverse, 2))
        order = [2, 1, 0] if reverse else [0, 1, 2]
        assert len(steps) == 3
        for t, rows in zip(order, steps):
            np.testing.assert_array_equal(rows[-1], [t < 2, False, True])
            ran = rows[1][rows[-1]]
            assert (ran == t).all()  # each element's step t lines up with step t


def test_a_tape_nothing_reads_compiles_to_a_plain_loop():
    def f(x):  # the loop's tangent is computed, then discarded by stop_gradient
        c = lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, mnp.sin(c[1])), (0, x))
        return mnp.sum(lax.stop_gradient(c[1]) * x)

    x = mnp.asarray([0.3, 0.5])
    g = mt.jit(mt.grad(f))
    text = g.lower(x).as_text()
    assert "def f_while_body(" in text and "while_tape_body" not in text
    np.testing.assert_allclose(np.asarray(g(x)), np.sin(np.sin(np.sin(np.asarray(x)))),
                               rtol=1e-6)


def _fixed_point_loss(w, x):
    """sum(h^2) of h <- tanh(x + h w) run until the step is below 1e-6: `delta`, a carry only
    the predicate reads, has a tangent but never a cotangent."""
    def body(c):
        i, h, _ = c
        new = mnp.tanh(x + h * w)
        return i + 1, new, mnp.max(mnp.abs(new - h))

    c = lax.while_loop(lambda c: (c[2] > 1e-6) & (c[0] < 500), body,
                       (0, mnp.zeros_like(x), mnp.asarray(np.inf, x.dtype)))
    return mnp.sum(c[1] * c[1])


def test_the_backward_loop_drops_what_only_the_predicate_reads(x64):
    w, x = mnp.asarray(0.7), mnp.asarray([0.3, -0.5, 1.0])
    grad = mt.grad(_fixed_point_loss, argnums=(0, 1))
    g = mt.jit(grad)
    jaxpr = g.lower(w, x).jaxpr.jaxpr  # optimised: its tape rows are pruned
    (bwd,) = [e for e in jaxpr.eqns if e.primitive.name == "scan" and e.params["tape"] == ()]
    # carries of the transposed loop: the cotangents of w, x (sums) and h, not delta's
    assert bwd.params["num_carry"] == 3
    (fwd,) = [e for e in mt.make_jaxpr(grad)(w, x).jaxpr.eqns
              if e.primitive.name == "while_tape"]
    (pruned,) = [e for e in jaxpr.eqns if e.primitive.name == "while_tape"]
    n_rows = [len(e.params["body_jaxpr"].outvars) - e.params["num_carry"] for e in (fwd, pruned)]
    assert n_rows[1] < n_rows[0]  # the max's derivative rows are no longer recorded
    want = fd_grad(_fixed_point_loss, [np.asarray(w), np.asarray(x)])
    for a, b in zip(g(w, x), want):
        np.testing.assert_allclose(np.asarray(a), b, rtol=1e-6, atol=1e-8)


def test_nested_vmap_where_only_the_outer_axis_changes_the_trip_count():
    # the inner vmap sees one trip count (no mask), the outer one different trip counts:
    # its finished elements must stop although the inner level never masked them
    def f(n, x):
        def body(c):
            return c[0] + 1, mnp.sin(c[1]) * 1.5 + c[1] * 0.25
        return mt.value_and_grad(
            lambda x: lax.while_loop(lambda c: c[0] < n, body, (0, x))[1] ** 2)(x)

    ns = np.asarray([0, 3, 1], np.int32)
    xs = np.linspace(-1, 1, 6, dtype=np.float32).reshape(3, 2)
    want = [np.stack([np.stack([np.asarray(f(mnp.asarray(n), mnp.asarray(x))[k]) for x in row])
                      for n, row in zip(ns, xs)]) for k in (0, 1)]
    for inner in (mt.jit(f), f):
        g = mt.vmap(lambda n, row: mt.vmap(inner, in_axes=(None, 0))(n, row))
        for h in (g, mt.jit(g)):
            got = h(mnp.asarray(ns), mnp.asarray(xs))
            for a, b in zip(got, want):
                np.testing.assert_allclose(np.asarray(a), b, rtol=1e-5, atol=1e-6)


def test_forward_mode_through_the_backward_loop(x64):
    # the vjp function of a jitted loop is linear in the cotangent: its JVP in that
    # cotangent is itself (the tape's rows are constants there)
    f = mt.jit(_loop(4, None))
    x, w = mnp.asarray([0.3, -0.6]), mnp.asarray(0.9)
    _, vjp_fn = mt.vjp(f, x, w)
    ct, dct = mnp.asarray(1.5), mnp.asarray(-0.25)
    primal_out, tangent_out = mt.jvp(vjp_fn, (ct,), (dct,))
    for a, b in zip(tangent_out, vjp_fn(dct)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12)
    for a, b in zip(primal_out, vjp_fn(ct)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12)


def test_second_derivatives_of_a_jitted_loop_called_eagerly(x64):
    # hessian(jit(f)): the jitted body is linearized equation by equation so that the
    # loop runs and stacks its residuals (a tape cannot be differentiated again)
    f = mt.jit(_loop(3, None))
    x, w = np.asarray([0.3, -0.6]), np.asarray(0.9)
    h = mt.hessian(f)(mnp.asarray(x), mnp.asarray(w))
    eps = 1e-6
    g = mt.grad(f)
    fd = np.stack([(np.asarray(g(mnp.asarray(x + eps * e), mnp.asarray(w)))
                    - np.asarray(g(mnp.asarray(x - eps * e), mnp.asarray(w)))) / (2 * eps)
                   for e in np.eye(2)])
    np.testing.assert_allclose(np.asarray(h), fd, rtol=1e-6, atol=1e-8)


def test_rows_are_pruned_inside_a_cond_branch(x64):
    """optimize recurses into the branches, so a tape recorded and read inside a branch
    keeps only the rows its reader uses there too."""
    def h(w, x):
        return lax.cond(mnp.sum(x) > 0, lambda w, x: mt.grad(_fixed_point_loss)(w, x),
                        lambda w, x: w * 0.0, w, x)

    def rows(jaxpr):
        (c,) = [e for e in jaxpr.eqns if e.primitive.name == "cond"]
        return [len(e.params["body_jaxpr"].outvars) - e.params["num_carry"]
                for b in c.params["branches"] for e in b.eqns
                if e.primitive.name == "while_tape"]

    w, x = mnp.asarray(0.7), mnp.asarray([0.3, -0.5, 1.0])
    lowered = mt.jit(h).lower(w, x)
    (traced,), (pruned,) = rows(mt.make_jaxpr(h)(w, x).jaxpr), rows(lowered.jaxpr.jaxpr)
    assert pruned < traced
    assert "def h_branch1_while_tape_body(" in lowered.as_text()
    want = fd_grad(lambda w, x: _fixed_point_loss(w, x), [np.asarray(w), np.asarray(x)])[0]
    np.testing.assert_allclose(float(mt.jit(h)(w, x)), want, rtol=1e-6)


def _tape_reader(jaxpr):
    """The scan of `jaxpr` that reads a tape."""
    (eqn,) = [e for e in jaxpr.eqns if e.primitive.name == "scan" and e.params["tape"] is not None]
    return eqn


def _backward_loop():
    """The tape-reading scan of jit(grad(f)) for a three-step loop."""
    lowered = mt.jit(mt.grad(_loop(3, None))).lower(mnp.asarray([0.1, 0.2]), mnp.asarray(0.5))
    return _tape_reader(lowered.jaxpr)


def test_the_backward_loop_is_a_scan_reading_the_tape_in_reverse():
    # the tangent loop reads the tape forwards; its transpose (what grad keeps) is the same
    # kind of scan in the opposite direction, over the tape while_tape returned
    f = _loop(3, None)
    x, w = mnp.asarray([0.1, 0.2]), mnp.asarray(0.5)
    jaxpr = mt.jit(mt.grad(f)).lower(x, w).jaxpr
    (fwd,) = [e for e in jaxpr.eqns if e.primitive.name == "while_tape"]
    bwd = _tape_reader(jaxpr)
    assert bwd.invars[0] is fwd.outvars[-1]
    assert bwd.params["reverse"] is True and bwd.params["length"] is None
    assert "tape=()" in str(mt.make_jaxpr(mt.grad(f))(x, w))


def test_a_tape_sourced_scan_has_no_ys_no_length_and_no_stacked_xs():
    bwd = _backward_loop()
    avals = [v.aval for v in bwd.invars]
    assert scan_p.abstract_eval(*avals, **bwd.params) == [v.aval for v in bwd.outvars]
    body = bwd.params["jaxpr"]
    with_ys = Jaxpr([], body.invars, body.eqns, [*body.outvars, body.outvars[0]], "ys")
    cases = [
        (avals, dict(bwd.params, jaxpr=with_ys), "has no ys"),
        (avals, dict(bwd.params, length=3), "no length"),
        (avals + [avals[1]], bwd.params, "no stacked xs"),
        (avals[1:] + [avals[1]], bwd.params, r"from a tape of type tape\[\]"),
    ]
    for in_avals, params, message in cases:
        with pytest.raises(TypeError, match=message):
            scan_p.abstract_eval(*in_avals, **params)


def test_pruning_a_tape_sourced_scan_keeps_its_tape_and_rows():
    bwd = _backward_loop()
    p = bwd.params
    n_xs = len(p["jaxpr"].invars) - p["num_consts"] - p["num_carry"]
    new, used_in, kept = prune_scan(p, [False] * p["num_carry"])  # no result is read
    # the consts and carries go; the tape stays an operand and the body still takes every
    # row the tape holds (the tape-rows pass prunes rows, at both ends)
    assert used_in == [True] + [False] * (len(bwd.invars) - 1) and not any(kept)
    assert new["num_consts"] == new["num_carry"] == 0
    assert len(new["jaxpr"].invars) == n_xs and not new["jaxpr"].outvars
