"""Public differentiation API: jvp, linearize, vjp, grad, value_and_grad, jacfwd, jacrev,
hessian.

Forward mode is the JVP interpreter (`transforms/jvp.py`). Reverse mode is linearize (JVP
with the tangents staged by partial evaluation, `transforms/partial_eval.py`) followed by
transposition of the linear jaxpr (`transforms/transpose.py`); there is no second table of
VJP rules. Every function here accepts and returns pytrees.
"""

import functools

import numpy as np

from mytorch.core import dtypes, tree_util
from mytorch.core.ad_util import Zero, instantiate, is_differentiable
from mytorch.core.array import Array, from_numpy, scalar_array
from mytorch.core.jaxpr import eval_jaxpr
from mytorch.core.source_info import user_frame
from mytorch.core.trace import aval_of
from mytorch.lax._utils import asarray, leaves_as_arrays
from mytorch.lax.elementwise import convert_element_type
from mytorch.lax._batching import moveaxis
from mytorch.lax.structural import reshape, slice_in_dim
from mytorch.transforms.jvp import jvp_flat
from mytorch.transforms.partial_eval import linearize_flat
from mytorch.transforms.transpose import backward_pass
from mytorch.tree_util import Partial
from mytorch.vectorize import vmap

__all__ = ["jvp", "linearize", "vjp", "grad", "value_and_grad", "jacfwd", "jacrev", "hessian"]


def _name(fun):
    return getattr(fun, "__name__", None) or type(fun).__name__


def _at():
    info = user_frame()
    return f" (at {info})" if info is not None else ""


def _describe(x):
    return f"an array {aval_of(x).str_short()}" if isinstance(x, Array) else type(x).__name__


def _flat_fun(fun, in_tree, has_aux, what):
    """fun over pytrees -> (fn over flat leaves returning flat outputs, store of trees/aux).

    The array leaves of aux ride after the outputs (store["n_out"] of them are outputs), so
    that the transformation hands them back as values, not as its tracers; `_split_aux`
    takes them off again."""
    store = {}

    def flat(*leaves):
        args = tree_util.tree_unflatten(in_tree, leaves)
        out = fun(*args)
        aux_arrays = []
        if has_aux:
            if not (isinstance(out, (tuple, list)) and len(out) == 2):
                raise TypeError(
                    f"{what} with has_aux=True needs {_name(fun)} to return a pair "
                    f"(output, aux), got {_describe(out)}"
                )
            out, aux = out
            aux_leaves, store["aux_tree"] = tree_util.tree_flatten(aux)
            store["aux_static"] = [None if isinstance(a, Array) else a for a in aux_leaves]
            aux_arrays = [a for a in aux_leaves if isinstance(a, Array)]
        out_leaves, store["out_tree"] = tree_util.tree_flatten(out)
        store["n_out"] = len(out_leaves)
        for x in out_leaves:
            if not isinstance(x, (Array, bool, int, float, np.ndarray, np.generic)):
                raise TypeError(
                    f"{what}: {_name(fun)} returned a {type(x).__name__}; it must return "
                    "arrays (or pytrees of arrays)"
                )
        return [asarray(x) for x in out_leaves] + aux_arrays

    return flat, store


def _trace_name(what, fun):
    """`vjp(f)` for a direct call; grad/jacrev/jacfwd pass their own `grad(f)`."""
    return what if what.endswith(")") else f"{what}({_name(fun)})"


def _split_aux(store, outs):
    """(the outputs, the aux pytree or None) from a transformation's flat outputs."""
    n = store["n_out"]
    if "aux_tree" not in store:
        return outs[:n], None
    arrays = iter(outs[n:])
    leaves = [next(arrays) if a is None else a for a in store["aux_static"]]
    return outs[:n], tree_util.tree_unflatten(store["aux_tree"], leaves)


