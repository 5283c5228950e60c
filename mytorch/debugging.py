"""Host code inside transformed code: `debug.print`, `debug.callback` and `pure_callback`.

Two primitives carry a host (NumPy) function in their params and call it when the program
runs, never while it is traced:

* `debug_callback` calls a function for its side effects. It has no results and is
  *effectful*: passes never remove, merge, fold or reorder it. Under `jvp`/`grad` it runs
  on the primal values in the forward pass (no tangents); under `vmap` it runs once per
  batch element, in order; under `jit` each time the compiled function runs.
* `pure_callback` calls a function that computes arrays of declared shapes and dtypes. It
  is pure (an unused result may be removed, like any other value), has no derivative
  (wrap it in `custom_jvp`/`custom_vjp`), and its `vmap_method` says how it batches.

Both lower, on the CPU, to a kernel that hands the callback NumPy arrays (copies for
debug_callback, read-only views valid during the call for pure_callback); eager evaluation
and the jit code generator call the same kernel.

    >>> import mytorch as mt, mytorch.numpy as mnp
    >>> mt.debug.print("x = {}", mnp.arange(3))
    x = [0 1 2]
"""

import builtins
import functools

import numpy as np

from mytorch.core import dtypes, tree_util
from mytorch.core.aval import ShapedArray
from mytorch.core.primitive import Primitive
from mytorch.core.source_info import user_frame
from mytorch.lax._batching import broadcast_batched, moveaxis
from mytorch.lax._utils import leaves_as_arrays
from mytorch.transforms.batching import batched_aval

__all__ = ["ShapeDtypeStruct", "callback", "print", "pure_callback",
           "debug_callback_p", "pure_callback_p"]

VMAP_METHODS = (None, "sequential", "sequential_unrolled", "expand_dims", "broadcast_all")


class ShapeDtypeStruct:
    """The shape and dtype of an array, without its values (declares pure_callback results).

    Args:
      shape: a tuple of non-negative ints.
      dtype: anything `np.dtype` accepts; 64-bit types narrow to 32 bits without x64.

    >>> ShapeDtypeStruct((2, 3), "float32")
    ShapeDtypeStruct(shape=(2, 3), dtype=float32)
    """

    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype):
        self.shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.int64))

    def __repr__(self):
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name})"

    def __eq__(self, other):
        return (isinstance(other, ShapeDtypeStruct) and self.shape == other.shape
                and self.dtype == other.dtype)

    def __hash__(self):
        return hash((self.shape, self.dtype))


# ---- the host functions carried in params -------------------------------------------------
class HostFn:
    """A host function in an equation's params: called with NumPy arrays, hashed and
    compared by identity. `__name__` is the user's function name (printed in jaxprs);
    `where` the user line that created it (for error messages)."""

    __slots__ = ("fn", "__name__", "where", "note")

    def __init__(self, fn, name, where, note=""):
        self.fn = fn
        self.__name__ = name
        self.where = where
        self.note = note

    def __call__(self, *arrays):
        return self.fn(*arrays)

    def describe(self):
        """`host function `f` (called at file.py:3 (g))`, for messages."""
        at = f" (called at {self.where})" if self.where is not None else ""
        return f"host function `{self.__name__}`{at}{self.note}"

    def derived(self, fn, note=None):
        """A HostFn running `fn` that keeps this one's name and line (and note)."""
        return HostFn(fn, self.__name__, self.where, self.note if note is None else note)


def _fn_name(fn):
    return getattr(fn, "__name__", None) or type(fn).__name__


def _host(buf):
    """A read-only host NumPy view of a backend buffer: a callback must not write into an
    immutable array. Compiled code may reuse the buffer after the call."""
    if isinstance(buf, np.ndarray):
        view = buf.view()
        view.flags.writeable = False
        return view
    if hasattr(buf, "get") and not isinstance(buf, np.generic):  # a CuPy device array
        return buf.get()
    return np.asarray(buf)


def _host_copy(buf):
    """A host NumPy copy of a backend buffer, which the callback may keep."""
    if hasattr(buf, "get") and not isinstance(buf, np.generic):
        return buf.get()
    return np.array(buf, copy=True)


