"""`einsum` and `einsum_path`: Einstein summation lowered to pairwise `lax.dot_general`s.

Subscripts follow NumPy (with JAX's wider labels: any character but `,->.`, so digits
work too): `"ij,jk->ik"`, implicit output (`"ij,jk"`: the labels that occur
once, sorted, after any ellipsis dims), `...` for broadcast leading dims, repeated labels
within one operand (`"ii->i"`: a diagonal), and labels summed away. NumPy's interleaved form
`einsum(a, [0, 1], b, [1, 2], [0, 2])` works too.

Each operand is first reduced on its own (diagonals through a strided slice of the flattened
pair of axes, labels that occur nowhere else summed). Operands are then contracted two at a
time in an order chosen by a greedy search (cost of a step = the product of the sizes of
every label the two operands carry), each step one `dot_general` whose batch dims are the
labels both operands keep for later, and whose contracting dims are the shared labels that
are needed nowhere else.
"""

import math
import string

import numpy as np

from mytorch import lax
from mytorch.core import dtypes
from mytorch.core.array import Array
from mytorch.core.source_info import user_error
from mytorch.numpy._promote import asarray_any, promote_dtypes

__all__ = ["einsum", "einsum_path"]

_LETTERS = string.ascii_letters
_RESERVED = frozenset(",->.")  # labels are any other character: digits too, as in JAX


# ---- parsing ------------------------------------------------------------------------------
class _Spec:
    """Parsed subscripts: one label string per operand, the output labels, label sizes."""

    def __init__(self, terms, out, sizes, text):
        self.terms, self.out, self.sizes, self.text = terms, out, sizes, text


def _interleaved(args):
    """`(a, [0, 1], b, [1, 2], [0, 2])` -> ("ab,bc->ac", [a, b])."""
    args = list(args)
    out = args.pop() if len(args) % 2 else None
    ops, subs = args[0::2], args[1::2]

    def letters(sub):
        chars = []
        for s in sub:
            if s is Ellipsis:
                chars.append("...")
            elif isinstance(s, (int, np.integer)) and 0 <= s < len(_LETTERS):
                chars.append(_LETTERS[int(s)])
            else:
                raise user_error(ValueError,
                    f"einsum: sublist labels must be ints in [0, 52) or ..., got {s!r}")
        return "".join(chars)

    text = ",".join(letters(s) for s in subs)
    if out is not None:
        text += "->" + letters(out)
    return text, ops


def _split_term(term, ndim, k):
    """Labels of one operand's term, with '.' marking where ellipsis dims go."""
    if term.count("...") > 1 or term.replace("...", "").count("."):
        raise user_error(ValueError,
            f"einsum: subscripts {term!r} of operand {k} have a misplaced '.'")
    bad = [c for c in term.replace("...", "") if c in _RESERVED]
    if bad:
        raise user_error(ValueError,
            f"einsum: a label may be any character but ',', '-', '>' and '.' (besides "
            f"'...'), got {bad[0]!r} in {term!r}"
        )
    named = len(term.replace("...", ""))
    if "..." in term:
        if named > ndim:
            raise user_error(ValueError,
                f"einsum: operand {k} has rank {ndim} but subscripts {term!r} name {named} axes"
            )
        return term.replace("...", "."), ndim - named
    if named != ndim:
        raise user_error(ValueError,
            f"einsum: operand {k} has rank {ndim} but subscripts {term!r} name {named} axes; "
            "use '...' for the leading axes to broadcast"
        )
    return term, 0


def _parse(subscripts, shapes):
    text = subscripts.replace(" ", "")
    if text.count("->") > 1:
        raise user_error(ValueError,
            f"einsum: subscripts {subscripts!r} contain more than one '->'")
    ins, arrow, out = text.partition("->")
    in_terms = ins.split(",")
    if len(in_terms) != len(shapes):
        raise user_error(ValueError,
            f"einsum: subscripts {subscripts!r} name {len(in_terms)} operands but "
            f"{len(shapes)} were given"
        )
    split = [_split_term(t, len(s), k) for k, (t, s) in enumerate(zip(in_terms, shapes,
                                                                      strict=True))]
    n_ell = max((e for _, e in split), default=0)
    used = set(text)
    spare = [c for c in _LETTERS if c not in used]
    spare += [chr(0x3B1 + i) for i in range(max(0, n_ell - len(spare)))]
    ell = "".join(spare[:n_ell])
    terms = [t.replace(".", ell[n_ell - e:]) for t, e in split]
    if arrow:
        _split_term(out, len(out.replace("...", "")) + n_ell * ("..." in out), "output")
        if n_ell and "..." not in out:
            raise user_error(ValueError,
                f"einsum: the operands have broadcast ('...') dims but the output "
                f"{out!r} has no '...' to place them"
            )
        out = out.replace("...", ell)
    else:
        counts = {}
        for t in terms:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c in counts if counts[c] == 1 and c not in ell))
    _check_output(out, terms, subscripts)
    sizes = _label_sizes(terms, shapes, subscripts)
    return _Spec(terms, out, sizes, _display(terms, out))


