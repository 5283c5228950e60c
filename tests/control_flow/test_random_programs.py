"""Differential tests on random control-flow programs.

Hypothesis draws small programs (a nested description: cond, switch, fori_loop with static
bounds, scan forward/reverse, while_loop with a counter-bounded predicate, checkpoint,
nested up to depth 3) over elementwise math (sin, cos, tanh, exp of bounded values,
products, sums, squares, products with the closed-over weight `w` and with the value
entering the enclosing control-flow node), on float64 scalars and 3-vectors.

Every program is interpreted twice:
  * `mt_run` builds it from mytorch.lax control flow (bodies close over `w`, over the
    outer carry and over the loop index: tracers of enclosing traces);
  * `np_run` interprets the same description with plain Python if/for/while on NumPy
    arrays: the independent reference.

Checked: values (mytorch vs NumPy), grad and jvp against central finite differences of the
NumPy reference, jit (of f, of grad f, grad of jit f) against the un-jitted results, vmap
(of f and of grad f) against the per-example loop with per-example predicates and trip
counts, and jit(vmap(grad f)). Data-dependent predicates are kept at least MARGIN away
from their thresholds (`assume`), so finite differences and batching never switch branch.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.backends.numpy.control_flow_cond  # the jit emitters of cond, scan, while
import mytorch.backends.numpy.control_flow_scan
import mytorch.backends.numpy.control_flow_while
import mytorch.numpy as mnp
from mytorch import lax
from tests.batching.vmap_check import assert_tree_close

MARGIN = 1e-3  # min distance of a data-dependent predicate's value from its threshold
MAX_ABS = 20.0  # programs whose intermediate values leave [-MAX_ABS, MAX_ABS] are skipped
# `assume` rejects a few percent of the draws (predicates near their thresholds)
HEALTH = [HealthCheck.function_scoped_fixture, HealthCheck.filter_too_much,
          HealthCheck.too_slow]

# ---- the program language ------------------------------------------------------------------
# Elementwise steps x -> x' (m is numpy or mytorch.numpy; w the closed-over weight, o the
# value entering the innermost enclosing control-flow node). All keep values bounded.
OPS = {
    "sin": lambda m, x, w, o: m.sin(x),
    "cos": lambda m, x, w, o: m.cos(x),
    "tanh": lambda m, x, w, o: m.tanh(x),
    "exp_tanh": lambda m, x, w, o: m.exp(m.tanh(x)),
    "gauss": lambda m, x, w, o: m.exp(-0.5 * x * x),
    "mul_w": lambda m, x, w, o: x * w,
    "add_w": lambda m, x, w, o: 0.5 * x + w,
    "sub_w": lambda m, x, w, o: 0.8 * x - 0.5 * w,
    "square": lambda m, x, w, o: 0.25 * x * x,
    "x_cos_x": lambda m, x, w, o: x * m.cos(x),
    "mul_outer": lambda m, x, w, o: x * m.tanh(o),
    "add_outer": lambda m, x, w, o: 0.5 * x + m.sin(o),
    "center": lambda m, x, w, o: x - 0.5 * m.mean(x),
}
OP_NAMES = sorted(OPS)


def scan_table(n, shape):
    """The scan's constant xs rows A[k] (the scanned slice is A[k] * w) and output weights."""
    a = np.cos(0.7 * np.arange(n).reshape((n,) + (1,) * len(shape)) + 1.0
               + 0.3 * np.arange(int(np.prod(shape))).reshape(shape))
    coef = (0.5 / (1.0 + np.arange(n))).reshape((n,) + (1,) * len(shape))
    return a, coef


