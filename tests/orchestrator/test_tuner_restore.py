"""A sweep killed as its Tune run began resumes its own trials (orchestrator.run.driver).

Ray writes a run's `tuner.pkl` when the Tuner is made, before Tune saves any trial, and keeps no
param_space in it; `Tuner.can_restore` is true from then on. A kill in that window (issue 57: a
study killed as a look's run started, 2 of 3 runs of tests/orchestrator/study/test_study_run.py)
left a run that, restored without its param_space, drew one trial from an empty space (config
{}) and failed in the sink (KeyError 'loss'). The driver now gives the space again on restore.
The window is made here without timing: the driver's own Tuner is made and never fitted, which
is exactly what such a kill leaves (a Tuner, no experiment state)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from records.reader import load_trials, open_store
from tests.sweep_runs import ROOT, numsweep, write_sweep

SWEEP = {
    "experiment": "made-not-fitted",
    "mode": "grid",
    "trial": {
        "model": {"preset": "tiny", "vocab_size": 512},
        "data": {"modules": ["arithmetic__add_or_sub"], "n_train": 32, "n_test": 16,
                 "max_length": 48},
        "train": {"steps": 2, "micro_batch_size": 8, "warmup_steps": 1},
        "eval": {"every": 2, "batch_size": 16, "generate_examples": 0},
    },
    "grid": {"losses": ["mle", "del"], "seeds": [0]},
    "resources": {"workers_per_trial": 1, "cpus_per_worker": 1},
}  # fmt: skip

# The driver's Tuner for the sweep's one run, made and never fitted (no Ray instance needed).
MAKE_TUNER = """
import sys
from orchestrator.run.driver import _tuner, trial_sink
from orchestrator.sweep.plan import tune_runs
from orchestrator.sweep.sweep_file import load_sweep
from records.layout import ExperimentPaths
from records.writer import ResultsStore

sweep, root = load_sweep(sys.argv[1]), sys.argv[2]
store = ResultsStore(root, sweep.experiment)
paths = ExperimentPaths(root, sweep.experiment)
_tuner(sweep, tune_runs(sweep)[0], paths, trial_sink(sweep, store), 1)
"""


@pytest.mark.slow
def test_a_run_killed_as_its_tuner_was_made_resumes_its_own_arms(tmp_path):
    config, results = write_sweep(tmp_path, SWEEP), tmp_path / "results"
    made = subprocess.run(
        [sys.executable, "-c", MAKE_TUNER, str(config), str(results)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr[-3000:]
    run_dir = results / "experiments" / "made-not-fitted" / "ray" / "made-not-fitted"
    assert (run_dir / "tuner.pkl").is_file()
    assert not list(run_dir.glob("experiment_state-*.json"))  # nothing saved by Tune yet

    resumed = numsweep("sweep", config, "--results", results)
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    trials = load_trials(open_store(results, ["made-not-fitted"]))
    # the grid's two arms, each once, finished: no trial drawn from an empty space
    assert sorted(trials["loss"].to_list()) == ["del", "mle"]
    assert trials["status"].to_list() == ["TERMINATED"] * 2
