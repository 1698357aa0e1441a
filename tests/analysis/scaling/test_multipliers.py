"""The parameter multiplier of a loss against the reference (analysis/scaling/multipliers.py):
golden values of noise-free laws derived by hand, the definition checked by a root finder on a
noisy table, and the interval around the truth."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize

from analysis.scaling.cells import Cells
from analysis.scaling.group_lines import GroupLine
from analysis.scaling.multipliers import PER_GROUP, SHARED, delta_t, multiplier_records
from tests.analysis.scaling.loss_tables import LAWS, SIZES, loss_table


def lines(table: dict[str, list]) -> dict[str, GroupLine]:
    """Each loss's cells (seeds declared) from a loss table."""
    name = np.array(table["loss_name"])
    n, loss = np.array(table["N"]), np.array(table["loss"])
    return {
        g: GroupLine(g, Cells.of(n[name == g], None, loss[name == g], seeded=True))
        for g in dict.fromkeys(table["loss_name"])
    }


def by(records, exponents, n=None):
    return next(
        r
        for r in records
        if r["exponents"] == exponents and (n is None or r["n"] == pytest.approx(n))
    )


def test_noise_free_multipliers_equal_the_hand_derivation() -> None:
    found = lines(loss_table(seeds=1, shared=0.0, own=0.0))
    ref = found["mle"]
    boot = {"n_boot": 50, "level": 0.95, "seed": 0}
    same = multiplier_records(found["del"], ref, [1e12], **boot)
    # del: 9·N^−0.2 against mle's 10·N^−0.2. mle reaches 9·n^−0.2 where 10·N*^−0.2 = 9·n^−0.2,
    # N* = n·(10/9)^(1/0.2): the multiplier is (10/9)^5 = 100000/59049 at every N.
    hand = 100000 / 59049
    assert by(same, SHARED)["multiplier"] == pytest.approx(hand, rel=1e-9)
    assert by(same, SHARED)["n"] is None
    per_n = [r for r in same if r["exponents"] == PER_GROUP]
    assert [r["multiplier"] for r in per_n] == pytest.approx([hand] * 7, rel=1e-9)
    assert [r["where"] for r in per_n] == ["observed"] * 6 + ["planned"]
    assert by(same, SHARED)["low"] == pytest.approx(hand, rel=1e-9)  # no noise: no spread
    steep = multiplier_records(found["steep"], ref, [1e12], **boot)
    # steep: 12·N^−0.22. 10·N*^−0.2 = 12·n^−0.22 gives N* = (10/12)^5 · n^1.1, so
    # m(n) = N*/n = (10/12)^5 · n^0.1: 0.40188 · 10 = 4.0188 at n = 1e10, 15.93 at 1e12.
    for n in (1e7, 1e10, 1e12):
        assert by(steep, PER_GROUP, n)["multiplier"] == pytest.approx(
            (10 / 12) ** 5 * n**0.1, rel=1e-9
        )
    assert by(steep, PER_GROUP, 1e12)["remark"] == (
        "beyond the loss's sizes; the reference's fit extrapolated to N*"
    )


def test_the_multiplier_is_where_the_references_fit_reaches_the_loss() -> None:
    found = lines(loss_table())
    g, ref = found["steep"], found["mle"]
    records = multiplier_records(g, ref, [3e11], n_boot=50, level=0.95, seed=0)
    # The reference's own least-squares line, by numpy; N* by a root finder on it.
    c_g = np.polyfit(g.x, g.y, 1)
    c_r = np.polyfit(ref.x, ref.y, 1)
    for n in [*SIZES, 3e11]:
        target = float(np.polyval(c_g, math.log(n)))
        ln_star = optimize.brentq(lambda t, y=target: np.polyval(c_r, t) - y, 0.0, 80.0, xtol=1e-13)
        r = by(records, PER_GROUP, n)
        assert r["n_ref"] == pytest.approx(math.exp(ln_star), rel=1e-9)
        assert r["multiplier"] == pytest.approx(math.exp(ln_star) / n, rel=1e-9)
        assert r["loss"] == pytest.approx(math.exp(target), rel=1e-12)


