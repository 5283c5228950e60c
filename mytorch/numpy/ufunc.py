"""`mnp.ufunc`: NumPy's universal-function objects, for the functions JAX makes ufuncs (add,
subtract, multiply, maximum, minimum, logaddexp, logaddexp2, the logical and bitwise
and/or/xor, negative).

Calling one is calling the function. The methods reduce, accumulate, outer and at follow
NumPy: an associative operation with a reduction primitive (sum, prod, max, ...) lowers to
it; others fold along the axis with `lax.scan`, so the result is NumPy's left fold.
"""

import operator

import numpy as np

from mytorch import lax
from mytorch.core import dtypes
from mytorch.core.source_info import user_error
from mytorch.numpy.comparisons import where as _where
from mytorch.numpy.creation import asarray, full
from mytorch.numpy.joining import stack
from mytorch.numpy.shapes import broadcast_to, expand_dims, moveaxis, reshape

__all__ = ["ufunc", "frompyfunc"]


class ufunc:  # noqa: N801  (NumPy's and JAX's name)
    """A function of `nin` arrays with NumPy's ufunc methods.

    Args:
      func: the elementwise function.
      nin, nout: its numbers of inputs and outputs.
      name: the name it prints with.
      identity: the value that leaves any operand unchanged, or None.
      reducer: the mnp reduction it amounts to (`sum` for add), or None.
      accumulator: the running reduction (`cumsum` for add), or None.
      at_method: the name of the `x.at[i]` update it amounts to ('add'), or None.
      reorderable: whether a reduction may combine elements in any order (not subtract).
      elementwise: what a call runs, where `func` itself is not elementwise (frompyfunc's
        vectorized scalar function); `func` by default.

    Two ufuncs are equal (and hash alike) when their func, nin, nout and identity are.
    """

    def __init__(self, func, nin, nout, *, name=None, identity=None, reducer=None,
                 accumulator=None, at_method=None, reorderable=True, elementwise=None):
        self._fields = (func, nin, nout, identity)
        self._elementwise = func if elementwise is None else elementwise
        self.__name__ = name or func.__name__
        self.__doc__ = func.__doc__
        self._reducer, self._accumulator, self._at = reducer, accumulator, at_method
        self._reorderable = reorderable

    def __call__(self, *args, **kwargs):
        return self._elementwise(*args, **kwargs)

    def __repr__(self):
        return f"<mnp.ufunc '{self.__name__}'>"

    def __eq__(self, other):
        if not isinstance(other, ufunc):
            return NotImplemented
        return self._fields == other._fields

    def __hash__(self):
        return hash(self._fields)

    # read-only, as NumPy's and JAX's: a ufunc is shared module state
    _func = property(lambda self: self._fields[0], doc="The elementwise function.")
    nin = property(lambda self: self._fields[1], doc="The number of inputs.")
    nout = property(lambda self: self._fields[2], doc="The number of outputs.")
    identity = property(lambda self: self._fields[3],
                        doc="The value that leaves any operand unchanged, or None.")

    @property
    def nargs(self):
        """The number of positional arguments: `nin`, as JAX's (NumPy's count also has
        `out`, which mytorch's ufuncs do not take)."""
        return self.nin

    def _binary(self, method):
        if self.nin != 2 or self.nout != 1:
            raise user_error(ValueError,
                             f"{self.__name__}.{method}: only supported for binary ufuncs "
                             f"with one output")

    def reduce(self, a, axis=0, dtype=None, out=None, keepdims=False, initial=None,
               where=None):
        """Combine the elements of `a` along `axis` (an int, a tuple, or None for all).

        `initial` starts the fold (the ufunc's identity when omitted, where it has one);
        `where` masks elements out (they act as the identity, so it needs one or
        `initial`). Returns an array of a's shape without the reduced axes (kept with
        length 1 when `keepdims`).
        """
        self._binary("reduce")
        if out is not None:
            raise user_error(TypeError,
                             f"{self.__name__}.reduce: out is not supported: mytorch arrays "
                            f"are immutable")
        x = asarray(a)
        if dtype is not None:
            x = x.astype(dtype)
        axes = _axes(f"{self.__name__}.reduce", axis, x.ndim)
        if len(axes) > 1 and not self._reorderable:
            raise user_error(ValueError,
                             f"{self.__name__}.reduce: {self.__name__} is not reorderable, so "
                             f"at most one axis may be given (got axis={axis!r} for "
                             f"{x.aval.str_short()})")
        mask = None
        if where is not None:
            # masked elements act as the identity; without one, a reduction primitive (max,
            # min: idempotent) sees `initial` there, and a fold skips them
            fill = initial if self.identity is None else self.identity
            if fill is None:
                raise user_error(ValueError,
                                 f"{self.__name__}.reduce: where= needs an initial value: "
                                 f"{self.__name__} has no identity")
            if self.identity is None and self._reducer is None:
                mask = broadcast_to(asarray(where), x.shape)
            else:
                x = _where(where, x, full((), fill, x.dtype))
        if self._reducer is not None:
            r = self._reducer(x, axis=axes, keepdims=keepdims)
            if initial is not None:
                r = self._elementwise(r, initial)
            return r
        r = self._fold(x, axes, initial, mask)
        return reshape(r, tuple(1 if i in axes else d for i, d in enumerate(x.shape))) \
            if keepdims else r

    def _fold(self, x, axes, initial, mask=None):
        """A left fold over the reduced axes (flattened into one, in C order); where `mask`
        (x's shape) is False the element is skipped (the fold then starts at `initial`)."""
        keep = [i for i in range(x.ndim) if i not in axes]
        x = lax.transpose(x, tuple(axes) + tuple(keep))
        n = int(np.prod([x.shape[i] for i in range(len(axes))], dtype=np.int64))
        rest = x.shape[len(axes):]
        x = reshape(x, (n,) + rest)
        if mask is not None:
            mask = reshape(lax.transpose(mask, tuple(axes) + tuple(keep)), x.shape)
            carry = lax.full_like(x[0] if n else full(rest, 0, x.dtype), initial)
            if n == 0:
                return carry

            def masked_step(c, vm):
                v, m = vm
                return _where(m, self._elementwise(c, v).astype(c.dtype), c), None

            return lax.scan(masked_step, carry, (x, mask))[0]
        if initial is None:
            if n == 0:
                if self.identity is None:
                    raise user_error(ValueError, f"{self.__name__}.reduce: zero-size array to a "
                                     f"reduction with no identity")
                return full(rest, self.identity, x.dtype)
            carry, xs = x[0], x[1:]
        else:
            carry, xs = lax.full_like(x[0] if n else full(rest, 0, x.dtype), initial), x
        if xs.shape[0] == 0:
            return carry
        step = lambda c, v: (self._elementwise(c, v).astype(c.dtype), None)  # noqa: E731
        return lax.scan(step, carry, xs)[0]

    def accumulate(self, a, axis=0, dtype=None, out=None):
        """The running reduction of `a` along `axis`: element i combines elements 0..i."""
        self._binary("accumulate")
        if out is not None:
            raise user_error(TypeError, f"{self.__name__}.accumulate: out is not supported")
        x = asarray(a)
        if dtype is not None:
            x = x.astype(dtype)
        if x.ndim == 0:
            raise user_error(ValueError, f"{self.__name__}.accumulate: a must have at least one "
                             f"dimension")
        axis = operator.index(axis)
        if not -x.ndim <= axis < x.ndim:
            raise user_error(ValueError,
                             f"{self.__name__}.accumulate: axis {axis} is out of bounds for "
                             f"{x.aval.str_short()}")
        if self._accumulator is not None:
            return self._accumulator(x, axis % x.ndim)
        y = moveaxis(x, axis, 0)
        if y.shape[0] == 0:
            return x
        step = lambda c, v: (lambda r: (r, r))(self._elementwise(c, v).astype(c.dtype))  # noqa: E731
        _, ys = lax.scan(step, y[0], y[1:])
        return moveaxis(lax.concatenate([expand_dims(y[0], 0), ys], 0), 0, axis)

    def reduceat(self, a, indices, axis=0, dtype=None, out=None):
        """NumPy's reduceat: entry j along `axis` folds func over a[indices[j]:indices[j+1]]
        (to the end for the last j), or is a[indices[j]] where indices[j] >= indices[j+1].
        `indices` is 1-D (it may be traced); the result has len(indices) along `axis`."""
        self._binary("reduceat")
        if out is not None:
            raise user_error(TypeError, f"{self.__name__}.reduceat: out is not supported")
        x = asarray(a)
        if dtype is not None:
            x = x.astype(dtype)
        if axis is None or isinstance(axis, tuple):
            raise user_error(ValueError, f"{self.__name__}.reduceat: axis must be an int, got "
                             f"{axis!r}")
        (ax,) = _axes(f"{self.__name__}.reduceat", axis, x.ndim)
        ind = asarray(indices)
        if ind.ndim != 1 or not dtypes.is_int(ind.dtype):
            raise user_error(TypeError, f"{self.__name__}.reduceat: indices must be a 1-D "
                             f"integer array, got {ind.aval.str_short()}")
        y = moveaxis(x, ax, 0)
        n, m = y.shape[0], ind.shape[0]
        if m == 0:
            return moveaxis(y[ind], 0, ax)
        start = reshape(ind, (m,) + (1,) * (y.ndim - 1))
        end = reshape(lax.concatenate([ind[1:], full((1,), n, ind.dtype)], 0), start.shape)

        def add_row(i, acc):  # row i joins every segment it lies strictly inside
            inside = (start < i) & (i < end)
            return _where(inside, self._elementwise(acc, y[i]).astype(acc.dtype), acc)

        return moveaxis(lax.fori_loop(0, n, add_row, y[ind]), 0, ax)

    def outer(self, a, b):
        """`func(a_i, b_j)` for every pair: shape a.shape + b.shape."""
        self._binary("outer")
        x, y = asarray(a), asarray(b)
        return self._elementwise(reshape(x, x.shape + (1,) * y.ndim), y)

    def at(self, a, indices, b=None, *, inplace=True):
        """`a` with `func(a[indices], b)` written at `indices`; a repeated index applies
        repeatedly, as NumPy's (through the `x.at[]` scatter for add, multiply, max, min; a
        scan over the positions otherwise). Arrays are immutable: pass inplace=False."""
        if inplace:
            raise user_error(ValueError, 
                f"{self.__name__}.at: mytorch arrays are immutable; pass inplace=False and "
                f"use the returned array")
        x = asarray(a)
        if self.nin == 1:
            return self._at_fold(x, indices, ())
        if b is None:
            raise user_error(TypeError, f"{self.__name__}.at: a binary ufunc needs the operand b")
        if self._at is not None:
            return getattr(x.at[indices], self._at)(b)
        return self._at_fold(x, indices, (b,))

    def _at_fold(self, x, indices, operands):
        """`at` without a scatter primitive: func applied at one position of the leading
        integer index arrays after another (a scan), so that a repeated index applies
        repeatedly, as NumPy's unbuffered `at`; other indices apply once."""
        idx = indices if isinstance(indices, tuple) else (indices,)
        n_lead = next((k for k, i in enumerate(idx) if not _is_int_index(i)), len(idx))
        lead, rest = [asarray(i) for i in idx[:n_lead]], idx[n_lead:]
        shape = np.broadcast_shapes(*[i.shape for i in lead]) if lead else ()
        if int(np.prod(shape)) <= 1 or not all(isinstance(i, slice) for i in rest):
            return x.at[indices].set(self._elementwise(x[indices], *operands).astype(x.dtype))
        picked = x[indices].shape  # shape + the sliced dims
        positions = stack([broadcast_to(i, shape).reshape(-1) for i in lead], axis=1)
        operands = [broadcast_to(asarray(o), picked).reshape((-1,) + picked[len(shape):])
                    for o in operands]

        def step(carry, xs):
            pos, *ops = xs
            at = tuple(pos[k] for k in range(n_lead)) + rest
            return carry.at[at].set(self._elementwise(carry[at], *ops).astype(carry.dtype)), None

        return lax.scan(step, x, (positions, *operands))[0]