def _is_static(x):
    """Whether a primal leaf passes to the function untouched: a Python or NumPy int or
    bool has no tangent, and stays a hashable value (e.g. for a jitted function's
    static_argnums), as in JAX."""
    return isinstance(x, (bool, int, np.bool_, np.integer))


def _primal_leaves(primals, what):
    """(the primal leaves as given, static flags, the other leaves as arrays, treedef)."""
    raw, tree = tree_util.tree_flatten(primals)
    static = [_is_static(x) for x in raw]
    arrays, _ = leaves_as_arrays([x for x, st in zip(raw, static) if not st], what)
    return raw, static, arrays, tree


def _with_static(flat, raw, static):
    """`flat` of the non-static leaves, the static ones put back in their places."""
    if not any(static):
        return flat

    def with_static(*xs):
        it = iter(xs)
        return flat(*[x if st else next(it) for x, st in zip(raw, static)])

    return with_static


def _dynamic(leaves, static):
    return [x for x, st in zip(leaves, static) if not st]


def jvp(fun, primals, tangents, has_aux=False):
    """Forward mode: (fun(*primals), J(primals) @ tangents), both pytrees like fun's output.

    `primals` and `tangents` are tuples (or lists) of equal tree structure, shapes and
    dtypes; integer primals take zero tangents.
    """
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError(
            "jvp: primals and tangents must be tuples or lists of arguments, got "
            f"{type(primals).__name__} and {type(tangents).__name__}"
        )
    p_leaves, p_tree = leaves_as_arrays(tuple(primals), "jvp primals")
    t_leaves, t_tree = leaves_as_arrays(tuple(tangents), "jvp tangents")
    if p_tree != t_tree:
        raise TypeError(
            f"jvp: primals and tangents must have the same tree structure, got {p_tree} "
            f"and {t_tree}"
        )
    ts = []
    for i, (p, t) in enumerate(zip(p_leaves, t_leaves)):
        pa, ta = aval_of(p), aval_of(t)
        if pa.shape != ta.shape:
            raise ValueError(
                f"jvp: primal and tangent leaf {i} have different shapes: "
                f"{pa.str_short()} and {ta.str_short()}"
            )
        if not is_differentiable(pa):
            ts.append(Zero(pa))
            continue
        if pa.dtype != ta.dtype:
            raise TypeError(
                f"jvp: primal and tangent leaf {i} have different dtypes: "
                f"{pa.str_short()} and {ta.str_short()}"
            )
        ts.append(t)
    flat, store = _flat_fun(fun, p_tree, has_aux, "jvp")
    raw = tree_util.tree_leaves(tuple(primals))
    static = [_is_static(x) for x in raw]
    outs, t_outs = jvp_flat(_with_static(flat, raw, static), _dynamic(p_leaves, static),
                            _dynamic(ts, static), f"jvp({_name(fun)})")
    outs, aux = _split_aux(store, outs)
    t_outs = [instantiate(t) for t in t_outs[:store["n_out"]]]
    out_tree = store["out_tree"]
    result = (tree_util.tree_unflatten(out_tree, outs), tree_util.tree_unflatten(out_tree, t_outs))
    return (*result, aux) if has_aux else result


def linearize(fun, *primals, has_aux=False):
    """(fun(*primals), f_jvp) where f_jvp(*tangents) = J(primals) @ tangents, evaluated
    from the saved linear jaxpr without re-running `fun`."""
    return _linearize(fun, primals, has_aux, "linearize")


def _linearize(fun, primals, has_aux, what):
    raw, static, p_leaves, p_tree = _primal_leaves(primals, what)
    flat, store = _flat_fun(fun, p_tree, has_aux, what)
    outs, linear, _ = linearize_flat(_with_static(flat, raw, static), p_leaves,
                                     _trace_name(what, fun))
    outs, aux = _split_aux(store, outs)
    out_tree = store["out_tree"]
    f_jvp = Partial(_Pushforward(linear.jaxpr, p_tree, static, out_tree, store["n_out"]),
                    list(linear.consts))
    out = tree_util.tree_unflatten(out_tree, outs)
    return (out, f_jvp, aux) if has_aux else (out, f_jvp)


