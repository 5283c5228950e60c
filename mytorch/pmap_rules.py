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

Rules: the generic call rules (`transforms/call_rules.py`), with what the replica axis
adds (`_PmapHooks`):
  * every new call's operands and results are mapped as their origins are: tangents and
    cotangents like their primals, residuals (per replica) mapped, captured constants not;
  * transpose: the cotangent of an unmapped operand is the sum over replicas (a psum in
    the transposed body); an unmapped result is replica 0's, so its cotangent reaches
    replica 0 only;
  * batching: vmap's batch dimensions are global; an operand mapped at 0 and batched at d
    is batched at d - 1 in the body (a batch dimension 0 is first moved to 1);
  * dce keeps the donation flags of the operands it keeps.
"""

import contextlib
import hashlib
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from threadpoolctl import ThreadpoolController

from mytorch.core import dtypes
from mytorch.core.array import ArrayImpl, DonatedBuffer
from mytorch.core.backend import CompileOptions
from mytorch.core.config import config
from mytorch.core.jaxpr import ClosedJaxpr, sub_jaxprs
from mytorch.core.primitive import Primitive
from mytorch.core.sharded import ShardedArray, sharded_aval
from mytorch.core.source_info import user_error
from mytorch.core.trace import aval_of
from mytorch.distributed.bucketing import bucket_psums
from mytorch.errors import CollectiveError
from mytorch.transforms.batching import not_mapped
from mytorch.transforms.call_rules import CallHooks, def_call_rules, rule_cache

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


def _mapped(params, origin):
    """Whether an operand or result of a pmap a rule makes from one with `params`, of
    `origin` (see call_rules), is mapped: like the original operand or result it stands
    for; a residual is per replica, so mapped; a captured constant is read whole."""
    kind, k = origin
    if kind == "operand":
        return params["in_mapped"][k]
    if kind == "result":
        return params["out_mapped"][k]
    return kind == "residual"


def _rebind(params, jaxpr, role, operands, results):
    """The params of a pmap made by a call rule (`role`) from one with `params`: its
    operands and results mapped as their origins are; it donates nothing (but what a
    pruned pmap keeps), and is named after the rule."""
    name = params["name"] if role in ("known", "staged", "dce") else f"{role}({params['name']})"
    donated = params["donated"]
    return dict(params, jaxpr=jaxpr, name=name,
                in_mapped=tuple(_mapped(params, o) for o in operands),
                out_mapped=tuple(_mapped(params, o) for o in results),
                donated=tuple(role == "dce" and donated[k] for _, k in operands))


class _PmapHooks(CallHooks):
    """What the replica axis adds to the generic call rules: a mapped operand or result is
    the stack of the replicas' values, which the body sees one at a time."""

    def operand_aval(self, params, aval, origin):
        """A mapped operand's body aval lacks the replica axis."""
        return aval.update(shape=aval.shape[1:]) if _mapped(params, origin) else aval

    def result_cotangent(self, params, j, ct):
        """An unmapped result is replica 0's: only replica 0 receives its cotangent."""
        if params["out_mapped"][j]:
            return ct
        from mytorch.lax import elementwise as ew
        from mytorch.lax import parallel as par

        first = ew.eq(par.axis_index_p.bind(axis_name=(params["axis_name"],)), np.int32(0))
        return ew.mul(ct, ew.convert_element_type(first, aval_of(ct).dtype))

    def operand_cotangent(self, params, i, ct):
        """Every replica read an unmapped operand whole: its cotangent is their sum."""
        if params["in_mapped"][i] or not dtypes.is_inexact(aval_of(ct).dtype):
            return ct
        from mytorch.lax import parallel as par

        return par.psum_p.bind(ct, axis_name=(params["axis_name"],))

    def batch_in(self, params, args, dims):
        """vmap's batch dimensions are global: an operand mapped at 0 and batched at d is
        batched at d - 1 in the body (a batch dimension 0 is first moved behind the replica
        axis)."""
        from mytorch.lax._batching import moveaxis

        inner = []
        for i, (d, m) in enumerate(zip(dims, params["in_mapped"])):
            if d is not_mapped or not m:
                inner.append(d)
                continue
            if d == 0:  # the replica axis stays first
                args[i] = moveaxis(args[i], 0, 1)
                d = 1
            inner.append(d - 1)
        return args, inner

    def batch_out(self, params, dims):
        """A mapped result batched at d in the body is batched at d + 1 globally."""
        return [d if d is not_mapped or not m else d + 1
                for d, m in zip(dims, params["out_mapped"])]


def _save_everything(prim, *avals, **params):
    return True


def _everything_saveable(params):
    """Linearizing a pmap keeps every intermediate the tangent computation reads."""
    return _save_everything


def_call_rules(pmap_p, rebind=_rebind, saveable=_everything_saveable,
               name=lambda params: params["name"], hooks=_PmapHooks())


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
            for sub in sub_jaxprs(eqn.params):
                walk(getattr(sub, "jaxpr", sub))

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
            for sub in sub_jaxprs(eqn.params):
                walk(getattr(sub, "jaxpr", sub))

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
            a._buf = DonatedBuffer(f"pmap({name})")
        for i in reps.local:
            per_replica[i].append(shards[i])
    results = reps.run(per_replica)
    outs = []
    first = reps.local[0]
    # the devices of other processes hold the other shards: reading the whole gathers them
    gather = _gather_processes if len(reps.local) < axis_size else None
    for j, (aval, m) in enumerate(zip(jaxpr.out_avals, out_mapped)):
        if m:
            shards = [results[i][j] if i in results else None for i in range(axis_size)]
            outs.append(ShardedArray(shards, reps.out_devices, sharded_aval(aval, axis_size),
                                     gather))
        else:
            outs.append(ArrayImpl(results[first][j], aval.weak_type, reps.out_devices[first]))
    return outs


def _gather_processes(devices, shards):
    """(n, *S): the stack of the shards of a mapped result over `devices`, one per process,
    this process holding those not None: an allgather over their processes."""
    from mytorch.distributed.mpi import gather_shards

    return gather_shards(devices, shards)


def _take(array, name):
    """The buffer of an array donated to pmap, which the replicas may overwrite (the array
    is invalidated; the backend copies a buffer that something else may read)."""
    buf = array._buf
    array._buf = DonatedBuffer(f"pmap({name})")
    return array.device.backend.donate(buf)
