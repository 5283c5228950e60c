"""Random straight-line programs for the jit tests, drawn by hypothesis.

A `Program` is a list of steps over float32 values: elementwise chains, algebraic no-ops
(`x * 1.0`, `-(-x)`, identity transposes/reshapes/broadcasts/conversions bound directly,
so the binders cannot elide them), reshapes and transposes, reductions, dot_general with
a closed-over constant or another value, broadcasts, literal operands, custom_jvp calls
with literal arguments (foldable once inlined), grads (splat cotangents) and checkpoints,
duplicated subexpressions (a step repeated on the same operands) and dead code (only some
values are returned). Every step has a NumPy twin, so `program.reference(*args)` is an
independent NumPy evaluation of `program(*args)`.

    @given(programs())
    def test_something(program):
        args = program.sample_args(np.random.default_rng(0))
        outs = mt.jit(program)(*args)
        for got, want in zip(outs, program.reference(*args)): ...
"""

import dataclasses

import numpy as np
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch import lax
from mytorch.lax import elementwise as ew
from mytorch.lax import reductions as red
from mytorch.lax import structural as stl

F32 = np.dtype(np.float32)


def _c(v):
    return np.float32(v)


def _sig(t):
    return 1.0 / (1.0 + np.exp(-t))


# ---- the steps: name -> (arity, mytorch fn, NumPy fn); params come from _draw_params ----
UNARY = {
    "sin": (mnp.sin, np.sin),
    "tanh": (mnp.tanh, np.tanh),
    "exp_tanh": (lambda a: mnp.exp(mnp.tanh(a)), lambda a: np.exp(np.tanh(a))),
    "neg": (lambda a: -a, np.negative),
    "neg_neg": (lambda a: -(-a), lambda a: a),
    "abs": (mnp.abs, np.abs),
    "square": (lambda a: a * a, lambda a: a * a),
    "mul_one": (lambda a: a * 1.0, lambda a: a),
    "one_mul": (lambda a: 1.0 * a, lambda a: a),
    "add_zero": (lambda a: a + 0.0, lambda a: a),
    "zero_add": (lambda a: 0.0 + a, lambda a: a),
    "sub_zero": (lambda a: a - 0.0, lambda a: a),
    "div_one": (lambda a: a / 1.0, lambda a: a),
    "mul_zero": (lambda a: a * 0.0, lambda a: a * _c(0.0)),
    "half": (lambda a: a * 0.5, lambda a: a * _c(0.5)),
    "f16_trip": (lambda a: lax.convert_element_type(lax.convert_element_type(a, np.float16),
                                                    np.float32),
                 lambda a: a.astype(np.float16).astype(np.float32)),
    "same_convert": (lambda a: ew.convert_element_type_p.bind(a, new_dtype=F32, weak_type=False),
                     lambda a: a),
    "id_reshape": (lambda a: stl.reshape_p.bind(a, new_sizes=a.shape, dimensions=None),
                   lambda a: a),
    "id_broadcast": (lambda a: stl.broadcast_in_dim_p.bind(
        a, shape=a.shape, broadcast_dimensions=tuple(range(a.ndim))), lambda a: a),
    "no_squeeze": (lambda a: stl.squeeze_p.bind(a, dimensions=()), lambda a: a),
    "no_sum": (lambda a: red.reduce_sum_p.bind(a, axes=()), lambda a: a),
    "logaddexp_lit": (lambda a: mnp.logaddexp(a, 1.5), lambda a: np.logaddexp(a, _c(1.5))),
    "grad_sin": (lambda a: mt.grad(lambda t: mnp.sum(mnp.sin(t) * 2.0))(a),
                 lambda a: np.cos(a) * _c(2.0)),
    "grad_ckpt": (lambda a: mt.grad(mt.checkpoint(lambda t: mnp.sum(mnp.sin(t) * t)))(a),
                  lambda a: np.cos(a) * a + np.sin(a)),
    "ckpt_sig": (mt.checkpoint(lambda a: 1.0 / (1.0 + mnp.exp(-a))), _sig),
}
BINARY = {
    "add": (lambda a, b: a + b, lambda a, b: a + b),
    "sub": (lambda a, b: a - b, lambda a, b: a - b),
    "mul": (lambda a, b: a * b, lambda a, b: a * b),
    "maximum": (mnp.maximum, np.maximum),
    "where_gt": (lambda a, b: mnp.where(a > b, a, b * 0.5),
                 lambda a, b: np.where(a > b, a, b * _c(0.5))),
}
# steps whose parameters depend on the operand's shape: name -> (mytorch fn, NumPy fn)
SHAPED = {
    # (not on 0-d values: the NumPy transpose kernel turns f32[] into f32[1])
    "id_transpose": (lambda a: stl.transpose_p.bind(a, permutation=tuple(range(a.ndim))),
                     lambda a: a),
    "transpose": (mnp.transpose, np.transpose),
    "transpose_twice": (lambda a, p, q: mnp.transpose(mnp.transpose(a, p), q),
                        lambda a, p, q: np.transpose(np.transpose(a, p), q)),
    "reshape_rev": (lambda a: mnp.reshape(a, a.shape[::-1]),
                    lambda a: np.reshape(a, a.shape[::-1])),
    "reshape_twice": (lambda a: mnp.reshape(mnp.reshape(a, (-1,)), a.shape),
                      lambda a: np.reshape(np.reshape(a, (-1,)), a.shape)),
    "sum_keep": (lambda a, axis: mnp.sum(a, axis=axis, keepdims=True),
                 lambda a, axis: np.sum(a, axis=axis, keepdims=True)),
    "max_axis": (lambda a, axis: mnp.max(a, axis=axis), lambda a, axis: np.max(a, axis=axis)),
    "sum_all": (lambda a: mnp.sum(a), lambda a: np.sum(a, dtype=np.float32)),
    "broadcast_lead": (lambda a, n: mnp.broadcast_to(a, (n, *a.shape)),
                       lambda a, n: np.broadcast_to(a, (n, *a.shape))),
    "matmul_const": (lambda a, w: a @ w, lambda a, w: a @ w),
}


