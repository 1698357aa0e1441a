"""The report's cost panel: per arm, what its trials cost (core- and GPU-hours, wall hours and the
start-up's share of them, from `analysis.trial_costs`) and how they ran (tokens per second, peak
memory, seconds per step: the trials' `perf/*` reports), with the store's total. One table
instead of a cost sentence in every section's header.
"""

from __future__ import annotations

import polars as pl

from analysis.arms import Arms
from analysis.result import DASH, Column, Result, fmt, records_table
from analysis.trial_costs import cost_totals, hours, trial_costs
from records import metric_names as names
from records.reader import Store, read_latest

RUN_METRICS = {
    names.TOKENS_PER_S: "tokens_per_s",
    names.PEAK_MEM_MB: "peak_mem_mb",
    names.STEP_TIME_S: "step_time_s",
}
"""perf metric -> its column: a trial's mean over its reports (peak memory: its maximum)."""


def _run_stats(store: Store) -> pl.DataFrame | None:
    """Per trial: mean tokens/s, mean step time, peak memory over its reports."""
    latest, _ = read_latest(store, list(RUN_METRICS))
    if latest.height == 0:
        return None
    # In step order within each trial, so that each mean sums its floats in one order (a group's
    # rows otherwise come in whatever order polars' threads gathered them: last-digit changes).
    keys = ["experiment", "trial_id", "metric"]
    per_trial = (
        latest.sort(*keys, "step")
        .group_by(keys, maintain_order=True)
        .agg(
            pl.when(pl.col("metric").first() == names.PEAK_MEM_MB)
            .then(pl.col("value").max())
            .otherwise(pl.col("value").mean())
            .alias("value")
        )
    )
    wide = per_trial.pivot(on="metric", index=["experiment", "trial_id"], values="value")
    for metric in RUN_METRICS:
        if metric not in wide.columns:
            wide = wide.with_columns(pl.lit(None, pl.Float64).alias(metric))
    return wide.rename(RUN_METRICS).select("experiment", "trial_id", *RUN_METRICS.values())


def _hours(x: float | None) -> str:
    return DASH if x is None else hours(x)


COLUMNS = [
    Column("arm", lambda r: r["arm"]),
    Column("trials", lambda r: str(r["trials"])),
    Column("core-h", lambda r: _hours(r["core_h"])),
    Column("GPU-h", lambda r: _hours(r["gpu_h"])),
    Column("wall h (trial-hours)", lambda r: _hours(r["wall_h"])),
    Column(
        "start-up share",
        lambda r: DASH if r["startup_share"] is None else f"{r['startup_share']:.0%}",
    ),
    Column("tokens", lambda r: DASH if r["tokens"] is None else f"{r['tokens']:,.0f}"),
    Column("tokens/s", lambda r: fmt(r["tokens_per_s"], 3)),
    Column("s/step", lambda r: fmt(r["step_time_s"], 3)),
    Column("peak memory (MiB)", lambda r: fmt(r["peak_mem_mb"], 4)),
]


def cost_panel(store: Store, arms: Arms) -> Result:
    """The cost table of `arms`' trials (one row per arm and a total), its records holding
    core_h, gpu_h, wall_h, startup_share, tokens, tokens_per_s, step_time_s, peak_mem_mb."""
    result = Result("cost", "Cost")
    costs, run = trial_costs(store), _run_stats(store)
    if costs is None and run is None:
        result.notes.append("no trial reported its cost or speed (perf/*): no cost panel")
        return result
    frame = arms.members.select("experiment", "trial_id", "arm")
    if costs is not None:
        frame = frame.join(costs, on=["experiment", "trial_id"], how="left")
    if run is not None:
        frame = frame.join(run, on=["experiment", "trial_id"], how="left")
    frame = frame.sort("experiment", "trial_id")  # one order for every sum and mean below
    records = [_record(part, arm) for arm, part in _by_arm(frame, arms)]
    records.append(_record(frame, "all"))
    result.tables.append(
        records_table(
            "cost",
            "cost per arm: hours summed over its trials, speed and memory their means",
            COLUMNS,
            records,
        )
    )
    if costs is None:
        result.notes.append(
            "no trial reported perf/wall_s, perf/cpu_s, perf/gpu_s or perf/startup_s (a store "
            "written before numsweep reported costs): hours unknown"
        )
    result.notes.append(
        "core-h: worker CPU-hours; GPU-h: GPUs held × wall hours; wall h: trial-hours (trials "
        "that ran at once each count); start-up: launch to the engines being ready; tokens/s "
        "and s/step: each trial's mean over its reports; peak memory: each trial's largest"
    )
    return result


def _by_arm(frame: pl.DataFrame, arms: Arms) -> list[tuple[str, pl.DataFrame]]:
    """The trials of each arm, in the arms' display order."""
    parts = {str(k[0]): part for k, part in frame.group_by("arm", maintain_order=True)}
    return [(a, parts[a]) for a in arms.order if a in parts]


def _record(part: pl.DataFrame, arm: str) -> dict:
    """One row of the table: `part`'s trials summed (hours, tokens) and averaged (speed)."""
    record: dict = {"arm": arm, "trials": part.height}
    costed = part.filter(pl.col("wall_s").is_not_null()) if "wall_s" in part.columns else None
    if costed is not None and costed.height:
        total = cost_totals(costed).row(0, named=True)
        share = total["startup_h"] / total["wall_h"] if total["wall_h"] else None
        record |= {k: total[k] for k in ("core_h", "gpu_h", "wall_h", "tokens")}
        record["startup_share"] = share
    else:
        record |= dict.fromkeys(("core_h", "gpu_h", "wall_h", "tokens", "startup_share"))
    for column in RUN_METRICS.values():
        record[column] = part[column].mean() if column in part.columns else None
    return record
