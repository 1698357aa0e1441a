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
from typing import Any

import numpy as np
import polars as pl

from analysis.arms import format_value
from analysis.scaling.lr import best_lr
from analysis.scaling.powerlaw import distinct_count
from analysis.selection import ValueSpec, select_values
from records.errors import ResultsError
from records.reader import Store, config_columns, read_latest, scan_metrics

PARAM_METRICS = {"non_embedding": "model/params_non_embedding", "total": "model/params_total"}
"""--params choice -> the metric holding N (reported once per trial, at step 0)."""
TOKENS_METRIC = "train/tokens_seen"
"""Cumulative non-padding input tokens fed to the model in training, at every training report."""
SIZE_KEY = ("model", "N", "step")
"""Within a fit group, trials with equal values here are one size (seeds of one configuration)."""


@dataclass
class TrialValues:
    """One row per (trial, metric): the fit group's columns, the size key, N, D (null without
    tokens seen), seed and value; plus what was chosen or left out on the way."""

    frame: pl.DataFrame
    group_columns: list[str]
    notes: list[str] = field(default_factory=list)
    lr_records: list[dict[str, Any]] | None = None
    """The learning rate chosen per size (see lr.py), None when it did not vary."""
    d_steps: bool = False
    """True for a points table (table_points.py): a size's `step` holds its D, and an N line
    is named by that D, not by a training step."""
    flops_per_param_token: float = 6.0
    """k in C = k·N·D: 6 for a store; for a table with a FLOP column, the median of C/(N·D)."""
    seeded: bool = True
    """Rows repeating a size are declared seeds (a store's trials; a table's --seed-column),
    which the joint fit's bootstrap redraws within cells (cells.py)."""


def group_columns(
    trials: pl.DataFrame, by: Sequence[str], pool_experiments: bool = False
) -> list[str]:
    """The fit group's columns: `by` plus experiment (unless pooled), dataset and group where
    they vary."""
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
    for c in ("dataset", "group") if pool_experiments else ("experiment", "dataset", "group"):
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
    pool_experiments: bool = False,
    lr_mode: str,
    select_by: str | None,
    with_tokens: bool,
) -> TrialValues:
    """Read and join everything the fits need (see the module docstring)."""
    gcols = group_columns(trials, by, pool_experiments)
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
    frame = frame.filter(pl.col("N").is_not_null())
    bad = frame.filter(~pl.col("value").is_finite())
    if bad.height:
        notes.append(f"{bad.height} non-finite value(s) (diverged trials?) left out of the fits")
    lr_records = None
    if choose_lr:  # before the non-finite values go: a diverged rate was tried (best_lr)
        frame, lr_records, lr_note = best_lr(frame, latest, gcols, value, select_by)
        notes.append(lr_note)
        varying = [c for c in varying if c != "lr"]
    frame = frame.filter(pl.col("value").is_finite())
    pooled = [c for c in varying if c not in ("model", "seed")]
    if pooled:
        notes.append(
            f"sizes pooled over {', '.join(pooled)} (it varies within a fit group; add --by "
            "to split)"
        )
    order = [*gcols, "metric", *SIZE_KEY, "experiment", "trial_id"]
    frame = frame.sort(order, nulls_last=True)
    return TrialValues(frame, gcols, notes, lr_records)


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


def axis_values(frame: pl.DataFrame, axis: str) -> pl.Expr:
    """The expression of an axis on a trial-values frame."""
    if axis == "N":
        return pl.col("N")
    if axis == "D":
        return pl.col("D")
    # A table's FLOP column where it has one (table_points.py), else C = 6·N·D.
    return pl.col("C") if "C" in frame.columns else 6.0 * pl.col("N") * pl.col("D")


def aggregate_points(frame: pl.DataFrame, gcols: list[str], axis: str, how: str) -> pl.DataFrame:
    """Points on `axis`: per size the mean over its trials (`size`) or every trial (`trial`).

    Columns: gcols, metric, model, N, step, x, y, trials, sd; sorted by group, metric and x.
    """
    x = axis_values(frame, axis).alias("x")
    lf = frame.lazy().with_columns(x).filter(pl.col("x").is_not_null() & (pl.col("x") > 0))
    keys = [*gcols, "metric", *SIZE_KEY]
    carried = [c for c in ("ratio",) if c in frame.columns]  # a table's tokens per parameter
    if how == "trial":
        out = lf.select(
            *keys,
            "x",
            pl.col("value").alias("y"),
            pl.lit(1, pl.UInt32()).alias("trials"),
            pl.lit(None, pl.Float64()).alias("sd"),
            "trial_id",
            *carried,
        )
    else:
        # Each size's trials in trial order, so the means and sds sum their values in one order
        # on every read (a mean's last bit follows the order; polars' joins and group-bys keep
        # none): the committed reports rebuild byte for byte.
        out = (
            lf.sort([*keys, "trial_id"])
            .group_by(keys, maintain_order=True)
            .agg(
                pl.col("x").mean(),
                pl.col("value").mean().alias("y"),
                pl.len().alias("trials"),
                pl.col("value").std(ddof=1).alias("sd"),
                *(pl.col(c).first() for c in carried),
            )
        )
    order = [*gcols, "metric", "x", *SIZE_KEY] + (["y", "trial_id"] if how == "trial" else [])
    return out.collect().sort(order, nulls_last=True)


