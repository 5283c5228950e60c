"""Comparing results computed on two devices: structure, dtypes, shapes, placement and
values, with tolerances per dtype."""

import ml_dtypes
import numpy as np

import mytorch as mt

BF16 = np.dtype(ml_dtypes.bfloat16)

# (rtol, atol) per dtype of the values compared: CUDA's libm and NumPy's may differ by a few
# ulps, and sums run in another order; float16/bfloat16 results are rounded from float32
# on both sides, so one rounding step apart at most
TOL = {
    np.dtype(np.float16): (4e-3, 2e-3),
    BF16: (1.6e-2, 1e-2),
    np.dtype(np.float32): (2e-5, 2e-6),
    np.dtype(np.complex64): (2e-5, 2e-6),
    np.dtype(np.float64): (1e-12, 1e-13),
    np.dtype(np.complex128): (1e-12, 1e-13),
}
# gradients run a chain of primitives (and sums in another order): looser
GRAD_TOL = {
    np.dtype(np.float16): (1e-2, 1e-2),
    BF16: (4e-2, 4e-2),
    np.dtype(np.float32): (2e-4, 2e-5),
    np.dtype(np.float64): (1e-10, 1e-12),
}


def leaves(tree):
    """The leaves of a pytree of results (a KeyArray counts as its key data)."""
    return mt.tree_util.tree_leaves(tree)


def host(x):
    """A leaf as a NumPy array on the host (bfloat16 stays bfloat16)."""
    return np.asarray(mt.device_get(x))


def assert_matches(got, want, *, device=None, tol=None, table=TOL, what="result"):
    """`got` (computed on `device`) equals `want` (the reference) leaf by leaf: the same
    pytree structure, dtypes and shapes, every array leaf of `got` placed on `device`,
    integers and bools exactly, floats within `tol` (rtol, atol) or the dtype's tolerance
    of `table`; NaNs and infinities in the same places."""
    got_tree = mt.tree_util.tree_structure(got)
    want_tree = mt.tree_util.tree_structure(want)
    assert got_tree == want_tree, f"{what}: structure {got_tree} != reference {want_tree}"
    for i, (g, w) in enumerate(zip(leaves(got), leaves(want), strict=True)):
        name = f"{what} leaf {i}"
        if device is not None and isinstance(g, mt.Array):
            assert g.device == device, f"{name} lives on {g.device}, expected {device}"
        g, w = host(g), host(w)
        assert g.dtype == w.dtype, f"{name}: dtype {g.dtype} != reference {w.dtype}"
        assert g.shape == w.shape, f"{name}: shape {g.shape} != reference {w.shape}"
        if g.dtype.kind in "biu" or g.dtype == bool:
            np.testing.assert_array_equal(g, w, err_msg=name)
            continue
        rtol, atol = tol or table.get(g.dtype, table[np.dtype(np.float32)])
        if g.dtype in (np.dtype(np.float16), BF16):
            g, w = g.astype(np.float32), w.astype(np.float32)
        with np.errstate(all="ignore"):  # subnormal values compare fine; no warning
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, equal_nan=True,
                                       err_msg=name)
