"""mt.nn: the functions of jax.nn (activations, softmax, one_hot, standardize).

Every function is elementwise unless it takes an `axis`; inputs of any shape `[...]` give
outputs of the same shape (`glu` halves `axis`, `one_hot` adds one). Integer inputs are
promoted to the default float where the function is not piecewise linear, as in JAX;
float16/bfloat16 inputs keep their dtype and Python scalars give weakly typed results.
Derivatives at kinks follow JAX: relu'(0) = 0, relu6'(0) = relu6'(6) = 0,
leaky_relu'(0) = 1, hard_tanh'(+-1) = 1.
"""

import math
import operator

import numpy as np

from mytorch import lax
from mytorch import numpy as mnp
from mytorch.core import dtypes
from mytorch.core.source_info import user_error
from mytorch.custom_derivatives import custom_jvp
from mytorch.errors import ConcretizationTypeError
from mytorch.numpy._promote import promote_args, promote_args_inexact
from mytorch.scipy.special import logsumexp

__all__ = [
    "celu", "elu", "gelu", "glu", "hard_sigmoid", "hard_silu", "hard_swish", "hard_tanh",
    "identity", "leaky_relu", "log1mexp", "log_sigmoid", "log_softmax", "logmeanexp",
    "logsumexp", "mish", "one_hot", "relu", "relu6", "selu", "sigmoid", "silu", "soft_sign",
    "softmax", "softplus", "sparse_plus", "sparse_sigmoid", "squareplus", "standardize",
    "swish", "tanh",
]


def _float(name, x, int_weak=False):
    """x as an inexact Array (integers and bools -> the default float, weakly typed with
    `int_weak`: JAX's result where an integer meets a Python float)."""
    if int_weak:
        x = mnp.asarray(x)
        if not dtypes.is_float(x.dtype):
            return lax.convert_element_type(x, dtypes.default_float(), weak_type=True)
    (out,) = promote_args_inexact(name, x)
    return out


def _strong(x):
    """x without a weak type (as JAX's reductions over the whole of a Python scalar)."""
    return lax.convert_element_type(x, x.dtype, weak_type=False) if x.weak_type else x


def _array(name, x):
    (out,) = promote_args(name, x)
    return out


def _zero_like_where(pred, g):
    return mnp.where(pred, g, mnp.zeros_like(g))


def _shape(x):
    return x.aval.str_short()


# ---- piecewise linear ---------------------------------------------------------------------
def identity(x):
    """x unchanged (as an Array): [...] -> [...]."""
    return _array("identity", x)


@custom_jvp
def relu(x):
    """max(x, 0) elementwise, [...] -> [...]; its derivative at 0 is 0 (as JAX).

    >>> relu(mnp.array([-1.0, 0.0, 2.0]))
    Array([0., 0., 2.], dtype=float32)
    """
    x = _array("relu", x)
    return mnp.maximum(x, mnp.zeros_like(x))


relu.defjvps(lambda g, ans, x: _zero_like_where(mnp.greater(x, 0), g))


@custom_jvp
def relu6(x):
    """min(max(x, 0), 6) elementwise, [...] -> [...]; derivative 0 at 0 and at 6 (as JAX)."""
    x = _array("relu6", x)
    return mnp.minimum(mnp.maximum(x, 0), 6.0)


relu6.defjvps(lambda g, ans, x: _zero_like_where(
    mnp.logical_and(mnp.greater(x, 0), mnp.less(x, 6)), g))


def hard_tanh(x):
    """x clipped to [-1, 1], [...] -> [...]; derivative 1 at +-1 (as JAX)."""
    x = _array("hard_tanh", x)
    return mnp.where(x > 1, 1, mnp.where(x < -1, -1, x))


def leaky_relu(x, negative_slope=1e-2):
    """x where x >= 0, else negative_slope * x; [...] -> [...]; derivative 1 at 0."""
    x = _array("leaky_relu", x)
    return mnp.where(x >= 0, x, negative_slope * x)


def hard_sigmoid(x):
    """relu6(x + 3) / 6, [...] -> [...]."""
    return relu6(_array("hard_sigmoid", x) + 3.0) / 6.0


def hard_silu(x):
    """x * hard_sigmoid(x), [...] -> [...] (alias: hard_swish)."""
    x = _array("hard_silu", x)
    return x * hard_sigmoid(x)


hard_swish = hard_silu


