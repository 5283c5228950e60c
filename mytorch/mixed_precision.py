"""Mixed precision in jmp's design: a `Policy` says in which dtype parameters are kept,
computations run and outputs are returned; loss scales keep small float16 gradients from
underflowing, and `DynamicLossScale` adapts its scale as training goes.

    policy = mt.mixed_precision.get_policy("params=float32,compute=bfloat16,output=float32")
    loss_scale = mt.mixed_precision.DynamicLossScale(mnp.float32(2**15))

    def loss_fn(params, x, y, loss_scale):
        params, x = policy.cast_to_compute((params, x))
        loss = policy.cast_to_output(mse(model(params, x), y))
        return loss_scale.scale(loss)

    grads = loss_scale.unscale(mt.grad(loss_fn)(params, x, y, loss_scale))
    finite = mt.mixed_precision.all_finite(grads)
    loss_scale = loss_scale.adjust(finite)
    params = mt.mixed_precision.select_tree(finite, new_params, params)  # skip a bad step

See docs/mixed_precision.md.
"""

import dataclasses

import numpy as np

from mytorch import lax
from mytorch import numpy as mnp
from mytorch.core import dtypes
from mytorch.core.array import Array
from mytorch.core.source_info import user_error
from mytorch.core.tree_paths import GetAttrKey
from mytorch.core.tree_util import register_pytree_with_keys, tree_leaves, tree_map

__all__ = [
    "DynamicLossScale",
    "NoOpLossScale",
    "Policy",
    "StaticLossScale",
    "all_finite",
    "cast_to_full",
    "cast_to_half",
    "get_policy",
    "half_dtype",
    "select_tree",
]

_NAMES = {
    "bf16": dtypes.bfloat16, "bfloat16": dtypes.bfloat16, "f16": dtypes.float16,
    "float16": dtypes.float16, "f32": dtypes.float32, "float32": dtypes.float32,
    "f64": dtypes.float64, "float64": dtypes.float64, "full": dtypes.float32,
}
_SHORT = {dtypes.bfloat16: "bf16", dtypes.float16: "f16", dtypes.float32: "f32",
          dtypes.float64: "f64"}
_FIELDS = {"p": "param_dtype", "params": "param_dtype", "c": "compute_dtype",
           "compute": "compute_dtype", "o": "output_dtype", "output": "output_dtype"}


def half_dtype():
    """The half-precision dtype to compute in: float16 (as jmp picks off TPUs; our CPU and
    GPU backends both have it). Use bfloat16 explicitly for its float32-sized range."""
    return dtypes.float16


def _float_dtype(dtype, fname):
    try:
        dt = dtypes.to_dtype(dtype)
    except (TypeError, ValueError):
        dt = None
    if dt is None or not dtypes.is_float(dt):
        raise user_error(TypeError, f"{fname}: expected a floating dtype (float16, bfloat16, "
                         f"float32, float64), got {dtype!r}")
    return dt


def _cast_floating(tree, dtype):
    """Cast the floating-point array leaves of `tree` to `dtype`; leave all else as is."""
    def cast(x):
        if isinstance(x, Array | np.ndarray) and dtypes.is_float(x.dtype) and x.dtype != dtype:
            return lax.convert_element_type(x, dtype) if isinstance(x, Array) else (
                x.astype(dtype))
        return x
    return tree_map(cast, tree)


def cast_to_full(tree):
    """Cast the floating-point array leaves of `tree` to float32."""
    return _cast_floating(tree, dtypes.float32)


def cast_to_half(tree):
    """Cast the floating-point array leaves of `tree` to `half_dtype()`."""
    return _cast_floating(tree, half_dtype())


