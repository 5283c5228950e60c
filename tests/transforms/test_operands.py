"""operand_groups: splitting a flat operand list into named consecutive groups."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mytorch.transforms.operands import operand_groups

Ops = operand_groups("Ops", "consts carry xs")


@given(st.integers(0, 4), st.integers(0, 4), st.integers(0, 4))
def test_split_matches_slicing_and_flat_restores(nc, nk, nx):
    seq = list(range(nc + nk + nx))
    ops = Ops.split(seq, consts=nc, carry=nk)
    assert ops.consts == seq[:nc]
    assert ops.carry == seq[nc:nc + nk]
    assert ops.xs == seq[nc + nk:]
    assert ops.flat() == seq
    assert ops.sizes() == {"consts": nc, "carry": nk}
    assert Ops.split(ops.flat(), **ops.sizes()) == ops


@given(st.lists(st.booleans(), max_size=9), st.integers(0, 3), st.integers(0, 3))
def test_select_keeps_flagged_entries_in_order(flags, nc, nk):
    n = len(flags)
    nc, nk = min(nc, n), min(nk, n - min(nc, n))
    ops = Ops.split(range(n), consts=nc, carry=nk)
    mask = Ops.split(flags, **ops.sizes())
    assert ops.select(mask).flat() == [i for i, f in enumerate(flags) if f]
    assert ops.select(mask, False).flat() == [i for i, f in enumerate(flags) if not f]


def test_replace_and_errors():
    ops = Ops.split("abcde", consts=1, carry=2)
    assert ops.replace(carry=("x",)).flat() == ["a", "x", "d", "e"]
    with pytest.raises(TypeError, match=r"Ops.split: needs sizes for consts, carry"):
        Ops.split("abc", consts=1)
    with pytest.raises(ValueError, match=r"3 operands, but the leading groups need 4"):
        Ops.split("abc", consts=2, carry=2)
    with pytest.raises(ValueError, match=r"size of carry must be a non-negative int"):
        Ops.split("abc", consts=1, carry=-1)
    with pytest.raises(ValueError):  # flags of the wrong length
        ops.select(Ops([True], [True], [True]))
