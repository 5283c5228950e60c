"""NumPy jit lowering of `while`: the cond and body jaxprs are inlined into one generated
`while True:` loop (control_flow_loops.py); profiled code keeps them functions of their own
that `runtime.run_while` calls (no retracing either way)."""

from mytorch.backends.numpy import control_flow_loops as loops
from mytorch.backends.numpy.control_flow_inline import inlinable
from mytorch.backends.numpy.emitters import EMITTERS
from mytorch.backends.numpy.runtime import run_while
from mytorch.lax.while_loop import while_p


def _emit_while(g, eqn, args):
    """`helper(cond, body, ncc, nbc, [operands])`: a list of the final carry buffers."""
    p = eqn.params
    if inlinable(g):
        return f"{loops.while_loop(g, p)}({', '.join(args)})"
    cond_fn = g.subfunction(p["cond_jaxpr"], name="while_cond")
    body_fn = g.subfunction(p["body_jaxpr"], name="while_body")
    helper = g.hoist(run_while, "while")
    return (f"{helper}({cond_fn}, {body_fn}, {p['cond_nconsts']}, {p['body_nconsts']}, "
            f"[{', '.join(args)}])")


EMITTERS[while_p] = _emit_while

