"""Rows of the primitive table beyond the elementwise family: reductions, cumulative
ops, structural and indexing ops, dot_general and convolution, sorting, FFT, linear
algebra, windows, attention, random bits and the call primitives (cond, scan, while,
checkpoint, custom derivatives, callbacks)."""

import functools

import numpy as np

import mytorch as mt
import mytorch.lax as lax
import mytorch.numpy as mnp
from mytorch import nn
from tests.gpu.cases import (BF16, C64, F16, F32, F64, FLOATS, SHORT, U8, Case,
                             bools, const, ints, permutation_values, spd, uniform,
                             well_conditioned)

X = uniform((4, 6, 5))
LOOSE = (1e-4, 1e-5)  # sums, products and factorizations in another order


def _reduction_cases():
    out = []
    for dt in FLOATS:
        tol = None if dt != F32 else LOOSE
        out.append(Case(f"reduce_sum_{SHORT[dt]}", lambda x: lax.reduce_sum(x, (0, 2)),
                        (uniform((4, 6, 5), dtype=dt),), grad=(0,) if dt == F32 else (),
                        tol=tol))
        out.append(Case(f"reduce_max_{SHORT[dt]}", lambda x: lax.reduce_max(x, (1,)),
                        (permutation_values((4, 6, 5), dt),), grad=(0,) if dt == F32 else ()))
    out += [
        Case("reduce_sum_all_large", lambda x: lax.reduce_sum(x, (0, 1)),
             (uniform((257, 1031)),), grad=(0,), tol=LOOSE),
        Case("reduce_sum_rows_large", lambda x: lax.reduce_sum(x, (1,)),
             (uniform((33, 4099)),), tol=LOOSE),
        Case("reduce_sum_i32", lambda x: lax.reduce_sum(x, (0,)), (ints((50, 7), -9, 9),)),
        Case("reduce_min_f32", lambda x: lax.reduce_min(x, (0, 2)),
             (permutation_values((4, 6, 5)),), grad=(0,)),
        Case("reduce_min_i32", lambda x: lax.reduce_min(x, (1,)), (ints((4, 9), -99, 99),)),
        Case("reduce_max_nan", lambda x: lax.reduce_max(x, (0,)),
             (const([[1.0, np.nan], [2.0, 3.0]], F32),)),
        Case("reduce_prod_f32", lambda x: lax.reduce_prod(x, (1,)), (uniform((4, 6), 0.5, 1.5),),
             grad=(0,), tol=LOOSE),
        Case("reduce_and", lambda x: lax.reduce_and(x, (1,)), (bools((5, 3)),)),
        Case("reduce_or", lambda x: lax.reduce_or(x, (0,)), (bools((5, 3)),)),
        Case("reduce_xor_u8", lambda x: lax.reduce_xor(x, (1,)), (ints((5, 9), 0, 256, U8),)),
        Case("reduce_sum_c64", lambda x: lax.reduce_sum(x, (0,)), (uniform((9, 4), dtype=C64),),
             tol=LOOSE),
        Case("argmax_f32", lambda x: lax.argmax(x, 1, np.int32), (permutation_values((5, 11)),)),
        Case("argmin_f16", lambda x: lax.argmin(x, 0, np.int32),
             (permutation_values((7, 3), F16),)),
        Case("argmax_ties_nan", lambda x: lax.argmax(x, 1, np.int32),
             (const([[1.0, 3.0, 3.0], [np.nan, 1.0, np.nan], [2.0, 2.0, 2.0]], F32),)),
        Case("mean_var_mnp", lambda x: (mnp.mean(x, axis=0), mnp.var(x, axis=-1)), (X,),
             grad=(0,), tol=LOOSE),
        Case("logsumexp", lambda x: nn.logsumexp(x, axis=-1), (uniform((8, 33), -5, 5),),
             grad=(0,), tol=LOOSE),
    ]
    for name, fn in (("cumsum", lax.cumsum), ("cumprod", lax.cumprod), ("cummax", lax.cummax),
                     ("cummin", lax.cummin), ("cumlogsumexp", lax.cumlogsumexp)):
        args = (uniform((5, 17), 0.6, 1.4) if name == "cumprod" else permutation_values((5, 17)),)
        out.append(Case(f"{name}_axis1", lambda x, fn=fn: fn(x, axis=1), args, grad=(0,),
                        tol=LOOSE, jit=True))
        out.append(Case(f"{name}_reverse", lambda x, fn=fn: fn(x, axis=0, reverse=True), args,
                        tol=LOOSE))
    out.append(Case("cumsum_i32", lambda x: lax.cumsum(x, axis=0), (ints((40, 3), -9, 9),)))
    out.append(Case("cumsum_long", lambda x: lax.cumsum(x, axis=0), (uniform((5000,)),),
                    tol=(1e-4, 1e-4)))
    out.append(Case("cumsum_bf16", lambda x: lax.cumsum(x, axis=1),
                    (uniform((3, 20), dtype=BF16),), tol=(3e-2, 3e-2)))
    return out


