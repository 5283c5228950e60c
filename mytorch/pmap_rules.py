"""The `pmap` call primitive: its replicas, their compilation and execution, and its rules.

`pmap_p` carries the per-replica jaxpr (constant-free) and runs it once per device:

    jaxpr       the body, on one replica's operands (mapped operands without their axis 0)
    axis_name   the name collectives in the body use for the replicas
    axis_size   the number of replicas n (= len(devices))
    devices     the Devices, replica i on devices[i]
    in_mapped   one flag per operand: mapped operands are global (n, ...), replica i reading
                [i]; the others are read whole by every replica
    out_mapped  one flag per result: mapped results are stacked (n, ...), a ShardedArray;
                the others are replica 0's
    name        the function's name
    donated     one flag per operand: its buffers may be overwritten

Execution compiles the body once per device (`Backend.compile` with the axis environment
and the replica's communicator in its `CompileOptions`), checks once that every replica
would run the same collectives (`Communicator.check_schedule`), then runs the replicas
concurrently, replica 0 on the calling thread and the others on one persistent thread per
device. NumPy releases the GIL in its kernels, so the replicas overlap.

Rules: pmap's operands and results carry a mapped flag each, so a rule's new call must say,
for every operand and result it makes, whether it is mapped. The generic call rules
(`transforms/call_rules.py`) rebind from a jaxpr and an operand count only, so pmap
writes its own, from the same building blocks (jvp_call_jaxpr, partial_eval_jaxpr,
backward_pass, batch_jaxpr, dce_live):
  * jvp: tangents are mapped like their primals;
  * partial evaluation: residuals are per replica, so mapped;
  * transpose: the cotangent of an unmapped operand is the sum over replicas (a psum in
    the transposed body); an unmapped result is replica 0's, so its cotangent reaches
    replica 0 only;
  * batching: vmap's batch dimensions are global; an operand mapped at 0 and batched at d
    is batched at d - 1 in the body (a batch dimension 0 is first moved to 1);
  * dce: drops unused results and operands with their flags.
"""

import contextlib
import hashlib
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from threadpoolctl import ThreadpoolController

from mytorch.core import dtypes
from mytorch.core.ad_util import Zero, instantiate, is_differentiable, is_undefined
from mytorch.core.array import ArrayImpl
from mytorch.core.backend import CompileOptions
from mytorch.core.config import config
from mytorch.core.jaxpr import ClosedJaxpr, Jaxpr, Var
from mytorch.core.primitive import Primitive
from mytorch.core.sharded import ShardedArray, sharded_aval
from mytorch.core.source_info import user_error
from mytorch.core.staging import StagingTrace
from mytorch.core.trace import aval_of, set_current_trace
from mytorch.distributed.bucketing import bucket_psums
from mytorch.errors import CollectiveError
from mytorch.jit_rules import _DonatedBuffer
from mytorch.transforms.batching import batch_jaxpr, not_mapped
from mytorch.transforms.call_rules import rule_cache
from mytorch.transforms.closure import trace_closed_over
from mytorch.transforms.dce import dce_live
from mytorch.transforms.jvp import jvp_call_jaxpr
from mytorch.transforms.partial_eval import partial_eval_jaxpr, split_call_eqn
from mytorch.transforms.transpose import backward_pass

pmap_p = Primitive("pmap", multiple_results=True, kind="call")

__all__ = ["pmap_p", "replica_avals"]


def replica_avals(avals, in_mapped):
    """The avals one replica sees: mapped ones without their leading axis."""
    return [a.update(shape=a.shape[1:]) if m else a for a, m in zip(avals, in_mapped)]


# ---- abstract evaluation --------------------------------------------------------------------
@pmap_p.def_abstract_eval
def _pmap_abstract_eval(*avals, jaxpr, axis_name, axis_size, devices, in_mapped, out_mapped,
                        name, donated):
    for i, (a, m) in enumerate(zip(avals, in_mapped, strict=True)):
        if m and (not a.shape or a.shape[0] != axis_size):
            raise user_error(ValueError, (
                f"pmap({name}): operand {i} ({a.str_short()}) is mapped over {axis_size} "
                f"devices, so its axis 0 must have size {axis_size}"))
    return [sharded_aval(a, axis_size) if m else a
            for a, m in zip(jaxpr.out_avals, out_mapped, strict=True)]


