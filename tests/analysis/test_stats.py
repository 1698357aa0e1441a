"""The statistics under the analysis tables, checked against scipy and numpy (independent
implementations), against numbers derived by hand here, and by simulation: mean ± CI, the paired
t-test, Holm and Benjamini–Hochberg, both power-law forms, AICc, the F-test, leave-one-size-out
and extrapolation errors, the R² difference's bootstrap, and the search's rank tests.

Four tests pin the defects of issue 10 (they fail on the code before it): near-equal paired
differences, the exponent's interval at 4 sizes, the interval's dependence on point order, and
log-confidence's direction."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import optimize, stats

from analysis.scaling.bootstrap import r2_difference
from analysis.scaling.checks import aicc, extrapolation_error, loo_error, nested_f_test
from analysis.scaling.powerlaw import NotEnoughData, fit_power_law
from analysis.scaling.saturating import NoSaturation, fit_saturating
from analysis.search import eta_squared, pareto_mask, rank_test
from analysis.seed_stats import adjust_p, mean_ci, paired_t_test
from records.metric_names import direction


def test_bad_arguments_are_rejected() -> None:
    with pytest.raises(ValueError, match="confidence level"):
        mean_ci([1.0, 2.0], 1.0)
    with pytest.raises(ValueError, match="at least one value"):
        mean_ci([])
    with pytest.raises(ValueError, match="equal lengths"):
        paired_t_test([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match=r"in \[0, 1\]"):
        adjust_p([0.5, 1.5])


@pytest.mark.parametrize("level", [0.9, 0.95, 0.99])
def test_mean_ci_matches_scipy_interval(level: float) -> None:
    values = [0.61, 0.58, 0.66, 0.63, 0.59]
    ci = mean_ci(values, level)
    lo, hi = stats.t.interval(level, len(values) - 1, loc=np.mean(values), scale=stats.sem(values))
    assert ci.mean == pytest.approx(np.mean(values), rel=1e-15)
    assert (ci.low, ci.high) == pytest.approx((lo, hi), rel=1e-12)


def test_one_value_has_no_interval() -> None:
    ci = mean_ci([0.7])
    assert (ci.mean, ci.half_width, ci.n, ci.low) == (0.7, None, 1, None)


def test_mean_ci_covers_the_true_mean_95_percent_of_simulated_seed_sets() -> None:
    # 400 simulated experiments of 5 seeds each; the binomial sd of the coverage is ~0.011.
    rng = np.random.default_rng(7)
    hits = sum(
        ci.low <= 0.5 <= ci.high
        for ci in (mean_ci(list(rng.normal(0.5, 0.1, 5))) for _ in range(400))
    )
    assert 0.92 <= hits / 400 <= 0.98


def test_paired_t_test_matches_scipy() -> None:
    x = [0.71, 0.69, 0.74, 0.70, 0.73]
    y = [0.66, 0.68, 0.70, 0.64, 0.69]
    ours = paired_t_test(x, y)
    ref = stats.ttest_rel(x, y)
    assert ours.t == pytest.approx(ref.statistic, rel=1e-12)
    assert ours.p == pytest.approx(ref.pvalue, rel=1e-12)
    assert ours.mean_diff == pytest.approx(np.mean(np.subtract(x, y)))
    assert ours.n == 5


def test_paired_t_test_reports_why_it_cannot_test() -> None:
    one = paired_t_test([0.5], [0.4])
    assert one.p is None and "1 common seed" in one.reason
    equal = paired_t_test([0.5, 0.6], [0.4, 0.5])  # differences 0.1 and 0.1
    assert equal.p is None and "all differences equal" in equal.reason


def test_near_equal_differences_are_no_test() -> None:
    # Issue 10: the same +0.02 on every seed. In floats the three differences differ in the
    # last bits (sd ≈ 3e-17), so scipy itself reports t ≈ 1e15, p ≈ 1e-30.
    x, y = [0.35, 0.47, 0.52], [0.33, 0.45, 0.50]
    with pytest.warns(RuntimeWarning, match="catastrophic cancellation"):
        assert stats.ttest_rel(x, y).pvalue < 1e-20  # what an exact zero-variance check passes
    res = paired_t_test(x, y)
    assert res.p is None and res.t is None and "all differences equal" in res.reason
    assert res.mean_diff == pytest.approx(0.02)
    # A real, small spread is still tested.
    assert paired_t_test([0.35, 0.47, 0.52], [0.33, 0.45, 0.5001]).p is not None


def test_holm_by_hand() -> None:
    # p = (0.01, 0.04, 0.03, 0.005), m = 4. Sorted: 0.005·4 = 0.02, 0.01·3 = 0.03, 0.03·2 =
    # 0.06, 0.04·1 = 0.04 → running max 0.06. In input order: 0.03, 0.06, 0.06, 0.02.
    assert adjust_p([0.01, 0.04, 0.03, 0.005], "holm") == pytest.approx([0.03, 0.06, 0.06, 0.02])
    # R's documented example: p.adjust(c(.05, .01), "holm") = c(0.05, 0.02); capped at 1.
    assert adjust_p([0.05, 0.01], "holm") == pytest.approx([0.05, 0.02])
    assert adjust_p([0.6, 0.7], "holm") == pytest.approx([1.0, 1.0])
    assert adjust_p([0.2, 0.1], "none") == [0.2, 0.1]


def test_benjamini_hochberg_by_hand() -> None:
    # Sorted 0.005, 0.01, 0.03, 0.04 (ranks 1–4): p·4/rank = 0.02, 0.02, 0.04, 0.04, running
    # minimum from the top leaves them. In input order: 0.02, 0.04, 0.04, 0.02.
    assert adjust_p([0.01, 0.04, 0.03, 0.005], "bh") == pytest.approx([0.02, 0.04, 0.04, 0.02])


def test_log_confidence_has_no_better_direction() -> None:
    # Issue 10: confidence is noise (the compensated loss even penalises it), never "best".
    assert direction("eval/test/log_confidence") is None
    assert direction("eval/extra/log_confidence") is None
    assert direction("eval/test/digit_entropy") is None
    assert direction("eval/test/ce") == "min" and direction("gen/macc") == "max"


def test_power_law_matches_linregress() -> None:
    rng = np.random.default_rng(3)
    n = np.repeat([1e6, 4e6, 1.6e7, 6.4e7], 3)
    m = np.exp(1.1 - 0.13 * np.log(n) + rng.normal(0, 0.04, n.size))
    fit = fit_power_law(n, m)
    ref = stats.linregress(np.log(n), np.log(m))
    assert fit.a == pytest.approx(ref.slope, rel=1e-12)
    assert fit.c == pytest.approx(ref.intercept, rel=1e-12)
    assert fit.r2 == pytest.approx(ref.rvalue**2, rel=1e-12)
    assert fit.p_slope == pytest.approx(ref.pvalue, rel=1e-9)
    assert fit.a_se == pytest.approx(ref.stderr, rel=1e-9)
    assert fit.ci_method == "bootstrap"  # 12 points


def test_power_law_with_known_exponent_is_recovered() -> None:
    n = np.array([1e6, 1e7, 1e8, 1e9])
    fit = fit_power_law(n, 3.0 * n**-0.1)
    assert fit.a == pytest.approx(-0.1, abs=1e-12)
    assert fit.c == pytest.approx(math.log(3.0), abs=1e-10)
    assert fit.r2 == pytest.approx(1.0)
    # A perfect fit leaves nothing to estimate: the interval is the point.
    assert fit.ci_method == "exact" and fit.a_ci == pytest.approx((-0.1, -0.1), abs=1e-12)


def test_exponent_interval_at_four_sizes_is_the_ols_t_interval() -> None:
    # Issue 10: with one seed at 4 sizes the bootstrap drew resamples of two distinct sizes,
    # which a line fits exactly, and the interval came out near ±1e11.
    for s in range(5):
        rng = np.random.default_rng(s)
        n = np.array([1e6, 4e6, 1.6e7, 6.4e7])
        m = 2.0 * n**-0.1 * np.exp(rng.normal(0, 0.02, 4))
        fit = fit_power_law(n, m, seed=0)
        ref = stats.linregress(np.log(n), np.log(m))
        half = stats.t.ppf(0.975, 2) * ref.stderr
        assert fit.ci_method == "t"
        assert fit.a_ci == pytest.approx((ref.slope - half, ref.slope + half), rel=1e-12)
        assert fit.a_ci[1] - fit.a_ci[0] < 0.5


def test_exponent_interval_does_not_depend_on_point_order() -> None:
    # Issue 10: the store returns points in any order; the same seed must give the same interval.
    rng = np.random.default_rng(1)
    n = np.repeat([1e6, 3e6, 1e7, 3e7, 1e8], 3)
    m = 2.0 * n**-0.1 * np.exp(rng.normal(0, 0.03, n.size))
    first = fit_power_law(n, m, seed=3)
    assert first.ci_method == "bootstrap"
    for _ in range(5):
        perm = rng.permutation(n.size)
        assert fit_power_law(n[perm], m[perm], seed=3).a_ci == first.a_ci


def test_t_interval_covers_95_percent_at_four_to_nine_sizes() -> None:
    # With Gaussian noise in log M the OLS t-interval is exact: 400 simulated sweeps per size
    # count (binomial sd ~0.011).
    rng = np.random.default_rng(12)
    for k in (4, 5, 9):
        n = np.geomspace(1e6, 1e8, k)
        assert fit_power_law(n, 2.0 * n**-0.1 * np.exp(rng.normal(0, 0.05, k))).ci_method == "t"
        hits = 0
        for _ in range(400):
            lo, hi = fit_power_law(n, 1.5 * n**-0.12 * np.exp(rng.normal(0, 0.05, k))).a_ci
            hits += lo <= -0.12 <= hi
        assert 0.92 <= hits / 400 <= 0.98


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


def test_negative_metric_is_fitted_on_its_magnitude() -> None:
    n = np.array([1e6, 1e7, 1e8])
    fit = fit_power_law(n, -0.4 * n**-0.2)
    assert fit.sign == -1 and fit.a == pytest.approx(-0.2)
    assert fit.predict(np.array([1e7]))[0] == pytest.approx(-0.4 * 1e7**-0.2)


def test_fits_the_data_do_not_support_are_refused() -> None:
    with pytest.raises(NotEnoughData, match="fewer than 3 sizes"):
        fit_power_law(np.array([1e6, 1e6, 1e7, 1e7]), np.array([1.0, 1.1, 0.9, 0.8]))
    with pytest.raises(NotEnoughData, match="not all of one sign"):
        fit_power_law(np.array([1e6, 1e7, 1e8]), np.array([1.0, -1.0, 0.5]))
    with pytest.raises(NotEnoughData, match="> 0"):
        fit_power_law(np.array([0.0, 1e7, 1e8]), np.array([1.0, 0.9, 0.5]))
    with pytest.raises(NotEnoughData, match="fewer than 4 sizes"):
        fit_saturating(np.array([1e6, 1e7, 1e8]), np.array([1.0, 0.9, 0.85]))


# "What Scales in Cross-Entropy Scaling Law?": error entropy follows a power law, the rest of CE
# does not scale, so CE = EE + const. The presets' sizes, EE = 1.2·(N/1e6)^−0.12, const = 0.8.
PRESETS = np.array([50_928, 406_368, 2_361_792, 9_098_560, 29_010_432], dtype=np.float64)


def test_saturating_form_recovers_what_the_plain_power_law_bends() -> None:
    ee = 1.2 * (PRESETS / 1e6) ** -0.12
    ce = ee + 0.8
    plain = fit_power_law(PRESETS, ce)
    # The plain law through CE is far shallower than EE's −0.12, with curved residuals: above
    # the line at both ends, below it in the middle.
    assert plain.a == pytest.approx(-0.0713, abs=1e-3)
    resid = np.log(ce) - np.log(plain.predict(PRESETS))
    assert resid[0] > 0 and resid[-1] > 0 and resid[2] < 0
    sat = fit_saturating(PRESETS, ce)
    assert pytest.approx(0.8, abs=1e-9) == sat.E
    assert sat.a == pytest.approx(-0.12, abs=1e-9)
    assert pytest.approx(1.2 * 1e6**0.12, rel=1e-9) == sat.A
    assert sat.predict(PRESETS) == pytest.approx(ce, rel=1e-12)
    assert sat.remark is None and sat.sse < 1e-20
    # The plain form is the saturating one with E = 0: a pure power law gives E ≈ 0.
    pure = fit_saturating(PRESETS, ee)
    assert pytest.approx(0.0, abs=1e-9) == pure.E and pure.a == pytest.approx(-0.12, abs=1e-9)


def test_saturating_fit_matches_scipy_curve_fit_on_noisy_points() -> None:
    # An independent fit of the same objective (least squares of log M) by curve_fit from a
    # start far from the answer.
    rng = np.random.default_rng(4)
    n = np.geomspace(5e4, 3e8, 8)
    m = (1.2 * (n / 1e6) ** -0.12 + 0.8) * np.exp(rng.normal(0, 0.01, n.size))
    sat = fit_saturating(n, m)

    def log_model(x: np.ndarray, e: float, b: float, a: float) -> np.ndarray:
        return np.log(e + b * np.exp(a * (x - 16.0)))

    popt, pcov = optimize.curve_fit(
        log_model, np.log(n), np.log(m), p0=(0.3, 1.0, -0.3), maxfev=20000
    )
    assert pytest.approx(popt[0], rel=1e-6) == sat.E
    assert sat.a == pytest.approx(popt[2], rel=1e-6)
    # Wald interval from curve_fit's covariance (n − 3 degrees of freedom).
    half = stats.t.ppf(0.975, n.size - 3) * math.sqrt(pcov[0, 0])
    assert sat.E_ci == pytest.approx((popt[0] - half, popt[0] + half), rel=1e-4)


def test_saturating_fit_of_a_negative_and_of_a_rising_metric() -> None:
    n = np.geomspace(1e6, 1e9, 6)
    neg = fit_saturating(n, -(0.5 + n**-0.2))
    assert pytest.approx(-0.5, abs=1e-9) == neg.E and neg.a == pytest.approx(-0.2, abs=1e-9)
    assert neg.E_ci[0] <= -0.5 <= neg.E_ci[1]
    with pytest.raises(NoSaturation, match="no saturation in these points"):
        fit_saturating(n, 0.2 * (n / 1e6) ** 0.05)  # grows without bound


def test_aicc_and_f_test_by_hand() -> None:
    # n = 10, SSE = 2, 2 parameters → k = 3: 10·ln(0.2) + 6 + 2·3·4/6 = 10·ln(0.2) + 10.
    assert aicc(2.0, 10, 2) == pytest.approx(10 * math.log(0.2) + 10.0)
    assert aicc(2.0, 4, 2) is None  # n − k − 1 = 0
    assert aicc(0.0, 10, 2) is None  # exact fit
    # F = ((4 − 1)/1) / (1/7) = 21 on (1, 7) degrees of freedom.
    assert nested_f_test(4.0, 2, 1.0, 3, 10) == pytest.approx(stats.f.sf(21.0, 1, 7), rel=1e-12)
    assert nested_f_test(1.0, 2, 2.0, 3, 10) == pytest.approx(1.0)  # no gain


def test_leave_one_size_out_and_extrapolation_errors_match_polyfit() -> None:
    rng = np.random.default_rng(8)
    n = np.geomspace(1e6, 1e9, 6)
    m = 2.0 * n**-0.1 * np.exp(rng.normal(0, 0.03, n.size))

    def refit(nn: np.ndarray, mm: np.ndarray):
        return fit_power_law(nn, mm, ci=False)

    errors = []
    for i in range(n.size):
        keep = np.arange(n.size) != i
        slope, intercept = np.polyfit(np.log(n[keep]), np.log(m[keep]), 1)
        errors.append(math.exp(intercept + slope * math.log(n[i])) / m[i] - 1)
    assert loo_error(n, m, refit) == pytest.approx(math.sqrt(np.mean(np.square(errors))), rel=1e-9)
    slope, intercept = np.polyfit(np.log(n[:-1]), np.log(m[:-1]), 1)
    expected = math.exp(intercept + slope * math.log(n[-1])) / m[-1] - 1
    assert extrapolation_error(n, m, refit) == pytest.approx(expected, rel=1e-9)
    # An exact power law predicts every left-out size exactly.
    assert loo_error(n, 2.0 * n**-0.1, refit) == pytest.approx(0.0, abs=1e-12)
    assert loo_error(n[:3], m[:3], refit) is None  # two sizes left: no refit


def test_r2_difference_and_its_bootstrap() -> None:
    rng = np.random.default_rng(5)
    sizes = np.geomspace(5e4, 3e7, 5)
    x = [np.full(3, s) for s in sizes]
    ee = [1.2 * (s / 1e6) ** -0.12 * np.exp(rng.normal(0, 0.005, 3)) for s in sizes]
    ce = [e + 0.8 for e in ee]
    diff = r2_difference(x, ce, ee, per_size_means=True, n_boot=500, seed=1)
    means = {k: np.array([v.mean() for v in arrs]) for k, arrs in (("ce", ce), ("ee", ee))}
    r2 = {k: stats.linregress(np.log(sizes), np.log(v)).rvalue ** 2 for k, v in means.items()}
    assert diff.delta == pytest.approx(r2["ee"] - r2["ce"], rel=1e-10)
    assert diff.ci[0] > 0 and diff.ci[0] <= diff.delta <= diff.ci[1]
    assert "within each size" in diff.how
    # The same seed gives the same interval; one trial per size and 5 sizes gives none.
    assert r2_difference(x, ce, ee, per_size_means=True, n_boot=500, seed=1) == diff
    single = r2_difference(
        [v[:1] for v in x], [v[:1] for v in ce], [v[:1] for v in ee], per_size_means=True
    )
    assert single.ci is None and "fewer than 10 sizes" in single.how


def test_eta_squared_by_hand() -> None:
    # Groups a: {1, 2} (mean 1.5), b: {3, 4} (mean 3.5); grand mean 2.5.
    # Between: 2·1² + 2·1² = 4; total: 1.5² + 0.5² + 0.5² + 1.5² = 5; η² = 0.8.
    assert eta_squared(np.array([1.0, 2.0, 3.0, 4.0]), ["a", "a", "b", "b"]) == pytest.approx(0.8)
    assert eta_squared(np.array([1.0, 1.0]), ["a", "b"]) is None


def _two_sided(null: np.ndarray, observed: float) -> float:
    """scipy's two-sided permutation p: twice the smaller tail, at most 1."""
    eps = 1e-12 * max(1.0, abs(observed))
    return min(1.0, 2 * min(np.mean(null <= observed + eps), np.mean(null >= observed - eps)))