def _structural_cases():
    return [
        Case("broadcast_in_dim", lambda x: lax.broadcast_in_dim(x, (3, 4, 5), (0, 2)),
             (uniform((3, 5)),), grad=(0,), jit=True),
        Case("broadcast_mnp", lambda x, y: x + y, (uniform((4, 1, 5)), uniform((3, 1))),
             grad=(0, 1), jit=True),
        Case("concatenate", lambda x, y: lax.concatenate([x, y, x], 1),
             (uniform((3, 4)), uniform((3, 2))), grad=(0, 1), jit=True),
        Case("iota", lambda x: x + lax.iota(np.float32, 7), (uniform((7,)),), jit=True),
        Case("iota_i32", lambda: lax.broadcasted_iota(np.int32, (3, 4), 1), (), jit=True),
        Case("pad", lambda x: lax.pad(x, 0.5, ((1, 2, 0), (0, -1, 2))), (uniform((3, 4)),),
             grad=(0,), jit=True),
        Case("reshape", lambda x: lax.reshape(x, (6, 20)), (X,), grad=(0,), jit=True),
        Case("rev", lambda x: lax.rev(x, (0, 2)), (X,), grad=(0,), jit=True),
        Case("slice_strided", lambda x: lax.slice(x, (1, 0, 1), (4, 6, 5), (2, 3, 2)), (X,),
             grad=(0,), jit=True),
        Case("squeeze", lambda x: lax.squeeze(x, (1,)), (uniform((3, 1, 4)),), grad=(0,)),
        Case("transpose", lambda x: lax.transpose(x, (2, 0, 1)), (X,), grad=(0,), jit=True),
        Case("transpose_bf16", lambda x: lax.transpose(x, (1, 0)),
             (uniform((33, 65), dtype=BF16),), jit=True),
        Case("checkpoint_name",
             lambda x: mt.ad_checkpoint.checkpoint_name(x * 2, "h") + 1, (X,), grad=(0,)),
        Case("expand_dims_mnp", lambda x: mnp.expand_dims(x, 1) * mnp.ones((3, 2, 1)),
             (uniform((3, 1)),), grad=(0,)),
    ]


def _indexing_cases():
    idx = ints((6,), 0, 5)
    return [
        Case("dynamic_slice", lambda x, i: lax.dynamic_slice(x, (i, 1), (2, 3)),
             (uniform((5, 6)), const(2, np.int32)), grad=(0,), jit=True),
        Case("dynamic_slice_clamped", lambda x, i: lax.dynamic_slice(x, (i, 1), (2, 3)),
             (uniform((5, 6)), const(9, np.int32)), jit=True),
        Case("dynamic_update_slice", lambda x, u, i: lax.dynamic_update_slice(x, u, (1, i)),
             (uniform((5, 6)), uniform((2, 3)), const(2, np.int32)), grad=(0, 1), jit=True),
        Case("gather_take", lambda x, i: x[i], (uniform((5, 4)), idx), grad=(0,), jit=True),
        Case("gather_take_axis1", lambda x, i: mnp.take(x, i, axis=1),
             (uniform((3, 5)), idx), grad=(0,), jit=True),
        Case("gather_2d_points", lambda x, i, j: x[i, j],
             (uniform((5, 4)), ints((7,), 0, 5), ints((7,), 0, 4)), grad=(0,), jit=True),
        Case("gather_fill_oob", lambda x, i: x.at[i].get(mode="fill", fill_value=-1.0),
             (uniform((5, 2)), ints((8,), -7, 9)), jit=True),
        Case("gather_f16", lambda x, i: x[i], (uniform((5, 4), dtype=F16), idx)),
        Case("scatter_set", lambda x, i, v: x.at[i].set(v),
             (uniform((5, 3)), const([4, 0, 2], np.int32), uniform((3, 3))), grad=(0, 2),
             jit=True),
        Case("scatter_add_dupes", lambda x, i, v: x.at[i].add(v),
             (uniform((5, 3)), ints((40,), 0, 5), uniform((40, 3))), grad=(0, 2), tol=LOOSE,
             jit=True),
        Case("scatter_add_i32", lambda x, i, v: x.at[i].add(v),
             (ints((5,), 0, 9), ints((30,), 0, 5), ints((30,), -9, 9))),
        Case("scatter_mul", lambda x, i, v: x.at[i].multiply(v),
             (uniform((5, 2)), const([1, 3, 1], np.int32), uniform((3, 2), 0.5, 1.5)),
             grad=(0, 2), jit=True),
        Case("scatter_min", lambda x, i, v: x.at[i].min(v),
             (permutation_values((6, 2)), ints((9,), 0, 6), uniform((9, 2))), jit=True),
        Case("scatter_max", lambda x, i, v: x.at[i].max(v),
             (permutation_values((6, 2)), ints((9,), 0, 6), uniform((9, 2))), grad=(0,),
             jit=True),
        Case("scatter_drop_oob", lambda x, i, v: x.at[i].add(v, mode="drop"),
             (uniform((4,)), const([1, 7, -9, 2], np.int32), uniform((4,)))),
        Case("one_hot_embedding", lambda w, t: nn.one_hot(t, 7) @ w + w[t],
             (uniform((7, 3)), ints((4, 5), 0, 7)), grad=(0,), jit=True),
    ]


