"""The statements of a fused kernel's body: each value of a group computed at an index
(codegen.py's module doc describes the scheme), and exact C constants."""

import struct

import numpy as np

from mytorch.backends.cupy import expressions as cx
from mytorch.core import dtypes
from mytorch.core.ad_util import add_any_p, zeros_p
from mytorch.core.jaxpr import Literal
from mytorch.lax import elementwise as ew
from mytorch.lax import structural as st


class Index:
    """Where a value is read: its shape and either row-major coordinates (C expressions,
    one per dim) or its row-major linear offset (one C expression)."""

    __slots__ = ("shape", "dims", "linear")

    def __init__(self, shape, dims=None, linear=None):
        shape = tuple(shape)
        if not shape and dims is None and linear is None:  # a 0-d value's one element
            dims = ()
        self.shape, self.dims, self.linear = shape, dims, linear

    def key(self):
        return ("L", self.linear) if self.linear is not None else ("D", self.dims)


def _atom(c):
    """`c` parenthesised unless it is a name or a number."""
    return c if c.replace("_", "").isalnum() or c.startswith("(") else f"({c})"


def strides(shape):
    """Row-major element strides of `shape`."""
    out, acc = [], 1
    for d in reversed(shape):
        out.append(acc)
        acc *= d
    return tuple(reversed(out))


class Emitter:
    """Writes the statements that compute a group's values at given indices (one statement
    per equation and index, named temporaries), memoised by (value, index)."""

    def __init__(self, producers, inputs, idx_t, load=None):
        self.producers = producers  # {Var: (eqn, position of the output)}
        self.inputs = inputs  # {Var: kernel input number}
        self.idx_t = idx_t
        self.load = load or (lambda j, lin: f"in{j}[{lin}]")
        self.lines, self.memo, self.temps = [], {}, {}

    def _temp(self, expr, prefix="c"):
        if expr not in self.temps:
            name = f"{prefix}{len(self.temps)}"
            self.temps[expr] = name
            self.lines.append(f"const {self.idx_t} {name} = {expr};")
        return self.temps[expr]

    def dims(self, index):
        """The coordinates of `index` (C expressions, "0" on size-1 dims)."""
        if index.dims is not None:
            return index.dims
        return self.decompose(index.linear, index.shape)

    def decompose(self, lin, shape):
        """Row-major coordinates of the linear offset `lin` in `shape` (C expressions)."""
        out, st_ = [], strides(shape)
        for d, (size, stride) in enumerate(zip(shape, st_, strict=True)):
            if size == 1:
                out.append("0")
                continue
            e = lin if stride == 1 else f"{lin} / {stride}"
            if any(s != 1 for s in shape[:d]):  # an outer dim wraps this one
                e = f"{e} % {size}" if stride == 1 else f"({e}) % {size}"
            out.append(e if stride == 1 else f"({e})")
        return tuple(out)

    def linear(self, index):
        """The row-major linear offset of `index` (a C expression)."""
        if index.linear is not None:
            return index.linear
        terms = [c if s == 1 else f"{_atom(c)} * {s}"
                 for c, size, s in zip(index.dims, index.shape, strides(index.shape),
                                       strict=True) if size != 1 and c != "0"]
        if not terms:
            return "0"
        if len(terms) == 1:
            return terms[0]
        return self._temp(" + ".join(terms), "l")

    def value(self, v, index):
        """A C expression (a temporary's name or a constant) of `v` at `index`."""
        if type(v) is Literal:
            return literal(v.val, v.aval.dtype)
        key = (id(v), index.key())
        if key in self.memo:
            return self.memo[key]
        t = cx.ctype(v.aval.dtype)
        if v in self.inputs:
            j = self.inputs[v]
            expr, what = self.load(j, self.linear(index) if v.aval.shape else "0"), f"load in{j}"
        else:
            eqn, _ = self.producers[v]
            expr, what = self._eqn(eqn, index), eqn.primitive.name
        name = f"v{len(self.memo)}"
        self.lines.append(f"const {t} {name} = {expr};  /* {what} */")
        self.memo[key] = name
        return name

    def _eqn(self, eqn, index):
        prim, out = eqn.primitive, eqn.outvars[0]
        if prim is st.broadcast_in_dim_p:
            x = eqn.invars[0]
            dims = self.dims(index)
            at = tuple("0" if size == 1 else dims[d]
                       for size, d in zip(x.aval.shape, eqn.params["broadcast_dimensions"],
                                          strict=True))
            return self.value(x, Index(x.aval.shape, dims=at))
        if prim is st.squeeze_p and index.dims is not None:
            x, dims = eqn.invars[0], list(index.dims)
            for d in sorted(eqn.params["dimensions"]):
                dims.insert(d, "0")
            return self.value(x, Index(x.aval.shape, dims=tuple(dims)))
        if prim in (st.reshape_p, st.squeeze_p):
            x = eqn.invars[0]
            return self.value(x, Index(x.aval.shape, linear=self.linear(index)))
        if prim is st.iota_p:
            coord = self.dims(index)[eqn.params["dimension"]]
            src = np.int64 if self.idx_t == "long long" else np.int32
            return cx.convert(src, out.aval.dtype).format(f"({coord})")
        if prim is zeros_p:
            return literal(0, out.aval.dtype)
        ops = [self.value(x, index if x.aval.shape else Index(()))
               for x in eqn.invars]
        return elementwise_template(eqn).format(*ops)


