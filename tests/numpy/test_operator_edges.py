"""Edges of the elementwise operators that ported JAX and NumPy code meets: spacing of the
16-bit floats (NumPy's own rules per dtype), polyval with N-d coefficient arrays, binary
operators deferring to NamedTuple operands, and lax.broadcast_shapes. Checked against NumPy,
under jit against eager, and under vmap against a loop."""

import operator
from typing import NamedTuple

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch import lax
from tests.strategies import arrays


# ---- lax.broadcast_shapes -------------------------------------------------------------------
@given(st.lists(st.lists(st.sampled_from([0, 1, 2, 3]), max_size=4).map(tuple),
                min_size=1, max_size=4))
def test_lax_broadcast_shapes_matches_numpy(shapes):
    try:
        ref = np.broadcast_shapes(*shapes)
    except ValueError:
        with pytest.raises(ValueError, match="broadcast_shapes"):
            lax.broadcast_shapes(*shapes)
        return
    assert lax.broadcast_shapes(*shapes) == ref
