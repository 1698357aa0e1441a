"""Exactly-once Parquet across a driver crash: kill the sweep driver (SIGKILL, mid-run), run the
same command again, and compare the Parquet contents with an uninterrupted run of the same sweep:
the same trials, every step once, the same values (training is deterministic on CPU, and a trial
resumes from its checkpoint at the same step and data position). Then the same store without its
Ray state (a fresh clone of a committed store): nothing runs twice, a missing trial runs alone."""

from __future__ import annotations

import os
import shutil
import signal
import time
from pathlib import Path

import polars as pl
import pytest

from tests.sweep_runs import log_tail, numsweep, numsweep_background, write_sweep

STEPS = 30

SWEEP = {
    "experiment": "crash",
    "mode": "grid",
    "trial": {
        "model": {"preset": "tiny"},
        "data": {
            "modules": ["arithmetic__add_or_sub"],
            "n_train": 128,
            "n_test": 16,
            "max_length": 48,
        },
        "train": {"steps": STEPS, "micro_batch_size": 8, "warmup_steps": 2, "checkpoint_every": 5},
        "eval": {"every": 5, "batch_size": 16, "generate_examples": 0},
    },
    "grid": {"losses": ["mle", "del"], "seeds": [0]},
    # Both trials at once (one CPU each): the kill interrupts both, the resume continues both.
    "resources": {"workers_per_trial": 1, "max_concurrent_trials": 2},
}


def sweep(config: Path, results: Path, background: bool = False):
    if background:
        log = results.parent / "background.log"
        return numsweep_background("sweep", config, "--results", results, log=log)
    return numsweep("sweep", config, "--results", results)


def tables(results: Path) -> tuple[pl.DataFrame, pl.DataFrame]:
    metrics = pl.read_parquet(results / "metrics" / "experiment=crash" / "*.parquet")
    trials = pl.read_parquet(results / "trials" / "experiment=crash" / "*.parquet")
    return metrics, trials


def max_stored_step(results: Path) -> int:
    parts = list((results / "metrics" / "experiment=crash").glob("part-*.parquet"))
    return -1 if not parts else int(pl.read_parquet(parts)["step"].max())


def drop_trial(results: Path, trial_id: str) -> None:
    """Remove one trial's rows from every part of the store (as if it never finished there)."""
    for part in results.glob("*/experiment=crash/part-*.parquet"):
        kept = pl.read_parquet(part).filter(pl.col("trial_id") != trial_id)
        part.unlink()
        if kept.height:
            kept.write_parquet(part)


def by_loss(results: Path) -> dict[tuple[str, int, str], float]:
    """(loss, step, metric) -> value; fails on any duplicate (trial, step, metric)."""
    metrics, trials = tables(results)
    assert metrics.group_by("trial_id", "step", "metric").len()["len"].max() == 1
    losses = dict(trials.select("trial_id", "loss").unique().iter_rows())
    return {
        (losses[r["trial_id"]], r["step"], r["metric"]): r["value"]
        for r in metrics.iter_rows(named=True)
    }


@pytest.mark.slow
def test_driver_killed_then_resumed_writes_every_step_exactly_once(tmp_path):
    config = write_sweep(tmp_path, SWEEP)
    results = tmp_path / "results"

    first = sweep(config, results, background=True)
    deadline = time.time() + 600
    while max_stored_step(results) < 10 and time.time() < deadline and first.poll() is None:
        time.sleep(0.5)
    assert first.poll() is None, "the sweep ended before it could be killed:\n" + log_tail(
        tmp_path / "background.log"
    )
    os.killpg(first.pid, signal.SIGKILL)  # the driver and the Ray instance it started
    first.wait()
    assert 10 <= max_stored_step(results) < STEPS

    second = sweep(config, results)
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    assert "resuming" in second.stdout

    metrics, trials = tables(results)
    latest = trials.sort("ts").group_by("trial_id").last()
    assert latest.height == 2 and set(latest["status"]) == {"TERMINATED"}
    assert metrics["attempt"].max() == 1  # an interrupted trial counted a second attempt
    for (trial_id,), rows in metrics.group_by("trial_id"):
        assert sorted(rows["step"].unique()) == list(range(0, STEPS + 1, 5)), trial_id

    reference = sweep(config, tmp_path / "reference")
    assert reference.returncode == 0, reference.stderr[-3000:]
    resumed, uninterrupted = by_loss(results), by_loss(tmp_path / "reference")
    # A resumed attempt reports its own start-up timeline with its first new step.
    resumed = {k: v for k, v in resumed.items() if not k[2].startswith("perf/startup/")}
    uninterrupted = {k: v for k, v in uninterrupted.items() if not k[2].startswith("perf/startup/")}
    assert set(resumed) == set(uninterrupted)  # same trials, steps and metrics, each once
    for key, value in uninterrupted.items():
        if not key[2].startswith("perf/"):  # timings differ between runs by nature
            assert resumed[key] == pytest.approx(value, rel=1e-5, abs=1e-7), key

    # A fresh clone of the committed store has no Ray state (`experiments/E/ray`, not committed):
    # the store's finished trials count as done, and the same command runs nothing again...
    reference_root = tmp_path / "reference"
    stored = by_loss(reference_root)
    shutil.rmtree(reference_root / "experiments" / "crash" / "ray")
    again = sweep(config, reference_root)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "2 of 2 trials finished in the results store: nothing to run" in again.stdout
    assert by_loss(reference_root) == stored
    metrics, trials = tables(reference_root)
    assert trials["trial_id"].n_unique() == 2

    # ...and a trial missing from the store runs alone, afresh, to the same values.
    del_id = trials.filter(pl.col("loss") == "del")["trial_id"][0]
    drop_trial(reference_root, del_id)
    rerun = sweep(config, reference_root)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert "1 of 2 trials finished in the results store: running the 1 left afresh" in rerun.stdout
    rebuilt = by_loss(reference_root)
    rebuilt = {k: v for k, v in rebuilt.items() if not k[2].startswith("perf/")}
    assert set(rebuilt) == {k for k in uninterrupted if not k[2].startswith("perf/")}
    for key, value in rebuilt.items():
        assert value == pytest.approx(uninterrupted[key], rel=1e-5, abs=1e-7), key
