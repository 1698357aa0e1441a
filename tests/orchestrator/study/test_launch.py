"""Which trials a study's Tune run starts from (orchestrator.study.launch.runs_left): a look's own
arms, those the store has not finished, whether or not the look's Tune run was begun before.

Issue 57's resume defect: a study killed as look 2's Tune run began (its Tuner made, nothing
saved by Tune) was resumed with the whole main stage's grid renamed as look 2's run, every seed of
every look, where the look's own seeds were meant. Fast: a Tuner is made, never fitted (no Ray
instance), which is what such a kill leaves."""

from __future__ import annotations

from orchestrator.run.driver import _tuner, trial_sink
from orchestrator.study.launch import runs_left
from orchestrator.study.stages import look_sweep
from orchestrator.study.study_file import load_study
from records.layout import ExperimentPaths
from records.writer import ResultsStore
from tests.orchestrator.study.test_study_run import STUDY, _write

LOOKS = (2, 4)


def _look_arms(runs) -> list[tuple[str, int]]:
    (run,) = runs
    return sorted((arm["loss"], arm["seed"]) for arm in run.arms)


def test_a_look_runs_its_own_seeds_before_and_after_its_tune_run_began(tmp_path):
    study, root = load_study(_write(tmp_path, STUDY)), str(tmp_path / "results")
    name = f"{study.experiment}-look2"
    look2 = [(loss, seed) for loss in ("del", "mle") for seed in (2, 3)]
    assert _look_arms(runs_left(look_sweep(study, LOOKS, 2), root, name)) == look2

    # look 2's run begun and killed at once: its Tuner is there, Tune saved nothing
    sweep = look_sweep(study, LOOKS, 2)
    (run,) = runs_left(sweep, root, name)
    paths = ExperimentPaths(root, study.experiment)
    _tuner(sweep, run, paths, trial_sink(sweep, ResultsStore(root, study.experiment)), 1)
    assert (tmp_path / "results" / "experiments" / study.experiment / "ray" / name).is_dir()
    again = runs_left(look_sweep(study, LOOKS, 2), root, name)
    assert again[0].name == name and _look_arms(again) == look2