def _check_output(out, terms, subscripts):
    if len(set(out)) != len(out):
        raise user_error(ValueError,
            f"einsum: the output subscripts of {subscripts!r} repeat a label")
    missing = set(out) - set("".join(terms))
    if missing:
        raise user_error(ValueError,
            f"einsum: output label {sorted(missing)[0]!r} of {subscripts!r} is in no operand"
        )


def _label_sizes(terms, shapes, subscripts):
    """{label: size}; sizes of one label must agree (1 broadcasts, as NumPy allows)."""
    sizes = {}
    for k, (term, shape) in enumerate(zip(terms, shapes, strict=True)):
        for c, d in zip(term, shape, strict=True):
            old = sizes.get(c)
            if old is None or old == 1:
                sizes[c] = d
            elif d not in (1, old):
                raise user_error(ValueError,
                    f"einsum: label {c!r} of {subscripts!r} has size {old} in one operand but "
                    f"{d} in operand {k} (shape {tuple(shape)})"
                )
    return sizes


def _display(terms, out):
    return ",".join(terms) + "->" + out


# ---- contraction order --------------------------------------------------------------------
def _keep(terms, out, skip):
    """Labels needed by the output or by an operand not in `skip`."""
    keep = set(out)
    for k, t in enumerate(terms):
        if k not in skip:
            keep.update(t)
    return keep


def _pair_result(terms, out, i, j):
    """The labels of the result of contracting terms i and j (batch, then free dims)."""
    a, b = terms[i], terms[j]
    keep = _keep(terms, out, (i, j))
    batch = [c for c in a if c in b and c in keep]
    return "".join(batch + [c for c in a if c not in b] + [c for c in b if c not in a])


def _cost(a, b, sizes):
    return math.prod(sizes[c] for c in set(a) | set(b))


def _reduced_terms(terms, out):
    """Terms after the per-operand reduction: diagonals taken, lone labels summed."""
    reduced = []
    for k, t in enumerate(terms):
        uniq = "".join(dict.fromkeys(t))
        keep = _keep(terms, out, (k,))
        reduced.append("".join(c for c in uniq if c in keep))
    return reduced


def _greedy_path(terms, out, sizes):
    """Pairs (i, j), i < j, into the list of operands (each result goes to its end)."""
    terms, path = list(terms), []
    while len(terms) > 1:
        best = None
        for i in range(len(terms)):
            for j in range(i + 1, len(terms)):
                res = _pair_result(terms, out, i, j)
                key = (_cost(terms[i], terms[j], sizes), math.prod(sizes[c] for c in res))
                if best is None or key < best[0]:
                    best = (key, i, j, res)
        _, i, j, res = best
        path.append((i, j))
        terms = [t for k, t in enumerate(terms) if k not in (i, j)] + [res]
    return path


def _left_to_right_path(n):
    if n < 2:
        return []
    return [(0, 1)] + [(0, n - k - 1) for k in range(1, n - 1)]


def _path_for(spec, terms, optimize):
    n = len(terms)
    if isinstance(optimize, (list, tuple)):
        path = [tuple(p) for p in optimize if p != "einsum_path"]
        if n == 1 and path in ([], [(0,)]):
            return []
        _check_path(path, n)
        return path
    if optimize is False or optimize is None or n <= 2:
        return _left_to_right_path(n)
    if optimize is True or optimize in ("greedy", "optimal", "auto"):
        return _greedy_path(terms, spec.out, spec.sizes)
    raise user_error(ValueError,
        f"einsum: optimize must be True, False, 'greedy' or a path from einsum_path, got "
        f"{optimize!r}"
    )


