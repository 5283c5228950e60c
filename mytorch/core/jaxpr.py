"""The jaxpr IR: variables, literals, equations, jaxprs; printing, type checking, evaluation.

    { lambda a:f32[3]; b:f32[2,3]. let
        c:f32[2,3] = tanh b
        d:f32[2] = reduce_sum[axes=(1,)] c
      in (d,) }

Constant variables come before the `;`, inputs after it. Every equation records the user
source line that created it (`source_info`), so errors and NaN reports point at user code.
"""

import numpy as np

from mytorch.core.aval import ShapedArray
from mytorch.core.trace import aval_of
from mytorch.errors import JaxprTypeError


class Var:
    """A jaxpr variable: only identity and an abstract value."""

    __slots__ = ("aval",)

    def __init__(self, aval):
        self.aval = aval

    def __repr__(self):
        return f"Var({self.aval.str_short()})"


class Literal:
    """A constant scalar inlined into an equation."""

    __slots__ = ("val", "aval")

    def __init__(self, val, aval):
        self.val, self.aval = val, aval

    def __repr__(self):
        return f"Literal({_literal_str(self)})"


class DropVar:
    """An equation output nobody reads (printed `_`)."""

    __slots__ = ("aval",)

    def __init__(self, aval):
        self.aval = aval


class JaxprEqn:
    """`outvars = primitive[params] invars`, recorded at `source_info`."""

    __slots__ = ("primitive", "invars", "params", "outvars", "source_info")

    def __init__(self, primitive, invars, params, outvars, source_info=None):
        self.primitive = primitive
        self.invars = list(invars)
        self.params = dict(params)
        self.outvars = list(outvars)
        self.source_info = source_info

    def replace(self, **kw):
        fields = dict(primitive=self.primitive, invars=self.invars, params=self.params,
                      outvars=self.outvars, source_info=self.source_info)
        fields.update(kw)
        return JaxprEqn(**fields)

    def __repr__(self):
        return _Printer().eqn(self)


class Jaxpr:
    """A typed, first-order program: constvars, invars, equations and outvars."""

    __slots__ = ("constvars", "invars", "eqns", "outvars", "debug_name")

    def __init__(self, constvars, invars, eqns, outvars, debug_name=None):
        self.constvars = list(constvars)
        self.invars = list(invars)
        self.eqns = list(eqns)
        self.outvars = list(outvars)
        self.debug_name = debug_name

    @property
    def in_avals(self):
        return [v.aval for v in self.invars]

    @property
    def out_avals(self):
        return [v.aval for v in self.outvars]

    def __str__(self):
        return _Printer().jaxpr(self)

    __repr__ = __str__

    def pretty_print(self):
        return str(self)


class ClosedJaxpr:
    """A jaxpr together with the values of its constvars."""

    __slots__ = ("jaxpr", "consts")

    def __init__(self, jaxpr, consts):
        if len(consts) != len(jaxpr.constvars):
            raise ValueError("ClosedJaxpr needs one constant per constvar")
        self.jaxpr, self.consts = jaxpr, list(consts)

    in_avals = property(lambda self: self.jaxpr.in_avals)
    out_avals = property(lambda self: self.jaxpr.out_avals)
    eqns = property(lambda self: self.jaxpr.eqns)

    def __str__(self):
        return str(self.jaxpr)

    __repr__ = __str__

    def pretty_print(self):
        return str(self)

    def __call__(self, *args):
        return eval_jaxpr(self.jaxpr, self.consts, *args)


# ---- structural keys (equal keys: the same program) ---------------------------------------
def params_key(params, keep):
    """A hashable key of an equation's params such that equal keys mean the same
    computation: jaxprs by structure (`jaxpr_key`), numbers by value (floats by their bits:
    -0.0 is not 0.0), other values by identity (appended to `keep`, which the caller holds
    for as long as it holds the key, so that ids stay unique)."""
    return tuple((name, _value_key(value, keep)) for name, value in params.items())


def _value_key(value, keep):
    kind = type(value)
    if kind in _SCALARS:
        return (kind, value)
    if kind is float or isinstance(value, np.floating):
        return (kind, float(value).hex())  # tells -0.0 from 0.0 (and NaN from NaN)
    if kind is tuple or kind is list:
        return (kind, tuple(_value_key(v, keep) for v in value))
    if kind is Jaxpr:
        return jaxpr_key(value, keep)
    if kind is ClosedJaxpr:
        return (jaxpr_key(value.jaxpr, keep), tuple(_identity(c, keep) for c in value.consts))
    if isinstance(value, (np.generic, np.dtype)):
        return (kind, value)
    return _identity(value, keep)  # arrays, functions, other objects: the same one


