"""TOST, one-sided paired tests and the paired ANCOVA (analysis/paired_tests.py and the
ablation's --equivalence, --alternative, --adjust-for) against statsmodels (`ttost_paired`,
OLS) and scipy (`ttest_rel(alternative=)`), with their edge cases and bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest
import statsmodels.api as sm
from scipy import stats
from statsmodels.stats.weightstats import ttost_paired

from analysis.__main__ import main
from analysis.paired_tests import paired_ancova, tost_paired
from tests.analysis.curve_fixtures import ACC, ENT, write_curve_store

RNG = np.random.default_rng(3)
X, Y = RNG.normal(0.5, 0.05, 6), RNG.normal(0.49, 0.05, 6)


@pytest.mark.parametrize("sesoi", [0.01, 0.05, 0.2])
def test_tost_matches_statsmodels(sesoi) -> None:
    got = tost_paired(X, Y, sesoi, alpha=0.05)
    p, _, _ = ttost_paired(X, Y, -sesoi, sesoi)
    assert got.p == pytest.approx(p, rel=1e-10)
    assert got.equivalent == (p < 0.05)
    # the 90% interval: mean ± t(0.95, n−1)·se
    d = X - Y
    half = stats.t.ppf(0.95, 5) * d.std(ddof=1) / np.sqrt(6)
    assert got.ci == pytest.approx((d.mean() - half, d.mean() + half))
    # equivalence iff the interval lies inside the margin
    assert got.equivalent == (-sesoi < got.ci[0] and got.ci[1] < sesoi)


def test_tost_edge_cases() -> None:
    assert tost_paired([0.5], [0.4], 0.1).reason == "1 common seed(s): no test"
    same = tost_paired([0.5, 0.6, 0.7], [0.4, 0.5, 0.6], 0.2)
    assert same.p is None and same.reason == "all differences equal: no test"
    with pytest.raises(ValueError, match="SESOI"):
        tost_paired(X, Y, 0.0)


def test_ancova_matches_statsmodels_ols() -> None:
    x1, x0 = RNG.normal(0.5, 0.05, 7), RNG.normal(0.48, 0.05, 7)
    dx = x1 - x0
    dy = 0.1 - 1.5 * dx + RNG.normal(0, 0.01, 7)
    y0 = RNG.normal(1.5, 0.1, 7)
    y1 = y0 + dy
    got = paired_ancova(y1, y0, x1, x0, level=0.95)
    fit = sm.OLS(y1 - y0, sm.add_constant(x1 - x0)).fit()
    ci = fit.conf_int(alpha=0.05)
    assert got.intercept == pytest.approx(fit.params[0])
    assert got.slope == pytest.approx(fit.params[1])
    assert got.intercept_ci == pytest.approx(tuple(ci[0]))
    assert got.slope_ci == pytest.approx(tuple(ci[1]))
    assert got.p == pytest.approx(fit.pvalues[0])


def test_ancova_edge_cases() -> None:
    assert paired_ancova([1, 2], [0, 1], [1, 2], [0, 0]).reason == "2 common seed(s): need 3"
    flat = paired_ancova([1, 2, 4], [0, 1, 1], [0.5, 0.6, 0.7], [0.4, 0.5, 0.6])
    assert flat.intercept is None and "covariate differences all equal" in flat.reason


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return write_curve_store(tmp_path_factory.mktemp("paired") / "results")


def per_seed(store, loss: str, metric: str) -> np.ndarray:
    return np.array([store.values[(loss, s, metric)][-1] for s in range(5)])


def records(capsys, argv) -> list[dict]:
    assert main([*argv, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    return [r for t in doc["tables"] for r in t["records"]]


@pytest.mark.parametrize("alternative", ["greater", "less", "two-sided"])
def test_ablation_alternative_matches_scipy(store, capsys, alternative) -> None:
    argv = ["ablation", str(store.root), "--metric", ACC, "--alternative", alternative]
    rec = next(r for r in records(capsys, argv) if r["arm"] == "del")
    want = stats.ttest_rel(
        per_seed(store, "del", ACC), per_seed(store, "mle", ACC), alternative=alternative
    )
    assert rec["p"] == pytest.approx(want.pvalue)


def test_ablation_equivalence_records(store, capsys) -> None:
    argv = ["ablation", str(store.root), "--metric", ACC, "--equivalence", "0.1"]
    rec = next(r for r in records(capsys, argv) if r["arm"] == "del")
    p, _, _ = ttost_paired(per_seed(store, "del", ACC), per_seed(store, "mle", ACC), -0.1, 0.1)
    assert rec["tost_p"] == pytest.approx(p) and rec["sesoi"] == 0.1
    assert rec["equivalent"] == (p < 0.05)
    assert main(["ablation", str(store.root), "--metric", ACC, "--equivalence", "0.1"]) == 0
    assert "TOST p=" in capsys.readouterr().out
    # without the flag the records carry no TOST fields (existing outputs unchanged)
    plain = records(capsys, ["ablation", str(store.root), "--metric", ACC])
    assert "tost_p" not in plain[0]


def test_ablation_adjust_for_matches_statsmodels(store, capsys) -> None:
    argv = ["ablation", str(store.root), "--metric", f"{ENT},{ACC}", "--adjust-for", ACC]
    assert main([*argv, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    table = next(t for t in doc["tables"] if t["name"].endswith("_adjusted"))
    rec = next(r for r in table["records"] if r["metric"] == ENT)
    dy = per_seed(store, "del", ENT) - per_seed(store, "mle", ENT)
    dx = per_seed(store, "del", ACC) - per_seed(store, "mle", ACC)
    fit = sm.OLS(dy, sm.add_constant(dx)).fit()
    assert rec["adjusted_diff"] == pytest.approx(fit.params[0])
    assert rec["slope"] == pytest.approx(fit.params[1])
    assert (rec["ci_low"], rec["ci_high"]) == pytest.approx(tuple(fit.conf_int(0.05)[0]))
    assert rec["p"] == pytest.approx(fit.pvalues[0])
    assert all(r["metric"] != ACC for r in table["records"])  # not adjusted for itself


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--equivalence", "0"], "--equivalence"),
        (["--equivalence", "-1"], "--equivalence"),
        (["--adjust-for", "eval/none"], "unknown metric"),
        (["--plateau-last", "1", "--plateau"], "--plateau-last"),
        (["--min-slope", "-1", "--plateau"], "--min-slope"),
        (["--level", "1.5"], "level"),
    ],
)
def test_bad_ablation_options_exit_2(store, capsys, flags, named) -> None:
    assert main(["ablation", str(store.root), "--metric", ACC, *flags]) == 2
    assert named in capsys.readouterr().err
