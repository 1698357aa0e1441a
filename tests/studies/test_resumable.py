"""Every committed study experiment that ran from its shipped sweep file, without overrides,
resumes from it: the config its manifest recorded equals the file read by today's code. A new
field, or a changed default, that broke this would make `numsweep sweep FILE` (and `make
study-…`) refuse the committed store as a "different config" (exit 2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.cli import stored_sweep
from orchestrator.sweep.sweep_file import SweepConfig, load_sweep
from tests.sweep_runs import ROOT

STUDIES = ROOT / "studies"
# Run with overrides on the command line (Makefile): the best setting of the search, the rates
# chosen by the learning-rate grid. Their manifests hold those, the files do not.
WITH_OVERRIDES = {"del_cpu/confirm.yaml", "scaling_code/gate.yaml"}
STUDY_FILE = "study.yaml"
"""A study's study file (`numsweep study`, docs/studies.md): it names a sweep file, is not one."""


def committed_runs() -> list[tuple[Path, Path]]:
    """(sweep file, results root) of every study experiment whose manifest is committed."""
    runs = []
    for path in sorted(STUDIES.rglob("*.yaml")):
        if str(path.relative_to(STUDIES)) in WITH_OVERRIDES or path.name == STUDY_FILE:
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
    stored = stored_sweep(str(results), sweep.experiment)
    assert stored is not None and comparable(stored) == comparable(sweep)
    assert all(Path(p).is_absolute() for p in stored.trial.data.benchmarks.values())


def comparable(sweep: SweepConfig) -> SweepConfig:
    """`sweep` with its benchmark and instruction files cut to their last two path parts: a
    relative path is made absolute against the directory the run started in
    (orchestrator.sweep.local_paths), so the manifest holds that machine's path, which a clone
    elsewhere does not share; the file it names must be the same."""

    def short(path: str) -> str:
        return "/".join(Path(path).parts[-2:])

    data = sweep.trial.data
    benchmarks = {name: short(path) for name, path in data.benchmarks.items()}
    path = None if data.path is None else short(data.path)
    data = data.model_copy(update={"benchmarks": benchmarks, "path": path})
    return sweep.model_copy(update={"trial": sweep.trial.model_copy(update={"data": data})})
