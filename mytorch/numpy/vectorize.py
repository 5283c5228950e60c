"""`vectorize` (NumPy's generalized ufuncs, built on `vmap`) and `piecewise`.

`vectorize(f, signature="(n),(n)->()")` calls `f` on the core dims of its arguments and maps
it over the broadcast loop dims with one `vmap` per loop dim, as `jnp.vectorize` does;
arguments whose loop dims have size 1 are not mapped over those dims (nothing is broadcast
in memory). `piecewise` picks a function per element with `lax.switch` under `vectorize`.
"""

import functools
import re

from mytorch import lax
from mytorch.core.source_info import where
from mytorch.numpy._promote import asarray_any, broadcast_shapes
from mytorch.numpy.shapes import expand_dims, squeeze

__all__ = ["vectorize", "piecewise"]

_DIM = r"\w+"
_ARG = rf"\((?:{_DIM}(?:,{_DIM})*)?\)"
_ARGS = rf"{_ARG}(?:,{_ARG})*"
_SIGNATURE = re.compile(rf"^{_ARGS}->{_ARGS}$")


def _parse_signature(signature):
    """"(m,n),(n)->(m)" -> ([("m", "n"), ("n",)], [("m",)])."""
    text = signature.replace(" ", "")
    if not _SIGNATURE.match(text):
        raise ValueError(f"vectorize: not a valid gufunc signature: {signature!r} (expected "
                         "a form like '(m,n),(n)->(m)')")
    ins, outs = text.split("->")
    parse = lambda part: [tuple(re.findall(_DIM, a)) for a in re.findall(_ARG, part)]  # noqa: E731
    return parse(ins), parse(outs)


def _update_sizes(sizes, shape, core, context, is_input):
    """Record the size of each named core dim of one argument; errors on a mismatch."""
    if is_input and len(shape) < len(core):
        raise ValueError(f"vectorize: an input of shape {shape} has too few dimensions for "
                         f"its core dimensions {core} {context}{where()}")
    if not is_input and len(shape) != len(core):
        raise ValueError(f"vectorize: output shape {shape} does not match its core "
                         f"dimensions {core} {context}{where()}")
    for name, size in zip(core, shape[len(shape) - len(core):], strict=True):
        if sizes.setdefault(name, size) != size:
            raise ValueError(f"vectorize: inconsistent size for core dimension {name!r}: "
                             f"{size} vs {sizes[name]} {context}{where()}")


def _apply_excluded(func, excluded, args, kwargs):
    """`func` with the excluded positional and keyword arguments bound; the rest."""
    if not excluded:
        return func, list(args), kwargs
    dynamic = [a for i, a in enumerate(args) if i not in excluded]
    static = [(i, args[i]) for i in sorted(e for e in excluded if isinstance(e, int))
              if i < len(args)]
    static_kw = {k: v for k, v in kwargs.items() if k in excluded}
    dynamic_kw = {k: v for k, v in kwargs.items() if k not in excluded}

    def bound(*a, **kw):
        a = list(a)
        for i, v in static:
            a.insert(i, v)
        return func(*a, **kw, **static_kw)

    return bound, dynamic, dynamic_kw


def _checked(func, sizes, out_core, context):
    """`func` checking its outputs against the signature's output core dims."""

    def call(*args):
        out = func(*args)
        outs = out if isinstance(out, tuple) else (out,)
        if len(out_core) > 1 and not isinstance(out, tuple):
            raise TypeError(f"vectorize: the function must return a tuple of "
                            f"{len(out_core)} outputs {context}{where()}")
        if len(outs) != len(out_core):
            raise TypeError(f"vectorize: the function returned {len(outs)} outputs, the "
                            f"signature has {len(out_core)} {context}{where()}")
        seen = dict(sizes)
        for o, core in zip(outs, out_core, strict=True):
            _update_sizes(seen, tuple(asarray_any(o).shape), core, context, False)
        return out

    return call


