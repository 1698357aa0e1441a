"""Every committed study experiment that ran from its shipped sweep file, without overrides,
resumes from it: the config its manifest recorded equals the file read by today's code. A new
field, or a changed default, that broke this would make `numsweep sweep FILE` (and `make
study-…`) refuse the committed store as a "different config" (exit 2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.cli import stored_sweep
from orchestrator.sweep_file import load_sweep
from tests.sweep_runs import ROOT

STUDIES = ROOT / "studies"
# Run with overrides on the command line (Makefile): the best setting of the search, the rates
# chosen by the learning-rate grid. Their manifests hold those, the files do not.
WITH_OVERRIDES = {"del_cpu/confirm.yaml", "scaling_code/gate.yaml"}


def committed_runs() -> list[tuple[Path, Path]]:
    """(sweep file, results root) of every study experiment whose manifest is committed."""
    runs = []
    for path in sorted(STUDIES.rglob("*.yaml")):
        if str(path.relative_to(STUDIES)) in WITH_OVERRIDES:
            continue
        experiment = load_sweep(path).experiment
        for results in (path.parent / "results", path.parent / "pilot" / "results"):
            if (results / "experiments" / experiment / "manifest.json").is_file():
                runs.append((path, results))
    return runs


RUNS = committed_runs()


def test_the_studies_have_committed_runs() -> None:
    assert len(RUNS) >= 10, RUNS  # the four studies, their pilots and calibrations


@pytest.mark.parametrize(
    ("sweep_file", "results"), RUNS, ids=[str(f.relative_to(STUDIES)) for f, _ in RUNS]
)
def test_a_committed_experiment_resumes_with_its_sweep_file(sweep_file: Path, results: Path):
    sweep = load_sweep(sweep_file)
    assert stored_sweep(str(results), sweep.experiment) == sweep