def sparse_plus(x):
    """0 for x <= -1, (x + 1)^2 / 4 on (-1, 1), x for x >= 1; [...] -> [...]."""
    x = _float("sparse_plus", x, int_weak=True)
    return mnp.where(x <= -1.0, 0.0, mnp.where(x >= 1.0, x, (x + 1.0) ** 2 / 4))


def sparse_sigmoid(x):
    """clip((x + 1) / 2, 0, 1), the derivative of sparse_plus; [...] -> [...]."""
    x = _float("sparse_sigmoid", x, int_weak=True)
    return 0.5 * mnp.clip(x + 1.0, 0.0, 2.0)


# ---- smooth -------------------------------------------------------------------------------
def sigmoid(x):
    """1 / (1 + exp(-x)), [...] -> [...] (lax.logistic: stable for large |x|)."""
    return lax.logistic(_float("sigmoid", x))


def tanh(x):
    """tanh(x), [...] -> [...]."""
    return mnp.tanh(x)


def softplus(x):
    """log(1 + exp(x)) = logaddexp(x, 0), stable for large |x|; [...] -> [...]."""
    x = _float("softplus", x)
    return mnp.logaddexp(x, mnp.zeros_like(x))


def log_sigmoid(x):
    """log(sigmoid(x)) = -softplus(-x), stable for large |x|; [...] -> [...]."""
    return -softplus(-_float("log_sigmoid", x))


def soft_sign(x):
    """x / (|x| + 1), [...] -> [...]."""
    x = _float("soft_sign", x)
    return x / (mnp.abs(x) + 1)


def silu(x):
    """x * sigmoid(x), [...] -> [...] (alias: swish)."""
    x = _float("silu", x)
    return x * sigmoid(x)


swish = silu


def mish(x):
    """x * tanh(softplus(x)), [...] -> [...]."""
    x = _float("mish", x)
    return x * mnp.tanh(softplus(x))


def squareplus(x, b=4):
    """(x + sqrt(x^2 + b)) / 2, [...] -> [...]."""
    x, b = promote_args_inexact("squareplus", x, b)
    return (x + mnp.sqrt(mnp.square(x) + b)) / 2


def elu(x, alpha=1.0):
    """x for x > 0, alpha * (exp(x) - 1) otherwise; [...] -> [...]."""
    x = _float("elu", x, int_weak=True)
    pos = x > 0
    return mnp.where(pos, x, alpha * mnp.expm1(mnp.where(pos, 0.0, x)))


def celu(x, alpha=1.0):
    """max(x, 0) + alpha * expm1(min(x, 0) / alpha), [...] -> [...]."""
    x = _float("celu", x, int_weak=True)
    return mnp.maximum(x, 0.0) + alpha * mnp.expm1(mnp.minimum(x, 0.0) / alpha)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(x):
    """scale * elu(x, alpha) with the self-normalising constants; [...] -> [...]."""
    return _SELU_SCALE * elu(_float("selu", x, int_weak=True), _SELU_ALPHA)


def gelu(x, approximate=True):
    """The Gaussian error linear unit, [...] -> [...].

    approximate=True (JAX's default) is the tanh form
    x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))); approximate=False is x/2 erfc(-x/sqrt 2).
    """
    x = _float("gelu", x)
    if approximate:
        c = mnp.asarray(np.sqrt(2 / np.pi), x.dtype)
        return x * (0.5 * (1.0 + mnp.tanh(c * (x + 0.044715 * x**3))))
    return 0.5 * x * lax.erfc(-x * mnp.asarray(np.sqrt(0.5), x.dtype))


@custom_jvp
def log1mexp(x):
    """log(1 - exp(-x)) for x >= 0, computed stably (NaN for x < 0); [...] -> [...]."""
    x = _float("log1mexp", x)
    return mnp.where(x < math.log(2.0), mnp.log(-mnp.expm1(-x)), mnp.log1p(-mnp.exp(-x)))


log1mexp.defjvps(lambda g, ans, x: g / mnp.expm1(_float("log1mexp", x)))


def glu(x, axis=-1):
    """The gated linear unit: a * sigmoid(b) where a, b are the halves of x along `axis`.

    Args:
      x: [..., 2n, ...]; the size of `axis` must be even.
      axis: an int (negative counts from the end).

    Returns:
      [..., n, ...].
    """
    x = _array("glu", x)
    ax = _axis("glu", axis, x)
    if x.shape[ax] % 2:
        raise user_error(ValueError, f"glu: the size of axis {axis} of {_shape(x)} must be "
                                     f"even, got {x.shape[ax]}")
    x1, x2 = mnp.split(x, 2, ax)
    return x1 * sigmoid(x2)


