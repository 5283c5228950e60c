"""User-defined primitives: `primitive(name)` and the checked definitions of their parts.

A primitive made here is a `core.primitive.Primitive` of kind "extension": every interpreter
and backend treats it like a built-in one. What this module adds is checking at the seams a
user writes (each error names the primitive and says how to fix it):

- the abstract evaluation must return `ShapedArray`s (one, or a list for several results);
- the NumPy kernel's results must have the shapes the abstract evaluation gives;
- a JVP rule's tangents must have their results' shapes and dtypes;
- a missing JVP, transpose or batching rule is reported with the `mx.def_*` call that adds it.

Extension primitives are kept in their own registry (`registry()`), not in the library's
(`core.primitive.registry()`, whose tables and tests list the built-in primitives only), and
may not take a built-in primitive's name.
"""

import numpy as np

from mytorch.core import primitive as _core
from mytorch.core.ad_util import Zero, instantiate, is_differentiable, is_undefined
from mytorch.core.aval import ShapedArray
from mytorch.core.source_info import user_error
from mytorch.core.trace import aval_of
from mytorch.lax._ad import defjvp_zero, deflinear

__all__ = [
    "ExtensionPrimitive", "def_abstract_eval", "def_jvp", "def_linear", "def_numpy_kernel",
    "def_transpose", "def_zero_derivative", "primitive", "registry",
]

_EXTENSIONS = {}

_HOW = {
    "jvp": ("it has no derivative rule. Define one with mx.def_jvp({p}, rule) (reverse mode "
            "then transposes the rule's linear part) or mx.def_vjp({p}, bwd); if its results "
            "are piecewise constant in its operands (indices, counts), declare "
            "mx.def_zero_derivative({p}); or stop differentiating its operands with "
            "lax.stop_gradient(x) where x is its operand"),
    "transpose": ("it is used linearly (in a JVP's linear part) but has no transpose rule. "
                  "Define one with mx.def_transpose({p}, rule) or mx.def_linear({p}, "
                  "transpose)"),
    "batching": ("it has no batching rule. Define one with mx.def_batching({p}, rule), "
                 "rule(args, dims, **params) -> (out, out_dim), or use a helper: "
                 "mx.def_broadcasting_batching({p}) (NumPy broadcasting over the operands) or "
                 "mx.def_vectorized_batching({p}) (the kernel maps over leading axes)"),
}


class ExtensionPrimitive(_core.Primitive):
    """A primitive defined outside the library (see `primitive`)."""

    def __init__(self, name, *, multiple_results=False):
        if not isinstance(name, str) or not name.isidentifier():
            # (generated code and kernel names are built from it)
            raise ValueError(f"mx.primitive needs a name of letters, digits and underscores "
                             f"(a Python identifier, e.g. 'mylib_gelu'), got {name!r}")
        if name in _core._REGISTRY:
            raise ValueError(f"mx.primitive('{name}'): '{name}' is a built-in primitive; "
                             f"choose another name (e.g. 'mylib_{name}')")
        super().__init__(name, multiple_results=bool(multiple_results), kind="extension")
        del _core._REGISTRY[name]  # the library's registry lists built-in primitives only
        _EXTENSIONS[name] = self

    def rule(self, name, needed_by=None):
        """The rule `name`, or NotImplementedError saying how to define it."""
        fn = self.rules.get(name)
        if fn is not None:
            return fn
        who = {"differentiation": "differentiation (grad, jvp)"}.get(needed_by,
                                                                     needed_by or name)
        how = _HOW.get(name, f"it has no '{name}' rule").format(p="prim")
        raise user_error(NotImplementedError,
                         f"{who} needs the '{name}' rule of primitive '{self.name}', but {how}",
                         below=True)

    def def_abstract_eval(self, fn):
        """Decorator: `fn(*avals, **params) -> ShapedArray` (a list of them for a primitive
        of several results); the results are checked."""
        return def_abstract_eval(self, fn)

    def def_impl(self, fn):
        """Decorator: the NumPy kernel (see `def_numpy_kernel`)."""
        return def_numpy_kernel(self, fn)


