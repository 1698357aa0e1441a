"""Does a loss's effect change with scale? Where seeds are paired across groups (the same seed of
the same size trained under both losses: same data order and start), the paired difference per
size and its trend in ln N — the most direct test, as each seed's own noise cancels in its pair.

The difference is d = ln L_g − ln L_r of one seed (the relative gap; −0.01: the loss 1% below
the reference), per size its mean over the seeds both groups have, with a t-interval over
those seeds. The trend is the least-squares slope of the per-size means on ln N with its
t-interval on S − 2 degrees of freedom (S sizes): each size one point, so the interval carries
the scatter of the sizes about the line, not only the seeds' noise. Under the plain laws the
slope is a_g − a_r = −(b_g − b_r): the exponent difference of exponent_test.py seen through the
pairs (negative: the loss's exponent is larger, its gap to the reference opens in its favour).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
from scipy import stats

from analysis.scaling.powerlaw import MIN_SIZES
from analysis.scaling.rules import trend
from analysis.seed_stats import mean_ci, t_quantile

PAIR_KEYS = ("x", "seed")
"""What pairs a trial of the loss with one of the reference: its size and its seed."""


def paired_design(loss: pl.DataFrame, reference: pl.DataFrame) -> bool:
    """Whether the loss's trials and the reference's are a paired design: both with seeds, the
    same (size, seed) pairs under both, at least two sizes (frames with columns x = N, seed)."""
    if "seed" not in loss.columns or "seed" not in reference.columns:
        return False
    keys = [loss.select(PAIR_KEYS).unique(), reference.select(PAIR_KEYS).unique()]
    if keys[0].height != keys[1].height or keys[0]["x"].n_unique() < 2:
        return False
    return keys[0].join(keys[1], on=list(PAIR_KEYS)).height == keys[0].height


def paired_sizes(loss: pl.DataFrame, reference: pl.DataFrame, level: float) -> list[dict[str, Any]]:
    """Per size both have, the paired differences' mean with its t-interval (frames of trials
    with columns x = N, seed and value)."""
    pairs = (
        loss.select(*PAIR_KEYS, "value")
        .join(reference.select(*PAIR_KEYS, pl.col("value").alias("ref")), on=list(PAIR_KEYS))
        .filter((pl.col("value") > 0) & (pl.col("ref") > 0))
        .with_columns(
            (pl.col("value").log() - pl.col("ref").log()).alias("d"),
            (pl.col("value") - pl.col("ref")).alias("gap"),
        )
        .sort(["x", "seed"])
    )
    out = []
    for part in pairs.partition_by("x", maintain_order=True):
        ci = mean_ci(part["d"].to_list(), level)
        out.append(
            {
                "n": float(part["x"][0]),
                "pairs": ci.n,
                "difference": ci.mean,
                "low": ci.low,
                "high": ci.high,
                "loss_gap": float(part["gap"].mean()),
            }
        )
    return out


def trend_of(sizes: list[dict[str, Any]], level: float) -> dict[str, Any]:
    """The slope of the per-size mean differences on ln N, its t-interval and p (None below
    MIN_SIZES sizes, with the reason in `remark`)."""
    out: dict[str, Any] = {"sizes": len(sizes), "pairs": sum(s["pairs"] for s in sizes)}
    out |= dict.fromkeys(("slope", "low", "high", "p", "trend", "remark"))
    if len(sizes) < MIN_SIZES:
        out["remark"] = f"paired seeds at {len(sizes)} size(s): a trend needs {MIN_SIZES}"
        return out
    x = np.log(np.array([s["n"] for s in sizes]))
    y = np.array([s["difference"] for s in sizes])
    reg = stats.linregress(x, y)
    half = t_quantile((1 + level) / 2, x.size - 2) * reg.stderr
    lo, hi = float(reg.slope - half), float(reg.slope + half)
    out |= {"slope": float(reg.slope), "low": lo, "high": hi, "p": float(reg.pvalue)}
    out["trend"] = trend(lo, hi) if np.isfinite(half) else None
    return out