def _dn(lhs_contract, rhs_contract, lhs_batch=(), rhs_batch=()):
    return ((lhs_contract, rhs_contract), (lhs_batch, rhs_batch))


def _contraction_cases():
    out = [
        Case("matmul_f32", lambda a, b: a @ b, (uniform((33, 65)), uniform((65, 17))),
             grad=(0, 1), tol=LOOSE, grad_tol=(1e-3, 1e-4), jit=True),
        Case("dot_general_batch", lambda a, b: lax.dot_general(a, b, _dn((2,), (1,), (0,), (0,))),
             (uniform((4, 5, 6)), uniform((4, 6, 3))), grad=(0, 1), tol=LOOSE, jit=True),
        Case("dot_general_batch_middle",
             lambda a, b: lax.dot_general(a, b, _dn((0,), (2,), (1,), (0,))),
             (uniform((6, 4, 5)), uniform((4, 3, 6))), grad=(0, 1), tol=LOOSE),
        Case("dot_vector", lambda a, b: mnp.dot(a, b), (uniform((129,)), uniform((129,))),
             grad=(0, 1), tol=LOOSE),
        Case("einsum_multi", lambda a, b, c: mnp.einsum("bij,jk,bk->bi", a, b, c),
             (uniform((3, 4, 5)), uniform((5, 6)), uniform((3, 6))), grad=(0, 1, 2),
             tol=LOOSE),
        Case("matmul_i32", lambda a, b: a @ b, (ints((4, 5), -9, 9), ints((5, 3), -9, 9))),
        Case("matmul_c64", lambda a, b: a @ b, (uniform((4, 5), dtype=C64),
                                                uniform((5, 3), dtype=C64)), tol=LOOSE),
        Case("dot_f32_acc_from_f16",
             lambda a, b: lax.dot_general(a, b, _dn((1,), (0,)), preferred_element_type=F32),
             (uniform((32, 256), dtype=F16), uniform((256, 16), dtype=F16)), tol=(2e-3, 2e-3)),
    ]
    for dt in (F16, BF16):
        # float32 accumulation: compare with a loose bound of the output's precision
        out.append(Case(f"matmul_{SHORT[dt]}", lambda a, b: a @ b,
                        (uniform((64, 256), dtype=dt), uniform((256, 48), dtype=dt)),
                        tol=(2e-2, 5e-2) if dt == F16 else (4e-2, 2e-1), jit=True))
        out.append(Case(f"batched_matmul_{SHORT[dt]}", lambda a, b: a @ b,
                        (uniform((3, 16, 32), dtype=dt), uniform((3, 32, 8), dtype=dt)),
                        tol=(2e-2, 5e-2) if dt == F16 else (4e-2, 2e-1)))
    conv = functools.partial(lax.conv_general_dilated, window_strides=(1, 1),
                             padding="SAME")
    out += [
        Case("conv2d_same", lambda x, w: conv(x, w), (uniform((2, 3, 9, 8)),
                                                      uniform((4, 3, 3, 3))),
             grad=(0, 1), tol=LOOSE, grad_tol=(1e-3, 1e-4), jit=True),
        Case("conv2d_strided_dilated",
             lambda x, w: lax.conv_general_dilated(x, w, (2, 1), ((1, 0), (2, 2)),
                                                   rhs_dilation=(1, 2)),
             (uniform((2, 3, 9, 8)), uniform((4, 3, 3, 2))), grad=(0, 1), tol=LOOSE,
             grad_tol=(1e-3, 1e-4)),
        Case("conv1d_grouped_nwc",
             lambda x, w: lax.conv_general_dilated(
                 x, w, (1,), "VALID", dimension_numbers=("NWC", "WIO", "NWC"),
                 feature_group_count=2),
             (uniform((2, 11, 4)), uniform((3, 2, 6))), grad=(0, 1), tol=LOOSE),
        Case("conv2d_f16", lambda x, w: conv(x, w), (uniform((1, 4, 8, 8), dtype=F16),
                                                     uniform((2, 4, 3, 3), dtype=F16)),
             tol=(2e-2, 2e-2)),
        Case("conv_transpose_lhs_dilation",
             lambda x, w: lax.conv_general_dilated(x, w, (1, 1), ((2, 2), (2, 2)),
                                                   lhs_dilation=(2, 2)),
             (uniform((1, 2, 5, 5)), uniform((3, 2, 3, 3))), grad=(0, 1), tol=LOOSE),
    ]
    return out


