"""A search sweep's life on real Ray: trials run concurrently when resources allow, `extend`
adds trials to the same persistent Optuna study, `status` reports them, and `compact` merges
the Parquet parts without changing their content."""

from __future__ import annotations

import optuna
import polars as pl
import pytest

from tests.sweep_runs import numsweep, write_sweep

SWEEP = {
    "experiment": "life",
    "mode": "search",
    "trial": {
        "model": {"preset": "tiny"},
        "data": {"modules": ["arithmetic__mul"], "n_train": 64, "n_test": 16, "max_length": 48},
        "train": {"steps": 4, "micro_batch_size": 8, "warmup_steps": 1},
        "eval": {"every": 2, "batch_size": 16, "generate_examples": 0},
    },
    "search": {
        "num_trials": 2,
        "losses": ["mle", "ntl_was"],
        "space": {"alpha": {"low": 0.05, "high": 0.5}},
        "objectives": [{"metric": "eval/test/ce", "mode": "min"}],
        "sampler": "random",
    },
    # 2 CPUs here, 1 per trial: two trials must run at the same time.
    "resources": {"workers_per_trial": 1, "cpus_per_worker": 1, "max_concurrent_trials": 2},
}


@pytest.mark.slow
def test_concurrency_extend_status_compact(tmp_path):
    config = write_sweep(tmp_path, SWEEP)
    results = tmp_path / "results"

    run = numsweep("sweep", config, "--results", results)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "2 trial(s) at a time" in run.stdout
    # generation is off: the final summary asks only for what the sweep reported
    assert "unknown metric" not in run.stdout + run.stderr
    assert "| mle |" in run.stdout and "2 trials, 0 failed" in run.stdout
    trials = pl.read_parquet(results / "trials" / "experiment=life" / "*.parquet")
    done = trials.filter(pl.col("status") == "TERMINATED")
    assert done.height == 2
    # Both trials were running at once: each started before the other ended.
    assert done["start"].max() < done["end"].min()

    extended = numsweep("extend", "life", "--trials", "1", "--results", str(results))
    assert extended.returncode == 0, extended.stderr[-3000:]
    study = optuna.load_study(
        study_name="life", storage=f"sqlite:///{results}/experiments/life/optuna.db"
    )
    assert len(study.get_trials(states=[optuna.trial.TrialState.COMPLETE])) == 3

    status = numsweep("status", "life", "--results", str(results))
    assert status.returncode == 0, status.stderr
    assert "3 trial(s): 3 TERMINATED" in status.stdout
    assert "Optuna study life: 3 trial(s)" in status.stdout
    assert "best min eval/test/ce" in status.stdout
    # what the three trials cost, in all and per loss
    cost = [line for line in status.stdout.splitlines() if line.startswith("cost")]
    assert cost[0].startswith("cost: 3 trial(s), ") and " 0 GPU-hours" in cost[0], cost
    assert sum(int(line.split(": ")[1].split(" ")[0]) for line in cost[1:]) == 3, cost

    before = pl.read_parquet(results / "metrics" / "experiment=life" / "*.parquet")
    n_parts = len(list((results / "metrics" / "experiment=life").glob("part-*.parquet")))
    assert n_parts > 1
    compacted = numsweep("compact", "life", "--results", str(results))
    assert compacted.returncode == 0, compacted.stderr
    parts = list((results / "metrics" / "experiment=life").glob("part-*.parquet"))
    assert len(parts) == 1
    keys = ["trial_id", "attempt", "step", "metric"]
    assert pl.read_parquet(parts).sort(keys).equals(before.sort(keys))