@dataclasses.dataclass(frozen=True)
class Policy:
    """Where each dtype is used (jmp's `Policy`): parameters are stored in `param_dtype`,
    computations run in `compute_dtype`, results are returned in `output_dtype`.

    Casting touches only floating-point array leaves (mt.Array or NumPy): integer and bool
    arrays, PRNG keys and Python scalars pass unchanged. A Policy is hashable, so it can be a
    static argument of `jit`.

    Example:
        >>> policy = Policy(mnp.float32, mnp.bfloat16, mnp.float32)
        >>> policy.cast_to_compute({"w": mnp.ones(2), "n": mnp.arange(2)})["w"].dtype
        dtype(bfloat16)
        >>> str(policy)
        'p=f32,c=bf16,o=f32'
    """

    param_dtype: np.dtype
    compute_dtype: np.dtype
    output_dtype: np.dtype

    def __post_init__(self):
        for f in ("param_dtype", "compute_dtype", "output_dtype"):
            object.__setattr__(self, f, _float_dtype(getattr(self, f), f"Policy {f}"))

    def cast_to_param(self, x):
        """`x` (a pytree) with its floating-point arrays in `param_dtype`."""
        return _cast_floating(x, self.param_dtype)

    def cast_to_compute(self, x):
        """`x` (a pytree) with its floating-point arrays in `compute_dtype`."""
        return _cast_floating(x, self.compute_dtype)

    def cast_to_output(self, x):
        """`x` (a pytree) with its floating-point arrays in `output_dtype`."""
        return _cast_floating(x, self.output_dtype)

    def with_param_dtype(self, param_dtype):
        """This policy with another `param_dtype`."""
        return dataclasses.replace(self, param_dtype=param_dtype)

    def with_compute_dtype(self, compute_dtype):
        """This policy with another `compute_dtype`."""
        return dataclasses.replace(self, compute_dtype=compute_dtype)

    def with_output_dtype(self, output_dtype):
        """This policy with another `output_dtype`."""
        return dataclasses.replace(self, output_dtype=output_dtype)

    def __str__(self):
        return (f"p={_SHORT[self.param_dtype]},c={_SHORT[self.compute_dtype]},"
                f"o={_SHORT[self.output_dtype]}")


def _parse_dtype(name, spec):
    key = name.strip().lower()
    if key in ("half", "16"):
        return half_dtype()
    if key == "32":
        return dtypes.float32
    if key not in _NAMES:
        raise user_error(ValueError, f"get_policy: unknown dtype {name.strip()!r} in {spec!r}; "
                         "use one of bf16, f16, f32, f64 (or bfloat16, float16, float32, "
                         "float64, half, full)")
    return _NAMES[key]


def get_policy(policy):
    """A `Policy` from a string (jmp's syntax), or `policy` itself if it is one.

    Args:
        policy: ``"params=float32,compute=bfloat16,output=float32"``, its short form
            ``"p=f32,c=bf16,o=f32"``, or one dtype for all three (``"float32"``, ``"half"``:
            `half_dtype()`, ``"full"``: float32). Keys left out default to float32.
    Returns:
        The Policy.
    Raises:
        ValueError: an unknown key or dtype name (the message lists the valid ones).

    Example:
        >>> get_policy("p=f32,c=bf16,o=f32") == get_policy("params=float32,compute=bfloat16")
        True
    """
    if isinstance(policy, Policy):
        return policy
    if not isinstance(policy, str):
        raise user_error(TypeError, f"get_policy: expected a policy string such as "
                         f"'p=f32,c=bf16,o=f32', got {type(policy).__name__}")
    if "=" not in policy:
        dt = _parse_dtype(policy, policy)
        return Policy(dt, dt, dt)
    chosen = dict.fromkeys(("param_dtype", "compute_dtype", "output_dtype"), dtypes.float32)
    for part in policy.split(","):
        key, sep, value = part.partition("=")
        field = _FIELDS.get(key.strip().lower())
        if not sep or field is None:
            raise user_error(ValueError, f"get_policy: unknown key {key.strip()!r} in "
                             f"{policy!r}; use params/p, compute/c and output/o, as in "
                             "'params=float32,compute=bfloat16,output=float32'")
        chosen[field] = _parse_dtype(value, policy)
    return Policy(**chosen)


# Loss scales ---------------------------------------------------------------------------------

def _scale_tree(tree, factor):
    return tree_map(lambda x: x * factor, tree)


