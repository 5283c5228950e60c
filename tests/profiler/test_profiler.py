"""mt.profiler: the table's rows (primitives, counts, shapes, user lines in this file), self
times within the wall time, the Chrome-trace file, eager ops, nested jit and scan bodies,
unchanged code when not profiling, and the peak memory of the NumPy buffers."""

import json
import os
import sys
import time

import numpy as np
import pytest

import mytorch as mt
import mytorch.numpy as mnp
from mytorch import lax
from mytorch.core import profiling

HERE = os.path.basename(__file__)


def _line(fn, text):
    """The line number in this file of the first line of `fn` containing `text`."""
    import inspect

    src, start = inspect.getsourcelines(fn)
    return start + next(i for i, s in enumerate(src) if text in s)


def mlp(x, w1, w2):
    h = mnp.tanh(x @ w1)  # line: matmul+tanh
    return (h @ w2).sum()  # line: second matmul


def _mlp_args(n=64):
    rng = np.random.default_rng(0)
    return [mnp.asarray(rng.standard_normal(s, dtype=np.float32))
            for s in ((n, 32), (32, 48), (48, 8))]


def test_table_rows_name_primitives_counts_shapes_and_lines():
    f = mt.jit(mlp)
    args = _mlp_args()
    prof = mt.profiler.profile(f, print_table=False, repeat=3)
    out = prof(*args)
    np.testing.assert_allclose(float(out), float(mlp(*args)), rtol=1e-4)
    rows = prof.last.rows(kinds={"eqn", "fused"})
    dots = [r for r in rows if r.name == "dot_general"]
    assert len(dots) == 2 and all(r.calls == 3 for r in dots)
    first = next(r for r in dots if r.shapes.startswith("f32[64,32], f32[32,48]"))
    assert first.shapes.endswith("-> f32[64,48]") and first.scope == "mlp"
    assert first.source.startswith(os.path.abspath(__file__))
    assert f":{_line(mlp, 'line: matmul+tanh')} (mlp)" in first.source
    tanh = next(r for r in rows if r.name == "tanh")
    assert tanh.calls == 3 and tanh.source == first.source
    second = next(r for r in dots if r is not first)
    assert f":{_line(mlp, 'line: second matmul')} " in second.source
    # warmup compiled the profiled code: the recorded calls trace and compile nothing
    assert not prof.last.rows(kinds={"compile"})
    text = prof.last.table(top_k=2)
    assert "dot_general" in text and f"{HERE}:" in text and "more rows" in text
    assert [r.self_s for r in prof.last.rows()] == sorted(
        (r.self_s for r in prof.last.rows()), reverse=True)


def test_self_times_add_up_within_the_wall_time():
    f = mt.jit(mlp)
    args = _mlp_args(512)
    f(*args)
    t0 = time.perf_counter()
    with mt.profiler.trace(print_table=False) as prof:
        for _ in range(3):
            f(*args)
    wall = time.perf_counter() - t0
    eqns = sum(r.self_s for r in prof.rows(kinds={"eqn", "fused"}))
    assert 0 < eqns <= prof.recorded_s <= prof.wall_s <= wall
    assert sum(r.share for r in prof.rows()) <= 1.0
    fn = next(r for r in prof.rows() if r.kind == "function")
    assert fn.calls == 3 and fn.total_s >= eqns  # the function's event encloses its eqns


def test_chrome_trace_file(tmp_path):
    path = tmp_path / "trace.json"
    f = mt.jit(lambda x, w1, w2: mlp(x, w1, w2))  # new: compiled inside the region
    args = _mlp_args()
    with mt.profiler.trace(str(path), print_table=False) as prof:
        f(*args)
    doc = json.loads(path.read_text())
    events = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    assert len(events) == len(prof.events)
    for e in events:
        assert {"name", "cat", "ph", "pid", "tid", "ts", "dur", "args"} <= set(e)
        assert e["ts"] >= 0 and e["dur"] >= 0 and isinstance(e["pid"], int)
        assert {"shapes", "source", "scope"} <= set(e["args"])
    dot = next(e for e in events if e["name"] == "dot_general")
    assert dot["cat"] == "eqn" and HERE in dot["args"]["source"]
    assert dot["args"]["shapes"] == "f32[64,32], f32[32,48] -> f32[64,48]"
    fn = next(e for e in events if e["cat"] == "function")  # it encloses the equations
    assert fn["ts"] <= dot["ts"] and dot["ts"] + dot["dur"] <= fn["ts"] + fn["dur"] + 1e-3
    assert {e["cat"] for e in events} >= {"compile", "eqn", "function"}
    assert any(e["ph"] == "M" and e["name"] == "thread_name" for e in doc["traceEvents"])
    assert doc["otherData"]["peak_bytes"] == prof.peak_bytes > 0


def test_eager_ops_are_recorded_with_their_line():
    x = mnp.ones((16, 4))
    with mt.profiler.trace(print_table=False) as prof:
        y = mnp.exp(x) * 2.0  # line: eager
    assert float(y[0, 0]) == pytest.approx(2 * np.e)
    rows = prof.rows(kinds={"eager"})
    exp = next(r for r in rows if r.name == "exp")
    assert exp.calls == 1 and exp.shapes == "f32[16,4] -> f32[16,4]" and exp.scope == ""
    line = _line(test_eager_ops_are_recorded_with_their_line, "line: eager")
    assert exp.source.endswith(f"{HERE}:{line} (test_eager_ops_are_recorded_with_their_line)")
    assert any(r.name == "mul" for r in rows)
    assert "eager: exp" in prof.table()