def _flat_args(what, args, kwargs):
    """Leaves of (args, kwargs) as arrays, and the treedef to rebuild them."""
    return leaves_as_arrays(
        (args, kwargs), what, "arguments must be arrays (or pytrees of arrays)",
        ". Pass other values by closing over them in the callback (e.g. with "
        "functools.partial)")


# ---- debug_callback -------------------------------------------------------------------------
debug_callback_p = Primitive("debug_callback", multiple_results=True, kind="call")
debug_callback_p.effectful = True


@debug_callback_p.def_abstract_eval
def _debug_callback_abstract_eval(*avals, callback):
    return []


def _debug_callback_lowering(*bufs, callback):
    # copies: debugging code often keeps what it sees (`seen.append(x)`), and compiled
    # code reuses dead buffers
    callback(*[_host_copy(b) for b in bufs])
    return []


debug_callback_p.def_lowering("cpu", _debug_callback_lowering)


def _debug_callback_jvp(primals, tangents, *, callback):
    # the callback sees primal values only: no tangent reaches the host
    debug_callback_p.bind(*primals, callback=callback)
    return [], []


debug_callback_p.def_jvp(_debug_callback_jvp)


@debug_callback_p.def_transpose
def _debug_callback_transpose(cts, *args, callback):
    # jvp never passes tangents, so a debug_callback contributes no cotangent
    return [None] * len(args)


def _each_element(callback, batched, size, *arrays):
    """Run-time loop of a vectorised debug_callback: call `callback` on example i, in
    order; batched arrays carry the batch along axis 0."""
    for i in range(size):
        callback(*[a[i] if b else a for a, b in zip(arrays, batched, strict=True)])


@debug_callback_p.def_batching
def _debug_callback_batching(axis, args, dims, *, callback):
    args = [x if d is None else moveaxis(x, d, 0) for x, d in zip(args, dims, strict=True)]
    batched = tuple(d is not None for d in dims)
    loop = callback.derived(functools.partial(_each_element, callback, batched, axis.size))
    debug_callback_p.bind(*args, callback=loop)
    return [], []


def callback(fn, *args, ordered=False, **kwargs):
    """Call `fn(*args, **kwargs)` on the host for its side effects, with NumPy values.

    Runs when the program runs: immediately outside transformations, each time a jitted
    function runs, once per example (in order) under `vmap`, and on primal values (in the
    forward pass) under `jvp`/`grad`. Callbacks always run in program order, so `ordered`
    is accepted for compatibility and has no effect.

    Args:
      fn: a Python function; its return value is ignored.
      *args, **kwargs: pytrees of arrays (any shapes and dtypes); `fn` receives them with
        the same structure, each leaf an `np.ndarray` (a copy it may keep).

    Returns:
      None.

    Raises:
      Whatever `fn` raises, when it runs.

    >>> import mytorch as mt, mytorch.numpy as mnp
    >>> seen = []
    >>> mt.debug.callback(seen.append, mnp.ones(3))
    >>> seen
    [array([1., 1., 1.], dtype=float32)]
    """
    del ordered
    leaves, tree = _flat_args(f"debug.callback({_fn_name(fn)})", args, kwargs)

    def flat(*arrays):
        a, kw = tree_util.tree_unflatten(tree, arrays)
        fn(*a, **kw)

    host = HostFn(flat, _fn_name(fn), user_frame())
    debug_callback_p.bind(*leaves, callback=host)


def print(fmt, *args, ordered=False, **kwargs):  # noqa: A001  (mt.debug.print, like JAX)
    """Print `fmt.format(*args, **kwargs)` with the values the arrays have at run time.

    Unlike Python's print inside a traced function (which runs once, while tracing, and
    shows tracers), this prints every time the program runs; see `callback` for how it
    behaves under jit, vmap (one line per example) and grad (primal values).

    Args:
      fmt: a `str.format` string; array leaves are formatted as NumPy arrays.
      *args, **kwargs: pytrees of arrays.

    >>> import mytorch as mt, mytorch.numpy as mnp
    >>> mt.vmap(lambda x: mt.debug.print("x={x}", x=x))(mnp.arange(2))
    x=0
    x=1
    """
    if not isinstance(fmt, str):
        raise TypeError(f"debug.print: the format must be a str, got {type(fmt).__name__}")
    del ordered
    leaves, tree = _flat_args("debug.print", args, kwargs)

    def flat(*arrays):
        a, kw = tree_util.tree_unflatten(tree, arrays)
        builtins.print(fmt.format(*a, **kw))

    debug_callback_p.bind(*leaves, callback=HostFn(flat, "debug_print", user_frame()))


