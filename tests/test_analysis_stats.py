"""The statistics under the analysis tables, checked against scipy (the independent
implementation) and by simulation: t distribution, mean ± CI, paired t-test, power-law fits and
the bootstrap interval of the exponent."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special, stats

from analysis.powerlaw import NotEnoughData, fit_power_law, least_squares_line
from analysis.search import eta_squared, pareto_mask
from analysis.tstats import betainc, mean_ci, paired_t_test, t_cdf, t_quantile, t_sf


@pytest.mark.parametrize(
    ("a", "b", "x"),
    [(0.5, 0.5, 0.3), (2.0, 0.5, 0.9), (200.0, 0.5, 0.999), (3.0, 400.0, 0.01), (1e3, 1e3, 0.5)],
)
def test_betainc_matches_scipy(a: float, b: float, x: float) -> None:
    assert betainc(a, b, x) == pytest.approx(special.betainc(a, b, x), rel=1e-11, abs=1e-14)


@pytest.mark.parametrize("df", [1, 2, 3, 4.5, 7, 10, 30, 100, 1000, 1e5])
def test_t_distribution_matches_scipy(df: float) -> None:
    for t in (-40.0, -3.0, -0.1, 0.0, 1e-9, 0.3, 2.0, 10.0):
        assert t_sf(t, df) == pytest.approx(stats.t.sf(t, df), rel=1e-9, abs=1e-300)
        assert t_cdf(t, df) == pytest.approx(stats.t.cdf(t, df), rel=1e-9, abs=1e-15)
    for p in (1e-6, 0.025, 0.5000001, 0.6, 0.9, 0.95, 0.975, 0.995, 0.9999999):
        assert t_quantile(p, df) == pytest.approx(stats.t.ppf(p, df), rel=1e-8)


def test_t_quantile_df1_is_the_cauchy_closed_form() -> None:
    # With one degree of freedom t is Cauchy: quantile p is tan(π(p − 1/2)).
    assert t_quantile(0.975, 1) == pytest.approx(math.tan(math.pi * 0.475), rel=1e-12)


def test_bad_arguments_are_rejected() -> None:
    with pytest.raises(ValueError, match="quantile level"):
        t_quantile(1.0, 3)
    with pytest.raises(ValueError, match="degrees of freedom"):
        t_sf(1.0, 0)
    with pytest.raises(ValueError, match="at least one value"):
        mean_ci([])
    with pytest.raises(ValueError, match="equal lengths"):
        paired_t_test([1.0, 2.0], [1.0])


def test_mean_ci_matches_scipy_interval() -> None:
    values = [0.61, 0.58, 0.66, 0.63, 0.59]
    ci = mean_ci(values, 0.95)
    lo, hi = stats.t.interval(0.95, len(values) - 1, loc=np.mean(values), scale=stats.sem(values))
    assert ci.mean == pytest.approx(np.mean(values))
    assert ci.low == pytest.approx(lo, rel=1e-10)
    assert ci.high == pytest.approx(hi, rel=1e-10)


def test_one_value_has_no_interval() -> None:
    ci = mean_ci([0.7])
    assert (ci.mean, ci.half_width, ci.n, ci.low) == (0.7, None, 1, None)


def test_mean_ci_covers_the_true_mean_95_percent_of_simulated_seed_sets() -> None:
    # 400 simulated experiments of 5 seeds each; the binomial sd of the coverage is ~0.011.
    rng = np.random.default_rng(7)
    hits = 0
    for _ in range(400):
        ci = mean_ci(list(rng.normal(0.5, 0.1, 5)))
        hits += ci.low <= 0.5 <= ci.high
    assert 0.92 <= hits / 400 <= 0.98


def test_paired_t_test_matches_scipy() -> None:
    x = [0.71, 0.69, 0.74, 0.70, 0.73]
    y = [0.66, 0.68, 0.70, 0.64, 0.69]
    ours = paired_t_test(x, y)
    ref = stats.ttest_rel(x, y)
    assert ours.t == pytest.approx(ref.statistic, rel=1e-10)
    assert ours.p == pytest.approx(ref.pvalue, rel=1e-9)
    assert ours.mean_diff == pytest.approx(np.mean(np.subtract(x, y)))
    assert ours.n == 5


def test_paired_t_test_reports_why_it_cannot_test() -> None:
    one = paired_t_test([0.5], [0.4])
    assert one.p is None and "1 common seed" in one.reason
    equal = paired_t_test([0.5, 0.6], [0.4, 0.5])  # differences 0.1 and 0.1
    assert equal.p is None and "all differences equal" in equal.reason


def test_least_squares_matches_linregress() -> None:
    rng = np.random.default_rng(3)
    x = np.log(np.repeat([1e6, 4e6, 1.6e7, 6.4e7], 3))
    y = 1.1 - 0.13 * x + rng.normal(0, 0.04, x.size)
    slope, intercept, r2 = least_squares_line(x, y)
    ref = stats.linregress(x, y)
    assert slope == pytest.approx(ref.slope, rel=1e-10)
    assert intercept == pytest.approx(ref.intercept, rel=1e-10)
    assert r2 == pytest.approx(ref.rvalue**2, rel=1e-10)


def test_power_law_with_known_exponent_is_recovered() -> None:
    n = np.array([1e6, 1e7, 1e8, 1e9])
    fit = fit_power_law(n, 3.0 * n**-0.1)
    assert fit.a == pytest.approx(-0.1, abs=1e-12)
    assert fit.c == pytest.approx(math.log(3.0), abs=1e-10)
    assert fit.r2 == pytest.approx(1.0)
    # A perfect fit leaves nothing to resample: the interval is the point.
    assert fit.a_ci == pytest.approx((-0.1, -0.1), abs=1e-12)


def test_noisy_power_law_exponent_lies_in_its_interval() -> None:
    rng = np.random.default_rng(11)
    n = np.repeat([1e6, 3e6, 1e7, 3e7, 1e8], 4)
    m = 2.0 * n**-0.25 * np.exp(rng.normal(0, 0.03, n.size))
    fit = fit_power_law(n, m, seed=1)
    assert fit.a_ci[0] < -0.25 < fit.a_ci[1]
    assert fit.a == pytest.approx(stats.linregress(np.log(n), np.log(m)).slope, rel=1e-10)
    assert fit.n_boot > 1900  # resamples with < 2 distinct sizes are rare at 20 points


def test_negative_metric_is_fitted_on_its_magnitude() -> None:
    n = np.array([1e6, 1e7, 1e8])
    fit = fit_power_law(n, -0.4 * n**-0.2)
    assert fit.sign == -1 and fit.a == pytest.approx(-0.2)
    assert fit.predict(np.array([1e7]))[0] == pytest.approx(-0.4 * 1e7**-0.2)
    assert fit.a_ci is None  # 3 points: too few to bootstrap


def test_fits_the_data_do_not_support_are_refused() -> None:
    with pytest.raises(NotEnoughData, match="fewer than 3 sizes"):
        fit_power_law(np.array([1e6, 1e6, 1e7, 1e7]), np.array([1.0, 1.1, 0.9, 0.8]))
    with pytest.raises(NotEnoughData, match="not all of one sign"):
        fit_power_law(np.array([1e6, 1e7, 1e8]), np.array([1.0, -1.0, 0.5]))
    with pytest.raises(NotEnoughData, match="> 0"):
        fit_power_law(np.array([0.0, 1e7, 1e8]), np.array([1.0, 0.9, 0.5]))


def test_bootstrap_interval_for_the_exponent_covers_95_percent() -> None:
    # 200 simulated scaling sweeps (5 sizes × 4 seeds, log-normal seed noise): the studentized
    # bootstrap interval should hold the true exponent in about 95% of them (binomial sd ~0.015).
    rng = np.random.default_rng(2024)
    n = np.repeat([1e6, 3e6, 1e7, 3e7, 1e8], 4)
    hits = 0
    for sim in range(200):
        m = 1.5 * n**-0.12 * np.exp(rng.normal(0, 0.05, n.size))
        lo, hi = fit_power_law(n, m, n_boot=1000, seed=sim).a_ci
        hits += lo <= -0.12 <= hi
    assert 0.90 <= hits / 200 <= 0.99


def test_eta_squared_by_hand() -> None:
    # Groups a: {1, 2} (mean 1.5), b: {3, 4} (mean 3.5); grand mean 2.5.
    # Between: 2·1² + 2·1² = 4; total: 1.5² + 0.5² + 0.5² + 1.5² = 5; η² = 0.8.
    assert eta_squared(np.array([1.0, 2.0, 3.0, 4.0]), ["a", "a", "b", "b"]) == pytest.approx(0.8)
    assert eta_squared(np.array([1.0, 1.0]), ["a", "b"]) is None


def test_pareto_mask_matches_brute_force() -> None:
    rng = np.random.default_rng(5)
    pts = rng.random((700, 2))  # more than one 512-row chunk
    mask = pareto_mask(pts, ["max", "min"])
    for i in range(len(pts)):
        dominated = any(
            pts[j, 0] >= pts[i, 0]
            and pts[j, 1] <= pts[i, 1]
            and (pts[j, 0] > pts[i, 0] or pts[j, 1] < pts[i, 1])
            for j in range(len(pts))
        )
        assert mask[i] == (not dominated)
