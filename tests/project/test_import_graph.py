"""No import circles among numsweep's modules, and every import goes down the floors
(docs/architecture.md): a room imports its own modules and the rooms on floors below it, never a
room beside it or above it.

    floor 0  records, compat              the records contract; every private-API use of a library
    floor 1  trainables (the torch library), analysis    peers: neither imports the other
    floor 2  trainables.worker            the Ray Train + DeepSpeed worker
    floor 3  orchestrator
    floor 4  studies, bench, cluster

What counts as an import: every `import` / `from … import` statement of a module, wherever it
stands: at module level, under `if TYPE_CHECKING:`, inside a function or a class. A circle closed
by a lazy or type-only import still makes two modules depend on each other (neither can be read,
moved or tested without the other); the fix is a third module both import, or the lower module
taking plain values. Relative imports are not used in these packages. An import of `a.b.c` is an
edge to the deepest project module it names (`from a.b import c` to `a.b.c` when that is a
module), not to the packages above it: every submodule import runs its package's `__init__`, so
counting those edges would make each package and its own submodules a circle.

    python tests/project/test_import_graph.py      # print the circles (and the graph's size)
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = (
    "records",
    "compat",
    "orchestrator",
    "trainables",
    "analysis",
    "studies",
    "bench",
    "cluster",
)

ROOMS: dict[str, int] = {
    "records": 0,
    "compat": 0,
    "trainables": 1,
    "analysis": 1,
    "trainables.worker": 2,
    "orchestrator": 3,
    "studies": 4,
    "bench": 4,
    "cluster": 4,
}
"""Each room and its floor; a module's room is the longest room name its dotted name starts with."""

# Circles another change removes; an entry here that is no longer a circle fails the test, so the
# list only shrinks. trainables.worker.entry <-> trainables.worker.loop (REPLAYED_KEY and the report
# protocol): issue 24, item 4, the worker refactor.
KNOWN_CIRCLES: set[frozenset[str]] = set()


def project_modules(root: Path, packages: tuple[str, ...] = PACKAGES) -> dict[str, Path]:
    """Dotted module name -> file, for every .py file under the packages (a package as its
    `__init__.py`)."""
    modules = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


def imported_names(tree: ast.Module, modules: dict[str, Path]) -> set[str]:
    """Every dotted name an import statement anywhere in `tree` imports."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                names.add(full if full in modules else node.module)
    return names


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the project modules it imports."""
    graph = {}
    for name, path in modules.items():
        targets = set()
        for imported in imported_names(ast.parse(path.read_text(), str(path)), modules):
            while imported and imported not in modules:
                imported = imported.rpartition(".")[0]
            if imported and imported != name:
                targets.add(imported)
        graph[name] = targets
    return graph


def circles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(frozenset(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_finder_sees_type_only_and_lazy_circles(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "schema.py").write_text("from pkg.checks import check\n")
    (pkg / "checks.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.schema import Config\n"
    )
    (pkg / "entry.py").write_text("def run():\n    from pkg import loop\n")
    (pkg / "loop.py").write_text("import pkg.entry\n")
    (pkg / "leaf.py").write_text("from pkg.schema import check\nimport json\n")
    graph = import_graph(project_modules(tmp_path, ("pkg",)))
    assert graph["pkg.leaf"] == {"pkg.schema"}
    assert set(circles(graph)) == {
        frozenset({"pkg.schema", "pkg.checks"}),
        frozenset({"pkg.entry", "pkg.loop"}),
    }


def test_no_import_circles():
    graph = import_graph(project_modules(ROOT))
    assert len(graph) > 50  # the packages were found
    found = set(circles(graph))
    new = found - KNOWN_CIRCLES
    assert not new, "import circles: " + "; ".join(" <-> ".join(sorted(c)) for c in new)
    gone = KNOWN_CIRCLES - found
    assert not gone, f"no longer circles, remove from KNOWN_CIRCLES: {gone}"


def room(module: str) -> str:
    """The room `module` stands in: the longest of ROOMS that is it or a package above it."""
    return max((r for r in ROOMS if module == r or module.startswith(r + ".")), key=len)


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """Every import that goes to a room beside or above the importer's, as 'a -> b'."""
    bad = []
    for module, targets in sorted(graph.items()):
        here = room(module)
        for target in sorted(targets):
            there = room(target)
            if there != here and ROOMS[there] >= ROOMS[here]:
                bad.append(
                    f"{module} ({here}, floor {ROOMS[here]}) -> {target} ({there}, floor "
                    f"{ROOMS[there]})"
                )
    return bad


def test_the_floor_rule_catches_an_import_upward_or_sideways():
    graph = {
        "records.layout": {"analysis.result"},
        "analysis.ablation": {"records.reader", "trainables.losses"},
        "trainables.worker.loop": {"trainables.losses", "records.metric_names"},
        "trainables.losses": {"trainables.worker.loop"},
        "orchestrator.cli": {"trainables.worker.entry", "analysis.report", "records.writer"},
    }
    assert upward_imports(graph) == [
        "analysis.ablation (analysis, floor 1) -> trainables.losses (trainables, floor 1)",
        "records.layout (records, floor 0) -> analysis.result (analysis, floor 1)",
        "trainables.losses (trainables, floor 1) -> trainables.worker.loop (trainables.worker, "
        "floor 2)",
    ]


def test_every_import_goes_down_the_floors():
    graph = import_graph(project_modules(ROOT))
    assert {room(m) for m in graph} == set(ROOMS)  # every room was found
    bad = upward_imports(graph)
    assert not bad, "imports that go up or sideways:\n" + "\n".join(bad)


def test_the_records_contract_needs_neither_polars_nor_torch():
    """The worker names its metrics and the layout without the analysis stack."""
    code = (
        "import sys, records.metric_names, records.layout, records.errors; "
        "print(sorted(m for m in ('polars', 'torch', 'scipy') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


if __name__ == "__main__":
    graph = import_graph(project_modules(ROOT))
    for circle in circles(graph):
        print(" <-> ".join(sorted(circle)))
    print(f"{len(graph)} modules, {sum(map(len, graph.values()))} imports", file=sys.stderr)
