"""Generated code for jit calls on pytrees: a guarded flattener of the arguments and a
builder of the outputs, specialised to one traced signature.

A cache hit of `jit(step)(model, opt_state, x, y)` would otherwise flatten the arguments
through the generic pytree recursion, build the full signature key (treedef, each leaf's
shape, dtype, weak type and device, ...) and look it up, then unflatten the outputs the
same way: about a microsecond per node. `tree_runner` instead writes, once per signature,
straight-line Python that walks exactly the recorded structure, checking every node's type,
child count and aux data and every leaf's type, shape, dtype, weak type and device against
what was recorded, and calls the signature's runner on the leaves. Any difference (or any
exception while checking) returns `MISS`, and the call takes the generic path, which then
decides (and raises) exactly as before: the guards only ever decline, never decide.

    def flat(args):
        try:
            x0, x1, x2 = args
            if type(x0) is not T0: return MISS
            c1, a1 = F0(x0)
            if a1 is not A0 and a1 != A0: return MISS
            l0, l1 = c1
            if type(l0) is not AI or l0._device is not dev ...: return MISS
            ...
        except Exception:
            return MISS
        return run([l0, l1, ...])

`tree_expression` writes the expression that builds an output pytree from its leaves (the
runner's return statement).
"""

import numpy as np

from mytorch.core.array import ArrayImpl
from mytorch.core.backend import default_device
from mytorch.core.tree_nodes import _DICT_NODE, _registry
from mytorch.core.trace import to_concrete
from mytorch.core.tree_util import tree_leaves

MISS = object()  # what a tree runner returns when the call does not match its signature

_TUPLE, _LIST, _NONE = _registry[tuple], _registry[list], _registry[type(None)]
_SCALARS = (bool, int, float, complex)


class _Writer:
    """Lines and constants of one generated function."""

    def __init__(self):
        self.lines, self.ns, self.count = [], {}, 0
        self.pairs, self.out = None, []  # (original, converted) leaves; their variables

    def name(self, prefix):
        self.count += 1
        return f"{prefix}{self.count}"

    def const(self, value, prefix="k"):
        name = self.name(prefix)
        self.ns[name] = value
        return name

    def emit(self, line):
        self.lines.append("        " + line)


def tree_runner(treedef, args, leaves, device, run):
    """A function `flat(args) -> outputs or MISS` for calls whose positional `args` (no
    keyword or static arguments) have the structure `treedef` (of `(tuple(args), {})`)
    and leaves of the same kinds and types as `args`, whose converted leaves are `leaves`
    (arrays on `device`); `run(leaves)` computes the outputs. None when some leaf is of a
    kind the generated checks do not cover (the generic path serves those calls)."""
    root = treedef._node
    if root is None or len(root[2]) != 2 or root[2][1] != (_DICT_NODE, (), ()):
        return None
    arg_nodes = root[2][0][2]
    if len(arg_nodes) != len(args):
        return None
    originals = tree_leaves(tuple(args))
    if len(originals) != len(leaves) or any(
            type(x) is not ArrayImpl or x._device is not device for x in leaves):
        return None
    w = _Writer()
    w.ns.update(MISS=MISS, AI=ArrayImpl, dev=device, run=run, NP=np.ndarray)
    names = [f"x{i}" for i in range(len(args))]
    w.emit(f"{', '.join(names)}{',' if len(names) == 1 else ''} = args" if names
           else "() = args")
    converted = any(type(x) is not ArrayImpl for x in originals)
    if converted:
        if default_device() is not device:
            return None
        w.ns["default_device"] = default_device
        w.emit("if default_device() is not dev: return MISS")
    w.pairs, w.out = iter(zip(originals, leaves, strict=True)), []
    for node, name in zip(arg_nodes, names, strict=True):
        if not _node(w, node, name):
            return None
    out = w.out
    if len(out) != len(leaves):
        return None
    lines = ["def flat(args):", "    try:", *w.lines,
             "    except Exception:", "        return MISS",
             f"    return run([{', '.join(out)}])"]
    exec(compile("\n".join(lines), "<jit tree runner>", "exec"), w.ns)
    return w.ns["flat"]


