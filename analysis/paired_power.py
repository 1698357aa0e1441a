"""Power of the paired t-test and of the paired equivalence test (TOST) from a pilot's spread of
paired differences, through scipy.stats: the noncentral t for the t-test's power, and for TOST an
exact one-dimensional integral over the sample standard deviation (statsmodels has power for the
t-test, `TTestPower`, but none for a t-based TOST).

Everything is in the metric's units: `effect` is a true mean difference, `sd` the standard
deviation of the per-seed differences, `n` the number of seeds (pairs), df = n − 1.
"""

from __future__ import annotations

import math

from scipy import integrate, optimize, stats

MAX_SEEDS = 1_000_000
"""seeds_needed looks no further than this (None beyond: not reachable in practice)."""


def check_probability(value: float, flag: str) -> float:
    """`value` if it lies in (0, 1), else ValueError naming `flag`."""
    if not (0.0 < value < 1.0) or math.isnan(value):
        raise ValueError(f"{flag} must be in (0, 1), got {value}")
    return value


def sd_interval(sd: float, n: int, level: float = 0.95) -> tuple[float, float]:
    """The chi-square interval of a standard deviation from n values (normal data):
    [sd·√(ν/χ²_{(1+level)/2,ν}), sd·√(ν/χ²_{(1−level)/2,ν})], ν = n − 1."""
    df = n - 1
    lo = sd * math.sqrt(df / stats.chi2.ppf((1 + level) / 2, df))
    hi = sd * math.sqrt(df / stats.chi2.ppf((1 - level) / 2, df))
    return lo, hi


def t_test_power(
    effect: float, sd: float, n: int, alpha: float = 0.05, one_sided: bool = False
) -> float:
    """Power of the paired t-test at level `alpha` with n pairs when the true mean difference is
    `effect`: P(reject) with T ~ noncentral t(n − 1, effect·√n / sd). One-sided: the test in the
    direction of `effect`."""
    df, nc = n - 1, abs(effect) * math.sqrt(n) / sd
    if one_sided:
        return float(stats.nct.sf(stats.t.ppf(1 - alpha, df), df, nc))
    crit = stats.t.ppf(1 - alpha / 2, df)
    return float(stats.nct.sf(crit, df, nc) + stats.nct.cdf(-crit, df, nc))


def tost_power(
    sesoi: float, sd: float, n: int, alpha: float = 0.05, true_diff: float = 0.0
) -> float:
    """Power of the paired TOST (both one-sided t-tests at `alpha` against ±sesoi) with n pairs
    when the true mean difference is `true_diff`.

    TOST rejects iff −Δ + t·s/√n < d̄ < Δ − t·s/√n (t = t_{1−α,n−1}); given the sample sd s,
    d̄ ~ N(θ, σ²/n) independently of s, and √(n − 1)·s/σ ~ chi(n − 1). So, with u = s/σ,
    power = ∫ f(u) · max(0, Φ(√n(Δ − θ)/σ − t·u) − Φ(√n(−Δ − θ)/σ + t·u)) du over
    0 ≤ u ≤ √n·Δ/(σ·t) (beyond it the acceptance interval is empty), f the
    density of s/σ: exact, by quadrature.
    """
    df = n - 1
    t = stats.t.ppf(1 - alpha, df)
    root_n = math.sqrt(n)
    u_max = root_n * sesoi / (sd * t)
    scale = math.sqrt(df)

    def integrand(u: float) -> float:
        # u = s/σ: √ν·u ~ chi(ν), so its density is chi.pdf(√ν·u)·√ν.
        density = stats.chi.pdf(scale * u, df) * scale
        upper = root_n * (sesoi - true_diff) / sd - t * u
        lower = root_n * (-sesoi - true_diff) / sd + t * u
        return density * max(0.0, stats.norm.cdf(upper) - stats.norm.cdf(lower))

    value, _ = integrate.quad(integrand, 0.0, u_max, limit=200)
    return float(min(1.0, max(0.0, value)))


def _smallest_n(power_at, target: float) -> int | None:
    """The smallest n >= 2 with power_at(n) >= target (power grows with n), or None."""
    if power_at(2) >= target:
        return 2
    lo, hi = 2, 4
    while power_at(hi) < target:
        lo, hi = hi, hi * 2
        if hi > MAX_SEEDS:
            return None
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if power_at(mid) < target else (lo, mid)
    return hi


def seeds_needed(
    effect: float, sd: float, alpha: float = 0.05, power: float = 0.8, one_sided: bool = False
) -> int | None:
    """The fewest seeds (pairs) at which the paired t-test detects `effect` with `power`."""
    return _smallest_n(lambda n: t_test_power(effect, sd, n, alpha, one_sided), power)


def seeds_needed_tost(
    sesoi: float, sd: float, alpha: float = 0.05, power: float = 0.8, true_diff: float = 0.0
) -> int | None:
    """The fewest seeds at which TOST shows equivalence within ±sesoi with `power` (None if the
    true difference is not inside the margin: then no number of seeds gets there)."""
    if abs(true_diff) >= sesoi:
        return None
    return _smallest_n(lambda n: tost_power(sesoi, sd, n, alpha, true_diff), power)


def minimal_detectable_effect(
    sd: float, n: int, alpha: float = 0.05, power: float = 0.8, one_sided: bool = False
) -> float:
    """The true difference the paired t-test with n pairs detects with `power` (solved for with
    brentq on the noncentral t power)."""
    hi = sd
    while t_test_power(hi, sd, n, alpha, one_sided) < power:
        hi *= 2
    return float(
        optimize.brentq(
            lambda e: t_test_power(e, sd, n, alpha, one_sided) - power, 0.0, hi, xtol=1e-12 * sd
        )
    )
