"""The shape of the source tree (ARCHITECTURE.md): no import cycle, counting every import statement (type-only ones
under TYPE_CHECKING and imports inside functions included), and no module past the size where one job has become
several. The layer rules themselves are import-linter contracts in pyproject.toml (scripts/check.sh runs them)."""

from __future__ import annotations

from pathlib import Path

import grimp

import contextgraph

MAX_MODULE_LINES = 400
SOURCE = Path(contextgraph.__file__).parent


def import_cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), i.e. every set of modules that import
    each other round a cycle; a module importing itself counts too."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in edges.get(v, ()):
                cycles.append(sorted(component))

    for module in sorted(edges):
        if module not in index:
            visit(module)
    return cycles


def test_the_cycle_finder_finds_cycles():
    assert import_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert import_cycles({"a": {"b"}, "b": set()}) == []
    assert import_cycles({"a": {"a"}}) == [["a"]]


def test_no_import_cycle_in_src():
    graph = grimp.build_graph("contextgraph", exclude_type_checking_imports=False)
    edges = {m: {n for n in graph.find_modules_directly_imported_by(m) if n in graph.modules} for m in graph.modules}
    assert import_cycles(edges) == []


def test_no_module_over_the_size_limit():
    sizes = {str(p.relative_to(SOURCE)): len(p.read_text().splitlines()) for p in SOURCE.rglob("*.py")}
    assert {name: n for name, n in sizes.items() if n > MAX_MODULE_LINES} == {}
