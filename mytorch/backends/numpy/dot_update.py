"""A matrix product added into another matrix, `p - c * (a @ b)` (a plain SGD update), as
one GEMM with beta = 1 (blas.py) in jit-compiled code.

Code generation first rewrites (`fuse`, called by peephole.py)

    g = dot_general a b;  t = mul c g;  out = sub p t

where g and t are read nowhere else, into one `dot_update` equation of this module's
primitive; likewise `p + c * g`, `c * g + p`, `p - g`, `p + g` and `g + p`, with the scale
`c` a 0-d value on either side of the multiply. The product must be a plain matrix product
(2-D operands, one contracting dimension, no batch) of float32 or float64, `p` of its shape
and dtype, and `p`'s buffer free to overwrite: an intermediate or a donated input, read
nowhere after the update (see `fuse`).

The emitted code then calls GEMM with alpha = -c (or c, 1, -1) and beta = 1 on `p`'s own
buffer, instead of writing the product and reading it back with `p` in a separate pass
(where the planner does not hand it that buffer after all, it copies `p` first). BLAS rounds alpha * (a @ b) + p in its own way (the product is not rounded
before it is scaled and added), so the result can differ from the separate operations by
an ulp or so, as any change of summation order does. Where the operands' layouts do not
suit GEMM, or NumPy's BLAS is not the expected one, the operations run as written.

`dot_update_p` exists only inside this backend's code generator: traced programs never
contain it, so it has no derivative or batching rule; its eager kernel (used where the
emitter declines) computes the original operations.
"""

import numpy as np

from mytorch.backends.numpy import blas, dot, numpy_backend
from mytorch.backends.numpy.emitters import RUNTIME, _arrange, emitter
from mytorch.backends.planner import fresh
from mytorch.core.jaxpr import JaxprEqn, Literal, Var
from mytorch.core.primitive import Primitive
from mytorch.lax.dot import dot_general_p
from mytorch.lax.elementwise import add_p, mul_p, sub_p
from mytorch.lax.structural import broadcast_in_dim_p

dot_update_p = Primitive("dot_update", kind="backend")

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


@dot_update_p.def_abstract_eval
def _abstract_eval(p, a, b, *scale, **params):
    return p


def _dot_params(params):
    return {k: params[k] for k in ("dimension_numbers", "precision", "preferred_element_type")}


@numpy_backend.register(dot_update_p)
def _eager(p, a, b, *scale, combine, scale_side, **params):
    """The rewritten operations, as written: the product, its scaling, the sum."""
    g = dot.dot_general(a, b, **_dot_params(params))
    if scale_side == "left":
        g = np.multiply(scale[0], g)
    elif scale_side == "right":
        g = np.multiply(g, scale[0])
    if combine == "sub":
        return np.subtract(p, g)
    return np.add(p, g) if combine == "add" else np.add(g, p)


# ---- the rewrite ----------------------------------------------------------------------------
def _plain_product(eqn):
    """Whether `eqn` is a 2-D float matrix product of one dtype that GEMM computes."""
    if eqn.primitive is not dot_general_p:
        return False
    (lc, rc), (lb, _) = eqn.params["dimension_numbers"]
    lhs, rhs = eqn.invars
    out = eqn.outvars[0].aval
    return (not lb and len(lc) == len(rc) == 1 and len(lhs.aval.shape) == 2
            and len(rhs.aval.shape) == 2 and out.dtype in _FLOATS
            and lhs.aval.dtype == rhs.aval.dtype == out.dtype)


def _zero_d(v):
    return not v.aval.shape


def _chain(t, producer, uses):
    """(the product equation, scale operand or None, scale side) when `t` is a product read
    once, or a 0-d value times one; else None."""
    eqn = producer.get(t) if type(t) is Var and uses.get(t) == 1 else None
    if eqn is None:
        return None
    if _plain_product(eqn):
        return eqn, None, None
    if eqn.primitive is not mul_p:
        return None
    for side, (c, g) in (("left", eqn.invars), ("right", eqn.invars[::-1])):
        dot_eqn = producer.get(g) if type(g) is Var and uses.get(g) == 1 else None
        if _zero_d(c) and dot_eqn is not None and _plain_product(dot_eqn) \
                and c.aval.dtype == g.aval.dtype:
            return dot_eqn, c, side
    return None