class _Pushforward:
    """linearize's f_jvp without its residuals, which `Partial` holds as pytree leaves
    (so that f_jvp can pass in and out of jitted functions)."""

    __name__ = "f_jvp"

    def __init__(self, jaxpr, p_tree, static, out_tree, n_out):
        self.jaxpr, self.p_tree, self.static = jaxpr, p_tree, static
        self.out_tree, self.n_out = out_tree, n_out

    def __call__(self, residuals, *tangents):
        t_leaves, t_tree = leaves_as_arrays(tangents, "linearize's f_jvp")
        if t_tree != self.p_tree:
            raise TypeError(
                f"f_jvp: expected tangents of structure {self.p_tree}, got {t_tree}")
        t_outs = eval_jaxpr(self.jaxpr, residuals, *_dynamic(t_leaves, self.static))
        return tree_util.tree_unflatten(self.out_tree, t_outs[:self.n_out])


def vjp(fun, *primals, has_aux=False):
    """(fun(*primals), vjp_fn[, aux]) where vjp_fn(cotangent) returns a tuple with one
    cotangent per primal (same trees, shapes and dtypes as the primals)."""
    return _vjp(fun, primals, has_aux, "vjp")


def _vjp(fun, primals, has_aux, what):
    raw, static, p_leaves, p_tree = _primal_leaves(primals, what)
    flat, store = _flat_fun(fun, p_tree, has_aux, what)
    outs, linear, _ = linearize_flat(_with_static(flat, raw, static), p_leaves,
                                     _trace_name(what, fun))
    aux_avals = [aval_of(o) for o in outs[store["n_out"]:]]
    outs, aux = _split_aux(store, outs)
    out_tree = store["out_tree"]
    pullback = _Pullback(fun, linear.jaxpr, p_tree, [aval_of(x) for x in raw], static,
                         out_tree, [aval_of(o) for o in outs], aux_avals)
    vjp_fn = Partial(pullback, list(linear.consts))
    out = tree_util.tree_unflatten(out_tree, outs)
    return (out, vjp_fn, aux) if has_aux else (out, vjp_fn)


class _Pullback:
    """vjp's vjp_fn without its residuals, which `Partial` holds as pytree leaves (so that
    vjp_fn can pass in and out of jitted functions): `(residuals, cotangent) -> a tuple
    with one cotangent per primal (same trees, shapes and dtypes as the primals)`."""

    __name__ = "vjp_fn"

    def __init__(self, fun, jaxpr, p_tree, in_avals, static, out_tree, out_avals, aux_avals):
        self.name, self.jaxpr, self.p_tree, self.in_avals = _name(fun), jaxpr, p_tree, in_avals
        self.static, self.out_tree, self.out_avals = static, out_tree, out_avals
        self.aux_avals = aux_avals

    def __repr__(self):
        return f"<vjp_fn of {self.name}>"

    def __call__(self, residuals, cotangent):
        ct_leaves, ct_tree = leaves_as_arrays(cotangent, "vjp_fn")
        if ct_tree != self.out_tree:
            raise TypeError(
                f"vjp_fn: the cotangent must have the structure of {self.name}'s output, "
                f"{self.out_tree}, got {ct_tree}"
            )
        for i, (ct, a) in enumerate(zip(ct_leaves, self.out_avals)):
            ca = aval_of(ct)
            if ca.shape != a.shape:
                raise ValueError(
                    f"vjp_fn: cotangent leaf {i} has shape {ca.str_short()}, but the "
                    f"output has {a.str_short()}"
                )
            if is_differentiable(a) and ca.dtype != a.dtype:
                if not ca.weak_type:
                    raise TypeError(
                        f"vjp_fn: cotangent leaf {i} has type {ca.str_short()}, but the "
                        f"output has type {a.str_short()}; the cotangent must have the "
                        "output's dtype"
                    )
                ct_leaves[i] = convert_element_type(ct, a.dtype)
        n = len(self.jaxpr.invars)
        cts = iter(backward_pass(self.jaxpr, residuals, [True] * n, [None] * n,
                                 ct_leaves + [Zero(a) for a in self.aux_avals]))
        cts = [Zero(a) if st else next(cts) for a, st in zip(self.in_avals, self.static)]
        cts = [instantiate(Zero(a) if not is_differentiable(a) else c)
               for c, a in zip(cts, self.in_avals)]
        return tuple(tree_util.tree_unflatten(self.p_tree, cts))


