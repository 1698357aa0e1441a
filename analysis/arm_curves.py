"""Metric curves over training per arm: at every step, the mean over seeds and the half width of
its t-interval, computed in one polars aggregation (learning curves can have millions of rows)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from analysis.arms import Arms
from analysis.seed_stats import t_quantile
from analysis.seed_values import arm_seed_values
from records.metric_names import TOKENS_SEEN
from records.reader import Store, read_latest


@dataclass(frozen=True)
class Curve:
    """One arm's curve of one metric. Arrays of shape (steps,); `half` is nan where n < 2."""

    steps: np.ndarray
    mean: np.ndarray
    half: np.ndarray
    n: np.ndarray


def metric_curves(
    store: Store, arms: Arms, metrics: Sequence[str], level: float = 0.95
) -> tuple[dict[str, dict[str, Curve]], list[str]]:
    """metric -> arm -> Curve for the arms' trials, and notes on what was left out."""
    latest, counts = read_latest(store, metrics)
    per_seed, notes = arm_seed_values(latest, arms)
    if counts.note():
        notes.insert(0, counts.note())
    agg = (
        per_seed.group_by(["metric", "arm", "step"])
        .agg(
            pl.col("value").mean().alias("mean"),
            pl.col("value").std(ddof=1).alias("sd"),
            pl.len().alias("n"),
        )
        .sort(["metric", "arm", "step"])
    )
    # One t quantile per distinct seed count, not per point.
    t_of = {int(n): t_quantile((1 + level) / 2, int(n) - 1) for n in agg["n"].unique() if n >= 2}
    agg = agg.with_columns(
        pl.col("n").replace_strict(t_of, default=None, return_dtype=pl.Float64()).alias("t")
    ).with_columns(
        (pl.col("t") * pl.col("sd") / pl.col("n").cast(pl.Float64()).sqrt())
        .fill_null(float("nan"))
        .alias("half")
    )
    out: dict[str, dict[str, Curve]] = {}
    for (metric, arm), part in agg.group_by(["metric", "arm"], maintain_order=True):
        out.setdefault(str(metric), {})[str(arm)] = Curve(
            steps=part["step"].to_numpy(),
            mean=part["mean"].to_numpy(),
            half=part["half"].to_numpy(),
            n=part["n"].to_numpy(),
        )
    return out, notes


def tokens_at_steps(
    store: Store, arms: Arms, curves: dict[str, dict[str, Curve]]
) -> dict[str, np.ndarray] | None:
    """`metric|arm` -> the arm's mean tokens seen (`train/tokens_seen`, over its seeds) at each
    step of that curve, interpolated between the steps tokens were reported at (0 at step 0);
    None unless every curve's arm reported them."""
    seen, _ = metric_curves(store, arms, [TOKENS_SEEN])
    by_arm = seen.get(TOKENS_SEEN, {})
    out = {}
    for metric, curves_of in curves.items():
        for arm, c in curves_of.items():
            t = by_arm.get(arm)
            if t is None or t.steps.size == 0:
                return None
            steps, mean = t.steps, t.mean
            if steps[0] > 0:  # nothing is seen before the first step
                steps, mean = np.r_[0, steps], np.r_[0.0, mean]
            out[f"{metric}|{arm}"] = np.interp(c.steps, steps, mean)
    return out


def seeds_per_arm(curves: dict[str, dict[str, Curve]]) -> dict[str, int]:
    """Arm -> the most seeds any of its curves' points averages."""
    most: dict[str, int] = {}
    for by_arm in curves.values():
        for arm, c in by_arm.items():
            most[arm] = max(most.get(arm, 0), int(c.n.max()) if c.n.size else 0)
    return most
