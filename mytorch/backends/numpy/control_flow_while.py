"""NumPy jit lowering of `while`: the cond and body jaxprs are inlined into one generated
`while True:` loop (control_flow_loops.py), nothing retraced per iteration."""

from mytorch.backends.numpy import control_flow_loops as loops
from mytorch.backends.numpy.emitters import EMITTERS
from mytorch.lax.while_loop import while_p


def _emit_while(g, eqn, args):
    """A call of the loop generated for the while (control_flow_loops.while_loop): a list
    of the final carry buffers."""
    p = eqn.params
    return f"{loops.while_loop(g, p)}({', '.join(args)})"


EMITTERS[while_p] = _emit_while