def _scan_body(c, x):
    return c + mnp.cos(x), c * 2.0  # line: scan body


def test_nested_jit_and_scan_bodies_are_attributed():
    @mt.jit
    def inner(x):
        return mnp.sin(x) * 3.0  # line: inner jit

    @mt.jit
    def outer(x):
        c, ys = lax.scan(_scan_body, inner(x)[0], x)
        return c.sum() + ys.sum()

    x = mnp.ones((10, 5))
    with mt.profiler.trace(print_table=False) as prof:
        outer(x)
    rows = prof.rows(kinds={"eqn"})
    body_line = f"{HERE}:{_line(_scan_body, 'line: scan body')} "
    cos = next(r for r in rows if r.name == "cos")
    assert cos.calls == 10 and body_line in cos.source and cos.scope.endswith("body")
    sin = next(r for r in rows if r.name == "sin")  # inlined into outer, line kept
    assert sin.calls == 1 and sin.scope == "outer"
    assert f"{HERE}:{_line(inner, 'line: inner jit')} " in sin.source
    scan = next(r for r in rows if r.name == "scan")
    assert scan.total_s >= cos.total_s  # the loop's event encloses its body's
    assert scan.self_s <= scan.total_s - cos.total_s + 1e-9
    assert any(r.kind == "compile" and "outer" in r.name for r in prof.rows())


def test_profiled_loops_run_the_generated_loops_and_time_their_bodies():
    """A profiled while loop runs the same inlined loop as unprofiled code (no per-step
    runner), with the same results, and its body's equations are counted per iteration."""
    def f(x):
        def body(carry):
            i, v = carry
            return i + 1, mnp.cos(v) * 0.5 + 0.25

        return lax.while_loop(lambda c: c[0] < 7, body, (0, x))[1]

    x = mnp.linspace(-1.0, 1.0, 12)
    expected = np.asarray(mt.jit(f)(x))
    g = mt.jit(lambda x: f(x))
    with mt.profiler.trace(print_table=False) as prof:
        got = np.asarray(g(x))
    np.testing.assert_array_equal(got, expected)
    with mt.config.override(profile=True):
        text = g.lower(x).as_text()
    assert "while True:" in text and "_record(" in text, text
    rows = prof.rows(kinds={"eqn", "block"})
    cos = next(r for r in rows if "cos" in r.name)
    assert cos.calls == 7, [(r.name, r.calls) for r in rows]


def test_code_compiled_without_profiling_is_unchanged():
    def f(x):
        return mnp.tanh(x * 2.0 + 1.0).sum()

    x = mnp.ones((8, 3))
    before = mt.jit(f).lower(x).as_text()
    assert "_clock" not in before and "_record" not in before
    with mt.profiler.trace(print_table=False):
        profiled = mt.jit(f).lower(x).as_text()
        mt.jit(f)(x)
    assert "_record(" in profiled and profiled.count("_clock()") >= 3
    assert mt.jit(f).lower(x).as_text() == before
    assert not mt.config.profile


def test_profiled_and_plain_executables_are_cached_apart():
    calls = []

    def f(x):
        calls.append(1)
        return x + 1.0

    g = mt.jit(f)
    x = mnp.ones(3)
    g(x)
    with mt.profiler.trace(print_table=False):
        g(x)
        g(x)
    g(x)
    assert len(calls) == 2  # traced once plain and once profiled; each then hit its cache
    with mt.profiler.trace(print_table=False) as prof:
        g(x)
    assert len(calls) == 2 and not prof.rows(kinds={"compile"})


def test_peak_memory_covers_a_large_intermediate():
    @mt.jit
    def f(x):
        big = mnp.outer(x, x)  # f32[1024, 1024]: 4 MiB, freed when f returns
        return mnp.tanh(big).sum(axis=0)

    x = mnp.ones(1024)
    f(x)
    with mt.profiler.trace(print_table=False) as prof:
        f(x)
    assert prof.peak_bytes >= 1024 * 1024 * 4
    assert prof.peak_bytes < 4 * 1024 * 1024 * 4  # buffers reused through out= count once
    assert profiling.active() is None


def test_profile_errors_and_no_nesting():
    with pytest.raises(TypeError, match="callable"):
        mt.profiler.profile(3)
    with pytest.raises(ValueError, match="repeat"):
        mt.profiler.profile(lambda: 0, repeat=0)
    with mt.profiler.trace(print_table=False):
        with pytest.raises(RuntimeError, match="cannot nest"):
            with mt.profiler.trace(print_table=False):
                pass
    assert not mt.config.profile


def test_printed_table(capsys):
    with mt.profiler.trace(top_k=3):
        mt.jit(lambda x: mnp.sin(x) + 1.0)(mnp.ones(4))
    out = capsys.readouterr().out
    assert out.startswith("mt.profiler: ") and "self ms" in out and "peak NumPy buffers" in out


def test_docs_page_runs(tmp_path, monkeypatch):
    """docs/profiler.md's python blocks run as written (from a folder holding examples/,
    as the repository's root does)."""
    import re

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    text = open(os.path.join(root, "docs", "profiler.md")).read()
    blocks = re.findall(r"^```python\n(.*?)^```", text, re.DOTALL | re.MULTILINE)
    assert blocks
    os.symlink(os.path.join(root, "examples"), tmp_path / "examples")
    monkeypatch.chdir(tmp_path)  # the page writes its trace file into the current folder
    monkeypatch.setattr(sys, "path", list(sys.path))  # the page adds examples/ to it
    ns = {"__name__": "docs_profiler"}
    for src in blocks:
        exec(compile(src, "docs/profiler.md", "exec"), ns)  # noqa: S102