def _argnums_tuple(argnums, nargs, fun, what):
    single = isinstance(argnums, int)
    nums = (argnums,) if single else tuple(argnums)
    if not nums:
        raise ValueError(f"{what}: argnums must not be empty")
    for i in nums:
        if not isinstance(i, int) or not -nargs <= i < nargs:
            raise ValueError(
                f"{what}: argnums {argnums} is out of range for {_name(fun)} called with "
                f"{nargs} positional arguments{_at()}"
            )
    return single, tuple(i % nargs for i in nums)


def _split_args(fun, args, nums):
    """fun of the args at `nums` (the others fixed), and those args."""

    @functools.wraps(fun)
    def partial(*diff):
        full = list(args)
        for i, x in zip(nums, diff):
            full[i] = x
        return fun(*full)

    return partial, tuple(args[i] for i in nums)


def _check_inputs(diff_args, nums, what, allow_int=None, holomorphic=False, complex_ok=True):
    """The differentiated inputs' dtypes, as JAX checks them: complex with holomorphic=True;
    otherwise float, or complex where `complex_ok` (grad and jacrev; jacfwd's basis is
    real), or integer and bool with allow_int=True (None: the function has no allow_int)."""
    for i, arg in zip(nums, diff_args):
        for leaf in tree_util.tree_leaves(arg):
            a = aval_of(leaf)
            if holomorphic:
                if dtypes.is_complex(a.dtype):
                    continue
                raise TypeError(
                    f"{what} with holomorphic=True requires complex inputs, but argument {i} "
                    f"has a leaf of type {a.str_short()}{_at()}. Convert it with "
                    ".astype(mnp.complex64), or drop holomorphic=True."
                )
            if dtypes.is_float(a.dtype) or (allow_int and _is_int_or_bool(a)):
                continue
            if dtypes.is_complex(a.dtype):
                if complex_ok:
                    continue
                raise TypeError(
                    f"{what} requires real-valued (float) inputs, but argument {i} has a "
                    f"leaf of type {a.str_short()}{_at()}. For a holomorphic function pass "
                    "holomorphic=True; for a non-holomorphic one of complex inputs use "
                    "mt.jvp on the real and imaginary directions."
                )
            hint = ("" if allow_int is None or not _is_int_or_bool(a) else
                    ", or pass allow_int=True (its derivative is then zero)")
            raise TypeError(
                f"{what} requires float or complex inputs, but argument {i} has a "
                f"leaf of type {a.str_short()}{_at()}. Convert it with "
                f".astype(mnp.float32), leave it out of argnums{hint}."
            )


def _check_output(a, what, holomorphic, use):
    """A differentiated output's dtype: complex with holomorphic=True, float otherwise
    (`use` names the function to reach for instead)."""
    if holomorphic:
        if not dtypes.is_complex(a.dtype):
            raise TypeError(
                f"{what} with holomorphic=True requires complex outputs, got "
                f"{a.str_short()}{_at()}"
            )
    elif dtypes.is_complex(a.dtype):
        raise TypeError(
            f"{what} requires real-valued outputs, got {a.str_short()}{_at()}. For a "
            f"holomorphic function pass holomorphic=True; for a non-holomorphic one with "
            f"complex outputs use {use} directly."
        )
    elif not dtypes.is_float(a.dtype):
        raise TypeError(
            f"{what} requires a real-valued (float) output, got {a.str_short()}{_at()}"
        )


