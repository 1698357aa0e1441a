"""Tests on paired per-seed differences beyond the plain paired t-test (analysis/seed_stats.py),
through scipy.stats:

- `tost_paired`: equivalence within ±SESOI by two one-sided tests (Schuirmann's TOST), with the
  1 − 2α interval whose inclusion in (−SESOI, +SESOI) is the same decision;
- `paired_ancova`: the difference in a metric at matched values of a covariate — the per-seed
  differences d_y regressed on the per-seed covariate differences d_x (OLS,
  `scipy.stats.linregress`); the intercept is the difference at d_x = 0, the slope how much of
  d_y the covariate's difference carries.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from analysis.seed_stats import EQUAL_RTOL


def _all_equal(values: np.ndarray, scale: float) -> bool:
    """Equal up to float rounding (seed_stats.EQUAL_RTOL of the largest operand)."""
    return float(np.std(values, ddof=1)) <= EQUAL_RTOL * scale


@dataclass(frozen=True)
class Tost:
    """TOST of H0: |mean difference| ≥ sesoi. `p` = the larger one-sided p; `ci` the 1 − 2α
    interval; `equivalent` iff p < α. None fields (and `reason`) when undefined."""

    n: int
    mean_diff: float | None
    sesoi: float
    alpha: float
    p: float | None
    ci: tuple[float, float] | None
    equivalent: bool | None
    reason: str | None = None


def tost_paired(x: Sequence[float], y: Sequence[float], sesoi: float, alpha: float = 0.05) -> Tost:
    """TOST on the paired differences x − y against ±sesoi at `alpha` (each one-sided test at
    alpha: the 1 − 2α interval, 90% at α = 0.05)."""
    if sesoi <= 0:
        raise ValueError(f"--equivalence (SESOI) must be > 0, got {sesoi}")
    xa, ya = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    d = xa - ya
    n = int(d.size)
    if n < 2:
        return Tost(n, None, sesoi, alpha, None, None, None, f"{n} common seed(s): no test")
    mean = math.fsum(d.tolist()) / n
    scale = max(float(np.max(np.abs(xa))), float(np.max(np.abs(ya))))
    if _all_equal(d, scale):
        return Tost(n, mean, sesoi, alpha, None, None, None, "all differences equal: no test")
    lower = stats.ttest_1samp(d, -sesoi, alternative="greater").pvalue
    upper = stats.ttest_1samp(d, sesoi, alternative="less").pvalue
    p = float(max(lower, upper))
    half = float(stats.t.ppf(1 - alpha, n - 1) * np.std(d, ddof=1) / math.sqrt(n))
    return Tost(n, mean, sesoi, alpha, p, (mean - half, mean + half), p < alpha)


@dataclass(frozen=True)
class Ancova:
    """d_y = intercept + slope · d_x over n seeds (OLS), with t intervals at `level` (df n − 2)
    and the two-sided p of the intercept (the covariate-adjusted difference)."""

    n: int
    intercept: float | None
    intercept_ci: tuple[float, float] | None
    p: float | None
    slope: float | None
    slope_ci: tuple[float, float] | None
    level: float
    reason: str | None = None


def paired_ancova(
    y_arm: Sequence[float],
    y_base: Sequence[float],
    x_arm: Sequence[float],
    x_base: Sequence[float],
    level: float = 0.95,
) -> Ancova:
    """The paired ANCOVA of arm − baseline in y at matched x (see the module docstring)."""
    dy = np.asarray(y_arm, dtype=np.float64) - np.asarray(y_base, dtype=np.float64)
    dx = np.asarray(x_arm, dtype=np.float64) - np.asarray(x_base, dtype=np.float64)
    n = int(dy.size)
    if n < 3:
        return Ancova(n, None, None, None, None, None, level, f"{n} common seed(s): need 3")
    scale = max(float(np.max(np.abs(x_arm))), float(np.max(np.abs(x_base))))
    if _all_equal(dx, scale):
        return Ancova(
            n, None, None, None, None, None, level, "covariate differences all equal: no slope"
        )
    fit = stats.linregress(dx, dy)
    df = n - 2
    t = float(stats.t.ppf((1 + level) / 2, df))
    a, b = float(fit.intercept), float(fit.slope)
    se_a, se_b = float(fit.intercept_stderr), float(fit.stderr)
    if se_a == 0.0:
        reason = "the covariate explains every difference exactly: no interval"
        return Ancova(n, a, None, None, b, None, level, reason)
    p = float(2 * stats.t.sf(abs(a / se_a), df))
    return Ancova(n, a, (a - t * se_a, a + t * se_a), p, b, (b - t * se_b, b + t * se_b), level)
