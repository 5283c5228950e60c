"""The backend-independent buffer planner (mytorch/backends/planner.py) on small hand-built
jaxprs: which buffer each result may be written to, followed position by position as a code
generator drives it (ask for a buffer, record what was emitted, release what died)."""

import numpy as np

from mytorch.backends.planner import (
    FRESH, VIEW, BufferPlanner, Emitted, emitted, fresh, last_uses, view)
from mytorch.core.aval import ShapedArray
from mytorch.core.jaxpr import Jaxpr, JaxprEqn, Literal, Var
from mytorch.lax import elementwise as ew
from mytorch.lax import reductions as red
from mytorch.lax import structural as st

F32 = np.dtype(np.float32)


def _var(shape=(4, 3), dtype=F32):
    return Var(ShapedArray(shape, dtype))


def _eqn(prim, ins, outs):
    return JaxprEqn(prim, ins, {}, outs)


class _Driver:
    """Walks a jaxpr's equations in program order (one per position) as a generator does."""

    def __init__(self, jaxpr, donated=(), reuse=True, consts=()):
        self.jaxpr = jaxpr
        order = list(range(len(jaxpr.eqns)))
        self.planner = BufferPlanner(jaxpr, order, {}, reuse=reuse)
        self.names = {}
        for v in jaxpr.constvars:
            self.planner.constant(v, self._name(v))
        for k, v in enumerate(jaxpr.invars):
            self.planner.input(v, self._name(v), donated=k in donated)
        self.pos = 0

    def _name(self, v):
        self.names[v] = f"b{len(self.names)}"
        return self.names[v]

    def step(self, result=FRESH, **ask):
        """Emit the next equation: returns the buffer `buffer_for(**ask)` gave it (when
        asked), then records `result` (FRESH, VIEW of operand 0, or None) and releases."""
        eqn = self.jaxpr.eqns[self.pos]
        got = self.planner.buffer_for(eqn, self.pos, **ask) if ask else None
        out = {FRESH: fresh("e"), VIEW: view("e", 0), None: None}[result]
        for v in eqn.outvars:
            self._name(v)
        self.planner.record(eqn, out, self.names)
        self.planner.release([eqn], self.pos)
        self.pos += 1
        return got


def test_a_buffer_dying_at_an_op_is_reused_in_place():
    x, t, u = _var(), _var(), _var()
    jaxpr = Jaxpr([], [x], [_eqn(ew.exp_p, [x], [t]), _eqn(ew.neg_p, [t], [u])], [u])
    d = _Driver(jaxpr)
    assert d.step(in_place=True) is None  # x is not donated
    assert d.step(in_place=True) == d.names[t]  # t dies at neg


def test_a_buffer_read_later_or_returned_is_not_overwritten():
    x, t, u, w = _var(), _var(), _var(), _var()
    jaxpr = Jaxpr([], [x], [_eqn(ew.exp_p, [x], [t]), _eqn(ew.neg_p, [t], [u]),
                            _eqn(ew.sin_p, [t], [w])], [u, w])
    d = _Driver(jaxpr)
    d.step()
    assert d.step(in_place=True) is None  # t is read again by sin
    assert d.step(in_place=True) == d.names[t]  # its last reader
    end = _Driver(Jaxpr([], [x], [_eqn(ew.exp_p, [x], [t]), _eqn(ew.neg_p, [t], [u])],
                        [t, u]))
    end.step()
    assert end.step(in_place=True) is None  # t is an output: read at the end


def test_a_viewed_buffer_is_not_reused_while_its_view_lives():
    x, t, r, u, w, z = _var(), _var(), _var((12,)), _var(), _var((12,)), _var()
    eqns = [_eqn(ew.exp_p, [x], [t]), _eqn(st.reshape_p, [t], [r]),
            _eqn(ew.neg_p, [t], [u]),  # t's last reader, but the reshape still views it
            _eqn(ew.sin_p, [r], [w]),  # the view dies: t's buffer is free
            _eqn(ew.cos_p, [u], [z])]
    d = _Driver(Jaxpr([], [x], eqns, [w, z]))
    d.step()
    d.step(VIEW)
    assert d.step(in_place=True) is None
    assert d.step(in_place=True) is None  # w has another shape; r is not a root
    assert d.step(in_place=False) == d.names[t]  # the pool hands the dead root out


def test_donated_inputs_join_the_pool_and_other_inputs_never_do():
    for donated in (True, False):
        x, s, t = _var(), _var(()), _var()
        eqns = [_eqn(red.reduce_sum_p, [x], [s]), _eqn(ew.exp_p, [s], [t])]
        d = _Driver(Jaxpr([], [x], eqns, [t]), donated={0} if donated else ())
        d.step()  # x's last reader
        assert d.step(in_place=True) == (d.names[x] if donated else None)
        y, u = _var(), _var()
        d = _Driver(Jaxpr([], [y], [_eqn(ew.exp_p, [y], [u])], [u]),
                    donated={0} if donated else ())
        assert d.step(in_place=True) == (d.names[y] if donated else None)


