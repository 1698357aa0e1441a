"""What a sweep plans before Ray starts (`orchestrator.sweep.plan`): its Tune runs and Optuna
studies, where a study is stored, and how many trials fit at once."""

from __future__ import annotations

import pytest

from orchestrator.sweep.plan import concurrency, study_name, study_storage, tune_runs
from orchestrator.sweep.sweep_file import SweepConfig
from records.layout import ExperimentPaths
from tests.orchestrator.test_search_space import SPACE, search_sweep


def test_concurrency_from_cluster_capacity():
    sweep = SweepConfig.model_validate(
        {"resources": {"workers_per_trial": 2, "cpus_per_worker": 1}}
    )
    assert concurrency(sweep, {"CPU": 8, "GPU": 0}) == 4
    capped = sweep.model_copy(
        update={"resources": sweep.resources.model_copy(update={"max_concurrent_trials": 3})}
    )
    assert concurrency(capped, {"CPU": 8, "GPU": 0}) == 3
    with pytest.raises(ValueError, match="needs 2 CPU"):
        concurrency(sweep, {"CPU": 1, "GPU": 0})
    gpu = SweepConfig.model_validate({"resources": {"workers_per_trial": 4, "gpus_per_worker": 1}})
    assert concurrency(gpu, {"CPU": 64, "GPU": 8}) == 2


def test_per_loss_search_has_one_run_and_study_per_loss():
    sweep = search_sweep(
        losses=["mle", "del"], space={"alpha": SPACE["alpha"]}, per_loss=True, num_trials=3
    )
    runs = tune_runs(sweep)
    assert [(r.name, r.losses, r.num_trials) for r in runs] == [
        ("t-mle", ("mle",), 3),
        ("t-del", ("del",), 3),
    ]
    assert [r.name for r in tune_runs(sweep, extend_index=2, trials=5)] == [
        "t-mle-extend2",
        "t-del-extend2",
    ]
    # an extension continues each loss's study
    extended = tune_runs(sweep, extend_index=2, trials=5)
    assert [study_name(sweep, r) for r in extended] == ["t-mle", "t-del"]


def test_remote_results_root_needs_explicit_study_storage():
    with pytest.raises(ValueError, match=r"search\.storage"):
        study_storage(search_sweep(), ExperimentPaths("s3://bucket/results", "t"))