def _params(params, jaxpr, in_mapped, out_mapped, role):
    """The params of a pmap made by a rule (`role`) from one with `params`: it donates
    nothing and is named after the rule."""
    name = params["name"] if role in ("known", "staged", "dce") else f"{role}({params['name']})"
    return dict(params, jaxpr=jaxpr, in_mapped=tuple(in_mapped), out_mapped=tuple(out_mapped),
                name=name, donated=(False,) * len(in_mapped))


# ---- jvp ------------------------------------------------------------------------------------
_jvps = rule_cache()


def _pmap_jvp(primals, tangents, **params):
    jaxpr, in_mapped = params["jaxpr"], params["in_mapped"]
    nonzero = tuple(type(t) is not Zero and is_differentiable(aval_of(p))
                    for p, t in zip(primals, tangents))
    t_key = tuple(aval_of(t) if nz else None for t, nz in zip(tangents, nonzero))

    def make():
        return (jaxpr, *jvp_call_jaxpr(jaxpr, jaxpr.in_avals, nonzero,
                                       f"jvp({params['name']})"))

    _, jvp_jaxpr, consts = _jvps.get_or((id(jaxpr), nonzero, t_key), make)
    ts = [t for t, nz in zip(tangents, nonzero) if nz]
    mapped = [False] * len(consts) + list(in_mapped) + [
        m for m, nz in zip(in_mapped, nonzero) if nz]
    outs = pmap_p.bind(*consts, *primals, *ts,
                       **_params(params, jvp_jaxpr, mapped, params["out_mapped"] * 2, "jvp"))
    n_out = len(jaxpr.outvars)
    return outs[:n_out], outs[n_out:]


pmap_p.def_jvp(_pmap_jvp)


# ---- partial evaluation ---------------------------------------------------------------------
def _save_everything(prim, *avals, **params):
    return True


_splits = rule_cache()


def _pmap_partial_eval(trace, args, params):
    jaxpr, in_mapped, out_mapped = params["jaxpr"], params["in_mapped"], params["out_mapped"]
    unknowns = tuple(trace.is_unknown(x) for x in args)
    if not any(unknowns):
        with set_current_trace(trace.parent):
            return pmap_p.bind(*args, **params)

    def make():
        return (jaxpr, *partial_eval_jaxpr(jaxpr, list(unknowns), _save_everything))

    _, known, staged, out_unknowns, num_res = _splits.get_or((id(jaxpr), unknowns), make)
    known_args = [x for x, u in zip(args, unknowns) if not u]
    known_mapped = [m for m, u in zip(in_mapped, unknowns) if not u]
    known_out = [m for m, u in zip(out_mapped, out_unknowns) if not u] + [True] * num_res
    with set_current_trace(trace.parent):
        known_outs = pmap_p.bind(*known_args,
                                 **_params(params, known, known_mapped, known_out, "known"))
    n_known = len(known_outs) - num_res
    unknown_args = [x for x, u in zip(args, unknowns) if u]
    staged_mapped = [True] * num_res + [m for m, u in zip(in_mapped, unknowns) if u]
    staged_out = [m for m, u in zip(out_mapped, out_unknowns) if u]
    staged_outs = StagingTrace.process_primitive(
        trace, pmap_p, [*known_outs[n_known:], *unknown_args],
        _params(params, staged, staged_mapped, staged_out, "staged"))
    known_it, staged_it = iter(known_outs[:n_known]), iter(staged_outs)
    return [next(staged_it) if u else next(known_it) for u in out_unknowns]


