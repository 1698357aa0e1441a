"""No import circles among numsweep's modules, and every import goes down the floors
(docs/architecture.md): a room imports its own modules and the rooms on floors below it, never a
room beside it or above it.

    floor 0  records, compat              the records contract; every private-API use of a library
    floor 1  trainables (the torch library), analysis    peers: neither imports the other
    floor 2  trainables.worker            the Ray Train + DeepSpeed worker
    floor 3  orchestrator.sweep           the sweep file, search space, objectives, preflight, plan
    floor 4  orchestrator.run             the Tune driver and its callbacks
    floor 5  orchestrator                 cli, status, store_resume
    floor 6  studies, bench, cluster

And a room may be kept free of a library: `orchestrator.sweep` never imports Ray, neither itself
nor through any project module it imports (`LIBRARY_FREE`), so a sweep is read, checked and
planned without Ray.

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
    "orchestrator.sweep": 3,
    "orchestrator.run": 4,
    "orchestrator": 5,
    "studies": 6,
    "bench": 6,
    "cluster": 6,
}
"""Each room and its floor; a module's room is the longest room name its dotted name starts with."""

# Circles another change removes; an entry here that is no longer a circle fails the test, so the
# list only shrinks. Empty: a new circle fails the test.
KNOWN_CIRCLES: set[frozenset[str]] = set()

LIBRARY_FREE: dict[str, str] = {"orchestrator.sweep": "ray"}
"""Room -> a library none of its modules may import, directly or through the project modules
they import (lazy and type-only imports included)."""


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


def external_imports(path: Path, modules: dict[str, Path]) -> set[str]:
    """The top-level names of the libraries the module at `path` imports (anywhere in it)."""
    names = imported_names(ast.parse(path.read_text(), str(path)), modules)
    return {name.split(".")[0] for name in names if name not in modules}


def library_paths(room_name: str, library: str, modules: dict[str, Path]) -> list[str]:
    """Each way a module of `room_name` reaches an import of `library`, as 'a -> b -> c
    imports library' (the shortest path from each module that does)."""
    graph = import_graph(modules)
    found = []
    for start in sorted(m for m in graph if room(m) == room_name):
        queue, came_from = [start], {start: None}
        while queue:
            module = queue.pop(0)
            if library in external_imports(modules[module], modules):
                path = [module]
                while came_from[path[-1]] is not None:
                    path.append(came_from[path[-1]])
                found.append(" -> ".join(reversed(path)) + f" imports {library}")
                break
            for target in sorted(graph[module]):
                if target not in came_from:
                    came_from[target] = module
                    queue.append(target)
    return found


def test_the_library_rule_sees_imports_through_other_modules_and_lazy_ones(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "plain").mkdir(parents=True)
    for init in (pkg / "__init__.py", pkg / "plain" / "__init__.py"):
        init.write_text("")
    (pkg / "plain" / "schema.py").write_text("import yaml\nfrom pkg.helper import run\n")
    (pkg / "helper.py").write_text("def run():\n    from ray import tune\n")
    (pkg / "plain" / "clean.py").write_text("import json\n")
    modules = project_modules(tmp_path, ("pkg",))
    saved = dict(ROOMS)
    ROOMS.update({"pkg": 0, "pkg.plain": 1})
    try:
        assert library_paths("pkg.plain", "ray", modules) == [
            "pkg.plain.schema -> pkg.helper imports ray"
        ]
        assert library_paths("pkg.plain", "yaml", modules) == ["pkg.plain.schema imports yaml"]
    finally:
        ROOMS.clear()
        ROOMS.update(saved)


def test_a_library_free_room_never_reaches_the_library():
    modules = project_modules(ROOT)
    for room_name, library in LIBRARY_FREE.items():
        assert any(room(m) == room_name for m in modules), f"no room {room_name}"
        bad = library_paths(room_name, library, modules)
        assert not bad, f"{room_name} must not import {library}:\n" + "\n".join(bad)


def test_the_sweep_room_loads_without_ray():
    """What the rule above cannot see: a package's `__init__` runs on import, and may import."""
    sweep = sorted(m for m in project_modules(ROOT) if room(m) == "orchestrator.sweep")
    code = f"import sys, {', '.join(sweep)}; print('ray' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "False"


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