# ---- pure_callback --------------------------------------------------------------------------
pure_callback_p = Primitive("pure_callback", multiple_results=True, kind="call")


@pure_callback_p.def_abstract_eval
def _pure_callback_abstract_eval(*avals, callback, result_avals, vmap_method):
    return list(result_avals)


def _check_results(callback, results, avals):
    """The callback's flat results as fresh NumPy arrays of the declared dtypes, or an
    error naming the callback, the declared and the returned types."""
    if len(results) != len(avals):
        raise ValueError(
            f"pure_callback: the {callback.describe()} returned {len(results)} arrays, but "
            f"result_shape_dtypes declares {len(avals)} "
            f"({', '.join(a.str_short() for a in avals)})"
        )
    out = []
    for i, (r, aval) in enumerate(zip(results, avals, strict=True)):
        r = np.asarray(r)
        if r.shape != aval.shape or not _dtype_ok(r.dtype, aval.dtype):
            got = f"{r.dtype}{list(r.shape)}"
            try:
                got = ShapedArray(r.shape, r.dtype).str_short()
            except (KeyError, TypeError):
                pass
            err = ValueError if r.shape != aval.shape else TypeError
            raise err(
                f"pure_callback: the {callback.describe()} returned {got} for result {i}, "
                f"but result_shape_dtypes declares {aval.str_short()}"
            )
        if r.dtype != aval.dtype or r.base is not None or not r.flags.writeable:
            r = np.array(r, dtype=aval.dtype)  # never alias an operand or a user buffer
        out.append(r)
    return out


def _dtype_ok(got, declared):
    if got == declared:
        return True
    try:  # e.g. a Python float (float64) where f32 is declared and x64 is off
        return dtypes.canonicalize(got) == declared
    except TypeError:
        return False


def _pure_callback_lowering(*bufs, callback, result_avals, vmap_method):
    results = callback(*[_host(b) for b in bufs])
    return _check_results(callback, results, result_avals)


pure_callback_p.def_lowering("cpu", _pure_callback_lowering)


def _pure_callback_jvp(primals, tangents, *, callback, result_avals, vmap_method):
    raise ValueError(
        f"pure_callback: cannot differentiate through the {callback.describe()}: "
        "pure_callback has no derivative rule. Wrap the call in a function decorated with "
        "mt.custom_jvp or mt.custom_vjp and state its derivative (which may itself call "
        "mt.pure_callback)."
    )


pure_callback_p.def_jvp(_pure_callback_jvp)


def _sequential(callback, batched, size, avals, *arrays):
    """Run-time loop of a vectorised pure_callback: call `callback` on each example and
    stack the (checked) results along a new axis 0."""
    per_out = [[] for _ in avals]
    for i in range(size):
        outs = callback(*[a[i] if b else a for a, b in zip(arrays, batched, strict=True)])
        for acc, o in zip(per_out, _check_results(callback, outs, avals), strict=True):
            acc.append(o)
    return [np.stack(acc) if acc else np.empty((0, *a.shape), a.dtype)
            for acc, a in zip(per_out, avals, strict=True)]


