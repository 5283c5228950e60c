"""Constant folding: evaluate at compile time what does not depend on the inputs.

An operand is known when it is a Literal or a constvar (a constant of the ClosedJaxpr, or
the result of an equation folded earlier). An equation whose operands are all known is
run eagerly (its primitive bound on the concrete values under the eager trace); a 0-d
result becomes a Literal that replaces its variable, a larger one a new constvar (the
result's variable itself):

    { lambda a:f32[3]; b:f32[3]. let            { lambda c:f32[3]; b:f32[3]. let
        c:f32[3] = mul a 2.0:f32[]          ->      e:f32[3] = add b c
        d:f32[] = add 1.0:f32[] 2.0:f32[]            f:f32[3] = mul e 3.0:f32[]
        e:f32[3] = add b c                         in (f,) }
        f:f32[3] = mul e d
      in (f,) }

Splats (an equation whose primitive's "splat" rule, a `SplatRule`, names the one known
scalar of every element: a `broadcast_in_dim` of a Literal, or `zeros`, registered in lax)
are not turned into constants, which would cost memory where a broadcast is cheap; they
are folded symbolically instead: an elementwise equation of splats and Literals becomes a
splat of its value computed on the scalars, and a splat operand of an elementwise equation
that has a full-shaped operand too is replaced by its Literal:

    d:f32[100,100] = broadcast_in_dim[shape=(100, 100), ...] 1.0:f32[]
    e:f32[100,100] = mul d 2.0:f32[]       ->   e = broadcast_in_dim[...] 2.0:f32[]
    f:f32[100,100] = mul e x               ->   f = mul 2.0:f32[] x

Never folded: effectful equations (their effect must happen at run time), collectives (they
need the named axes of a running pmap), calls (their bodies may hold either), equations
whose results would be large (more than `max_size` elements), and other equations that
expand their operands into more than `max_expand` elements (an equation without operands,
such as an iota of counters, is folded up to `max_size`: it is then built once, at compile
time, instead of on every call). An equation whose eager
evaluation fails (debug_nans, a primitive that refuses to run) is left for run time to
report. The constants that folded equations read are left in place: `dce_closed` drops
them, as it drops splats that nothing reads any more.
"""

from mytorch.core.jaxpr import ClosedJaxpr, JaxprEqn, Literal, Var
from mytorch.core.trace import EVAL_TRACE, set_current_trace
from mytorch.transforms.inline import open_jaxpr, rebuilt, rename_all, renamed

MAX_FOLD_SIZE = 100_000
MAX_EXPAND_SIZE = 64
_NEVER_FOLDED_KINDS = frozenset({"collective", "call", "random"})


def fold_constants(closed, max_size=MAX_FOLD_SIZE, max_expand=MAX_EXPAND_SIZE,
                   literals_only=False):
    """Evaluate equations whose operands are all Literals or constants, and fold splats.

    Args:
      closed: a ClosedJaxpr, or a (Jaxpr, consts) pair.
      max_size: fold only equations whose results hold at most this many elements.
      max_expand: fold an equation whose results are larger than its operands only
        when its results hold at most this many elements.
      literals_only: fold only equations whose results are all 0-d (they become
        Literals), so that no constvar is added: the jaxpr a loop or a branch calls keeps
        its signature.

    Returns:
      A value of the argument's kind (ClosedJaxpr or (Jaxpr, consts)), with the same
      invars and outvars (outputs that folded to 0-d values become Literals).

    >>> import mytorch as mt, mytorch.numpy as mnp
    >>> f = mt.grad(lambda x: mnp.sum(mnp.sin(x) * 2.0))
    >>> print(fold_constants(mt.make_jaxpr(f)(mnp.ones(3))))  # before: g = mul f 2.0
    { lambda ; a:f32[3]. let
        b:f32[3] = sin a
        c:f32[3] = cos a
        d:f32[3] = mul b 2.0:f32[]
        e:f32[] = reduce_sum[axes=(0,)] d
        f:f32[3] = broadcast_in_dim[broadcast_dimensions=(), shape=(3,)] 1.0:f32[]
        g:f32[3] = broadcast_in_dim[broadcast_dimensions=(), shape=(3,)] 2.0:f32[]
        h:f32[3] = mul 2.0:f32[] c
      in (h,) }
    """
    pair = isinstance(closed, tuple)
    if pair:
        jaxpr, consts = closed
    else:
        jaxpr, consts, _ = open_jaxpr(closed)
        if consts is None:
            raise TypeError("fold_constants needs a ClosedJaxpr or a (Jaxpr, consts) pair, "
                            "got a bare Jaxpr")
    folder = _Folder(dict(zip(jaxpr.constvars, consts, strict=True)), max_size, max_expand,
                     literals_only)
    constvars, consts = list(jaxpr.constvars), list(consts)
    subst, eqns, known = {}, [], folder.known
    for eqn in jaxpr.eqns:
        if subst:
            eqn = renamed(eqn, subst)
        outs = None
        if all(type(v) is Literal or v in known for v in eqn.invars):
            outs = folder.evaluate(eqn)
        if outs is None:
            if folder.splats and eqn.primitive.kind == "elementwise":
                eqn = folder.fold_splats(eqn)
            if type(eqn) is JaxprEqn:
                eqns.append(eqn)
            else:
                subst[eqn[0]] = eqn[1]
            continue
        for v, x in zip(eqn.outvars, outs, strict=True):
            if type(v) is not Var:
                continue
            if v.aval.ndim == 0:
                subst[v] = Literal(x, v.aval)
            else:
                folder.known[v] = x
                constvars.append(v)
                consts.append(x)
    out = rebuilt(jaxpr, eqns, rename_all(jaxpr.outvars, subst), constvars)
    return (out, consts) if pair else ClosedJaxpr(out, consts)