def _is_int_or_bool(aval):
    return dtypes.is_int(aval.dtype) or dtypes.is_bool(aval.dtype)


def _like_primals(g, primals):
    """Each gradient leaf with its primal's dtype and weak type, as in JAX (so a Python
    float's gradient stays weak: f16_array * grad(f)(2.0) is float16); an integer or bool
    primal (allow_int) gets a NumPy array of zeros of dtype float0."""
    p_leaves, p_tree = tree_util.tree_flatten(primals)
    out = []
    for ct, p in zip(tree_util.tree_leaves(g), p_leaves, strict=True):
        a = aval_of(p)
        if not is_differentiable(a):
            out.append(np.zeros(a.shape, dtypes.float0))
        elif aval_of(ct).dtype == a.dtype and aval_of(ct).weak_type == a.weak_type:
            out.append(ct)  # also keeps a 64-bit array made while x64 was on
        else:
            out.append(convert_element_type(ct, a.dtype, weak_type=a.weak_type))
    return tree_util.tree_unflatten(p_tree, out)


def value_and_grad(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False):
    """fun -> fn returning (fun(*args), gradient of fun's scalar output with respect to
    the arguments at `argnums`) (and aux first in the value when has_aux).

    Each gradient has its argument's shape, dtype and weak type. With allow_int=True,
    integer and bool arguments are allowed and get zero gradients of dtype float0 (NumPy
    arrays of their shape), as in JAX. A complex argument of a real-valued function gets
    the conjugate of its Wirtinger derivative times 2, df/dx - i df/dy (JAX's convention,
    docs/autodiff.md); holomorphic=True differentiates a complex-valued holomorphic
    function of complex arguments (the gradient is f'(z)).

    >>> value_and_grad(lambda x: x * x)(3.0)   # (9.0, 6.0)
    """
    what = f"grad({_name(fun)})"

    @functools.wraps(fun)
    def value_and_grad_fn(*args, **kwargs):
        single, nums = _argnums_tuple(argnums, len(args), fun, what)
        f = functools.partial(fun, **kwargs) if kwargs else fun
        partial, diff = _split_args(f, args, nums)
        _check_inputs(diff, nums, what, allow_int, holomorphic)
        if has_aux:
            out, vjp_fn, aux = _vjp(partial, diff, True, what)
        else:
            out, vjp_fn = _vjp(partial, diff, False, what)
        leaves = tree_util.tree_leaves(out)
        if len(leaves) != 1 or aval_of(leaves[0]).shape != ():
            desc = ", ".join(aval_of(x).str_short() for x in leaves) or "no arrays"
            pair = isinstance(out, (tuple, list)) and len(out) == 2 and not has_aux
            first = tree_util.tree_leaves(out[0]) if pair else []
            hint = (
                f"If {_name(fun)} returns (loss, aux), pass has_aux=True to differentiate "
                "the first and get the second back as it is. "
                if pair and len(first) == 1 and aval_of(first[0]).shape == () else ""
            )
            raise TypeError(
                f"{what} requires a scalar output; {_name(fun)} returned {desc}{_at()}. "
                f"{hint}Use mt.vjp or mt.jacrev for non-scalar outputs."
            )
        a = aval_of(leaves[0])
        _check_output(a, what, holomorphic, "mt.vjp")
        # on the output's device (the backward pass runs where the seed is); the dtype
        # keeps a 64-bit dtype made while x64 was on
        one = scalar_array(1, a.dtype, getattr(leaves[0], "_device", None))
        g = vjp_fn(tree_util.tree_unflatten(tree_util.tree_structure(out), [one]))
        g = _like_primals(g, diff)
        g = g[0] if single else g
        return ((out, aux), g) if has_aux else (out, g)

    return value_and_grad_fn


