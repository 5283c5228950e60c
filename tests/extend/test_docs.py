"""docs/extend.md runs as written: its ```python blocks, in order, in one namespace (the
examples assert their results against NumPy)."""

import pathlib
import re

import mytorch as mt
from mytorch.core import backend as core_backend

PAGE = pathlib.Path(__file__).resolve().parents[2] / "docs" / "extend.md"
FENCE = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)


def test_extend_page_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MYTORCH_TWIN_CACHE", str(tmp_path / "twin"))
    previous = core_backend._BACKENDS.get("gpu")  # the page starts and stops the CPU twin
    namespace = {"__name__": "extend_md"}
    text = PAGE.read_text()
    for match in FENCE.finditer(text):
        line = text.count("\n", 0, match.start()) + 2
        exec(compile(match.group(1), f"{PAGE}:{line}", "exec"), namespace)  # noqa: S102
    printed = capsys.readouterr().out
    assert "bias_gelu a b" in printed
    assert "'jvp' rule of primitive 'top_k_indices'" in printed
    mt.config.update("enable_x64", False)
    if previous is not None:
        core_backend.register_backend(previous)
