"""The plain power law M = e^c · N^a, fitted by least squares on log M = c + a·log N
(`scipy.stats.linregress`), with R², the slope's test against a constant model, and a confidence
interval for the exponent a.

Natural logarithms throughout. The interval for a:
- below MIN_BOOTSTRAP_POINTS points, the OLS t-interval a ± t_{n−2}·se(a), exact for Gaussian
  noise in log M. A bootstrap of 4 or 5 points draws resamples with only two distinct sizes,
  which a line fits exactly, and their standard errors are rounding noise (intervals of ±1e11
  came out of that); at 6 and 8 points it still covers 99% and 98% with intervals 2× and 1.2×
  the t-interval's width (300 simulated sweeps each, one point per size);
- from MIN_BOOTSTRAP_POINTS points on (per-trial points, or many sizes), a studentized
  (bootstrap-t) pairs bootstrap, seeded, whose resamples must hold at least MIN_SIZES distinct
  sizes (see `bootstrap_slope_ci`); it does not assume Gaussian noise.
The points are put in a canonical order (by N, then M) before resampling, so the interval depends
on the points and the seed only, never on the order the store returned them in.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import stats

from analysis.seed_stats import check_level, t_quantile

MIN_SIZES = 3
"""A line through two sizes always fits perfectly, so a fit needs at least three."""
MIN_BOOTSTRAP_POINTS = 10
"""Fewer points than this get the OLS t-interval for a instead of the bootstrap (where the
bootstrap's coverage reaches the nominal level in simulation; see the module docstring)."""

CiMethod = Literal["t", "bootstrap", "exact"]


class NotEnoughData(ValueError):
    """The points cannot support the fit (too few sizes, non-positive values)."""


def distinct_count(values: np.ndarray, rtol: float = 1e-9) -> int:
    """How many distinct values (equal within `rtol` of their magnitude) `values` holds."""
    v = np.sort(np.asarray(values, dtype=np.float64))
    if v.size == 0:
        return 0
    gaps = np.diff(v) > rtol * np.maximum(np.abs(v[1:]), np.abs(v[:-1]))
    return int(1 + np.sum(gaps))


def log_points(n: np.ndarray, m: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """(log N, log |M|, sign of M) in canonical order (by N, then M); NotEnoughData with the
    reason when the points cannot be fitted in log-log space."""
    n = np.asarray(n, dtype=np.float64)
    m = np.asarray(m, dtype=np.float64)
    if n.shape != m.shape or n.ndim != 1:
        raise ValueError(f"n and m must be 1-d of equal length, got {n.shape} and {m.shape}")
    if not np.all(np.isfinite(n)) or np.any(n <= 0):
        raise NotEnoughData("sizes must be finite and > 0")
    if not np.all(np.isfinite(m)):
        raise NotEnoughData("metric values must be finite")
    sizes = distinct_count(n)
    if sizes < MIN_SIZES:
        raise NotEnoughData(f"fewer than {MIN_SIZES} sizes ({sizes}): no fit")
    if np.all(m > 0):
        sign = 1
    elif np.all(m < 0):
        sign = -1
    else:
        raise NotEnoughData("values are not all of one sign (or some are 0): no log-log fit")
    order = np.lexsort((m, n))
    return np.log(n[order]), np.log(sign * m[order]), sign


@dataclass(frozen=True)
class PowerLawFit:
    """log |M| = c + a·log N fitted over `n_points` points at `n_sizes` distinct N.

    `sign` is −1 when every M was negative and |M| was fitted (the fit says so rather than
    dropping the metric); `r2` is None when every log M is equal (no variance to explain);
    `a_ci` is None when it was not asked for. `p_slope` is the two-sided p-value of a = 0 (the
    F-test of the power law against a constant model); `sse` and `sst` are the residual and total
    sums of squares of log |M|.
    """

    a: float
    c: float
    r2: float | None
    n_points: int
    n_sizes: int
    sign: int
    a_se: float
    a_ci: tuple[float, float] | None
    ci_method: CiMethod | None
    n_boot: int
    level: float
    p_slope: float | None
    sse: float
    sst: float

    def predict(self, n: np.ndarray) -> np.ndarray:
        """The fitted M at sizes `n`, with the sign of the data."""
        return self.sign * np.exp(self.c + self.a * np.log(np.asarray(n, dtype=np.float64)))


def _slope_and_se(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row-wise least-squares slope and its standard error for x, y of shape (B, n).

    Returns two arrays of shape (B,); the standard error uses n − 2 degrees of freedom.
    """
    n = x.shape[1]
    xc = x - x.mean(axis=1, keepdims=True)  # (B, n)
    sxx = np.sum(xc * xc, axis=1)  # (B,)
    with np.errstate(divide="ignore", invalid="ignore"):
        slope = np.sum(xc * (y - y.mean(axis=1, keepdims=True)), axis=1) / sxx  # (B,)
        intercept = y.mean(axis=1) - slope * x.mean(axis=1)  # (B,)
        resid = y - intercept[:, None] - slope[:, None] * x  # (B, n)
        se = np.sqrt(np.sum(resid * resid, axis=1) / (n - 2) / sxx)  # (B,)
    return slope, se


def distinct_per_row(x: np.ndarray) -> np.ndarray:
    """Distinct values per row of x (B, n), equal within 1e-9 relative; returns (B,)."""
    s = np.sort(x, axis=1)  # (B, n)
    gaps = np.abs(np.diff(s, axis=1)) > 1e-9 * np.maximum(np.abs(s[:, 1:]), 1.0)  # (B, n-1)
    return 1 + gaps.sum(axis=1)


def bootstrap_slope_ci(
    x: np.ndarray, y: np.ndarray, *, n_boot: int = 2000, level: float = 0.95, seed: int = 0
) -> tuple[tuple[float, float] | None, int]:
    """Studentized (bootstrap-t) pairs-bootstrap interval for the slope of y on x, and the number
    of resamples it used.

    Why studentized: at the few points a scaling sweep has, the plain percentile interval of the
    resampled slopes is too narrow (90–94% coverage at 12–30 points in simulation); pivoting on
    t* = (a* − a) / se* brings it to the nominal level. Resamples with fewer than MIN_SIZES
    distinct x are left out (through two sizes the line is exact and se* is rounding noise), and
    so is any with se* = 0.
    """
    slope, se = _slope_and_se(x[None, :], y[None, :])
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, x.size, size=(n_boot, x.size))  # (B, n)
    xb = x[idx]  # (B, n)
    b_slope, b_se = _slope_and_se(xb, y[idx])  # (B,) each
    ok = (distinct_per_row(xb) >= MIN_SIZES) & np.isfinite(b_se) & (b_se > 0)
    if not np.any(ok):
        return None, 0
    t_star = (b_slope[ok] - slope[0]) / b_se[ok]  # (B_used,)
    q_lo, q_hi = np.quantile(t_star, [(1 - level) / 2, (1 + level) / 2])
    return (float(slope[0] - q_hi * se[0]), float(slope[0] - q_lo * se[0])), int(ok.sum())


def fit_power_law(
    n: np.ndarray,
    m: np.ndarray,
    *,
    n_boot: int = 2000,
    level: float = 0.95,
    seed: int = 0,
    ci: bool = True,
) -> PowerLawFit:
    """Fit log |M| = c + a·log N over points (n[i], m[i]); raises NotEnoughData with the reason.

    `ci=False` skips the interval (leave-one-out refits need only the line).
    """
    check_level(level)
    x, y, sign = log_points(n, m)
    n_sizes = distinct_count(np.asarray(n, dtype=np.float64))
    if ci:
        reg = stats.linregress(x, y)
        a, c = float(reg.slope), float(reg.intercept)
    else:
        # Leave-one-out refits need the line only: the same least squares in closed form,
        # without linregress's per-call checks (hundreds of refits per table).
        slope, _ = _slope_and_se(x[None, :], y[None, :])
        a = float(slope[0])
        c = float(y.mean() - a * x.mean())
    resid = y - (c + a * x)
    sse = float(np.sum(resid * resid))
    sst = float(np.sum((y - y.mean()) ** 2))
    r2 = None if sst == 0.0 else 1.0 - sse / sst
    # The slope's standard error from the residuals: linregress's goes through 1 − r², which
    # keeps only half the digits of a near-perfect fit.
    dof = x.size - 2
    se = math.sqrt(sse / dof / float(np.sum((x - x.mean()) ** 2))) if dof > 0 else math.nan
    exact = not se > 1e-12 * max(abs(a), 1e-300)
    p_slope = None if exact else float(2.0 * stats.t.sf(abs(a) / se, dof))
    a_ci: tuple[float, float] | None = None
    method: CiMethod | None = None
    used = 0
    if ci and exact:
        # A perfect fit: every resample reproduces the same line, the interval is the point.
        a_ci, method = (a, a), "exact"
    elif ci and x.size < MIN_BOOTSTRAP_POINTS:
        half = t_quantile((1 + level) / 2, x.size - 2) * se
        a_ci, method = (a - half, a + half), "t"
    elif ci:
        a_ci, used = bootstrap_slope_ci(x, y, n_boot=n_boot, level=level, seed=seed)
        method = "bootstrap" if a_ci is not None else None
    return PowerLawFit(
        a=a,
        c=c,
        r2=r2,
        n_points=int(x.size),
        n_sizes=n_sizes,
        sign=sign,
        a_se=se,
        a_ci=a_ci,
        ci_method=method,
        n_boot=used,
        level=level,
        p_slope=p_slope,
        sse=sse,
        sst=sst,
    )
