"""The ahead-of-time stages of a jitted function, as in JAX:

    traced = jit(f).trace(*args)     # Traced: .jaxpr, .in_avals, .out_info, .args_info
    lowered = traced.lower()         # Lowered: .as_text() (the generated code), .jaxpr
    compiled = lowered.compile()     # callable with the non-static arguments

Each stage is a view of one signature's cache entry in the jitted function (jit.py): tracing
here fills the same cache a call would, and a call afterwards reuses it.
"""

from mytorch.core import tree_util
from mytorch.core.array import ArrayImpl
from mytorch.core.trace import to_concrete

__all__ = ["ArgInfo", "Lowered", "Traced"]


class ArgInfo:
    """One array argument of a traced signature: its abstract value and whether it is
    donated."""

    __slots__ = ("aval", "donated")

    def __init__(self, aval, donated):
        self.aval, self.donated = aval, donated

    @property
    def shape(self):
        return self.aval.shape

    @property
    def dtype(self):
        return self.aval.dtype

    def __eq__(self, other):
        return isinstance(other, ArgInfo) and (self.aval, self.donated) == (
            other.aval, other.donated)

    def __hash__(self):
        return hash((self.aval, self.donated))

    def __repr__(self):
        return f"ArgInfo(aval={self.aval.str_short()}, donated={self.donated})"


class _Stage:
    """What Traced and Lowered both describe: the signature's arguments and outputs."""

    def __init__(self, fn, entry):
        self._fn, self._entry = fn, entry

    @property
    def fun_name(self):
        return self._fn._name

    @property
    def in_tree(self):
        """The treedef of `(args, kwargs)`, static arguments left out."""
        return self._entry.signature[0]

    @property
    def out_tree(self):
        return self._entry.out_tree

    @property
    def in_avals(self):
        """The abstract values of the array arguments, as the pytree `(args, kwargs)`."""
        return tree_util.tree_unflatten(self.in_tree, self._entry.closed.in_avals)

    @property
    def args_info(self):
        """`ArgInfo` per array argument, as the pytree `(args, kwargs)`."""
        infos = [ArgInfo(a, bool(d)) for a, d in
                 zip(self._entry.closed.in_avals, self._entry.donated, strict=True)]
        return tree_util.tree_unflatten(self.in_tree, infos)

    @property
    def out_avals(self):
        return tree_util.tree_unflatten(self.out_tree, self._entry.closed.out_avals)

    @property
    def out_info(self):
        """A ShapeDtypeStruct per output, as the output pytree."""
        from mytorch.debugging import ShapeDtypeStruct

        return tree_util.tree_unflatten(self.out_tree, [
            ShapeDtypeStruct(a.shape, a.dtype) for a in self._entry.closed.out_avals])

    @property
    def donate_argnums(self):
        return tuple(sorted(self._fn._donate))


class Traced(_Stage):
    """A traced signature of a jitted function: `.jaxpr` is the ClosedJaxpr traced from the
    function (before optimisation), `.lower()` compiles it."""

    @property
    def jaxpr(self):
        return self._entry.closed

    def lower(self):
        """The compiled program (`Lowered`) of this signature."""
        from mytorch.jit import _compile_entry

        if self._entry.executable is None:
            self._entry.executable = _compile_entry(self._entry, self._fn._name,
                                                    self._fn._backend_options)
        return Lowered(self._fn, self._entry)


class Lowered(_Stage):
    """A compiled signature of a jitted function: `.as_text()` is the generated code,
    `.jaxpr` the optimised jaxpr, `.timings` where compile time went (ms); it is its own
    `.compile()`, called with the non-static arguments."""

    def __init__(self, fn, entry):
        super().__init__(fn, entry)
        self.jaxpr = entry.executable.jaxpr
        self.timings = dict(entry.timings)

    def as_text(self):
        """The generated source code."""
        return self._entry.executable.text

    def compile(self):
        return self

    def __call__(self, *args, **kwargs):
        leaves, tree = tree_util.tree_flatten((args, kwargs))
        if tree != self.in_tree:
            raise TypeError(
                f"jit({self.fun_name}) was compiled for arguments of structure "
                f"{self.in_tree} (static arguments left out), but called with {tree}")
        outs = self._entry.executable.call([x if type(x) is ArrayImpl else _array(x, self)
                                            for x in leaves])
        return tree_util.tree_unflatten(self._entry.out_tree, outs)


def _array(x, stage):
    try:
        return to_concrete(x)
    except TypeError:
        raise TypeError(
            f"jit({stage.fun_name}): a compiled function takes arrays, got "
            f"{type(x).__name__}") from None
