"""The learning rate per size: when the learning rate varies within a fit group, per model size
only the trials of the learning rate whose mean (over seeds) of the selection metric is best are
fitted; the records of that choice say which learning rates each size tried."""

from __future__ import annotations

import math
from typing import Any

import polars as pl

from analysis.arms import plain_value
from analysis.scaling.rules import lr_position
from analysis.selection import ValueSpec, select_values
from records.errors import ResultsError
from records.metric_names import direction


def best_lr(
    frame: pl.DataFrame,
    latest: pl.DataFrame,
    gcols: list[str],
    value: ValueSpec,
    select_by: str,
) -> tuple[pl.DataFrame, list[dict[str, Any]], str]:
    """Keep, per fit group and model size, the trials of the learning rate whose mean (over
    seeds) of `select_by` is best; the records of the choices, and a note saying so."""
    want = direction(select_by)
    if want is None:
        raise ResultsError(
            f"--select-by {select_by}: it has no better direction, so no learning rate is best"
        )
    keys = ["experiment", "trial_id"]
    score = select_values(latest.filter(pl.col("metric") == select_by), value).select(
        *keys, pl.col("value").alias("_score")
    )
    per_trial = (
        frame.select(list(dict.fromkeys([*keys, *gcols, "model", "N", "lr"])))
        .unique()
        .join(score, on=keys, how="left")
    )
    size = [*gcols, "model", "N"]
    # A rate whose trial diverged (a score that is NaN or infinite) was tried and did worse
    # than every finite one: it counts in the grid (so a size whose higher rate blew up has its
    # best "inside", not at the edge) and is never the best unless every rate diverged.
    worst = float("inf") if want == "min" else float("-inf")
    finite = pl.col("_score").is_finite()
    means = (
        per_trial.with_columns(pl.when(finite).then(pl.col("_score")).otherwise(worst))
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
    records = [
        {
            **{c: plain_value(r[c]) for c in gcols},
            "model": r["model"],
            "N": r["N"],
            "lr": r["lr"],
            "select_by": select_by,
            "mean": r["_score"] if math.isfinite(r["_score"]) else None,
            "trials": r["trials"],
            "lrs_tried": list(r["lrs"]),
            "lr_position": lr_position(r["lr"], list(r["lrs"])),
            "lr_at_edge": lr_position(r["lr"], list(r["lrs"])) != "inside",
        }
        for r in best.iter_rows(named=True)
    ]
    note = (
        f"the learning rate varies: per size only the trials of the lr with the best mean "
        f"{select_by} are fitted (table scaling_lr; --lr pool averages over every lr instead)"
    )
    edge = [f"{r['model']} ({r['lr_position']})" for r in records if r["lr_at_edge"]]
    if edge:
        note += (
            f"; best lr at the edge of its grid for {len(edge)} of {len(records)} sizes: "
            f"{', '.join(edge)} (the best may lie outside the grid)"
        )
    return kept, records, note