def _pmap_partial_eval_jaxpr(eqn, unknowns, _saveable):
    params = eqn.params
    known_eqn, staged_eqn, outs_unknown = split_call_eqn(eqn, unknowns, _save_everything)
    in_mapped, out_mapped = params["in_mapped"], params["out_mapped"]
    known_mapped = [m for m, u in zip(in_mapped, unknowns) if not u]
    n_known_outs = sum(not u for u in outs_unknown)
    n_fresh = len(known_eqn.outvars) - n_known_outs
    known_out = [m for m, u in zip(out_mapped, outs_unknown) if not u] + [True] * n_fresh
    # a residual is a fresh (per replica, mapped) result of the known call, or one of the
    # call's own known operands, mapped as that operand is
    n_res = len(staged_eqn.invars) - sum(unknowns)
    res_mapped = []
    for r in staged_eqn.invars[:n_res]:
        pos = next((i for i, v in enumerate(eqn.invars) if v is r), None)
        res_mapped.append(True if pos is None else in_mapped[pos])
    staged_mapped = res_mapped + [m for m, u in zip(in_mapped, unknowns) if u]
    staged_out = [m for m, u in zip(out_mapped, outs_unknown) if u]
    # the fresh residuals are stacked over the replicas: their variables get the global aval
    n = params["axis_size"]
    fresh = {v: Var(sharded_aval(v.aval, n)) for v in known_eqn.outvars[n_known_outs:]}
    known_eqn = known_eqn.replace(
        outvars=[*known_eqn.outvars[:n_known_outs], *fresh.values()],
        params=_params(params, known_eqn.params["jaxpr"], known_mapped, known_out, "known"))
    staged_eqn = staged_eqn.replace(
        invars=[fresh.get(v, v) if type(v) is Var else v for v in staged_eqn.invars],
        params=_params(params, staged_eqn.params["jaxpr"], staged_mapped, staged_out, "staged"))
    return known_eqn, staged_eqn, outs_unknown


pmap_p.def_rule("partial_eval", _pmap_partial_eval)
pmap_p.def_rule("partial_eval_jaxpr", _pmap_partial_eval_jaxpr)


# ---- transpose ------------------------------------------------------------------------------
_transposes = rule_cache()


def _pmap_transpose(cts, *args, **params):
    from mytorch.lax import elementwise as ew
    from mytorch.lax import parallel as par

    jaxpr, axis = params["jaxpr"], (params["axis_name"],)
    in_mapped, out_mapped = params["in_mapped"], params["out_mapped"]
    linear = tuple(is_undefined(a) for a in args)
    residuals = [a for a, lin in zip(args, linear) if not lin]
    ct_zero = tuple(type(c) is Zero for c in cts)
    nz_cts = [c for c, z in zip(cts, ct_zero) if not z]

    def make():
        n_res = len(residuals)

        def transpose_fun(*xs):
            res, ct_it = iter(xs[:n_res]), iter(xs[n_res:])
            values = [None if lin else next(res) for lin in linear]
            cts_out = []
            for v, z, m in zip(jaxpr.outvars, ct_zero, out_mapped):
                if z:
                    cts_out.append(Zero(v.aval))
                    continue
                ct = next(ct_it)
                if not m:  # the result is replica 0's: only replica 0 receives its cotangent
                    first = ew.eq(par.axis_index_p.bind(axis_name=axis), np.int32(0))
                    ct = ew.mul(ct, ew.convert_element_type(first, aval_of(ct).dtype))
                cts_out.append(ct)
            cts_in = backward_pass(jaxpr, [], list(linear), values, cts_out)
            outs = []
            for c, lin, m in zip(cts_in, linear, in_mapped):
                if not lin:
                    continue
                c = instantiate(c)
                if not m and dtypes.is_float(aval_of(c).dtype):
                    c = par.psum_p.bind(c, axis_name=axis)  # every replica read it
                outs.append(c)
            return outs

        body_res = [aval_of(a) if not m else aval_of(a).update(shape=aval_of(a).shape[1:])
                    for a, m in zip(residuals, (m for m, lin in zip(in_mapped, linear)
                                                if not lin))]
        body_cts = [aval_of(c).update(shape=aval_of(c).shape[1:]) if m else aval_of(c)
                    for c, m in zip(nz_cts, (m for m, z in zip(out_mapped, ct_zero)
                                             if not z))]
        return (jaxpr, *trace_closed_over(transpose_fun, body_res + body_cts,
                                          f"transpose({params['name']})"))

    r_key = tuple(aval_of(r) for r in residuals)
    _, t_jaxpr, consts = _transposes.get_or((id(jaxpr), linear, ct_zero, r_key), make)
    mapped = ([False] * len(consts) + [m for m, lin in zip(in_mapped, linear) if not lin]
              + [m for m, z in zip(out_mapped, ct_zero) if not z])
    t_out = [m for m, lin in zip(in_mapped, linear) if lin]
    outs = iter(pmap_p.bind(*consts, *residuals, *nz_cts,
                            **_params(params, t_jaxpr, mapped, t_out, "transpose")))
    return [next(outs) if lin else None for lin in linear]


