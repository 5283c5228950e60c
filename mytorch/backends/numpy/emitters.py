"""Per-primitive Python/NumPy source emitters for the jit code generator (codegen.py).

An emitter is `emit(g, eqn, args) -> Emitted`: the source of an expression computing the
equation's one result from `args` (source strings of its operands), and what that result is
(`planner.fresh(expr)`: a new buffer; `planner.view(expr, i)`: a view of operand `i`; a
plain string: unknown, never reused). It may ask the generator for an output buffer
(`g.out_buffer(eqn, in_place)`, a name or None) to pass as `out=`. Primitives without an
emitter (or with operands an emitter declines, by returning None) call their eager kernel.

Only dtypes NumPy computes natively take the direct route (complex64/complex128 included):
float16 and bfloat16 go through the kernels, which compute them in float32 as the eager
path does.
"""

import math

import numpy as np

from mytorch.backends.numpy import dot_nt
from mytorch.backends.numpy.elementwise import NUMPY_FNS
from mytorch.backends.planner import fresh, view
from mytorch.core.ad_util import add_any_p
from mytorch.core.jaxpr import Literal, Var
from mytorch.lax import elementwise as ew
from mytorch.lax import reductions as red
from mytorch.lax import structural as st
from mytorch.lax.dot import dot_general_p

EMITTERS = {}
_NATIVE = frozenset(np.dtype(t) for t in (
    np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
    np.uint64, np.float32, np.float64, np.complex64, np.complex128))
_FLOATS = frozenset((np.dtype(np.float32), np.dtype(np.float64)))
_INEXACT = _FLOATS | frozenset((np.dtype(np.complex64), np.dtype(np.complex128)))


def emitter(*prims):
    def deco(fn):
        for p in prims:
            EMITTERS[p] = fn
        return fn

    return deco


def _native(eqn):
    return all(v.aval.dtype in _NATIVE for v in (*eqn.invars, *eqn.outvars))


def native_dtypes(eqn):
    """Whether every operand and result of `eqn` has a dtype NumPy computes natively (not
    float16 or bfloat16, which the emitters compute in float32)."""
    return _native(eqn)


def _float_op(eqn):
    return all(v.aval.dtype in _FLOATS for v in (*eqn.invars, *eqn.outvars))


# ---- elementwise: one ufunc call --------------------------------------------------------

def _ufunc_call(g, eqn, args, ufunc_name):
    """`np_<ufunc>(*args[, out=...])`: the ufunc is a global of the generated code (a
    module attribute lookup less per call)."""
    args = g.ufunc_args(eqn, args)
    if ufunc_name in _FULL_SCALARS:
        args = _full_literals(g, eqn, args)
    out = g.out_buffer(eqn, in_place=True)
    fn = g.ufunc(ufunc_name)
    return fresh(f"{fn}({', '.join(args)}{f', out={out}' if out else ''})")


# NumPy's maximum and minimum loops are vectorised for two arrays but not for an array and
# a scalar (3x slower on float32, at every size measured): a literal operand is read from a
# constant array of the result's shape instead, up to this many elements
_FULL_SCALARS = frozenset({"maximum", "minimum", "fmax", "fmin"})
_MAX_FULL = 1 << 20


def _full_literals(g, eqn, args):
    """`args` with each scalar literal operand replaced by a read-only constant array of the
    result's shape holding it (the same values, so the same results), where the result is
    an array of at most `_MAX_FULL` elements written by the main function (not a fused
    block, whose operands are block-sized)."""
    aval = eqn.outvars[0].aval
    if g.must_write_out or not aval.shape or math.prod(aval.shape) > _MAX_FULL:
        return args
    out = list(args)
    for i, v in enumerate(eqn.invars):
        if type(v) is Literal and not v.aval.shape and v.aval.dtype == aval.dtype:
            out[i] = g.full_constant(v.val, aval.shape, aval.dtype)
    return out


def _ufunc_emitter(ufunc_name, floats_only=False, inexact_only=False):
    def emit(g, eqn, args):
        if inexact_only:
            ok = all(v.aval.dtype in _INEXACT for v in (*eqn.invars, *eqn.outvars))
        else:
            ok = _float_op(eqn) if floats_only else _native(eqn)
        if not ok:
            return None
        return _ufunc_call(g, eqn, args, ufunc_name)

    emit.inline_scalars = True
    return emit