# ---- reductions over an axis --------------------------------------------------------------
def _axis(name, axis, x):
    n = x.ndim
    try:
        ax = operator.index(axis)
    except TypeError:
        raise user_error(TypeError, f"{name}: axis must be an int, got {axis!r}") from None
    if not -n <= ax < n:
        raise user_error(ValueError, f"{name}: axis {axis} is out of bounds for {_shape(x)}")
    return ax % n


def _axes(name, axis, x):
    if axis is None:
        return tuple(range(x.ndim))
    out = tuple(_axis(name, a, x) for a in (axis if isinstance(axis, (tuple, list)) else
                                            (axis,)))
    if len(set(out)) != len(out):
        raise user_error(ValueError, f"{name}: repeated axis in {axis} for {_shape(x)}")
    return out


def _up(x):
    """float16/bfloat16 -> float32 for sums and exponentials (results are cast back)."""
    if x.dtype in (dtypes.float16, dtypes.bfloat16):
        return lax.convert_element_type(x, dtypes.float32, weak_type=x.weak_type)
    return x


def _down(y, x):
    return y if y.dtype == x.dtype else lax.convert_element_type(
        y, x.dtype, weak_type=x.weak_type)


def _mask(name, where, x):
    w = mnp.asarray(where)
    if w.dtype != dtypes.bool_:
        raise user_error(TypeError, f"{name}: `where` must be a bool array, got {_shape(w)}")
    try:
        return mnp.broadcast_to(w, x.shape)
    except ValueError:
        raise user_error(ValueError, f"{name}: `where` {_shape(w)} does not broadcast to "
                                     f"the input {_shape(x)}") from None


def _shifted(name, x, axis, where):
    """(axes, x with masked entries at -inf, x - stop_gradient(max over axes))."""
    axes = _axes(name, axis, x)
    if where is not None:
        where = _mask(name, where, x)
        x = mnp.where(where, x, -np.inf)
    x_max = mnp.max(x, axes, keepdims=True, initial=-np.inf)
    return axes, where, x - lax.stop_gradient(x_max)


def softmax(x, axis=-1, where=None):
    """exp(x) / sum(exp(x)) over `axis`, with the maximum subtracted first.

    Args:
      x: [...] float array.
      axis: an int, a tuple of ints, or None (all axes).
      where: optional bool mask broadcastable to x: only those entries take part; the
        others come out 0.

    Returns:
      [...] (x's dtype) summing to 1 over `axis`. A +inf entry gives NaN (inf / inf), as
      JAX. The derivative is exactly softmax's Jacobian (the shift carries no gradient).
    """
    x = _strong(_float("softmax", x))
    axes, where, shifted = _shifted("softmax", _up(x), axis, where)
    e = mnp.exp(shifted)
    out = e / mnp.sum(e, axes, keepdims=True)
    if where is not None:
        out = mnp.where(where, out, 0)
    return _down(out, x)


def log_softmax(x, axis=-1, where=None):
    """x - logsumexp(x) over `axis`, computed stably; [...] -> [...] (x's dtype).

    Masked-out entries (`where` False) come out -inf; a +inf entry gives NaN, as JAX.
    """
    x = _strong(_float("log_softmax", x))
    axes, where, shifted = _shifted("log_softmax", _up(x), axis, where)
    out = shifted - mnp.log(mnp.sum(mnp.exp(shifted), axes, keepdims=True))
    if where is not None:
        out = mnp.where(where, out, -np.inf)
    return _down(out, x)


def logmeanexp(x, axis=None, where=None, keepdims=False):
    """log(mean(exp(x))) over `axis` = logsumexp - log(count), computed stably."""
    x = _float("logmeanexp", x)
    lse = logsumexp(x, axis=axis, where=where, keepdims=keepdims)
    axes = _axes("logmeanexp", axis, x)
    if where is None:
        count = math.prod(x.shape[a] for a in axes)
    else:
        count = mnp.sum(_mask("logmeanexp", where, x), axes, keepdims=keepdims)
    return lse - mnp.log(mnp.asarray(count, lse.dtype))


