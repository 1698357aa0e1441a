"""Every use of a library's private API sits in `compat/` (docs/architecture.md). In any other room
this test fails on each of these, read from the source (lazy and type-only code included):

1. a private module imported: `import ray._private.worker`, `from torch._inductor import config`;
2. a private name imported from a library: `from ray.air.integrations.wandb import _WandbLogging…`;
3. a private keyword passed: `ray.init(_system_config=…)`;
4. `sys.modules` written: an item assigned or deleted;
5. a private attribute of anything but numsweep's own: `x._name` where `x` is not `self` or `cls`,
   nor a name bound to numsweep (imported from a numsweep package, or a function or class defined
   at the top of the module): a library module (`torch.cuda._sleep`), a parameter or a local
   (`searcher._ot_trials`), a call's result (`super()._hook()`), an attribute (`self._x._y`);
6. `self._name` or `cls._name` where `_name` is not numsweep's: neither the class nor a numsweep
   class it derives from defines it (a method, a class attribute, or an assignment to
   `self._name`), as with a library base class's attribute (`self._trial_logging_futures`); or
   where a library class it derives from has `_name` (looked up on the imported class): a use or an
   override of a library's private method or class attribute (`_logger_actor_cls = …`);
7. `getattr`, `setattr`, `hasattr` or `delattr` given a private name as a string.

Private: starts with `_` and is not a dunder (`__name__`); `_` alone is no name. Not seen: a
private name reached through data (`vars(x)["_name"]`, `x.__dict__`); an instance attribute
that a library class sets in its `__init__` and a numsweep subclass assigns as well (the class,
not an instance, is what is looked up); the library ancestors behind a base class that is neither
imported nor defined at the top of the module (a class defined in a function, a call). Each kind
is fed to the checker first (`test_the_checker_finds_each_kind_of_use`), so a pass means
something.
"""

from __future__ import annotations

import ast
import functools
import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.project.test_import_graph import PACKAGES, ROOT, project_modules

ROOMS_OUTSIDE_COMPAT = tuple(room for room in PACKAGES if room != "compat")
REFLECTION = ("getattr", "setattr", "hasattr", "delattr")


def private(name: str) -> bool:
    dunder = name.startswith("__") and name.endswith("__")
    return name.startswith("_") and name != "_" and not dunder


def _private_path(dotted: str) -> bool:
    return any(private(part) for part in dotted.split("."))


@functools.cache
def library_object(dotted: str) -> Any:
    """The object a library's dotted name names (None where it cannot be imported)."""
    module, rest = dotted, []
    while module:
        try:
            found: Any = importlib.import_module(module)
        except ImportError:
            module, _, last = module.rpartition(".")
            rest.insert(0, last)
            continue
        for name in rest:
            found = getattr(found, name, None)
        return found
    return None


@dataclass
class Module:
    """One module's source as the checker reads it: its import bindings and top-level names."""

    tree: ast.Module
    imports: dict[str, str] = field(default_factory=dict)
    """Name bound by an import -> the dotted name it stands for."""
    classes: dict[str, ast.ClassDef] = field(default_factory=dict)
    top: set[str] = field(default_factory=set)
    """Functions and classes defined at the top of the module."""

    @classmethod
    def read(cls, path: Path) -> Module:
        found = cls(ast.parse(path.read_text(), str(path)))
        for node in ast.walk(found.tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname:
                        found.imports[a.asname] = a.name
                    else:
                        top = a.name.split(".")[0]
                        found.imports[top] = top
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for a in node.names:
                    found.imports[a.asname or a.name] = f"{node.module}.{a.name}"
        for node in found.tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                found.top.add(node.name)
            if isinstance(node, ast.ClassDef):
                found.classes[node.name] = node
        return found


def _dotted(expr: ast.expr) -> str | None:
    """`a.b.c` as text; None for anything else (a call, a subscript)."""
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute):
        inner = _dotted(expr.value)
        return None if inner is None else f"{inner}.{expr.attr}"
    return None


def _defined_in(node: ast.ClassDef) -> set[str]:
    """Names a class body defines: methods, nested classes, class attributes, `self.x = …`."""
    names = set()
    for item in node.body:
        if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(item.name)
        elif isinstance(item, ast.Assign):
            names |= {t.id for t in item.targets if isinstance(t, ast.Name)}
        elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            names.add(item.target.id)
    for sub in ast.walk(node):
        stored = isinstance(sub, ast.Attribute) and isinstance(sub.ctx, ast.Store | ast.Del)
        if stored and isinstance(sub.value, ast.Name) and sub.value.id in ("self", "cls"):
            names.add(sub.attr)
    return names


