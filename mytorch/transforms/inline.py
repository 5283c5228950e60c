"""Inlining of call primitives, and the renaming helpers the other jaxpr passes share.

A call equation (`jit`, `custom_jvp_call`, `custom_vjp_call`, `checkpoint`: primitives whose
`inline_param` names the param holding the called Jaxpr) is replaced by the called jaxpr's
equations, with the callee's inputs renamed to the equation's operands:

    { lambda ; a:f32[3]. let                     { lambda ; a:f32[3]. let
        b:f32[3] = custom_jvp_call[                  c:f32[3] = sin a
          call_jaxpr={ lambda ; x:f32[3]. let   ->   in (c,) }
            y:f32[3] = sin x in (y,) }, ...] a
      in (b,) }

The inlined equations get fresh output variables (one callee may be inlined twice), and
the call's outputs are substituted by what the callee returns (a fresh variable, one of
the call's operands, or a literal) in later equations and in the jaxpr's outputs.

Passes never mutate their input: equations are shared between the input and the result
when they do not change, and replaced by new `JaxprEqn`s when they do.
"""

from mytorch.core.jaxpr import ClosedJaxpr, Jaxpr, Var


# ---- helpers shared by the passes -----------------------------------------------------
def renamed(eqn, subst):
    """`eqn` with its operands renamed through `subst` ({Var: Var or Literal}); `eqn`
    itself when none of its operands is renamed."""
    for v in eqn.invars:
        if v in subst:
            return eqn.replace(invars=[subst.get(u, u) for u in eqn.invars])
    return eqn


def rename_all(values, subst):
    """`values` (a list of Vars/Literals) renamed through `subst`."""
    return [subst.get(v, v) for v in values] if subst else list(values)


def open_jaxpr(jaxpr):
    """(Jaxpr, consts, close) for a Jaxpr or ClosedJaxpr: `close(new_jaxpr, new_consts)`
    rebuilds a value of the argument's kind (consts are dropped for a bare Jaxpr)."""
    if isinstance(jaxpr, ClosedJaxpr):
        return jaxpr.jaxpr, jaxpr.consts, ClosedJaxpr
    if isinstance(jaxpr, Jaxpr):
        return jaxpr, None, lambda j, consts: j
    raise TypeError(f"expected a Jaxpr or ClosedJaxpr, got {type(jaxpr).__name__}")


def rebuilt(jaxpr, eqns, outvars, constvars=None):
    """A new Jaxpr like `jaxpr` with other equations, outputs (and constvars)."""
    constvars = jaxpr.constvars if constvars is None else constvars
    return Jaxpr(constvars, jaxpr.invars, eqns, outvars, jaxpr.debug_name)


# ---- inlining ---------------------------------------------------------------------------
def inline_all(eqn):
    """The default predicate of `inline_calls`: inline every inlinable call."""
    return True


def inline_calls(jaxpr, should_inline=inline_all):
    """Replace call equations by the equations of the jaxprs they call, recursively.

    Args:
      jaxpr: a Jaxpr or ClosedJaxpr.
      should_inline: fn(eqn) -> bool, asked for each equation whose primitive has an
        `inline_param` (nested calls included); False keeps that call (and its body) as
        it is.

    Returns:
      A new jaxpr of the argument's kind computing the same outputs. Callees that are
      ClosedJaxprs with constants have them hoisted into the result's constvars (kept as
      calls when the argument is a bare Jaxpr, which cannot hold constants).

    >>> import mytorch as mt, mytorch.numpy as mnp
    >>> closed = mt.make_jaxpr(lambda x: mnp.logaddexp(x, x))(mnp.ones(3))
    >>> [e.primitive.name for e in closed.eqns]
    ['custom_jvp_call']
    >>> "custom_jvp_call" in str(inline_calls(closed))
    False
    """
    inner, consts, close = open_jaxpr(jaxpr)
    hoisted = [] if consts is not None else None
    inliner = _Inliner(should_inline, hoisted)
    env, eqns = {}, []
    inliner.run(inner.eqns, env, eqns, fresh=False)
    out = rebuilt(inner, eqns, rename_all(inner.outvars, env))
    if not hoisted:
        return close(out, consts)
    constvars = [*inner.constvars, *(v for v, _ in hoisted)]
    out = rebuilt(out, out.eqns, out.outvars, constvars)
    return ClosedJaxpr(out, [*consts, *(c for _, c in hoisted)])


class _Inliner:
    """Copies equations into an output list, expanding the calls it may inline."""

    def __init__(self, should_inline, hoisted):
        self.should_inline = should_inline
        self.hoisted = hoisted  # [(Var, const)] of callees' constants, or None

    def callee(self, eqn):
        """(Jaxpr, consts) that `eqn` calls if it is to be inlined, else None."""
        param = eqn.primitive.inline_param
        if param is None or not self.should_inline(eqn):
            return None
        called = eqn.params[param]
        consts = []
        if isinstance(called, ClosedJaxpr):
            called, consts = called.jaxpr, called.consts
        if called.constvars and (self.hoisted is None or len(consts) != len(called.constvars)):
            return None
        return called, consts

    def run(self, eqns, env, out, fresh):
        """Append `eqns` to `out` with operands renamed through `env`; with `fresh`, give
        every output a new Var (recorded in `env`)."""
        for eqn in eqns:
            target = self.callee(eqn)
            if target is not None:
                invars = [env.get(v, v) for v in eqn.invars] if env else eqn.invars
                self.expand(eqn, invars, *target, env, out)
            elif fresh:
                outvars = [Var(v.aval) if type(v) is Var else v for v in eqn.outvars]
                env.update(zip(eqn.outvars, outvars, strict=True))
                out.append(eqn.replace(invars=[env.get(v, v) for v in eqn.invars],
                                       outvars=outvars))
            else:
                out.append(renamed(eqn, env) if env else eqn)

    def expand(self, eqn, invars, called, consts, env, out):
        """Append the body of `called` for the call `eqn` (operands `invars`); map the
        call's outputs to the body's results in `env`."""
        inner_env = dict(zip(called.invars, invars, strict=True))
        for cv, c in zip(called.constvars, consts, strict=True):
            var = inner_env[cv] = Var(cv.aval)
            self.hoisted.append((var, c))
        self.run(called.eqns, inner_env, out, fresh=True)
        for o, inner_o in zip(eqn.outvars, called.outvars, strict=True):
            if type(o) is Var:
                env[o] = inner_env.get(inner_o, inner_o)