def inline_ok(eqn, v):
    """Whether operand `v` (when a literal) may be written as a Python scalar: only where
    the emitter hands it straight to a ufunc beside an array of the literal's dtype, so
    that NumPy's weak-scalar rule (NEP 50) computes in that dtype. Everywhere else a
    literal is a typed 0-d array: a Python float there would be float64."""
    return getattr(EMITTERS.get(eqn.primitive), "inline_scalars", False) and any(
        type(w) is Var and w.aval.dtype == v.aval.dtype for w in eqn.invars)


def _register_ufuncs():
    for prim, fn in NUMPY_FNS.items():
        if isinstance(fn, np.ufunc) and prim is not ew.nextafter_p:  # bfloat16 in the kernel
            EMITTERS[prim] = _ufunc_emitter(fn.__name__)


_register_ufuncs()
EMITTERS[ew.div_p] = _ufunc_emitter("true_divide", inexact_only=True)
EMITTERS[add_any_p] = _ufunc_emitter("add")
EMITTERS[ew.rem_p] = _ufunc_emitter("fmod", floats_only=True)


@emitter(ew.integer_pow_p)
def _integer_pow(g, eqn, args):
    y = eqn.params["y"]
    if not _native(eqn) or y not in (1, 2, 3):
        return None
    if y == 1:
        return view(args[0])
    if y == 2:
        return _ufunc_call(g, eqn, args, "square")
    out = g.out_buffer(eqn, in_place=False)
    x = args[0]
    return fresh(f"np.multiply(np.square({x}), {x}" + (f", out={out})" if out else ")"))


@emitter(ew.logistic_p)
def _logistic(g, eqn, args):
    if not _float_op(eqn) or not eqn.outvars[0].aval.shape:
        return None
    out = g.out_buffer(eqn, in_place=True)
    return fresh(f"_logistic({args[0]}, {out})")


def _logistic_runtime(x, out=None):
    """1 / (1 + exp(-x)) in three in-place passes: exp overflows to inf for very negative x,
    giving exactly 0, and small results keep their relative accuracy."""
    t = np.negative(x, out=out)
    np.exp(t, out=t)
    np.add(t, 1, out=t)
    return np.reciprocal(t, out=t)


RUNTIME = {"_logistic": _logistic_runtime}


@emitter(ew.select_n_p)
def _select_n(g, eqn, args):
    which = eqn.invars[0].aval
    if which.dtype != np.bool_ or len(args) != 3 or not _native(eqn):
        return None
    if not eqn.outvars[0].aval.shape:  # 0-d (a step counter's overflow guard)
        return fresh(f"np.where({args[0]}, {args[2]}, {args[1]})")
    c0, c1 = (g.scalar_arg(v, a) for v, a in zip(eqn.invars[1:], args[1:]))
    if math.prod(eqn.outvars[0].aval.shape) < _SMALL_SELECT and not g.must_write_out:
        return fresh(f"np.where({args[0]}, {c1}, {c0})")  # small: np.where costs less
    out = g.out_buffer(eqn, in_place=True, only=(2,))  # c1 is read first, once
    return fresh(f"_select({args[0]}, {c0}, {c1}, {out})")


_SMALL_SELECT = 4096
_BITS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _select_runtime(which, c0, c1, out=None):
    """`c1 where which else c0` without branches (np.where mispredicts on random masks):
    c0 ^ ((c0 ^ c1) * which) on the bit patterns, so every value, NaN included, is exact."""
    c0, c1 = np.asarray(c0), np.asarray(c1)
    if c1.dtype.itemsize not in _BITS:  # complex128: no unsigned integer that wide
        if out is None:
            return np.where(which, c1, c0)
        np.copyto(out, np.where(which, c1, c0))
        return out
    bits = _BITS[c1.dtype.itemsize]
    b = c0.view(bits)
    if not c0.ndim and not c1.ndim:  # two scalars: which * (c0 ^ c1) ^ c0, two passes
        t = out.view(bits) if out is not None else np.empty(which.shape, bits)
        np.multiply(which, np.bitwise_xor(c1.view(bits), b), out=t)
        np.bitwise_xor(t, b, out=t)
        return t.view(c1.dtype)
    if not c0.ndim and c1.shape == which.shape and not b.any():
        # c0 is +0 (all bits clear): c1's bits where `which`, else 0, in one pass
        t = np.multiply(c1.view(bits), which, out=None if out is None else out.view(bits))
        return t.view(c1.dtype)
    if not c1.ndim and c0.shape == which.shape and not c1.view(bits).any():
        t = np.multiply(b, np.logical_not(which), out=None if out is None else out.view(bits))
        return t.view(c1.dtype)
    if out is not None:  # `out` is written first: keep what is read after it
        if np.may_share_memory(out, c0):
            b = b.copy()
        if np.may_share_memory(out, which):
            which = which.copy()
    t = np.bitwise_xor(c1.view(bits), b, out=None if out is None else out.view(bits))
    if t.ndim < which.ndim:
        t = np.broadcast_to(t, which.shape).copy()
    np.multiply(t, which, out=t)
    np.bitwise_xor(t, b, out=t)
    return t.view(c1.dtype)


