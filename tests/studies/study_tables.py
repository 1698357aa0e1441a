"""Loads a study's `tables.py` or another of its scripts (studies/<name>/*.py are scripts, not
package modules) for the tests of its pre-registered rules."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def study_tables(study: str, script: str = "tables") -> ModuleType:
    """studies/`study`/`script`.py (tables.py unless told) as a module. Its folder is on the
    import path while it loads, as when it runs as a script (a script imports its siblings)."""
    folder = ROOT / "studies" / study
    spec = importlib.util.spec_from_file_location(f"{study}_{script}", folder / f"{script}.py")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(folder))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(folder))
    return module
