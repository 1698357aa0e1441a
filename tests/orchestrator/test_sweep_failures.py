"""Failure handling on real Ray: ASHA stops a clearly worse trial early, a trial whose loss
becomes non-finite stops with that reason recorded, and the sweep goes on."""

from __future__ import annotations

import polars as pl
import pytest

from tests.sweep_runs import line_kinds, numsweep, tune_actor_pids, write_sweep

STEPS = 8

SWEEP = {
    "experiment": "failures",
    "mode": "search",
    "trial": {
        "model": {"preset": "tiny"},
        "data": {"modules": ["arithmetic__mul"], "n_train": 64, "n_test": 16, "max_length": 48},
        "train": {"steps": STEPS, "micro_batch_size": 8, "warmup_steps": 1, "grad_clip": 0},
        "eval": {"every": 2, "batch_size": 16, "generate_examples": 0},
    },
    "search": {
        "num_trials": 3,
        "losses": ["mle"],
        "space": {"lr": {"low": 1e-6, "high": 1e-2, "log": True}},
        "objectives": [{"metric": "eval/test/ce", "mode": "min"}],
        # In this order, one at a time: a good run, a learning rate too small to learn (ASHA
        # stops it at a rung where the good run did better), one that blows up.
        "enqueue": [{"lr": 3e-3}, {"lr": 1e-7}, {"lr": 1e9}],
    },
    "early_stopping": {"metric": "eval/test/ce", "mode": "min", "grace_period": 1},
    "resources": {"workers_per_trial": 1, "max_concurrent_trials": 1},
}


@pytest.mark.slow
def test_asha_stops_the_worse_trial_and_nan_is_recorded(tmp_path):
    results = tmp_path / "results"
    run = numsweep("sweep", write_sweep(tmp_path, SWEEP), "--results", results)
    assert run.returncode == 1, run.stdout[-2000:] + run.stderr[-2000:]  # one trial failed
    assert "3 trials, 1 failed" in run.stdout

    trials = pl.read_parquet(results / "trials" / "experiment=failures" / "*.parquet")
    latest = trials.sort("ts").group_by("trial_id").last()
    metrics = pl.read_parquet(results / "metrics" / "experiment=failures" / "*.parquet")
    last_step = dict(metrics.group_by("trial_id").agg(pl.col("step").max()).iter_rows())
    by_lr = {row["lr"]: row for row in latest.iter_rows(named=True)}
    assert set(by_lr) == {3e-3, 1e-7, 1e9}

    good, slow, blown = by_lr[3e-3], by_lr[1e-7], by_lr[1e9]
    assert good["status"] == "TERMINATED" and last_step[good["trial_id"]] == STEPS
    assert slow["status"] == "TERMINATED" and last_step[slow["trial_id"]] < STEPS  # ASHA
    assert blown["status"] == "ERROR"
    assert "non-finite" in blown["error"] or "became" in blown["error"], blown["error"]
    # The failure reaches the terminal as a line of its own: the trial, why, where to look.
    logs = results / "experiments" / "failures" / "logs"
    failed = [line for kind, line in line_kinds(run.stdout) if kind == "failed trial"]
    assert len(failed) == 1, run.stdout[-3000:]
    assert failed[0].startswith(f"numsweep: trial {blown['trial_id']} failed: ")
    assert "became" in failed[0] and "error.txt" in failed[0] and f"logs: {logs}" in failed[0]
    assert [line for kind, line in line_kinds(run.stdout) if kind == "other"] == []
    # With early stopping no trial ran in another's Tune actor: the one ASHA stopped was still
    # in its Train run when it was stopped (driver.reuse_actors).
    pids = tune_actor_pids(results)
    assert len(pids) == 3 and len(set.union(*pids.values())) == 3, pids
