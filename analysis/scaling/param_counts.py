"""How N is counted, and whether the conclusion depends on it: where a store reports both the
non-embedding and the total parameter count, every N line is fitted under both, and the
exponents stand side by side — the plain a, and with --robust the Huber α — with the verdict
of rules.count_matters. At small sizes the embeddings are most of a model (92% of study 4's
smallest), so the counts can give exponents far apart (Kaplan et al. 2020 fit non-embedding
parameters for this reason; Hoffmann et al. 2022 count all of them).
"""

from __future__ import annotations

from typing import Any

import polars as pl

from analysis.arms import plain_value
from analysis.scaling.fits import fit_both, plain_record
from analysis.scaling.points import (
    PARAM_METRICS,
    TrialValues,
    aggregate_points,
    line_trials,
    lines,
)
from analysis.scaling.robust import Units, huber_record
from analysis.scaling.rules import count_matters
from analysis.scaling.settings import ScalingSettings
from analysis.selection import ValueSpec, select_values
from records.reader import Store, read_latest

COUNT_KEYS = (
    *("a_non_embedding", "a_non_embedding_ci_low", "a_non_embedding_ci_high"),
    *("a_total", "a_total_ci_low", "a_total_ci_high"),
    *("alpha_non_embedding", "alpha_non_embedding_ci_low", "alpha_non_embedding_ci_high"),
    *("alpha_total", "alpha_total_ci_low", "alpha_total_ci_high"),
    "embedding_share_smallest",
    "verdict",
)


def _counts(store: Store, frame: pl.DataFrame) -> pl.DataFrame:
    """Both counts per trial of `frame`: experiment, trial_id, non_embedding, total."""
    keys = ["experiment", "trial_id"]
    latest, _ = read_latest(store, list(PARAM_METRICS.values()))
    got = select_values(latest, ValueSpec("final")).pivot(on="metric", index=keys, values="value")
    names = {metric: count for count, metric in PARAM_METRICS.items()}
    return got.rename(names).join(frame.select(keys).unique(), on=keys, how="semi")


def count_records(
    store: Store,
    data: TrialValues,
    chosen: list[str],
    s: ScalingSettings,
    fitted: dict[tuple, dict[str, Any]],
) -> list[dict[str, Any]]:
    """Per group, N line and metric: the exponents under both counts and the verdict; none
    unless every trial reports both counts. `fitted`: the run's own fits under its count
    (`s.params`, from fitted_exponents), so only the other count is fitted here."""
    counts = _counts(store, data.frame)
    if counts.height == 0 or counts.null_count().sum_horizontal().item() > 0:
        return []
    other = next(c for c in PARAM_METRICS if c != s.params)
    frame = (
        data.frame.filter(pl.col("metric").is_in(chosen))
        .drop("N")
        .join(
            counts.select("experiment", "trial_id", pl.col(other).alias("N")),
            on=["experiment", "trial_id"],
        )
    )
    found = {s.params: fitted, other: _fits(frame, data.group_columns, s)}
    share = counts.select(1 - pl.col("non_embedding") / pl.col("total"), pl.col("total")).sort(
        "total"
    )
    smallest = float(share[0, 0])
    out = []
    for key, ne in found["non_embedding"].items():
        tot = found["total"].get(key)
        if tot is None:
            continue
        rec = {**ne["key"], **dict.fromkeys(COUNT_KEYS)}
        for count, fits in (("non_embedding", ne["fit"]), ("total", tot["fit"])):
            for name, (v, lo, hi) in fits.items():
                rec[f"{name}_{count}"] = v
                rec[f"{name}_{count}_ci_low"], rec[f"{name}_{count}_ci_high"] = lo, hi
        rec["embedding_share_smallest"] = smallest
        rec["verdict"] = count_matters(rec)
        out.append(rec)
    return out


def fitted_exponents(
    plain: list[dict[str, Any]], huber: list[dict[str, Any]], gcols: list[str]
) -> dict[tuple, dict[str, Any]]:
    """The run's N-line exponents (its plain and Huber records), keyed as _fits keys them."""
    out: dict[tuple, dict[str, Any]] = {}
    for records, name in ((plain, "a"), (huber, "alpha")):
        for r in records:
            if r["axis"] != "N":
                continue
            key = {**{c: r[c] for c in gcols}, "metric": r["metric"], "at": r["at"]}
            entry = out.setdefault(tuple(key.values()), {"key": key, "fit": {}})
            entry["fit"][name] = (r[name], r[f"{name}_ci_low"], r[f"{name}_ci_high"])
    return out


def _fits(frame: pl.DataFrame, gcols: list[str], s: ScalingSettings) -> dict[tuple, dict]:
    """The N lines' exponents (plain a; Huber α with --robust) of `frame`, by line key."""
    points = aggregate_points(frame, gcols, "N", s.aggregate)
    parts = points.partition_by([*gcols, "metric"], as_dict=True, maintain_order=True)
    trials = frame.partition_by(gcols, as_dict=True) if gcols else {(): frame}
    out = {}
    for values, part in parts.items():
        group = values[: len(gcols)]
        metric = values[-1]
        for at, pts in lines(part, "N"):
            key = {
                **{c: plain_value(v) for c, v in zip(gcols, group, strict=True)},
                "metric": metric,
                "at": at or None,
            }
            n, m = pts["x"].to_numpy(), pts["y"].to_numpy()
            plain = plain_record(fit_both(n, m, n_boot=s.n_boot, level=s.level, seed=s.seed))
            fit = {"a": (plain["a"], plain["a_ci_low"], plain["a_ci_high"])}
            if s.robust:
                units = Units.of(line_trials(trials[group], metric, "N", pts), "value")
                h = huber_record(
                    units,
                    means=s.aggregate == "size",
                    n_boot=s.n_boot_fit,
                    level=s.level,
                    seed=s.seed,
                )
                fit["alpha"] = (h["alpha"], h["alpha_ci_low"], h["alpha_ci_high"])
            out[tuple(key.values())] = {"key": key, "fit": fit}
    return out
