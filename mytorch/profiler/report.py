"""A finished profiling session as a table, rows and a Chrome-trace file.

Events nest: a compiled function's event contains its equations' events, a loop's
equation contains its body's, an eager call primitive contains the compiled code it ran.
Each event's *self time* is its duration less that of the events directly inside it (on
the same thread), so the self times of one thread's events add up to at most the profiled
wall time, and a row's share is its self time over the wall time.
"""

import dataclasses
import json
import os
import threading

from mytorch.core import profiling


@dataclasses.dataclass(frozen=True)
class Row:
    """One line of the table: every event of one site (what ran, on which shapes, from
    which user line, in which compiled function).

    kind: "eqn", "fused" (a fused elementwise block), "function" (a compiled function's
      own overhead: entry, exit, error state), "eager", "compile" (tracing or code
      generation); name: the primitive (or block, function); shapes: "f32[3,4] -> ...";
    source: "file:line (function)" of the user's code ("" if unknown); scope: the compiled
      function ("" for eager ops); calls: events; self_s: total self time (seconds);
      total_s: total time including nested events; share: self_s / the wall time.
    """

    kind: str
    name: str
    shapes: str
    source: str
    scope: str
    calls: int
    self_s: float
    total_s: float
    share: float

    @property
    def kind_name(self):
        """The name shown in the table: "function: step" for a function's own time."""
        return f"{self.kind}: {self.name}" if self.kind in ("function", "eager") else self.name