def default_axes(
    frame: pl.DataFrame, gcols: list[str], has_tokens: bool, notes: list[str]
) -> list[str]:
    """N, plus D and C when tokens seen vary across sizes in some group (a data-scaling sweep);
    in a fixed-budget sweep D is one value and C = 6·N·D repeats the N fits."""
    if not has_tokens:
        notes.append(f"no {TOKENS_METRIC} in the store: fits against N only")
        return ["N"]
    per_size = (
        frame.filter(pl.col("D").is_not_null())
        .group_by([*gcols, *SIZE_KEY])
        .agg(pl.col("D").mean())
    )
    spread = (
        per_size.group_by(gcols).agg(pl.col("D").alias("d"))
        if gcols
        else per_size.select(pl.col("D").implode().alias("d"))
    )
    # Seeds feed slightly different token counts (padding, data order): budgets that differ by
    # design differ by far more than 5%.
    varies = any(distinct_count(np.array(d), rtol=0.05) >= 3 for d in spread["d"].to_list())
    if varies:
        return ["N", "D", "C"]
    notes.append(
        "tokens seen D are (nearly) the same at every size: no fit against D, and one against "
        "C = 6·N·D would repeat the N fit (ask with --axis D,C)"
    )
    return ["N"]


def lines(points: pl.DataFrame, axis: str, d_steps: bool = False) -> list[tuple[str, pl.DataFrame]]:
    """The points of one group split into lines, each holding the other axis fixed: an N line
    per step budget (per D of a table: `d_steps`; per tokens per parameter D/N where the points
    carry a `ratio`, --lines ratio), a D line per model; C has one line (its frontier is taken
    per metric)."""
    if axis == "N" and "ratio" in points.columns:
        rounded = points.with_columns(
            pl.col("ratio").map_elements(lambda v: float(f"{v:.3g}"), return_dtype=pl.Float64)
        )
        return [
            (f"D/N {r:.3g}", rounded.filter(pl.col("ratio") == r))
            for r in rounded["ratio"].unique().sort()
        ]
    if axis == "N" and points["step"].n_unique() > 1:
        return [
            (f"D {s:.3g}" if d_steps else f"step {s}", points.filter(pl.col("step") == s))
            for s in points["step"].unique().sort()
        ]
    if axis == "D" and points["N"].n_unique() > 1:
        out = []
        for n in points["N"].unique().sort():
            part = points.filter(pl.col("N") == n)
            out.append((f"model {format_value(part['model'][0])}", part))
        return out
    return [("frontier" if axis == "C" else "", points)]


def compute_frontier(points: pl.DataFrame, want: str | None) -> pl.DataFrame:
    """The points no cheaper point beats (sorted by x; for a metric to minimise, those below
    every point left of them). Metrics without a direction keep every point."""
    if want is None or points.height == 0:
        return points
    y = points["y"].to_numpy()
    score = y if want == "min" else -y
    best = np.minimum.accumulate(score)
    keep = np.r_[True, score[1:] < best[:-1]]
    return points.filter(pl.Series(keep))


def paired(gtrials: pl.DataFrame, ce_m: str, ee_m: str, axis: str) -> pl.DataFrame:
    """Per trial its CE and EE (same trial, same step) and its axis value, sorted by size."""
    both = gtrials.filter(pl.col("metric").is_in([ce_m, ee_m])).with_columns(
        axis_values(gtrials, axis).alias("x")
    )
    wide = both.pivot(
        on="metric", index=["experiment", "trial_id", *SIZE_KEY, "x"], values="value"
    ).rename({ce_m: "ce", ee_m: "ee"}, strict=False)
    if not {"ce", "ee"} <= set(wide.columns):
        return wide.clear()
    wide = wide.drop_nulls(["ce", "ee", "x"]).filter((pl.col("x") > 0) & (pl.col("ce") != 0))
    return wide.sort(["x", *SIZE_KEY, "experiment", "trial_id"], nulls_last=True)


def line_trials(gtrials: pl.DataFrame, metric: str, axis: str, pts: pl.DataFrame) -> pl.DataFrame:
    """The trials behind one line's points of one metric: x and value per trial, only the sizes
    the points hold (a C frontier drops some), sorted by size."""
    return (
        gtrials.filter(pl.col("metric") == metric)
        .with_columns(axis_values(gtrials, axis).alias("x"))
        .join(pts.select(SIZE_KEY), on=list(SIZE_KEY), how="semi", nulls_equal=True)
        .drop_nulls(["x", "value"])
        .filter(pl.col("x") > 0)
        .sort(["x", *SIZE_KEY, "experiment", "trial_id"], nulls_last=True)
    )