def _run(prim, args, params):
    """`prim` bound eagerly on concrete `args`: a list of results, or None if it fails."""
    try:
        with set_current_trace(EVAL_TRACE):
            outs = prim.bind(*args, **params)
    except Exception:  # noqa: BLE001 -- whatever the kernel raises, run time reports it
        return None
    return outs if prim.multiple_results else [outs]


class _Folder:
    """What is known so far: constants ({Var: array}) and splats ({Var: Literal})."""

    def __init__(self, known, max_size, max_expand, literals_only):
        self.known, self.splats, self.refused = known, {}, set()
        self.makers = {}  # {splat Var: the make function of its producer's SplatRule}
        self.max_size, self.max_expand = max_size, max_expand
        self.literals_only = literals_only

    def foldable(self, eqn):
        prim = eqn.primitive
        return not (prim.effectful or prim.kind in _NEVER_FOLDED_KINDS or not eqn.outvars)

    def evaluate(self, eqn):
        """The concrete results of `eqn`, whose operands are all known, if it is to be
        folded into constants; else None."""
        if not self.foldable(eqn) or self.is_splat_source(eqn):
            return None
        if self.literals_only and any(v.aval.ndim for v in eqn.outvars):
            return None
        known = self.known
        in_size = sum(v.aval.size for v in eqn.invars)
        out_size = sum(v.aval.size for v in eqn.outvars)
        # an equation without operands (iota) is computed once here rather than on every
        # call; others may not expand their operands into large constants
        if out_size > self.max_size or (eqn.invars and out_size > max(in_size, 1)
                                        and out_size > self.max_expand):
            return None
        args = [v.val if type(v) is Literal else known[v] for v in eqn.invars]
        outs = _run(eqn.primitive, args, eqn.params)
        if outs is None or any(x.shape != v.aval.shape or x.dtype != v.aval.dtype
                               for x, v in zip(outs, eqn.outvars, strict=True)):
            return None
        return outs

    # ---- splats -------------------------------------------------------------------------
    def is_splat_source(self, eqn):
        """Whether `eqn` makes a splat (recording its scalar when it does)."""
        out = eqn.outvars[0] if len(eqn.outvars) == 1 else None
        if out is None or type(out) is not Var or not out.aval.shape:
            return False
        rule = eqn.primitive.rules.get("splat")
        lit = rule.scalar(eqn) if rule is not None else None
        if lit is None:
            return False
        self.splats[out], self.makers[out] = lit, rule.make
        return True

    def fold_splats(self, eqn):
        """`eqn` with splat operands folded: a new equation (or `eqn`), or a pair
        (outvar, Literal) when a 0-d result is known."""
        splats = self.splats
        if not any(v in splats for v in eqn.invars) or len(eqn.outvars) != 1:
            return eqn
        if eqn.primitive.kind != "elementwise" or type(eqn.outvars[0]) is not Var \
                or not self.foldable(eqn):
            return eqn
        scalars = [splats.get(v, v) for v in eqn.invars]
        out = eqn.outvars[0]
        if all(type(v) is Literal for v in scalars):
            make = next(self.makers[v] for v in eqn.invars if v in splats)
            return self.splat_of_scalars(eqn, scalars, out, make)
        return self.scalar_operands(eqn, scalars, out)

    def splat_of_scalars(self, eqn, scalars, out, make):
        """An elementwise `eqn` of splats and Literals, computed once on the scalars (the
        new splat is built by `make`, from an operand's SplatRule)."""
        res = _run(eqn.primitive, [v.val for v in scalars], eqn.params)
        aval = out.aval.update(shape=())
        if res is None or res[0].aval.strip_weak() != aval.strip_weak():
            return eqn
        lit = Literal(res[0], aval)
        if not out.aval.shape:
            return out, lit
        self.splats[out], self.makers[out] = lit, make
        return make(lit, out, eqn.source_info)

    def scalar_operands(self, eqn, scalars, out):
        """`eqn` reading its splat operands as Literals, when the result is unchanged (some
        other operand has the full shape, and the primitive accepts 0-d operands)."""
        pattern = (eqn.primitive, *[v.aval for v in scalars])
        if pattern in self.refused:
            return eqn
        try:
            avals = eqn.primitive.abstract_eval(*[v.aval for v in scalars], **eqn.params)
        except (TypeError, ValueError):
            avals = None
        if avals != [out.aval]:
            self.refused.add(pattern)  # the error message costs more than the check
            return eqn
        return eqn.replace(invars=scalars)
