"""Gradient bucketing: merge a program's independent psums into a few flat psums.

A data-parallel gradient step ends with one `psum` (or `pmean`) per parameter tensor; a
model with hundreds of small tensors then pays a collective's fixed cost hundreds of times.
`bucket_psums` rewrites a jaxpr so that psums over the same axes, of one dtype, whose
operands do not depend on one another's results share one psum of a flat buffer (PyTorch
DDP's buckets):

    c:f32[3,4] = psum[axis_name=('i',)] a          a2:f32[12] = reshape a
    d:f32[4] = psum[axis_name=('i',)] b      ->    ab:f32[16] = concatenate a2 b
                                                   s:f32[16] = psum[axis_name=('i',)] ab
                                                   c2:f32[12] = slice s [0:12]
                                                   c:f32[3,4] = reshape c2
                                                   d:f32[4] = slice s [12:16]

Buckets are filled in the order the psums' operands become available in the program (for
a gradient: the order the backward pass produces them, last layer first) and each bucket's
psum is placed right after the last of its operands is computed, so a communicator that
runs collectives asynchronously can send the first buckets while later gradients are still
being computed. A bucket is closed, and a new one started, when the next operand would
take it past `bucket_bytes`, or when one of its results is read before the next operand is
ready (then that psum depends on the bucket, directly or not, and cannot join it).

Results are bit-for-bit those of the unbucketed program: a psum of a concatenation adds
the same elements, across the same replicas, in the same order.

The pass runs on the program and, each on its own, on every jaxpr its equations hold (jit
calls, loop bodies, cond branches), keeping their signatures.
"""

from mytorch.core.jaxpr import ClosedJaxpr, DropVar, Jaxpr, JaxprEqn, Var
from mytorch.core.source_info import user_error
from mytorch.lax.parallel import psum_p
from mytorch.lax.structural import concatenate_p, reshape_p, slice_p

__all__ = ["DEFAULT_BUCKET_BYTES", "bucket_psums"]

DEFAULT_BUCKET_BYTES = 25 * 2**20  # PyTorch DDP's default bucket_cap_mb


def bucket_psums(closed_jaxpr, bucket_bytes=DEFAULT_BUCKET_BYTES):
    """Merge the independent psums of `closed_jaxpr` into buckets of flat psums.

    Args:
      closed_jaxpr: a ClosedJaxpr (not modified), e.g. a pmap'd gradient step's body.
      bucket_bytes: the most operand bytes one merged psum carries (a psum larger than
        this on its own stays alone); a positive int.

    Returns:
      A ClosedJaxpr with the same constants, inputs and outputs (same avals) computing the
      same values bit for bit, whose psums over the same axis names and of one dtype (and
      weak type) are merged as described in the module docstring. Psums of literals or of
      empty arrays are left as they are.

    Raises:
      TypeError / ValueError: not a ClosedJaxpr, or `bucket_bytes` not a positive int.

    >>> import mytorch as mt, numpy as np
    >>> from mytorch import lax
    >>> box = []
    >>> def body():
    ...     f = lambda a, b: lax.psum((a, b), 'i')
    ...     box.append(mt.make_jaxpr(f)(np.ones((2, 3), np.float32), np.ones(4, np.float32)))
    ...     return 0.0
    >>> _ = mt.vmap(body, axis_name='i', axis_size=2)()
    >>> [e.primitive.name for e in bucket_psums(box[0]).eqns]
    ['reshape', 'concatenate', 'psum', 'slice', 'reshape', 'slice']
    """
    if not isinstance(closed_jaxpr, ClosedJaxpr):
        raise user_error(TypeError, "bucket_psums needs a ClosedJaxpr, got "
                                    f"{type(closed_jaxpr).__name__}")
    if type(bucket_bytes) is not int or bucket_bytes < 1:
        raise user_error(ValueError, "bucket_psums: bucket_bytes must be a positive int, got "
                                     f"{bucket_bytes!r}")
    return ClosedJaxpr(_bucket_jaxpr(closed_jaxpr.jaxpr, bucket_bytes), closed_jaxpr.consts)


# ---- one jaxpr ----------------------------------------------------------------------------
class _Bucket:
    """Psum equations merged into one: their positions, operand bytes, the position after
    which the merged psum goes (its last operand's) and the first position that reads one
    of its results (it must come later)."""

    __slots__ = ("members", "nbytes", "ready", "first_read")

    def __init__(self):
        self.members, self.nbytes, self.ready, self.first_read = [], 0, -1, float("inf")

    def add(self, i, nbytes, ready, first_read):
        self.members.append(i)
        self.nbytes += nbytes
        self.ready = max(self.ready, ready)
        self.first_read = min(self.first_read, first_read)