def _check_path(path, n):
    for p in path:
        if len(p) != 2 or not all(isinstance(i, (int, np.integer)) and 0 <= i < n for i in p) \
                or p[0] == p[1]:
            raise user_error(ValueError,
                f"einsum: path step {p!r} must be a pair of distinct operand positions "
                f"below {n} (mytorch contracts two operands at a time)"
            )
        n -= 1
    if n != 1:
        raise user_error(ValueError, f"einsum: the path {path!r} does not contract every operand")


def _path_cost(terms, out, sizes, path):
    """(total cost, largest intermediate size, steps as (scaling, current, remaining))."""
    terms, total, largest, steps = list(terms), 0, 0, []
    for i, j in path:
        res = _pair_result(terms, out, i, j)
        total += _cost(terms[i], terms[j], sizes)
        largest = max(largest, math.prod(sizes[c] for c in res))
        current = f"{terms[i]},{terms[j]}->{res}"
        scaling = len(set(terms[i]) | set(terms[j]))
        terms = [t for k, t in enumerate(terms) if k not in (i, j)] + [res]
        steps.append((scaling, current, ",".join(terms) + "->" + out))
    return total, largest, steps


def einsum_path(subscripts, *operands, optimize="greedy"):
    """The pairwise contraction order einsum would use, and a printable report.

    Args:
      subscripts: as for `einsum`. operands: arrays (only their shapes are used).
      optimize: "greedy" (or True), False (left to right) or an explicit path.

    Returns:
      `(path, report)`: `path` is `["einsum_path", (i, j), ...]` as NumPy gives it (each
      pair is contracted and the result appended to the end of the operand list); `report`
      is a string with the naive and optimised costs and each step.

    >>> path, report = einsum_path("ij,jk,kl->il", a, b, c)  # doctest: +SKIP
    """
    if not isinstance(subscripts, str):
        subscripts, operands = _interleaved((subscripts,) + operands)
    shapes = [tuple(np.shape(o)) if not isinstance(o, Array) else o.shape for o in operands]
    spec = _parse(subscripts, shapes)
    terms = _reduced_terms(spec.terms, spec.out)
    path = _path_for(spec, terms, optimize)
    total, largest, steps = _path_cost(terms, spec.out, spec.sizes, path)
    every = set("".join(spec.terms))
    naive = math.prod(spec.sizes[c] for c in every) * max(len(terms) - 1, 1)
    report = _report(spec, every, naive, total, largest, steps)
    return ["einsum_path"] + (path or [(0,)]), report


def _report(spec, every, naive, total, largest, steps):
    scaling = max((s for s, _, _ in steps), default=len(every))
    lines = [
        f"  Complete contraction:  {spec.text}",
        f"         Naive scaling:  {len(every)}",
        f"     Optimized scaling:  {scaling}",
        f"      Naive FLOP count:  {naive:.3e}",
        f"  Optimized FLOP count:  {total:.3e}",
        f"   Theoretical speedup:  {naive / max(total, 1):.3f}",
        f"  Largest intermediate:  {largest:.3e} elements",
        "-" * 74,
        "%6s %24s %40s" % ("scaling", "current", "remaining"),
        "-" * 74,
    ]
    lines += ["%4d    %24s %40s" % step for step in steps]
    return "\n".join(lines)


# ---- evaluation ---------------------------------------------------------------------------
def _sum_labels(x, labels, drop):
    axes = tuple(k for k, c in enumerate(labels) if c in drop)
    if not axes:
        return x, labels
    return lax.reduce_sum(x, axes), "".join(c for c in labels if c not in drop)


def _take_diagonal(x, labels, c):
    """Merge the first two axes labelled `c` into one (their diagonal), moved to the end."""
    p = labels.index(c)
    q = labels.index(c, p + 1)
    rest = [k for k in range(x.ndim) if k not in (p, q)]
    if rest + [p, q] != list(range(x.ndim)):
        x = lax.transpose(x, tuple(rest + [p, q]))
    n = x.shape[-1]
    lead = x.shape[:-2]
    x = lax.reshape(x, lead + (n * n,))
    zeros = (0,) * len(lead)
    x = lax.slice(x, zeros + (0,), lead + (n * n,), (1,) * len(lead) + (n + 1,))
    return x, "".join(labels[k] for k in rest) + c


