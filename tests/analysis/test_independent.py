"""The analysis commands against an independent re-computation: the same synthetic store (restored
rows, retried attempts, running trials, two learning rates) read with pandas, deduplicated,
aggregated and tested with scipy.stats and numpy here, written without analysis/'s code. Every
number must agree to 1e-9 (relative), except the saturating fit, which two optimisers reach to
their tolerance (1e-6)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import optimize, stats

from analysis.ablation import AblationSettings, ablation
from analysis.scaling import scaling
from bench.synthetic_store import generate_store
from records.reader import open_store
from tests.analysis_fixtures import holm_by_definition

SIZES = {"tiny": 50_928, "xs": 406_368, "s": 2_361_792, "m": 9_098_560, "l": 29_010_432}
REL = 1e-9


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("independent")
    generate_store(
        root,
        losses=("mle", "del"),
        seeds=(0, 1, 2, 3),
        sizes=SIZES,
        lrs=(1e-3, 3e-3),
        lr_shift=-0.3,
        restored_fraction=0.1,
        retried_fraction=0.2,
        running_fraction=0.1,
        trials_per_part=7,
        seed=17,
    )
    return root


def pandas_finals(root: Path) -> pd.DataFrame:
    """Final value per (trial, metric) of the TERMINATED trials, with their configuration:
    highest attempt, then latest write, per (trial, step, metric); then the last step."""
    metrics = pd.concat(
        pd.read_parquet(p) for p in sorted((root / "metrics").rglob("part-*.parquet"))
    )
    metrics = metrics.sort_values(["attempt", "ts"], kind="stable").drop_duplicates(
        ["trial_id", "step", "metric"], keep="last"
    )
    final = metrics.sort_values("step", kind="stable").drop_duplicates(
        ["trial_id", "metric"], keep="last"
    )
    trials = pd.concat(pd.read_parquet(p) for p in sorted((root / "trials").rglob("*.parquet")))
    trials = trials.sort_values("ts", kind="stable").drop_duplicates("trial_id", keep="last")
    done = trials[trials["status"] == "TERMINATED"][["trial_id", "loss", "lr", "model", "seed"]]
    return final.merge(done, on="trial_id")[
        ["trial_id", "loss", "lr", "model", "seed", "metric", "value"]
    ]


def assert_mean_ci(row: pd.Series, values: np.ndarray) -> None:
    """The row's mean and 95% t-interval are those of `values` (scipy's interval)."""
    assert row["mean" if "mean" in row else "ee_over_ce"] == pytest.approx(values.mean(), rel=REL)
    if values.size > 1:
        lo, hi = stats.t.interval(0.95, values.size - 1, loc=values.mean(), scale=stats.sem(values))
        assert (row["ci_low"], row["ci_high"]) == pytest.approx((lo, hi), rel=REL)


def test_ablation_matches_pandas_and_scipy(store: Path) -> None:
    metrics = ["eval/test/digit_acc", "eval/test/ce"]
    result = ablation(open_store(store), AblationSettings(metrics=metrics))
    records = result.tables[0].data.to_pandas()
    final = pandas_finals(store)
    final = final[final["metric"].isin(metrics)]
    checked, raw_p, keys = 0, [], []
    # (del arm, metric) -> (seeds in common with mle, the arm's seeds, p)
    pairs: dict[tuple[str, str], tuple[int, int, float]] = {}
    for (loss, lr, model, metric), group in final.groupby(["loss", "lr", "model", "metric"]):
        mine = records[
            (records["loss"] == loss)
            & (records["lr"] == lr)
            & (records["model"] == model)
            & (records["metric"] == metric)
        ]
        assert len(mine) == 1
        row = mine.iloc[0]
        assert_mean_ci(row, group["value"].to_numpy())
        assert row["mean"] == pytest.approx(group["value"].mean(), rel=1e-12)
        if loss == "del":
            base = final[
                (final["loss"] == "mle")
                & (final["lr"] == lr)
                & (final["model"] == model)
                & (final["metric"] == metric)
            ].set_index("seed")["value"]
            mine_by_seed = group.set_index("seed")["value"]
            common = sorted(set(base.index) & set(mine_by_seed.index))
            arm = f"del (lr={lr:g}, model={model})"
            pairs[(arm, metric)] = (len(common), len(mine_by_seed), math.nan)
            if len(common) >= 2:
                ref = stats.ttest_rel(mine_by_seed[common], base[common])
                assert row["t"] == pytest.approx(ref.statistic, rel=1e-10)
                assert row["p"] == pytest.approx(ref.pvalue, rel=REL)
                raw_p.append(ref.pvalue)
                keys.append(row["p_adjusted"])
                pairs[(arm, metric)] = (len(common), len(mine_by_seed), ref.pvalue)
        checked += 1
    assert checked == 2 * 2 * 5 * 2  # loss × lr × model × metric
    # One family: every paired test of the table (one panel, both metrics).
    assert len(raw_p) >= 15
    assert keys == pytest.approx(holm_by_definition(raw_p), rel=REL)
    # The table of paired tests: each del arm against the mle arm of its own lr and size, one
    # cell per metric with Holm's p; a cell names its pair count when one of the arm's seeds has
    # no mle partner, and says why there is no test below 2 pairs.
    sig = result.tables[1]
    assert sig.name == "ablation_test_vs_baseline"
    assert sig.columns == ["arm", "baseline", "digit_acc", "ce"]
    assert {r[0] for r in sig.rows} == {arm for arm, _ in pairs}
    for row in sig.rows:
        assert row[1] == row[0].replace("del (", "mle (")
        for cell, metric in zip(row[2:], metrics, strict=True):
            n, seeds, _ = pairs[(row[0], metric)]
            if n < 2:
                assert cell == f"— ({n} common seed(s): no test)", (row, n)
                continue
            assert "(Holm " in cell
            assert cell.endswith(")") if n == seeds else cell.endswith(f"n={n}"), (row, n)
    # One test in its family (one arm, one metric): Holm leaves p as it is.
    arm, metric = next(k for k, (n, _, _) in pairs.items() if n == 4)
    alone = ablation(
        open_store(store), AblationSettings(metrics=[metric], only=[arm], family="all")
    )
    record = next(r for r in alone.tables[0].data.iter_rows(named=True) if r["arm"] == arm)
    assert record["p"] == pytest.approx(pairs[(arm, metric)][2], rel=REL)
    assert record["p_adjusted"] == pytest.approx(record["p"], rel=1e-12)


def test_scaling_matches_pandas_scipy_and_numpy(store: Path) -> None:
    metrics = ["eval/test/ce", "eval/test/error_entropy"]
    result = scaling(open_store(store), metrics=metrics, n_boot=200)
    tables = {t.name: t.data.to_pandas() for t in result.tables if t.data is not None}
    final = pandas_finals(store)
    sizes = final[final["metric"] == "model/params_non_embedding"].set_index("trial_id")["value"]
    final = final[final["metric"].isin(metrics)].copy()
    final["N"] = final["trial_id"].map(sizes)
    # The best learning rate per (loss, model): the lowest mean final eval/test/ce over seeds.
    ce = final[final["metric"] == "eval/test/ce"]
    best = ce.groupby(["loss", "model", "lr"])["value"].mean().reset_index()
    best = best.loc[best.groupby(["loss", "model"])["value"].idxmin()][["loss", "model", "lr"]]
    chosen = tables["scaling_lr"].sort_values(["loss", "model"])[["loss", "model", "lr"]]
    assert chosen.to_numpy().tolist() == best.sort_values(["loss", "model"]).to_numpy().tolist()
    kept = final.merge(best, on=["loss", "model", "lr"])
    points = kept.groupby(["loss", "metric", "N"])["value"].mean().reset_index()
    power = tables["scaling_power"].set_index(["loss", "metric"])
    sat = tables["scaling_saturating"].set_index(["loss", "metric"])
    for (loss, metric), group in points.groupby(["loss", "metric"]):
        n, m = group["N"].to_numpy(), group["value"].to_numpy()
        x, y = np.log(n), np.log(m)
        ref = stats.linregress(x, y)
        row = power.loc[(loss, metric)]
        assert row["points"] == 5 and row["a_ci_method"] == "t"
        assert row["a"] == pytest.approx(ref.slope, rel=REL)
        assert row["c"] == pytest.approx(ref.intercept, rel=REL)
        assert row["r2"] == pytest.approx(ref.rvalue**2, rel=REL)
        half = stats.t.ppf(0.975, 3) * ref.stderr
        assert (row["a_ci_low"], row["a_ci_high"]) == pytest.approx(
            (ref.slope - half, ref.slope + half),
            rel=1e-7,  # linregress's se: 1 − r² in it
        )
        sse = float(np.sum((y - ref.intercept - ref.slope * x) ** 2))
        assert row["aicc"] == pytest.approx(5 * math.log(sse / 5) + 6 + 24 / 1, rel=REL)
        loo = []
        for i in range(5):
            keep = np.arange(5) != i
            s_, c_ = np.polyfit(x[keep], y[keep], 1)
            loo.append(math.exp(c_ + s_ * x[i]) / m[i] - 1)
        assert row["loo_error"] == pytest.approx(math.sqrt(np.mean(np.square(loo))), rel=REL)
        s_, c_ = np.polyfit(x[:4], y[:4], 1)
        extrap = math.exp(c_ + s_ * x[4]) / m[4] - 1
        assert row["extrapolation_error"] == pytest.approx(extrap, rel=REL)
        # Saturating: curve_fit (tight tolerances) on the same objective from its own start.
        # E and A trade off along a flat valley, so the minimum's value agrees to 1e-9 and the
        # parameters only to the valley's resolution.
        srow = sat.loc[(loss, metric)]
        if not pd.isna(srow["E"]):
            x0 = float(x.mean())

            def log_model(xx: np.ndarray, e: float, b: float, a: float, x0: float = x0):
                return np.log(e + b * np.exp(a * (xx - x0)))

            popt, _ = optimize.curve_fit(
                log_model,
                x,
                y,
                p0=(srow["E"] * 0.9, m.mean() - srow["E"], srow["a"] * 1.1),
                maxfev=20000,
                ftol=1e-15,
                xtol=1e-15,
                gtol=1e-15,
            )
            ref_sse = float(np.sum((log_model(x, *popt) - y) ** 2))
            b = srow["A"] * math.exp(srow["a"] * x0)
            ours_sse = float(np.sum((log_model(x, srow["E"], b, srow["a"]) - y) ** 2))
            assert ours_sse <= ref_sse * (1 + REL)
            assert srow["E"] == pytest.approx(popt[0], rel=1e-5)
            assert srow["a"] == pytest.approx(popt[2], rel=1e-5)
    # EE's share of CE per size: per trial EE/CE, mean ± t-interval over the chosen trials.
    wide = kept.pivot_table(index=["trial_id", "loss", "N"], columns="metric", values="value")
    wide["share"] = wide["eval/test/error_entropy"] / wide["eval/test/ce"]
    share = tables["scaling_ee_share"].set_index(["loss", "x"])
    for (loss, n), group in wide.reset_index().groupby(["loss", "N"]):
        row = share.loc[(loss, n)]
        assert_mean_ci(row, group["share"].to_numpy())
    trend = tables["scaling_ee_share_trend"].set_index("loss")
    verdict = tables["scaling_verdict"].set_index("loss")
    for loss, group in wide.reset_index().groupby("loss"):
        means = group.groupby("N")["share"].mean()
        ref = stats.linregress(np.log10(means.index.to_numpy()), means.to_numpy())
        assert trend.loc[loss, "slope_per_decade"] == pytest.approx(ref.slope, rel=REL)
        assert trend.loc[loss, "p"] == pytest.approx(ref.pvalue, rel=1e-7)
        r2 = {
            metric: stats.linregress(np.log(g["N"]), np.log(g["value"])).rvalue ** 2
            for metric, g in points[points["loss"] == loss].groupby("metric")
        }
        delta = r2["eval/test/error_entropy"] - r2["eval/test/ce"]
        assert verdict.loc[loss, "delta_r2"] == pytest.approx(delta, rel=1e-7, abs=1e-12)