@emitter(ew.clamp_p)
def _clamp(g, eqn, args):
    if not _native(eqn) or not eqn.outvars[0].aval.shape:
        return None
    lo, x, hi = _full_literals(g, eqn, args)
    out = g.out_buffer(eqn, in_place=True, only=(1,))  # lo and hi are read after x
    extra = f", out={out}" if out else ""
    return fresh(f"np.minimum(np.maximum({x}, {lo}{extra}), {hi}{extra})")


_clamp.inline_scalars = True


@emitter(ew.convert_element_type_p)
def _convert(g, eqn, args):
    src, dst = eqn.invars[0].aval.dtype, eqn.outvars[0].aval.dtype
    if src not in _NATIVE or dst not in _NATIVE or (dst.kind in "iu" and src.kind == "f"):
        return None  # float -> int saturates in the kernel
    if src.kind == "c" and dst.kind not in "cb":
        return None  # complex -> real keeps the real part in the kernel (NumPy's cast warns)
    if dst == np.bool_:
        return fresh(f"np.not_equal({args[0]}, 0)")
    if not eqn.outvars[0].aval.shape:
        return fresh(f"np.asarray({args[0]}, dtype={g.dtype(dst)})")
    return fresh(f"{args[0]}.astype({g.dtype(dst)})")


@emitter(ew.stop_gradient_p)
def _stop_gradient(g, eqn, args):
    return view(args[0])


# ---- structural: views where NumPy gives them ---------------------------------------------
# (as ndarray methods: `x.reshape(s)` costs 0.15 us a call, `np.reshape(x, s)` 0.75 us; every
# value of the generated code is an ndarray or a NumPy scalar, which have the same methods)
def _transposed(x, perm):
    perm = tuple(perm)
    return f"{x}.T" if perm == (1, 0) else f"{x}.transpose({perm})"



@emitter(st.reshape_p)
def _reshape(g, eqn, args):
    if eqn.params["dimensions"] is not None:
        return None
    return view(f"{args[0]}.reshape({eqn.outvars[0].aval.shape})")


@emitter(st.squeeze_p)
def _squeeze(g, eqn, args):
    return view(f"{args[0]}.reshape({eqn.outvars[0].aval.shape})")


@emitter(st.transpose_p)
def _transpose(g, eqn, args):
    return view(_transposed(args[0], eqn.params["permutation"]))


@emitter(st.broadcast_in_dim_p)
def _broadcast_in_dim(g, eqn, args):
    shape, dims = eqn.params["shape"], eqn.params["broadcast_dimensions"]
    in_shape = eqn.invars[0].aval.shape
    expanded = [1] * len(shape)
    for i, d in enumerate(dims):
        expanded[d] = in_shape[i]
    x = args[0]
    # where the source's axes keep their order, consumers may read it viewed as `expanded`
    lazy = expanded if list(dims) == sorted(dims) else None
    dtype = eqn.invars[0].aval.dtype
    if lazy is not None and dtype in _NATIVE and 0 not in shape:
        strides = [0] * len(shape)  # of a C-contiguous source viewed as `expanded`
        step = dtype.itemsize
        for i in reversed(range(len(shape))):
            if expanded[i] != 1:
                strides[i] = step
                step *= expanded[i]
        return view(f"_broadcast({x}, {tuple(shape)}, {tuple(expanded)}, {tuple(strides)}, "
                    f"{in_shape})", expanded=lazy)
    if tuple(expanded) != in_shape:
        x = f"{x}.reshape({tuple(expanded)})"
    return view(f"np.broadcast_to({x}, {tuple(shape)})", expanded=lazy)


def _broadcast_runtime(x, shape, expanded, strides, in_shape):
    """np.broadcast_to(x.reshape(expanded), shape), a read-only view, made directly from
    the strides of a C-contiguous `x` of `in_shape` (np.broadcast_to costs 3 us a call in
    Python; this 0.8 us); any other `x` takes np.broadcast_to."""
    if type(x) is np.ndarray and x.shape == in_shape and x.flags.c_contiguous:
        out = np.ndarray(shape, x.dtype, x, 0, strides)
        out.flags.writeable = False
        return out
    return np.broadcast_to(np.reshape(x, expanded), shape)


