"""Every use of a library's private API sits in `compat/`: no module of another room imports a
library's private module (a dotted name with a part that starts with one underscore: `ray._private`,
`torch._inductor.config`, `ray.train.v2._internal…`), passes a private keyword
(`ray.init(_system_config=…)`) or writes `sys.modules`. The checker is run on a made-up package
first, so a pass means something."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.project.test_import_graph import PACKAGES, ROOT, project_modules

ROOMS_OUTSIDE_COMPAT = tuple(room for room in PACKAGES if room != "compat")


def _private(name: str) -> bool:
    return any(part.startswith("_") and not part.startswith("__") for part in name.split("."))


def private_uses(path: Path) -> list[str]:
    """Each private-API use in the file at `path`, as 'line: what'."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Import):
            found += [f"{line}: import {a.name}" for a in node.names if _private(a.name)]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if _private(node.module):
                found.append(f"{line}: from {node.module} import …")
        elif isinstance(node, ast.Call):
            found += [
                f"{line}: keyword {k.arg}=" for k in node.keywords if k.arg and _private(k.arg)
            ]
        elif isinstance(node, ast.Assign | ast.Delete):
            for target in node.targets:
                if isinstance(target, ast.Subscript) and ast.unparse(target.value) == "sys.modules":
                    found.append(f"{line}: sys.modules[…] written")
    return sorted(found, key=lambda use: int(use.split(":")[0]))


def test_the_checker_finds_each_kind_of_use(tmp_path):
    module = tmp_path / "m.py"
    module.write_text(
        "import sys\nimport ray._private.worker\nfrom torch._inductor import config\n"
        "from ray.train import report\nray.init(_system_config={}, num_cpus=1)\n"
        "sys.modules['x'] = None\ndel sys.modules['x']\nimport __future__\n"
    )
    assert private_uses(module) == [
        "2: import ray._private.worker",
        "3: from torch._inductor import …",
        "5: keyword _system_config=",
        "6: sys.modules[…] written",
        "7: sys.modules[…] written",
    ]


def test_no_room_but_compat_uses_a_private_api():
    modules = project_modules(ROOT, ROOMS_OUTSIDE_COMPAT)
    assert len(modules) > 100  # the rooms were found
    uses = {name: private_uses(path) for name, path in modules.items()}
    uses = {name: found for name, found in uses.items() if found}
    assert not uses, "private API outside compat/: " + "; ".join(
        f"{name} {', '.join(found)}" for name, found in uses.items()
    )
