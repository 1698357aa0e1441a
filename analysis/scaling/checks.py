"""How well a fitted scaling form describes and predicts its points: AICc (against a constant, or
plain against saturating), the F-test of nested least-squares fits, leave-one-size-out
prediction error, and the extrapolation check (fit without the largest size, predict it).

All on the scale the fits minimise, log |M|, so every form is judged on the same residuals.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Protocol

import numpy as np
from scipy import stats

from analysis.scaling.powerlaw import NotEnoughData, distinct_count


class Fitted(Protocol):
    def predict(self, n: np.ndarray) -> np.ndarray: ...


def aicc(sse: float, n_points: int, n_params: int) -> float | None:
    """Small-sample AIC of a least-squares fit with Gaussian errors: n·ln(SSE/n) + 2k +
    2k(k+1)/(n−k−1), k = n_params + 1 (the error variance counts). None where it is undefined:
    n ≤ k + 1, or an exact fit (SSE = 0, the log is −∞)."""
    k = n_params + 1
    if n_points - k - 1 <= 0 or not sse > 0:
        return None
    return n_points * math.log(sse / n_points) + 2 * k + 2 * k * (k + 1) / (n_points - k - 1)


def nested_f_test(
    sse_small: float, p_small: int, sse_big: float, p_big: int, n: int
) -> float | None:
    """p-value of the F-test that the bigger of two nested least-squares models fits better than
    chance would make it; None without residual degrees of freedom or for an exact big fit."""
    dof = n - p_big
    if dof < 1 or not sse_big > 0:
        return None
    gain = max(sse_small - sse_big, 0.0) / (p_big - p_small)
    return float(stats.f.sf(gain / (sse_big / dof), p_big - p_small, dof))


def canonical(n: np.ndarray, m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The points sorted by N, then M: sums (and so every result) then do not depend on the order
    the store returned the points in, to the last bit."""
    n = np.asarray(n, dtype=np.float64)
    m = np.asarray(m, dtype=np.float64)
    order = np.lexsort((m, n))
    return n[order], m[order]


def _per_size(n: np.ndarray, m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct sizes (ascending) and the mean M at each; (S,) each."""
    sizes = np.unique(n)
    return sizes, np.array([m[n == s].mean() for s in sizes])


def loo_error(
    n: np.ndarray, m: np.ndarray, fit: Callable[[np.ndarray, np.ndarray], Fitted]
) -> float | None:
    """Leave-one-size-out error: for each size, refit without its points and predict its mean M;
    the root mean square of the relative errors M̂/M − 1 over sizes. None when a refit is
    impossible (too few sizes left)."""
    n, m = canonical(n, m)
    sizes, means = _per_size(n, m)
    errors = []
    for s, mean in zip(sizes, means, strict=True):
        keep = n != s
        try:
            model = fit(n[keep], m[keep])
        except NotEnoughData:
            return None
        errors.append(float(model.predict(np.array([s]))[0]) / mean - 1.0)
    return float(np.sqrt(np.mean(np.square(errors))))


def extrapolation_error(
    n: np.ndarray, m: np.ndarray, fit: Callable[[np.ndarray, np.ndarray], Fitted]
) -> float | None:
    """Fit on every size but the largest, predict the largest: the signed relative error
    M̂/M − 1 of its mean M. None when the smaller sizes cannot support the fit."""
    n, m = canonical(n, m)
    if distinct_count(n) < 2:
        return None
    largest = n.max()
    keep = n < largest
    try:
        model = fit(n[keep], m[keep])
    except NotEnoughData:
        return None
    return float(model.predict(np.array([largest]))[0]) / float(m[~keep].mean()) - 1.0
