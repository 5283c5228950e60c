"""NumPy jit lowering of `while_tape` (the recording half of a while loop's reverse mode
with a run-time trip count): one generated loop that writes each step's residual rows into
stacked arrays (control_flow_loops.py); a vectorised loop, or rows of the tape's own type,
compile the jaxprs into functions of their own that `runtime.run_while_tape` loops over,
pushing rows onto the tape as lists. The scan that reads the rows back is
lowered with every scan, in control_flow_scan.py."""

from mytorch.backends.numpy.control_flow_while import _emit_while
from mytorch.backends.numpy import control_flow_loops as loops
from mytorch.backends.numpy.emitters import EMITTERS
from mytorch.backends.numpy.runtime import run_while_tape
from mytorch.core.jaxpr import Jaxpr, Var
from mytorch.lax.while_loop import while_p
from mytorch.lax.while_tape import while_tape_p
from mytorch.transforms.dce import dce_jaxpr


def _emit_while_tape(g, eqn, args):
    """`run_while_tape(cond, body, ...)`: the final carries and the tape buffer; a plain
    while loop when nothing reads the tape (its reader was pruned)."""
    p = eqn.params
    if not (type(eqn.outvars[-1]) is Var and g.is_read(eqn.outvars[-1])):
        body = p["body_jaxpr"]
        carries = dce_jaxpr(Jaxpr([], body.invars, body.eqns, body.outvars[:p["num_carry"]],
                                  body.debug_name))
        plain = dict(cond_jaxpr=p["cond_jaxpr"], body_jaxpr=carries,
                     cond_nconsts=p["cond_nconsts"], body_nconsts=p["body_nconsts"],
                     checkpoint_every=None)
        call = _emit_while(g, eqn.replace(primitive=while_p, params=plain), args)
        return f"[*{call}, None]"
    if loops.stackable(p):
        return f"{loops.while_tape_loop(g, p)}({', '.join(args)})"
    cond_fn = g.subfunction(p["cond_jaxpr"], name="while_tape_cond")
    body_fn = g.subfunction(p["body_jaxpr"], name="while_tape_body")
    helper = g.hoist(run_while_tape, "while_tape")
    return (f"{helper}({cond_fn}, {body_fn}, {p['cond_nconsts']}, {p['body_nconsts']}, "
            f"{p['num_carry']}, {tuple(p['batch_shape'])!r}, {p['every']!r}, "
            f"[{', '.join(args)}])")


EMITTERS[while_tape_p] = _emit_while_tape