@emitter(st.slice_p)
def _slice(g, eqn, args):
    p = eqn.params
    strides = p["strides"] or (1,) * len(p["start_indices"])
    parts = [f"{a}:{b}" + (f":{c}" if c != 1 else "")
             for a, b, c in zip(p["start_indices"], p["limit_indices"], strides)]
    return view(f"{args[0]}[{', '.join(parts)},]" if parts else args[0])


@emitter(st.rev_p)
def _rev(g, eqn, args):
    nd = len(eqn.invars[0].aval.shape)
    dims = set(eqn.params["dimensions"])
    if not dims:
        return view(args[0])
    parts = ["::-1" if i in dims else ":" for i in range(nd)]
    return view(f"{args[0]}[{', '.join(parts)}]")


@emitter(st.concatenate_p)
def _concatenate(g, eqn, args):
    return fresh(f"np.concatenate(({', '.join(args)},), axis={eqn.params['dimension']})")


# ---- reductions ----------------------------------------------------------------------------
def _reduce_emitter(ufunc_name, need_nonempty):
    def emit(g, eqn, args):
        if not _float_op(eqn) and not (ufunc_name == "add" and _native(eqn)
                                       and eqn.outvars[0].aval.dtype.kind in "iu"):
            return None
        aval = eqn.invars[0].aval
        if need_nonempty and any(aval.shape[a] == 0 for a in eqn.params["axes"]):
            return None
        axes = tuple(eqn.params["axes"])
        if ufunc_name == "add" and _float_op(eqn) and _strided_sum(aval.shape, axes):
            return None  # the kernel sums a strided axis in blocks (accurate_sum)
        if ufunc_name == "add" and _float_op(eqn) and _trailing_rows(aval.shape, axes):
            return fresh(_einsum_sum(args[0], len(aval.shape), axes))
        dt = g.dtype(eqn.outvars[0].aval.dtype)
        return fresh(f"np.{ufunc_name}.reduce({args[0]}, axis={axes}, dtype={dt})")

    return emit


def _trailing_rows(shape, axes):
    """Many short rows summed over the trailing axes: np.add.reduce runs its pairwise sum
    row by row there (5x slower than einsum's vectorised loop on 256-long rows). Rows of
    up to 4096 elements keep einsum's float rounding within a few ulps per element."""
    n = len(shape)
    return bool(axes) and sorted(axes) == list(range(n - len(axes), n)) and \
        16 <= math.prod(shape[a] for a in axes) <= 4096 and math.prod(shape) >= 1 << 14


def _strided_sum(shape, axes):
    """A float sum over long non-trailing axes, which np.add.reduce adds row by row."""
    n = len(shape)
    while n and n - 1 in axes:  # the reduced trailing dims are contiguous: pairwise there
        n -= 1
    return math.prod(shape[a] for a in axes if a < n) > 256


def _einsum_sum(x, ndim, axes):
    letters = "abcdefghijklmnopqrstuvwxyz"[:ndim]
    kept = "".join(c for i, c in enumerate(letters) if i not in axes)
    return f"np.einsum('{letters}->{kept}', {x})"


EMITTERS[red.reduce_sum_p] = _reduce_emitter("add", False)
EMITTERS[red.reduce_max_p] = _reduce_emitter("maximum", True)
EMITTERS[red.reduce_min_p] = _reduce_emitter("minimum", True)


