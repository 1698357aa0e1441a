"""Group-sequential boundaries on the z scale, by recursive numerical integration.

The statistics of K looks at information fractions t_1 < … < t_K have the canonical joint
distribution (Jennison and Turnbull 2000, ch. 3): Z_k ~ N(θ√t_k, 1), cov(Z_j, Z_k) = √(t_j/t_k)
for j ≤ k, θ the drift at full information (the true effect over its standard error there).
Equivalently the score B_k = Z_k√t_k has independent increments N(θΔt, Δt). The probability of
crossing a boundary at look k having crossed none before is a K-fold integral, computed look by
look: the (sub-)density of Z_k over its continuation region on a Simpson grid, carried to the
next look by the normal transition kernel, and the last step in closed form (Φ). This is the
method of Armitage, McPherson and Rowe (1969) as Jennison and Turnbull (ch. 19) lay it out and
gsDesign and rpact implement it; the tests check it against rpact's published designs and
against scipy.stats.multivariate_normal.cdf on the same joint distribution (Genz's algorithm).

A one-sided test at level α (`efficacy_bounds`): c_k solves P_0(Z_j < c_j for j < k, Z_k ≥ c_k)
= α(t_k) − α(t_{k−1}), α(·) the spending function; futility bounds are ignored while doing so
(they are non-binding: stopping for futility, or not, never raises the type I error).

A non-binding futility rule by β-spending (`futility_bounds`, gsDesign's test.type = 4, rpact's
`bindingFutility = FALSE`): at the drift θ₁ the design is powered for, b_k solves
P_θ₁(b_j < Z_j < c_j for j < k, Z_k ≤ b_k) = β(t_k) − β(t_{k−1}), and θ₁ is the drift at which
the last look's bounds meet (b_K = c_K), so that the power is exactly 1 − β with the futility
rule obeyed. θ₁ / (z_α + z_β) squared is the inflation factor: the maximum information against
the fixed design's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import optimize, stats

from analysis.sequential.spending import SPENDING, Spending

STEP = 0.02
"""Spacing of the Simpson grid on the z scale (errors ~1e-9 in the crossing probabilities)."""
TAIL = 8.0
"""Z_k's density is integrated over its unconditional mean ± 8 (the mass left out is < 1e-15)."""
NO_SPEND = 1e-15
"""A look whose spending increment is below this spends nothing: its bound is +∞."""


@dataclass(frozen=True)
class _Running:
    """The paths still running after a look: Z's grid points on the continuation region, the
    sub-density there times the Simpson weights, and the look's information fraction."""

    z: np.ndarray
    mass: np.ndarray
    t: float


def _simpson(lo: float, hi: float) -> tuple[np.ndarray, np.ndarray]:
    """Points and Simpson weights on [lo, hi]."""
    n = max(2, math.ceil((hi - lo) / STEP))
    n += n % 2
    z = np.linspace(lo, hi, n + 1)
    w = np.ones(n + 1)
    w[1:-1:2], w[2:-1:2] = 4.0, 2.0
    return z, w * (hi - lo) / (3 * n)


def _moments(prev: _Running | None, t: float, theta: float) -> tuple[np.ndarray, float]:
    """Z_k's conditional mean per running path (one value at the first look) and its sd."""
    if prev is None:
        return np.array([theta * math.sqrt(t)]), 1.0
    dt = t - prev.t
    mean = (prev.z * math.sqrt(prev.t) + theta * dt) / math.sqrt(t)
    return mean, math.sqrt(dt / t)


def _weights(prev: _Running | None) -> np.ndarray:
    return np.ones(1) if prev is None else prev.mass


def tail(prev: _Running | None, t: float, theta: float, bound: float, above: bool) -> float:
    """P(running until this look, Z_k ≥ bound) (`above`), or ≤ bound."""
    mean, sd = _moments(prev, t, theta)
    x = (bound - mean) / sd
    p = stats.norm.sf(x) if above else stats.norm.cdf(x)
    return float(np.dot(_weights(prev), p))


def advance(prev: _Running | None, t: float, theta: float, lo: float, hi: float) -> _Running:
    """The paths that continue past the look at fraction t: Z_k in (lo, hi)."""
    centre = theta * math.sqrt(t)
    lo, hi = max(lo, centre - TAIL), min(hi, centre + TAIL)
    if not lo < hi:
        return _Running(np.zeros(0), np.zeros(0), t)
    z, w = _simpson(lo, hi)
    mean, sd = _moments(prev, t, theta)
    # density of Z_k at each grid point: Σ_i mass_i φ((z − mean_i)/sd)/sd   (points × paths)
    density = stats.norm.pdf((z[:, None] - mean[None, :]) / sd) @ _weights(prev) / sd
    return _Running(z, density * w, t)


