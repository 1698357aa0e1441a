"""The z-scale designs (analysis/sequential/boundaries.py) against published values and against
an independent computation of the same probabilities (scipy's multivariate normal CDF, Genz's
algorithm, on the canonical joint distribution of the look statistics).

Published values, each with its source:
- rpact's unit tests, rpact-com/rpact tests/testthat/test-f_design_group_sequential.R (the
  "expected results" of getDesignGroupSequential / getDesignInverseNormal, 7 significant
  digits): Pocock-type at α 0.025 with looks at 0.4, 0.7 (`x6b`); Pocock-type at α 0.13 with
  user β-spending, non-binding (`x6a`); O'Brien–Fleming-type at α 0.13 with Kim–DeMets
  β-spending, K = 3 and 4, non-binding (`x7a`); Hwang–Shih–DeCani α- and β-spending with the
  inflation factor and the expected sample numbers (`x2`, `y2`);
- rpact's design summary printed in its 2026 training slides
  (https://bayer.presentation.2026.rpact.com/parts/02_design_specification.html): O'Brien–Fleming
  type, looks at 0.3/0.6/1, α 0.025, power 0.8, non-binding futility bound z = 0 at the first
  look: inflation factor 1.0718, ASN H1 0.8826, H01 0.8852, H0 0.695;
- ldbounds' `ldBounds` as seqabpy's tests reproduce it (NPodlozhniy/seqabpy tests/test_gst.py):
  O'Brien–Fleming-type at looks 0.3/0.6/1 for α 0.025, 0.05, 0.01, Pocock-type at α 0.025, and
  the upper bounds of 10 equally spaced looks at α 0.05;
- SeqBounds.jl's README (PharmCat/SeqBounds.jl): O'Brien–Fleming-type, 4 equally spaced looks,
  α 0.05 (3.74955, 2.53993, 2.01604, 1.72014; its coarse grid: 3 decimals).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from analysis.sequential.boundaries import (
    crossing_probabilities,
    efficacy_bounds,
    equal_fractions,
    group_sequential,
    power_drift,
)
from analysis.sequential.spending import hwang_shih_decani, obrien_fleming, pocock, power_family


def _user(*cumulative: float):
    """rpact's userBetaSpending: the cumulative amounts as given, one per look."""
    return lambda t, total: np.array(cumulative[: len(t)])


def test_pocock_two_looks_short_of_full_information_rpact_x6b():
    # getDesignGroupSequential(informationRates = c(0.4, 0.7), typeOfDesign = "asP")
    upper = efficacy_bounds(0.025, [0.4, 0.7], pocock)
    np.testing.assert_allclose(upper, [2.223875, 2.3050796], atol=1e-6)
    np.testing.assert_allclose(pocock(np.array([0.4, 0.7]), 0.025), [0.013078429, 0.0197432])


def test_pocock_with_user_beta_spending_non_binding_rpact_x6a():
    d = group_sequential(
        0.13, [0.35, 0.7, 1], "pocock", power=0.7, beta_spending=_user(0.01, 0.05, 0.3)
    )
    np.testing.assert_allclose(d.upper, [1.5446617, 1.4828682, 1.4620058], atol=1e-6)
    np.testing.assert_allclose(d.lower[:2], [-1.2557044, -0.16828659], atol=1e-6)
    assert d.lower[-1] == d.upper[-1]


@pytest.mark.parametrize(
    "fractions, upper, lower",
    [
        ((0.4, 0.75, 1), (2.1280732, 1.4368565, 1.2468994), (-0.83725762, 0.35992547)),
        (
            (0.4, 0.75, 0.85, 1),
            (2.1280732, 1.4368565, 1.422873, 1.2970881),
            (-0.82676531, 0.3743303, 0.65077266),
        ),
    ],
)
def test_obrien_fleming_with_kim_demets_beta_spending_rpact_x7a(fractions, upper, lower):
    d = group_sequential(0.13, fractions, power=0.59, beta_spending=power_family(2.5))
    np.testing.assert_allclose(d.upper, upper, atol=1e-6)
    np.testing.assert_allclose(d.lower[:-1], lower, atol=1e-6)


def test_hwang_shih_decani_design_and_its_sample_numbers_rpact_x2_y2():
    d = group_sequential(
        0.07,
        [0.2, 0.4, 1],
        hwang_shih_decani(-1),
        power=0.86,
        beta_spending=hwang_shih_decani(-2),
    )
    np.testing.assert_allclose(d.upper, [2.364813, 2.1928805, 1.5660474], atol=1e-6)
    np.testing.assert_allclose(d.lower[:2], [-1.1063623, -0.35992439], atol=1e-6)
    assert d.drift**2 == pytest.approx(7.1015942, abs=1e-6)  # rpact's "shift"
    assert d.inflation == pytest.approx(1.0869177, abs=1e-6)
    # expected sample numbers relative to the fixed design: under H1, H0 and half-way
    assert d.expected_fraction(d.drift) * d.inflation == pytest.approx(0.82636428, abs=1e-6)
    assert d.expected_fraction(0.0) * d.inflation == pytest.approx(0.79471657, abs=1e-6)
    assert d.expected_fraction(d.drift / 2) * d.inflation == pytest.approx(0.916142, abs=1e-6)


