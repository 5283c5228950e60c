"""What `mt.profiler` records, at the level every backend can reach.

A *session* (`start` ... `stop`) collects timed events: `record(site, t0, outs)` appends one
(site, start, end, thread) event, where a `Site` says what ran (an equation of a compiled
function, a fused block, a compiled function as a whole, an eager op, a compilation) and
where in the user's code. Code compiled with `CompileOptions(profile=True)` calls `record`
around each of its equations or fused blocks; code compiled without it has no such calls.
Eager ops are recorded by `core.trace` while a session is open.

Memory: `track(bufs)` counts the NumPy buffers a profiled step read or produced: each
distinct owning array (a view counts as its base array) adds its `nbytes` when the session
first sees it and subtracts them when it is freed (a weak reference's callback); the
session keeps the peak of that sum. Buffers written again through `out=` are the same
array, counted once. Scratch buffers inside fused blocks and memory held by NumPy or BLAS
internally are not counted.

Nothing here imports above core; `mytorch.profiler` builds tables and trace files from a
finished session.
"""

import threading
import time
import weakref

import numpy as np

clock = time.perf_counter


class Site:
    """One place that records time: `kind` ("eqn", "fused", "function", "eager",
    "compile"), `name` (the primitive, or "fused[...]", or the function), `shapes` (a
    short "f32[3,4], f32[4] -> f32[3]" string), `source` (the user's file:line, or ""),
    `scope` (the compiled function it belongs to, or "" for eager ops)."""

    __slots__ = ("kind", "name", "shapes", "source", "scope", "key")

    def __init__(self, kind, name, shapes="", source="", scope=""):
        self.kind, self.name, self.shapes = kind, name, shapes
        self.source, self.scope = source, scope
        self.key = (kind, name, shapes, source, scope)

    def __repr__(self):
        return f"Site({self.kind}, {self.name}, {self.shapes!r}, {self.source!r})"


def eqn_site(eqn, scope):
    """The Site of jaxpr equation `eqn` in the compiled function `scope`."""
    return Site("eqn", eqn.primitive.name, shapes_of(eqn.invars, eqn.outvars),
                source_of(eqn.source_info), scope)


def block_site(eqns, scope):
    """The Site of a fused block of `eqns` (run as one unit) in `scope`: named after its
    primitives, shaped as its first equation's result, at its equations' user lines."""
    names = ",".join(e.primitive.name for e in eqns)
    sources = []
    for e in eqns:
        s = source_of(e.source_info)
        if s and s not in sources:
            sources.append(s)
    out = eqns[0].outvars[0].aval.str_short()
    return Site("fused", f"fused[{names}]", f"{len(eqns)} ops -> {out}",
                "; ".join(sources[:3]) + (" ..." if len(sources) > 3 else ""), scope)


def shapes_of(ins, outs):
    """"f32[3,4], f32[4] -> f32[3]" for values with avals (vars, literals, arrays)."""
    def short(v):
        aval = getattr(v, "aval", None)
        return aval.str_short() if aval is not None else type(v).__name__
    return f"{', '.join(map(short, ins))} -> {', '.join(map(short, outs))}"


def source_of(info):
    """"file.py:41 (fn)" for a SourceInfo (full path kept in the trace file), else ""."""
    return "" if info is None else f"{info.filename}:{info.lineno} ({info.function})"


class Session:
    """The events and memory count of one profiled region."""

    def __init__(self):
        self.events = []  # (site, t0, t1, thread id)
        self.live_bytes = 0
        self.peak_bytes = 0
        self.buffers_seen = 0
        self._refs = {}  # id(owner) -> weakref
        self._lock = threading.Lock()
        self.t0 = clock()
        self.t1 = None

    def track(self, bufs):
        for b in bufs:
            if type(b) is not np.ndarray:
                continue
            owner = b.base if isinstance(b.base, np.ndarray) else b
            key = id(owner)
            if key in self._refs:
                continue
            n = owner.nbytes
            try:
                ref = weakref.ref(owner, self._freer(key, n))
            except TypeError:  # pragma: no cover - every ndarray takes weak references
                continue
            with self._lock:
                self._refs[key] = ref
                self.buffers_seen += 1
                self.live_bytes += n
                if self.live_bytes > self.peak_bytes:
                    self.peak_bytes = self.live_bytes

    def _freer(self, key, n):
        def freed(_ref):
            with self._lock:
                if self._refs.pop(key, None) is not None:
                    self.live_bytes -= n
        return freed


_session = [None]


def start():
    """Open a session (one at a time); returns it."""
    if _session[0] is not None:
        raise RuntimeError("mt.profiler: a profiling session is already open; profiled "
                           "regions cannot nest")
    _session[0] = Session()
    return _session[0]


def stop():
    """Close the open session; returns it (None if none was open)."""
    s, _session[0] = _session[0], None
    if s is not None:
        s.t1 = clock()
        s._refs.clear()  # stop counting: the weak references' callbacks become no-ops
    return s


def bookkeeping_cost(n=2000):
    """Seconds one `record` call of profiled code costs itself (its clock reading, the
    event, the memory check of a buffer already counted), measured now in a throwaway
    session: what a profiled function's own row includes per event it records."""
    outer, buf, site = _session[0], np.empty(1), Site("eqn", "calibration")
    _session[0] = Session()
    try:
        t0 = clock()
        for _ in range(n):
            t = clock()
            record(site, t, (buf,))
        return (clock() - t0) / n
    finally:
        _session[0] = outer


def active():
    """The open Session, or None."""
    return _session[0]


def record(site, t0, outs=()):
    """Record that `site` ran from `t0` (a `clock()` reading) until now, producing the
    buffers `outs` (counted for memory). A no-op when no session is open."""
    t1 = clock()
    s = _session[0]
    if s is None:
        return
    s.events.append((site, t0, t1, threading.get_ident()))
    if outs:
        s.track(outs)


def track(bufs):
    """Count `bufs` (NumPy buffers a profiled step reads) towards the open session's
    memory."""
    s = _session[0]
    if s is not None:
        s.track(bufs)