ENDS = (sub_p, add_p)  # the equations `fuse` may rewrite


def fuse(eqn, producer, uses, dies_here):
    """The `dot_update` equation replacing `eqn` (a sub or add ending such a chain: see the
    module docstring), or `eqn` itself. The product and multiply it reads become dead.

    Only where `dies_here(p)`: nothing reads `p` later and its buffer may be overwritten
    (an intermediate, or a donated input): the update then runs in place. Copying `p` into
    a fresh buffer first made W1's step slower, not faster (4928 -> 5014 us), though the
    copy and GEMM alone measure a little faster than the product and a fused pass."""
    if eqn.primitive not in ENDS or type(eqn.outvars[0]) is not Var:
        return eqn
    out = eqn.outvars[0].aval
    if out.dtype not in _FLOATS or len(out.shape) != 2 or not blas.available(out.dtype):
        return eqn  # (without NumPy's ILP64 BLAS the operations stay as written, fused)
    x, y = eqn.invars
    candidates = [("sub", x, y)] if eqn.primitive is sub_p else [("add", x, y), ("radd", y, x)]
    for combine, p, t in candidates:
        if type(p) is Literal or p.aval.shape != out.shape or p.aval.dtype != out.dtype \
                or getattr(producer.get(p), "primitive", None) is broadcast_in_dim_p:
            continue  # (a broadcast bias is a view: never overwritable)
        found = _chain(t, producer, uses)
        if found is None or not dies_here(p):
            continue
        dot_eqn, c, side = found
        params = dict(_dot_params(dot_eqn.params), combine=combine, scale_side=side)
        return JaxprEqn(dot_update_p, [p, *dot_eqn.invars, *([c] if c is not None else [])],
                        params, eqn.outvars, eqn.source_info)
    return eqn


# ---- code generation ------------------------------------------------------------------------
def _update_runtime(p, a, b, c, negate, out, fallback):
    """`p + alpha * (a @ b)` (alpha = ±c, or ±1 without c) into `out` (a fresh buffer when
    None; `p` itself when it may be overwritten) by one GEMM; `fallback()` where GEMM
    cannot take the operands."""
    alpha = 1.0 if c is None else float(c)
    alpha = -alpha if negate else alpha
    if alpha == 0.0 or not np.isfinite(alpha):  # GEMM may skip the product: NaN * 0 lost
        return fallback()
    target = np.empty(p.shape, p.dtype) if out is None else out
    return target if blas.gemm_update(target, a, b, alpha, p) else fallback()


@emitter(dot_update_p)
def _dot_update(g, eqn, args):
    if not blas.available(eqn.outvars[0].aval.dtype):
        return None
    (lc, rc), _ = eqn.params["dimension_numbers"]
    lhs, rhs = (v.aval.shape for v in eqn.invars[1:3])
    lfree, rfree = 1 - lc[0], 1 - rc[0]
    m, k, n = lhs[lfree], lhs[lc[0]], rhs[rfree]
    a = _arrange(args[1], lhs, (lfree, lc[0]), (m, k))
    b = _arrange(args[2], rhs, (rc[0], rfree), (k, n))
    c = args[3] if len(args) > 3 else "None"
    out = g.out_buffer(eqn, in_place=True, only=(0,))  # p's buffer, where it dies here
    kernel = g.hoist(lambda *xs, _p=eqn.params: _eager(*xs, **_p), "dot_update")
    fallback = f"lambda: {kernel}({', '.join(args)})"
    negate = eqn.params["combine"] == "sub"
    return fresh(f"_dot_update({args[0]}, {a}, {b}, {c}, {negate}, {out}, {fallback})")


RUNTIME["_dot_update"] = _update_runtime
