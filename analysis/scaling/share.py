"""Error entropy's share of CE per size (mean ± CI over its trials) and the trend of that share
with size: the least-squares slope against log10 of the axis with its t-interval."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
from scipy import stats

from analysis.scaling.powerlaw import distinct_count
from analysis.scaling.rules import trend
from analysis.seed_stats import mean_ci, t_quantile


def share_records(strata: list[pl.DataFrame], level: float) -> list[dict[str, Any]]:
    """EE/CE per size stratum (trials with columns model, x, ce, ee)."""
    records = []
    for s_ in strata:
        ci = mean_ci((s_["ee"] / s_["ce"]).to_list(), level)
        records.append(
            {
                "model": s_["model"][0],
                "x": float(s_["x"].mean()),
                "trials": ci.n,
                "ee_over_ce": ci.mean,
                "ci_low": ci.low,
                "ci_high": ci.high,
            }
        )
    return records


def share_figure(records: list[dict[str, Any]]) -> dict[str, np.ndarray]:
    """The series of the EE-share figure."""
    return {
        "x": np.array([r["x"] for r in records]),
        "share": np.array([r["ee_over_ce"] for r in records]),
        "half": np.array(
            [np.nan if r["ci_low"] is None else r["ee_over_ce"] - r["ci_low"] for r in records]
        ),
    }


def trend_record(
    paired: pl.DataFrame, records: list[dict[str, Any]], aggregate: str, level: float
) -> dict[str, Any] | None:
    """The slope of EE/CE against log10(axis): per-size means (`aggregate="size"`) or every
    trial, by least squares, t-interval with n − 2 df; None below three distinct x."""
    if aggregate == "size":
        tx = np.log10(np.array([r["x"] for r in records]))
        ty = np.array([r["ee_over_ce"] for r in records])
    else:
        tx = np.log10(paired["x"].to_numpy())
        ty = (paired["ee"] / paired["ce"]).to_numpy()
    if distinct_count(tx) < 3:
        return None
    reg = stats.linregress(tx, ty)
    half = t_quantile((1 + level) / 2, tx.size - 2) * reg.stderr
    lo, hi = reg.slope - half, reg.slope + half
    return {
        "sizes": len(records),
        "slope_per_decade": float(reg.slope),
        "ci_low": float(lo),
        "ci_high": float(hi),
        "p": float(reg.pvalue),
        "trend": trend(lo, hi),
    }
