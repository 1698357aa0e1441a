"""Per-trial summaries of a learning curve (`--value last:K`, `auc`, `auc:FROM-TO`,
`steps_to:X`), computed from the deduplicated metric rows in polars expressions, one value per
(experiment, trial_id, metric):

- last:K: the mean of the trial's last K evaluations of the metric (trials with fewer than K
  have none);
- auc: the trapezoidal mean over the evaluated steps, ∫ v ds / (s_last − s_first) by the
  trapezoidal rule (one evaluation: its value); auc:FROM-TO uses the evaluations with
  FROM ≤ step ≤ TO only (no interpolation at the bounds);
- steps_to:X: the first step at which the metric reaches X in its better direction (≥ X for
  accuracy, ≤ X for a loss), interpolated linearly between that evaluation and the one before;
  X reached at the first evaluation gives that step. A trial that never reaches X gets a null
  value (censored), which every command counts in a note instead of dropping it silently.
  Non-finite values never reach X.
"""

from __future__ import annotations

import polars as pl

from records.metric_names import direction

KEYS = ["experiment", "trial_id", "metric"]
_OUT = {"value": pl.Float64(), "step": pl.Int64()}


def summarise(
    latest: pl.LazyFrame,
    kind: str,
    *,
    count: int | None = None,
    start: int | None = None,
    end: int | None = None,
    target: float | None = None,
) -> pl.DataFrame:
    """Columns experiment, trial_id, metric, value, step for a `last` (count), `auc` (start,
    end) or `steps_to` (target) summary: the fields of analysis.selection.ValueSpec, passed one
    by one so that this module does not import the one that dispatches to it."""
    lf = latest.lazy().select(*KEYS, "step", "value").sort([*KEYS, "step"])
    if kind == "last":
        out = _last(lf, count or 1)
    elif kind == "auc":
        out = _auc(lf, start, end)
    elif kind == "steps_to" and target is not None:
        out = _steps_to(lf, float(target))
    else:
        raise ValueError(f"not a curve summary: {kind} (target {target})")
    return out.select(*KEYS, pl.col("value").cast(pl.Float64()), pl.col("step").cast(pl.Int64()))


def _last(lf: pl.LazyFrame, k: int) -> pl.DataFrame:
    return (
        lf.group_by(KEYS)
        .agg(
            pl.col("value").sort_by("step").tail(k).mean(),
            pl.col("step").max(),
            pl.len().alias("_n"),
        )
        .filter(pl.col("_n") >= k)
        .collect()
    )


def _auc(lf: pl.LazyFrame, start: int | None, end: int | None) -> pl.DataFrame:
    if start is not None:
        lf = lf.filter(pl.col("step").is_between(start, end, closed="both"))
    v, s = pl.col("value").sort_by("step"), pl.col("step").sort()
    area = ((v + v.shift(1)) / 2 * s.diff()).sum()
    span = s.max() - s.min()
    return (
        lf.group_by(KEYS)
        .agg(
            pl.when(span > 0).then(area / span).otherwise(v.first()).alias("value"),
            s.max().alias("step"),
        )
        .collect()
    )


def _steps_to(lf: pl.LazyFrame, target: float) -> pl.DataFrame:
    names = lf.select(pl.col("metric").unique()).collect()["metric"].to_list()
    sign = {m: (1.0 if direction(m) == "max" else -1.0) for m in names if direction(m)}
    lf = lf.filter(pl.col("metric").is_in(list(sign)))
    # g >= 0: reached (for a max metric value >= target, for a min metric value <= target).
    # Non-finite values are never a hit (polars orders NaN above every number).
    g = (pl.col("value") - target) * pl.col("metric").replace_strict(
        sign, default=None, return_dtype=pl.Float64()
    )
    rows = lf.with_columns(
        pl.when(pl.col("value").is_finite()).then(g).otherwise(None).alias("_g")
    ).with_columns(
        pl.col("_g").shift(1).over(KEYS).alias("_g0"),
        pl.col("step").shift(1).over(KEYS).alias("_s0"),
    )
    first_hit = (
        rows.filter(pl.col("_g") >= 0)
        .group_by(KEYS)
        .agg(pl.all().sort_by("step").first())
        .with_columns(
            # Linear interpolation between the last miss (g0 < 0) and the hit (g >= 0); the
            # first evaluation, or one after a non-finite value, counts as its own step.
            pl.when(pl.col("_g0").is_not_null())
            .then(
                pl.col("_s0")
                + (-pl.col("_g0"))
                / (pl.col("_g") - pl.col("_g0"))
                * (pl.col("step") - pl.col("_s0"))
            )
            .otherwise(pl.col("step").cast(pl.Float64()))
            .alias("value")
        )
        .select(*KEYS, "value", "step")
    )
    every = lf.group_by(KEYS).agg(pl.col("step").max().alias("_last"))
    return (
        every.join(first_hit, on=KEYS, how="left")
        .with_columns(pl.col("step").fill_null(pl.col("_last")))
        .collect()
    )