def _sort_fft_window_cases():
    v = permutation_values((4, 19))
    return [
        Case("sort_last", lambda x: lax.sort(x, dimension=-1), (v,), grad=(0,), jit=True),
        Case("sort_axis0_i32", lambda x: lax.sort(x, dimension=0), (ints((30, 3), -5, 5),)),
        Case("sort_nan_f32", lambda x: mnp.sort(x), (const(np.array([3.0, np.nan, -1.0, np.inf,
                                                                       -np.inf, 0.0], F32)),)),
        Case("sort_bf16", lambda x: mnp.sort(x, axis=0), (permutation_values((9, 2), BF16),)),
        Case("argsort_stable", lambda x: mnp.argsort(x, axis=-1), (ints((4, 33), 0, 4),),
             jit=True),
        Case("sort_key_val", lambda k, v: lax.sort((k, v), num_keys=1),
             (ints((50,), 0, 7), uniform((50,))), grad=(1,)),
        Case("top_k", lambda x: lax.top_k(x, 5), (v,), grad=(0,), jit=True),
        Case("top_k_i32", lambda x: lax.top_k(x, 3), (ints((2, 40), -1000, 1000),)),
        Case("fft_c64", lambda x: mnp.fft.fft(x), (uniform((3, 16), dtype=C64),), tol=LOOSE,
             jit=True),
        Case("ifft2_c64", lambda x: mnp.fft.ifft2(x), (uniform((2, 8, 6), dtype=C64),),
             tol=LOOSE),
        Case("rfft_irfft", lambda x: (mnp.fft.rfft(x), mnp.fft.irfft(mnp.fft.rfft(x), 15)),
             (uniform((4, 15)),), grad=(0,), tol=LOOSE),
        Case("fftn_c128", lambda x: mnp.fft.fftn(x), (uniform((4, 6, 5), dtype=np.complex128),),
             x64=True),
        Case("reduce_window_sum", lambda x: lax.reduce_window_sum(
            x, (1, 3, 3), (1, 2, 1), ((0, 0), (1, 1), (0, 1))), (uniform((2, 9, 7)),),
            grad=(0,), tol=LOOSE, jit=True),
        Case("reduce_window_max", lambda x: lax.reduce_window_max(
            x, (2, 2), (2, 2), "VALID"), (permutation_values((8, 10)),), grad=(0,), jit=True),
        Case("reduce_window_min_dilated", lambda x: lax.reduce_window_min(
            x, (2, 2), (1, 1), "SAME", window_dilation=(2, 1)), (permutation_values((6, 7)),),
            grad=(0,)),
        Case("max_pool_nn", lambda x: nn.MaxPool2d(2, 2)(x), (permutation_values((3, 8, 8)),),
             grad=(0,)),
    ]