@st.composite
def preds(draw, in_loop):
    """A cond predicate: static, data-dependent (sum(x) > thr) or the loop index's parity."""
    kinds = ["static", "data", "data"] + (["index"] if in_loop else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "static":
        return ("static", draw(st.booleans()))
    if kind == "data":
        return ("data", draw(st.floats(-1.5, 1.5)))
    return ("index", draw(st.integers(0, 1)))


@st.composite
def indices(draw, in_loop):
    """A switch index (clamped into range): static, data-dependent, or the loop index."""
    kinds = ["static", "data", "data"] + (["index"] if in_loop else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "static":
        return ("static", draw(st.integers(-1, 3)))
    if kind == "data":
        t1 = draw(st.floats(-1.5, 1.5))
        return ("data", t1, t1 + draw(st.floats(0.2, 1.5)), draw(st.integers(-1, 1)))
    return ("index", draw(st.integers(-1, 1)))


@st.composite
def nodes(draw, depth, in_loop=False, leaf_ok=True):
    """A program node; control flow nests at most `depth` deep."""
    if depth == 0 or (leaf_ok and draw(st.integers(0, 3)) == 0):
        ops = draw(st.lists(st.sampled_from(OP_NAMES), min_size=1, max_size=3))
        return ("seq", tuple(("op", o) for o in ops))
    kind = draw(st.sampled_from(["cond", "switch", "fori", "scan", "while", "while",
                                 "remat", "seq"]))
    if kind == "cond":
        return ("cond", draw(preds(in_loop)), draw(nodes(depth - 1, in_loop)),
                draw(nodes(depth - 1, in_loop)))
    if kind == "switch":
        n = draw(st.integers(1, 3))
        return ("switch", draw(indices(in_loop)),
                tuple(draw(nodes(depth - 1, in_loop)) for _ in range(n)))
    if kind == "fori":
        lo = draw(st.integers(0, 2))
        return ("fori", lo, lo + draw(st.integers(0, 3)), draw(nodes(depth - 1, True)))
    if kind == "scan":
        return ("scan", draw(st.integers(0, 3)), draw(st.booleans()),
                draw(nodes(depth - 1, True)))
    if kind == "while":
        mode = draw(st.sampled_from(["count", "limit", "data"]))
        return ("while", mode, draw(st.integers(0, 3)), draw(st.integers(0, 3)),
                draw(st.floats(-1.5, 1.5)), draw(nodes(depth - 1, True)),
                draw(st.sampled_from([None, 1, 2])))
    if kind == "remat":
        return ("remat", draw(nodes(depth - 1, in_loop)))
    return ("seq", (draw(nodes(depth - 1, in_loop)), draw(nodes(depth - 1, in_loop))))


def programs(max_depth=3):
    """A whole program: control flow at the top, sandwiched between elementwise steps."""
    return st.tuples(st.sampled_from(OP_NAMES), nodes(max_depth, leaf_ok=False),
                     st.sampled_from(OP_NAMES)).map(
        lambda t: ("seq", (("op", t[0]), t[1], ("op", t[2]))))


# ---- the mytorch interpreter ---------------------------------------------------------------
def _mt_pred(spec, x, env):
    if spec[0] == "static":
        return spec[1]
    if spec[0] == "data":
        return mnp.sum(x) > spec[1]
    return (env["i"] % 2) == spec[1]


def _mt_index(spec, x, env):
    if spec[0] == "static":
        return spec[1]
    if spec[0] == "data":
        _, t1, t2, off = spec
        s = mnp.sum(x)
        return (s > t1).astype(mnp.int32) + (s > t2).astype(mnp.int32) + off
    return env["i"] + spec[1]


def mt_run(node, x, env):
    """`node` applied to x with mytorch (env: w, outer value o, loop index i)."""
    kind = node[0]
    if kind == "op":
        return OPS[node[1]](mnp, x, env["w"], env["o"])
    if kind == "seq":
        for sub in node[1]:
            x = mt_run(sub, x, env)
        return x
    inner = dict(env, o=x)
    if kind == "cond":
        _, pred, t, f = node
        return lax.cond(_mt_pred(pred, x, env), lambda v: mt_run(t, v, inner),
                        lambda v: mt_run(f, v, inner), x)
    if kind == "switch":
        _, idx, branches = node
        return lax.switch(_mt_index(idx, x, env),
                          [lambda v, b=b: mt_run(b, v, inner) for b in branches], x)
    if kind == "fori":
        _, lo, hi, body = node
        return lax.fori_loop(lo, hi, lambda i, v: mt_run(body, v, dict(inner, i=i))
                             + 0.1 * i.astype(v.dtype), x)
    if kind == "scan":
        _, n, reverse, body = node
        a, coef = scan_table(n, np.shape(x))

        def step(c, t):
            k, row = t
            xk = row * env["w"]
            c = mt_run(body, c, dict(inner, i=k)) + 0.3 * xk
            return c, mnp.sin(c) * xk

        c, ys = lax.scan(step, x, (mnp.arange(n, dtype=mnp.int32), mnp.asarray(a)),
                         reverse=reverse)
        return c + mnp.sum(ys * coef, axis=0)
    if kind == "while":
        _, mode, n, n2, thr, body, every = node
        if mode == "count":
            def cond(c):
                return c[0] < n
        elif mode == "limit":  # the trip count depends on the entering value
            limit = mnp.where(mnp.sum(x) > thr, np.int32(n), np.int32(n2))

            def cond(c):
                return c[0] < limit
        else:  # a data-dependent exit, bounded by the counter
            def cond(c):
                return (c[0] < n) & (mnp.sum(c[1]) < thr)

        def body_fun(c):
            return c[0] + 1, mt_run(body, c[1], dict(inner, i=c[0]))

        init = (mnp.asarray(np.int32(0)), x)
        return lax.while_loop(cond, body_fun, init, checkpoint_every=every)[1]
    if kind == "remat":
        return mt.checkpoint(lambda v: mt_run(node[1], v, env))(x)
    raise ValueError(kind)


# ---- the NumPy reference interpreter -------------------------------------------------------
class Record:
    """What the reference saw: the closest a data predicate came to its threshold, and the
    largest intermediate magnitude."""

    def __init__(self):
        self.margin = np.inf
        self.max_abs = 0.0

    def near(self, s, *thresholds):
        self.margin = min(self.margin, *(abs(float(s) - t) for t in thresholds))

    def value(self, x):
        self.max_abs = max(self.max_abs, float(np.max(np.abs(x))))
        return x


def _np_pred(spec, x, env, rec):
    if spec[0] == "static":
        return spec[1]
    if spec[0] == "data":
        s = np.sum(x)
        rec.near(s, spec[1])
        return s > spec[1]
    return env["i"] % 2 == spec[1]


def _np_index(spec, x, env, rec, n):
    if spec[0] == "static":
        i = spec[1]
    elif spec[0] == "data":
        _, t1, t2, off = spec
        s = np.sum(x)
        rec.near(s, t1, t2)
        i = int(s > t1) + int(s > t2) + off
    else:
        i = env["i"] + spec[1]
    return min(max(i, 0), n - 1)


def np_run(node, x, env, rec):
    """The reference: `node` applied to the NumPy array x with Python control flow."""
    kind = node[0]
    if kind == "op":
        return rec.value(OPS[node[1]](np, x, env["w"], env["o"]))
    if kind == "seq":
        for sub in node[1]:
            x = np_run(sub, x, env, rec)
        return x
    inner = dict(env, o=x)
    if kind == "cond":
        _, pred, t, f = node
        return np_run(t if _np_pred(pred, x, env, rec) else f, x, inner, rec)
    if kind == "switch":
        _, idx, branches = node
        return np_run(branches[_np_index(idx, x, env, rec, len(branches))], x, inner, rec)
    if kind == "fori":
        _, lo, hi, body = node
        for i in range(lo, hi):
            x = rec.value(np_run(body, x, dict(inner, i=i), rec) + 0.1 * i)
        return x
    if kind == "scan":
        _, n, reverse, body = node
        a, coef = scan_table(n, np.shape(x))
        ys = [None] * n
        for k in (reversed(range(n)) if reverse else range(n)):
            xk = a[k] * env["w"]
            x = rec.value(np_run(body, x, dict(inner, i=k), rec) + 0.3 * xk)
            ys[k] = np.sin(x) * xk
        return rec.value(x + sum((coef[k] * ys[k] for k in range(n)), np.zeros_like(x)))
    if kind == "while":
        _, mode, n, n2, thr, body, _ = node
        if mode == "limit":
            s = np.sum(x)
            rec.near(s, thr)
            n = n if s > thr else n2
        i = 0
        while i < n:
            if mode == "data":
                s = np.sum(x)
                rec.near(s, thr)
                if not s < thr:
                    break
            x = np_run(body, x, dict(inner, i=i), rec)
            i += 1
        return x
    if kind == "remat":
        return np_run(node[1], x, env, rec)
    raise ValueError(kind)


# ---- the functions under test --------------------------------------------------------------
def mt_fun(prog):
    """The program as a mytorch function f(x, w) (w is closed over by every body)."""
    def f(x, w):
        return mt_run(prog, x, {"w": w, "o": x, "i": None})
    return f


def mt_loss(prog):
    """A scalar of the program's output, for grad."""
    f = mt_fun(prog)
    return lambda x, w: mnp.sum(mnp.sin(f(x, w)))


def np_fun(prog, x, w, rec=None):
    rec = Record() if rec is None else rec
    x, w = np.asarray(x, np.float64), np.asarray(w, np.float64)
    with np.errstate(under="ignore"):  # exp(-x*x/2) may underflow harmlessly
        return np_run(prog, x, {"w": w, "o": x, "i": None}, rec)


def np_loss(prog, x, w):
    return float(np.sum(np.sin(np_fun(prog, x, w))))


def well_conditioned(prog, x, w):
    """The reference's value, after `assume`-ing predicates far from their thresholds and
    bounded intermediates."""
    rec = Record()
    out = np_fun(prog, x, w, rec)
    assume(rec.margin > MARGIN and rec.max_abs < MAX_ABS)
    return out


def fd_grad(fn, args, eps=1e-6):
    """Central finite differences of the scalar fn(*args) w.r.t. every entry of every arg."""
    grads = []
    for j, a in enumerate(args):
        g = np.zeros_like(a)
        for idx in np.ndindex(*np.shape(a)):
            plus = [np.array(b, copy=True) for b in args]
            minus = [np.array(b, copy=True) for b in args]
            plus[j][idx] += eps
            minus[j][idx] -= eps
            g[idx] = (fn(*plus) - fn(*minus)) / (2 * eps)
        grads.append(g)
    return tuple(grads)


def as_mt(*arrays):
    return tuple(mnp.asarray(a) for a in arrays)


shapes = st.sampled_from([(), (3,)])


def arrays(shape, lo=-1.5, hi=1.5):
    n = int(np.prod(shape))
    return st.lists(st.floats(lo, hi), min_size=n, max_size=n).map(
        lambda v: np.asarray(v, np.float64).reshape(shape))


@st.composite
def cases(draw, max_depth=3):
    """(program, x, w) with float64 x and w of one shape."""
    shape = draw(shapes)
    return draw(programs(max_depth)), draw(arrays(shape)), draw(arrays(shape, -1.0, 1.0))


# ---- the tests -----------------------------------------------------------------------------
@settings(max_examples=150, deadline=None, suppress_health_check=HEALTH)
@given(case=cases())
def test_values_match_numpy_reference(x64, case):
    """mytorch's lax control flow computes what the Python-loop interpreter computes."""
    prog, x, w = case
    want = well_conditioned(prog, x, w)
    got = mt_fun(prog)(*as_mt(x, w))
    assert_tree_close(got, want, rtol=1e-10, atol=1e-12)


@settings(max_examples=80, deadline=None, suppress_health_check=HEALTH)
@given(case=cases(), seed=st.integers(0, 2 ** 16))
def test_grad_and_jvp_match_finite_differences(x64, case, seed):
    """Reverse mode (grad w.r.t. x and the closed-over w) and forward mode (jvp in a random
    direction) agree with central differences of the NumPy reference."""
    prog, x, w = case
    well_conditioned(prog, x, w)
    want = fd_grad(lambda a, b: np_loss(prog, a, b), (x, w))
    got = mt.grad(mt_loss(prog), argnums=(0, 1))(*as_mt(x, w))
    assert_tree_close(got, want, rtol=1e-5, atol=1e-6)

    rng = np.random.default_rng(seed)
    tx, tw = rng.standard_normal(np.shape(x)), rng.standard_normal(np.shape(w))
    eps = 1e-6
    fd = (np_fun(prog, x + eps * tx, w + eps * tw)
          - np_fun(prog, x - eps * tx, w - eps * tw)) / (2 * eps)
    primal, tangent = mt.jvp(mt_fun(prog), as_mt(x, w), as_mt(tx, tw))
    assert_tree_close(primal, np_fun(prog, x, w), rtol=1e-10, atol=1e-12)
    assert_tree_close(tangent, fd, rtol=1e-5, atol=1e-6)


@settings(max_examples=60, deadline=None, suppress_health_check=HEALTH)
@given(case=cases())
def test_jit_matches_eager(x64, case):
    """jit(f), jit(grad f) and grad(jit f) equal the un-jitted results (and f the
    reference)."""
    prog, x, w = case
    want = well_conditioned(prog, x, w)
    f, loss, args = mt_fun(prog), mt_loss(prog), as_mt(x, w)
    eager = f(*args)
    assert_tree_close(eager, want, rtol=1e-10, atol=1e-12)
    assert_tree_close(mt.jit(f)(*args), eager, rtol=1e-10, atol=1e-12)
    g = mt.grad(loss, argnums=(0, 1))(*args)
    assert_tree_close(mt.jit(mt.grad(loss, argnums=(0, 1)))(*args), g, rtol=1e-10,
                      atol=1e-12)
    assert_tree_close(mt.grad(mt.jit(loss), argnums=(0, 1))(*args), g, rtol=1e-10,
                      atol=1e-12)


@st.composite
def batched_cases(draw, max_depth=3):
    """(program, xs, w, w batched?) with a batch of 3 inputs."""
    shape = draw(shapes)
    batch_w = draw(st.booleans())
    xs = draw(arrays((3, *shape)))
    w = draw(arrays((3, *shape) if batch_w else shape, -1.0, 1.0))
    return draw(programs(max_depth)), xs, w, batch_w


def _examples(xs, w, batch_w):
    return [(xs[b], w[b] if batch_w else w) for b in range(xs.shape[0])]


@settings(max_examples=60, deadline=None, suppress_health_check=HEALTH)
@given(case=batched_cases())
def test_vmap_matches_loop(x64, case):
    """vmap(f) and vmap(grad f) equal the stacked per-example results (predicates and trip
    counts may differ between examples); vmap(f) also equals the NumPy reference."""
    prog, xs, w, batch_w = case
    examples = _examples(xs, w, batch_w)
    want = np.stack([well_conditioned(prog, a, b) for a, b in examples])
    in_axes = (0, 0 if batch_w else None)
    f, grad = mt_fun(prog), mt.grad(mt_loss(prog), argnums=(0, 1))
    got = mt.vmap(f, in_axes=in_axes)(*as_mt(xs, w))
    assert_tree_close(got, want, rtol=1e-10, atol=1e-12)
    loop = np.stack([np.asarray(f(*as_mt(a, b))) for a, b in examples])
    assert_tree_close(got, loop, rtol=1e-10, atol=1e-12)

    per = [grad(*as_mt(a, b)) for a, b in examples]
    want_g = tuple(np.stack([np.asarray(p[k]) for p in per]) for k in range(2))
    assert_tree_close(mt.vmap(grad, in_axes=in_axes)(*as_mt(xs, w)), want_g, rtol=1e-10,
                      atol=1e-12)


@settings(max_examples=50, deadline=None, suppress_health_check=HEALTH)
@given(case=batched_cases())
def test_jit_vmap_grad_matches_finite_differences(x64, case):
    """jit(vmap(grad f)) against per-example central differences of the reference."""
    prog, xs, w, batch_w = case
    examples = _examples(xs, w, batch_w)
    for a, b in examples:
        well_conditioned(prog, a, b)
    in_axes = (0, 0 if batch_w else None)
    got = mt.jit(mt.vmap(mt.grad(mt_loss(prog), argnums=(0, 1)), in_axes=in_axes))(
        *as_mt(xs, w))
    per = [fd_grad(lambda a, b: np_loss(prog, a, b), (a, b)) for a, b in examples]
    want = tuple(np.stack([p[k] for p in per]) for k in range(2))
    assert_tree_close(got, want, rtol=1e-5, atol=1e-6)


# ---- minimal reproducers of library bugs these tests found ---------------------------------
# Library bugs, not test bugs: at the time of writing the cond/switch cases of the first test
# and the second test fail (its loop cases were fixed in commit 41da758). The random
# tests above find both too.
ALIASING_OPS = {
    "cond": lambda t: lax.cond(t[0] > 0, lambda v: v, lambda v: v * 2.0, t),
    "switch": lambda t: lax.switch(0, [lambda v: v, lambda v: v * 2.0], t),
    "while_zero_trips": lambda t: lax.while_loop(lambda c: c[0] < 0,
                                                 lambda c: (c[0] + 1, c[1] * 2.0), (0, t))[1],
    "scan_length_zero": lambda t: lax.scan(lambda c, _: (c * 2.0, None), t, None,
                                           length=0)[0],
    "fori_zero_trips": lambda t: lax.fori_loop(0, 0, lambda i, v: v * 2.0, t),
}


@pytest.mark.parametrize("name", sorted(ALIASING_OPS))
def test_jit_control_flow_output_aliasing_its_operand(x64, name):
    """Bug: under jit, a control-flow result that is its operand (a branch returning its
    input, a loop running zero times) is not kept alive: the NumPy code generator recycles
    the operand's buffer (`out=`) for a later op, overwriting the result."""
    op = ALIASING_OPS[name]

    def f(x, y):
        k = op(x * y)                   # the result aliases the buffer of x * y ...
        return mnp.sin(x) * 3.0 + k     # ... which sin(x) is then written into

    x, y = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    want = np.sin(x) * 3.0 + x * y
    assert_tree_close(mt.jit(f)(*as_mt(x, y)), want, rtol=1e-12, atol=1e-12)


def test_grad_of_zero_trip_while_with_nested_while(x64):
    """Bug: reverse mode of a while_loop that runs zero times (concrete operands) whose body
    contains another while_loop raises TypeError (stacking zero rows of the inner loop's
    tape residual: `full((0,), dtype=object)` in while_loop._stack)."""
    def f(x):
        def body(c):
            inner = lax.while_loop(lambda d: d[0] < 1, lambda d: (d[0] + 1, d[1] * x),
                                   (0, c[1]))
            return c[0] + 1, inner[1]

        return lax.while_loop(lambda c: c[0] < 0, body, (0, x))[1] * x   # = x * x

    x = 0.5
    np.testing.assert_allclose(float(mt.grad(f)(mnp.asarray(x))), 2 * x, rtol=1e-12)