@pytest.mark.parametrize(("loss", "truth"), [("del", (10 / 9) ** 5), ("steep", None)])
def test_intervals_hold_the_true_multiplier(loss, truth) -> None:
    found = lines(loss_table(seed=7))
    records = multiplier_records(found[loss], found["mle"], [], n_boot=400, level=0.95, seed=0)
    a_g, b_g = LAWS[loss]
    a_r, b_r = LAWS["mle"]
    for r in records:
        if r["exponents"] == SHARED and truth is None:
            continue  # no one true multiplier where the exponents differ
        n = r["n"] if r["n"] is not None else 1.0
        true = truth or math.exp((math.log(a_r / a_g) + (b_g - b_r) * math.log(n)) / b_r)
        assert r["low"] < true < r["high"], r
        assert r["resamples"] > 350


def test_a_reference_that_does_not_fall_determines_no_multiplier() -> None:
    # mle flat (b = 0) under noise: its slope's t-test cannot tell it from 0, so no N* is
    # determined, and every row says so; a falling reference says nothing.
    table = loss_table(laws={"mle": (1.0, 0.0), "del": (0.9, 0.0)}, shared=0.0, own=0.01)
    found = lines(table)
    records = multiplier_records(found["del"], found["mle"], [], n_boot=20, level=0.95, seed=0)
    assert all(r["remark"].startswith("the reference does not change with N") for r in records)
    falling = lines(loss_table())
    records = multiplier_records(falling["del"], falling["mle"], [], n_boot=20, level=0.95, seed=0)
    assert not any((r["remark"] or "").startswith("the reference does not") for r in records)


def _widths(table: dict[str, list], paired: bool) -> tuple[float, float, bool, bool]:
    """(width of ln m's t-interval at the largest size for `steep`, of the shared multiplier's
    for `del`, whether each holds its truth) with the pair's covariance paired or not."""
    found = lines(table)
    ln_n = np.log(np.array([SIZES[-1]]))
    a_s, b_s = LAWS["steep"]
    a_r, b_r = LAWS["mle"]
    true_steep = (math.log(a_r / a_s) + (b_s - b_r) * ln_n[0]) / b_r
    steep = delta_t(found["steep"], found["mle"], PER_GROUP, ln_n, 0.95, paired)
    same = delta_t(found["del"], found["mle"], SHARED, ln_n, 0.95, paired)
    true_same = 5 * math.log(10 / 9)
    return (
        float(steep[1][0] - steep[0][0]),
        float(same[1][0] - same[0][0]),
        bool(steep[0][0] < true_steep < steep[1][0]),
        bool(same[0][0] < true_same < same[1][0]),
    )


@pytest.mark.parametrize(("shared", "own", "narrower"), [(0.01, 0.003, 0.75), (0.0, 0.01, None)])
def test_paired_t_intervals_hold_the_truth_and_take_the_shared_noise_out(
    shared, own, narrower
) -> None:
    # 300 tables of 6 sizes × 4 paired seeds (loss_tables.py, numpy alone): a seed's noise
    # shared by the losses at its size (sd `shared`) and its own (sd `own`) in log L. The paired
    # 95% intervals hold ln m at the largest size (steep, exponents per group) and the shared
    # multiplier (del) ~285 times of 300 (270 or fewer: probability < 0.1%). With most noise
    # shared they are narrower than the independent ones (expected ~0.5×: the pairs' difference
    # has sd √2·own against √(shared² + own²), at t₀.₉₇₅ on 4 df, not 8); with none shared
    # they still hold.
    runs = [loss_table(shared=shared, own=own, seed=3000 + i) for i in range(300)]
    paired = np.array([_widths(t, True) for t in runs])  # (300, 4)
    held = paired[:, 2:].sum(axis=0)
    assert held.min() > 270, held
    if narrower is not None:
        alone = np.array([_widths(t, False) for t in runs])
        assert alone[:, 2:].sum(axis=0).min() > 270
        ratio = np.median(paired[:, :2] / alone[:, :2], axis=0)
        assert ratio.max() < narrower, ratio


def test_a_paired_design_reports_the_paired_t_interval() -> None:
    found = lines(loss_table(seed=7))
    records = multiplier_records(found["del"], found["mle"], [], n_boot=50, level=0.95, seed=0)
    paired = multiplier_records(
        found["del"], found["mle"], [], n_boot=50, level=0.95, seed=0, paired=True
    )
    assert {r["ci_method"] for r in records} == {"t"}
    assert {r["ci_method"] for r in paired} == {"t, paired"}
    for alone, pair in zip(records, paired, strict=True):
        assert pair["multiplier"] == alone["multiplier"]  # the fit is the same; its noise not
        assert (pair["low"], pair["high"]) == (pair["t_low"], pair["t_high"])
        assert pair["high"] - pair["low"] < alone["high"] - alone["low"]
