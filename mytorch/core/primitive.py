"""`Primitive`: a named operation with its rule table, and `bind`, which hands it to a trace.

Every primitive is defined once in mytorch/lax with its abstract evaluation and its rules
(jvp, transpose, batching, ...). Interpreters look rules up by name through `rule`; they
never test a primitive's name.
"""

from mytorch.core import trace as _trace
from mytorch.core.aval import ShapedArray, describe
from mytorch.core.source_info import user_error

_REGISTRY = {}


class Primitive:
    """A primitive operation.

    Attributes:
      name: the name printed in jaxprs.
      multiple_results: whether `bind` returns a list.
      rules: {rule name: function}: "jvp", "transpose", "batching", ...; also the jit
        passes' rewrites: "simplify" and "splat" (see mytorch/transforms/simplify.py).
      lowerings: {platform: eager kernel} for kernels that live with the primitive
        (elementwise ops); larger kernels are registered by the backends.
      kind: a short tag ("elementwise", "structural", "reduction", "linear", "call", ...)
        used by the registry test to decide which rules the primitive must have.
      impl: optional fn(*arrays, **params) that the eager trace calls instead of a kernel
        (call primitives such as jit).
      effectful: the primitive has a side effect (debug callbacks): passes never remove,
        merge, fold or reorder its equations.
      inline_param: for call primitives that compilation may inline, the name of the param
        holding the called Jaxpr (no constvars; its invars are the equation's operands).
    """

    def __init__(self, name, *, multiple_results=False, kind="other"):
        self.name = name
        self.multiple_results = multiple_results
        self.kind = kind
        self.rules = {}
        self.lowerings = {}
        self.impl = None
        self.linear = False
        self.effectful = False
        self.inline_param = None
        self._abstract_eval = None
        _REGISTRY[name] = self

    def __repr__(self):
        return self.name

    def bind(self, *args, **params):
        """Apply the primitive to `args` under the current trace."""
        out = _trace.current_trace().process_primitive(self, args, params)
        return out if self.multiple_results else out[0]

    # ---- definitions -------------------------------------------------------------------
    def def_abstract_eval(self, fn):
        """fn(*avals, **params) -> ShapedArray (or a list of them for multiple results)."""
        self._abstract_eval = fn
        return fn

    def def_rule(self, name, fn=None):
        """Register rule `name` (usable as a decorator)."""
        if fn is None:
            return lambda f: self.def_rule(name, f)
        self.rules[name] = fn
        return fn

    def def_jvp(self, fn):
        return self.def_rule("jvp", fn)

    def def_transpose(self, fn):
        return self.def_rule("transpose", fn)

    def def_batching(self, fn):
        return self.def_rule("batching", fn)

    def def_impl(self, fn):
        self.impl = fn
        return fn

    def def_lowering(self, platform, fn=None):
        if fn is None:
            return lambda f: self.def_lowering(platform, f)
        self.lowerings[platform] = fn
        return fn

    def def_linear(self):
        """Mark the primitive linear in all its array operands: its JVP is itself."""
        self.linear = True

    # ---- use ---------------------------------------------------------------------------
    def rule(self, name, needed_by=None):
        """The rule `name`, or NotImplementedError saying who needed it."""
        try:
            return self.rules[name]
        except KeyError:
            who = needed_by or name
            raise NotImplementedError(
                f"{who} needs the '{name}' rule of '{self.name}', which is not defined"
            ) from None

    def abstract_eval(self, *avals, **params):
        """Output avals as a list; bad operands raise TypeError/ValueError naming the
        primitive, the operands and the user's source line."""
        if self._abstract_eval is None:
            raise NotImplementedError(f"primitive '{self.name}' has no abstract evaluation")
        try:
            out = self._abstract_eval(*avals, **params)
        except (TypeError, ValueError) as err:
            raise _with_location(err, self.name, avals) from None
        return list(out) if self.multiple_results else [out]


def _with_location(err, name, avals):
    if getattr(err, "_mytorch_described", False):  # from a nested abstract evaluation
        return err
    msg = str(err)
    at = getattr(err, "_mytorch_at", None)
    if at is not None:  # raised with user_error: describe the operands before its line
        msg = msg[: len(msg) - len(at)] if at and msg.endswith(at) else msg
    if not msg.startswith(name):
        msg = f"{name}: {msg}"
    described = "operands:" in msg or " got " in msg
    if avals and not described and all(isinstance(a, ShapedArray) for a in avals):
        msg += f" (operands: {describe(avals)})"
    if getattr(err, "_mytorch_located", False) and at is None:
        return err
    new = user_error(type(err), msg, below=True)
    new._mytorch_described = True
    return new


def registry():
    """{name: Primitive} of every primitive defined so far."""
    return dict(_REGISTRY)
