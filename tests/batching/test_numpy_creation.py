"""vmap of the creation functions of mytorch.numpy that take array values (array/asarray,
copy, *_like, full, linspace/logspace/geomspace with traced ends, tril/triu, meshgrid),
of the static ones called inside a vmapped function (zeros, arange, eye, tri, indices:
their result is the same for every example) and of the dtype and shape queries on
batched values, against the loop definition."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import mytorch.numpy as mnp
from tests.batching.numpy_vmap_util import Op, shapes_broadcasting_to, vmap_case
from tests.strategies import shapes

_DTYPES = st.sampled_from([np.float32, np.int32, np.int8, np.bool_, np.float16])


@settings(max_examples=12)
@given(data=st.data())
def test_array_asarray_copy_astype(data):
    shape = data.draw(shapes(max_dims=3, max_side=3), label="shape")
    # values in range of every dtype: out-of-range float -> int casts are undefined (NumPy
    # casts constants, lax saturates traced values)
    x = [Op(shape, data.draw(_DTYPES, label="dtype"), min_value=-100, max_value=100)]
    to = data.draw(st.sampled_from([None, mnp.float32, mnp.int8, mnp.bool_, mnp.float16]))
    vmap_case(data, lambda a: (mnp.array(a, dtype=to, ndmin=4), mnp.asarray(a, dtype=to),
                               mnp.copy(a)), x)
    vmap_case(data, lambda a: mnp.asarray(a).astype(to or mnp.int32), x)
    vmap_case(data, lambda a, b: mnp.array([[a, b], [b, a]]), x + [Op(shape, np.int8)])


@settings(max_examples=12)
@given(data=st.data())
def test_like_functions_and_full(data):
    shape = data.draw(shapes(max_dims=3, max_side=3), label="shape")
    new = data.draw(st.one_of(st.none(), shapes(max_dims=2, max_side=3)), label="new_shape")
    dt = data.draw(st.sampled_from([None, mnp.int8, mnp.float32]), label="dtype")
    x = [Op(shape, data.draw(_DTYPES))]
    kw = {"dtype": dt, "shape": new}
    vmap_case(data, lambda a: (mnp.zeros_like(a, **kw), mnp.ones_like(a, **kw),
                               mnp.zeros_like(mnp.empty_like(a, **kw)),
                               mnp.full_like(a, 3, **kw)), x)
    out = new if new is not None else shape
    # in range of every dtype: out-of-range float -> int casts are undefined (NumPy wraps
    # constant fills, lax saturates traced ones)
    fill = Op(shapes_broadcasting_to(data, out), np.float32, min_value=-100, max_value=100)
    vmap_case(data, lambda a, v: mnp.full_like(a, v, **kw), x + [fill])
    vmap_case(data, lambda v: mnp.full(out, v, dtype=dt), [fill])
    vmap_case(data, lambda v: mnp.full(out + (2,), v[..., None]), [fill])


@settings(max_examples=12)
@given(data=st.data())
def test_spaces_with_traced_ends(data):
    shape = data.draw(shapes(max_dims=2, max_side=3), label="shape")
    s1, s2 = shapes_broadcasting_to(data, shape), shapes_broadcasting_to(data, shape)
    num = data.draw(st.integers(0, 5), label="num")
    endpoint = data.draw(st.booleans(), label="endpoint")
    rank = max(len(s1), len(s2))
    ax = data.draw(st.integers(-rank - 1, rank), label="axis")
    dt = data.draw(st.sampled_from([None, mnp.float32, mnp.int32]), label="dtype")
    kw = {"num": num, "endpoint": endpoint, "axis": ax, "dtype": dt}
    ends = [Op(s1, min_value=-5, max_value=5), Op(s2, min_value=-5, max_value=5)]
    vmap_case(data, lambda a, b: mnp.linspace(a, b, retstep=True, **kw), ends,
              rtol=1e-5, atol=1e-5)
    vmap_case(data, lambda a, b: mnp.logspace(a, b, base=2.0, **kw), ends, rtol=1e-5,
              atol=1e-5)
    pos = [Op(s1, min_value=0.5, max_value=5), Op(s2, min_value=0.5, max_value=5)]
    vmap_case(data, lambda a, b: mnp.geomspace(a, b, **kw), pos, rtol=1e-5, atol=1e-5)
    vmap_case(data, lambda a: mnp.linspace(0.0, a, num), [Op(())], rtol=1e-6, atol=1e-6)


@settings(max_examples=12)
@given(data=st.data())
def test_tril_triu_meshgrid(data):
    shape = data.draw(shapes(min_dims=2, max_dims=3, max_side=4), label="shape")
    k = data.draw(st.integers(-3, 3), label="k")
    x = [Op(shape, data.draw(_DTYPES))]
    vmap_case(data, lambda a: (mnp.tril(a, k), mnp.triu(a, k)), x)
    sizes = data.draw(st.lists(st.integers(0, 3), min_size=1, max_size=3), label="sizes")
    indexing = data.draw(st.sampled_from(["xy", "ij"]), label="indexing")
    sparse = data.draw(st.booleans(), label="sparse")
    vmap_case(data, lambda *v: mnp.meshgrid(*v, indexing=indexing, sparse=sparse),
              [Op((s,), data.draw(_DTYPES)) for s in sizes])


@settings(max_examples=6)
@given(data=st.data())
def test_static_creation_inside_vmap(data):
    """Constants built inside f combine with batched values (an unbatched operand)."""
    n = data.draw(st.integers(0, 3), label="side")
    x = [Op((n, n), np.float32)]

    def f(a):
        return (a + mnp.eye(n), a * mnp.tri(n, k=-1), a + mnp.arange(n),
                a + mnp.zeros((n, n)) + mnp.ones(n) + mnp.empty((1, n)).shape[0],
                a + mnp.identity(n, dtype=mnp.int32), mnp.indices((n, 2)),
                a[..., None] + mnp.linspace(0, 1, 3))

    vmap_case(data, f, x)
    # out_axes=None: outputs that do not depend on the example stay unbatched
    vmap_case(data, lambda a: (mnp.eye(n), mnp.arange(n) * 2, mnp.tri(n, 2, 1)), x,
              out_axes=None)
    vmap_case(data, lambda a: (a * 2, mnp.ones(n)), x, out_axes=(0, None))


@settings(max_examples=6)
@given(data=st.data())
def test_queries_on_batched_values(data):
    """Dtype and shape queries see the per-example value."""
    shape = data.draw(shapes(max_dims=3, max_side=3), label="shape")
    dt = data.draw(_DTYPES, label="dtype")

    def f(a):
        a = mnp.asarray(a)
        assert mnp.shape(a) == shape and mnp.ndim(a) == len(shape)
        assert mnp.size(a) == int(np.prod(shape)) and mnp.isscalar(a) == (a.ndim == 0)
        assert mnp.issubdtype(a.dtype, mnp.floating) == (np.dtype(dt).kind == "f")
        t = mnp.result_type(a, 1.0)
        assert mnp.promote_types(a.dtype, mnp.int8) == mnp.promote_types(dt, mnp.int8)
        assert mnp.can_cast(a.dtype, mnp.float32) == np.can_cast(dt, np.float32)
        return mnp.zeros_like(a, dtype=t) + mnp.size(a)

    vmap_case(data, f, [Op(shape, dt, batch=True)])


def test_lists_of_numpy_values_keep_their_dtype():
    """Regression found by the loop comparison (which passes NumPy values): NumPy arrays and
    scalars inside a list keep their dtype, as the same values inside Arrays do, and Python
    scalars beside them are weak."""
    i8 = np.array([1, 2], np.int8)
    assert mnp.array([i8, i8]).dtype == np.int8
    assert mnp.array([mnp.asarray(i8), i8]).dtype == np.int8
    assert mnp.array([np.float16(1.5), 2.0]).dtype == np.float16
    assert mnp.array([np.float64(1.0)]).dtype == np.float32  # narrowed without x64
    assert mnp.array([1, 2]).dtype == np.int32 and mnp.array([1.0]).dtype == np.float32