def test_rank_tests_are_exact_permutation_tests_at_small_n() -> None:
    # The case: 3 trials, ρ = −1. The t approximation says p = 0; of the 3! orderings
    # exactly one gives ρ = −1 and one +1, so the exact two-sided p is 2/6.
    assert stats.spearmanr([1, 2, 3], [3, 2, 1]).pvalue == 0.0
    test = rank_test(np.array([3.0, 2.0, 1.0]), [1.0, 2.0, 3.0])
    assert (test.rho, test.p, test.method) == (
        pytest.approx(-1.0),
        pytest.approx(1 / 3),
        "exact permutation",
    )
    # Six trials with a tie: every ordering of the parameter against the objective, by brute force.
    y = np.array([0.3, 0.5, 0.4, 0.8, 0.7, 0.9])
    alpha = [0.01, 0.03, 0.02, 0.3, 0.1, 0.3]
    null = np.array([stats.spearmanr(perm, y).statistic for perm in itertools.permutations(alpha)])
    test = rank_test(y, alpha)
    assert test.rho == pytest.approx(stats.spearmanr(alpha, y).statistic, rel=1e-12)
    assert test.p == pytest.approx(_two_sided(null, test.rho), rel=1e-12)
    # Kruskal–Wallis over three losses: H for every assignment of the six objective values to
    # groups of sizes 2, 2, 2 (90 distinct ones), its p the share with H at least the observed.
    loss = ["mle", "mle", "del", "del", "ntl_mse", "ntl_mse"]
    observed = stats.kruskal([0.3, 0.5], [0.4, 0.8], [0.7, 0.9]).statistic
    hs = [
        stats.kruskal(*(y[list(perm[2 * g : 2 * g + 2])] for g in range(3))).statistic
        for perm in itertools.permutations(range(6))
    ]
    test = rank_test(y, loss)
    assert test.rho is None and test.test == "kruskal" and test.method == "exact permutation"
    assert test.p == pytest.approx(np.mean(np.array(hs) >= observed - 1e-12), rel=1e-12)
    assert rank_test(y, [None, None, 1.0, 1.0, 2.0, 3.0]).p is not None  # nulls left out
    assert rank_test(np.ones(6), alpha).p is None


def test_rank_tests_use_random_permutations_then_the_large_sample_forms() -> None:
    rng = np.random.default_rng(3)
    x = rng.random(40)
    y = x + rng.normal(0, 0.5, 40)
    test = rank_test(y, list(x))
    assert test.method == "permutation"
    # 9,999 random orderings: within Monte Carlo error (sd sqrt(p(1−p)/9999) < 0.005) of t's.
    assert test.p == pytest.approx(stats.spearmanr(x, y).pvalue, abs=0.02)
    x, y = rng.random(600), rng.random(600)
    test = rank_test(y, list(x))
    assert (test.method, test.p) == ("asymptotic", stats.spearmanr(x, y).pvalue)


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