class Profile:
    """What one profiled region recorded (filled in when the region ends).

    events: [(Site, start s, end s, thread id)] in recording order; wall_s: the region's
    wall time; peak_bytes: the peak of the bytes of NumPy buffers alive at once among those
    the profiled code read or produced (see core/profiling.py); buffers_seen: how many
    distinct buffers were counted; bookkeeping_s: what recording one event costs (it
    shows in the self time of the enclosing "function" rows).
    """

    def __init__(self):
        self.events, self.wall_s, self.t0 = [], 0.0, 0.0
        self.peak_bytes, self.buffers_seen = 0, 0
        self.bookkeeping_s = 0.0
        self._self = []

    def _fill(self, session):
        self.events, self.t0 = session.events, session.t0
        self.wall_s = session.t1 - session.t0
        self.peak_bytes, self.buffers_seen = session.peak_bytes, session.buffers_seen
        self._self = _self_times(self.events)
        self.bookkeeping_s = profiling.bookkeeping_cost()

    @property
    def recorded_s(self):
        """The sum of every event's self time (<= wall_s)."""
        return sum(self._self)

    def rows(self, kinds=None, by="site"):
        """The table's rows (`Row`), most self time first.

        Args:
          kinds: keep only events of these kinds (e.g. {"eqn", "fused"}); None keeps all.
          by: "site" (a row per primitive, shapes, line and function), "source" (a row
            per user line: its primitives' names, most time first, in `name`) or
            "primitive" (a row per primitive name, over every shape and line).
        """
        if by not in _GROUPINGS:
            raise ValueError(f"Profile.rows: by must be one of {sorted(_GROUPINGS)}, got "
                             f"{by!r}")
        group = _GROUPINGS[by]
        agg = {}
        for (site, t0, t1, _), own in zip(self.events, self._self, strict=True):
            if kinds is not None and site.kind not in kinds:
                continue
            key = group(site)
            r = agg.get(key)
            if r is None:
                agg[key] = r = [site, 0, 0.0, 0.0, {}]
            r[1] += 1
            r[2] += own
            r[3] += t1 - t0
            r[4][site.name] = r[4].get(site.name, 0.0) + own
        wall = self.wall_s or 1.0
        out = []
        for s, n, own, total, names in agg.values():
            if by == "site" or by == "source" and not s.source:
                out.append(Row(s.kind, s.name, s.shapes, s.source, s.scope, n, own, total,
                               own / wall))
                continue
            top = sorted(names, key=lambda k: -names[k])
            name = s.name if by == "primitive" else ",".join(top[:4]) + (
                ",..." if len(top) > 4 else "")
            out.append(Row(s.kind if by == "primitive" else "source", name, "",
                           s.source if by == "source" else "",
                           s.scope if by == "source" else "", n, own, total, own / wall))
        return sorted(out, key=lambda r: -r.self_s)

    def table(self, top_k=20, by="site"):
        """The top `top_k` rows by self time (grouped `by`, see `rows`) as text, with a
        header (wall time, time recorded, peak memory) and a footer (what the other rows
        add up to)."""
        rows = self.rows(by=by)
        head = (f"mt.profiler: {1e3 * self.wall_s:.3f} ms profiled, {1e3 * self.recorded_s:.3f}"
                f" ms recorded in {len(self.events)} events ({len(rows)} rows); peak "
                f"NumPy buffers {_size(self.peak_bytes)} ({self.buffers_seen} buffers)\n"
                f"(the profiler's own bookkeeping, about {1e6 * self.bookkeeping_s:.2f} us "
                f"per event, is counted in the 'function:' rows)")
        lines = [head, f"{'self ms':>9} {'%':>6} {'calls':>6} {'us/call':>9}  "
                       f"{'op':<28} {'shapes':<34} {'source':<28} scope"]
        for r in rows[:top_k]:
            src = _short_source(r.source)
            lines.append(f"{1e3 * r.self_s:9.3f} {100 * r.share:5.1f}% {r.calls:6d} "
                         f"{1e6 * r.self_s / r.calls:9.1f}  {_cut(r.kind_name, 28):<28} "
                         f"{_cut(r.shapes, 34):<34} {_cut(src, 28):<28} {r.scope}")
        rest = rows[top_k:]
        if rest:
            s = sum(r.self_s for r in rest)
            lines.append(f"{1e3 * s:9.3f} {100 * s / (self.wall_s or 1):5.1f}% "
                         f"{sum(r.calls for r in rest):6d} {'':9}  ({len(rest)} more rows)")
        return "\n".join(lines)

    def __str__(self):
        return self.table()

    def trace_events(self):
        """The Chrome-trace events: one complete ("X") event per recorded event, ts and
        dur in microseconds from the region's start, and thread-name metadata."""
        pid = os.getpid()
        tids, out = {}, []
        for site, t0, t1, thread in self.events:
            tid = tids.setdefault(thread, len(tids))
            out.append({"name": site.name, "cat": site.kind, "ph": "X", "pid": pid,
                        "tid": tid, "ts": round(1e6 * (t0 - self.t0), 3),
                        "dur": round(1e6 * (t1 - t0), 3),
                        "args": {"shapes": site.shapes, "source": site.source,
                                 "scope": site.scope}})
        names = {t.ident: t.name for t in threading.enumerate()}
        for thread, tid in tids.items():
            out.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid,
                        "args": {"name": names.get(thread, f"thread {tid}")}})
        return out

    def write(self, path):
        """Write the Chrome-trace / Perfetto JSON file (`{"traceEvents": [...]}`)."""
        doc = {"traceEvents": self.trace_events(), "displayTimeUnit": "ms",
               "otherData": {"wall_ms": 1e3 * self.wall_s, "peak_bytes": self.peak_bytes,
                             "buffers_seen": self.buffers_seen}}
        with open(path, "w") as f:
            json.dump(doc, f)


_GROUPINGS = {
    "site": lambda site: site.key,
    "source": lambda site: (site.source, site.scope) if site.source else site.key,
    "primitive": lambda site: (site.kind, site.name),
}


def _self_times(events):
    """Each event's duration less that of the events directly inside it (same thread)."""
    own = [t1 - t0 for _, t0, t1, _ in events]
    order = sorted(range(len(events)), key=lambda i: (events[i][3], events[i][1], -events[i][2]))
    stack = []  # indices of the open events on the current thread
    thread = None
    for i in order:
        _, t0, t1, th = events[i]
        if th != thread:
            stack, thread = [], th
        while stack and events[stack[-1]][2] <= t0:
            stack.pop()
        if stack:
            own[stack[-1]] -= t1 - t0
        stack.append(i)
    return [max(0.0, x) for x in own]


def _short_source(source):
    if not source:
        return ""
    path, _, rest = source.partition(":")
    return os.path.basename(path) + ":" + rest.split(" ")[0]


def _cut(text, n):
    return text if len(text) <= n else text[:n - 1] + "…"


def _size(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
