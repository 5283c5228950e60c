"""On the CPU, no GPU needed: the rows of the primitive table trace, and together they
use every primitive, so the gpu-marked suite compares every primitive with the CPU. (The
table's values are compared on a GPU by test_primitives.py; this checks only its reach.)"""

import numpy as np

import mytorch as mt
from mytorch.core.primitive import registry
from tests.gpu.cases import all_cases
from tests.gpu.test_primitives import _weighted_loss, x64_if

# primitives the table leaves to other modules of this folder, and why
ELSEWHERE = {
    "pmap": "test_nccl.py", "psum": "test_nccl.py", "all_gather": "test_nccl.py",
    "ppermute": "test_nccl.py", "pmax": "test_nccl.py", "pmin": "test_nccl.py",
    "psum_scatter": "test_nccl.py", "all_to_all": "test_nccl.py",
    "axis_index": "test_nccl.py",
    # staged by linearize and consumed by transpose, so never in a traced jaxpr; the
    # custom_vjp row's gradient runs it
    "custom_lin": "cases_other.py (custom_vjp)",
}


def _primitives(jaxpr, seen):
    """Add the names of every primitive in `jaxpr` and the jaxprs its params hold."""
    for eqn in jaxpr.eqns:
        seen.add(eqn.primitive.name)
        for value in eqn.params.values():
            for inner in value if isinstance(value, (tuple, list)) else (value,):
                inner = getattr(inner, "jaxpr", inner)
                if hasattr(inner, "eqns"):
                    _primitives(inner, seen)
    return seen


def test_table_reaches_every_primitive():
    seen = set()
    for case in all_cases():
        with x64_if(case.x64):
            args = [mt.device_put(a) for a in case.draw()]
            _primitives(mt.make_jaxpr(case.fn)(*args).jaxpr, seen)
            if case.grad:
                weights = [mt.device_put(np.ones(o.shape, o.dtype))
                           for o in mt.tree_util.tree_leaves(case.fn(*args))
                           if np.issubdtype(o.dtype, np.floating)
                           or o.dtype == mt.numpy.bfloat16]
                grad = mt.grad(_weighted_loss(case.fn, len(args)), argnums=case.grad)
                _primitives(mt.make_jaxpr(grad)(*args, *weights).jaxpr, seen)
    # (other test modules register primitives of their own, named test_*; kind "backend":
    # the NumPy code generator's own, never traced)
    ours = {name for name, p in registry().items()
            if not name.startswith("test_") and p.kind != "backend"}
    missing = sorted(ours - seen - set(ELSEWHERE))
    assert not missing, f"no row of tests/gpu/cases*.py uses {', '.join(missing)}"