pmap_p.def_transpose(_pmap_transpose)


# ---- batching -------------------------------------------------------------------------------
_batched = rule_cache()


def _pmap_batching(axis, args, dims, **params):
    from mytorch.lax._batching import moveaxis

    jaxpr, in_mapped, out_mapped = params["jaxpr"], params["in_mapped"], params["out_mapped"]
    args, inner = list(args), []
    for i, (d, m) in enumerate(zip(dims, in_mapped)):
        if d is not_mapped or not m:
            inner.append(d)
            continue
        if d == 0:  # the replica axis stays first
            args[i] = moveaxis(args[i], 0, 1)
            d = 1
        inner.append(d - 1)

    def make():
        return (jaxpr, *batch_jaxpr(jaxpr, axis, inner, None, f"vmap({params['name']})"))

    key = (id(jaxpr), tuple(inner), axis.size, axis.name)
    _, b_jaxpr, consts, out_dims = _batched.get_or(key, make)
    mapped = [False] * len(consts) + list(in_mapped)
    outs = pmap_p.bind(*consts, *args, **_params(params, b_jaxpr, mapped, out_mapped, "vmap"))
    return outs, [d if d is not_mapped or not m else d + 1
                  for d, m in zip(out_dims, out_mapped)]


pmap_p.def_batching(_pmap_batching)


# ---- dce ------------------------------------------------------------------------------------
def _pmap_dce(eqn, used_outputs):
    params = eqn.params
    jaxpr = params["jaxpr"]
    outvars = [v for v, u in zip(jaxpr.outvars, used_outputs) if u]
    eqns, live = dce_live(Jaxpr([], jaxpr.invars, jaxpr.eqns, outvars))
    used = [v in live for v in jaxpr.invars]
    pruned = Jaxpr([], [v for v, u in zip(jaxpr.invars, used) if u], eqns, outvars,
                   jaxpr.debug_name)
    new = dict(params, jaxpr=pruned,
               in_mapped=tuple(m for m, u in zip(params["in_mapped"], used) if u),
               out_mapped=tuple(m for m, u in zip(params["out_mapped"], used_outputs) if u),
               donated=tuple(d for d, u in zip(params["donated"], used) if u))
    return eqn.replace(invars=[v for v, u in zip(eqn.invars, used) if u],
                       outvars=[v for v, u in zip(eqn.outvars, used_outputs) if u],
                       params=new)


pmap_p.def_rule("dce", _pmap_dce)