def grad(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False):
    """fun -> fn returning the gradient of fun's scalar float output with respect to the
    arguments at `argnums` (a tuple of gradients when argnums is a tuple).

    Each gradient has its argument's shape, dtype and weak type (a Python float's gradient
    is a weakly typed float32). allow_int=True accepts integer and bool arguments, whose
    gradients are NumPy zeros of dtype float0 (mt.float0), as in JAX. Complex arguments:
    see value_and_grad and docs/autodiff.md; holomorphic=True for a complex-valued
    holomorphic function.

    >>> grad(lambda x: x * 2.0)(1.0)   # 2.0, weakly typed
    """
    vg = value_and_grad(fun, argnums, has_aux, holomorphic, allow_int)

    @functools.wraps(fun)
    def grad_fn(*args, **kwargs):
        (value, g) = vg(*args, **kwargs)
        return (g, value[1]) if has_aux else g

    return grad_fn


def _std_basis(avals):
    """The standard basis of the space of a list of arrays, batched along a new axis 0:
    one (n, *shape) array per aval, n = total size; row j is one-hot at flat position j."""
    n = sum(a.size for a in avals)
    out, offset = [], 0
    for a in avals:
        block = np.zeros((n, a.size), dtype=a.dtype)
        block[offset:offset + a.size] = np.eye(a.size, dtype=a.dtype)
        out.append(from_numpy(block.reshape((n, *a.shape))))
        offset += a.size
    return out


def _split_axis(x, axis, avals, leading):
    """Cut `x`'s `axis` (of length sum of the avals' sizes) into one block per aval, each
    reshaped to aval.shape placed first (leading) or last among x's other dimensions."""
    x_aval = aval_of(x)
    rest = x_aval.shape[:axis] + x_aval.shape[axis + 1:]
    blocks, offset = [], 0
    for a in avals:
        part = slice_in_dim(x, offset, offset + a.size, axis=axis)
        offset += a.size
        part = moveaxis(part, axis, 0 if leading else x_aval.ndim - 1)
        blocks.append(reshape(part, (*a.shape, *rest) if leading else (*rest, *a.shape)))
    return blocks


def _jacobian_args(fun, args, argnums, what, allow_int=None, holomorphic=False,
                   complex_ok=True):
    """(single argnum?, fun of the differentiated args, those args) for jacfwd/jacrev."""
    single, nums = _argnums_tuple(argnums, len(args), fun, what)
    partial, diff = _split_args(fun, args, nums)
    _check_inputs(diff, nums, what, allow_int, holomorphic, complex_ok)
    return single, partial, diff


def _cast_blocks(per_in, like):
    """Each Jacobian block per_in[k][o] with the dtype and weak type of like(k, o), as in
    JAX: jacfwd's blocks take their output's, jacrev's their input's."""
    return [[convert_element_type(b, like(k, o).dtype, weak_type=like(k, o).weak_type)
             for o, b in enumerate(blocks)] for k, blocks in enumerate(per_in)]


