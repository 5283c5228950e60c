"""Transposition of linear jaxprs: the second half of reverse mode.

`backward_pass(jaxpr, consts, linear_in, cts_out)` walks the equations backwards. An
equation is linear when it reads a linear input or the result of a linear equation; the
others (which only read constants) are evaluated first, in order. Each linear equation's
primitive supplies a "transpose" rule

    rule(ct, *args, **params) -> [cotangent or None for each arg]

where the linear arguments arrive as `UndefinedPrimal(aval)` and the others as values, and
`ct` is the output cotangent (a list for primitives of several results). Equations whose
output cotangents are all symbolic zeros are skipped. A primitive of one result gets its
cotangent as an array; a primitive of several results gets a list in which the cotangent
of an unused result is a symbolic `Zero` (so a loop can drop carries whose cotangent stays
zero, and a call can leave them out of its transposed jaxpr): its rule instantiates only
what it must pass on as arrays (e.g. to a user's backward function). Rules bind
primitives under the current trace, so the backward pass is itself differentiable.
"""

from mytorch.core.ad_util import UndefinedPrimal, Zero, add_tangents, instantiate
from mytorch.core.jaxpr import Literal, Var
from mytorch.core.source_info import source_override


def backward_pass(jaxpr, consts, linear_in, args, cts_out):
    """Cotangents of the linear inputs of `jaxpr`.

    Args:
      jaxpr: a Jaxpr, linear in the inputs flagged by `linear_in`.
      consts: values of its constvars.
      linear_in: one bool per invar.
      args: values of the non-linear invars (anything for the linear ones).
      cts_out: one cotangent (array or Zero) per outvar.

    Transpose rules of multiple-result primitives receive their output cotangents with
    symbolic `Zero` entries left as they are (see the module docstring).

    Returns:
      One cotangent (array or Zero) per invar (Zero for the non-linear ones).
    """
    env = {}
    linear = set()
    for v, x in zip(jaxpr.constvars, consts, strict=True):
        env[v] = x
    for v, is_lin, x in zip(jaxpr.invars, linear_in, args, strict=True):
        if is_lin:
            linear.add(v)
        else:
            env[v] = x

    def read(v):
        return v.val if type(v) is Literal else env[v]

    # forward: evaluate what does not depend on the linear inputs; find the linear eqns
    linear_eqns = []
    for eqn in jaxpr.eqns:
        if any(type(v) is Var and v in linear for v in eqn.invars):
            linear_eqns.append(eqn)
            linear.update(v for v in eqn.outvars if type(v) is Var)
            continue
        outs = eqn.primitive.bind(*[read(v) for v in eqn.invars], **eqn.params)
        outs = outs if eqn.primitive.multiple_results else [outs]
        for v, x in zip(eqn.outvars, outs, strict=True):
            if type(v) is Var:
                env[v] = x

    cts = {}

    def write_ct(v, ct):
        if type(v) is not Var or v not in linear or ct is None:
            return
        prev = cts.get(v)
        cts[v] = ct if prev is None else add_tangents(prev, ct)

    for v, ct in zip(jaxpr.outvars, cts_out, strict=True):
        write_ct(v, ct)

    for eqn in reversed(linear_eqns):
        prim = eqn.primitive
        out_cts = [cts.pop(v, None) for v in eqn.outvars]
        out_cts = [Zero(v.aval) if ct is None else ct for v, ct in zip(eqn.outvars, out_cts)]
        if all(type(ct) is Zero for ct in out_cts):
            continue
        args_in = [
            UndefinedPrimal(v.aval) if type(v) is Var and v in linear else read(v)
            for v in eqn.invars
        ]
        ct_arg = out_cts if prim.multiple_results else instantiate(out_cts[0])
        rule = prim.rule("transpose", "reverse-mode differentiation")
        with source_override(eqn.source_info):  # backward work points at the forward line
            cts_in = rule(ct_arg, *args_in, **eqn.params)
        for v, ct in zip(eqn.invars, cts_in, strict=True):
            write_ct(v, ct)

    return [
        cts.get(v, Zero(v.aval)) if is_lin else Zero(v.aval)
        for v, is_lin in zip(jaxpr.invars, linear_in, strict=True)
    ]
