"""Mistakes in a user-defined primitive are reported with the primitive's name and the fix:
a wrong abstract evaluation, a kernel of the wrong shape, a missing rule, a rule returning
values of the wrong type."""

import numpy as np
import pytest

import mytorch as mt
import mytorch.numpy as mnp
from mytorch import extend as mx
from mytorch.core.primitive import registry as core_registry


def _unary(name, **kw):
    p = mx.primitive(name, **kw)
    mx.def_numpy_kernel(p, lambda x: np.sin(x))
    return p


def test_abstract_eval_must_return_shaped_arrays():
    p = _unary("test_ext_bad_aval")
    p.def_abstract_eval(lambda x: (x.shape, x.dtype))
    with pytest.raises(TypeError, match=r"test_ext_bad_aval: the abstract evaluation of "
                                        r"'test_ext_bad_aval' must return mx.ShapedArray"):
        p.bind(mnp.ones(3))
    q = _unary("test_ext_bad_avals", multiple_results=True)
    q.def_abstract_eval(lambda x: x)
    with pytest.raises(TypeError, match=r"multiple_results\) must return a list"):
        q.bind(mnp.ones(3))
    ok = _unary("test_ext_shape_dtype_struct")
    ok.def_abstract_eval(lambda x: mt.ShapeDtypeStruct(x.shape, x.dtype))
    np.testing.assert_allclose(np.asarray(ok.bind(mnp.ones(2))), np.sin(np.ones(2)))


def test_kernel_of_the_wrong_shape():
    p = mx.primitive("test_ext_bad_kernel")
    p.def_abstract_eval(lambda x: mx.ShapedArray(x.shape, x.dtype))
    mx.def_numpy_kernel(p, lambda x: x[:1])
    with pytest.raises(ValueError, match=r"NumPy kernel of 'test_ext_bad_kernel' returned "
                                         r"f32\[1\] where its abstract evaluation gives "
                                         r"f32\[3\]"):
        p.bind(mnp.ones(3))


def test_builtin_names_are_refused_and_extensions_stay_out_of_the_library_registry():
    with pytest.raises(ValueError, match="'sin' is a built-in primitive"):
        mx.primitive("sin")
    with pytest.raises(ValueError, match=r"a Python identifier, e.g. 'mylib_gelu'\), got "
                                         r"'mylib.gelu'"):
        mx.primitive("mylib.gelu")
    p = mx.primitive("test_ext_listed")
    assert mx.registry()["test_ext_listed"] is p
    assert "test_ext_listed" not in core_registry()


def test_missing_batching_rule():
    p = _unary("test_ext_no_batching")
    p.def_abstract_eval(lambda x: mx.ShapedArray(x.shape, x.dtype))
    with pytest.raises(NotImplementedError) as info:
        mt.vmap(p.bind)(mnp.ones((2, 3)))
    msg = str(info.value)
    assert "vmap needs the 'batching' rule of primitive 'test_ext_no_batching'" in msg
    assert "mx.def_batching(prim, rule)" in msg and "mx.def_vectorized_batching" in msg


def test_missing_transpose_rule():
    p = _unary("test_ext_no_transpose")
    p.def_abstract_eval(lambda x: mx.ShapedArray(x.shape, x.dtype))
    mx.def_jvp(p, lambda primals, tangents: (p.bind(*primals), p.bind(*tangents)))
    assert np.isfinite(np.asarray(mt.jvp(p.bind, (mnp.ones(2),), (mnp.ones(2),))[1])).all()
    with pytest.raises(NotImplementedError, match=r"'transpose' rule of primitive "
                                                  r"'test_ext_no_transpose'.*mx.def_transpose"):
        mt.grad(lambda x: mnp.sum(p.bind(x)))(mnp.ones(2))


def test_jvp_tangent_of_the_wrong_shape():
    p = _unary("test_ext_bad_jvp")
    p.def_abstract_eval(lambda x: mx.ShapedArray(x.shape, x.dtype))
    mx.def_jvp(p, lambda primals, tangents: (p.bind(*primals), mnp.sum(tangents[0])))
    with pytest.raises(TypeError, match=r"JVP rule of 'test_ext_bad_jvp' returned a tangent "
                                        r"f32\[\] for a result f32\[3\]"):
        mt.grad(lambda x: mnp.sum(p.bind(x)))(mnp.ones(3))


def test_vjp_cotangent_of_the_wrong_shape_or_count():
    p = _unary("test_ext_bad_vjp")
    p.def_abstract_eval(lambda x: mx.ShapedArray(x.shape, x.dtype))
    mx.def_vjp(p, lambda ct, out, x: [mnp.sum(ct)])
    with pytest.raises(TypeError, match=r"backward pass of 'test_ext_bad_vjp' \(mx.def_vjp\) "
                                        r"returned a cotangent f32\[\] for an operand f32\[3\]"):
        mt.grad(lambda x: mnp.sum(p.bind(x)))(mnp.ones(3))
    mx.def_vjp(p, lambda ct, out, x: [ct, ct])
    with pytest.raises(TypeError, match=r"returned 2 cotangents for 1 operands"):
        mt.grad(lambda x: mnp.sum(p.bind(x)))(mnp.ones(3))


def test_cuda_signature_types_are_checked():
    p = mx.primitive("test_ext_bad_cuda")
    with pytest.raises(ValueError, match=r"kernel k has argument types \['float'\]"):
        mx.def_cuda(p, source="", signatures={"k": ("ptr", "float")}, launch=None)
