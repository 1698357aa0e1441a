"""The z-scale design carried to paired t statistics at the handful of seeds studies run (4–20).

A look at n_k paired seeds tests T_k = d̄_k / (s_k/√n_k), the seeds' differences' mean over its
standard error, with df = n_k − 1. The usual carry-over takes each z bound's nominal p at the
look's degrees of freedom, t_k = t⁻¹_{n_k−1}(Φ(c_k)) (Jennison and Turnbull 2000, §11.4). At the
seed counts here that is anticonservative: the looks share their variance estimates, so the
t statistics cross more often together than the z's, and a Pocock design with looks at 3, 6 and 9
pairs rejects a true null 2.79% of the time, not 2.5% (400,000 simulated studies, ±0.03%;
docs/sequential.md). So the efficacy bounds here are computed on the t scale itself:

t_1 = t⁻¹_{n_1−1}(1 − α₁) exactly, and for k ≥ 2, t_k solves
P(T_j < t_j for j < k, T_k ≥ t_k) = α(t_k) − α(t_{k−1}) under the null, each look spending what
the z design's spending function gives it. Under the null the T's do not depend on σ, so the
probability is a property of the seeds per look alone; it is computed by conditional quasi-Monte
Carlo: 2^17 variance paths (each look's group sum and within-group sum of squares, drawn from a
scrambled Sobol sequence through their exact distributions), and for each, the probability that
the k-th group's sum puts T_k over t is exact (Φ of the roots of a quadratic), so that even a look
that spends 10⁻⁶ is estimated from every path. A fixed seed makes the bounds reproducible; the α
they spend is within ±0.5% of α (four seeds' spread, by an independent 2^20-path estimate: tests
and docs/sequential.md), where plain Monte Carlo with as many paths strays ±2%.

Futility bounds are non-binding, so carrying them over cannot raise the type I error: each takes
its nominal p (`nominal_t`), capped at the look's efficacy bound; the last look's is the efficacy
bound (below it, the design's power assumption says the effect is not there).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import optimize, stats
from scipy.stats import qmc

PATHS = 2**17
"""Variance paths behind each calibrated bound (a power of 2: a Sobol sequence's balance)."""
SEED = 20261207
"""The paths' fixed seed: the same seeds per look and spending give the same bounds."""


def nominal_t(z: float, df: int) -> float:
    """The t value with the z bound's nominal one-sided p at `df` degrees of freedom."""
    if math.isinf(z):
        return z
    return float(stats.t.ppf(stats.norm.cdf(z), df))


def check_seeds(seeds: Sequence[int]) -> np.ndarray:
    """Paired seeds per look as an array: increasing, from 2 (a t statistic needs a spread)."""
    n = np.asarray(seeds, dtype=np.int64)
    if n.ndim != 1 or n.size == 0 or n[0] < 2 or np.any(np.diff(n) <= 0):
        raise ValueError(f"seeds per look must increase from at least 2, got {list(seeds)}")
    return n


def t_statistic(total: np.ndarray, squares: np.ndarray, n: int) -> np.ndarray:
    """T of n differences from their sum and sum of squares: mean / (sd / √n)."""
    ss = np.maximum(squares - total**2 / n, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return total * math.sqrt((n - 1) / n) / np.sqrt(ss)


def _cross_probability(t: float, total: np.ndarray, rest: np.ndarray, n: int, m: int) -> np.ndarray:
    """Per path, P(T_n ≥ t) over the new group's sum g ~ N(0, m) (σ = 1), given the earlier
    differences' sum `total` and `rest` = their sum of squares plus the new group's within-group
    sum of squares. With S = total + g, T ≥ t (t > 0) iff S > 0 and
    u·S² − (t²/m)·g² − t²·rest ≥ 0, u = (n − 1 + t²)/n: a quadratic in g whose value at S = 0 is
    negative, so the region is [r₂, ∞) when it opens upwards, else [r₁, r₂] if above −total."""
    u = (n - 1 + t * t) / n
    a2 = u - t * t / m
    a1 = 2 * u * total
    a0 = u * total**2 - t * t * rest
    disc = np.maximum(a1 * a1 - 4 * a2 * a0, 0.0)
    root = np.sqrt(disc)
    sd = math.sqrt(m)
    if abs(a2) < 1e-12:  # linear: a1·g + a0 ≥ 0 with a1 > 0 on the S > 0 side
        return stats.norm.sf((-a0 / a1) / sd)
    # the stable pair of roots of a2·g² + a1·g + a0
    q = -0.5 * (a1 + np.copysign(root, a1))
    with np.errstate(divide="ignore", invalid="ignore"):
        r1, r2 = np.minimum(q / a2, a0 / q), np.maximum(q / a2, a0 / q)
    if a2 > 0:
        return stats.norm.sf(r2 / sd)
    inside = (a1 * a1 - 4 * a2 * a0 > 0) & (r1 > -total)
    return np.where(inside, stats.norm.cdf(r2 / sd) - stats.norm.cdf(r1 / sd), 0.0)


def calibrated_bounds(
    spent: Sequence[float], seeds: Sequence[int], paths: int = PATHS, seed: int = SEED
) -> np.ndarray:
    """Efficacy bounds on the t scale that spend `spent` (α increments per look) at the given
    paired seeds per look (see the module docstring). +∞ where a look spends nothing."""
    n = check_seeds(seeds)
    m = np.diff(n, prepend=0)
    # per look two uniforms per path: the within-group sum of squares and the group's sum
    u = qmc.Sobol(2 * n.size, scramble=True, seed=seed).random(paths)
    total, squares = np.zeros(paths), np.zeros(paths)
    running = np.ones(paths)
    bounds = []
    for k in range(n.size):
        within = stats.chi2.ppf(u[:, 2 * k], m[k] - 1) if m[k] > 1 else np.zeros(paths)
        rest = squares + within
        if spent[k] <= 1e-15:
            t_k = math.inf
        elif k == 0:
            t_k = float(stats.t.isf(spent[0], n[0] - 1))
        else:
            t_k = _solve(spent[k], total, rest, running, int(n[k]), int(m[k]))
        bounds.append(t_k)
        group = stats.norm.ppf(u[:, 2 * k + 1]) * math.sqrt(m[k])
        total, squares = total + group, rest + group**2 / m[k]
        running *= t_statistic(total, squares, int(n[k])) < t_k
    return np.array(bounds)


def _solve(
    spend: float, total: np.ndarray, rest: np.ndarray, running: np.ndarray, n: int, m: int
) -> float:
    """The t at which the running paths cross with probability `spend` (of all paths)."""

    def excess(t: float) -> float:
        return float(np.mean(running * _cross_probability(t, total, rest, n, m))) - spend

    hi = 2.0
    while excess(hi) > 0:
        hi *= 2
        if hi > 1e6:
            return math.inf
    return optimize.brentq(excess, 1e-6, hi, xtol=1e-9)
