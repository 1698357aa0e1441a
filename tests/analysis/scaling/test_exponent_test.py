"""The test of "same exponent as the reference" (analysis/scaling/exponent_test.py): its fits, p
and t-interval against statsmodels' OLS of the interaction model on the same cell means, the
bootstrap interval around the truth, and exact laws."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from scipy import stats

from analysis.scaling.exponent_test import TEST_KEYS, exponent_test
from tests.analysis.scaling.loss_tables import loss_table
from tests.analysis.scaling.test_multipliers import lines


def pair_frame(found, loss: str) -> pd.DataFrame:
    """The cell means of the loss and mle as a frame (y = ln L, x = ln N, g = 1 for the loss)."""
    parts = [
        pd.DataFrame({"x": found[name].x, "y": found[name].y, "g": int(name == loss)})
        for name in (loss, "mle")
    ]
    return pd.concat(parts, ignore_index=True)


@pytest.mark.parametrize("loss", ["del", "steep"])
def test_p_and_t_interval_equal_statsmodels_interaction_model(loss) -> None:
    found = lines(loss_table(shared=0.0, own=0.01, seed=3))
    got = exponent_test(found[loss], found["mle"], n_boot=200, level=0.9, seed=0)
    assert set(got) == set(TEST_KEYS)
    frame = pair_frame(found, loss)
    full = smf.ols("y ~ x * C(g)", frame).fit()
    # ln L = c + a·ln N per group; the interaction x:C(g)[T.1] is a_loss − a_mle = −(b − b_ref).
    term = "x:C(g)[T.1]"
    assert got["difference"] == pytest.approx(-full.params[term], rel=1e-9)
    assert got["p"] == pytest.approx(full.pvalues[term], rel=1e-7)
    low, high = full.conf_int(alpha=0.1).loc[term]
    assert (got["t_low"], got["t_high"]) == pytest.approx((-high, -low), rel=1e-9)
    assert got["exponent_ref"] == pytest.approx(-full.params["x"], rel=1e-9)
    shared = smf.ols("y ~ x + C(g)", frame).fit()
    assert got["shared_exponent"] == pytest.approx(-shared.params["x"], rel=1e-9)
    assert (got["sizes"], got["sizes_ref"]) == (6, 6)
    # A resample of 6 cells draws at most 2 distinct sizes with probability
    # (6 + C(6,2)·(2^6 − 2)) / 6^6 = 936/46656 ≈ 2%: about 4 of 200 are left out.
    assert 190 <= got["resamples"] < 200


def test_intervals_hold_the_true_difference_and_tell_the_exponents_apart() -> None:
    found = lines(loss_table(seed=11))
    same = exponent_test(found["del"], found["mle"], n_boot=400, level=0.95, seed=0)
    apart = exponent_test(found["steep"], found["mle"], n_boot=400, level=0.95, seed=0)
    assert same["ci_method"] == "t"  # 6 cells: the t-interval is reported
    assert (same["low"], same["high"]) == (same["t_low"], same["t_high"])
    for got, true in ((same, 0.0), (apart, 0.02)):
        assert got["low"] < true < got["high"] and got["boot_low"] < true < got["boot_high"]
    assert same["p"] > 0.05 and apart["p"] < 1e-3 and apart["low"] > 0.0
    # Paired seeds: one draw serves both losses, the shared noise cancels in the difference, so
    # the bootstrap interval is narrower than the t-interval, which takes the groups as
    # independent.
    assert same["boot_high"] - same["boot_low"] < 0.5 * (same["t_high"] - same["t_low"])


def test_exact_laws_have_no_test_and_a_point_interval() -> None:
    found = lines(loss_table(seeds=1, shared=0.0, own=0.0))
    got = exponent_test(found["steep"], found["mle"], n_boot=50, level=0.95, seed=0)
    assert got["exponent"] == pytest.approx(0.22) and got["exponent_ref"] == pytest.approx(0.2)
    assert got["difference"] == pytest.approx(0.02)
    assert got["p"] is None  # no residual: nothing to test against
    assert (got["boot_low"], got["boot_high"]) == pytest.approx((0.02, 0.02))
    # The shared slope of two exact lines with the same sizes is the mean of the two.
    assert got["shared_exponent"] == pytest.approx(0.21)
    assert np.isfinite(got["t_low"]) and got["t_low"] == pytest.approx(0.02)


def test_a_paired_design_tests_the_slope_of_the_difference_line() -> None:
    # Paired: b_g − b_r is minus the slope of the cell means' difference ln L_g − ln L_r on ln N,
    # its interval and p those of that slope's least-squares fit (scipy's linregress on the
    # differences, P − 2 = 4 degrees of freedom): the seeds' shared noise cancels.
    found = lines(loss_table(seed=11))
    g, r = found["steep"], found["mle"]
    got = exponent_test(g, r, n_boot=50, level=0.95, seed=0, paired=True)
    fit = stats.linregress(g.x, g.y - r.y)
    half = stats.t.ppf(0.975, 4) * fit.stderr
    assert got["ci_method"] == "t, paired"
    assert got["difference"] == pytest.approx(-fit.slope, rel=1e-9)
    assert (got["low"], got["high"]) == pytest.approx(
        (-fit.slope - half, -fit.slope + half), rel=1e-9
    )
    assert got["p"] == pytest.approx(fit.pvalue, rel=1e-7)
    alone = exponent_test(g, r, n_boot=50, level=0.95, seed=0)
    assert got["high"] - got["low"] < 0.6 * (alone["high"] - alone["low"])