_SCALARS = frozenset({int, bool, str, type(None)})


def _identity(value, keep):
    keep.append(value)
    return ("id", id(value))


def jaxpr_key(jaxpr, keep):
    """The structure of `jaxpr`: its variables numbered in order of definition, each
    equation's primitive, params (recursively), operands, result types and source line
    (which debug_nans and error messages name). Equal keys mean the same program."""
    numbers = {}
    for v in (*jaxpr.constvars, *jaxpr.invars):
        numbers[v] = len(numbers)

    def operand(v):
        number = numbers.get(v)
        return number if number is not None else ("lit", v.aval, _value_key(v.val, keep))

    eqns = []
    for e in jaxpr.eqns:
        info = e.source_info
        eqns.append((e.primitive, params_key(e.params, keep), tuple(map(operand, e.invars)),
                     tuple((o.aval, type(o).__name__) for o in e.outvars),
                     None if info is None else (info.filename, info.lineno)))
        for o in e.outvars:
            numbers[o] = len(numbers)
    return (tuple(v.aval for v in jaxpr.constvars), tuple(v.aval for v in jaxpr.invars),
            tuple(eqns), tuple(map(operand, jaxpr.outvars)))


# ---- printing -------------------------------------------------------------------------
def _var_name(i):
    letters = "abcdefghijklmnopqrstuvwxyz"  # base 26 digits: ..., z, ba, bb, ...
    s = letters[i % 26]
    while i >= 26:
        i //= 26
        s = letters[i % 26] + s
    return s


def _literal_str(lit):
    v = np.asarray(lit.val)
    if v.dtype == object:  # a while loop's residual tape (lax/while_tape.py)
        return f"<tape>:{lit.aval.str_short()}"
    if v.size != 1:
        return f"{np.array2string(v, separator=',')}:{lit.aval.str_short()}"
    if v.dtype == np.bool_:
        text = "True" if v.item() else "False"
    elif v.dtype.kind == "f" or v.dtype.name == "bfloat16":
        text = repr(float(v.item()))
    elif v.dtype.kind == "c":
        text = repr(complex(v.item()))
    else:
        text = str(int(v.item()))
    return f"{text}:{lit.aval.str_short()}"


class _Printer:
    def __init__(self):
        self.names = {}

    def name(self, v):
        if isinstance(v, Literal):
            return _literal_str(v)
        if isinstance(v, DropVar):
            return "_"
        n = self.names.get(v)
        if n is None:
            n = self.names[v] = _var_name(len(self.names))
        return n

    def binder(self, v):
        return f"{self.name(v)}:{v.aval.str_short()}"

    def param(self, value, indent):
        if isinstance(value, ClosedJaxpr):
            value = value.jaxpr
        if isinstance(value, Jaxpr):
            inner = _Printer().jaxpr(value, indent + 4)
            return inner
        if isinstance(value, np.dtype):
            return value.name
        if isinstance(value, tuple) and value and isinstance(value[0], (Jaxpr, ClosedJaxpr)):
            return "(" + ", ".join(self.param(v, indent) for v in value) + ")"
        if callable(value) and hasattr(value, "__name__"):
            return value.__name__
        return repr(value) if isinstance(value, str) else str(value)

    def eqn(self, eqn, indent=0):
        lhs = " ".join(self.binder(v) for v in eqn.outvars) if eqn.outvars else "_"
        params = ""
        if eqn.params:
            params = "[" + ", ".join(
                f"{k}={self.param(v, indent)}" for k, v in sorted(eqn.params.items())
            ) + "]"
        rhs = " ".join(self.name(v) for v in eqn.invars)
        return f"{lhs} = {eqn.primitive.name}{params}{' ' if rhs else ''}{rhs}"

    def jaxpr(self, jaxpr, indent=0):
        consts = " ".join(self.binder(v) for v in jaxpr.constvars)
        ins = " ".join(self.binder(v) for v in jaxpr.invars)
        pad = " " * indent
        lines = [f"{pad}    {self.eqn(e, indent + 4)}" for e in jaxpr.eqns]
        outs = ", ".join(self.name(v) for v in jaxpr.outvars)
        outs = f"({outs},)" if len(jaxpr.outvars) == 1 else f"({outs})"
        head = f"{{ lambda {consts}; {ins}. let"
        if not lines:
            return f"{head}  in {outs} }}"
        return "\n".join([head, *lines, f"{pad}  in {outs} }}"])


