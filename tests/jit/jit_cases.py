"""Example programs for every primitive, for the jit code-generator tests (test_codegen.py).

`CASES` maps a primitive's name to builders; a builder is `build(draw, dts) -> (fn, args)`:
`draw` is hypothesis' `data.draw`, `dts` the dtypes in play (64-bit ones under x64), `fn` a
mytorch function of the NumPy arrays `args` whose trace binds that primitive. Primitives
that only exist inside a transformation are reached through one: collectives as
vmap(f, axis_name=...), `add_any`/`zeros` through grad, `custom_lin` through grad of a
jitted custom_vjp function, call primitives through checkpoint/custom_jvp/custom_vjp/jit.
"""

import numpy as np
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch import lax
from mytorch.core import dtypes
from mytorch.core.aval import ShapedArray
from mytorch.core.primitive import registry
from tests.strategies import arrays, shapes

F32, F16, BF16 = np.dtype(np.float32), np.dtype(np.float16), np.dtype(dtypes.bfloat16)
I32, U8, BOOL = np.dtype(np.int32), np.dtype(np.uint8), np.dtype(np.bool_)
F64, I64 = np.dtype(np.float64), np.dtype(np.int64)
C64, C128 = np.dtype(np.complex64), np.dtype(np.complex128)
DTYPES = [F32, F16, BF16, I32, U8, BOOL]
X64_DTYPES = DTYPES + [F64, I64]
P = registry()


# ---- drawing values --------------------------------------------------------------------
def values(draw, dt, shape, lo=None, hi=None, special=True):
    """An array of `dt` and `shape`; floats include NaN and +-inf when `special`."""
    if dt.kind in "fc" or dt == BF16:
        lo, hi = (-50 if lo is None else lo), (50 if hi is None else hi)
    return draw(arrays(dt, shape, min_value=lo, max_value=hi, allow_nan=special,
                       allow_inf=special))


def is_float(dt):
    return dt.kind == "f" or dt == BF16


def accepts(prim, dt, n, **params):
    """Whether `prim` takes `n` 0-d operands of dtype `dt` (asks its abstract evaluation)."""
    try:
        prim.abstract_eval(*[ShapedArray((), dt)] * n, **params)
    except (TypeError, ValueError):
        return False
    return True


def pick(draw, dts, ok=lambda d: True):
    return draw(st.sampled_from([d for d in dts if ok(d)]))


def shape_of(draw, min_dims=0, max_dims=3):
    return draw(shapes(min_dims=min_dims, max_dims=max_dims, max_side=4))


def _axes(draw, nd):
    return tuple(sorted(draw(st.lists(st.integers(0, nd - 1), unique=True, max_size=nd))
                        if nd else ()))


# ---- elementwise -------------------------------------------------------------------------
def unary(prim):
    def build(draw, dts):
        dt = pick(draw, dts, lambda d: accepts(prim, d, 1))
        return (lambda a: prim.bind(a)), [values(draw, dt, shape_of(draw))]
    return build


def binary(prim, lo=None, hi=None):
    def build(draw, dts):
        dt = pick(draw, dts, lambda d: accepts(prim, d, 2))
        s = shape_of(draw)
        sx, sy = draw(st.sampled_from([(s, s), (s, ()), ((), s)]))
        return (lambda a, b: prim.bind(a, b)), [values(draw, dt, sx, lo, hi),
                                                values(draw, dt, sy, lo, hi)]
    return build


def shift(prim):
    def build(draw, dts):
        dt = pick(draw, dts, lambda d: d.kind in "iu")
        s = shape_of(draw)
        bits = 8 * dt.itemsize
        amount = draw(arrays(dt, s, min_value=-2 if dt.kind == "i" else 0, max_value=bits + 2))
        return (lambda a, b: prim.bind(a, b)), [values(draw, dt, s), amount]
    return build


def _round(draw, dts):
    dt = pick(draw, dts, is_float)
    method = draw(st.sampled_from([0, 1]))
    x = values(draw, dt, shape_of(draw)) * np.asarray(0.5, dt)  # many exact halves
    return (lambda a: lax.round(a, method)), [x]


def _integer_pow(draw, dts):
    dt = pick(draw, dts, lambda d: d.kind in "iuf" or d == BF16)
    y = draw(st.integers(-3 if is_float(dt) else 0, 4))
    return (lambda a: lax.integer_pow(a, y)), [values(draw, dt, shape_of(draw), -8, 8)]


