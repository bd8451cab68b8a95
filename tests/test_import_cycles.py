"""No import cycle anywhere in ``annotate`` or ``ranking``.

The graph has an edge A -> B for every import of B written in A, wherever it is: at
module level, under ``if TYPE_CHECKING:``, or inside a function (a lazy import that
closes a cycle is still two modules that cannot be read, tested or run apart: the
``annotate.__main__`` <-> ``cli_analysis`` cycle lost the analysis commands under
``python -m annotate``). ``from P import name`` is an edge to ``P.name`` when that is a
module, else to ``P``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("annotate", "ranking")

EXPECTED_CYCLES: list[set[str]] = []
"""Known cycles still being removed (each with the issue that removes it); keep it empty."""


def module_files() -> dict[str, Path]:
    out: dict[str, Path] = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def imports_of(name: str, path: Path, modules: set[str]) -> set[str]:
    is_package = path.name == "__init__.py"
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")
                base = base[: len(base) - node.level + (1 if is_package else 0)]
                parent = ".".join([*base, *([node.module] if node.module else [])])
            else:
                parent = node.module or ""
            targets = [
                f"{parent}.{alias.name}" if f"{parent}.{alias.name}" in modules else parent
                for alias in node.names
            ]
        else:
            continue
        out.update(t for t in targets if t in modules and t != name)
    return out


def import_graph() -> dict[str, set[str]]:
    files = module_files()
    names = set(files)
    return {name: imports_of(name, path, names) for name, path in files.items()}


def cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component: set[str] = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(component)
    return found


def test_the_graph_sees_imports() -> None:
    graph = import_graph()
    assert "annotate.services.report_model" in graph["annotate.services.report"]
    assert "annotate.views" in graph["annotate.screens.vote_base"]
    assert "annotate.services.voting" in graph["annotate.screens.vote_base"]  # TYPE_CHECKING
    assert "ranking.errors" in graph["ranking.eip"]
    assert "annotate.screens.welcome" in graph["annotate.app"]  # inside a method


def test_the_cycle_finder_finds_cycles() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a", "e"}, "e": {"d"}, "f": set()}
    assert sorted(map(sorted, cycles(graph))) == [["a", "b", "c"], ["d", "e"]]


def test_no_import_cycles() -> None:
    found = [c for c in cycles(import_graph()) if c not in EXPECTED_CYCLES]
    assert not found, "import cycles: " + "; ".join(
        " <-> ".join(sorted(c)) for c in sorted(found, key=sorted)
    )