# ---- checking -------------------------------------------------------------------------
def check_jaxpr(jaxpr):
    """Type-check a jaxpr (or ClosedJaxpr): every variable is bound once before use and
    every equation's outputs match its primitive's abstract evaluation of its inputs.

    Raises:
      JaxprTypeError: naming the offending equation and its source line.
    """
    if isinstance(jaxpr, ClosedJaxpr):
        for v, c in zip(jaxpr.jaxpr.constvars, jaxpr.consts, strict=True):
            if not _same_type(v.aval, aval_of(c)):
                raise JaxprTypeError(
                    f"constant for {v.aval.str_short()} has type {aval_of(c).str_short()}"
                )
        jaxpr = jaxpr.jaxpr
    bound = set()
    printer = _Printer()

    def bind(v, where):
        if isinstance(v, DropVar):
            return
        if not isinstance(v, Var):
            raise JaxprTypeError(f"{where}: binder {v!r} is not a Var")
        if v in bound:
            raise JaxprTypeError(f"{where}: variable {printer.name(v)} is bound twice")
        bound.add(v)

    def read(v, where):
        if isinstance(v, Literal):
            if not isinstance(v.aval, ShapedArray) or v.aval.shape != np.shape(v.val):
                raise JaxprTypeError(f"{where}: literal {v!r} has an inconsistent aval")
            return
        if v not in bound:
            raise JaxprTypeError(f"{where}: variable {printer.name(v)} is read before it is bound")

    for v in jaxpr.constvars:
        bind(v, "constvars")
    for v in jaxpr.invars:
        bind(v, "invars")
    for eqn in jaxpr.eqns:
        where = f"equation `{printer.eqn(eqn)}`" + (
            f" from {eqn.source_info}" if eqn.source_info is not None else ""
        )
        for v in eqn.invars:
            read(v, where)
        try:
            expected = eqn.primitive.abstract_eval(*[v.aval for v in eqn.invars], **eqn.params)
        except (TypeError, ValueError) as err:
            raise JaxprTypeError(f"{where}: {err}") from None
        if len(expected) != len(eqn.outvars):
            raise JaxprTypeError(
                f"{where}: {eqn.primitive.name} makes {len(expected)} outputs, "
                f"the equation binds {len(eqn.outvars)}"
            )
        for v, aval in zip(eqn.outvars, expected, strict=True):
            if not _same_type(v.aval, aval):
                raise JaxprTypeError(
                    f"{where}: output typed {v.aval.str_short()} but {eqn.primitive.name} "
                    f"gives {aval.str_short()}"
                )
        for sub in sub_jaxprs(eqn.params):
            check_jaxpr(sub)
        for v in eqn.outvars:
            bind(v, where)
    for v in jaxpr.outvars:
        read(v, "outvars")


def _same_type(a, b):
    return a.shape == b.shape and a.dtype == b.dtype


def sub_jaxprs(params):
    """The Jaxprs / ClosedJaxprs among an equation's params (also inside tuples)."""
    for value in params.values():
        values = value if isinstance(value, tuple) else (value,)
        for v in values:
            if isinstance(v, (Jaxpr, ClosedJaxpr)):
                yield v


# ---- evaluation -----------------------------------------------------------------------
def eval_jaxpr(jaxpr, consts, *args):
    """Evaluate `jaxpr` on `args` by binding each equation's primitive under the current
    trace (so evaluating inside a transformation transforms the program). A list."""
    env = {}
    for v, x in zip(jaxpr.constvars, consts, strict=True):
        env[v] = x
    if len(args) != len(jaxpr.invars):
        raise TypeError(f"jaxpr takes {len(jaxpr.invars)} arguments, got {len(args)}")
    for v, x in zip(jaxpr.invars, args, strict=True):
        env[v] = x

    def read(v):
        return v.val if type(v) is Literal else env[v]

    for eqn in jaxpr.eqns:
        outs = eqn.primitive.bind(*[read(v) for v in eqn.invars], **eqn.params)
        if not eqn.primitive.multiple_results:
            outs = (outs,)
        for v, x in zip(eqn.outvars, outs, strict=True):
            if type(v) is Var:
                env[v] = x
    return [read(v) for v in jaxpr.outvars]
