"""mytorch: composable transformations (grad, vmap, jit, pmap) of NumPy-style programs.

    import mytorch as mt, mytorch.numpy as mnp
    print(mt.make_jaxpr(lambda x: mnp.tanh(x) @ x.T)(mnp.ones((2, 3))))
"""

from mytorch import errors
from mytorch import tree, tree_util
from mytorch.core.array import Array
from mytorch.core.config import config
from mytorch.core.dtypes import float0  # grad(allow_int=True) of an integer input
from mytorch.core.jaxpr import ClosedJaxpr, Jaxpr, check_jaxpr, eval_jaxpr
from mytorch.core.aval import ShapedArray
from mytorch import lax
from mytorch.backends import numpy as _numpy_backend  # noqa: F401  (registers the CPU backend)
from mytorch.backends import cupy as _cupy_backend  # noqa: F401  (the GPU probe only)
from mytorch import numpy
from mytorch.api import (
    block_until_ready, devices, device_get, device_put, local_device_count, make_jaxpr,
)
from mytorch.api import device_count, local_devices, process_count, process_index
from mytorch import distributed  # noqa: F401  (imports no MPI until initialize)
from mytorch.errors import ConcretizationTypeError, UnexpectedTracerError

__version__ = "0.1.0"
from mytorch.autodiff import (  # noqa: E402
    grad, hessian, jacfwd, jacrev, jvp, linearize, value_and_grad, vjp,
)
from mytorch.custom_derivatives import custom_jvp, custom_vjp  # noqa: E402
from mytorch.checkpoint import checkpoint, checkpoint_policies, remat  # noqa: E402
from mytorch.vectorize import vmap  # noqa: E402
from mytorch.jit import clear_caches, disable_jit, eval_shape, jit  # noqa: E402
from mytorch.pmap import pmap  # noqa: E402
# debugging (issue 5)
from mytorch import debugging as debug  # noqa: E402,F401
from mytorch.debugging import ShapeDtypeStruct, pure_callback  # noqa: E402,F401
# as jax.scipy and jax.dlpack: available after `import mytorch`
from mytorch import dlpack, scipy  # noqa: E402,F401
from mytorch.custom_derivatives import closure_convert  # noqa: E402
from mytorch.linear_util import linear_transpose  # noqa: E402
from mytorch import ad_checkpoint  # noqa: E402,F401
# the training stack (issue 14)
from mytorch import random, nn, optim, mixed_precision  # noqa: E402,F401
from mytorch.serialization import load, save  # noqa: E402
from mytorch.checkpointer import Checkpointer  # noqa: E402
from mytorch import profiler  # noqa: E402,F401  (issue 19: mt.profiler.trace / profile)
from mytorch import extend  # noqa: E402,F401  (new primitives: issue 19)
