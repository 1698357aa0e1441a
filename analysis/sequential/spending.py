"""Error-spending functions: how much of a test's α (or, for a futility rule, of its β) a
group-sequential design may have spent by information fraction t ∈ [0, 1] (Lan and DeMets 1983).
Each takes the fractions and the total and returns the cumulative amount spent at each; beyond
t = 1 (a study that over-runs its plan) the whole total.

- `obrien_fleming`: 2 − 2Φ(z_{1−total/2} / √t), Lan and DeMets' approximation of O'Brien and
  Fleming's bounds (gsDesign `sfLDOF`, rpact `asOF`): almost nothing early, most at the end.
- `pocock`: total · ln(1 + (e − 1)·t), their approximation of Pocock's constant bounds (gsDesign
  `sfLDPocock`, rpact `asP`): spends early, a larger maximum sample.
- `hwang_shih_decani(γ)` and `power_family(ρ)` (Kim and DeMets): the one-parameter families of
  gsDesign's `sfHSD` and rpact's `asHSD`/`bsHSD` and `asKD`/`bsKD`, for designs built from
  Python; the tests check the boundary solver against rpact's published designs with them.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy import stats

Spending = Callable[[np.ndarray, float], np.ndarray]
"""(information fractions, total) -> cumulative amount spent at each fraction."""


def _clipped(t: np.ndarray) -> np.ndarray:
    return np.clip(np.asarray(t, dtype=np.float64), 0.0, 1.0)


def obrien_fleming(t: np.ndarray, total: float) -> np.ndarray:
    """Lan–DeMets O'Brien–Fleming-type spending: 2 − 2Φ(z_{1−total/2}/√t)."""
    t = _clipped(t)
    z = stats.norm.isf(total / 2)
    with np.errstate(divide="ignore"):
        return np.where(t > 0, 2 * stats.norm.sf(z / np.sqrt(t)), 0.0)


def pocock(t: np.ndarray, total: float) -> np.ndarray:
    """Lan–DeMets Pocock-type spending: total · ln(1 + (e − 1)·t)."""
    return total * np.log1p((math.e - 1) * _clipped(t))


def hwang_shih_decani(gamma: float) -> Spending:
    """Hwang–Shih–DeCani spending with parameter γ: total·(1 − e^{−γt})/(1 − e^{−γ}); γ = 0 is
    linear (total·t)."""

    def spend(t: np.ndarray, total: float) -> np.ndarray:
        t = _clipped(t)
        if gamma == 0:
            return total * t
        return total * (-np.expm1(-gamma * t)) / (-math.expm1(-gamma))

    return spend


def power_family(rho: float) -> Spending:
    """Kim–DeMets power-family spending: total · t^ρ (ρ > 0)."""
    if not rho > 0:
        raise ValueError(f"the power family's ρ must be > 0, got {rho}")

    def spend(t: np.ndarray, total: float) -> np.ndarray:
        return total * _clipped(t) ** rho

    return spend


SPENDING: dict[str, Spending] = {"obrien-fleming": obrien_fleming, "pocock": pocock}
"""The spending functions a study file or `python -m analysis sequential --spending` names;
`none` (a fixed design: one look that spends everything) is not a function but a design."""
SPENDING_NAMES: tuple[str, ...] = (*SPENDING, "none")