def _check_fractions(fractions: Sequence[float]) -> np.ndarray:
    t = np.asarray(fractions, dtype=np.float64)
    if t.ndim != 1 or t.size == 0 or not (np.all(t > 0) and np.all(np.diff(t) > 0)):
        raise ValueError(f"information fractions must increase from above 0, got {list(fractions)}")
    return t


def _increments(cumulative: np.ndarray) -> np.ndarray:
    return np.diff(cumulative, prepend=0.0)


def efficacy_bounds(alpha: float, fractions: Sequence[float], spending: Spending) -> np.ndarray:
    """The one-sided efficacy bounds c_1..c_K (z scale) that spend `spending(t, alpha)`."""
    t = _check_fractions(fractions)
    spent = _increments(spending(t, alpha))
    bounds, prev = [], None
    for k, tk in enumerate(t):
        if spent[k] <= NO_SPEND:
            c = math.inf
        else:
            c = optimize.brentq(
                lambda c, p=prev, tk=tk, s=spent[k]: tail(p, tk, 0.0, c, True) - s,
                -12.0,
                40.0,
                xtol=1e-12,
            )
        bounds.append(c)
        prev = advance(prev, tk, 0.0, -math.inf, c)
    return np.array(bounds)


def _futility_at(upper: np.ndarray, t: np.ndarray, spent: np.ndarray, theta: float):
    """Futility bounds spending `spent` (increments of β) at drift θ, and the β the last look
    would need to spend for its bound to reach c_K (b_K is then c_K)."""
    lower, prev = [], None
    for k, tk in enumerate(t):
        if k == len(t) - 1:
            return np.array([*lower, upper[k]]), tail(prev, tk, theta, upper[k], False)
        below_upper = tail(prev, tk, theta, upper[k], False)
        if spent[k] <= NO_SPEND:
            b = -math.inf
        elif below_upper <= spent[k]:
            b = upper[k]  # the spending asks more than is left below c_k: the bounds meet
        else:
            b = optimize.brentq(
                lambda b, p=prev, tk=tk, s=spent[k]: tail(p, tk, theta, b, False) - s,
                -40.0,
                upper[k],
                xtol=1e-12,
            )
        lower.append(b)
        prev = advance(prev, tk, theta, b, upper[k])
    raise AssertionError("unreachable")


def futility_bounds(
    upper: Sequence[float], fractions: Sequence[float], beta: float, spending: Spending
) -> tuple[np.ndarray, float]:
    """Non-binding β-spending futility bounds b_1..b_K (b_K = c_K) and the drift θ₁ at which the
    design with them has power 1 − β."""
    t = _check_fractions(fractions)
    c = np.asarray(upper, dtype=np.float64)
    spent = _increments(spending(t, beta))

    def excess(theta: float) -> float:
        return _futility_at(c, t, spent, theta)[1] - spent[-1]

    theta = optimize.brentq(excess, 1e-3, 40.0, xtol=1e-12)
    return _futility_at(c, t, spent, theta)[0], theta


def crossing_probabilities(
    fractions: Sequence[float],
    upper: Sequence[float],
    lower: Sequence[float] | None,
    theta: float,
) -> tuple[np.ndarray, np.ndarray]:
    """P(stop at look k by crossing the upper bound) and (by the lower bound), each per look, at
    drift θ; `lower` None: no lower bound (a paths that crosses neither at K stops there too)."""
    t = _check_fractions(fractions)
    lo = [-math.inf] * len(t) if lower is None else list(lower)
    up_p, low_p, prev = [], [], None
    for k, tk in enumerate(t):
        up_p.append(tail(prev, tk, theta, upper[k], True))
        low_p.append(tail(prev, tk, theta, lo[k], False) if lo[k] > -math.inf else 0.0)
        prev = advance(prev, tk, theta, lo[k], upper[k])
    return np.array(up_p), np.array(low_p)


def power_drift(
    fractions: Sequence[float], upper: Sequence[float], lower: Sequence[float] | None, power: float
) -> float:
    """The drift at which the design crosses its upper bound with probability `power`."""
    return optimize.brentq(
        lambda th: crossing_probabilities(fractions, upper, lower, th)[0].sum() - power,
        -10.0,
        40.0,
        xtol=1e-12,
    )