@dataclass(frozen=True)
class Lineage:
    """What a class's ancestry says: names numsweep defines in it, the library classes in it."""

    defined: frozenset[str]
    libraries: tuple[Any, ...]
    """The imported library base classes (None where one cannot be imported)."""


class Checker:
    """Private-API uses in the modules of `project` (their files in `modules`)."""

    def __init__(self, modules: dict[str, Path], project: tuple[str, ...]) -> None:
        self.modules = modules
        self.project = project
        self.read = functools.cache(lambda name: Module.read(modules[name]))

    def ours(self, dotted: str) -> bool:
        return dotted.split(".")[0] in self.project

    def _class_at(self, dotted: str) -> tuple[Module, ast.ClassDef] | None:
        """The numsweep class a dotted name names, through a package's re-export too."""
        module, _, name = dotted.rpartition(".")
        if module not in self.modules:
            return None
        source = self.read(module)
        if name in source.classes:
            return source, source.classes[name]
        target = source.imports.get(name)
        return None if target is None or target == dotted else self._class_at(target)

    def lineage(
        self, source: Module, node: ast.ClassDef, seen: frozenset[int] = frozenset()
    ) -> Lineage:
        """`node`'s numsweep names and library classes, through its numsweep base classes."""
        defined, libraries = set(_defined_in(node)), []
        for base in node.bases:
            expr = base.value if isinstance(base, ast.Subscript) else base
            dotted = _dotted(expr)
            if dotted is None:
                continue
            root, _, rest = dotted.partition(".")
            if root in source.classes and not rest:
                found: tuple[Module, ast.ClassDef] | None = (source, source.classes[root])
            elif root in source.imports:
                full = source.imports[root] + (f".{rest}" if rest else "")
                if not self.ours(full):
                    libraries.append(library_object(full))
                    continue
                found = self._class_at(full)
            else:
                continue  # a builtin (object, Exception, …)
            if found is not None and id(found[1]) not in seen:
                inherited = self.lineage(*found, seen | {id(node)})
                defined |= inherited.defined
                libraries += inherited.libraries
        return Lineage(frozenset(defined), tuple(libraries))

    def uses(self, name: str) -> list[str]:
        """Each private-API use in module `name`, as 'line: what'."""
        source = self.read(name)
        found: list[tuple[int, str]] = []
        self._walk(source, source.tree, None, found)
        return [f"{line}: {what}" for line, what in sorted(found)]

    def _walk(self, source: Module, node: ast.AST, lineage: Lineage | None, found: list) -> None:
        if isinstance(node, ast.ClassDef):
            lineage = self.lineage(source, node)
            for item in node.body:
                names = []
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    names = [item.name]
                elif isinstance(item, ast.Assign):
                    names = [t.id for t in item.targets if isinstance(t, ast.Name)]
                for defined in filter(private, names):
                    owner = _library_owner(lineage, defined)
                    if owner:
                        found.append((item.lineno, f"overrides {owner}.{defined}"))
        self._check(source, node, lineage, found)
        for child in ast.iter_child_nodes(node):
            self._walk(source, child, lineage, found)

    def _check(self, source: Module, node: ast.AST, lineage: Lineage | None, found: list) -> None:
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Import):
            found += [(line, f"import {a.name}") for a in node.names if _private_path(a.name)]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if _private_path(node.module):
                found.append((line, f"from {node.module} import …"))
            elif not self.ours(node.module):
                found += [
                    (line, f"from {node.module} import {a.name}")
                    for a in node.names
                    if private(a.name)
                ]
        elif isinstance(node, ast.Call):
            found += [(line, f"keyword {k.arg}=") for k in node.keywords if private(k.arg or "")]
            named = _reflected(node)
            if named is not None:
                found.append((line, named))
        elif isinstance(node, ast.Assign | ast.Delete):
            for target in node.targets:
                if isinstance(target, ast.Subscript) and ast.unparse(target.value) == "sys.modules":
                    found.append((line, "sys.modules[…] written"))
        elif isinstance(node, ast.Attribute) and private(node.attr):
            why = self._attribute(source, node, lineage)
            if why:
                found.append((line, f"{ast.unparse(node)}: {why}"))

    def _attribute(self, source: Module, node: ast.Attribute, lineage: Lineage | None) -> str:
        """Why `x._name` is a private use ('' where it is numsweep's own)."""
        base = node.value
        if isinstance(base, ast.Name) and base.id in ("self", "cls"):
            if lineage is None:
                return "self outside a class"
            owner = _library_owner(lineage, node.attr)
            if owner:
                return f"{owner}'s"
            return "" if node.attr in lineage.defined else "defined by no numsweep class"
        if isinstance(base, ast.Name):
            bound = source.imports.get(base.id)
            if base.id in source.top or (bound is not None and self.ours(bound)):
                return ""
            return "not numsweep's"
        return "not numsweep's"