# ---- execution ------------------------------------------------------------------------------
class _Replicas:
    """The body compiled for every device of one pmap, with the communicators its replicas
    exchange buffers through.

    A body holding a pmap of its own (a 2-D mesh, e.g. data x model) runs SPMD-flattened:
    on each device (a, b) of an n1 x n2 mesh, with one communicator per axis (the devices
    sharing the other coordinate); the inner pmap runs its body on slice b there, and its
    mapped results are put back together by an all_gather over the inner axis (see
    `backends/numpy/collectives.py`). What lies outside the inner pmap runs on all n2
    devices of a row alike; row a's results are read from device (a, 0)."""

    def __init__(self, jaxpr, axis_name, devices, donated, name):
        from mytorch.distributed.groups import endpoints
        from mytorch.transforms.optimize import optimize

        self.name = name
        # a gradient's many psums merged into a few flat ones (config.psum_bucket_bytes)
        closed = bucket_psums(optimize(ClosedJaxpr(jaxpr, [])), config.psum_bucket_bytes)
        self.closed = closed
        n1 = len(devices)
        inner = _inner_axes(closed.jaxpr)
        if len(inner) > 1:
            raise user_error(ValueError, f"pmap({name}): its body holds pmaps over different "
                                         f"axes {inner}; one inner axis is supported")
        if not inner:
            comms = endpoints(devices, axis_name)
            axis_env = ((axis_name, n1),)
            # (outer index, device, ((axis name, communicator), ...)) of each local replica
            self.places = [(a, d, ((axis_name, comms[d]),))
                           for a, d in enumerate(devices) if d in comms]
            self.out_devices = devices
        else:
            (inner_name, n2), = inner
            mesh = _mesh(name, devices, n2)
            donated = ()  # the devices of a row read the same operands
            axis_env = ((axis_name, n1), (inner_name, n2))
            cols = [endpoints([row[b] for row in mesh], axis_name) for b in range(n2)]
            rows = [endpoints(row, inner_name) for row in mesh]
            self.places = [(a, d, ((axis_name, cols[b][d]), (inner_name, rows[a][d])))
                           for a, row in enumerate(mesh) for b, d in enumerate(row)]
            self.out_devices = tuple(row[0] for row in mesh)
        self.heads = {}  # outer index -> the place whose results are returned
        for k, (a, _, _) in enumerate(self.places):
            self.heads.setdefault(a, k)
        self.fns = []
        for _, d, comms in self.places:
            options = CompileOptions(device=d, donated=donated, axis_env=axis_env,
                                     debug_nans=config.debug_nans, name=name,
                                     communicators=comms)
            self.fns.append(d.backend.compile(closed.jaxpr, closed.consts, options)[0])
        self.schedule = schedule_of(closed.jaxpr)
        self.digest = hashlib.sha256("\n".join(self.schedule).encode()).digest()
        self.checked = False

    @property
    def local(self):
        """The outer indices of this process's replicas."""
        return sorted(self.heads)

    def run(self, per_replica):
        """Run every local replica on `per_replica[outer index]` (its buffers); returns
        {outer index: list of result buffers}, raising the first replica's failure."""
        check = not self.checked
        results, errors = {}, {}

        def replica(k):
            a, _, comms = self.places[k]
            try:
                if check:
                    for _, comm in comms:
                        comm.check_schedule(self.digest, lambda: self.schedule)
                outs = self.fns[k](*per_replica[a])
                if self.heads[a] == k:
                    results[a] = outs
            except BaseException as e:  # noqa: BLE001 (handed to the caller below)
                errors[k] = e
                for _, comm in comms:
                    fail = getattr(comm, "fail", None)
                    if fail is not None:
                        fail(e)

        with _blas_share(len(self.places)):
            futures = [_worker(self.places[k][1]).submit(replica, k)
                       for k in range(1, len(self.places))]
            replica(0)
            for f in futures:
                f.result()
        if errors:
            groups = {id(c.group): c.group for _, _, comms in self.places
                      for _, c in comms if hasattr(c, "group")}
            for group in groups.values():  # the thread groups are reused by the next call
                group.reset()
            # the replica that failed first, not the ones it made fail
            own = [e for e in errors.values() if not isinstance(e, CollectiveError)]
            raise (own or list(errors.values()))[0]
        self.checked = True
        return results


def _inner_axes(jaxpr):
    """The distinct (axis name, size) of the pmaps inside `jaxpr` (nested jaxprs too)."""
    found = []

    def walk(j):
        for eqn in j.eqns:
            if eqn.primitive is pmap_p:
                axis = (eqn.params["axis_name"], eqn.params["axis_size"])
                if axis not in found:
                    found.append(axis)
            for p in eqn.params.values():
                for sub in (p if isinstance(p, (tuple, list)) else (p,)):
                    inner = getattr(sub, "jaxpr", sub)
                    if isinstance(inner, Jaxpr):
                        walk(inner)

    walk(jaxpr)
    return found