def primitive(name, *, multiple_results=False):
    """A new primitive, usable with `.bind(*arrays, **params)` under every transformation
    once its parts are defined.

    Args:
      name: the name printed in jaxprs and errors: a Python identifier, not a built-in
        primitive's name (prefix it with your library's, e.g. "mylib_gelu").
      multiple_results: `bind` returns a list (and the abstract evaluation a list of avals).

    Returns:
      an `ExtensionPrimitive`. Define at least its abstract evaluation
      (`def_abstract_eval`) and a NumPy kernel (`def_numpy_kernel`); add `def_jvp` (or
      `def_vjp`, `def_zero_derivative`, `def_linear`) for grad and `def_batching` for vmap.

    Raises:
      ValueError: `name` is not an identifier, or is a built-in primitive's.

    >>> import mytorch.numpy as mnp
    >>> from mytorch import extend as mx
    >>> twice_p = mx.primitive("doc_twice")
    >>> _ = twice_p.def_abstract_eval(lambda x: mx.ShapedArray(x.shape, x.dtype))
    >>> _ = mx.def_numpy_kernel(twice_p, lambda x: 2 * x)
    >>> twice_p.bind(mnp.asarray([1.0, 2.0])).tolist()
    [2.0, 4.0]
    """
    return ExtensionPrimitive(name, multiple_results=multiple_results)


def registry():
    """{name: ExtensionPrimitive} of the primitives made with `primitive` (the latest one
    of each name)."""
    return dict(_EXTENSIONS)


def _short(x):
    if isinstance(x, ShapedArray):
        return x.str_short()
    return f"{type(x).__name__} {x!r}"[:120]


def _as_aval(prim, out):
    if isinstance(out, ShapedArray):
        return out
    shape, dtype = getattr(out, "shape", None), getattr(out, "dtype", None)
    if isinstance(shape, tuple) and dtype is not None and not isinstance(out, np.ndarray):
        return ShapedArray(tuple(int(d) for d in shape), dtype)  # e.g. ShapeDtypeStruct
    raise TypeError(f"the abstract evaluation of '{prim.name}' must return "
                    f"mx.ShapedArray(shape, dtype){' values (a list)' * prim.multiple_results}"
                    f", got {_short(out)}")


def def_abstract_eval(prim, fn=None):
    """Define `prim`'s abstract evaluation (usable as a decorator).

    Args:
      prim: an `ExtensionPrimitive`.
      fn: `fn(*avals, **params) -> ShapedArray` (a list of them for several results). It
        sees only shapes and dtypes (`aval.shape`, `aval.dtype`, `aval.ndim`), and raises
        TypeError/ValueError for bad operands: the message is shown with the primitive's
        name, the operands and the user's line.

    Returns:
      `fn`.
    """
    if fn is None:
        return lambda f: def_abstract_eval(prim, f)

    def checked(*avals, **params):
        out = fn(*avals, **params)
        if not prim.multiple_results:
            return _as_aval(prim, out)
        if not isinstance(out, (list, tuple)):
            raise TypeError(f"the abstract evaluation of '{prim.name}' (multiple_results) "
                            f"must return a list of mx.ShapedArray, got {_short(out)}")
        return [_as_aval(prim, o) for o in out]

    prim._abstract_eval = checked
    return fn


def def_numpy_kernel(prim, fn=None):
    """Define `prim`'s NumPy kernel: what runs eagerly on the CPU and what jit-compiled code
    calls (usable as a decorator).

    Args:
      prim: an `ExtensionPrimitive`.
      fn: `fn(*arrays, **params) -> array` (a list for several results) on NumPy arrays of
        the operands' shapes and dtypes. It must not write to its operands. Results are
        converted to the abstract evaluation's dtype; a result of another shape raises.

    Returns:
      `fn`.
    """
    if fn is None:
        return lambda f: def_numpy_kernel(prim, f)
    from mytorch.backends.numpy import numpy_backend

    def kernel(*bufs, **params):
        outs = fn(*bufs, **params)
        return check_results(prim, "NumPy kernel", bufs, params, outs, np.asarray)

    kernel.__name__ = f"{prim.name}_numpy_kernel".replace(".", "_")
    numpy_backend.register(prim)(kernel)
    return fn


def check_results(prim, what, bufs, params, outs, asarray):
    """`outs` of a kernel of `prim` as arrays, checked against the abstract evaluation
    (computed once per operand shapes, dtypes and params)."""
    try:
        key = (prim, tuple((b.shape, b.dtype) for b in bufs), tuple(params.items()))
        want = _EXPECTED.get(key)
    except TypeError:  # an unhashable param: check without the memo
        key, want = None, None
    if want is None:
        want = prim._abstract_eval(*[ShapedArray(b.shape, b.dtype) for b in bufs], **params)
        want = tuple(w.shape for w in (want if prim.multiple_results else [want]))
        if key is not None and len(_EXPECTED) < 4096:
            _EXPECTED[key] = want
    if prim.multiple_results:
        outs = [asarray(o) for o in outs]
        if len(outs) != len(want):
            raise ValueError(f"the {what} of '{prim.name}' returned {len(outs)} results; its "
                             f"abstract evaluation gives {len(want)}")
        for i, (o, w) in enumerate(zip(outs, want, strict=True)):
            _check_shape(prim, what, o, w, bufs, params, i)
        return outs
    outs = asarray(outs)
    _check_shape(prim, what, outs, want[0], bufs, params, 0)
    return outs


