"""The z design carried to paired t statistics (analysis/sequential/small_n.py), the seeds a plan
asks (analysis/sequential/plan.py) and the `sequential` command: the calibrated bounds spend the
design's α look by look (checked by simulating whole studies, not by the calibration's own
paths), the first look's bound is the exact t quantile, the fixed design's seeds are
analysis/paired_power.py's, and the command prints the design's bounds under `upper`."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

from analysis.__main__ import main
from analysis.paired_power import seeds_needed, seeds_needed_tost
from analysis.sequential.boundaries import equal_fractions, group_sequential
from analysis.sequential.design import looks_at, sequential_test
from analysis.sequential.plan import fixed_seeds, plan
from analysis.sequential.simulate import operating
from analysis.sequential.small_n import calibrated_bounds, check_seeds, nominal_t

STUDIES = 400_000


@pytest.mark.parametrize(
    "seeds, spending", [((2, 3, 4, 5, 6), "pocock"), ((4, 8, 12), "obrien-fleming")]
)
def test_calibrated_bounds_spend_the_designs_alpha_look_by_look(seeds, spending):
    d = group_sequential(0.05, np.array(seeds) / seeds[-1], spending, futility=False)
    spent = np.diff(d.alpha_spent, prepend=0.0)
    bounds = calibrated_bounds(spent, seeds)
    assert bounds[0] == pytest.approx(stats.t.isf(spent[0], seeds[0] - 1))
    rng = np.random.default_rng(11)
    x = rng.standard_normal((STUDIES, seeds[-1]))  # studies × seeds, σ = 1, no effect
    total, squares = np.cumsum(x, axis=1), np.cumsum(x * x, axis=1)
    running = np.ones(STUDIES, dtype=bool)
    for k, n in enumerate(seeds):
        mean = total[:, n - 1] / n
        t = mean / np.sqrt((squares[:, n - 1] - n * mean**2) / (n - 1) / n)
        crossed = running & (t >= bounds[k])
        # each look's share within 4 standard errors of the simulation plus 2% of the target
        error = 4 * np.sqrt(spent[k] / STUDIES) + 0.02 * spent[k]
        assert crossed.mean() == pytest.approx(spent[k], abs=error), k
        running &= ~crossed
    assert 1 - running.mean() == pytest.approx(0.05, abs=4 * np.sqrt(0.05 / STUDIES) + 5e-4)


def test_bounds_are_reproducible_and_above_the_nominal_carry_over():
    d = group_sequential(0.05, equal_fractions(3), "pocock", futility=False)
    spent = np.diff(d.alpha_spent, prepend=0.0)
    first, again = calibrated_bounds(spent, (3, 6, 9)), calibrated_bounds(spent, (3, 6, 9))
    np.testing.assert_array_equal(first, again)
    nominal = [nominal_t(c, n - 1) for c, n in zip(d.upper, (3, 6, 9), strict=True)]
    assert first[0] == pytest.approx(nominal[0])  # the first look is exact either way
    assert all(first[1:] > np.array(nominal[1:]))
    assert nominal_t(1.96, 10**7) == pytest.approx(1.96, abs=1e-5)


def test_seeds_per_look_are_checked():
    for bad in ((1, 2), (3, 3), (4, 2), ()):
        with pytest.raises(ValueError, match="seeds per look"):
            check_seeds(bad)
    assert looks_at(9, 3) == (3, 6, 9) and looks_at(4, 3) == (2, 3, 4)
    with pytest.raises(ValueError, match="3 looks need at least 4"):
        looks_at(3, 3)
    with pytest.raises(ValueError, match="SESOI"):
        sequential_test((3, 6), sesoi=0.0)


def test_the_fixed_design_is_paired_powers():
    assert fixed_seeds(0.02, 0.02, 0.05, 0.8, "superiority") == seeds_needed(
        0.02, 0.02, 0.05, 0.8, one_sided=True
    )
    assert fixed_seeds(0.02, 0.02, 0.05, 0.8, "equivalence") == seeds_needed_tost(0.02, 0.02)
    assert fixed_seeds(0.02, 0.02, 0.05, 0.8, "both") == max(
        seeds_needed(0.02, 0.02, 0.05, 0.8, one_sided=True), seeds_needed_tost(0.02, 0.02)
    )


def test_a_plan_is_the_fewest_seeds_with_the_power():
    kwargs = {"looks": 4, "hypotheses": "superiority", "spending": "pocock"}
    p = plan(0.02, 0.02, **kwargs)
    assert p.power >= 0.8 and p.test.max_seeds > p.fixed_seeds  # Pocock-type costs seeds
    one_less = sequential_test(
        looks_at(p.test.max_seeds - 1, 4), sesoi=0.02, hypotheses="superiority", spending="pocock"
    )
    assert operating(one_less, 0.02, 0.02).probability["superior"] < 0.8


def test_the_command_prints_the_bounds_and_the_seeds(capsys):
    assert main(["sequential", "--looks", "4", "--alpha", "0.025", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    d = group_sequential(0.025, equal_fractions(4), "obrien-fleming")
    assert doc["upper"] == pytest.approx(list(d.upper), abs=1e-12)
    assert doc["upper"][:3] == pytest.approx([4.3326, 2.9631, 2.3590], abs=1e-4)
    assert doc["lower"][-1] == doc["upper"][-1]
    argv = ["sequential", "--looks", "3", "--sd", "0.02", "--sesoi", "0.02", "--format", "json"]
    assert main([*argv, "--hypotheses", "superiority", "--spending", "pocock"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["max_seeds"] == doc["looks_at"][-1]
    assert doc["expected_seeds"]["zero"] < doc["fixed_seeds"]
    assert doc["fixed_seeds"] == seeds_needed(0.02, 0.02, 0.05, 0.8, one_sided=True)


@pytest.mark.parametrize(
    "argv, message",
    [
        ("sequential --spending none --looks 3", "--spending none is a fixed design"),
        ("sequential --sd 0.1", "--sd and --sesoi go together"),
        ("sequential --alpha 0.7", "--alpha must be in (0, 0.5)"),
        ("sequential --sd -1 --sesoi 0.1", "--sd must be > 0"),
    ],
)
def test_bad_designs_exit_2_naming_the_flag(argv, message, capsys):
    assert main(argv.split()) == 2
    assert message in capsys.readouterr().err