def _node(w, node, var):
    """Emit the checks of the subtree `node` held by the variable `var`; False when a leaf
    is of a kind the checks do not cover."""
    if node is None:
        return _leaf(w, var, *next(w.pairs))
    handler, aux, kids = node
    if handler is _NONE:
        w.emit(f"if {var} is not None: return MISS")
        return True
    typ = w.const(handler.type, "T")
    w.emit(f"if type({var}) is not {typ}: return MISS")
    kid_vars = [w.name("c") for _ in kids]
    if handler is _DICT_NODE:
        w.emit(f"if len({var}) != {len(kids)}: return MISS")
        for k, kv in zip(aux, kid_vars, strict=True):
            w.emit(f"{kv} = {var}[{w.const(k)}]")
    elif handler.fields is not None:  # read the instance's __dict__ (declare_fields)
        data, meta = handler.fields
        if len(data) != len(kids):
            return False
        d = w.name("d")
        w.emit(f"{d} = {var}.__dict__")
        if meta:
            want = w.const(aux, "A")
            got = ", ".join(f"{d}[{w.const(n)}]" for n in meta)
            w.emit(f"if ({got},) != {want}: return MISS")
        for n, kv in zip(data, kid_vars, strict=True):
            w.emit(f"{kv} = {d}[{w.const(n)}]")
    else:
        source = var
        if not handler.ident:
            source, got = w.name("ch"), w.name("aux")
            want = w.const(aux, "A")
            w.emit(f"{source}, {got} = {w.const(handler.flatten, 'F')}({var})")
            w.emit(f"if {got} is not {want} and {got} != {want}: return MISS")
        if kid_vars:
            w.emit(f"{', '.join(kid_vars)}, = {source}")
        else:
            w.emit(f"if len({source}) != 0: return MISS")
    for kid, kv in zip(kids, kid_vars, strict=True):
        if not _node(w, kid, kv):
            return False
    return True


def _leaf(w, var, original, leaf):
    """Emit the checks (and conversion) of one leaf; False for a kind not covered."""
    b = leaf._buf
    shape, dtype, weak = w.const(b.shape, "S"), w.const(b.dtype, "D"), leaf._weak
    t = type(original)
    if t is ArrayImpl:
        w.emit(f"if type({var}) is not AI or {var}._device is not dev or "
               f"{var}._weak is not {weak}: return MISS")
        w.emit(f"b = {var}._buf")
        w.emit(f"if b.shape != {shape} or (b.dtype is not {dtype} and b.dtype != {dtype}): "
               "return MISS")
    elif t is np.ndarray and original.dtype.kind in "biufc" and not weak:
        src = w.const(original.dtype, "N")
        put = w.const(leaf._device.backend.put, "P")
        w.emit(f"if type({var}) is not NP or {var}.shape != {shape} or "
               f"({var}.dtype is not {src} and {var}.dtype != {src}): return MISS")
        w.emit(f"{var} = AI({put}({var}.astype({dtype}, copy=False), dev), False, dev)")
    elif t in _SCALARS:
        w.ns["to_concrete"] = to_concrete
        w.emit(f"if type({var}) is not {w.const(t, 'T')}: return MISS")
        w.emit(f"{var} = to_concrete({var})")
        w.emit(f"b = {var}._buf")
        w.emit(f"if {var}._device is not dev or {var}._weak is not {weak} or "
               f"b.shape != {shape} or (b.dtype is not {dtype} and b.dtype != {dtype}): "
               "return MISS")
    else:
        return False
    w.out.append(var)
    return True


def _instance(cls, fields):
    """A new `cls` (no __init__ run) whose __dict__ is `fields`."""
    self = _new(cls)
    self.__dict__.update(fields)
    return self


_new = object.__new__


def tree_expression(tree, items, ns):
    """Python source of an expression building the pytree `tree` from the leaf expressions
    `items` (in order); constants it needs are added to the namespace `ns`."""
    it = iter(items)
    counter = [0]

    def const(value, prefix):
        counter[0] += 1
        name = f"_{prefix}{counter[0]}"
        ns[name] = value
        return name

    def build(node):
        if node is None:
            return next(it)
        handler, aux, kids = node
        parts = [build(k) for k in kids]
        if handler is _TUPLE:
            return f"({', '.join(parts)}{',' if len(parts) == 1 else ''})"
        if handler is _LIST:
            return f"[{', '.join(parts)}]"
        if handler is _NONE:
            return "None"
        if handler is _DICT_NODE:
            return "{" + ", ".join(f"{const(k, 'k')}: {p}"
                                   for k, p in zip(aux, parts, strict=True)) + "}"
        if handler.fields is not None:  # a new instance, its __dict__ filled in
            data, meta = handler.fields
            items = [f"{const(n, 'k')}: {const(a, 'a')}" for n, a in zip(meta, aux, strict=True)]
            items += [f"{const(n, 'k')}: {p}" for n, p in zip(data, parts, strict=True)]
            return f"_instance({const(handler.type, 't')}, {{{', '.join(items)}}})"
        return (f"{const(handler.unflatten, 'u')}({const(aux, 'a')}, "
                f"[{', '.join(parts)}])")

    ns["_instance"] = _instance
    expr = build(tree._node)
    if next(it, None) is not None:
        raise ValueError("tree_expression: more leaf expressions than leaves")
    return expr
