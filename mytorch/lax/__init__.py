"""`mytorch.lax`: the primitives, each defined once with its rules, and their binders.

Names follow `jax.lax`. Operands of lax functions are not promoted: mytorch.numpy does that.
"""

from mytorch.lax.elementwise import (  # noqa: F401
    abs, acos, acosh, add, asin, asinh, atan, atan2, atanh, bitcast_convert_type,
    bitwise_and, bitwise_not, bitwise_or, bitwise_xor, cbrt, ceil, clamp, complex, conj,
    convert_element_type, cos, cosh, digamma, div, eq, erf, erf_inv, erfc, exp, exp2, expm1,
    floor, ge, gt, integer_pow, is_finite, le, lgamma, log, log1p, logistic, lt, max, min,
    imag, mul, ne, neg, nextafter, pow, real, reciprocal, rem, round, rsqrt, select, select_n,
    shift_left, shift_right_arithmetic, shift_right_logical, sign, sin, sinh, sqrt, square,
    stop_gradient, sub, tan, tanh,
)
from mytorch.lax.structural import *  # noqa: F401,F403
from mytorch.lax.indexing import *  # noqa: F401,F403
from mytorch.lax.reductions import *  # noqa: F401,F403
from mytorch.lax.sorting import *  # noqa: F401,F403
from mytorch.lax.dot import *  # noqa: F401,F403
from mytorch.lax.convolution import *  # noqa: F401,F403
from mytorch.lax.parallel import *  # noqa: F401,F403
from mytorch.lax.prng import *  # noqa: F401,F403
from mytorch.lax.attention import *  # noqa: F401,F403
from mytorch.lax.fft import FftType, fft, fft_p  # noqa: F401
from mytorch.lax import linalg  # noqa: F401  (a namespace, as jax.lax.linalg)

from mytorch.lax import elementwise_rules as _elementwise_rules  # noqa: F401,E402
from mytorch.core import ad_util as _ad_util  # noqa: F401,E402  (add_any, zeros)
from mytorch.lax import dot_rules as _dot_rules  # noqa: F401,E402
from mytorch.lax import convolution_rules as _convolution_rules  # noqa: F401,E402
from mytorch.lax import reductions_rules as _reductions_rules  # noqa: F401,E402
from mytorch.lax import sorting_rules as _sorting_rules  # noqa: F401,E402
from mytorch.lax import structural_rules as _structural_rules  # noqa: F401,E402
from mytorch.lax import indexing_rules as _indexing_rules  # noqa: F401,E402
from mytorch.lax import parallel_rules as _parallel_rules  # noqa: F401,E402
from mytorch.lax import attention_rules as _attention_rules  # noqa: F401,E402
from mytorch.lax import linalg_rules as _linalg_rules  # noqa: F401,E402
from mytorch.lax import linalg_eig_rules as _linalg_eig_rules  # noqa: F401,E402
from mytorch.lax import fft_rules as _fft_rules  # noqa: F401,E402
from mytorch.lax.cond import cond, switch  # noqa: F401,E402
from mytorch.lax.loops import fori_loop, map, scan  # noqa: F401,E402
from mytorch.lax.while_loop import while_loop  # noqa: F401,E402
from mytorch.lax.precision import Precision  # noqa: F401,E402
from mytorch.lax.composite import (  # noqa: F401,E402
    associative_scan, clz, collapse, population_count, reduce,
)


def _export_primitives():
    """Export every primitive object defined in lax (``lax.exp_p``, ``lax.while_p``, ...) so
    custom interpreters can compare an equation's primitive against them, as in JAX."""
    import sys

    from mytorch.core.primitive import Primitive

    namespace = globals()
    for name, module in list(sys.modules.items()):
        if not name.startswith(__name__ + ".") or module is None:
            continue
        for attr, value in vars(module).items():
            if attr.endswith("_p") and not attr.startswith("_") and isinstance(value, Primitive):
                namespace.setdefault(attr, value)


_export_primitives()