@pure_callback_p.def_batching
def _pure_callback_batching(axis, args, dims, *, callback, result_avals, vmap_method):
    args = [x if d is None else moveaxis(x, d, 0) for x, d in zip(args, dims, strict=True)]
    batched = tuple(d is not None for d in dims)
    if vmap_method in (None, "sequential", "sequential_unrolled"):
        fn = callback.derived(functools.partial(
            _sequential, callback, batched, axis.size, result_avals))
    else:  # one call on the whole batch; unbatched operands get a size-1 or full axis
        size = 1 if vmap_method == "expand_dims" else axis.size
        args = [x if b else broadcast_batched(x, size) for x, b in zip(args, batched)]
        fn = callback.derived(callback.fn, note=(
            f", called once for a batch of {axis.size} (vmap_method={vmap_method!r}) and "
            "expected to return the batch along axis 0,"))
    out_avals = tuple(batched_aval(a, 0, axis.size) for a in result_avals)
    outs = pure_callback_p.bind(*args, callback=fn, result_avals=out_avals,
                                vmap_method=vmap_method)
    return outs, [0] * len(outs)


def _result_avals(name, result_shape_dtypes):
    def is_spec(x):
        return hasattr(x, "shape") and hasattr(x, "dtype")

    specs, tree = tree_util.tree_flatten(result_shape_dtypes, is_leaf=is_spec)
    avals = []
    for s in specs:
        if not is_spec(s):
            raise TypeError(
                f"pure_callback({name}): result_shape_dtypes must be a pytree of objects "
                f"with .shape and .dtype (e.g. mt.ShapeDtypeStruct), got "
                f"{type(s).__name__}: {s!r:.60}"
            )
        try:
            dtype = dtypes.canonicalize(s.dtype)
        except TypeError as err:
            raise TypeError(f"pure_callback({name}): {err}") from None
        avals.append(ShapedArray(tuple(int(d) for d in s.shape), dtype))
    return tuple(avals), tree


def pure_callback(callback, result_shape_dtypes, *args, vmap_method=None, **kwargs):
    """Call the host function `callback(*args, **kwargs)` from (possibly traced) code.

    `callback` receives NumPy arrays structured like `args`/`kwargs` (read-only views,
    valid during the call: copy what you keep) and must return a pytree whose leaves match
    `result_shape_dtypes` in shape and dtype. It must be pure: it may be skipped when its
    results are unused.

    Args:
      callback: fn(*arrays, **arrays) -> pytree of NumPy arrays.
      result_shape_dtypes: pytree of objects with `.shape` and `.dtype`
        (`mt.ShapeDtypeStruct`, arrays).
      *args, **kwargs: pytrees of arrays.
      vmap_method: how `vmap` batches the call. None or "sequential": call `callback`
        once per example, in order (a loop when the program runs); "expand_dims": call it
        once with the batch along axis 0 of batched arguments, unbatched ones getting a
        leading axis of size 1; "broadcast_all": likewise with unbatched arguments
        broadcast to the batch size. The vectorised callback must return results with
        the batch along axis 0.

    Returns:
      A pytree like `result_shape_dtypes` of arrays.

    Raises:
      ValueError/TypeError: when the callback's results do not match the declared
        shapes/dtypes (naming the callback, the declared and the returned types), or
        when the call is differentiated (pure_callback has no derivative: use
        mt.custom_jvp or mt.custom_vjp).

    >>> import numpy as np, mytorch as mt, mytorch.numpy as mnp
    >>> x = mnp.arange(3.0)
    >>> mt.pure_callback(np.cumsum, mt.ShapeDtypeStruct((3,), "float32"), x)
    Array([0., 1., 3.], dtype=float32)
    """
    name = _fn_name(callback)
    if vmap_method not in VMAP_METHODS:
        raise ValueError(
            f"pure_callback({name}): vmap_method must be one of "
            f"{', '.join(map(repr, VMAP_METHODS))}; got {vmap_method!r}"
        )
    leaves, in_tree = _flat_args(f"pure_callback({name})", args, kwargs)
    result_avals, out_tree = _result_avals(name, result_shape_dtypes)

    def flat(*arrays):
        a, kw = tree_util.tree_unflatten(in_tree, arrays)
        return tree_util.tree_leaves(callback(*a, **kw))

    host = HostFn(flat, name, user_frame())
    outs = pure_callback_p.bind(*leaves, callback=host, result_avals=result_avals,
                                vmap_method=vmap_method)
    return tree_util.tree_unflatten(out_tree, outs)