def standardize(x, axis=-1, mean=None, variance=None, epsilon=1e-5, where=None, *,
                algorithm="fast"):
    """(x - mean) / sqrt(variance + epsilon) over `axis`; [...] -> [...].

    Args:
      x: [...] array.
      axis: an int, a tuple of ints, or None (all axes).
      mean, variance: optional precomputed statistics, broadcastable to x.
      epsilon: added to the variance.
      where: optional bool mask of the entries used for the statistics.
      algorithm: "fast" (E[x^2] - E[x]^2, clipped at 0, JAX's default) or "stable"
        (E[(x - E[x])^2]).
    """
    if algorithm not in ("fast", "stable"):
        raise user_error(ValueError, f"standardize: unknown algorithm {algorithm!r}; "
                                     "expected 'fast' or 'stable'")
    x = _strong(_array("standardize", x))
    axes = _axes("standardize", axis, x)
    if where is not None:
        where = _mask("standardize", where, x)
    if mean is None:
        mean = mnp.mean(x, axes, keepdims=True, where=where)
    if variance is None:
        if algorithm == "stable":
            variance = mnp.mean(mnp.square(x - mean), axes, keepdims=True, where=where)
        else:
            variance = mnp.mean(mnp.square(x), axes, keepdims=True, where=where)
            variance = mnp.maximum(variance - mnp.square(mean), 0)
    return (x - mean) * lax.rsqrt(mnp.asarray(variance + epsilon))


def _num_classes(n):
    """n as a Python int: an int or a concrete integer array; a float, a bool or a traced
    value is an error naming one_hot."""
    bad = isinstance(n, (bool, float, np.bool_, np.floating)) or (
        hasattr(n, "dtype") and not dtypes.is_int(n.dtype))
    if not bad:
        try:
            return operator.index(n)
        except ConcretizationTypeError as e:
            raise user_error(ConcretizationTypeError, "one_hot: num_classes must be a "
                             "concrete int (it sets the result's shape), got a traced value; "
                             f"pass it as a Python int or mark it static ({e})") from None
        except TypeError:
            pass
    raise user_error(TypeError, "one_hot: num_classes must be a Python int (static), got "
                                f"{n!r} of type {type(n).__name__}")


def one_hot(x, num_classes, *, dtype=None, axis=-1):
    """One-hot encoding of integer indices: [...] -> [..., num_classes] (at `axis`).

    Indices outside [0, num_classes) give a row of zeros, as JAX.

    Args:
      x: [...] integer array of class indices.
      num_classes: a Python int (static).
      dtype: the output dtype (default: the default float, float32).
      axis: where the new class axis goes in the result (negative counts from the end),
        or the name of a vmap/pmap axis of size num_classes: then each member of that axis
        gets its own entry (`x == axis_index(axis)`) and the shape stays x's.

    >>> one_hot(mnp.array([0, 2, 3]), 3)
    Array([[1., 0., 0.],
           [0., 0., 1.],
           [0., 0., 0.]], dtype=float32)
    """
    num_classes = _num_classes(num_classes)
    if num_classes < 0:
        raise user_error(ValueError, f"one_hot: num_classes must be >= 0, got {num_classes}")
    x = mnp.asarray(x)
    dtype = dtypes.default_float() if dtype is None else dtype
    if isinstance(axis, str):
        return _one_hot_named(x, num_classes, dtype, axis)
    n = x.ndim + 1
    try:
        ax = operator.index(axis)
    except TypeError:
        raise user_error(TypeError, "one_hot: axis must be an int or an axis name, got "
                                    f"{axis!r}") from None
    if not -n <= ax < n:
        raise user_error(ValueError, f"one_hot: axis {axis} is out of bounds for a result of "
                                     f"rank {n} (input {_shape(x)})")
    ax %= n
    shape = [1] * x.ndim
    shape.insert(ax, int(num_classes))
    iota = lax.broadcasted_iota(x.dtype, tuple(shape), ax)
    return mnp.asarray(mnp.expand_dims(x, ax) == iota, dtype=dtype)


def _one_hot_named(x, num_classes, dtype, axis_name):
    """one_hot along a named (vmap/pmap) axis: entry i lives on member i of that axis."""
    try:
        size = operator.index(lax.psum(1, axis_name))
    except ConcretizationTypeError:
        size = None
    if size is not None and size != num_classes:
        raise user_error(ValueError, f"one_hot: num_classes {num_classes} must equal the size "
                                     f"{size} of the axis {axis_name!r}")
    return mnp.asarray(x == lax.axis_index(axis_name), dtype=dtype)
