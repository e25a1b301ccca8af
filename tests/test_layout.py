"""The package layout: folders by stage, no import circle, no module past about 800 lines.

The import graph is read here from the source (every `import` and `from ... import` anywhere in a
module: top level, inside functions, and under `if TYPE_CHECKING:`), not from the product, so a lazy
import cannot hide a circle. An edge goes to the module named, or to `pkg.name` when that is a module.
Importing a subpackage runs its `__init__`; those implicit edges are not counted (every `__init__`
here imports nothing of its siblings' users).
"""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parent.parent / "costopt"
MAX_LINES = 800
STAGES = {"core", "hardware", "perf", "search", "purchase", "measure", "cli", "data", "catalogs"}


def _modules() -> dict[str, Path]:
    out = {}
    for p in PKG.rglob("*.py"):
        parts = list(p.relative_to(PKG.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


def _graph() -> dict[str, set[str]]:
    mods = _modules()
    graph: dict[str, set[str]] = {}
    for mod, p in mods.items():
        pkg = mod if p.name == "__init__.py" else mod.rsplit(".", 1)[0]
        deps: set[str] = set()
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                    name = ".".join(base + ([node.module] if node.module else []))
                else:
                    name = node.module or ""
                for a in node.names:
                    full = f"{name}.{a.name}"
                    deps.add(full if full in mods else name)
            elif isinstance(node, ast.Import):
                deps.update(a.name for a in node.names)
        graph[mod] = {d for d in deps if d in mods and d != mod}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each a circle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_cycle_finder_finds_a_planted_circle():
    g = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _cycles(g) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_circle():
    assert _cycles(_graph()) == []


def test_graph_sees_lazy_and_type_checking_imports():
    # search.api imports the engine's pieces; why reads the result type only under TYPE_CHECKING
    g = _graph()
    assert "costopt.search.evaluation" in g["costopt.purchase.why"]
    assert "costopt.perf.timing" in g["costopt.search.api"]


def test_modules_at_most_about_800_lines():
    long = {str(p.relative_to(PKG.parent)): n for p in PKG.rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}


def test_top_level_is_folders_by_stage():
    loose = sorted(p.name for p in PKG.iterdir() if p.suffix == ".py" and p.name not in ("__init__.py", "__main__.py"))
    folders = {p.name for p in PKG.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert loose == []
    assert folders <= STAGES


def test_core_imports_no_other_stage():
    g = _graph()
    for mod, deps in g.items():
        if mod.startswith("costopt.core."):
            assert all(d.startswith("costopt.core") for d in deps), (mod, deps)
