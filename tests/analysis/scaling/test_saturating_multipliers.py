"""The multiplier under the saturating form (analysis/scaling/saturating_multipliers.py): golden
values of noise-free laws derived by hand, a loss below the reference's floor, and the bootstrap
interval around the truth."""

from __future__ import annotations

import math

import numpy as np
import pytest

from analysis.scaling.cells import Cells
from analysis.scaling.group_lines import GroupLine
from analysis.scaling.saturating_multipliers import fit_group, saturating_records

SIZES = np.geomspace(1e6, 1e10, 9)


def records(g: GroupLine, ref: GroupLine, planned: list[float], n_boot: int, seed: int = 0):
    fits = (fit_group(g, n_boot, seed), fit_group(ref, n_boot, seed))
    return saturating_records(g, ref, fits, planned, 0.95)


def line(name: str, e: float, a: float, alpha: float, seeds: int = 1, noise: float = 0.0):
    """A group whose loss is E + A·N^−α at SIZES, times e^ε per seed (ε ~ Normal(0, noise))."""
    rng = np.random.default_rng(sum(map(ord, name)) + seeds)  # each group its own noise
    n = np.repeat(SIZES, seeds)
    loss = (e + a * n**-alpha) * np.exp(rng.normal(0.0, noise, n.size))
    return GroupLine(name, Cells.of(n, None, loss, seeded=seeds > 1))


def test_noise_free_saturating_multipliers_equal_the_hand_derivation() -> None:
    ref = line("mle", 1.0, 10.0, 0.2)
    same_floor = records(line("del", 1.0, 9.0, 0.2), ref, [1e12], n_boot=20)
    # The same E: 1 + 10·N*^−0.2 = 1 + 9·n^−0.2 gives N* = n·(10/9)^5 at every n.
    for r in same_floor:
        assert r["multiplier"] == pytest.approx((10 / 9) ** 5, rel=1e-4)
        assert r["exponents"] == "saturating"
        assert r["low"] == pytest.approx((10 / 9) ** 5, rel=1e-3)  # no noise: no spread
    lower = records(line("ntl", 0.9, 10.0, 0.2), ref, [1e12], n_boot=20)
    # E 0.9 below mle's 1.0: at n the loss is 0.9 + 10·n^−0.2, above mle's floor by
    # 10·n^−0.2 − 0.1, so N* = ((10·n^−0.2 − 0.1)/10)^(−5) = (n^−0.2 − 0.01)^(−5); from
    # n = 0.01^−5 = 1e10 on no N reaches it.
    n = 1e6
    assert lower[0]["multiplier"] == pytest.approx((n**-0.2 - 0.01) ** -5 / n, rel=1e-3)
    at_1e12 = lower[-1]
    assert at_1e12["multiplier"] == math.inf and at_1e12["n_ref"] is None
    assert "below the reference's floor E = 1: no N reaches it" in at_1e12["remark"]


def test_intervals_over_cells_and_seeds_hold_the_truth() -> None:
    # 6 pairs of 9 sizes × 4 seeds, each group its own noise: the 95% interval at the middle
    # size should hold the truth in about 5.7 of them (the simulation of the module docstring
    # found 92–100% over 40); 4 or fewer of 6 has probability 3% at 95%.
    held = 0
    for k in range(6):
        ref = line(f"mle{k}", 1.0, 10.0, 0.2, seeds=4, noise=0.003)
        g = line(f"del{k}", 1.0, 9.0, 0.2, seeds=4, noise=0.003)
        mid = records(g, ref, [], n_boot=60, seed=k)[4]
        held += mid["low"] < (10 / 9) ** 5 < mid["high"]
        assert mid["ci_method"] == "bootstrap" and mid["resamples"] >= 55
    assert held >= 5