def _linalg_cases():
    la = lax.linalg
    tol = (2e-4, 2e-5)
    gtol = (2e-3, 2e-4)
    return [
        Case("cholesky", la.cholesky, (spd(5, (2,)),), grad=(0,), tol=tol, grad_tol=gtol,
             jit=True),
        Case("eigh", lambda a: mnp.linalg.eigh(a)[0], (spd(6),), grad=(0,), tol=tol,
             grad_tol=gtol),
        Case("eigh_vectors_abs", lambda a: mnp.abs(mnp.linalg.eigh(a)[1]), (spd(4),),
             tol=tol),
        Case("eigvals_sorted", lambda a: mnp.sort_complex(mnp.linalg.eigvals(a)),
             (well_conditioned(4),), tol=tol),
        Case("lu_solve", lambda a, b: mnp.linalg.solve(a, b),
             (well_conditioned(5, (3,)), uniform((3, 5, 2))), grad=(0, 1), tol=tol,
             grad_tol=gtol, jit=True),
        Case("lu_raw", lambda a: la.lu(a), (well_conditioned(5),), tol=tol),
        Case("det_slogdet", lambda a: (mnp.linalg.det(a), mnp.linalg.slogdet(a)[1]),
             (well_conditioned(4, (2,)),), grad=(0,), tol=tol, grad_tol=gtol),
        Case("qr_r_abs", lambda a: mnp.abs(mnp.linalg.qr(a)[1]), (uniform((6, 4)),),
             grad=(0,), tol=tol, grad_tol=gtol),
        Case("svd_values", lambda a: mnp.linalg.svd(a, compute_uv=False), (uniform((5, 3)),),
             grad=(0,), tol=tol, grad_tol=gtol),
        Case("pinv", lambda a: mnp.linalg.pinv(a), (uniform((5, 3)),), tol=(1e-3, 1e-4)),
        Case("triangular_solve", lambda a, b: la.triangular_solve(
            a, b, left_side=True, lower=True), (well_conditioned(4), uniform((4, 3))),
            grad=(0, 1), tol=tol, grad_tol=gtol),
        Case("tridiagonal_solve", lambda dl, d, du, b: la.tridiagonal_solve(dl, d, du, b),
             (const([0.0, 1.0, -1.0, 0.5]), uniform((4,), 3, 4), const([0.3, 1.0, -1.0, 0.0]),
              uniform((4, 2))), grad=(1, 3), tol=tol, grad_tol=gtol),
        Case("inv_f64", lambda a: mnp.linalg.inv(a), (well_conditioned(5, dtype=F64),),
             x64=True, grad=(0,)),
    ]


def _attention_random_cases():
    q = uniform((2, 7, 3, 8))  # batch, sequence, heads, head dim
    k = uniform((2, 9, 3, 8))

    def tangent(q, k, v):
        return mt.jvp(lambda q: nn.dot_product_attention(q, k, v), (q,), (k[:, :7] * 0.5,))

    return [
        Case("attention", lambda q, k, v: nn.dot_product_attention(q, k, v), (q, k, k),
             grad=(0, 1, 2), tol=LOOSE, grad_tol=(1e-3, 1e-4), jit=True),
        Case("attention_causal", lambda q, k, v: nn.dot_product_attention(q, k, v,
                                                                          is_causal=True),
             (q, q, q), grad=(0, 1, 2), tol=LOOSE, grad_tol=(1e-3, 1e-4)),
        Case("attention_jvp", tangent, (q, k, k), tol=LOOSE),
        Case("attention_bf16", lambda q, k, v: nn.dot_product_attention(q, k, v),
             (uniform((1, 16, 2, 16), dtype=BF16),) * 3, tol=(4e-2, 4e-2)),
        Case("layer_norm_gelu", lambda x, g: nn.gelu(nn.LayerNorm(33)(x) * g),
             (uniform((5, 33)), uniform((33,))), grad=(0, 1), tol=LOOSE),
        Case("softmax_xent", lambda x, y: nn.softmax_cross_entropy_with_integer_labels(x, y),
             (uniform((6, 11), -3, 3), ints((6,), 0, 11)), grad=(0,), tol=LOOSE, jit=True),
        Case("random_bits", lambda k: mt.random.bits(mt.random.wrap_key_data(k), (5, 77)),
             (const([0, 42], np.uint32),), jit=True),
        Case("random_bits_u8", lambda k: mt.random.bits(mt.random.wrap_key_data(k), (33,),
                                                        np.uint8),
             (const([7, 1 << 31], np.uint32),)),
        Case("random_split_fold", lambda k: mt.random.key_data(mt.random.fold_in(
            mt.random.split(mt.random.wrap_key_data(k), 3)[1], 11)), (const([0, 5], np.uint32),)),
        Case("random_normal_uniform", lambda k: (
            mt.random.normal(mt.random.wrap_key_data(k), (100,)),
            mt.random.uniform(mt.random.wrap_key_data(k), (3, 9), minval=-1.0)),
            (const([1, 2], np.uint32),), tol=(1e-5, 1e-6)),
        Case("random_categorical_perm", lambda k, l: (
            mt.random.categorical(mt.random.wrap_key_data(k), l),
            mt.random.permutation(mt.random.wrap_key_data(k), 20)),
            (const([3, 4], np.uint32), uniform((4, 6))), jit=True),
    ]