def _prepare(x, labels, sizes, keep):
    """Drop broadcast size-1 axes, take diagonals, sum labels needed nowhere else."""
    squeeze = tuple(k for k, c in enumerate(labels) if x.shape[k] == 1 and sizes[c] != 1)
    if squeeze:
        x = lax.reshape(x, tuple(d for k, d in enumerate(x.shape) if k not in squeeze))
        labels = "".join(c for k, c in enumerate(labels) if k not in squeeze)
    for c in dict.fromkeys(labels):
        while labels.count(c) > 1:
            x, labels = _take_diagonal(x, labels, c)
    return _sum_labels(x, labels, set(labels) - keep)


def _contract(a, la, b, lb, keep, precision, preferred):
    """One dot_general: batch = shared labels kept for later, contract = other shared."""
    if a.dtype != b.dtype:  # an earlier step produced preferred_element_type
        common = dtypes.promote_types(a.dtype, b.dtype)
        a, b = lax.convert_element_type(a, common), lax.convert_element_type(b, common)
    shared = [c for c in la if c in lb]
    batch = [c for c in shared if c in keep]
    contract = [c for c in shared if c not in keep]
    dims = (
        (tuple(la.index(c) for c in contract), tuple(lb.index(c) for c in contract)),
        (tuple(la.index(c) for c in batch), tuple(lb.index(c) for c in batch)),
    )
    out = lax.dot_general(a, b, dims, precision=precision, preferred_element_type=preferred)
    labels = "".join(batch) + "".join(c for c in la if c not in lb) + "".join(
        c for c in lb if c not in la)
    return out, labels


def einsum(subscripts, *operands, optimize=True, precision=None, preferred_element_type=None):
    """Einstein summation over `operands` as described by `subscripts` (NumPy's notation).

    Args:
      subscripts: e.g. `"ij,jk->ik"`, `"...ij,...jk"`, `"ii->i"`, `"ij->"`; or NumPy's
        interleaved form `einsum(a, [0, 1], b, [1, 2], [0, 2])`.
      operands: arrays; they are promoted to one dtype (bool sums act as logical or).
      optimize: True/"greedy" (greedy pairwise order), False (left to right), or a path
        such as the first result of `einsum_path`.
      precision, preferred_element_type: passed to each `lax.dot_general`;
        `preferred_element_type` also sets the result dtype.

    Returns:
      The contracted array, with one axis per output label.

    >>> einsum("ij,jk->ik", ones((2, 3)), ones((3, 4))).shape  # doctest: +SKIP
    (2, 4)
    """
    if not isinstance(subscripts, str):
        subscripts, operands = _interleaved((subscripts,) + operands)
    if not operands:
        raise user_error(ValueError, "einsum: needs at least one operand")
    arrays = promote_dtypes("einsum", *[asarray_any(o) for o in operands])
    spec = _parse(subscripts, [a.shape for a in arrays])
    dtype = arrays[0].dtype
    preferred = None
    if preferred_element_type is not None:
        preferred = dtypes.canonicalize(preferred_element_type, explicit=True)
    is_bool = dtypes.is_bool(dtype)
    if is_bool:
        arrays = [lax.convert_element_type(a, dtypes.int32) for a in arrays]
    ops = []
    for k, (x, t) in enumerate(zip(arrays, spec.terms, strict=True)):
        ops.append(_prepare(x, t, spec.sizes, _keep(spec.terms, spec.out, (k,))))
    path = _path_for(spec, [t for _, t in ops], optimize)
    for i, j in path:
        terms = [t for _, t in ops]
        keep = _keep(terms, spec.out, (i, j))
        (a, la), (b, lb) = ops[i], ops[j]
        res = _contract(a, la, b, lb, keep, precision, preferred if not is_bool else None)
        ops = [o for k, o in enumerate(ops) if k not in (i, j)] + [res]
    out, labels = _sum_labels(*ops[0], set(ops[0][1]) - set(spec.out))
    if labels != spec.out:
        out = lax.transpose(out, tuple(labels.index(c) for c in spec.out))
    if is_bool:
        out = lax.ne(out, 0)
    if preferred is not None and out.dtype != preferred:
        out = lax.convert_element_type(out, preferred)
    return out