def _select_n(draw, dts):
    dt = pick(draw, dts)
    s = shape_of(draw)
    n = draw(st.integers(1, 3))
    which_shape = draw(st.sampled_from([s, ()]))
    if n <= 2 and draw(st.booleans()):
        which = draw(arrays(BOOL, which_shape))
        n = 2
    else:
        which = draw(arrays(I32, which_shape, min_value=0, max_value=n - 1))
    cases = [values(draw, dt, s) for _ in range(n)]
    return (lambda w, *cs: lax.select_n(w, *cs)), [which, *cases]


def _clamp(draw, dts):
    dt = pick(draw, dts, lambda d: d != BOOL)
    s = shape_of(draw)
    lo_s, hi_s = draw(st.sampled_from([s, ()])), draw(st.sampled_from([s, ()]))
    return lax.clamp, [values(draw, dt, lo_s), values(draw, dt, s), values(draw, dt, hi_s)]


def _convert(draw, dts):
    src, dst = pick(draw, dts), pick(draw, dts)
    weak = draw(st.booleans()) and (dst.kind in "if" or dst == BF16)
    x = values(draw, src, shape_of(draw), -1e10, 1e10)
    return (lambda a: P["convert_element_type"].bind(a, new_dtype=dst, weak_type=weak)), [x]


