"""The analysis tests' fixtures: `golden`, the hand-written 3-trial store of
tests/analysis_fixtures.py, written afresh for each test."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.analysis_fixtures import write_golden_store


@pytest.fixture
def golden(tmp_path: Path) -> Path:
    return write_golden_store(tmp_path / "results")