def _reflected(call: ast.Call) -> str | None:
    """`getattr(x, "_name")` and its kin as text; None for any other call."""
    if not (isinstance(call.func, ast.Name) and call.func.id in REFLECTION and len(call.args) > 1):
        return None
    name = call.args[1]
    if isinstance(name, ast.Constant) and isinstance(name.value, str) and private(name.value):
        return f"{call.func.id}(…, {name.value!r})"
    return None


def _library_owner(lineage: Lineage, name: str) -> str | None:
    """The library class (its name) among `lineage`'s that has `name`, if one does."""
    for library in lineage.libraries:
        if library is not None and hasattr(library, name):
            return getattr(library, "__qualname__", str(library))
    return None


SNIPPET = """\
import argparse, json, sys
import ray._private.worker
from torch._inductor import config
from ray.air.integrations.wandb import _WandbLoggingActor
from pkg.helpers import _shared, Base
ray.init(_system_config={}, num_cpus=1)
sys.modules["x"] = None
del sys.modules["x"]
json._default_decoder
def plan(searcher):
    return searcher._ot_trials, getattr(searcher, "_ot_trials"), _shared._cache
class Parser(argparse.ArgumentParser):
    _flag = True
    def _get_formatter(self):
        return super()._get_formatter()
    def show(self):
        self._seen = self._actions
        return self._seen, self._flag, self._inherited, self._missing._deeper
class Mine(Base):
    def run(self):
        return self._base_only
"""


def test_the_checker_finds_each_kind_of_use(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "helpers.py").write_text(
        "class Base:\n    def __init__(self):\n        self._base_only = 1\n_shared = None\n"
    )
    (pkg / "m.py").write_text(SNIPPET)
    checker = Checker(project_modules(tmp_path, ("pkg",)), ("pkg",))
    assert checker.uses("pkg.m") == [
        "2: import ray._private.worker",  # 1. a private module
        "3: from torch._inductor import …",
        "4: from ray.air.integrations.wandb import _WandbLoggingActor",  # 2. a private name
        "6: keyword _system_config=",  # 3. a private keyword
        "7: sys.modules[…] written",  # 4. sys.modules
        "8: sys.modules[…] written",
        "9: json._default_decoder: not numsweep's",  # 5. a library module's attribute
        "11: getattr(…, '_ot_trials')",  # 7. by name
        "11: searcher._ot_trials: not numsweep's",  # 5. a parameter's attribute
        "14: overrides ArgumentParser._get_formatter",  # 6. a library's private method
        "15: super()._get_formatter: not numsweep's",  # 5. a call's result
        "17: self._actions: defined by no numsweep class",  # 6. a library base's attribute
        "18: self._inherited: defined by no numsweep class",
        "18: self._missing._deeper: not numsweep's",  # 5. an attribute's attribute
        "18: self._missing: defined by no numsweep class",
    ]
    # numsweep's own: `_shared._cache` (a numsweep name), `self._seen` and `self._flag` (the
    # class's), `self._base_only` (a numsweep base class's, in another module)
    assert "21:" not in " ".join(checker.uses("pkg.m"))


def test_no_room_but_compat_uses_a_private_api():
    modules = project_modules(ROOT, ROOMS_OUTSIDE_COMPAT)
    assert len(modules) > 100  # the rooms were found
    checker = Checker(project_modules(ROOT), PACKAGES)
    uses = {name: checker.uses(name) for name in modules}
    uses = {name: found for name, found in uses.items() if found}
    assert not uses, "private API outside compat/: " + "; ".join(
        f"{name} {', '.join(found)}" for name, found in uses.items()
    )
