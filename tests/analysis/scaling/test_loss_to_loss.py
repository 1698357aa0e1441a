"""Loss-to-loss fits (analysis/scaling/loss_to_loss.py): the plain form's κ and K of exact plain
laws derived by hand, the shifted form on exact saturating laws, the interval against
statsmodels' OLS, and the refusal below three sizes above the floors."""

from __future__ import annotations

import numpy as np
import pytest
import statsmodels.api as sm

from analysis.scaling.loss_to_loss import L2L_KEYS, fit_record, loss_to_loss
from analysis.scaling.saturating_multipliers import fit_group
from tests.analysis.scaling.loss_tables import loss_table
from tests.analysis.scaling.test_multipliers import lines
from tests.analysis.scaling.test_saturating_multipliers import line


def test_plain_laws_give_the_ratio_of_exponents() -> None:
    found = lines(loss_table(seeds=1, shared=0.0, own=0.0))
    (plain,) = loss_to_loss(found["steep"], found["mle"], None, 0.95)
    assert set(plain) == set(L2L_KEYS)
    # 12·N^−0.22 = K·(10·N^−0.2)^κ for every N: κ = 0.22/0.2 = 1.1, K = 12·10^−1.1 = 0.95318.
    assert plain["kappa"] == pytest.approx(1.1, rel=1e-9)
    assert plain["K"] == pytest.approx(12 * 10**-1.1, rel=1e-9)
    assert (plain["form"], plain["sizes"], plain["E"]) == ("plain", 6, 0.0)
    assert plain["low"] == pytest.approx(1.1, rel=1e-6)  # exact: a point interval


def test_the_shifted_form_on_saturating_laws() -> None:
    # 1 + 9·N^−0.2 against 1 + 10·N^−0.2: L − 1 = 0.9·(L_ref − 1), κ = 1, K = 0.9.
    g, ref = line("del", 1.0, 9.0, 0.2), line("mle", 1.0, 10.0, 0.2)
    fits = (fit_group(g, 10, 0), fit_group(ref, 10, 0))
    plain, shifted = loss_to_loss(g, ref, fits, 0.95)
    assert shifted["form"] == "shifted" and shifted["E"] == pytest.approx(1.0, rel=1e-4)
    assert shifted["kappa"] == pytest.approx(1.0, rel=1e-4)
    assert shifted["K"] == pytest.approx(0.9, rel=1e-4)
    assert plain["rms"] > 100 * shifted["rms"]  # the floors make the plain form bend
    # Given floors by hand, the fit is the closed form itself.
    exact = fit_record(g.cells.means(), ref.cells.means(), (1.0, 1.0), "shifted", 0.95)
    assert exact["kappa"] == pytest.approx(1.0, rel=1e-12)
    # A floor of 1.4 leaves 9·N^−0.2 > 0.4, N < 5.6e6: two of the sizes, too few for a line.
    above = fit_record(g.cells.means(), ref.cells.means(), (1.4, 1.0), "shifted", 0.95)
    assert above["kappa"] is None and above["remark"].startswith("fewer than 3 sizes")


def test_the_interval_equals_statsmodels_ols() -> None:
    found = lines(loss_table(shared=0.0, own=0.01, seed=4))
    loss, ref = found["steep"].cells.means(), found["mle"].cells.means()
    got = fit_record(loss, ref, (0.0, 0.0), "plain", 0.9)
    ols = sm.OLS(np.log(loss), sm.add_constant(np.log(ref))).fit()
    assert got["kappa"] == pytest.approx(ols.params[1], rel=1e-9)
    assert got["K"] == pytest.approx(np.exp(ols.params[0]), rel=1e-9)
    assert (got["low"], got["high"]) == pytest.approx(tuple(ols.conf_int(0.1)[1]), rel=1e-9)


def test_the_shifted_interval_carries_the_floors() -> None:
    # Noisy saturating laws, each group its own noise: the shifted κ is 1 in truth. Its
    # bootstrap refits the floors in every resample, so its interval is wider than the
    # t-interval that holds them fixed, and it holds the truth.
    g = line("del", 1.0, 9.0, 0.2, seeds=4, noise=0.003)
    ref = line("mle", 1.0, 10.0, 0.2, seeds=4, noise=0.003)
    fits = (fit_group(g, 100, 0), fit_group(ref, 100, 0))
    _, shifted = loss_to_loss(g, ref, fits, 0.95)
    assert shifted["ci_method"] == "bootstrap" and shifted["resamples"] >= 95
    assert shifted["low"] < 1.0 < shifted["high"]
    fixed = fit_record(
        g.cells.means(), ref.cells.means(), (shifted["E"], shifted["E_ref"]), "shifted", 0.95
    )
    assert shifted["high"] - shifted["low"] > fixed["high"] - fixed["low"]
