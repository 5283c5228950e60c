"""The code in the user guides runs as written.

Each page's ```python blocks are executed in order in one fresh namespace, in a temporary
folder (the pages write checkpoints). A block whose first line is `# not run` is skipped:
those hold PyTorch or JAX code, which are not dependencies.
"""

import pathlib
import re

import pytest

import mytorch as mt

DOCS = pathlib.Path(__file__).resolve().parent.parent / "docs"
PAGES = ["tutorial.md", "coming_from_jax.md", "coming_from_pytorch.md", "pmap.md", "moe.md"]
FENCE = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)
SKIP = "# not run"


def blocks(page):
    """[(line number, source)] of the page's ```python blocks, in order."""
    text = (DOCS / page).read_text()
    return [(text.count("\n", 0, m.start()) + 2, m.group(1)) for m in FENCE.finditer(text)]


def test_extraction_finds_the_fences(tmp_path):
    md = "intro\n```python\nx = 1\n```\ntext\n```python\n# not run\nimport torch\n```\n"
    found = FENCE.findall(md)
    assert found == ["x = 1\n", "# not run\nimport torch\n"]


@pytest.mark.parametrize("page", PAGES)
def test_page_blocks_run_in_order(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    found = blocks(page)
    run = [(line, src) for line, src in found if not src.lstrip().startswith(SKIP)]
    assert len(run) >= 3, f"{page}: expected runnable python blocks, found {len(run)}"
    namespace = {"__name__": f"docs_{page[:-3]}"}
    # pages may set options (pmap's the number of virtual devices): restored afterwards
    with mt.config.override(**dict(mt.config.values())):
        for line, src in run:
            # padded so that tracebacks give the line numbers of the page itself
            code = compile("\n" * (line - 1) + src, str(DOCS / page), "exec")
            try:
                exec(code, namespace)  # noqa: S102 (the project's own documentation)
            except Exception as e:
                raise AssertionError(f"{page}: the block at line {line} failed: {e!r}") \
                    from e


@pytest.mark.parametrize("page", PAGES)
def test_skipped_blocks_are_few(page):
    found = blocks(page)
    skipped = [src for _, src in found if src.lstrip().startswith(SKIP)]
    assert len(skipped) <= len(found) // 2, f"{page}: most blocks are marked `{SKIP}`"