@dataclasses.dataclass(frozen=True)
class Step:
    """`values.append(op(*[values[i] for i in operands], *params))`."""

    op: str
    operands: tuple
    params: tuple = ()

    def __repr__(self):
        params = ", ".join(p.shape.__repr__() if isinstance(p, np.ndarray) else repr(p)
                           for p in self.params)
        return f"{self.op}{self.operands}" + (f"[{params}]" if params else "")


@dataclasses.dataclass(frozen=True)
class Program:
    """A straight-line program over float32 inputs of `in_shapes`; returns the values at
    `outputs` (an input, or a step's result) as a tuple."""

    in_shapes: tuple
    steps: tuple
    outputs: tuple

    def _run(self, args, table_index):
        values = list(args)
        for step in self.steps:
            fn = _FNS[step.op][table_index]
            values.append(fn(*[values[i] for i in step.operands], *step.params))
        return tuple(values[i] for i in self.outputs)

    def __call__(self, *args):
        """Run with mytorch (traceable: use under make_jaxpr, jit, grad, vmap)."""
        return self._run(args, 0)

    def reference(self, *args):
        """Run with NumPy on NumPy float32 arrays: the oracle."""
        with np.errstate(all="ignore"):
            return tuple(np.asarray(v) for v in self._run([np.asarray(a) for a in args], 1))

    def sample_args(self, rng, special=False):
        """float32 inputs in [-1, 1]; with `special`, some NaN, inf and -0.0 entries."""
        args = []
        for shape in self.in_shapes:
            a = rng.uniform(-1.0, 1.0, shape).astype(np.float32)
            if special and a.size:
                flat = a.reshape(-1)
                picks = rng.integers(0, a.size, size=min(3, a.size))
                flat[picks] = rng.choice(np.array([np.nan, np.inf, -0.0], np.float32),
                                         size=len(picks))
            args.append(a)
        return args


