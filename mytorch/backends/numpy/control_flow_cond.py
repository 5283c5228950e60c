"""The NumPy code generator's lowering of `cond`: every branch is compiled into its own
function and the generated code calls the one the (0-d) index picks, at run time."""

from mytorch.backends.numpy.emitters import EMITTERS
from mytorch.lax.cond import cond_p


def _emit_cond(g, eqn, args):
    """`(branch0, branch1, ...)[clamped index](*operands)`: a list of buffers."""
    branches = eqn.params["branches"]
    names = [g.subfunction(b, name=f"branch{k}") for k, b in enumerate(branches)]
    table = g.hoist(tuple(g.ns[n] for n in names), "branches")
    last = len(branches) - 1
    pick = f"{table}[min(max(int({args[0]}), 0), {last})]"
    # the outputs may be the operands themselves (a branch returning an input): not fresh
    return f"{pick}({', '.join(args[1:])})"


EMITTERS[cond_p] = _emit_cond