def test_given_futility_bound_inflation_and_sample_numbers_rpact_slides():
    d = group_sequential(0.025, [0.3, 0.6, 1], futility=False)
    lower = [0.0, -np.inf, d.upper[-1]]
    drift = power_drift(d.fractions, d.upper, lower, 0.8)
    inflation = (drift / (stats.norm.isf(0.025) + stats.norm.ppf(0.8))) ** 2
    assert inflation == pytest.approx(1.0718, abs=5e-5)

    def asn(theta: float) -> float:
        up, low = crossing_probabilities(d.fractions, d.upper, lower, theta)
        stops = up + low
        stops[-1] = 1 - stops[:-1].sum()
        return float(np.dot(d.fractions, stops)) * inflation

    assert asn(drift) == pytest.approx(0.8826, abs=5e-5)
    assert asn(drift / 2) == pytest.approx(0.8852, abs=5e-5)
    assert asn(0.0) == pytest.approx(0.695, abs=5e-4)


@pytest.mark.parametrize(
    "alpha, upper",
    [
        (0.025, (3.929, 2.67, 1.981)),
        (0.05, (3.393, 2.281, 1.68)),
        (0.01, (4.559, 3.127, 2.337)),
    ],
)
def test_obrien_fleming_unequal_looks_ldbounds(alpha, upper):
    np.testing.assert_allclose(
        efficacy_bounds(alpha, [0.3, 0.6, 1], obrien_fleming), upper, atol=5e-4
    )


def test_pocock_unequal_looks_ldbounds():
    got = efficacy_bounds(0.025, [0.3, 0.6, 1], pocock)
    np.testing.assert_allclose(got, [2.312, 2.321, 2.269], atol=5e-4)


def test_obrien_fleming_ten_looks_ldbounds():
    want = [6.088, 4.229, 3.396, 2.906, 2.579, 2.342, 2.16, 2.015, 1.895, 1.795]
    got = efficacy_bounds(0.05, equal_fractions(10), obrien_fleming)
    np.testing.assert_allclose(got, want, atol=5e-4)


def test_obrien_fleming_four_looks_seqbounds_jl():
    got = efficacy_bounds(0.05, equal_fractions(4), obrien_fleming)
    np.testing.assert_allclose(got, [3.74955, 2.53993, 2.01604, 1.72014], atol=5e-4)


def _mvn_continue(upper: np.ndarray, fractions: tuple[float, ...], theta: float = 0.0) -> float:
    """P(Z_1 < c_1, …, Z_K < c_K) by scipy's multivariate normal CDF (Genz), the canonical
    joint distribution: mean θ√t_k, cov √(t_j/t_k) for j ≤ k."""
    t = np.asarray(fractions)
    cov = np.sqrt(np.minimum.outer(t, t) / np.maximum.outer(t, t))
    mvn = stats.multivariate_normal(
        mean=theta * np.sqrt(t), cov=cov, abseps=1e-8, releps=1e-8, maxpts=2_000_000, seed=1
    )
    return float(mvn.cdf(upper))


@pytest.mark.parametrize("looks", [2, 3, 4, 5])
@pytest.mark.parametrize("spending", ["obrien-fleming", "pocock"])
def test_alpha_spent_look_by_look_agrees_with_the_multivariate_normal_cdf(looks, spending):
    """K = 2..5 at α = 0.025, equal looks: after each look, P(no crossing so far) computed by
    Genz's algorithm is 1 − α(t_k), the spending function, to 1e-6."""
    d = group_sequential(0.025, equal_fractions(looks), spending, futility=False)
    for k in range(1, looks + 1):
        stay = _mvn_continue(np.array(d.upper[:k]), d.fractions[:k])
        assert 1 - stay == pytest.approx(d.alpha_spent[k - 1], abs=1e-6)


def test_power_and_futility_agree_with_the_multivariate_normal_cdf():
    """The design's power at its drift, computed as 1 − P(all below c), with the futility rule
    ignored (non-binding: the efficacy-only power is at least 1 − β)."""
    d = group_sequential(0.025, equal_fractions(4), "obrien-fleming", power=0.9, futility=False)
    assert 1 - _mvn_continue(np.array(d.upper), d.fractions, d.drift) == pytest.approx(
        0.9, abs=1e-6
    )
    with_rule = group_sequential(0.025, equal_fractions(4), "obrien-fleming", power=0.9)
    up, low = with_rule.crossing(with_rule.drift)
    assert up.sum() == pytest.approx(0.9, abs=1e-8)  # power with the futility rule obeyed
    assert low.sum() == pytest.approx(0.1, abs=1e-8)
    np.testing.assert_allclose(np.cumsum(low), with_rule.beta_spent, atol=1e-8)
    assert 1 - _mvn_continue(np.array(with_rule.upper), d.fractions, with_rule.drift) > 0.9


def test_fixed_design_is_one_look_at_the_plain_quantile():
    d = group_sequential(0.05, (1.0,), "none", power=0.8)
    assert d.upper == pytest.approx((stats.norm.isf(0.05),))
    assert d.drift == pytest.approx(stats.norm.isf(0.05) + stats.norm.ppf(0.8))
    assert d.inflation == pytest.approx(1.0)
    with pytest.raises(ValueError, match="one look"):
        group_sequential(0.05, equal_fractions(3), "none")


def test_obrien_fleming_five_looks_costs_little_information():
    """Five O'Brien–Fleming-type looks (α 0.025, power 0.9, efficacy only) need 2–3% more
    information than the fixed design (the issue quotes "about +2.6%"); Pocock-type far more."""
    obf = group_sequential(0.025, equal_fractions(5), power=0.9, futility=False)
    assert 1.02 < obf.inflation < 1.03
    poc = group_sequential(0.025, equal_fractions(5), "pocock", power=0.9, futility=False)
    assert poc.inflation > 1.15


def test_bad_fractions_are_refused():
    for bad in ([], [0.5, 0.5], [0, 1], [0.6, 0.3, 1]):
        with pytest.raises(ValueError, match="fractions"):
            efficacy_bounds(0.025, bad, obrien_fleming)