# ---- dot_general: one matmul -----------------------------------------------------------
@emitter(dot_general_p)
def _dot_general(g, eqn, args):
    if not _float_op(eqn):
        return None
    lhs, rhs = (v.aval.shape for v in eqn.invars)
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    lfree = [i for i in range(len(lhs)) if i not in lc and i not in lb]
    rfree = [i for i in range(len(rhs)) if i not in rc and i not in rb]
    nb = math.prod(lhs[i] for i in lb)
    m, n = math.prod(lhs[i] for i in lfree), math.prod(rhs[i] for i in rfree)
    k = math.prod(lhs[i] for i in lc)
    a = _arrange(args[0], lhs, (*lb, *lfree, *lc), (nb, m, k) if lb else (m, k))
    b = _arrange(args[1], rhs, (*rb, *rc, *rfree), (nb, k, n) if lb else (k, n))
    out_shape = eqn.outvars[0].aval.shape
    mm_shape = (nb, m, n) if lb else (m, n)
    dtype = eqn.invars[0].aval.dtype if eqn.invars[1].aval.dtype == eqn.invars[0].aval.dtype \
        else None
    if not lb and len(rhs) <= 2 and len(lhs) <= 2 and 1 in (len(lhs), len(rhs)) \
            and lc == (len(lhs) - 1,) and rc == (0,):  # matrix-vector products as they are
        return fresh(f"np.matmul({args[0]}, {args[1]})")
    if k == 1 and (lb or m == 1 or n == 1):  # an outer product: one broadcasting multiply
        bshape = tuple(lhs[i] for i in lb)
        lshape, rshape = tuple(lhs[i] for i in lfree), tuple(rhs[i] for i in rfree)
        shapes = (bshape + lshape + (1,) * len(rshape), bshape + (1,) * len(lshape) + rshape)
        a = _arrange(args[0], lhs, (*lb, *lfree, *lc), shapes[0])
        b = _arrange(args[1], rhs, (*rb, *rc, *rfree), shapes[1])
        out = g.out_buffer(eqn, in_place=False)
        full = [s == tuple(out_shape) for s in shapes]
        if full[0] != full[1] and math.prod(out_shape) >= _FILL_MIN:
            small, big = (b, a) if full[0] else (a, b)
            return fresh(f"_fill_mul({small}, {big}, {full[1]}, {out})")
        return fresh(f"np.multiply({a}, {b}" + (f", out={out})" if out else ")"))
    if not lb and tuple(mm_shape) == tuple(out_shape) and dot_nt.pays(m, n, k, dtype):
        out = g.out_buffer(eqn, in_place=False)  # swapped where b is transposed: dot_nt
        return fresh(f"_matmul_or_swapped({a}, {b}" + (f", {out})" if out else ")"))
    if not lb and tuple(mm_shape) == tuple(out_shape) and dot_nt.copies(m, n, k, dtype):
        out = g.out_buffer(eqn, in_place=False)  # b transposed into C order first: dot_nt
        return fresh(f"_matmul_copied({a}, {b}" + (f", {out})" if out else ")"))
    if tuple(mm_shape) == tuple(out_shape):
        out = g.out_buffer(eqn, in_place=False)
        return fresh(f"np.matmul({a}, {b}" + (f", out={out})" if out else ")"))
    # (np.reshape, not a method: control-flow emission reads `v = np.matmul(...)` lines
    # as a product it may redirect with out=, which this reshaped one is not)
    return fresh(f"np.reshape(np.matmul({a}, {b}), {tuple(out_shape)})")


_FILL_MIN = 1024


def _fill_mul_runtime(small, big, small_first, out=None):
    """small * big (in that order when `small_first`), `small` broadcasting against `big`
    (the result's shape): NumPy's multiply loop over a broadcast operand is about twice as
    slow as filling a buffer with the broadcast (a copy) and multiplying two arrays of one
    shape in place, so this does the latter. The same products, so the same results."""
    t = np.empty(big.shape, big.dtype) if out is None else out
    np.copyto(t, small)
    return np.multiply(t, big, out=t) if small_first else np.multiply(big, t, out=t)


def _arrange(x, shape, perm, target):
    """Source viewing `x` (of `shape`) as `target` after permuting its axes by `perm`."""
    if tuple(perm) != tuple(range(len(shape))):
        x = _transposed(x, perm)
    if tuple(shape[i] for i in perm) != tuple(target):
        x = f"{x}.reshape({tuple(target)})"
    return x


# ---- what fusion.py may evaluate block by block ---------------------------------------------
_NOT_FUSABLE = frozenset({ew.convert_element_type_p, ew.stop_gradient_p})


def fusable(eqn):
    """Whether `eqn` is an elementwise op whose emitter writes its result through `out=`."""
    prim = eqn.primitive
    if prim is add_any_p:
        return _native(eqn)
    if prim.kind != "elementwise" or prim in _NOT_FUSABLE or prim not in EMITTERS:
        return False
    if prim is ew.integer_pow_p and eqn.params["y"] not in (2, 3):
        return False
    if prim in (ew.div_p, ew.rem_p, ew.logistic_p):
        return _float_op(eqn)
    return _native(eqn)


RUNTIME["_select"] = _select_runtime
RUNTIME["_fill_mul"] = _fill_mul_runtime
RUNTIME["_matmul_or_swapped"] = dot_nt.matmul
RUNTIME["_matmul_copied"] = dot_nt.matmul_copied
RUNTIME["_broadcast"] = _broadcast_runtime