@dataclass(frozen=True)
class Design:
    """A one-sided group-sequential design on the z scale: its looks, efficacy bounds, non-binding
    futility bounds, and the drift it is powered for. Each of the two one-sided tests of an
    equivalence (TOST), and a superiority test, uses these bounds (docs/sequential.md)."""

    alpha: float
    """One-sided significance level of each test."""
    spending: str
    """The α-spending function's name (`obrien-fleming`, `pocock`, `none`: fixed, one look)."""
    fractions: tuple[float, ...]
    """Information fractions of the looks (seeds at the look / maximum seeds)."""
    upper: tuple[float, ...]
    """Efficacy bounds on the z scale, one per look (+∞: that look cannot stop for efficacy)."""
    alpha_spent: tuple[float, ...]
    """Cumulative α spent by each look."""
    power: float
    """The power the drift is solved for (1 − β)."""
    drift: float
    """θ₁: E[Z] at full information for which the design has power `power` (with the futility
    rule obeyed, when it has one)."""
    lower: tuple[float, ...] | None = None
    """Non-binding futility bounds on the z scale (the last equals the last efficacy bound), or
    None for a design without a futility rule."""
    beta_spent: tuple[float, ...] | None = None
    """Cumulative β spent by each look (futility rule only)."""

    @property
    def looks(self) -> int:
        return len(self.fractions)

    @property
    def fixed_drift(self) -> float:
        """z_α + z_β: the drift a fixed design needs for the same α and power."""
        return float(stats.norm.isf(self.alpha) + stats.norm.ppf(self.power))

    @property
    def inflation(self) -> float:
        """Maximum information against the fixed design's: (θ₁ / (z_α + z_β))²."""
        return (self.drift / self.fixed_drift) ** 2

    def crossing(self, theta: float) -> tuple[np.ndarray, np.ndarray]:
        """P(efficacy stop) and P(futility stop) per look at drift θ (`crossing_probabilities`)."""
        return crossing_probabilities(self.fractions, self.upper, self.lower, theta)

    def expected_fraction(self, theta: float) -> float:
        """E[information at stopping] / maximum information at drift θ (futility obeyed)."""
        up, low = self.crossing(theta)
        stops = up + low
        stops[-1] = 1.0 - stops[:-1].sum()  # whatever reaches the last look stops there
        return float(np.dot(self.fractions, stops))


def group_sequential(
    alpha: float,
    fractions: Sequence[float],
    spending: str | Spending = "obrien-fleming",
    *,
    power: float = 0.8,
    futility: bool = True,
    beta_spending: Spending | None = None,
) -> Design:
    """The design of `len(fractions)` looks that spends α by `spending` (a name in
    spending.SPENDING, `none` for a fixed design of one look, or a function), with a non-binding
    futility rule spending β = 1 − `power` by `beta_spending` (default: the α-spending function's
    family) when `futility`."""
    t = tuple(float(x) for x in _check_fractions(fractions))
    if not 0 < alpha < 0.5 or not 0 < power < 1:
        raise ValueError(f"need 0 < alpha < 0.5 and 0 < power < 1, got {alpha}, {power}")
    if spending == "none":
        if len(t) != 1:
            raise ValueError(f"spending none is a fixed design: one look, got {len(t)}")
        spend: Spending = _all_at_once
    else:
        spend = SPENDING[spending] if isinstance(spending, str) else spending
    name = spending if isinstance(spending, str) else getattr(spending, "__name__", "custom")
    upper = efficacy_bounds(alpha, t, spend)
    cumulative = tuple(float(x) for x in spend(np.array(t), alpha))
    if not futility:
        drift = power_drift(t, upper, None, power)
        return Design(alpha, name, t, tuple(upper), cumulative, power, drift)
    beta_spend = beta_spending or spend
    lower, drift = futility_bounds(upper, t, 1 - power, beta_spend)
    beta_cum = tuple(float(x) for x in beta_spend(np.array(t), 1 - power))
    return Design(alpha, name, t, tuple(upper), cumulative, power, drift, tuple(lower), beta_cum)


def _all_at_once(t: np.ndarray, total: float) -> np.ndarray:
    """A fixed design's "spending": everything at its one look."""
    return np.where(np.asarray(t) >= 1.0, total, 0.0)


def equal_fractions(looks: int) -> tuple[float, ...]:
    """k/K for k = 1..K: looks equally spaced in information."""
    if looks < 1:
        raise ValueError(f"a design needs at least one look, got {looks}")
    return tuple((k + 1) / looks for k in range(looks))