class NoOpLossScale:
    """A loss scale that does nothing (`loss_scale` is 1): for float32/bfloat16 training,
    where gradients do not underflow, behind the same interface as the others."""

    @property
    def loss_scale(self):
        return 1

    def scale(self, tree):
        """`tree` unchanged."""
        return tree

    def unscale(self, tree):
        """`tree` unchanged."""
        return tree

    def adjust(self, grads_finite):
        """This loss scale (it never changes)."""
        del grads_finite
        return self

    def __repr__(self):
        return "NoOpLossScale()"


class StaticLossScale:
    """A fixed loss scale: `scale` multiplies by `loss_scale`, `unscale` by its inverse.

    Args:
        loss_scale: a positive scalar (Python number or 0-d float array).

    Example:
        >>> StaticLossScale(128.0).unscale(mnp.array(256.0))
        Array(2., dtype=float32)
    """

    def __init__(self, loss_scale):
        self.loss_scale = loss_scale

    def scale(self, tree):
        """Each leaf of `tree` times the loss scale."""
        return _scale_tree(tree, self.loss_scale)

    def unscale(self, tree):
        """Each leaf of `tree` divided by the loss scale (times its inverse)."""
        return _scale_tree(tree, 1 / self.loss_scale)

    def adjust(self, grads_finite):
        """This loss scale (it never changes)."""
        del grads_finite
        return self

    def __repr__(self):
        return f"StaticLossScale({self.loss_scale!r})"


class DynamicLossScale:
    """A loss scale that adapts (jmp's `DynamicLossScale`): `adjust(grads_finite)` divides
    it by `factor` after a step with non-finite gradients (and resets the counter), and
    multiplies it by `factor` after `period` finite steps in a row; never below
    `min_loss_scale` when one is given.

    A pytree: `loss_scale` (f32[]) and `counter` (i32[]) are its leaves, `period`, `factor`
    and `min_loss_scale` static, so it passes through `jit` and into checkpoints.

    Args:
        loss_scale: the initial scale, e.g. ``mnp.float32(2**15)``.
        counter: finite steps since the last change (default 0).
        period: finite steps before the scale grows (default 2000).
        factor: the growth and shrink factor (default 2).
        min_loss_scale: optional floor of the scale.

    Example:
        >>> s = DynamicLossScale(mnp.float32(8.0), period=2)
        >>> s.adjust(mnp.array(False)).loss_scale
        Array(4., dtype=float32)
    """

    def __init__(self, loss_scale, counter=None, period=2000, factor=2, min_loss_scale=None):
        if type(period) is not int or period < 1:
            raise user_error(ValueError, f"DynamicLossScale: period must be a positive int, "
                             f"got {period!r}")
        if not isinstance(factor, int | float) or factor <= 1:
            raise user_error(ValueError, f"DynamicLossScale: factor must be a number > 1, got "
                             f"{factor!r}")
        self.loss_scale = loss_scale
        self.counter = np.zeros((), np.int32) if counter is None else counter
        self.period, self.factor, self.min_loss_scale = period, factor, min_loss_scale

    def scale(self, tree):
        """Each leaf of `tree` times the loss scale (usually the loss, before `grad`)."""
        return _scale_tree(tree, self.loss_scale)

    def unscale(self, tree):
        """Each leaf of `tree` times the inverse loss scale (usually the gradients)."""
        return _scale_tree(tree, 1 / mnp.asarray(self.loss_scale, mnp.float32))

    def adjust(self, grads_finite):
        """The loss scale for the next step.

        Args:
            grads_finite: a bool[] (from `all_finite(grads)`): whether this step's
                gradients were all finite.
        Returns:
            A new DynamicLossScale: shrunk by `factor` (counter 0) if not finite; else grown
            by `factor` when this was the `period`-th finite step in a row (counter back to
            0), or unchanged with the counter advanced.
        """
        finite = _check_pred(grads_finite, "DynamicLossScale.adjust")
        scale = mnp.asarray(self.loss_scale, mnp.float32)
        counter = mnp.asarray(self.counter, mnp.int32)
        grown = mnp.where(counter == self.period - 1, scale * self.factor, scale)
        new_scale = mnp.where(finite, grown, scale / self.factor)
        if self.min_loss_scale is not None:
            new_scale = mnp.maximum(new_scale, mnp.asarray(self.min_loss_scale, mnp.float32))
        new_counter = mnp.where(finite, (counter + 1) % self.period, 0).astype(mnp.int32)
        return DynamicLossScale(new_scale, new_counter, self.period, self.factor,
                                self.min_loss_scale)

    def __repr__(self):
        return (f"DynamicLossScale(loss_scale={self.loss_scale!r}, counter={self.counter!r}, "
                f"period={self.period}, factor={self.factor}, "
                f"min_loss_scale={self.min_loss_scale!r})")


