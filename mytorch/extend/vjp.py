"""`def_vjp`: a user-defined primitive's reverse-mode derivative, stated by hand.

Reverse mode in mytorch is linearize + transpose. `def_vjp(prim, bwd)` fits a hand-written
backward pass into it with a second primitive, `<name>_vjp`, linear in its tangent
operands:

    JVP of prim:    out = prim(*xs);  out_dot = <name>_vjp(*xs, out, *x_dots)
    transpose:      the cotangents of x_dots are bwd(ct, out, *xs)

so grad, vjp, jacrev and their vmaps run `bwd`; forward mode (jvp, jacfwd) has no tangent
to compute and says so. `bwd` is written with mytorch operations, so it is differentiated
again for higher derivatives.
"""

from mytorch.core.ad_util import Zero, is_undefined
from mytorch.core.aval import ShapedArray
from mytorch.core.source_info import user_error
from mytorch.core.trace import aval_of
from mytorch.extend.primitives import ExtensionPrimitive

__all__ = ["def_vjp"]


def def_vjp(prim, bwd=None):
    """Define `prim`'s reverse-mode derivative by its backward pass (usable as a
    decorator). Use it where the VJP is cheaper or more stable than transposing a JVP.

    Args:
      prim: an `ExtensionPrimitive`.
      bwd: `bwd(ct, out, *operands, **params) -> sequence` with one cotangent per operand
        (its shape and dtype; None for zero or for an operand that is not differentiable).
        `ct` has the result's shape and dtype, `out` is the result (lists of both for
        several results). Write it with mytorch operations.

    Returns:
      `bwd`.

    Forward mode (mt.jvp, jacfwd) of `prim` raises NotImplementedError: define the JVP
    with `def_jvp` instead to have both.
    """
    if bwd is None:
        return lambda f: def_vjp(prim, f)
    lin_p = ExtensionPrimitive(f"{prim.name}_vjp", multiple_results=prim.multiple_results)

    @lin_p.def_abstract_eval
    def _lin_abstract_eval(*avals, _live, _n_out, **params):
        outs = avals[len(_live):len(_live) + _n_out]
        out = [ShapedArray(o.shape, o.dtype) for o in outs]
        return out if prim.multiple_results else out[0]

    def _lin_kernel(*bufs, **params):
        raise NotImplementedError(
            f"forward-mode differentiation (jvp, jacfwd) of '{prim.name}' needs its JVP: it "
            f"has only a backward pass (mx.def_vjp); define mx.def_jvp({prim.name}_p, rule) "
            "for forward mode")

    from mytorch.backends.numpy import numpy_backend

    numpy_backend.register(lin_p)(_lin_kernel)

    def jvp(primals, tangents, **params):
        out = prim.bind(*primals, **params)
        outs = list(out) if prim.multiple_results else [out]
        live = tuple(type(t) is not Zero for t in tangents)
        dots = [t for t in tangents if type(t) is not Zero]
        out_dot = lin_p.bind(*primals, *outs, *dots, _live=live, _n_out=len(outs), **params)
        return out, out_dot

    def transpose(ct, *args, _live, _n_out, **params):
        n, n_out = len(_live), _n_out
        primals, outs = list(args[:n]), list(args[n:n + n_out])
        cts_lin = ct if prim.multiple_results else [ct]
        lin = args[n + n_out:]
        if all(type(c) is Zero for c in cts_lin):
            return [None] * (n + n_out) + [Zero(x.aval) for x in lin]
        if prim.multiple_results:
            ct = [_instantiate(c, o) for c, o in zip(ct, outs, strict=True)]
            out = outs
        else:
            out = outs[0]
        cts = list(bwd(ct, out, *primals, **params))
        if len(cts) != n:
            raise user_error(TypeError, f"the backward pass of '{prim.name}' (mx.def_vjp) "
                                        f"returned {len(cts)} cotangents for {n} operands")
        mine = [_check_ct(prim, c, p) for c, p, on in zip(cts, primals, _live, strict=True)
                if on]
        return [None] * (n + n_out) + [c if is_undefined(x) else None
                                       for c, x in zip(mine, lin, strict=True)]

    lin_p.def_transpose(transpose)
    prim.def_jvp(jvp)
    return bwd


def _instantiate(ct, out):
    if type(ct) is not Zero:
        return ct
    from mytorch.core.ad_util import zeros

    return zeros(aval_of(out))


def _check_ct(prim, ct, operand):
    aval = aval_of(operand)
    if ct is None or type(ct) is Zero:
        return Zero(aval)
    got = aval_of(ct)
    if got.shape != aval.shape or got.dtype != aval.dtype:
        raise user_error(TypeError, f"the backward pass of '{prim.name}' (mx.def_vjp) "
                                    f"returned a cotangent {got.str_short()} for an operand "
                                    f"{aval.str_short()}: a cotangent has its operand's "
                                    "shape and dtype")
    return ct