def _mesh(name, devices, n2):
    """The n1 x n2 devices of a nested pmap over `devices` (n1 of them): rows of n2
    consecutive devices of their backend, starting with the first."""
    n1 = len(devices)
    available = devices[0].backend.devices()
    if n1 * n2 > len(available):
        raise user_error(ValueError, (
            f"pmap({name}): a pmap over {n2} devices inside a pmap over {n1} needs "
            f"{n1 * n2} devices, but there are {len(available)}; ask for more virtual CPU "
            f"devices with mt.config.update('num_cpu_devices', {n1 * n2})"))
    return [tuple(available[a * n2:(a + 1) * n2]) for a in range(n1)]


_blas = []  # [threadpoolctl's controller, the BLAS threads it found], made at first use


def _blas_share(n):
    """A context giving the BLAS library its share of threads while `n` replicas run:
    each replica's matmuls would otherwise start a full set of BLAS threads, and n sets
    oversubscribe the cores."""
    if not _blas:  # scanning the loaded libraries takes a few ms: once
        controller = ThreadpoolController()
        counts = [m.num_threads for m in controller.select(user_api="blas").lib_controllers]
        _blas.extend([controller, max(counts, default=1)])
    if n < 2 or _blas[1] < 2:
        return contextlib.nullcontext()
    return _blas[0].limit(limits=max(1, _blas[1] // n), user_api="blas")


_pools = {}
_pools_lock = threading.Lock()


def _worker(device):
    """The persistent thread that runs `device`'s replicas."""
    pool = _pools.get(device)
    if pool is None:
        with _pools_lock:
            pool = _pools.get(device)
            if pool is None:
                pool = _pools[device] = ThreadPoolExecutor(
                    1, thread_name_prefix=f"mytorch-replica-{device.platform}{device.id}")
    return pool


def schedule_of(jaxpr):
    """The collectives `jaxpr` runs, in order (those of nested jaxprs where they appear),
    one line each: primitive, axis, operand shapes and dtypes, params."""
    lines = []

    def walk(j):
        for eqn in j.eqns:
            if eqn.primitive.kind == "collective":
                ins = ", ".join(v.aval.str_short() for v in eqn.invars)
                extra = {k: v for k, v in eqn.params.items() if k != "axis_name"}
                lines.append(f"{eqn.primitive.name}[{eqn.params['axis_name']}]({ins}) "
                             f"{extra}")
            for p in eqn.params.values():
                for sub in (p if isinstance(p, (tuple, list)) else (p,)):
                    inner = getattr(sub, "jaxpr", sub)
                    if isinstance(inner, Jaxpr):
                        walk(inner)

    walk(jaxpr)
    return lines


_replicas = rule_cache()


@pmap_p.def_impl
def _pmap_impl(*args, jaxpr, axis_name, axis_size, devices, in_mapped, out_mapped, name,
               donated):
    key = (id(jaxpr), axis_name, devices, donated, config.values())

    def make():
        return jaxpr, _Replicas(jaxpr, axis_name, devices, donated, name)

    reps = _replicas.get_or(key, make)[1]
    per_replica = {i: [] for i in reps.local}
    for a, m, d in zip(args, in_mapped, donated):
        shards = (a.shard_buffers(reps.out_devices) if m and isinstance(a, ShardedArray)
                  else None)
        if shards is None:
            buf = _take(a, name) if d else a._buf
            shards = [buf[i] if m else buf for i in range(axis_size)]
        elif d:  # the shards are handed over: the array is gone
            a._buf = _DonatedBuffer(f"pmap({name})")
        for i in reps.local:
            per_replica[i].append(shards[i])
    results = reps.run(per_replica)
    outs = []
    first = reps.local[0]
    for j, (aval, m) in enumerate(zip(jaxpr.out_avals, out_mapped)):
        if m:
            outs.append(ShardedArray([results[i][j] for i in reps.local], reps.out_devices,
                                     sharded_aval(aval, axis_size)))
        else:
            outs.append(ArrayImpl(results[first][j], aval.weak_type, reps.out_devices[first]))
    return outs


def _take(array, name):
    """The buffer of an array donated to pmap, which the replicas may overwrite (the array
    is invalidated; the backend copies a buffer that something else may read)."""
    buf = array._buf
    array._buf = _DonatedBuffer(f"pmap({name})")
    return array.device.backend.donate(buf)