_FNS = {**UNARY, **BINARY, **SHAPED}

_shapes = st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple)


def _draw_shaped(draw, op, shape):
    """(params, result shape) for a SHAPED step on an operand of `shape`, or None."""
    nd = len(shape)
    if op == "transpose" and nd >= 2:
        perm = tuple(draw(st.permutations(range(nd))))
        return (perm,), tuple(shape[p] for p in perm)
    if op == "transpose_twice" and nd >= 2:
        p, q = (tuple(draw(st.permutations(range(nd)))) for _ in range(2))
        mid = tuple(shape[i] for i in p)
        return (p, q), tuple(mid[i] for i in q)
    if op == "id_transpose" and nd >= 1:
        return (), shape
    if op == "reshape_rev" and nd >= 1:
        return (), shape[::-1]
    if op == "reshape_twice" and nd >= 1:
        return (), shape
    if op in ("sum_keep", "max_axis") and nd >= 1:
        axis = draw(st.integers(0, nd - 1))
        if op == "sum_keep":
            return (axis,), shape[:axis] + (1,) + shape[axis + 1:]
        return (axis,), shape[:axis] + shape[axis + 1:]
    if op == "sum_all":
        return (), ()
    if op == "broadcast_lead" and nd <= 2:
        n = draw(st.integers(1, 3))
        return (n,), (n, *shape)
    if op == "matmul_const" and nd == 2:
        n = draw(st.integers(1, 4))
        w = np.linspace(-1.0, 1.0, shape[1] * n, dtype=np.float32).reshape(shape[1], n)
        return (w,), (shape[0], n)
    return None


def _binary_operands(draw, shapes):
    """Two value indices whose shapes are equal or one of them 0-d; or None."""
    i = draw(st.integers(0, len(shapes) - 1))
    partners = [j for j, s in enumerate(shapes) if s == shapes[i] or s == () or shapes[i] == ()]
    j = draw(st.sampled_from(partners))
    return (i, j), shapes[i] if shapes[i] != () else shapes[j]


@st.composite
def programs(draw, max_steps=8, names=None):
    """A random `Program` of 1..max_steps steps over 1-2 float32 inputs. `names` limits the
    steps to those ops (default: all of UNARY, BINARY and SHAPED)."""
    names = sorted(names or _FNS)
    first = draw(_shapes)
    second = draw(st.sampled_from([first, first[-1:], ()]))
    shapes = [first, second][:draw(st.integers(1, 2))]
    n_inputs = len(shapes)
    records = []  # (step, result shape)
    for _ in range(draw(st.integers(1, max_steps))):
        if records and draw(st.integers(0, 5)) == 0:  # a duplicated subexpression
            records.append(draw(st.sampled_from(records)))
            shapes.append(records[-1][1])
            continue
        op = draw(st.sampled_from(names))
        if op in BINARY:
            operands, shape = _binary_operands(draw, shapes)
            step = Step(op, operands)
        else:
            i = draw(st.integers(0, len(shapes) - 1))
            drawn = ((), shapes[i]) if op in UNARY else _draw_shaped(draw, op, shapes[i])
            if drawn is None:
                continue
            step, shape = Step(op, (i,), drawn[0]), drawn[1]
        records.append((step, shape))
        shapes.append(shape)
    k = len(shapes)
    outputs = draw(st.lists(st.integers(0, k - 1), min_size=1, max_size=3, unique=True))
    if k > n_inputs and all(o < n_inputs for o in outputs):
        outputs.append(k - 1)
    return Program(tuple(shapes[:n_inputs]), tuple(r[0] for r in records), tuple(outputs))

