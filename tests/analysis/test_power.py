"""`analysis power` and analysis/paired_power.py against independent computations: statsmodels'
TTestPower (power, seeds needed, minimal detectable effect), the chi-square interval of an sd
written out from its definition, a Monte Carlo simulation of the paired TOST (numpy), and the
command's numbers against the fixture's per-seed differences; edge cases (fewer than 2 pairs,
zero variance) and bad input (exit 2 naming the flag)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.power import TTestPower

from analysis.__main__ import main
from analysis.paired_power import (
    minimal_detectable_effect,
    sd_interval,
    seeds_needed,
    seeds_needed_tost,
    t_test_power,
    tost_power,
)
from tests.analysis.curve_fixtures import ACC, write_curve_store

SM = TTestPower()


@pytest.mark.parametrize("n", [3, 5, 12, 40])
@pytest.mark.parametrize("one_sided", [False, True])
def test_t_test_power_matches_statsmodels(n, one_sided) -> None:
    effect, sd = 0.02, 0.063
    alternative = "larger" if one_sided else "two-sided"
    want = SM.power(effect_size=effect / sd, nobs=n, alpha=0.05, alternative=alternative)
    assert t_test_power(effect, sd, n, 0.05, one_sided) == pytest.approx(want, rel=1e-9)


@pytest.mark.parametrize(("effect", "sd"), [(0.02, 0.063), (0.02, 0.026), (0.1, 0.05)])
@pytest.mark.parametrize("one_sided", [False, True])
def test_seeds_needed_is_the_smallest_n_statsmodels_allows(effect, sd, one_sided) -> None:
    alternative = "larger" if one_sided else "two-sided"
    n_real = SM.solve_power(effect_size=effect / sd, alpha=0.05, power=0.8, alternative=alternative)
    n = seeds_needed(effect, sd, 0.05, 0.8, one_sided)
    assert n == max(2, math.ceil(n_real - 1e-9))
    # minimal: one seed fewer falls short
    if n > 2:
        assert SM.power(effect / sd, n - 1, 0.05, alternative=alternative) < 0.8


@pytest.mark.parametrize("n", [3, 5, 20])
def test_mde_matches_statsmodels(n) -> None:
    sd = 0.063
    d = SM.solve_power(nobs=n, alpha=0.05, power=0.8, alternative="two-sided")
    assert minimal_detectable_effect(sd, n, 0.05, 0.8) == pytest.approx(d * sd, rel=1e-6)


def test_sd_interval_from_its_definition() -> None:
    # (n−1)s²/σ² ~ χ²(n−1): σ in [s·√((n−1)/q_hi), s·√((n−1)/q_lo)]
    n, s = 5, 0.063
    q_lo, q_hi = stats.chi2.ppf([0.025, 0.975], 4)
    lo, hi = sd_interval(s, n, 0.95)
    assert lo == pytest.approx(s * math.sqrt(4 / q_hi))
    assert hi == pytest.approx(s * math.sqrt(4 / q_lo))


def simulated_tost_power(sesoi, sd, n, alpha, true_diff, reps=200_000, seed=1) -> float:
    """Monte Carlo of the paired TOST: draw n differences, reject iff the 1−2α interval lies in
    ±sesoi (the TOST decision)."""
    rng = np.random.default_rng(seed)
    d = rng.normal(true_diff, sd, size=(reps, n))
    mean, se = d.mean(axis=1), d.std(axis=1, ddof=1) / math.sqrt(n)
    t = stats.t.ppf(1 - alpha, n - 1)
    return float(np.mean((mean - t * se > -sesoi) & (mean + t * se < sesoi)))


@pytest.mark.parametrize(
    ("sesoi", "sd", "n", "true_diff"),
    [(0.02, 0.026, 16, 0.0), (0.02, 0.026, 8, 0.0), (0.05, 0.03, 6, 0.01), (0.02, 0.063, 80, 0.0)],
)
def test_tost_power_matches_simulation(sesoi, sd, n, true_diff) -> None:
    exact = tost_power(sesoi, sd, n, 0.05, true_diff)
    simulated = simulated_tost_power(sesoi, sd, n, 0.05, true_diff)
    # 200k draws: Monte Carlo sd ≤ 0.0012
    assert exact == pytest.approx(simulated, abs=0.005)


def test_seeds_needed_tost_is_minimal_and_unreachable_outside_the_margin() -> None:
    n = seeds_needed_tost(0.02, 0.026, 0.05, 0.8)
    assert tost_power(0.02, 0.026, n) >= 0.8 > tost_power(0.02, 0.026, n - 1)
    assert seeds_needed_tost(0.02, 0.026, true_diff=0.03) is None


def paired_diffs(store, metric: str, value: str) -> np.ndarray:
    """arm del − mle per seed, summarised from the fixture's raw values by hand."""
    steps = np.array(store.steps, dtype=float)
    summary = {
        "final": lambda v: v[-1],
        "last:3": lambda v: np.mean(v[-3:]),
        "auc": lambda v: np.trapezoid(v, steps) / (steps[-1] - steps[0]),
    }[value]
    return np.array(
        [
            summary(np.array(store.values[("del", s, metric)]))
            - summary(np.array(store.values[("mle", s, metric)]))
            for s in range(5)
        ]
    )


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return write_curve_store(tmp_path_factory.mktemp("power") / "results")