def _dynamic_flatten_with_keys(s):
    return ([(GetAttrKey("loss_scale"), s.loss_scale), (GetAttrKey("counter"), s.counter)],
            (s.period, s.factor, s.min_loss_scale))


def _dynamic_unflatten(aux, children):
    s = object.__new__(DynamicLossScale)
    s.loss_scale, s.counter = children
    s.period, s.factor, s.min_loss_scale = aux
    return s


def _static_unflatten(aux, children):
    s = object.__new__(StaticLossScale)
    (s.loss_scale,) = children
    return s


register_pytree_with_keys(DynamicLossScale, _dynamic_flatten_with_keys, _dynamic_unflatten)
register_pytree_with_keys(
    StaticLossScale, lambda s: ([(GetAttrKey("loss_scale"), s.loss_scale)], None),
    _static_unflatten)
register_pytree_with_keys(NoOpLossScale, lambda s: ([], None),
                          lambda aux, children: NoOpLossScale())


# Finite checks and selection ------------------------------------------------------------------

def _check_pred(pred, fname):
    if isinstance(pred, bool):
        return mnp.asarray(pred)
    shape, dtype = getattr(pred, "shape", None), getattr(pred, "dtype", None)
    if shape != () or dtype is None or not dtypes.is_bool(dtype):
        what = f"{dtypes.short_name(dtype)}{list(shape)}" if dtype is not None and (
            shape is not None) else type(pred).__name__
        raise user_error(TypeError, f"{fname}: expected a scalar bool predicate (bool[]), got "
                         f"{what}")
    return pred


def all_finite(tree):
    """Whether every element of every array leaf of `tree` is finite, as a bool[] array
    (True for a tree without leaves). Works under jit.

    Example:
        >>> all_finite({"a": mnp.ones(2), "b": mnp.array([1.0, mnp.inf])})
        Array(False, dtype=bool)
    """
    leaves = tree_leaves(tree)
    if not leaves:
        return mnp.asarray(True)
    flags = [mnp.all(mnp.isfinite(x)) for x in leaves]
    return mnp.all(mnp.stack(flags))


def select_tree(pred, a, b):
    """`a` where the scalar bool `pred` is true, else `b`, leaf by leaf (jmp's select_tree):
    the way to skip an optimiser step whose gradients were not finite.

    Args:
        pred: a bool[] array (or Python bool).
        a, b: pytrees of the same structure, with leaves of equal shape and dtype.
    Returns:
        A pytree of that structure.
    Raises:
        TypeError: `pred` is not a scalar bool, or a pair of leaves differs in dtype or shape.
    """
    pred = _check_pred(pred, "select_tree")

    def select(x, y):
        x_dt, y_dt = getattr(x, "dtype", None), getattr(y, "dtype", None)
        if x_dt is None or y_dt is None:  # Python scalars
            return mnp.where(pred, x, y)
        if x_dt != y_dt or x.shape != y.shape:
            raise user_error(TypeError, "select_tree: the two trees differ in a leaf: "
                             f"{dtypes.short_name(x_dt)}{list(x.shape)} against "
                             f"{dtypes.short_name(y_dt)}{list(y.shape)}")
        return lax.select(pred, x, y)

    return tree_map(select, a, b)