def elementwise_template(eqn):
    """The C expression template of an elementwise equation (TypeError where none)."""
    prim = ew.add_p if eqn.primitive is add_any_p else eqn.primitive
    return cx.expression(prim, [x.aval.dtype for x in eqn.invars], eqn.outvars[0].aval.dtype,
                         **eqn.params)


def literal(val, dtype):
    """A C expression of the constant `val` as `dtype`, exact (bit patterns for floats)."""
    dtype = np.dtype(dtype)
    t = type(val)  # memoised by type and bits: -0.0 and NaN payloads stay apart
    if t is float:
        key = (t, struct.pack("<d", val), dtype)
    elif t is complex:
        key = (t, struct.pack("<dd", val.real, val.imag), dtype)
    elif t is bool or t is int:
        key = (t, val, dtype)
    else:  # NumPy scalars and 0-d arrays (a Literal's value)
        a = np.asarray(val)
        if a.ndim:
            return _literal(val, dtype)
        key = (a.dtype, a.tobytes(), dtype)
    text = _LITERALS.get(key)
    if text is None:
        if len(_LITERALS) > 4096:  # bounded: a sweep over constants must not grow it
            _LITERALS.clear()
        text = _LITERALS[key] = _literal(val, dtype)
    return text


_LITERALS = {}


def _literal(val, dtype):
    a = np.asarray(val).astype(dtype).reshape(())
    if dtype == np.bool_:
        return "true" if bool(a) else "false"
    if dtype.kind == "c":
        part = np.dtype(f"f{dtype.itemsize // 2}")
        c = cx.ctype(dtype)
        return f"{c.replace('mt_', 'mt_mk_')}({literal(a.real, part)}, {literal(a.imag, part)})"
    bits = int(a.view(f"u{dtype.itemsize}"))
    if dtype == np.float32:
        return f"mt_f32_from({bits:#x}u)"
    if dtype == np.float64:
        return f"mt_f64_from({bits:#x}ULL)"
    if dtype == np.float16:
        return f"__ushort_as_half((unsigned short){bits:#x})"
    if dtype == dtypes.bfloat16:
        return f"__ushort_as_bfloat16((unsigned short){bits:#x})"
    if dtype.kind in "iu":
        u = {1: "unsigned char", 2: "unsigned short", 4: "unsigned int",
             8: "unsigned long long"}[dtype.itemsize]
        wide = "ULL" if dtype.itemsize == 8 else "u"
        return f"(({cx.ctype(dtype)})({u}){bits:#x}{wide})"
    raise TypeError(f"fused kernel: no C constant for dtype {dtype}")
