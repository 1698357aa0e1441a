"""The points a scaling fit is made from: one value per trial of each metric, placed on an axis —
parameters N, tokens seen D, or compute C ≈ 6·N·D — after picking the best learning rate per
size when the learning rate varies, and averaged over seeds per size (as "What Scales in
Cross-Entropy Scaling Law?" fits) unless every trial is to be its own point.

A size is a configuration at a step: trials of one fit group (loss, dataset, ...) with the same
model, parameter count and step of the value; they differ in their seed (and in whatever the
notes say was pooled).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import polars as pl

from analysis.arms import format_value, plain_value
from analysis.metric_registry import direction
from analysis.selection import ValueSpec, select_values
from analysis.store import ResultsError, Store, config_columns, read_latest, scan_metrics
from analysis.table import Table, fmt

PARAM_METRICS = {"non_embedding": "model/params_non_embedding", "total": "model/params_total"}
"""--params choice -> the metric holding N (reported once per trial, at step 0)."""
TOKENS_METRIC = "train/tokens_seen"
"""Cumulative non-padding input tokens fed to the model in training, at every training report."""
AXIS_NAMES = {"N": "parameters N", "D": "tokens seen D", "C": "compute C ≈ 6·N·D"}
SIZE_KEY = ("model", "N", "step")
"""Within a fit group, trials with equal values here are one size (seeds of one configuration)."""


@dataclass
class TrialValues:
    """One row per (trial, metric): the fit group's columns, the size key, N, D (null without
    tokens seen), seed and value; plus what was chosen or left out on the way."""

    frame: pl.DataFrame
    group_columns: list[str]
    notes: list[str] = field(default_factory=list)
    lr_table: Table | None = None


def group_columns(trials: pl.DataFrame, by: Sequence[str]) -> list[str]:
    """The fit group's columns: `by` plus experiment, dataset and group where they vary."""
    configs = config_columns(trials)
    unknown = [c for c in by if c not in configs]
    if unknown:
        raise ResultsError(
            f"unknown column {', '.join(map(repr, unknown))} for --by; "
            f"available: {', '.join(configs)}"
        )
    for c in ("model", "seed"):
        if c in by:
            raise ResultsError(f"--by {c}: {c} is what a scaling fit runs over, not a group")
    cols = list(by)
    for c in ("experiment", "dataset", "group"):
        if c in trials.columns and c not in cols and trials[c].n_unique() > 1:
            cols.append(c)
    return cols


def trial_values(
    store: Store,
    trials: pl.DataFrame,
    metrics: Sequence[str],
    *,
    value: ValueSpec,
    n_metric: str,
    by: Sequence[str],
    lr_mode: str,
    select_by: str | None,
    with_tokens: bool,
) -> TrialValues:
    """Read and join everything the fits need (see the module docstring)."""
    gcols = group_columns(trials, by)
    notes: list[str] = []
    varying = _varying(trials, gcols)
    choose_lr = lr_mode == "best" and "lr" in varying
    if choose_lr and select_by is None:
        raise ResultsError("the learning rate varies: give --select-by METRIC (or --lr pool)")
    wanted = [n_metric, *metrics]
    if choose_lr and select_by not in wanted:
        wanted.append(select_by)
    latest, counts = read_latest(store, wanted)
    if counts.note():
        notes.append(counts.note())
    keys = ["experiment", "trial_id"]
    sizes = select_values(latest.filter(pl.col("metric") == n_metric), ValueSpec("final")).select(
        *keys, pl.col("value").alias("N")
    )
    picked = select_values(latest.filter(pl.col("metric").is_in(list(metrics))), value)
    if with_tokens:
        picked = picked.join(
            _tokens_at(store, picked.select(*keys, "step").unique()), on=[*keys, "step"], how="left"
        )
    else:
        picked = picked.with_columns(pl.lit(None, pl.Float64()).alias("D"))
    config = [c for c in ("model", "lr", "seed") if c in trials.columns and c not in gcols]
    frame = picked.join(
        trials.select(list(dict.fromkeys([*keys, *gcols, *config, *varying]))), on=keys
    ).join(sizes, on=keys, how="left")
    if "model" not in frame.columns:
        frame = frame.with_columns(pl.lit(None, pl.String()).alias("model"))
    no_n = frame.filter(pl.col("N").is_null()).select(pl.struct(keys).n_unique()).item()
    if no_n:
        notes.append(f"{no_n} trial(s) report no {n_metric}: left out of the fits")
    bad = frame.filter(pl.col("N").is_not_null() & ~pl.col("value").is_finite())
    if bad.height:
        notes.append(f"{bad.height} non-finite value(s) (diverged trials?) left out of the fits")
    frame = frame.filter(pl.col("N").is_not_null() & pl.col("value").is_finite())
    lr_table = None
    if choose_lr:
        frame, lr_table, lr_note = _best_lr(frame, latest, gcols, value, select_by)
        notes.append(lr_note)
        varying = [c for c in varying if c != "lr"]
    pooled = [c for c in varying if c not in ("model", "seed")]
    if pooled:
        notes.append(
            f"sizes pooled over {', '.join(pooled)} (it varies within a fit group; add --by "
            "to split)"
        )
    order = [*gcols, "metric", *SIZE_KEY, "experiment", "trial_id"]
    frame = frame.sort(order, nulls_last=True)
    return TrialValues(frame, gcols, notes, lr_table)