def _custom_jvp():
    @mt.custom_jvp
    def f(x):
        return mnp.sin(x) * 2

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return f(x), mnp.cos(x) * 2 * t

    return f


def _custom_vjp():
    @mt.custom_vjp
    def g(x, y):
        return x * y

    g.defvjp(lambda x, y: (x * y, (x, y)), lambda res, ct: (res[1] * ct, res[0] * ct))
    return g


def _host_square(x):
    return np.square(np.asarray(x))


def _call_cases():
    f, g = _custom_jvp(), _custom_vjp()

    def scan_fn(c, xs):
        def body(c, x):
            c = mnp.tanh(c * x + 0.1)
            return c, c * 2
        return lax.scan(body, c, xs)

    def while_fn(x):
        return lax.while_loop(lambda c: c[0] < 5, lambda c: (c[0] + 1, c[1] * 1.1 + c[0]),
                              (0, x))[1]

    def while_dynamic(x, n):
        return lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, mnp.sin(c[1]) + 0.5),
                              (0, x))[1]

    def cond_fn(p, x):
        return lax.cond(p, lambda x: mnp.exp(x), lambda x: x * 3, x)

    def switch_fn(i, x):
        return lax.switch(i, [lambda x: x + 1, lambda x: x * x, mnp.cos], x)

    return [
        Case("cond_true", cond_fn, (const(True), uniform((3, 4))), grad=(1,), jit=True),
        Case("cond_false", cond_fn, (const(False), uniform((3, 4))), grad=(1,), jit=True),
        Case("switch", switch_fn, (const(2, np.int32), uniform((5,))), grad=(1,), jit=True),
        Case("scan", scan_fn, (uniform((4,)), uniform((6, 4))), grad=(0, 1), tol=LOOSE,
             jit=True),
        Case("fori_loop", lambda x: lax.fori_loop(0, 7, lambda i, c: c * 0.9 + i, x),
             (uniform((3,)),), grad=(0,), jit=True),
        Case("while_static", while_fn, (uniform((4,)),), grad=(0,), jit=True),
        Case("while_dynamic_trip", while_dynamic, (uniform((3,)), const(6, np.int32)),
             grad=(0,), tol=LOOSE, jit=True),
        Case("checkpoint", mt.checkpoint(lambda x, w: mnp.tanh(x @ w) @ w.T),
             (uniform((3, 4)), uniform((4, 4))), grad=(0, 1), tol=LOOSE),
        Case("jit_inner", mt.jit(lambda x: mnp.sin(x) * x), (uniform((5,)),), grad=(0,)),
        Case("custom_jvp", f, (uniform((6,)),), grad=(0,)),
        Case("custom_vjp", g, (uniform((6,)), uniform((6,))), grad=(0, 1)),
        Case("pure_callback", lambda x: mt.pure_callback(
            _host_square, mt.ShapeDtypeStruct(x.shape, x.dtype), x) + x, (uniform((4,)),),
            jit=True),
        Case("debug_callback", lambda x: (mt.debug.callback(lambda v: None, x), x * 2)[1],
             (uniform((3,)),), jit=True),
        Case("vmap_of_matmul", mt.vmap(lambda a, b: a @ b), (uniform((3, 4, 5)),
                                                               uniform((3, 5, 2))),
             grad=(0, 1), tol=LOOSE),
        Case("grad_of_grad", lambda x: mt.grad(lambda y: mnp.sum(mnp.sin(y) ** 3))(x),
             (uniform((5,)),), grad=(0,)),
    ]


CASES = (_reduction_cases() + _structural_cases() + _indexing_cases() + _contraction_cases()
         + _sort_fft_window_cases() + _linalg_cases() + _attention_random_cases()
         + _call_cases())
