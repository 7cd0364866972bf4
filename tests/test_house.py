"""One house (issue 29): the project's own import graph has no cycle, its arrows point down, and imports of the
project's own modules are not hidden inside functions.

The graph is measured from the source as /work/notes/house_metrics.py does: every ``import`` / ``from … import`` in
the five packages — inside functions and ``if TYPE_CHECKING:`` blocks too — resolved to the project module it names
(``from pkg import mod`` to ``pkg.mod`` when that is a module, else to ``pkg``; relative imports from the importing
package). Layers, top to bottom: spectune → dashboard, runner → analysis → ingest.
"""

from __future__ import annotations

import ast
import functools
import sys
from dataclasses import dataclass, field
from pathlib import Path

from tests.conftest import REPO

PACKAGES = ("analysis", "ingest", "runner", "dashboard", "spectune")
# What each layer must never import (an arrow up, or sideways into the command line).
FORBIDDEN = {
    "ingest": ("analysis", "runner", "dashboard", "spectune"),
    "analysis": ("runner", "dashboard", "spectune"),
}
MAX_INNER_IMPORTS = 15  # the deliberate lazy imports the whole tree may keep, each with a comment saying why


@dataclass
class Graph:
    edges: dict[str, set[str]] = field(default_factory=dict)
    inner: list[str] = field(default_factory=list)  # "module:line" of each project import inside a function


def import_graph(root: Path) -> Graph:
    """The project's module graph under ``root`` (the five packages' ``.py`` files)."""
    mods: dict[str, Path] = {}
    for p in root.rglob("*.py"):
        rel = p.relative_to(root)
        if rel.parts[0] not in PACKAGES:
            continue
        name = ".".join(rel.with_suffix("").parts)
        mods[name.removesuffix(".__init__")] = p

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    g = Graph(edges={m: set() for m in mods})
    for m, p in mods.items():
        tree = ast.parse(p.read_text(encoding="utf-8"))
        pkg = m if p.name == "__init__.py" else m.rpartition(".")[0]
        in_func = {id(x) for f in ast.walk(tree) if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
                   for x in ast.walk(f)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = pkg.split(".")[: len(pkg.split(".")) - (node.level - 1)]
                    base = ".".join(parts + ([node.module] if node.module else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            else:
                continue
            own = [t for t in targets if t.split(".")[0] in PACKAGES]
            for t in own:
                r = resolve(t)
                if r and r != m:
                    g.edges[m].add(r)
            if own and id(node) in in_func:
                g.inner.append(f"{m}:{node.lineno}")
    return g


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges[v]:
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
                out.append(sorted(comp))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10_000))
    try:
        for v in sorted(edges):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return out


def upward(edges: dict[str, set[str]]) -> list[str]:
    """Every arrow from a layer into one it must not import, none allowed: the ``python -m analysis|ingest|runner``
    aliases (a package's ``__main__``) included, which run spectune/alias.py without importing spectune."""
    return sorted(f"{m} -> {t}" for m, targets in edges.items() for t in targets
                  if t.split(".")[0] in FORBIDDEN.get(m.split(".")[0], ()))


def packages(edges: dict[str, set[str]]) -> dict[str, set[str]]:
    """The graph counted per top-level package (an arrow between two modules is one between their packages)."""
    out: dict[str, set[str]] = {}
    for m, targets in edges.items():
        top = m.split(".")[0]
        out.setdefault(top, set()).update(t.split(".")[0] for t in targets if t.split(".")[0] != top)
    return out


@functools.cache
def repo_graph() -> Graph:
    return import_graph(REPO)


def test_the_measure_sees_cycles_hidden_inner_imports_and_arrows_up(tmp_path: Path) -> None:
    """On a small tree with one of each fault: a cycle closed by an import inside a function, a TYPE_CHECKING
    import, a relative import, and ingest importing analysis."""
    for pkg in ("analysis", "ingest"):
        (tmp_path / pkg).mkdir()
        (tmp_path / pkg / "__init__.py").write_text("")
    (tmp_path / "analysis" / "a.py").write_text("from analysis import b\n")
    (tmp_path / "analysis" / "b.py").write_text("def f():\n    from . import a\n    return a\n")
    (tmp_path / "analysis" / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from analysis.d import X\n")
    (tmp_path / "analysis" / "d.py").write_text("from analysis.c import TYPE_CHECKING\n")
    (tmp_path / "ingest" / "x.py").write_text("import json\nfrom analysis.a import b\n")
    g = import_graph(tmp_path)
    assert cycles(g.edges) == [["analysis.a", "analysis.b"], ["analysis.c", "analysis.d"]]
    assert g.inner == ["analysis.b:2"]
    assert upward(g.edges) == ["ingest.x -> analysis.a"]
    assert cycles(packages(g.edges)) == []  # analysis → ingest only
    (tmp_path / "ingest" / "__main__.py").write_text("from analysis import a\n")  # an alias importing up
    (tmp_path / "analysis" / "e.py").write_text("from ingest import x\n")
    g = import_graph(tmp_path)
    assert cycles(packages(g.edges)) == [["analysis", "ingest"]]
    assert "ingest.__main__ -> analysis.a" in upward(g.edges)


def test_no_import_cycle_counting_imports_inside_functions() -> None:
    found = cycles(repo_graph().edges)
    assert found == [], "import cycles (every import counted, inside functions too):\n" + "\n".join(
        " ".join(c) for c in found)


def test_no_cycle_between_packages() -> None:
    """Counted per package too: an arrow from analysis, ingest or runner (their ``__main__`` aliases included) up to
    spectune would close spectune → analysis → spectune."""
    found = cycles(packages(repo_graph().edges))
    assert found == [], "package cycles: " + "; ".join(" ".join(c) for c in found)


def test_arrows_point_down() -> None:
    """spectune → dashboard, runner → analysis → ingest: ingest imports none of the others, analysis only ingest."""
    assert upward(repo_graph().edges) == []


def test_few_imports_of_the_project_inside_functions() -> None:
    """Each one left is a deliberate lazy import (a start-up path that must not load a heavy module), with a
    comment saying why. Fails until every part of issue 29 has landed (the CLI and dashboard modules)."""
    inner = repo_graph().inner
    assert len(inner) <= MAX_INNER_IMPORTS, (
        f"{len(inner)} imports of the project's own modules inside functions (at most {MAX_INNER_IMPORTS}): "
        + ", ".join(sorted(inner)))