def _tokens_at(store: Store, steps: pl.DataFrame) -> pl.DataFrame:
    """D per (experiment, trial_id, step) of `steps`: tokens seen at the last training report at
    or before that step. Tokens seen only grow and a re-reported step (restored, retried) carries
    the same count, so that is the largest count reported up to the step, found by one lazy join
    over the training reports, without deduplicating or sorting them."""
    keys = ["experiment", "trial_id"]
    return (
        scan_metrics(store, [TOKENS_METRIC])
        .select(*keys, pl.col("step").alias("_reported"), "value")
        .join(steps.lazy(), on=keys)
        .filter(pl.col("_reported") <= pl.col("step"))
        .group_by([*keys, "step"])
        .agg(pl.col("value").max().alias("D"))
        .collect()
    )


def _varying(trials: pl.DataFrame, gcols: list[str]) -> list[str]:
    """Configuration columns other than the group's that take several values within a group."""
    rest = [c for c in config_columns(trials) if c not in gcols and c != "experiment"]
    if not rest or trials.height == 0:
        return []
    spread = (
        trials.group_by(gcols).agg(pl.col(c).n_unique() for c in rest)
        if gcols
        else trials.select(pl.col(c).n_unique() for c in rest)
    )
    return [c for c in rest if spread[c].max() > 1]


def _best_lr(
    frame: pl.DataFrame,
    latest: pl.DataFrame,
    gcols: list[str],
    value: ValueSpec,
    select_by: str,
) -> tuple[pl.DataFrame, Table, str]:
    """Keep, per fit group and model size, the trials of the learning rate whose mean (over
    seeds) of `select_by` is best; a table of the choices."""
    want = direction(select_by)
    if want is None:
        raise ResultsError(
            f"--select-by {select_by}: it has no better direction, so no learning rate is best"
        )
    keys = ["experiment", "trial_id"]
    score = select_values(latest.filter(pl.col("metric") == select_by), value).select(
        *keys, pl.col("value").alias("_score")
    )
    per_trial = frame.select(*keys, *gcols, "model", "N", "lr").unique().join(score, on=keys)
    size = [*gcols, "model", "N"]
    means = (
        per_trial.filter(pl.col("_score").is_finite())
        .group_by([*size, "lr"])
        .agg(pl.col("_score").mean(), pl.len().alias("trials"))
        .sort([*size, "lr"], nulls_last=True)
    )
    best = (
        means.sort("_score", descending=want == "max")
        .group_by(size, maintain_order=True)
        .first()
        .sort(size, nulls_last=True)
    )
    tried = means.group_by(size).agg(pl.col("lr").sort().alias("lrs"))
    best = best.join(tried, on=size, how="left", nulls_equal=True).sort(["N", *gcols])
    kept = frame.join(best.select(*size, "lr"), on=[*size, "lr"], how="semi", nulls_equal=True)
    rows, records = [], []
    for r in best.iter_rows(named=True):
        rows.append(
            [
                *(format_value(r[c]) for c in gcols),
                format_value(r["model"]),
                f"{r['N']:.4g}",
                format_value(r["lr"]),
                fmt(r["_score"]),
                str(r["trials"]),
                ", ".join(format_value(v) for v in r["lrs"]),
            ]
        )
        records.append(
            {
                **{c: plain_value(r[c]) for c in gcols},
                "model": r["model"],
                "N": r["N"],
                "lr": r["lr"],
                "select_by": select_by,
                "mean": r["_score"],
                "trials": r["trials"],
                "lrs_tried": list(r["lrs"]),
            }
        )
    table = Table(
        name="scaling_lr",
        title=f"learning rate per size: the best mean {select_by} ({want}) over seeds",
        columns=[*gcols, "model", "N", "lr", f"mean {select_by}", "seeds", "lrs tried"],
        rows=rows,
        data=pl.DataFrame(records, infer_schema_length=None),
    )
    note = (
        f"the learning rate varies: per size only the trials of the lr with the best mean "
        f"{select_by} are fitted (table scaling_lr; --lr pool averages over every lr instead)"
    )
    return kept, table, note


def axis_values(frame: pl.DataFrame, axis: str) -> pl.Expr:
    """The expression of an axis on a trial-values frame."""
    if axis == "N":
        return pl.col("N")
    if axis == "D":
        return pl.col("D")
    return 6.0 * pl.col("N") * pl.col("D")


def aggregate_points(frame: pl.DataFrame, gcols: list[str], axis: str, how: str) -> pl.DataFrame:
    """Points on `axis`: per size the mean over its trials (`size`) or every trial (`trial`).

    Columns: gcols, metric, model, N, step, x, y, trials, sd; sorted by group, metric and x.
    """
    x = axis_values(frame, axis).alias("x")
    lf = frame.lazy().with_columns(x).filter(pl.col("x").is_not_null() & (pl.col("x") > 0))
    keys = [*gcols, "metric", *SIZE_KEY]
    if how == "trial":
        out = lf.select(
            *keys,
            "x",
            pl.col("value").alias("y"),
            pl.lit(1, pl.UInt32()).alias("trials"),
            pl.lit(None, pl.Float64()).alias("sd"),
            "trial_id",
        )
    else:
        out = lf.group_by(keys).agg(
            pl.col("x").mean(),
            pl.col("value").mean().alias("y"),
            pl.len().alias("trials"),
            pl.col("value").std(ddof=1).alias("sd"),
        )
    order = [*gcols, "metric", "x", *SIZE_KEY] + (["y", "trial_id"] if how == "trial" else [])
    return out.collect().sort(order, nulls_last=True)