def frompyfunc(func, /, nin, nout, *, identity=None):
    """A ufunc from `func`, a function of `nin` scalars returning `nout` scalars (a tuple
    when nout > 1): calls broadcast the arguments and map func over their elements
    (`mnp.vectorize`, hence vmap), and the methods (reduce, accumulate, outer, at,
    reduceat) follow NumPy's, as `jax.numpy.frompyfunc`. `identity` is the value that
    leaves any operand unchanged, or None."""
    from mytorch.numpy.vectorize import vectorize

    return ufunc(func, nin, nout, name=getattr(func, "__name__", "frompyfunc"),
                 identity=identity, elementwise=vectorize(func))


def _is_int_index(i):
    """Whether `i` indexes by integers (a Python or NumPy int, or an integer array or list),
    the kind of index that can repeat a position."""
    if isinstance(i, (slice, type(None), type(Ellipsis), bool, np.bool_)):
        return False
    dt = getattr(i, "dtype", None)
    return dtypes.is_int(np.dtype(dt if dt is not None else asarray(i).dtype))


def _axes(name, axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    out = []
    for ax in axes:
        ax = operator.index(ax)
        if not -ndim <= ax < ndim:
            raise user_error(ValueError, f"{name}: axis {ax} is out of bounds for an array of "
                             f"dimension {ndim}")
        out.append(ax % ndim)
    if len(set(out)) != len(out):
        raise user_error(ValueError, f"{name}: duplicate axis in {axis}")
    return tuple(sorted(out))


def make_ufuncs(ns):
    """Replace the functions JAX makes ufuncs, in the namespace dict `ns`, by ufuncs."""
    def wrap(name, nin=2, **kw):
        ns[name] = ufunc(ns[name], nin, 1, name=name, **kw)

    def logical_reduce(kind):
        return lambda x, axis, keepdims: ns[kind](x, axis=axis, keepdims=keepdims)

    wrap("add", identity=0, reducer=ns["sum"], accumulator=lambda x, ax: ns["cumsum"](x, ax),
         at_method="add")
    wrap("multiply", identity=1, reducer=ns["prod"],
         accumulator=lambda x, ax: ns["cumprod"](x, ax), at_method="multiply")
    wrap("maximum", reducer=ns["max"], accumulator=lambda x, ax: lax.cummax(x, ax),
         at_method="max")
    wrap("minimum", reducer=ns["min"], accumulator=lambda x, ax: lax.cummin(x, ax),
         at_method="min")
    wrap("subtract", identity=None, reorderable=False)
    wrap("logaddexp", identity=-np.inf,
         accumulator=lambda x, ax: lax.cumlogsumexp(x, ax) if dtypes.is_float(x.dtype)
         else lax.cumlogsumexp(x.astype(dtypes.default_float()), ax))
    wrap("logaddexp2", identity=-np.inf)
    wrap("logical_and", identity=True, reducer=logical_reduce("all"))
    wrap("logical_or", identity=False, reducer=logical_reduce("any"))
    wrap("logical_xor", identity=False)
    wrap("bitwise_and", identity=-1)
    wrap("bitwise_or", identity=0)
    wrap("bitwise_xor", identity=0)
    wrap("negative", nin=1)


