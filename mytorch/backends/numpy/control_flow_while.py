"""NumPy jit lowering of `while`: the cond and body jaxprs are compiled once into their own
generated functions, and a runtime helper loops over them in Python (no retracing)."""

from mytorch.backends.numpy.emitters import EMITTERS
from mytorch.backends.numpy.runtime import run_while
from mytorch.lax.while_loop import while_p


def _emit_while(g, eqn, args):
    """`helper(cond, body, ncc, nbc, [operands])`: a list of the final carry buffers."""
    p = eqn.params
    cond_fn = g.subfunction(p["cond_jaxpr"], name="while_cond")
    body_fn = g.subfunction(p["body_jaxpr"], name="while_body")
    helper = g.hoist(run_while, "while")
    return (f"{helper}({cond_fn}, {body_fn}, {p['cond_nconsts']}, {p['body_nconsts']}, "
            f"[{', '.join(args)}])")


EMITTERS[while_p] = _emit_while

