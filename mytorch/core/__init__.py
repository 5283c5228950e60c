"""The core layer: arrays, dtypes, abstract values, primitives, traces, jaxprs, pytrees,
config and the backend registry. It imports nothing above it."""

from mytorch.core.array import Array, ArrayImpl, from_numpy, install_methods, scalar_array
from mytorch.core.aval import ShapedArray
from mytorch.core.backend import Backend, Device, get_backend, register_backend
from mytorch.core.config import config
from mytorch.core.jaxpr import (
    ClosedJaxpr,
    DropVar,
    Jaxpr,
    JaxprEqn,
    Literal,
    Var,
    check_jaxpr,
    eval_jaxpr,
)
from mytorch.core.primitive import Primitive
from mytorch.core.staging import StagingTrace, StagingTracer, trace_to_jaxpr
from mytorch.core.trace import (
    EvalTrace,
    Trace,
    Tracer,
    aval_of,
    current_trace,
    new_trace,
    set_current_trace,
    to_concrete,
)
