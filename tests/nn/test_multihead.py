"""mt.nn.MultiheadAttention against a NumPy reference of multi-head attention (masks,
causal masking, per-head masks, key padding, dropout), vmap/jit/batch agreement and FD
gradients."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch import tree_util
from tests.autodiff.fd import check_grads


def _np(x):
    return np.asarray(x, np.float64)


def np_linear(lin, x):
    y = x @ _np(lin.weight).T
    return y if lin.bias is None else y + _np(lin.bias)


def np_mha(m, q, k, v, keep=None, causal=False, drop=None):
    """Reference for one example: q [T, Dq], k [S, Dk], v [S, Dv]; keep broadcastable to
    [h, T, S]; drop [h, T, S] multiplies the attention weights (dropout)."""
    h = m.num_heads
    qh = np_linear(m.query_proj, q).reshape(q.shape[0], h, -1)
    kh = np_linear(m.key_proj, k).reshape(k.shape[0], h, -1)
    vh = np_linear(m.value_proj, v).reshape(v.shape[0], h, -1)
    logits = np.einsum("tnd,snd->nts", qh, kh) / np.sqrt(qh.shape[-1])
    t, s = logits.shape[1:]
    mask = np.ones((h, t, s), bool)
    if keep is not None:
        mask = mask & np.broadcast_to(keep, (h, t, s))
    if causal:
        mask = mask & np.tril(np.ones((t, s), bool))
    logits = np.where(mask, logits, np.finfo(np.float64).min)
    w = np.exp(logits - logits.max(-1, keepdims=True))
    w = w / w.sum(-1, keepdims=True)
    if drop is not None:
        w = w * drop
    out = np.einsum("nts,snd->tnd", w, vh).reshape(t, -1)
    return np_linear(m.output_proj, out)


def make(**kw):
    args = {"num_heads": 2, "query_size": 6, "key": mt.random.key(0)}
    args.update(kw)
    return mt.nn.MultiheadAttention(**args)


def data(t=4, s=5, dq=6, dk=6, dv=6, batch=(), seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((*batch, t, dq)), rng.standard_normal((*batch, s, dk)),
            rng.standard_normal((*batch, s, dv)))


def f32(*xs):
    return [mnp.asarray(np.float32(x)) for x in xs]


def test_fields_and_defaults():
    m = make()
    assert (m.key_size, m.value_size, m.output_size, m.qk_size, m.vo_size) == (6, 6, 6, 3, 3)
    assert m.query_proj.weight.shape == (6, 6) and m.query_proj.bias is None
    assert m.dropout.p == 0.0 and not m.dropout.inference
    m2 = make(num_heads=3, key_size=4, value_size=5, output_size=7, qk_size=2, vo_size=4,
              use_query_bias=True, use_output_bias=True)
    assert m2.key_proj.weight.shape == (6, 4) and m2.value_proj.weight.shape == (12, 5)
    assert m2.output_proj.weight.shape == (7, 12) and m2.output_proj.bias.shape == (7,)
    assert m2.query_proj.bias.shape == (6,) and m2.key_proj.bias is None


CASES = [  # constructor kwargs, call kwargs (mask given as NumPy, converted below)
    ({}, {}),
    ({}, {"is_causal": True}),
    ({"num_heads": 3, "key_size": 4, "value_size": 5, "output_size": 7, "qk_size": 2,
      "vo_size": 4, "use_query_bias": True, "use_key_bias": True, "use_value_bias": True,
      "use_output_bias": True}, {}),
    ({"qk_size": 4, "vo_size": 2, "output_size": 3}, {"is_causal": True}),
    ({}, {"mask": "ts"}),
    ({}, {"mask": "hts"}),
    ({}, {"mask": "s", "is_causal": True}),
]


def _mask(kind, h, t, s, rng):
    shape = {"ts": (t, s), "hts": (h, t, s), "s": (s,)}[kind]
    m = rng.random(shape) < 0.6
    m[..., 0] = True  # a key every query may attend (rows fully masked are tested apart)
    return m


@pytest.mark.parametrize("ctor,call", CASES)
def test_matches_numpy(ctor, call):
    m = make(**ctor)
    q, k, v = data(dq=m.query_size, dk=m.key_size, dv=m.value_size)
    call = dict(call)
    keep = None
    if "mask" in call:
        keep = _mask(call["mask"], m.num_heads, 4, 5, np.random.default_rng(1))
        call["mask"] = mnp.asarray(keep)
        keep = keep if keep.ndim != 2 else keep[None]
    got = m(*f32(q, k, v), **call)
    want = np_mha(m, q, k, v, keep, call.get("is_causal", False))
    assert got.shape == (4, m.output_size) and got.dtype == np.float32
    np.testing.assert_allclose(np.asarray(got), want, rtol=2e-4, atol=2e-5)


@pytest.mark.parametrize("mask_kind", [None, "s", "ts", "hts", "ns", "nts", "nhts"])
def test_batched_equals_loop(mask_kind):
    m = make()
    n, t, s = 3, 4, 5
    q, k, v = data(batch=(n,), t=t, s=s)
    rng = np.random.default_rng(2)
    shapes = {"s": (s,), "ts": (t, s), "hts": (2, t, s), "ns": (n, s), "nts": (n, t, s),
              "nhts": (n, 2, t, s)}
    mask = None if mask_kind is None else rng.random(shapes[mask_kind]) < 0.6
    if mask is not None:
        mask[..., 0] = True
    got = m(*f32(q, k, v), mask=None if mask is None else mnp.asarray(mask), is_causal=True)
    for i in range(n):
        mi = mask if mask_kind in (None, "s", "ts", "hts") else mask[i]
        want = m(*f32(q[i], k[i], v[i]), mask=None if mi is None else mnp.asarray(mi),
                 is_causal=True)
        np.testing.assert_allclose(np.asarray(got[i]), np.asarray(want), rtol=1e-5,
                                   atol=1e-6)


def test_vmap_and_jit_agree():
    m = make()
    q, k, v = f32(*data(batch=(3,)))
    mask = mnp.asarray(np.random.default_rng(0).random((4, 5)) < 0.7)

    def one(q, k, v):
        return m(q, k, v, mask=mask, is_causal=True)

    loop = np.stack([np.asarray(one(q[i], k[i], v[i])) for i in range(3)])
    np.testing.assert_allclose(np.asarray(mt.vmap(one)(q, k, v)), loop, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(mt.jit(one)(q[0], k[0], v[0])), loop[0], rtol=1e-5,
                               atol=1e-6)
    jit_mod = mt.jit(lambda mod, q: mod(q, q, q))(m, q[1])
    np.testing.assert_allclose(np.asarray(jit_mod), np.asarray(m(q[1], q[1], q[1])),
                               rtol=1e-5, atol=1e-6)


def test_fully_masked_rows_average_the_values():
    m = make()
    q, k, v = data()
    keep = np.ones((4, 5), bool)
    keep[2] = False  # query 2 attends nothing: its weights are uniform, as in JAX/Equinox
    got = m(*f32(q, k, v), mask=mnp.asarray(keep))
    np.testing.assert_allclose(np.asarray(got), np_mha(m, q, k, v, keep[None]), rtol=2e-4,
                               atol=2e-5)


def test_process_heads():
    m = make()
    q, k, v = data()

    def scale_heads(qh, kh, vh):  # [T, h, qk], [S, h, qk], [S, h, vo]
        return 2.0 * qh, kh, -vh

    got = m(*f32(q, k, v), process_heads=scale_heads)
    qh = np_linear(m.query_proj, q).reshape(4, 2, 3) * 2.0
    kh = np_linear(m.key_proj, k).reshape(5, 2, 3)
    vh = -np_linear(m.value_proj, v).reshape(5, 2, 3)
    logits = np.einsum("tnd,snd->nts", qh, kh) / np.sqrt(3)
    w = np.exp(logits - logits.max(-1, keepdims=True))
    w /= w.sum(-1, keepdims=True)
    want = np_linear(m.output_proj, np.einsum("nts,snd->tnd", w, vh).reshape(4, 6))
    np.testing.assert_allclose(np.asarray(got), want, rtol=2e-4, atol=2e-5)
    qb, kb, vb = f32(*data(batch=(2,)))
    batched = m(qb, kb, vb, process_heads=scale_heads)
    np.testing.assert_allclose(np.asarray(batched[1]),
                               np.asarray(m(qb[1], kb[1], vb[1], process_heads=scale_heads)),
                               rtol=1e-5, atol=1e-6)


def _drop_pattern(m, key, t, s):
    """What the dropout keeps per head (1/(1-p) or 0): the key split into one per head."""
    keys = mt.random.split(key, m.num_heads)
    return np.stack([np.asarray(m.dropout(mnp.ones((t, s)), key=keys[i], inference=False),
                                np.float64) for i in range(m.num_heads)])


def test_attention_dropout():
    m = make(dropout_p=0.4)
    q, k, v = data()
    key = mt.random.key(7)
    got = m(*f32(q, k, v), key=key, is_causal=True)
    drop = _drop_pattern(m, key, 4, 5)
    assert 0 < (drop == 0).mean() < 1
    want = np_mha(m, q, k, v, causal=True, drop=drop)
    np.testing.assert_allclose(np.asarray(got), want, rtol=2e-4, atol=2e-5)
    # inference: no dropout, the same as a model without it
    plain = np_mha(m, q, k, v, causal=True)
    np.testing.assert_allclose(np.asarray(m(*f32(q, k, v), inference=True, is_causal=True)),
                               plain, rtol=2e-4, atol=2e-5)
    frozen = mt.nn.inference_mode(m)
    np.testing.assert_allclose(np.asarray(frozen(*f32(q, k, v), is_causal=True)), plain,
                               rtol=2e-4, atol=2e-5)
    # a batch with one key equals vmap over the examples with split keys
    qb, kb, vb = f32(*data(batch=(3,)))
    batched = m(qb, kb, vb, key=key)
    mapped = mt.vmap(lambda q, k, v, kk: m(q, k, v, key=kk))(qb, kb, vb,
                                                             mt.random.split(key, 3))
    np.testing.assert_allclose(np.asarray(batched), np.asarray(mapped), rtol=1e-5, atol=1e-6)
    jitted = mt.jit(lambda q, k, v, kk: m(q, k, v, key=kk, is_causal=True))(*f32(q, k, v), key)
    np.testing.assert_allclose(np.asarray(jitted), np.asarray(got), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("call", [{"is_causal": True}, {"mask": "hts"}, {"dropout": True}])
def test_grads_fd(call, x64):
    m = make(use_query_bias=True, use_output_bias=True, dropout_p=0.3 if "dropout" in call
             else 0.0)
    leaves, treedef = tree_util.tree_flatten(m)
    q, k, v = data(t=3, s=4)
    kwargs = {}
    if call.get("is_causal"):
        kwargs["is_causal"] = True
    if "mask" in call:
        keep = np.random.default_rng(3).random((2, 3, 4)) < 0.6
        keep[..., 0] = True
        kwargs["mask"] = mnp.asarray(keep)
    if "dropout" in call:
        kwargs["key"] = mt.random.key(4)

    def f(q, k, v, *params):
        return tree_util.tree_unflatten(treedef, list(params))(q, k, v, **kwargs)

    check_grads(f, (q, k, v, *[np.asarray(p) for p in leaves]), order=1)


def test_errors():
    m = make()
    q, k, v = f32(*data())
    with pytest.raises(ValueError, match=r"MultiheadAttention expected query, key and value of "
                                         r"shapes \(T, 6\), \(S, 6\), \(S, 6\) \(an optional "
                                         r"leading batch N on all\), got f32\[4,5\], f32\[5,6\], "
                                         r"f32\[5,6\] at test_multihead.py:\d+"):
        m(q[:, :5], k, v)
    with pytest.raises(ValueError, match=r"got f32\[4,6\], f32\[5,6\], f32\[3,6\]"):
        mt.jit(m)(q, k, v[:3])
    with pytest.raises(ValueError, match=r"got f32\[2,4,6\], f32\[5,6\], f32\[5,6\]"):
        m(mnp.stack([q, q]), k, v)
    with pytest.raises(ValueError, match=r"MultiheadAttention expected a bool mask of shape "
                                         r"\[5\], \[4, 5\], \[2, 4, 5\] \(True = attend\), got "
                                         r"bool\[5,4\]"):
        m(q, k, v, mask=mnp.ones((5, 4), mnp.bool_))
    with pytest.raises(ValueError, match=r"bool mask .* got f32\[4,5\]"):
        m(q, k, v, mask=mnp.ones((4, 5)))
    with pytest.raises(RuntimeError, match=r"MultiheadAttention needs a key while attention "
                                           r"dropout is active"):
        make(dropout_p=0.5)(q, k, v)
    with pytest.raises(ValueError, match=r"process_heads must not change the shapes"):
        m(q, k, v, process_heads=lambda a, b, c: (a[:1], b, c))
    with pytest.raises(ValueError, match=r"num_heads \(4\), qk_size \(0\) and vo_size \(0\) "
                                         r"must be positive"):
        make(num_heads=4, query_size=3)


@settings(max_examples=10)
@given(heads=st.integers(1, 3), t=st.integers(1, 5), s=st.integers(1, 5),
       qk=st.integers(1, 3), vo=st.integers(1, 3), causal=st.booleans())
def test_hypothesis_sizes(heads, t, s, qk, vo, causal):
    m = make(num_heads=heads, query_size=4, key_size=3, value_size=2, qk_size=qk,
             vo_size=vo)
    q, k, v = data(t=t, s=s, dq=4, dk=3, dv=2, seed=t * 7 + s)
    got = m(*f32(q, k, v), is_causal=causal)
    np.testing.assert_allclose(np.asarray(got), np_mha(m, q, k, v, causal=causal),
                               rtol=2e-4, atol=2e-5)


@pytest.mark.parametrize("dtype", [mnp.bfloat16, mnp.float16])
@pytest.mark.parametrize("dropout_p", [0.0, 0.5])
def test_low_precision_and_empty(dtype, dropout_p):
    m = make(dtype=dtype, dropout_p=dropout_p)
    q, k, v = (a.astype(dtype) for a in f32(*data()))
    out = m(q, k, v, key=mt.random.key(1), is_causal=True)
    assert out.dtype == dtype and out.shape == (4, 6)
    if dropout_p == 0:
        ref = np_mha(m, *(np.asarray(a, np.float64) for a in (q, k, v)), causal=True)
        np.testing.assert_allclose(np.asarray(out, np.float64), ref, rtol=0.05, atol=0.05)
    assert m(q[:0], k, v, key=mt.random.key(1)).shape == (0, 6)
