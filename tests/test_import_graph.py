"""The layers import downwards only, and no modules of transforms and lax import one
another in a circle (docs/architecture.md, "Layers"): read from the source with `ast`,
function-level imports included. (core's array, backend, trace and jaxpr modules refer to
one another inside functions: a backend compiles jaxprs, a jaxpr's values are arrays on
devices; they are one layer.)"""

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1] / "mytorch"
# what each layer may import of mytorch: itself and the layers below it
ALLOWED = {
    "core": ("core", "errors"),
    "transforms": ("core", "errors", "transforms"),
    "lax": ("core", "errors", "transforms", "lax"),
}


def _module(path):
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path):
    """The mytorch modules `path` imports (a `from package import module` names the
    module)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if not node.module.startswith("mytorch"):
                continue
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                is_module = (ROOT.parent / (sub.replace(".", "/") + ".py")).exists() or (
                    ROOT.parent / sub.replace(".", "/") / "__init__.py").exists()
                out.add(sub if is_module else node.module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("mytorch"))
    return out


def _graph():
    return {_module(p): _imports(p) for layer in ALLOWED for p in (ROOT / layer).rglob("*.py")}


def test_no_layer_imports_a_layer_above_it():
    bad = []
    for mod, targets in _graph().items():
        layer = mod.split(".")[1]
        for t in targets:
            top = t.split(".")[1] if t.count(".") else "mytorch"
            if top not in ALLOWED[layer]:
                bad.append(f"{mod} imports {t}")
    assert not bad, "imports that point up a layer:\n" + "\n".join(sorted(bad))


def test_no_import_circle_in_transforms_and_lax():
    graph = {m: t for m, t in _graph().items() if not m.startswith("mytorch.core")}
    state, stack, circles = {}, [], []

    def visit(m):  # depth-first search; a back edge closes a circle
        state[m] = "open"
        stack.append(m)
        for t in sorted(graph.get(m, ())):
            if t not in graph:
                continue
            if state.get(t) == "open":
                circles.append(stack[stack.index(t):] + [t])
            elif t not in state:
                visit(t)
        stack.pop()
        state[m] = "done"

    for m in sorted(graph):
        if m not in state:
            visit(m)
    assert not circles, "import circles:\n" + "\n".join(" -> ".join(c) for c in circles)
