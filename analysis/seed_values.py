"""One value per (arm, seed, metric [, step]): the trials of an arm that ran the same seed,
averaged, with notes on what was left out. Shared by the ablation, the curves, the entropy
tables and the plateau check."""

from __future__ import annotations

import polars as pl

from analysis.arms import Arms

SeedValues = dict[str, float]
"""seed_key -> value (the mean over trials of that arm and seed, normally exactly one)."""


def arm_seed_values(
    values: pl.DataFrame, arms: Arms, known: pl.DataFrame | None = None
) -> tuple[pl.DataFrame, list[str]]:
    """Per (arm, seed, metric [, step]) the value, averaged over repeated trials of one seed.

    `values` has experiment, trial_id, metric, value and optionally step; values of trials that
    are not in `arms` are dropped. `known` (experiment, trial_id of every trial in trials/, any
    status) lets the notes mention metrics of trials the trials table does not list yet.
    Non-finite values are left out (and counted in the notes).
    """
    notes = []
    joined = values.join(arms.members, on=["experiment", "trial_id"], how="inner")
    if known is not None:
        orphans = values.join(known, on=["experiment", "trial_id"], how="anti")
        if orphans.height:
            n = orphans.select(pl.struct("experiment", "trial_id").n_unique()).item()
            notes.append(f"{n} trial(s) have metrics but no row in trials/ yet: left out")
    bad = joined.filter(~pl.col("value").is_finite())
    if bad.height:
        notes.append(
            f"{bad.height} non-finite value(s) (diverged trials?) left out of: "
            + ", ".join(sorted(set(bad["metric"].to_list())))
        )
    keys = ["arm", "seed_key", "metric"] + (["step"] if "step" in values.columns else [])
    grouped = (
        joined.filter(pl.col("value").is_finite())
        .group_by(keys)
        .agg(pl.col("value").mean(), pl.len().alias("n_trials"))
    )
    repeated = grouped.filter(pl.col("n_trials") > 1)
    if repeated.height:
        notes.append(
            "some seeds were run by more than one trial of the same arm: their values are averaged "
            "per seed before the interval is formed"
        )
    return grouped.drop("n_trials"), notes
