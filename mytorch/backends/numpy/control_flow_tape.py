"""NumPy jit lowering of `while_tape` and `tape_scan` (a while loop's reverse mode with a
run-time trip count): their jaxprs are compiled once into their own generated functions
and runtime helpers loop over them, pushing rows onto the tape or reading them back."""

from mytorch.backends.numpy.control_flow_while import _emit_while
from mytorch.backends.numpy.emitters import EMITTERS
from mytorch.backends.numpy.runtime import run_tape_scan, run_while_tape
from mytorch.core.jaxpr import Jaxpr, Var
from mytorch.lax.while_loop import while_p
from mytorch.lax.while_tape import _n_rows, tape_scan_p, while_tape_p
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
    cond_fn = g.subfunction(p["cond_jaxpr"], name="while_tape_cond")
    body_fn = g.subfunction(p["body_jaxpr"], name="while_tape_body")
    helper = g.hoist(run_while_tape, "while_tape")
    return (f"{helper}({cond_fn}, {body_fn}, {p['cond_nconsts']}, {p['body_nconsts']}, "
            f"{p['num_carry']}, {tuple(p['batch_shape'])!r}, {p['every']!r}, "
            f"[{', '.join(args)}])")


def _emit_tape_scan(g, eqn, args):
    """`run_tape_scan(step, ...)`: the final carries."""
    p = eqn.params
    step = g.subfunction(p["jaxpr"], name="tape_scan_step")
    helper = g.hoist(run_tape_scan, "tape_scan")
    n_rows = _n_rows(p["jaxpr"], p["num_consts"], p["num_carry"], p["batch_shape"])
    return (f"{helper}({step}, {p['num_consts']}, {p['reverse']}, "
            f"{tuple(p['batch_shape'])!r}, {n_rows}, [{', '.join(args)}])")


EMITTERS[while_tape_p] = _emit_while_tape
EMITTERS[tape_scan_p] = _emit_tape_scan
