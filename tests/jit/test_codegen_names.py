"""Names the NumPy code generator derives from user-supplied strings stay identifiers."""

import numpy as np

import mytorch as mt
import mytorch.numpy as mnp
from mytorch.backends.numpy import numpy_backend
from mytorch.core.aval import ShapedArray
from mytorch.core import primitive as core_primitive


def test_a_primitive_name_with_dots_and_dashes_compiles(monkeypatch):
    # registered in a copy of the library's registry, which the tables check
    monkeypatch.setattr(core_primitive, "_REGISTRY", dict(core_primitive._REGISTRY))
    prim = core_primitive.Primitive("my.lib-op")
    prim.def_abstract_eval(lambda x: ShapedArray(x.shape, x.dtype))
    numpy_backend.register(prim)(lambda x: x * 2)
    got = mt.jit(lambda x: prim.bind(x) + 1)(mnp.ones(3))
    np.testing.assert_array_equal(np.asarray(got), [3.0, 3.0, 3.0])