_EXPECTED = {}  # (primitive, operand shapes and dtypes, params) -> result shapes


def _check_shape(prim, what, out, shape, bufs, params, i):
    if out.shape != shape:
        got = ShapedArray(out.shape, out.dtype).str_short()
        want = prim._abstract_eval(*[ShapedArray(b.shape, b.dtype) for b in bufs], **params)
        want = want[i] if prim.multiple_results else want
        raise ValueError(f"the {what} of '{prim.name}' returned {got} where its abstract "
                         f"evaluation gives {want.str_short()}")


def _check_tangent(prim, out, out_dot):
    """`out_dot` as a tangent of `out`: None -> Zero; wrong shape or dtype raises."""
    aval = aval_of(out)
    if out_dot is None or type(out_dot) is Zero or not is_differentiable(aval):
        return Zero(aval)
    got = aval_of(out_dot)
    if got.shape != aval.shape or got.dtype != aval.dtype:
        raise user_error(TypeError, f"the JVP rule of '{prim.name}' returned a tangent "
                                    f"{got.str_short()} for a result {aval.str_short()}: a "
                                    "tangent has its result's shape and dtype")
    return out_dot


def def_jvp(prim, rule=None, *, symbolic_zeros=False):
    """Define `prim`'s forward-mode derivative (usable as a decorator); reverse mode
    (grad, vjp) transposes the linear part of the rule, so write the tangent with
    mytorch operations (mytorch.numpy, lax) that are linear in the tangents.

    Args:
      prim: an `ExtensionPrimitive`.
      rule: `rule(primals, tangents, **params) -> (out, out_dot)`: `primals` and `tangents`
        are lists (one per operand, same shapes and dtypes); `out` is usually
        `prim.bind(*primals, **params)`; `out_dot` has `out`'s shape and dtype, or is None
        for a zero tangent (lists of both for several results).
      symbolic_zeros: pass tangents that are known to be zero as `mx.Zero(aval)` objects
        instead of arrays of zeros (saves work when an operand is not differentiated).

    Returns:
      `rule`.
    """
    if rule is None:
        return lambda r: def_jvp(prim, r, symbolic_zeros=symbolic_zeros)

    def jvp(primals, tangents, **params):
        if not symbolic_zeros:
            tangents = [instantiate(t) for t in tangents]
        out, out_dot = rule(list(primals), list(tangents), **params)
        if not prim.multiple_results:
            return out, _check_tangent(prim, out, out_dot)
        out = list(out)
        dots = [None] * len(out) if out_dot is None else list(out_dot)
        return out, [_check_tangent(prim, o, d) for o, d in zip(out, dots, strict=True)]

    prim.def_jvp(jvp)
    return rule


def def_zero_derivative(prim):
    """Declare that `prim`'s results do not change under small changes of its operands
    (integer results such as indices or counts, or piecewise-constant ones): their
    tangents are zero, so grad flows around the primitive."""
    defjvp_zero(prim)  # the rule the built-in comparisons and argmax use


def def_transpose(prim, rule=None):
    """Define the transpose of a primitive that is linear in some operands (usable as a
    decorator).

    Args:
      prim: an `ExtensionPrimitive`.
      rule: `rule(ct, *args, **params) -> list` with one entry per operand: the cotangent
        of a linear operand (its shape and dtype), None for the others. A linear operand
        arrives as an `mx.UndefinedPrimal` (test with `mx.is_undefined(x)`; `x.aval` is
        its ShapedArray); the others are values. `ct` is the result's cotangent (a list
        for several results); it is never zero here.

    Returns:
      `rule`.
    """
    if rule is None:
        return lambda r: def_transpose(prim, r)

    def transpose(ct, *args, **params):
        cts = ct if prim.multiple_results else [ct]
        if all(type(c) is Zero for c in cts):
            return [Zero(a.aval) if is_undefined(a) else None for a in args]
        if prim.multiple_results:
            ct = [instantiate(c) for c in ct]
        out = list(rule(ct, *args, **params))
        if len(out) != len(args):
            raise user_error(TypeError, f"the transpose rule of '{prim.name}' returned "
                                        f"{len(out)} cotangents for {len(args)} operands")
        return [(Zero(a.aval) if c is None else c) if is_undefined(a) else None
                for c, a in zip(out, args, strict=True)]

    prim.def_transpose(transpose)
    return rule


def def_linear(prim, transpose):
    """Declare `prim` linear in all of its operands: its JVP is `prim` applied to the
    tangents, and `transpose` (see `def_transpose`) gives reverse mode."""
    def_transpose(prim, transpose)
    deflinear(prim, prim.rules["transpose"])  # as the built-in linear primitives do
