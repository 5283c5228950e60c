"""Every primitive has the rules its kind requires, and docs/primitives.md lists them."""

import pathlib
import subprocess
import sys

import pytest

from mytorch import primitive_table as registry_table

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "primitives.md"

# rules every primitive of a kind must have; later capabilities add theirs here
EAGER = ("abstract eval", "cpu kernel")
REQUIRED = {
    kind: EAGER + ("jvp", "batching")
    for kind in ("elementwise", "structural", "indexing", "reduction", "sort", "contraction",
                 "window", "ad", "attention", "linalg", "fft")
}
# call primitives carry their own jaxprs; custom_lin exists only to be transposed
REQUIRED["call"] = EAGER + ("batching",)
# collectives run under vmap (batching rule) now; their device kernels come with pmap
REQUIRED["collective"] = ("abstract eval", "jvp", "batching")
# a backend's code generator rewrites jaxprs it compiles into these (never traced: no rules)
REQUIRED["backend"] = EAGER
# random-bit primitives hash integers: no derivative (integer tangents are symbolic zeros)
REQUIRED["random"] = EAGER + ("batching",)
# every backend lowers every elementwise primitive (the CuPy one through a C expression)
REQUIRED["elementwise"] += ("cuda expression",)
CALL_RULES = {
    "custom_jvp_call": ("jvp",),
    "custom_vjp_call": ("jvp",),
    "custom_lin": ("transpose",),
    "checkpoint": ("jvp", "transpose"),
    "jit": ("jvp", "transpose"),
    "cond": ("jvp", "transpose"),
    "scan": ("jvp", "transpose"),
    "while": ("jvp",),  # reverse mode: its "partial_eval" rule stages a scan
}


@pytest.mark.parametrize("name,kind,have", registry_table.rows(), ids=lambda v: str(v))
def test_primitive_has_required_rules(name, kind, have):
    assert kind in REQUIRED, f"primitive '{name}' has unknown kind '{kind}'"
    required = REQUIRED[kind] + (("transpose",) if have["linear"] else ())
    required += CALL_RULES.get(name, ())
    missing = [rule for rule in required if not have[rule]]
    assert not missing, f"primitive '{name}' ({kind}) lacks: {', '.join(missing)}"


def test_backend_columns_apply_by_kind():
    for name, kind, have in registry_table.rows():
        assert isinstance(have["cpu kernel"], bool), name
        assert (have["cuda expression"] is None) == (kind != "elementwise"), name


def test_docs_table_is_current():
    # made by a fresh interpreter: test modules register primitives of their own (test_*)
    # in this one's registry
    table = subprocess.run([sys.executable, "-m", "mytorch.primitive_table"],
                           capture_output=True, text=True, check=True).stdout
    assert DOC.read_text() == table, (
        "docs/primitives.md is stale: run "
        "`python -m mytorch.primitive_table > docs/primitives.md`"
    )


def test_issue_primitives_are_registered():
    names = {name for name, _, _ in registry_table.rows()}
    expected = {
        "neg", "abs", "sign", "floor", "ceil", "round", "exp", "exp2", "log", "log1p",
        "expm1", "sqrt", "rsqrt", "cbrt", "sin", "cos", "tan", "asin", "acos", "atan",
        "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "logistic", "erf", "erfc",
        "erf_inv", "lgamma", "digamma", "is_finite", "not", "integer_pow", "square",
        "reciprocal", "add", "sub", "mul", "div", "rem", "pow", "max", "min", "atan2",
        "nextafter", "and", "or", "xor", "shift_left", "shift_right_logical",
        "shift_right_arithmetic", "eq", "ne", "lt", "le", "gt", "ge", "select_n", "clamp",
        "convert_element_type", "bitcast_convert_type", "iota", "broadcast_in_dim",
        "reshape", "squeeze", "transpose", "rev", "pad", "concatenate", "slice",
        "dynamic_slice", "dynamic_update_slice", "gather", "scatter", "scatter_add",
        "scatter_mul", "scatter_min", "scatter_max", "reduce_sum", "reduce_max",
        "reduce_min", "reduce_prod", "reduce_and", "reduce_or", "argmax", "argmin", "cumsum",
        "cumprod", "cummax", "cumlogsumexp", "sort", "top_k", "dot_general",
        "conv_general_dilated", "reduce_window_max", "reduce_window_sum", "stop_gradient",
    }
    assert expected <= names, sorted(expected - names)
