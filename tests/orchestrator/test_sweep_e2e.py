"""The whole path on this machine: CLI -> Ray Tune + Optuna -> Ray Train + DeepSpeed (CPU, gloo)
-> Parquet while trials run -> polars analysis. Nothing faked; a few training steps."""

from __future__ import annotations

import copy
import json
import math
import os
import subprocess
import sys

import polars as pl
import pytest

from bench.trial import PHASES
from records.metric_names import COST_METRICS, family
from tests.sweep_runs import ROOT, line_kinds, numsweep, tune_actor_pids, write_sweep

SWEEP = {
    "experiment": "e2e",
    "mode": "search",
    "seed": 3,
    "trial": {
        "model": {"preset": "tiny", "vocab_size": 512},
        "data": {
            "modules": ["arithmetic__add_or_sub", "arithmetic__mul"],
            "n_train": 128,
            "n_test": 32,
            "max_length": 64,
        },
        "train": {"steps": 6, "micro_batch_size": 8, "warmup_steps": 2},
        "eval": {"every": 3, "batch_size": 32, "generate_examples": 8, "max_new_tokens": 6},
    },
    "search": {
        "num_trials": 2,
        "losses": ["mle", "del"],
        "space": {"alpha": {"low": 0.01, "high": 0.5, "log": True}},
        "sampler": "random",
        "sampler_seed": 1,
    },
    # One trial at a time, so the first trial's parts must exist before the second reports.
    "resources": {"workers_per_trial": 1, "cpus_per_worker": 1, "max_concurrent_trials": 1},
}


SVAMP_ROWS = [
    {"Body": "Tom has 3 apples.", "Question": "How many apples does Tom have?", "Answer": 3.0},
    {"Body": "A box holds 12 pens.", "Question": "How many pens are in 2 boxes?", "Answer": 24.0},
]
"""Two problems in SVAMP's format, for a benchmark the sweep file names by a relative path."""


@pytest.fixture(scope="module")
def sweep_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("e2e")
    svamp = tmp / "svamp.json"
    svamp.write_text(json.dumps(SVAMP_ROWS))
    sweep = copy.deepcopy(SWEEP)
    # Relative to the directory numsweep runs in (ROOT), where a Ray Train worker does not run.
    sweep["trial"]["data"]["benchmarks"] = {"svamp": os.path.relpath(svamp, ROOT)}
    config = write_sweep(tmp, sweep)
    results = tmp / "results"
    return numsweep("sweep", config, "--results", results), results


@pytest.mark.slow
def test_sweep_writes_complete_parquet(sweep_run):
    proc, results = sweep_run
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    metrics = pl.read_parquet(results / "metrics" / "**" / "*.parquet", hive_partitioning=True)
    trials = pl.read_parquet(results / "trials" / "**" / "*.parquet", hive_partitioning=True)

    assert metrics["experiment"].unique().to_list() == ["e2e"]
    latest = trials.sort("ts").group_by("trial_id").last()
    assert latest.height == 2
    # Without early stopping the second trial ran in the first one's Tune actor (Tune's
    # reuse_actors: one Ray worker process fewer to start, driver.reuse_actors).
    pids = tune_actor_pids(results)
    assert len(pids) == 2 and len(set.union(*pids.values())) == 1, pids
    assert set(latest["status"]) == {"TERMINATED"}
    assert set(latest["loss"]) <= {"mle", "del"}
    # alpha is sampled only for the loss that takes it.
    for row in latest.iter_rows(named=True):
        assert (row["alpha"] is None) == (row["loss"] == "mle")
        assert row["seed"] == 3 and row["model"] == "tiny"

    assert set(metrics["trial_id"]) == set(latest["trial_id"])
    for (trial_id,), rows in metrics.group_by("trial_id"):
        steps = rows.sort("ts")["step"].unique(maintain_order=True).to_list()
        assert steps == [0, 3, 6], (trial_id, steps)  # monotone, every report present
        dupes = rows.group_by(["attempt", "step", "metric"]).len().filter(pl.col("len") > 1)
        assert dupes.height == 0
    assert all(math.isfinite(v) for v in metrics["value"].to_list())
    # every name a worker reported is in the registry the sweep file is checked against
    unregistered = [m for m in metrics["metric"].unique().to_list() if family(m) is None]
    assert unregistered == []
    losses = dict(latest.select("trial_id", "loss").iter_rows())
    for (trial_id,), rows in metrics.group_by("trial_id"):
        names = set(rows["metric"])
        # every part of the trial's loss is logged, and only those: del has aux, mle has none
        assert ("train/aux" in names) == (losses[trial_id] == "del"), trial_id
        seen = rows.filter(pl.col("metric") == "train/tokens_seen").sort("step")
        assert seen["step"].to_list() == [0, 3, 6]
        values = seen["value"].to_list()
        # 0 at step 0, then 3 steps of 8 sequences each: at least 24 tokens a step
        assert values[0] == 0 and values[1] >= 3 * 8 * 3 and values[2] > values[1]
        assert values[2] - values[1] == pytest.approx(values[1], rel=0.5)

    final = metrics.filter(pl.col("step") == 6)
    for (trial_id,), rows in final.group_by("trial_id"):
        m = dict(zip(rows["metric"], rows["value"], strict=True))
        for name in (
            "train/loss",
            "train/ce",
            "eval/test/digit_acc",
            "eval/test/digit_entropy",
            "gen/mathgen/exact_match",
            "gen/svamp/exact_match",  # read through its relative path, in the worker
            "gen/macc",
            "perf/tokens_per_s",
        ):
            assert name in m, (trial_id, name)
        # The decomposition identity survives the trip through Ray and Parquet.
        identity = (
            m["eval/test/error_entropy"]
            + m["eval/test/self_alignment"]
            - m["eval/test/log_confidence"]
        )
        assert m["eval/test/ce"] == pytest.approx(identity, abs=1e-9)
        assert 0.0 <= m["eval/test/digit_acc"] <= 1.0
        assert 0.0 < m["eval/test/digit_entropy"] <= math.log(10) + 1e-9
        # The last report generated (generate_every 0: the last step only), the one before not.
        assert 0.0 < m["perf/generate_s"] < m["perf/eval_s"], trial_id
    before = metrics.filter(pl.col("step") == 3)
    for (trial_id,), rows in before.group_by("trial_id"):
        m = dict(zip(rows["metric"], rows["value"], strict=True))
        assert m["perf/generate_s"] == 0.0 and m["perf/eval_s"] > 0.0, trial_id
    sizes = metrics.filter(pl.col("metric") == "model/params_non_embedding")
    assert sizes["step"].unique().to_list() == [0]

    # The start-up timeline: once per trial, with its first report after training began, each
    # phase ending after the one before it (seconds from the Train run's launch).
    startup = metrics.filter(pl.col("metric").str.starts_with("perf/startup/"))
    assert set(startup["trial_id"]) == set(latest["trial_id"])
    for (trial_id,), rows in startup.group_by("trial_id"):
        assert rows["step"].unique().to_list() == [3], trial_id
        marks = dict(zip(rows["metric"], rows["value"], strict=True))
        # bench.trial reads exactly these: worker process, imports, …, first step
        assert set(marks) == {"perf/startup/launched_at"} | {
            f"perf/startup/{phase}_s" for phase in PHASES
        }
        phases = [marks[f"perf/startup/{phase}_s"] for phase in PHASES]
        assert phases[0] > 0 and phases == sorted(phases), (trial_id, marks)


