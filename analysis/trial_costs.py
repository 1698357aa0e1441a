"""What a store's trials cost: each trial's totals and their sums per experiment and per arm.

A trial reports its cost so far with every report (`trainables.worker.trial_cost`: wall, worker
CPU, GPU and start-up seconds; tokens trained are `train/tokens_seen`), so its last report holds
its totals. Stores written before trials reported costs have none: every function here then
says so (None, no lines) rather than guess from timestamps.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import polars as pl

from records import metric_names as names
from records.reader import Store, read_latest

COLUMNS = {
    names.WALL_S: "wall_s",
    names.CPU_S: "cpu_s",
    names.GPU_S: "gpu_s",
    names.STARTUP_S: "startup_s",
    names.TOKENS_SEEN: "tokens",
}
"""Cost metric -> its column in `trial_costs`."""


def trial_costs(store: Store) -> pl.DataFrame | None:
    """One row per trial that reported its cost: experiment, trial_id, wall_s, cpu_s, gpu_s,
    startup_s, tokens (each its last reported value). None when no trial did."""
    latest, _ = read_latest(store, list(COLUMNS))
    if latest.height == 0 or names.WALL_S not in set(latest["metric"].to_list()):
        return None
    last = (
        latest.sort("step")
        .group_by(["experiment", "trial_id", "metric"], maintain_order=True)
        .agg(pl.col("value").last())
        .pivot(on="metric", index=["experiment", "trial_id"], values="value")
    )
    for metric in COLUMNS:
        if metric not in last.columns:
            last = last.with_columns(pl.lit(None, pl.Float64).alias(metric))
    wide = last.rename(COLUMNS).select("experiment", "trial_id", *COLUMNS.values())
    return wide.filter(pl.col("wall_s").is_not_null()).sort("experiment", "trial_id")


def _labelled(costs: pl.DataFrame, labels: Mapping[str, str]) -> pl.DataFrame:
    """`costs` of the trials in `labels` (trial_id -> arm), with their `arm`."""
    arms = pl.DataFrame({"trial_id": list(labels), "arm": list(labels.values())})
    return costs.join(arms, on="trial_id")


def cost_totals(costs: pl.DataFrame, by: str | None = None) -> pl.DataFrame:
    """Sums of `costs` (all rows, or per value of column `by`): trials, core_h (worker
    CPU-hours), gpu_h, wall_h (trial-hours of wall time), startup_h, tokens, and per trial
    the mean core-hours and wall hours."""
    sums = [
        pl.len().alias("trials"),
        (pl.col("cpu_s").sum() / 3600).alias("core_h"),
        (pl.col("gpu_s").sum() / 3600).alias("gpu_h"),
        (pl.col("wall_s").sum() / 3600).alias("wall_h"),
        (pl.col("startup_s").sum() / 3600).alias("startup_h"),
        pl.col("tokens").fill_null(0).sum().alias("tokens"),
    ]
    totals = costs.select(sums) if by is None else costs.group_by(by, maintain_order=True).agg(sums)
    return totals.with_columns(
        (pl.col("core_h") / pl.col("trials")).alias("core_h_per_trial"),
        (pl.col("wall_h") / pl.col("trials")).alias("wall_h_per_trial"),
    )


def hours(value: float) -> str:
    """`0.0123 h` → `0.012`, `12.34` → `12.3`: three significant figures, plain notation."""
    if value == 0:
        return "0"
    return f"{value:.3g}" if value >= 1e-3 else f"{value:.1e}"


def _line(row: Mapping[str, float]) -> str:
    startup = row["startup_h"] / row["wall_h"] if row["wall_h"] else 0.0
    return (
        f"{hours(row['core_h'])} core-hours, {hours(row['gpu_h'])} GPU-hours, "
        f"{hours(row['wall_h'])} trial-hours of wall time ({startup:.0%} start-up), "
        f"{row['tokens']:,.0f} tokens"
    )


def cost_lines(
    costs: pl.DataFrame | None,
    arms: Mapping[str, str] | None = None,
    order: Sequence[str] | None = None,
) -> list[str]:
    """`cost: 4 trial(s), 0.11 core-hours, …` and, with `arms` (trial_id -> arm label), one
    `cost of <arm>: …` line per arm (in `order`, else as first met); nothing without costs."""
    if costs is None or costs.height == 0:
        return []
    total = cost_totals(costs).row(0, named=True)
    lines = [f"cost: {total['trials']} trial(s), {_line(total)}"]
    if arms:
        per_arm = cost_totals(_labelled(costs, arms), "arm")
        per_arm = {r["arm"]: r for r in per_arm.iter_rows(named=True)}
        for arm in order or dict.fromkeys(arms.values()):
            if arm in per_arm:
                row = per_arm[arm]
                lines.append(f"cost of {arm}: {row['trials']} trial(s), {_line(row)}")
    return lines


def per_trial_cost(
    costs: pl.DataFrame, labels: Mapping[str, str], order: Sequence[str]
) -> dict[str, dict[str, float]]:
    """Arm label -> its trials' mean core_h, gpu_h and wall_h (`labels`: trial_id -> arm), in
    the arms' display `order` (a group_by's own order varies from run to run)."""
    means = (
        _labelled(costs, labels)
        .group_by("arm")
        .agg(
            (pl.col("cpu_s").mean() / 3600).alias("core_h"),
            (pl.col("gpu_s").mean() / 3600).alias("gpu_h"),
            (pl.col("wall_s").mean() / 3600).alias("wall_h"),
        )
    )
    rows = {r["arm"]: r for r in means.iter_rows(named=True)}
    return {arm: rows[arm] for arm in order if arm in rows}


def concurrency(trials: pl.DataFrame, costs: pl.DataFrame) -> float:
    """Trials that ran at once in the pilot, on average: the costed trials' summed wall time over
    the span from the first start to the last end (`trials`: a `load_trials` frame). 1 where
    the span is unknown."""
    spans = trials.join(
        costs.select("experiment", "trial_id", "wall_s"), on=["experiment", "trial_id"]
    )
    spans = spans.drop_nulls(["start", "end"]) if "end" in spans.columns else spans.clear()
    if spans.height == 0:
        return 1.0
    seconds = (spans["end"].max() - spans["start"].min()).total_seconds()
    return max(1.0, float(spans["wall_s"].sum()) / seconds) if seconds > 0 else 1.0