def vectorize(pyfunc, *, excluded=frozenset(), signature=None):
    """`pyfunc` mapped over the broadcast leading dims of its arguments (with `vmap`).

    Without `signature`, `pyfunc` is called on 0-d arrays (elements); with one such as
    `"(m,n),(n)->(m)"`, on arrays with the named trailing core dims, and it must return
    outputs with the output core dims. The loop dims (all others) broadcast as in NumPy.

    Args:
      pyfunc: the function to vectorize.
      excluded: positions (ints) or keyword names (strs) of arguments passed through
        unchanged and not vectorized.
      signature: a generalized-ufunc signature, or None.

    Returns:
      The vectorized function: its outputs have shape `loop_shape + core_shape`.

    >>> mnp.vectorize(lambda a, b: a @ b, signature="(n),(n)->()")(
    ...     mnp.ones((3, 2)), mnp.ones(2)).tolist()
    [2.0, 2.0, 2.0]
    """
    excluded = frozenset(excluded)
    if any(not isinstance(e, (int, str)) or isinstance(e, bool) for e in excluded):
        raise TypeError(f"vectorize: excluded must hold ints and strs, got {set(excluded)}")
    if any(isinstance(e, int) and e < 0 for e in excluded):
        raise ValueError(f"vectorize: excluded={set(excluded)} holds a negative position")

    @functools.wraps(pyfunc)
    def wrapped(*args, **kwargs):
        from mytorch.vectorize import vmap  # mytorch.numpy is imported before mytorch.vmap

        context = f"(vectorize of {getattr(pyfunc, '__name__', 'fn')}, signature={signature!r})"
        func, args, kwargs = _apply_excluded(pyfunc, excluded, args, kwargs)
        if kwargs:
            func = functools.partial(func, **kwargs)
        if signature is None:
            in_core, out_core = [()] * len(args), None
        else:
            in_core, out_core = _parse_signature(signature)
        nones = {i for i, a in enumerate(args) if a is None}
        if nones:  # None is passed through, as JAX does
            if any(i < len(in_core) and in_core[i] for i in nones):
                raise ValueError(f"vectorize: None at positions {sorted(nones)} needs scalar "
                                 f"core dimensions {context}")
            func, args, _ = _apply_excluded(func, nones, args, {})
            in_core = [c for i, c in enumerate(in_core) if i not in nones]
        if len(args) != len(in_core):
            raise TypeError(f"vectorize: expected {len(in_core)} positional arguments, got "
                            f"{len(args)} {context}{where()}")
        args = [asarray_any(a) for a in args]
        sizes = {}
        for a, core in zip(args, in_core, strict=True):
            _update_sizes(sizes, tuple(a.shape), core, context, True)
        loops = [tuple(a.shape[:a.ndim - len(c)]) for a, c in zip(args, in_core, strict=True)]
        shape = broadcast_shapes("vectorize", *loops)
        if out_core is not None:
            func = _checked(func, sizes, out_core, context)
        squeezed, rev_filled = [], []
        for a, loop in zip(args, loops, strict=True):
            rev_filled.append(((1,) * (len(shape) - len(loop)) + loop)[::-1])
            ones = tuple(i for i, d in enumerate(loop) if d == 1)
            squeezed.append(squeeze(a, ones) if ones else a)
        mapped, expand = func, []
        for neg, dims in enumerate(zip(*rev_filled, strict=True)):
            in_axes = tuple(None if d == 1 else 0 for d in dims)
            if all(ax is None for ax in in_axes):
                expand.append(len(shape) - 1 - neg)
            else:
                mapped = vmap(mapped, in_axes)
        out = mapped(*squeezed)
        if not expand:
            return out
        axes = tuple(sorted(expand))
        if isinstance(out, tuple):
            return tuple(expand_dims(o, axes) for o in out)
        return expand_dims(out, axes)

    return wrapped


def piecewise(x, condlist, funclist, *args, **kw):
    """`funclist[i](x)` where `condlist[i]` holds (the last true condition wins), else the
    default `funclist[len(condlist)]` (or 0 when there is none). Entries of `funclist` may
    be constants. Each function is applied to single elements, as in JAX.

    Args:
      x: the input array, of shape S.
      condlist: a bool array of shape S or a list of them.
      funclist: functions `f(x, *args, **kw)` or scalars; `len(condlist)` or one more.

    Returns:
      An array of shape S and the dtype of `x`.

    >>> mnp.piecewise(mnp.array([-1.0, 2.0]), [mnp.array([True, False])],
    ...               [lambda v: -v, lambda v: v * 10]).tolist()
    [1.0, 20.0]
    """
    from mytorch.numpy import argmax, concatenate, cumsum, zeros_like

    x = asarray_any(x)
    conds = asarray_any(condlist)
    if conds.ndim == x.ndim:  # one condition: a list of one
        conds = expand_dims(conds, 0)
    if conds.dtype != bool:
        conds = lax.ne(conds, 0)
    nc, nf = conds.shape[0], len(funclist)
    if x.size == 0 and nf in (nc, nc + 1):
        return zeros_like(x)  # no element picks a function
    if nf == nc + 1:
        funcs = [funclist[-1], *funclist[:-1]]
    elif nf == nc:
        funcs = [0, *funclist]
    else:
        raise ValueError(f"piecewise: with {nc} condition(s), either {nc} or {nc + 1} "
                         f"functions are expected; got {nf}{where()}")
    # branch k + 1 for the last true condition k, branch 0 (the default) for none
    steps = conds.astype("int32")
    idx = argmax(cumsum(concatenate([zeros_like(steps[:1]), steps], 0), 0), 0)
    dtype = x.dtype

    def branch(f):
        if callable(f):
            return lambda v: asarray_any(f(v, *args, **kw)).astype(dtype)
        return lambda v: _const(f, dtype)

    branches = [branch(f) for f in funcs]
    return vectorize(lax.switch, excluded=(1,))(idx, branches, x)


def _const(value, dtype):
    from mytorch.numpy.creation import array

    return array(value, dtype=dtype)