def run_json(capsys, *argv) -> dict:
    assert main([*argv, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_power_command_numbers(store, capsys) -> None:
    doc = run_json(
        capsys,
        "power",
        str(store.root),
        "--metric",
        ACC,
        "--value",
        "final,last:3,auc",
        "--delta",
        "0.02",
        "--sesoi",
        "0.03",
    )
    records = doc["tables"][0]["records"]
    assert [r["value_kind"] for r in records] == ["final", "last 3", "auc"]
    for rec, value in zip(records, ["final", "last:3", "auc"], strict=True):
        d = paired_diffs(store, ACC, value)
        sd = float(np.std(d, ddof=1))
        assert rec["n"] == 5 and rec["arm"] == "del" and rec["baseline_arm"] == "mle"
        assert rec["mean_diff"] == pytest.approx(d.mean())
        assert rec["sd_diff"] == pytest.approx(sd)
        want_n = SM.solve_power(effect_size=0.02 / sd, alpha=0.05, power=0.8)
        assert rec["seeds_needed"] == max(2, math.ceil(want_n))
        mde = SM.solve_power(nobs=5, alpha=0.05, power=0.8) * sd
        assert rec["mde"] == pytest.approx(mde, rel=1e-6)
        assert rec["power_at_delta"] == pytest.approx(SM.power(0.02 / sd, 5, 0.05))
        tost_n = rec["seeds_needed_tost"]
        assert tost_power(0.03, sd, tost_n) >= 0.8 > tost_power(0.03, sd, tost_n - 1)
    # the curve summaries are less spread than the final value here
    assert records[2]["sd_diff"] < records[0]["sd_diff"]
    assert doc["settings"]["sesoi"] == 0.03


def test_one_sided_needs_fewer_seeds(store, capsys) -> None:
    args = ["power", str(store.root), "--metric", ACC, "--delta", "0.02"]
    two = run_json(capsys, *args)["tables"][0]["records"][0]
    one = run_json(capsys, *args, "--one-sided")["tables"][0]["records"][0]
    sd = two["sd_diff"]
    want = SM.solve_power(effect_size=0.02 / sd, alpha=0.05, power=0.8, alternative="larger")
    assert one["seeds_needed"] == math.ceil(want) < two["seeds_needed"]


def test_fewer_than_two_pairs_and_zero_variance(tmp_path: Path, capsys) -> None:
    one = write_curve_store(tmp_path / "one", seeds=(0,))
    rec = run_json(capsys, "power", str(one.root), "--metric", ACC, "--delta", "0.02")
    rec = rec["tables"][0]["records"][0]
    assert rec["n"] == 1 and rec["sd_diff"] is None and rec["seeds_needed"] is None
    assert "1 pair(s)" in rec["reason"]

    def constant_gap(loss, seed, rng):
        base = 0.1 * seed + np.array([0.1, 0.2, 0.3, 0.4, 0.5])
        return {ACC: (base + (0.05 if loss == "del" else 0.0)).tolist()}

    flat = write_curve_store(tmp_path / "flat", curves=constant_gap)
    doc = run_json(capsys, "power", str(flat.root), "--metric", ACC, "--delta", "0.02")
    rec = doc["tables"][0]["records"][0]
    assert rec["sd_diff"] == 0.0 and rec["mde"] is None and rec["seeds_needed"] is None
    assert rec["reason"] == "all differences equal: sd 0"
    assert main(["power", str(flat.root), "--metric", ACC, "--delta", "0.02"]) == 0
    assert "all differences equal" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--delta", "0"], "--delta"),
        (["--delta", "-0.1"], "--delta"),
        (["--delta", "0.02", "--sesoi", "0"], "--sesoi"),
        (["--delta", "0.02", "--power", "1"], "--power"),
        (["--delta", "0.02", "--power", "1.5"], "--power"),
        (["--delta", "0.02", "--alpha", "0"], "--alpha"),
        (["--delta", "0.02", "--value", "auc:9"], "--value"),
        ([], "--delta"),  # required
    ],
)
def test_bad_input_exits_2_naming_the_flag(store, capsys, flags, named) -> None:
    try:
        code = main(["power", str(store.root), *flags])
    except SystemExit as exc:  # argparse's own errors (a required flag) exit 2 as well
        code = exc.code
    assert code == 2
    assert named in capsys.readouterr().err
