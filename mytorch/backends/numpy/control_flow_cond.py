"""The NumPy code generator's lowering of `cond`: every branch is compiled into its own
function and the generated code calls the one the (0-d) index picks, at run time."""

from mytorch.backends.numpy.emitters import EMITTERS
from mytorch.backends.numpy.runtime import run_branch
from mytorch.lax.cond import cond_p


def _emit_cond(g, eqn, args):
    """`run_branch((branch0, branch1, ...), index, [operands])`: a list of buffers."""
    branches = eqn.params["branches"]
    names = [g.subfunction(b, name=f"branch{k}") for k, b in enumerate(branches)]
    table = g.hoist(tuple(g.ns[n] for n in names), "branches")
    helper = g.hoist(run_branch, "cond")
    return f"{helper}({table}, {args[0]}, [{', '.join(args[1:])}])"


EMITTERS[cond_p] = _emit_cond