def _bucket_jaxpr(jaxpr, bucket_bytes):
    """`jaxpr` with its own psums bucketed and those of the jaxprs it holds too."""
    eqns = [_bucket_inner(e, bucket_bytes) for e in jaxpr.eqns]
    buckets = _form_buckets(eqns, jaxpr.outvars, bucket_bytes)
    if not any(len(b.members) > 1 for b in buckets) and all(
            a is b for a, b in zip(eqns, jaxpr.eqns, strict=True)):
        return jaxpr
    merged = {i for b in buckets for i in b.members}
    at = {}  # position -> the buckets emitted right after the equation there
    for b in buckets:
        at.setdefault(b.ready, []).append(b)
    out = [e for b in at.get(-1, ()) for e in _emit(b, eqns)]
    for i, eqn in enumerate(eqns):
        if i not in merged:
            out.append(eqn)
        out.extend(e for b in at.get(i, ()) for e in _emit(b, eqns))
    return Jaxpr(jaxpr.constvars, jaxpr.invars, out, jaxpr.outvars, jaxpr.debug_name)


def _bucket_inner(eqn, bucket_bytes):
    """`eqn` with every jaxpr among its params bucketed (`eqn` itself if none changes)."""
    def one(value):
        if isinstance(value, Jaxpr):
            return _bucket_jaxpr(value, bucket_bytes)
        if isinstance(value, ClosedJaxpr):
            inner = _bucket_jaxpr(value.jaxpr, bucket_bytes)
            return value if inner is value.jaxpr else ClosedJaxpr(inner, value.consts)
        return value

    params = {k: tuple(one(x) for x in v) if isinstance(v, tuple) else one(v)
              for k, v in eqn.params.items()}
    if all(_same(params[k], v) for k, v in eqn.params.items()):
        return eqn
    return eqn.replace(params=params)


def _same(new, old):
    if isinstance(old, tuple):
        return all(a is b for a, b in zip(new, old, strict=True))
    return new is old


def _mergeable(eqn):
    """Whether `eqn` is a psum that may join a bucket: a variable, non-empty operand."""
    if eqn.primitive is not psum_p or len(eqn.invars) != 1:
        return False
    x = eqn.invars[0]
    return type(x) is Var and x.aval.size > 0


def _form_buckets(eqns, outvars, bucket_bytes):
    """The buckets of the mergeable psums of `eqns`, in the order they are formed."""
    defined, first_read = {}, {}
    for i, eqn in enumerate(eqns):
        for v in eqn.invars:
            if type(v) is Var:
                first_read.setdefault(v, i)
        for v in eqn.outvars:
            defined[v] = i
    for v in outvars:
        if type(v) is Var:
            first_read.setdefault(v, len(eqns))
    psums = [i for i, e in enumerate(eqns) if _mergeable(e)]
    # the position of each psum's operand: inputs and constants are ready before eqn 0
    ready = {i: defined.get(eqns[i].invars[0], -1) for i in psums}
    buckets, open_ = [], {}
    for i in sorted(psums, key=lambda i: (ready[i], i)):
        x, y = eqns[i].invars[0].aval, eqns[i].outvars[0]
        key = (eqns[i].params["axis_name"], x.dtype, x.weak_type)
        nbytes = x.size * x.dtype.itemsize
        bucket = open_.get(key)
        if bucket is None or bucket.nbytes + nbytes > bucket_bytes \
                or bucket.first_read <= ready[i]:
            bucket = open_[key] = _Bucket()
            buckets.append(bucket)
        read = len(eqns) + 1 if type(y) is DropVar else first_read.get(y, len(eqns) + 1)
        bucket.add(i, nbytes, ready[i], read)
    return buckets


def _emit(bucket, eqns):
    """The equations computing the bucket's psum results: its one psum equation as it is,
    or reshape each operand to 1-D, concatenate, psum, slice and reshape back."""
    members = [eqns[i] for i in bucket.members]
    if len(members) == 1:
        return members
    out = []

    def add(prim, invars, params, source_info, outvar=None):
        aval = prim.abstract_eval(*[v.aval for v in invars], **params)[0]
        outvar = Var(aval) if outvar is None else outvar
        out.append(JaxprEqn(prim, invars, params, [outvar], source_info))
        return outvar

    flat = []
    for eqn in members:
        x = eqn.invars[0]
        flat.append(x if x.aval.ndim == 1 else
                    add(reshape_p, [x], dict(new_sizes=(x.aval.size,), dimensions=None),
                        eqn.source_info))
    first = members[0]
    joined = add(concatenate_p, flat, dict(dimension=0), first.source_info)
    summed = add(psum_p, [joined], dict(first.params), first.source_info)
    start = 0
    for eqn in members:
        x, y = eqn.invars[0], eqn.outvars[0]
        stop = start + x.aval.size
        if type(y) is not DropVar:
            params = dict(start_indices=(start,), limit_indices=(stop,), strides=None)
            if x.aval.ndim == 1:
                add(slice_p, [summed], params, eqn.source_info, y)
            else:
                piece = add(slice_p, [summed], params, eqn.source_info)
                add(reshape_p, [piece], dict(new_sizes=y.aval.shape, dimensions=None),
                    eqn.source_info, y)
        start = stop
    return out

