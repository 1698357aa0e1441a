"""pyproject.toml's requirement of each library compat checks is exactly its checked range
(issue 60: sympy was open in pyproject but < 1.15 in compat, torch open but < 2.14, Ray and
DeepSpeed pinned tighter than compat's ranges), so pip installs nothing `numsweep sweep` would
refuse and refuses nothing it would run; every strict range is in the pre-launch check; and the
Makefile's torch stays inside torch's range."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

import compat

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def requirements(group: list[str]) -> dict[str, Requirement]:
    reqs = [Requirement(text) for text in group]
    return {canonicalize_name(r.name): r for r in reqs}


def test_each_checked_library_is_required_in_exactly_its_checked_range():
    sweep = requirements(PROJECT["optional-dependencies"]["sweep"])
    checked = compat.checked_ranges()
    assert {c.library for c in checked} == {
        "ray",
        "deepspeed",
        "mathematics_dataset",
        "sympy",
        "torch",
    }
    for c in checked:
        req = sweep.get(canonicalize_name(c.library))
        assert req is not None, f"{c.library}: not in pyproject's sweep extra"
        assert req.specifier == SpecifierSet(c.spec), (c.library, str(req.specifier), c.spec)
        assert Version(c.checked) in req.specifier, (c.library, c.checked)


def test_every_strict_range_is_checked_before_launch(monkeypatch):
    """check_installed() runs each strict range's check (sympy's included): each, moved out of
    reach in turn, makes it raise naming that library."""
    from compat.versions import CheckedRange, UnsupportedVersion

    for c in compat.strict_ranges():
        far = CheckedRange(c.library, ">=999", "999", c.module)
        with monkeypatch.context() as m:
            m.setattr(compat, "strict_ranges", lambda far=far: (far,))
            with pytest.raises(UnsupportedVersion, match=c.library):
                compat.check_installed()
    assert "sympy" in {c.library for c in compat.strict_ranges()}


def test_the_base_install_has_no_sweep_library():
    """`pip install numsweep` is the analysis-only install (docs/install.md)."""
    base = requirements(PROJECT["dependencies"])
    heavy = {"torch", "ray", "deepspeed", "optuna", "transformers", "mathematics-dataset"}
    assert not heavy & set(base), heavy & set(base)


def test_the_makefiles_torch_is_in_torchs_range():
    spec = re.search(r"^TORCH_SPEC \?= torch==(\S+)$", (ROOT / "Makefile").read_text(), re.M)
    assert spec is not None
    torch = next(c for c in compat.checked_ranges() if c.library == "torch")
    assert Version(spec[1]) in SpecifierSet(torch.spec)