@pytest.mark.slow
def test_a_pipe_gets_only_numsweeps_lines_and_each_trial_its_cost(sweep_run):
    proc, results = sweep_run
    # As `ray job submit`, CI or `make demo > log` see it: numsweep's lines, no escape codes.
    kinds = line_kinds(proc.stdout) + line_kinds(proc.stderr)
    assert [line for kind, line in kinds if kind == "other"] == []
    assert "\x1b" not in proc.stdout + proc.stderr
    assert {"numsweep", "progress", "table", "summary", "next"} <= {k for k, _ in kinds}
    assert (results / "experiments" / "e2e" / "logs" / "workers.log").is_file()

    metrics = pl.read_parquet(results / "metrics" / "**" / "*.parquet", hive_partitioning=True)
    cost = metrics.filter(pl.col("metric").is_in(list(COST_METRICS)))
    for (trial_id,), rows in cost.group_by("trial_id"):
        wide = rows.pivot(on="metric", index="step", values="value").sort("step")
        assert wide["step"].to_list() == [0, 3, 6], trial_id  # with every report
        wall, cpu = wide["perf/wall_s"].to_list(), wide["perf/cpu_s"].to_list()
        assert wall == sorted(wall) and cpu == sorted(cpu) and wall[0] > 0  # cumulative
        assert set(wide["perf/gpu_s"]) == {0.0}  # no GPU here
        startup = wide["perf/startup_s"].to_list()
        # a fixed cost, the same at every report, within the wall time before step 0
        assert len(set(startup)) == 1 and 0 < startup[0] < wall[0]
        # the engine's start-up timeline ends inside the same interval
        engine = metrics.filter(
            (pl.col("trial_id") == trial_id) & (pl.col("metric") == "perf/startup/deepspeed_s")
        )["value"].item()
        assert startup[0] == pytest.approx(engine, abs=1.0)


@pytest.mark.slow
def test_parts_appear_while_the_sweep_runs(sweep_run):
    _, results = sweep_run
    parts = sorted((results / "metrics").glob("experiment=e2e/part-*.parquet"))
    assert len(parts) >= 2
    assert not list(results.rglob(".*.tmp"))  # nothing half-written is left
    metrics = pl.read_parquet(parts)
    last_report = metrics["ts"].max().timestamp()
    # The first trial's rows were on disk before the second trial's last report.
    assert min(p.stat().st_mtime for p in parts) < last_report


@pytest.mark.slow
def test_ablation_table_from_the_sweep(sweep_run):
    proc, results = sweep_run
    # Printed at the end; a search's arm is labelled with the parameters it sampled (issue 60).
    assert "| del (alpha=" in proc.stdout and "| mle |" in proc.stdout
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "analysis",
            "ablation",
            str(results),
            "--format",
            "csv",
            "--metric",
            "eval/test/digit_acc",
            "--value",
            "final",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    table = pl.read_csv(out.stdout.encode())  # one row per (arm, metric, value kind)
    assert sorted(table["loss"].to_list()) == ["del", "mle"]
    metrics = pl.read_parquet(results / "metrics" / "**" / "*.parquet", hive_partitioning=True)
    trials = pl.read_parquet(results / "trials" / "**" / "*.parquet", hive_partitioning=True)
    final = metrics.filter(
        (pl.col("metric") == "eval/test/digit_acc") & (pl.col("step") == 6)
    ).join(trials.select("trial_id", "loss").unique(), on="trial_id")
    for row in final.iter_rows(named=True):
        # One seed per loss: the table's mean is that trial's final value, as stored.
        cell = table.filter(pl.col("loss") == row["loss"])
        assert cell["n"].to_list() == [1]
        assert cell["mean"].item() == pytest.approx(row["value"], abs=1e-12)
