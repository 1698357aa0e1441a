"""The paired differences per size and their trend in ln N (analysis/scaling/paired_trend.py):
against pandas and statsmodels' OLS on the same pairs, an exact trend, and the refusal below
three sizes."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
import statsmodels.api as sm
from scipy import stats

from analysis.scaling.paired_trend import paired_design, paired_sizes, trend_of
from tests.analysis.scaling.loss_tables import SIZES, loss_table


def trials(table: dict[str, list], loss: str) -> pl.DataFrame:
    frame = pl.DataFrame(table).filter(pl.col("loss_name") == loss)
    return frame.select(pl.col("N").alias("x"), pl.col("seed").cast(pl.String), "loss").rename(
        {"loss": "value"}
    )


def test_per_size_pairs_and_trend_equal_pandas_and_statsmodels() -> None:
    table = loss_table(seed=5)
    loss, ref = trials(table, "steep"), trials(table, "mle")
    # A seed missing from the loss at one size: that size has one pair fewer.
    loss = loss.filter(~((pl.col("x") == SIZES[2]) & (pl.col("seed") == "3")))
    sizes = paired_sizes(loss, ref, 0.95)
    pd_loss, pd_ref = loss.to_pandas(), ref.to_pandas()
    both = pd_loss.merge(pd_ref, on=["x", "seed"], suffixes=("", "_ref"))
    both["d"] = np.log(both["value"]) - np.log(both["value_ref"])
    means = both.groupby("x")["d"].agg(["mean", "count", "sem"])
    assert [s["pairs"] for s in sizes] == [4, 4, 3, 4, 4, 4]
    assert [s["difference"] for s in sizes] == pytest.approx(means["mean"].to_list(), rel=1e-12)
    half = [s["high"] - s["difference"] for s in sizes]
    want = [
        stats.t.ppf(0.975, k - 1) * se for k, se in zip(means["count"], means["sem"], strict=True)
    ]
    assert half == pytest.approx(want, rel=1e-9)
    trend = trend_of(sizes, 0.95)
    ols = sm.OLS(means["mean"].to_numpy(), sm.add_constant(np.log(means.index.to_numpy()))).fit()
    assert trend["slope"] == pytest.approx(ols.params[1], rel=1e-9)
    assert (trend["low"], trend["high"]) == pytest.approx(tuple(ols.conf_int(0.05)[1]), rel=1e-9)
    assert trend["p"] == pytest.approx(ols.pvalues[1], rel=1e-6)
    assert trend["trend"] == "falls" and (trend["sizes"], trend["pairs"]) == (6, 23)


def test_trend_intervals_cover_the_exponent_difference() -> None:
    # Under the plain laws the slope is a − a_ref = b_ref − b = 0.2 − 0.22 = −0.02; 60 tables,
    # the 95% interval should hold it ~57 times (50 or fewer has probability 0.07%).
    held = 0
    for seed in range(60):
        table = loss_table(seed=1000 + seed)
        trend = trend_of(paired_sizes(trials(table, "steep"), trials(table, "mle"), 0.95), 0.95)
        held += trend["low"] < -0.02 < trend["high"]
    assert held >= 51


def test_an_exact_trend_and_too_few_sizes() -> None:
    # ln L − ln L_ref = −0.05 + 0.01·ln N for every seed: the slope is 0.01, the interval a point.
    ref = pl.DataFrame(
        {"x": [1e7, 1e8, 1e9] * 2, "seed": ["0"] * 3 + ["1"] * 3, "value": [3.0, 2.5, 2.0] * 2}
    )
    loss = ref.with_columns(pl.col("value") * (-0.05 + 0.01 * pl.col("x").log()).exp())
    trend = trend_of(paired_sizes(loss, ref, 0.95), 0.95)
    assert trend["slope"] == pytest.approx(0.01, rel=1e-9)
    assert trend["low"] == pytest.approx(0.01, rel=1e-6)
    assert paired_sizes(loss, ref, 0.95)[0]["difference"] == pytest.approx(
        -0.05 + 0.01 * math.log(1e7)
    )
    two = trend_of(paired_sizes(loss.filter(pl.col("x") < 5e8), ref, 0.95), 0.95)
    assert two["slope"] is None and two["remark"] == "paired seeds at 2 size(s): a trend needs 3"
    unpaired = paired_sizes(loss.with_columns(pl.lit("9").alias("seed")), ref, 0.95)
    assert unpaired == []


def test_a_paired_design_has_the_same_seeds_at_the_same_sizes() -> None:
    table = loss_table(seed=5)
    loss, ref = trials(table, "steep"), trials(table, "mle")
    assert paired_design(loss, ref)
    # A seed missing at one size, a seed renamed, no seed column, one size: not paired.
    assert not paired_design(
        loss.filter(~((pl.col("x") == SIZES[2]) & (pl.col("seed") == "3"))), ref
    )
    assert not paired_design(loss.with_columns(pl.col("seed").str.replace("3", "9")), ref)
    assert not paired_design(loss.drop("seed"), ref)
    one = [f.filter(pl.col("x") == SIZES[0]) for f in (loss, ref)]
    assert not paired_design(*one)
