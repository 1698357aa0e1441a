"""The studies' sweep files run as shipped (that every one validates is in
tests/orchestrator/test_sweep_file.py), and one trial of study 1's configuration (fewer steps and
problems) run twice gives identical metrics on this CPU."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from orchestrator.sweep.search_space import grid_arms
from orchestrator.sweep.sweep_file import load_sweep
from tests.sweep_runs import ROOT, numsweep

STUDIES = ROOT / "studies"

# Smaller, not different: the same model, data mix, difficulty, optimiser and evaluation kinds.
SHORT = [
    "grid.losses=[del]",
    "grid.params={del: {alpha: 0.01, decay_base: 1.02, distance: false}}",
    "grid.seeds=[3]",
    "train.steps=12",
    "train.checkpoint_every=6",
    "train.warmup_steps=2",
    "data.n_train=256",
    "data.n_test=32",
    "data.n_extra=16",
    "eval.every=6",
    "eval.generate_examples=8",
]


def test_study_1_files_share_one_trial_configuration() -> None:
    # The ablation, the search and the confirmation runs train the same way; only the loss
    # parameters and the seeds differ.
    trials = {
        name: load_sweep(STUDIES / "del_cpu" / f"{name}.yaml").trial
        for name in ("ablation", "search", "confirm")
    }
    assert trials["search"] == trials["ablation"] == trials["confirm"]
    ablation = load_sweep(STUDIES / "del_cpu" / "ablation.yaml")
    arms = grid_arms(ablation)
    assert len(arms) == 9 * 5  # eight losses, DEL twice (with and without distance), 5 seeds
    assert {a.get("distance") for a in arms if a["loss"] == "del"} == {False, True}


def _metrics(results: Path) -> pl.DataFrame:
    metrics = pl.read_parquet(results / "metrics" / "experiment=del-cpu-ablation" / "*.parquet")
    # Timings and memory are measurements of the machine, not of the training.
    return (
        metrics.filter(~pl.col("metric").str.starts_with("perf/"))
        .select("step", "metric", "value")
        .sort("step", "metric")
    )


@pytest.mark.slow
def test_a_study_trial_is_deterministic(tmp_path: Path) -> None:
    runs = []
    for name in ("first", "second"):
        results = tmp_path / name
        proc = numsweep(
            "sweep", STUDIES / "del_cpu" / "ablation.yaml", *SHORT, "--results", results
        )
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        runs.append(_metrics(results))
    first, second = runs
    assert first.height > 50
    assert {"eval/extra/digit_acc", "gen/mathgen/exact_match", "train/aux"} <= set(first["metric"])
    # identical to the last bit: same initialisation, problems, data order and arithmetic
    assert first.equals(second)