def _bitcast(draw, dts):
    pairs = [(F32, I32), (I32, F32), (F32, U8), (I32, U8), (F16, U8), (BF16, F16),
             (U8, U8)]
    src, dst = draw(st.sampled_from([p for p in pairs if p[0] in dts and p[1] in dts]))
    s = shape_of(draw)
    if dst.itemsize > src.itemsize:
        s = (*s, dst.itemsize // src.itemsize)
    x = values(draw, src, s, special=False)
    return (lambda a: lax.bitcast_convert_type(a, dst)), [x]


# ---- structural --------------------------------------------------------------------------
def _broadcast_in_dim(draw, dts):
    dt = pick(draw, dts)
    out = shape_of(draw, max_dims=4)
    dims = _axes(draw, len(out))
    in_shape = tuple(draw(st.sampled_from([out[d], 1])) for d in dims)
    return (lambda a: P["broadcast_in_dim"].bind(a, shape=out, broadcast_dimensions=dims)), [
        values(draw, dt, in_shape)]


def _concatenate(draw, dts):
    dt = pick(draw, dts)
    s = shape_of(draw, min_dims=1)
    d = draw(st.integers(0, len(s) - 1))
    parts = [values(draw, dt, s[:d] + (draw(st.integers(0, 3)),) + s[d + 1:])
             for _ in range(draw(st.integers(1, 3)))]
    return (lambda *xs: P["concatenate"].bind(*xs, dimension=d)), parts


def _iota(draw, dts):
    dt = pick(draw, dts, lambda d: d.kind in "iuf" or d == BF16)
    s = shape_of(draw, min_dims=1)
    dim = draw(st.integers(0, len(s) - 1))
    x = values(draw, dt, s)
    return (lambda a: (P["iota"].bind(dtype=dt, shape=s, dimension=dim), a)), [x]


def _pad(draw, dts):
    dt = pick(draw, dts)
    s = shape_of(draw)
    config = tuple((draw(st.integers(-1, 2)), draw(st.integers(-1, 2)),
                    draw(st.integers(0, 2))) for _ in s)
    # keep every padded size non-negative
    config = tuple((lo, hi, it) if n + max(n - 1, 0) * it + lo + hi >= 0 else (0, 0, it)
                   for n, (lo, hi, it) in zip(s, config))
    return (lambda a, v: lax.pad(a, v, config)), [values(draw, dt, s), values(draw, dt, ())]


def _reshape(draw, dts):
    dt = pick(draw, dts)
    s = shape_of(draw)
    size = int(np.prod(s))
    new = draw(st.sampled_from([(size,), s[::-1], (1, *s), s + (1,)] + (
        [(2, size // 2)] if size % 2 == 0 and size else [])))
    perm = tuple(draw(st.permutations(range(len(s))))) if draw(st.booleans()) else None
    return (lambda a: P["reshape"].bind(a, new_sizes=new, dimensions=perm)), [
        values(draw, dt, s)]


def _rev(draw, dts):
    dt = pick(draw, dts)
    s = shape_of(draw)
    dims = _axes(draw, len(s))
    return (lambda a: P["rev"].bind(a, dimensions=dims)), [values(draw, dt, s)]


def _slice(draw, dts):
    dt = pick(draw, dts)
    s = shape_of(draw)
    starts, limits, strides = [], [], []
    for n in s:
        b = draw(st.integers(0, n))
        starts.append(b)
        limits.append(draw(st.integers(b, n)))
        strides.append(draw(st.integers(1, 3)))
    strides = tuple(strides) if draw(st.booleans()) else None
    return (lambda a: P["slice"].bind(a, start_indices=tuple(starts),
                                      limit_indices=tuple(limits), strides=strides)), [
        values(draw, dt, s)]


def _squeeze(draw, dts):
    dt = pick(draw, dts)
    s = list(shape_of(draw))
    for _ in range(draw(st.integers(0, 2))):
        s.insert(draw(st.integers(0, len(s))), 1)
    dims = tuple(d for d in _axes(draw, len(s)) if s[d] == 1)
    return (lambda a: P["squeeze"].bind(a, dimensions=dims)), [values(draw, dt, tuple(s))]


def _transpose(draw, dts):
    dt = pick(draw, dts)
    s = shape_of(draw, max_dims=4)
    perm = tuple(draw(st.permutations(range(len(s)))))
    return (lambda a: P["transpose"].bind(a, permutation=perm)), [values(draw, dt, s)]


# ---- indexing ----------------------------------------------------------------------------
def _dynamic_slice(draw, dts):
    dt = pick(draw, dts)
    s = shape_of(draw, min_dims=1)
    sizes = tuple(draw(st.integers(0, n)) for n in s)
    starts = [np.int32(draw(st.integers(-2, n + 2))) for n in s]
    return (lambda a, *i: lax.dynamic_slice(a, i, sizes)), [values(draw, dt, s), *starts]


def _dynamic_update_slice(draw, dts):
    dt = pick(draw, dts)
    s = shape_of(draw, min_dims=1)
    u = tuple(draw(st.integers(0, n)) for n in s)
    starts = [np.int32(draw(st.integers(-2, n + 2))) for n in s]
    return (lambda a, b, *i: lax.dynamic_update_slice(a, b, i)), [
        values(draw, dt, s), values(draw, dt, u), *starts]


def _index_args(draw, dts):
    dt = pick(draw, dts)
    s = (draw(st.integers(1, 4)), *[max(n, 1) for n in shape_of(draw, max_dims=2)])
    # at least one index: mytorch.numpy indexes an empty selection without a gather
    idx = draw(arrays(I32, (draw(st.integers(1, 4)),), min_value=-s[0], max_value=s[0] - 1))
    return dt, s, idx


def _gather(draw, dts):
    dt, s, idx = _index_args(draw, dts)
    return (lambda a, i: a[i]), [values(draw, dt, s), idx]


def scatter(method):
    def build(draw, dts):
        dt, s, idx = _index_args(draw, [d for d in dts if method in ("set", "add") or
                                        d != BOOL])
        x, upd = values(draw, dt, s), values(draw, dt, (len(idx), *s[1:]))
        return (lambda a, i, u: getattr(a.at[i], method)(u)), [x, idx, upd]
    return build


# ---- reductions --------------------------------------------------------------------------
def reducer(prim):
    def build(draw, dts):
        dt = pick(draw, dts, lambda d: accepts(prim, d, 1, axes=()))
        s = shape_of(draw)
        axes = _axes(draw, len(s))
        return (lambda a: prim.bind(a, axes=axes)), [values(draw, dt, s, -3, 3)]
    return build


def arg_reducer(prim):
    def build(draw, dts):
        dt = pick(draw, dts)
        s = tuple(max(n, 1) for n in shape_of(draw, min_dims=1))
        axis = draw(st.integers(0, len(s) - 1))
        return (lambda a: prim.bind(a, axes=(axis,), index_dtype=I32)), [values(draw, dt, s)]
    return build


def cumulative(prim):
    def build(draw, dts):
        dt = pick(draw, dts, lambda d: _cum_ok(prim, d))
        s = shape_of(draw, min_dims=1)
        axis, rev = draw(st.integers(0, len(s) - 1)), draw(st.booleans())
        return (lambda a: prim.bind(a, axis=axis, reverse=rev)), [values(draw, dt, s, -3, 3)]
    return build


def _cum_ok(prim, dt):
    try:
        prim.abstract_eval(ShapedArray((2,), dt), axis=0, reverse=False)
    except (TypeError, ValueError):
        return False
    return True


# ---- sorting -----------------------------------------------------------------------------
def _sort(draw, dts):
    s = shape_of(draw, min_dims=1)
    n = draw(st.integers(1, 3))
    ops = [values(draw, pick(draw, dts), s) for _ in range(n)]
    keys = draw(st.integers(1, n))
    dim = draw(st.integers(0, len(s) - 1))
    return (lambda *xs: tuple(P["sort"].bind(*xs, dimension=dim, is_stable=True,
                                             num_keys=keys))), ops


def _threefry(draw, dts):
    # uint32 keys broadcast against the counts (keys of one element, or of the full shape)
    s = shape_of(draw)
    u32 = np.dtype(np.uint32)
    key_shape = draw(st.sampled_from([(), s]))
    ops = [values(draw, u32, key_shape) for _ in range(2)] + [values(draw, u32, s)
                                                              for _ in range(2)]
    return (lambda *xs: tuple(P["threefry2x32"].bind(*xs))), ops


def _attention_operands(draw, dts, extra=0):
    """q f32[B, T, N, H], k and v [B, S, N, H] (a float dtype), and `extra` more arrays
    shaped like q (tangents or cotangents); finite values (attention has no NaN cases to
    compare)."""
    dt = pick(draw, dts, is_float)
    b, t, s, n, h = (draw(st.integers(1, 3)), draw(st.integers(1, 5)),
                     draw(st.integers(1, 5)), draw(st.integers(1, 2)), draw(st.integers(1, 4)))
    q_shape, kv_shape = (b, t, n, h), (b, s, n, h)
    shapes_ = [q_shape, kv_shape, kv_shape] + [q_shape] * extra
    ops = [values(draw, dt, sh, -2, 2, special=False) for sh in shapes_]
    return ops, dict(scale=0.5, is_causal=draw(st.booleans()))


def _attention(draw, dts):
    ops, params = _attention_operands(draw, dts)
    return (lambda q, k, v: lax.dot_product_attention(q, k, v, **params)), ops


def _attention_tangent(draw, dts):
    # the JVP of attention binds its tangent primitive (linear in dq, dk, dv)
    ops, params = _attention_operands(draw, dts, extra=0)
    tangents = [values(draw, o.dtype, o.shape, -1, 1, special=False) for o in ops]

    def fn(q, k, v, dq, dk, dv):
        return mt.jvp(lambda q, k, v: lax.dot_product_attention(q, k, v, **params)[0],
                      (q, k, v), (dq, dk, dv))

    return fn, ops + tangents


def _attention_bwd(draw, dts):
    # the VJP of attention binds its backward primitive (the tangent's transpose)
    ops, params = _attention_operands(draw, dts, extra=1)

    def fn(q, k, v, ct):
        out, pullback = mt.vjp(
            lambda q, k, v: lax.dot_product_attention(q, k, v, **params)[0], q, k, v)
        return (out, *pullback(ct))

    return fn, ops


def _top_k(draw, dts):
    dt = pick(draw, dts, lambda d: d != BOOL)
    s = shape_of(draw, min_dims=1)
    k = draw(st.integers(0, s[-1]))
    return (lambda a: tuple(lax.top_k(a, k))), [values(draw, dt, s)]


# ---- contractions and windows ------------------------------------------------------------
def _dot_general(draw, dts):
    dt = pick(draw, dts)  # bool contracts as OR of ANDs
    nb, nc = draw(st.integers(0, 2)), draw(st.integers(0, 2))
    nl, nr = draw(st.integers(0, 2)), draw(st.integers(0, 2))
    batch = [draw(st.integers(0, 3)) for _ in range(nb)]
    contract = [draw(st.integers(0, 3)) for _ in range(nc)]
    lhs_dims = batch + contract + [draw(st.integers(1, 3)) for _ in range(nl)]
    rhs_dims = batch + contract + [draw(st.integers(1, 3)) for _ in range(nr)]
    lperm = list(draw(st.permutations(range(len(lhs_dims)))))
    rperm = list(draw(st.permutations(range(len(rhs_dims)))))
    # logical dim k of lhs lives at position lperm.index(k)
    lb = tuple(lperm.index(k) for k in range(nb))
    rb = tuple(rperm.index(k) for k in range(nb))
    lc = tuple(lperm.index(nb + k) for k in range(nc))
    rc = tuple(rperm.index(nb + k) for k in range(nc))
    lhs = values(draw, dt, tuple(lhs_dims[k] for k in lperm), -4, 4, special=False)
    rhs = values(draw, dt, tuple(rhs_dims[k] for k in rperm), -4, 4, special=False)
    pref = draw(st.sampled_from([None, F32])) if dt in (F16, BF16, F32) else None
    return (lambda a, b: lax.dot_general(a, b, ((lc, rc), (lb, rb)),
                                         preferred_element_type=pref)), [lhs, rhs]


def _conv(draw, dts):
    dt = pick(draw, dts, is_float)
    groups = draw(st.sampled_from([1, 2]))
    n, c, o = draw(st.integers(1, 2)), 2 * groups, 2 * groups
    h, w = draw(st.integers(2, 5)), draw(st.integers(2, 5))
    kh, kw = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    strides = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    padding = draw(st.sampled_from(["VALID", "SAME", ((1, 0), (0, 1))]))
    lhs_dil = draw(st.sampled_from([(1, 1), (2, 1)]))
    rhs_dil = draw(st.sampled_from([(1, 1), (1, 2)]))
    x = values(draw, dt, (n, c, h, w), -2, 2, special=False)
    k = values(draw, dt, (o, c // groups, kh, kw), -2, 2, special=False)
    return (lambda a, b: lax.conv_general_dilated(
        a, b, strides, padding, lhs_dil, rhs_dil, feature_group_count=groups)), [x, k]


def window(name):
    def build(draw, dts):
        dt = pick(draw, dts, lambda d: name != "reduce_window_sum" or d != BOOL)
        s = tuple(draw(st.integers(1, 4)) for _ in range(draw(st.integers(1, 3))))
        dims = tuple(draw(st.integers(1, n)) for n in s)
        strides = tuple(draw(st.integers(1, 2)) for _ in s)
        pad = tuple((draw(st.integers(0, 1)), draw(st.integers(0, 1))) for _ in s)
        return (lambda a: getattr(lax, name)(a, dims, strides, pad)), [
            values(draw, dt, s, -3, 3)]
    return build


# ---- collectives (through vmap with a named axis) ----------------------------------------
def collective(inner, need=lambda n, s: True, inside_jit=False):
    """fn(xs) = vmap(inner, axis_name='i')(xs) (or vmap of jit(inner))."""
    def build(draw, dts):
        dt = pick(draw, dts, lambda d: d in (F32, I32))
        n = draw(st.integers(1, 3))
        s = (n, *shape_of(draw, max_dims=2))
        if not need(n, s):
            s = (n, n, *s[1:])
        params = draw(st.data())
        body = inner(params.draw, n, len(s) - 1)
        body = mt.jit(body) if inside_jit else body
        return mt.vmap(body, axis_name="i"), [values(draw, dt, s, -5, 5, special=False)]
    return build


def _perm(draw, n):
    dst = draw(st.permutations(range(n)))
    return [(i, j) for i, j in zip(range(n), dst) if draw(st.booleans()) or n == 1]


COLLECTIVES = {
    "psum": lambda d, n, r: lambda x: lax.psum(x, "i"),
    "pmax": lambda d, n, r: lambda x: lax.pmax(x, "i"),
    "pmin": lambda d, n, r: lambda x: lax.pmin(x, "i"),
    "axis_index": lambda d, n, r: lambda x: (lax.axis_index("i"), x),
    "all_gather": lambda d, n, r: (lambda ax: lambda x: lax.all_gather(x, "i", axis=ax))(
        d(st.integers(0, r))),
    "ppermute": lambda d, n, r: (lambda p: lambda x: lax.ppermute(x, "i", p))(_perm(d, n)),
    "psum_scatter": lambda d, n, r: lambda x: lax.psum_scatter(x, "i", scatter_dimension=0),
    "all_to_all": lambda d, n, r: (lambda c: lambda x: lax.all_to_all(x, "i", 0, c))(
        d(st.integers(0, r - 1))),
}
_NEEDS_N_LEADING = {"psum_scatter", "all_to_all"}  # per-example axis 0 of size n


# ---- AD, calls, effects ------------------------------------------------------------------
def _floats(draw, dts):
    dt = pick(draw, dts, lambda d: d in (F32, F64))
    return values(draw, dt, shape_of(draw), -3, 3, special=False)


def _add_any(draw, dts):
    return mt.grad(lambda x: mnp.sum(mnp.sin(x) * x)), [_floats(draw, dts)]


def _zeros(draw, dts):
    return mt.grad(lambda x, y: mnp.sum(x * 2.0), argnums=(0, 1)), [_floats(draw, dts)] * 2


def _checkpoint(draw, dts):
    f = mt.checkpoint(lambda x: mnp.sin(x) * x)
    fn = draw(st.sampled_from([f, mt.grad(lambda x: mnp.sum(f(x)))]))
    return fn, [_floats(draw, dts)]


@mt.custom_jvp
def softplus(x):
    return mnp.logaddexp(x, 0.0)


softplus.defjvp(lambda primals, tangents: (softplus(primals[0]),
                                           tangents[0] * lax.logistic(primals[0])))


@mt.custom_vjp
def clip_grad(x):
    return mnp.tanh(x) * 2.0


clip_grad.defvjp(lambda x: (clip_grad(x), x),
                 lambda x, ct: (mnp.clip(ct * 2.0 * (1 - mnp.tanh(x) ** 2), -1.0, 1.0),))


def _custom(fn):
    def build(draw, dts):
        f = draw(st.sampled_from([fn, mt.grad(lambda x: mnp.sum(fn(x)))]))
        return f, [_floats(draw, dts)]
    return build


def _custom_lin(draw, dts):
    # a fresh function per draw: jit's cached JVP of an earlier draw would bind nothing
    return mt.grad(lambda x: mnp.sum(mt.jit(lambda v: clip_grad(v))(x))), [_floats(draw, dts)]


def _named(draw, dts):
    name = mt.ad_checkpoint.checkpoint_name
    policy = mt.checkpoint_policies.save_only_these_names("h")
    block = mt.checkpoint(lambda x: mnp.sin(name(mnp.cos(x), "h")) * 2.0, policy=policy)
    f = draw(st.sampled_from([lambda x: name(x * 3.0, "h") + x,
                              mt.grad(lambda x: mnp.sum(block(x)))]))
    return f, [_floats(draw, dts)]


def _jit(draw, dts):
    inner = mt.jit(lambda x, y: (mnp.sin(x) * y, x))
    return (lambda x, y: inner(x * 2.0, y)), [_floats(draw, dts)] * 2


def _pmap(draw, dts):
    # one replica (the jit tests run on one device): a pmap with a collective, traced in jit
    pf = mt.pmap(lambda v, w: lax.psum(mnp.sin(v) * w, "i"), "i", in_axes=(0, None))
    return (lambda x, y: pf(x[None] * 2.0, y)[0]), [_floats(draw, dts)] * 2


CALLBACK_LOG = []


def _debug_callback(draw, dts):
    def f(x):
        mt.debug.callback(lambda v: CALLBACK_LOG.append(v.copy()), x)
        return x * 2.0
    return f, [_floats(draw, dts)]


def _pure_callback(draw, dts):
    x = _floats(draw, dts)
    sds = mt.ShapeDtypeStruct(x.shape, x.dtype)
    return (lambda a: mt.pure_callback(np.sin, sds, a * 3.0) + a), [x]


def _scan(draw, dts):
    rev = draw(st.booleans())

    def f(xs):
        xs = mnp.reshape(xs, (-1,))
        c, ys = lax.scan(lambda c, x: (mnp.sin(c * 0.5 + x), c * x), mnp.sum(xs) * 0.0, xs,
                         reverse=rev)
        return c + mnp.sum(ys)
    return draw(st.sampled_from([f, mt.grad(f)])), [_floats(draw, dts)]


def _cond(draw, dts):
    def f(x):
        return lax.cond(mnp.sum(x) > 0, lambda v: mnp.sin(v) * 2.0, lambda v: v - 1.0, x)
    return draw(st.sampled_from([f, mt.grad(lambda x: mnp.sum(f(x)))])), [_floats(draw, dts)]


def _while_body(c):
    return c[0] * 0.75 + mnp.sin(c[0]), c[1] + 1


def _while(draw, dts):
    def f(x):
        return lax.while_loop(lambda c: c[1] < 3, _while_body, (x, 0))[0]
    return f, [_floats(draw, dts)]


def _while_grad(draw, dts):
    """Reverse mode of a while loop: jitted it records on a tape (while_tape) and reads it
    back (a scan whose xs come from the tape); eagerly too, and under grad(grad) the
    residuals are stacked. A batched variant too."""
    every = draw(st.sampled_from([None, 1, 2]))

    def f(x):
        c = lax.while_loop(lambda c: c[1] < 3, _while_body, (x, 0), checkpoint_every=every)
        return mnp.sum(c[0] * c[0])

    def per_element(x):  # a scalar: under vmap each element stops at its own trip count
        c = lax.while_loop(lambda c: (c[1] < 4) & (mnp.abs(c[0]) < 1.5), _while_body,
                           (x, 0), checkpoint_every=every)
        return c[0] * c[0]

    batched = lambda x: mt.vmap(mt.grad(per_element))(mnp.reshape(x, (-1,)))  # noqa: E731
    return draw(st.sampled_from([mt.grad(f), batched])), [_floats(draw, dts)]


# ---- linear algebra (float32/float64, well-conditioned stacks of matrices) ---------------
def _matrices(draw, dts, square=False, spd=False):
    dt = pick(draw, dts, lambda d: d in (F32, F64))
    batch = draw(st.sampled_from([(), (2,)]))
    m = draw(st.integers(1, 4))
    n = m if square or spd else draw(st.integers(1, 4))
    x = values(draw, dt, (*batch, m, n), -1, 1, special=False)
    if spd:
        x = x @ np.swapaxes(x, -1, -2)
    return (x + max(m, n) * np.eye(m, n)).astype(dt)


def _linalg(name):
    def build(draw, dts):
        if name == "cholesky":
            return lax.linalg.cholesky, [_matrices(draw, dts, spd=True)]
        if name == "eigh":
            return (lambda a: lax.linalg.eigh(a)[1]), [_matrices(draw, dts, spd=True)]
        if name == "lu":
            return lax.linalg.lu, [_matrices(draw, dts)]
        if name == "eig":
            return lax.linalg.eig, [_matrices(draw, dts, square=True)]
        if name == "qr":
            full = draw(st.booleans())
            return (lambda a: lax.linalg.qr(a, full_matrices=full)), [_matrices(draw, dts)]
        if name == "svd":
            # singular vectors are unique up to sign only: compare the values
            return (lambda a: lax.linalg.svd(a, compute_uv=False)), [_matrices(draw, dts)]
        a = _matrices(draw, dts, square=True)
        *batch, m, _ = a.shape
        b = values(draw, a.dtype, (*batch, m, draw(st.integers(1, 3))), -1, 1,
                   special=False)
        if name == "triangular_solve":
            lower = draw(st.booleans())
            return (lambda a, b: lax.linalg.triangular_solve(a, b, left_side=True,
                                                             lower=lower)), [a, b]
        diag = [np.diagonal(a, 0, -2, -1).copy(), np.diagonal(a, 0, -2, -1).copy() / 4,
                np.diagonal(a, 0, -2, -1).copy() / 4]
        return lax.linalg.tridiagonal_solve, [diag[1], diag[0], diag[2], b]
    return build


# ---- fft (every type, 1 to 3 trailing lengths, batched) ----------------------------------
def _fft(draw, dts):
    real = pick(draw, dts, lambda d: d in (F32, F64))
    fft_type = draw(st.sampled_from(list(lax.FftType)))
    lengths = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    shape = (*draw(st.sampled_from([(), (2,)])), *lengths)
    if fft_type == lax.FftType.IRFFT:
        shape = (*shape[:-1], lengths[-1] // 2 + 1)
    dt = real if fft_type == lax.FftType.RFFT else (C128 if real == F64 else C64)
    return (lambda x: lax.fft(x, fft_type, lengths)), [values(draw, dt, shape, -3, 3,
                                                             special=False)]


# ---- complex parts ------------------------------------------------------------------------
def _complex_dts(dts):
    return [C128] if F64 in dts else [C64]


def _complex_part(prim):
    """real/imag/conj of a complex array, inside other complex arithmetic."""
    def build(draw, dts):
        dt = pick(draw, _complex_dts(dts))
        s = shape_of(draw)
        return (lambda a, b: prim.bind(lax.add(lax.mul(a, b), a))), [
            values(draw, dt, s), values(draw, dt, s)]
    return build


def _complex_from_parts(draw, dts):
    dt = pick(draw, [F64] if F64 in dts else [F32])
    s = shape_of(draw)
    sx, sy = draw(st.sampled_from([(s, s), (s, ()), ((), s)]))
    return (lambda a, b: lax.exp(lax.complex(a, b))), [values(draw, dt, sx, -5, 5),
                                                       values(draw, dt, sy, -5, 5)]


def _complex_elementwise(prim, n):
    """`prim` on complex operands (the elementwise rows that accept them)."""
    def build(draw, dts):
        dt = pick(draw, _complex_dts(dts))
        s = shape_of(draw)
        return (lambda *a: prim.bind(*a)), [values(draw, dt, s, -3, 3) for _ in range(n)]
    return build


# ---- the table: primitive name -> builders -----------------------------------------------
CASES = {
    "round": [_round], "integer_pow": [_integer_pow], "select_n": [_select_n],
    "clamp": [_clamp], "convert_element_type": [_convert], "bitcast_convert_type": [_bitcast],
    "shift_left": [shift(P["shift_left"])],
    "shift_right_arithmetic": [shift(P["shift_right_arithmetic"])],
    "shift_right_logical": [shift(P["shift_right_logical"])],
    "broadcast_in_dim": [_broadcast_in_dim], "concatenate": [_concatenate], "iota": [_iota],
    "pad": [_pad], "reshape": [_reshape], "rev": [_rev], "slice": [_slice],
    "squeeze": [_squeeze], "transpose": [_transpose],
    "dynamic_slice": [_dynamic_slice], "dynamic_update_slice": [_dynamic_update_slice],
    "gather": [_gather], "scatter": [scatter("set")], "scatter_add": [scatter("add")],
    "scatter_mul": [scatter("mul")], "scatter_min": [scatter("min")],
    "scatter_max": [scatter("max")],
    "argmax": [arg_reducer(P["argmax"])], "argmin": [arg_reducer(P["argmin"])],
    "sort": [_sort], "top_k": [_top_k], "dot_general": [_dot_general],
    "threefry2x32": [_threefry],
    "dot_product_attention": [_attention],
    "dot_product_attention_tangent": [_attention_tangent],
    "dot_product_attention_bwd": [_attention_bwd],
    "conv_general_dilated": [_conv],
    "add_any": [_add_any], "zeros": [_zeros], "checkpoint": [_checkpoint],
    "custom_jvp_call": [_custom(softplus)], "custom_vjp_call": [_custom(clip_grad)],
    "custom_lin": [_custom_lin], "name": [_named], "jit": [_jit], "pmap": [_pmap],
    "debug_callback": [_debug_callback],
    "pure_callback": [_pure_callback], "scan": [_scan, _while_grad], "cond": [_cond],
    "while": [_while], "while_tape": [_while_grad],
    "real": [_complex_part(P["real"])], "imag": [_complex_part(P["imag"])],
    "conj": [_complex_part(P["conj"])], "complex": [_complex_from_parts],
    "fft": [_fft],
}
for _name in ("cholesky", "triangular_solve", "lu", "qr", "eigh", "svd",
              "tridiagonal_solve", "eig"):
    CASES[_name] = [_linalg(_name)]
for _name in ("reduce_window_sum", "reduce_window_max", "reduce_window_min"):
    CASES[_name] = [window(_name)]
for _name, _inner in COLLECTIVES.items():
    _need = (lambda n, s: s[1:2] == (n,)) if _name in _NEEDS_N_LEADING else (
        lambda n, s: True)
    CASES[_name] = [collective(_inner, _need), collective(_inner, _need, inside_jit=True)]
# plain elementwise and reduction primitives, listed by name (a new primitive must be added
# here, or to CASES above, for test_every_primitive_has_a_jit_case to pass)
UNARY = """abs acos acosh asin asinh atan atanh cbrt ceil cos cosh digamma erf erf_inv erfc
    exp exp2 expm1 floor is_finite lgamma log log1p logistic neg not reciprocal rsqrt sign
    sin sinh sqrt square stop_gradient tan tanh""".split()
BINARY = """add sub mul div rem pow max min atan2 nextafter and or xor eq ne lt le gt
    ge""".split()
REDUCERS = "reduce_sum reduce_max reduce_min reduce_prod reduce_and reduce_or reduce_xor".split()
CUMULATIVE = "cumsum cumprod cummax cummin cumlogsumexp".split()
for _name in UNARY:
    CASES[_name] = [unary(P[_name])]
for _name in BINARY:
    CASES[_name] = [binary(P[_name])]
for _name in REDUCERS:
    CASES[_name] = [reducer(P[_name])]
for _name in CUMULATIVE:
    CASES[_name] = [cumulative(P[_name])]
# the same rows on complex operands, where they accept them
for _name in UNARY + BINARY:
    if accepts(P[_name], C64, 1 if _name in UNARY else 2):
        CASES[_name].append(_complex_elementwise(P[_name], 1 if _name in UNARY else 2))