def test_constants_zero_d_values_and_unknown_results_are_never_reused():
    c, x, t, u = _var(), _var(), _var(), _var()
    d = _Driver(Jaxpr([c], [x], [_eqn(ew.add_p, [c, x], [t])], [t]))
    assert d.step(in_place=True) is None  # a constant
    a, b, e = _var(()), _var(()), _var(())
    d = _Driver(Jaxpr([], [a], [_eqn(ew.exp_p, [a], [b]), _eqn(ew.neg_p, [b], [e])], [e]),
                donated={0})
    d.step(in_place=True)
    assert d.step(in_place=True) is None  # 0-d
    d = _Driver(Jaxpr([], [x], [_eqn(ew.exp_p, [x], [t]), _eqn(ew.neg_p, [t], [u])], [u]))
    d.step(None)  # a kernel call: its result may be anything (an operand, a cached array)
    assert d.step(in_place=True) is None


def test_a_variable_read_twice_by_the_same_op_is_not_overwritten():
    x, t, lo, u = _var(), _var(), _var(()), _var()
    eqns = [_eqn(ew.exp_p, [x], [t]), _eqn(ew.clamp_p, [lo, t, t], [u])]
    d = _Driver(Jaxpr([], [x, lo], eqns, [u]))
    d.step()
    # clamp may write over operand 1 only, which operand 2 (read after) also is
    assert d.step(in_place=True, only=(1,)) is None
    y, v = _var(), _var()
    eqns = [_eqn(ew.exp_p, [x], [t]), _eqn(ew.mul_p, [t, t], [v]), _eqn(ew.neg_p, [v], [y])]
    d = _Driver(Jaxpr([], [x], eqns, [y]))
    d.step()
    # an elementwise op reading `t * t` element by element may write over it
    assert d.step(in_place=True) == d.names[t]


def test_operand_shape_and_dtype_must_match_the_result():
    x, t, u = _var(), _var(dtype=np.dtype(np.float64)), _var()
    eqns = [_eqn(ew.convert_element_type_p, [x], [t]),
            _eqn(ew.convert_element_type_p, [t], [u])]
    d = _Driver(Jaxpr([], [x], eqns, [u]), donated={0})
    assert d.step(in_place=True) is None  # x is float32, t float64
    # t is not float32 either; the pool has x's buffer, dead since position 0
    assert d.step(in_place=True) == d.names[x]


def test_debug_nans_disables_reuse():
    x, t, u = _var(), _var(), _var()
    jaxpr = Jaxpr([], [x], [_eqn(ew.exp_p, [x], [t]), _eqn(ew.neg_p, [t], [u])], [u])
    d = _Driver(jaxpr, donated={0}, reuse=False)
    assert d.step(in_place=True) is None
    assert d.step(in_place=True) is None
    assert d.planner.take(u.aval) is None
    assert d.planner.overwrite(t, 1) is None


def test_a_fused_run_is_one_position_and_overwrite_claims_a_dying_input():
    x, t, u, w = _var(), _var(), _var(), _var()
    eqns = [_eqn(ew.exp_p, [x], [t]), _eqn(ew.neg_p, [t], [u]), _eqn(ew.sin_p, [x], [w])]
    jaxpr = Jaxpr([], [x], eqns, [u, w])
    runs = {0: [0, 1, 2]}
    assert last_uses(jaxpr, [0], runs) == {x: 0, t: 0, u: 1, w: 1}
    planner = BufferPlanner(jaxpr, [0], runs)
    planner.input(x, "a0", donated=True)
    assert planner.overwrite(x, 1) is None  # x dies at position 0
    assert planner.overwrite(x, 0) == "a0"
    assert planner.overwrite(x, 0) is None  # claimed once


def test_emitted_values():
    assert emitted(None) is None
    assert emitted("f(x)") == Emitted("f(x)", None)
    assert emitted(fresh("f(x)")).kind == FRESH
    v = view("x[1:]", 1, expanded=[1, 3])
    assert (v.kind, v.of, v.expanded) == (VIEW, 1, (1, 3))


def test_a_view_of_a_literal_is_a_read_only_root():
    x, b, u = _var(()), _var(), _var()
    eqns = [_eqn(st.broadcast_in_dim_p, [Literal(1.0, ShapedArray((), F32))], [b]),
            _eqn(ew.neg_p, [b], [u])]
    d = _Driver(Jaxpr([], [x], eqns, [u]))
    d.step(VIEW)
    assert d.step(in_place=True) is None