def jacfwd(fun, argnums=0, has_aux=False, holomorphic=False):
    """The Jacobian by forward mode: fn(*args) -> pytree [output leaf][argument leaf] of
    arrays shaped output.shape + argument.shape, each of its output's dtype and weak type.
    Inputs are float; holomorphic=True takes complex inputs and outputs and gives f'(z).

    One batched pass: the JVP is vmapped over the standard basis of the inputs, so the
    primal computation runs once and the tangent computation once, batched."""
    what = f"jacfwd({_name(fun)})"

    def jac_fn(*args):
        single, partial, diff = _jacobian_args(fun, args, argnums, what,
                                               holomorphic=holomorphic, complex_ok=False)
        in_leaves, in_tree = tree_util.tree_flatten(diff)
        in_avals = [aval_of(x) for x in in_leaves]
        store = {}

        def pushforward(*basis_leaves):
            res = jvp(partial, diff, tuple(tree_util.tree_unflatten(in_tree, basis_leaves)),
                      has_aux=has_aux)
            out_leaves, store["out_tree"] = tree_util.tree_flatten(res[1])
            store["out_avals"] = [aval_of(o) for o in tree_util.tree_leaves(res[0])]
            if holomorphic:
                for a in store["out_avals"]:
                    _check_output(a, what, True, "mt.jvp")
            aux_leaves, store["aux_tree"] = tree_util.tree_flatten(res[2] if has_aux else None)
            # aux depends on the primals only: its arrays leave vmap unbatched
            store["aux_static"] = [None if isinstance(a, Array) else a for a in aux_leaves]
            return out_leaves, [a for a in aux_leaves if isinstance(a, Array)]

        t_outs, aux_arrays = vmap(pushforward, out_axes=(-1, None))(*_std_basis(in_avals))
        arrays = iter(aux_arrays)
        aux = tree_util.tree_unflatten(store["aux_tree"], [
            next(arrays) if a is None else a for a in store["aux_static"]])
        per_in = [[] for _ in in_leaves]
        for t in t_outs:  # (*out.shape, n_in)
            for k, block in enumerate(_split_axis(t, aval_of(t).ndim - 1, in_avals, False)):
                per_in[k].append(block)
        per_in = _cast_blocks(per_in, lambda k, o: store["out_avals"][o])
        return _assemble(per_in, in_tree, store["out_tree"], single, has_aux, aux)

    return jac_fn


def jacrev(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False):
    """The Jacobian by reverse mode: same layout as jacfwd (output.shape + input.shape),
    each block of its input's dtype and weak type. allow_int=True accepts integer and
    bool inputs (their blocks are zeros of the input's dtype, as in JAX). Outputs are
    float (complex inputs get JAX's convention, as grad); holomorphic=True takes complex
    inputs and outputs and gives f'(z).

    One batched pass: the VJP is vmapped over the standard basis of the outputs."""
    what = f"jacrev({_name(fun)})"

    def jac_fn(*args):
        single, partial, diff = _jacobian_args(fun, args, argnums, what, allow_int,
                                               holomorphic)
        res = _vjp(partial, diff, has_aux, what)
        out, vjp_fn = res[0], res[1]
        in_tree = tree_util.tree_structure(diff)
        out_leaves, out_tree = tree_util.tree_flatten(out)
        out_avals = [aval_of(x) for x in out_leaves]
        for a in out_avals:
            if holomorphic or dtypes.is_complex(a.dtype):
                _check_output(a, what, holomorphic, "mt.vjp")

        def pullback(*basis_leaves):
            return tree_util.tree_leaves(vjp_fn(tree_util.tree_unflatten(out_tree, basis_leaves)))

        rows = vmap(pullback)(*_std_basis(out_avals))  # per input leaf: (n_out, *in.shape)
        per_in = [_split_axis(r, 0, out_avals, True) for r in rows]
        in_avals = [aval_of(x) for x in tree_util.tree_leaves(diff)]
        per_in = _cast_blocks(per_in, lambda k, o: in_avals[k])
        return _assemble(per_in, in_tree, out_tree, single, has_aux, res[2] if has_aux else None)

    return jac_fn


def _assemble(per_in, in_tree, out_tree, single, has_aux, aux):
    """Nest blocks[in leaf][out leaf] as out-tree of (tuple of) in-trees, as JAX does."""
    n_out = out_tree.num_leaves
    by_out = []
    for o in range(n_out):
        in_struct = tree_util.tree_unflatten(in_tree, [per_in[k][o] for k in range(len(per_in))])
        by_out.append(in_struct[0] if single else tuple(in_struct))
    jac = tree_util.tree_unflatten(out_tree, by_out)
    return (jac, aux) if has_aux else jac


def hessian(fun, argnums=0, has_aux=False, holomorphic=False):
    """The Hessian of a scalar function: jacfwd(jacrev(fun))."""
    return jacfwd(jacrev(fun, argnums, has_aux=has_aux, holomorphic=holomorphic), argnums,
                  has_aux=has_aux, holomorphic=holomorphic)
