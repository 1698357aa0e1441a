"""Scaling fits: for CE and its decomposition (error entropy EE, self-alignment SA, log-confidence)
against the parameter count N, log M = c + a·log N per group (loss × dataset × evaluation split,
plus experiment or arm label where they vary), with R² and a bootstrap interval for a; and the
share EE/CE at each size."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from analysis.arms import format_value, plain_value
from analysis.metric_names import DECOMPOSITION_LEAVES, splits
from analysis.powerlaw import NotEnoughData, PowerLawFit, fit_power_law
from analysis.selection import FINAL, ValueSpec, select_values
from analysis.store import (
    DEFAULT_STATUSES,
    ResultsError,
    Store,
    config_columns,
    current_trials,
    metric_names,
    read_latest,
    trial_summary,
)
from analysis.table import DASH, Result, Table, fmt, fmt_pm
from analysis.tstats import mean_ci

PARAM_METRICS = {"non_embedding": "model/params_non_embedding", "total": "model/params_total"}
"""--params choice -> the metric holding N (reported once per trial, at step 0)."""


def _group_columns(trials: pl.DataFrame, by: Sequence[str]) -> list[str]:
    configs = config_columns(trials)
    unknown = [c for c in by if c not in configs]
    if unknown:
        raise ResultsError(
            f"unknown column {', '.join(map(repr, unknown))} for --by; "
            f"available: {', '.join(configs)}"
        )
    cols = list(by)
    for c in ("experiment", "dataset", "group"):
        if c in trials.columns and c not in cols and trials[c].n_unique() > 1:
            cols.append(c)
    return cols


def scaling(
    store: Store,
    *,
    params: str = "non_embedding",
    value: ValueSpec = FINAL,
    by: Sequence[str] = ("loss",),
    statuses: Sequence[str] = DEFAULT_STATUSES,
    n_boot: int = 2000,
    seed: int = 0,
    level: float = 0.95,
) -> Result:
    """Fit table, EE/CE share table and the points behind the log-log figures."""
    if params not in PARAM_METRICS:
        raise ResultsError(f"--params must be one of {', '.join(PARAM_METRICS)}, got {params!r}")
    if value.kind == "best":
        raise ResultsError("--value best is not defined for all four metrics here; use final")
    trials, notes = current_trials(store, statuses)
    result = Result("scaling", "Scaling with parameter count", notes=[*store.notes, *notes])
    result.header.append(f"experiments: {', '.join(store.experiments)}")
    if trials.height == 0:
        return result
    available = metric_names(store)
    n_metric = PARAM_METRICS[params]
    if n_metric not in available:
        result.notes.append(
            f"no {n_metric} metric in the store: no parameter counts, no scaling fits"
            + (" (--params total uses model/params_total)" if params != "total" else "")
        )
        return result
    have = set(available)
    targets = [
        (s, leaf)
        for s in splits(available)
        for leaf in DECOMPOSITION_LEAVES
        if f"eval/{s}/{leaf}" in have
    ]
    if not targets:
        result.notes.append("no eval/<split>/ce (or its decomposition) written yet: no fits")
        return result
    wanted = [n_metric] + [f"eval/{s}/{leaf}" for s, leaf in targets]
    latest, counts = read_latest(store, wanted)
    if counts.note():
        result.notes.append(counts.note())
    sizes = select_values(latest.filter(pl.col("metric") == n_metric), FINAL).select(
        "experiment", "trial_id", pl.col("value").alias("N")
    )
    picked = select_values(latest.filter(pl.col("metric") != n_metric), value)
    gcols = _group_columns(trials, by)
    rest = [c for c in config_columns(trials) if c not in gcols and c not in ("model", "seed")]
    spread = trials.group_by(gcols).agg(pl.col(c).n_unique() for c in rest) if rest else None
    pooled = [c for c in rest if spread is not None and spread[c].max() > 1]
    if pooled:
        result.notes.append(
            f"points pooled over {', '.join(pooled)} (varies within a group; add --by to split)"
        )
    frame = picked.join(
        trials.select(list(dict.fromkeys(["experiment", "trial_id", *gcols]))),
        on=["experiment", "trial_id"],
    ).join(sizes, on=["experiment", "trial_id"], how="left")
    no_n = frame.filter(pl.col("N").is_null()).select("trial_id").n_unique()
    if no_n:
        result.notes.append(f"{no_n} trial(s) report no {n_metric}: left out of the fits")
    frame = frame.filter(pl.col("N").is_not_null() & pl.col("value").is_finite())
    parts = pl.col("metric").str.split("/")
    frame = frame.with_columns(parts.list.get(1).alias("split"), parts.list.get(2).alias("leaf"))
    result.header += [
        trial_summary(trials),
        f"N = {n_metric}; value per trial: {value.label}; "
        "fit: log M = c + a·log N (natural logs), least squares over trials",
        f"a's {level * 100:g}% CI: studentized pairs bootstrap, {n_boot} resamples, seed {seed}",
    ]

    fit_rows, fit_records, figure = [], [], []
    share_rows, share_records = [], []
    group_frames = frame.sort(gcols, nulls_last=True).partition_by(gcols, maintain_order=True)
    for gframe in group_frames:
        group = gframe.select(gcols).row(0, named=True)
        label = ", ".join(f"{k}={format_value(v)}" for k, v in group.items() if v is not None)
        for split in sorted({s for s, _ in targets}, key=lambda s: (s != "test", s)):
            sframe = gframe.filter(pl.col("split") == split)
            for leaf in DECOMPOSITION_LEAVES:
                pts = sframe.filter(pl.col("leaf") == leaf)
                if pts.height == 0:
                    continue
                n = pts["N"].to_numpy()
                m = pts["value"].to_numpy()
                fit: PowerLawFit | None = None
                reason = ""
                try:
                    fit = fit_power_law(n, m, n_boot=n_boot, seed=seed, level=level)
                except NotEnoughData as err:
                    reason = str(err)
                n_sizes = int(np.unique(n).size)
                cells: list[str] = [*(format_value(group[c]) for c in gcols), split, leaf]
                cells += [str(n_sizes), str(n.size)]
                if fit is None:
                    cells += [DASH, DASH, DASH, DASH, reason]
                else:
                    ci = DASH if fit.a_ci is None else f"[{fmt(fit.a_ci[0])}, {fmt(fit.a_ci[1])}]"
                    remark = "fitted |M| (all values < 0)" if fit.sign < 0 else ""
                    if fit.a_ci is None:
                        remark = (remark + "; " if remark else "") + "fewer than 4 points: no CI"
                    cells += [fmt(fit.a), ci, fmt(fit.c), fmt(fit.r2), remark]
                fit_rows.append(cells)
                fit_records.append(
                    {
                        **{c: plain_value(group[c]) for c in gcols},
                        "split": split,
                        "metric": f"eval/{split}/{leaf}",
                        "sizes": n_sizes,
                        "points": int(n.size),
                        "a": fit.a if fit else None,
                        "a_ci_low": fit.a_ci[0] if fit and fit.a_ci else None,
                        "a_ci_high": fit.a_ci[1] if fit and fit.a_ci else None,
                        "c": fit.c if fit else None,
                        "r2": fit.r2 if fit else None,
                        "sign": fit.sign if fit else None,
                        "bootstrap_resamples": fit.n_boot if fit else None,
                        "no_fit_reason": reason or None,
                    }
                )
                figure.append(
                    {"group": label, "split": split, "leaf": leaf, "n": n, "m": m, "fit": fit}
                )
            # EE/CE per trial (same trial, same step), then mean ± CI over trials at each N.
            wide = sframe.filter(pl.col("leaf").is_in(["ce", "error_entropy"])).pivot(
                on="leaf", index=["trial_id", "N"], values="value"
            )
            if {"ce", "error_entropy"} <= set(wide.columns):
                wide = wide.drop_nulls(["ce", "error_entropy"]).filter(pl.col("ce") != 0)
                for n_value, ratios in (
                    wide.with_columns((pl.col("error_entropy") / pl.col("ce")).alias("r"))
                    .group_by("N")
                    .agg("r")
                    .sort("N")
                    .iter_rows()
                ):
                    ci = mean_ci(ratios, level)
                    share_rows.append(
                        [
                            *(format_value(group[c]) for c in gcols),
                            split,
                            f"{n_value:.4g}",
                            str(ci.n),
                            fmt_pm(ci.mean, ci.half_width),
                        ]
                    )
                    share_records.append(
                        {
                            **{c: plain_value(group[c]) for c in gcols},
                            "split": split,
                            "N": n_value,
                            "trials": ci.n,
                            "ee_over_ce": ci.mean,
                            "ci_low": ci.low,
                            "ci_high": ci.high,
                        }
                    )
    result.tables.append(
        Table(
            name="scaling_fits",
            title="power-law fits log M = c + a·log N",
            columns=[
                *gcols,
                "split",
                "metric",
                "sizes",
                "points",
                "a",
                "a 95% CI",
                "c",
                "R²",
                "remark",
            ],
            rows=fit_rows,
            data=pl.DataFrame(fit_records, infer_schema_length=None),
        )
    )
    if share_rows:
        result.tables.append(
            Table(
                name="scaling_ee_share",
                title="error entropy share EE/CE per size (mean ± CI over trials)",
                columns=[*gcols, "split", "N", "trials", "EE/CE"],
                rows=share_rows,
                data=pl.DataFrame(share_records, infer_schema_length=None),
            )
        )
    if fit_records and all(r["a"] is None for r in fit_records):
        result.notes.append("no group has enough sizes for a fit (3 or more distinct N needed)")
    result.figure_data["scaling"] = figure
    return result
