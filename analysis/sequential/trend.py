"""A study whose primary is a trend across model sizes: does a treatment's effect change with
scale? (study 7, studies/del_scale).

The arms pool the sizes (analysis.arms' blocks: a unit is one model size and one seed, so a
treatment's trial at a size pairs with the reference's trial at that size and seed, and a
learning rate chosen per size goes with the size). For each seed, the paired differences
treatment − reference at every size are regressed on log10 N, N the trial's non-embedding
parameter count as the trial reported it (`model/params_non_embedding`): one least-squares slope
per seed, in the metric's units per decade of N (the slope on ln N times ln 10). The seeds'
slopes are what the sequential looks judge, as they judge a plain study's per-seed differences:
the same boundaries, repeated CI, TOST and futility, with H0 "the effect does not change with N"
(slope 0) and the SESOI a slope per decade.

A seed counts once it has a pair at every size the two arms ran; until then it is left out of
the looks (with a note naming it and the sizes it lacks), so a failed or running trial never
puts a slope on fewer sizes into a look. A seed counts from the latest start of its trials.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import polars as pl
from scipy import stats

from analysis.selection import FINAL, select_values
from records.errors import ResultsError
from records.metric_names import PARAMS_NON_EMBEDDING
from records.reader import Store, read_latest

Trend = Literal["log_n"]
"""`log_n`: the per-seed slope of the paired differences on log10 of the non-embedding
parameters (per decade of N)."""
SIZE_COLUMN = "model"
"""The trials-table column that names a trial's model size (its preset)."""
MIN_SIZES = 3
"""Sizes a slope needs: with two, a seed's slope is its two differences' difference, and the
trend has no residual to tell a line from a bend."""
UNIT = "slope per decade of N"
"""What a trend study's per-seed value is, as its tables and lines say it."""


def with_sizes(store: Store, trials: pl.DataFrame, rows: pl.DataFrame) -> pl.DataFrame:
    """`rows` (one per trial: experiment, trial_id, …) with each trial's seed, size (its preset)
    and n (non-embedding parameters); ResultsError when a trial reported no count."""
    if SIZE_COLUMN not in trials.columns:
        raise ResultsError("trend log_n: the trials table has no model column: no model sizes")
    latest, _ = read_latest(store, [PARAMS_NON_EMBEDDING])
    keys = ["experiment", "trial_id"]
    counts = (
        select_values(latest, FINAL).select(*keys, n=pl.col("value"))
        if latest.height
        else pl.DataFrame(schema={"experiment": pl.String, "trial_id": pl.String, "n": pl.Float64})
    )
    config = trials.select(*keys, "seed", pl.col(SIZE_COLUMN).alias("size"))
    out = rows.join(config, on=keys, how="left").join(counts, on=keys, how="left")
    missing = out.filter(pl.col("n").is_null() | ~(pl.col("n") > 0))
    if missing.height:
        raise ResultsError(
            f"trend log_n: trial {missing['trial_id'][0]!r} (and {missing.height - 1} more) "
            f"reported no {PARAMS_NON_EMBEDDING}: its size is unknown"
        )
    return out


def sizes_of(rows: pl.DataFrame, arms: tuple[str, str]) -> pl.DataFrame:
    """The sizes the two arms ran (size, n), smallest first; ResultsError with fewer than
    MIN_SIZES distinct parameter counts."""
    sizes = rows.filter(pl.col("arm").is_in(arms)).group_by("size").agg(pl.col("n").first())
    sizes = sizes.sort("n")
    if sizes["n"].n_unique() < MIN_SIZES:
        raise ResultsError(
            f"trend log_n: {arms[0]!r} and {arms[1]!r} ran {sizes['n'].n_unique()} model "
            f"size(s) ({', '.join(map(str, sizes['size']))}); a slope needs at least {MIN_SIZES}"
        )
    return sizes


def seed_slopes(
    pairs: pl.DataFrame, sizes: pl.DataFrame, arm: str, notes: list[str]
) -> tuple[pl.DataFrame, list[float]]:
    """`pairs` (one row per size and seed: seed, size, n, value, value_ref, ran, …) of the seeds
    with a pair at every size, with `unit` (the seed's place in the order the seeds ran), and
    each such seed's slope of value − value_ref on log10 n, in that order."""
    wanted = set(sizes["size"].to_list())
    per_seed = (
        pairs.group_by("seed")
        .agg(pl.col("size"), pl.col("ran").max())
        .sort(["ran", "seed"], nulls_last=True)
    )
    complete = []
    for seed, have in per_seed.select("seed", "size").iter_rows():
        lacking = sorted(wanted - set(have))
        if lacking:
            notes.append(
                f"{arm}: seed {seed} has no pair at {', '.join(map(str, lacking))} (of "
                f"{len(wanted)} sizes): left out of the looks until it has"
            )
        else:
            complete.append(seed)
    order = pl.DataFrame({"seed": complete, "unit": range(len(complete))})
    order = order.cast({"seed": pairs.schema["seed"], "unit": pl.UInt32})
    units = pairs.join(order, on="seed").sort(["unit", "n"])
    slopes = [
        _slope(part["n"].to_numpy(), (part["value"] - part["value_ref"]).to_numpy())
        for part in units.partition_by("unit", maintain_order=True)
    ]
    return units, slopes


def _slope(n: np.ndarray, differences: np.ndarray) -> float:
    """The least-squares slope of the differences on log10 n: per decade of N."""
    return float(stats.linregress(np.log10(n), differences).slope)
