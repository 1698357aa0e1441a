"""Loads a study's `tables.py` (studies/<name>/tables.py is a script, not a package module) for
the tests of its pre-registered verdict rules."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def study_tables(study: str) -> ModuleType:
    """studies/`study`/tables.py as a module."""
    spec = importlib.util.spec_from_file_location(
        f"{study}_tables", ROOT / "studies" / study / "tables.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
