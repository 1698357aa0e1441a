"""Loads a study's `tables.py` or another of its scripts (studies/<name>/*.py are scripts, not
package modules) for the tests of its pre-registered rules."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def study_tables(study: str, script: str = "tables") -> ModuleType:
    """studies/`study`/`script`.py (tables.py unless told) as a module."""
    spec = importlib.util.spec_from_file_location(
        f"{study}_{script}", ROOT / "studies" / study / f"{script}.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
