"""Does a loss scale with the same exponent as the reference? The plain laws L = A·N^−b of a group
g and the reference r (group_lines.py), fitted separately and with b shared, and the test of the
nested pair:

- the difference b_g − b_r with its bootstrap percentile interval (cells, and seeds within
  cells where declared, redrawn within each group, the same draws for both: Cells.draws), and
  the t-interval of the separate fit, b_g − b_r ± t_{P−4}·s·√(1/Sxx_g + 1/Sxx_r),
  s² = (SSE_g + SSE_r) / (P − 4) over the P = P_g + P_r cell means; `low`, `high` are the
  bootstrap's from 10 cells in each group, else the t-interval's (group_lines.interval_method).
  For a paired design (the same seeds at the same sizes under both: paired_trend.paired_design)
  the t-interval is the paired one instead, b_g − b_r ± t_{P−2}·√Var, Var from the pair's
  paired covariance (group_lines.paired_covariance): the slope of the difference line
  ln L_g − ln L_r on ln N over its P − 2 degrees of freedom, where the noise the pairs share
  cancels, and p is that slope's t-test (ci_method "t, paired");
- p (not paired): the F-test of the shared exponent against separate ones,
  F = (SSE_shared − SSE_separate) / (SSE_separate / (P − 4)) on (1, P − 4) degrees of freedom,
  on log L: exact for Gaussian noise in log L of equal variance in both groups; it is the square
  of the t-statistic of the interaction term of ln L ~ group + ln N + group·ln N (statsmodels'
  OLS gives the same p, which the tests check).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import stats

from analysis.scaling.bootstrap import percentile_ci
from analysis.scaling.group_lines import (
    GroupLine,
    Moments,
    interval_method,
    paired_covariance,
    shared_slope,
)
from analysis.seed_stats import t_quantile

TEST_KEYS = (
    *("group", "reference", "sizes", "sizes_ref", "exponent", "exponent_ref", "difference"),
    *("low", "high", "ci_method", "t_low", "t_high", "boot_low", "boot_high", "p"),
    *("shared_exponent", "resamples", "resampling", "remark"),
)
"""The fields of a `scaling_exponent_test` record, each in every record (None where
undefined)."""


def _f_test(g: Moments, r: Moments, dof: int) -> tuple[float | None, float]:
    """(p of the F-test of a shared slope, residual variance s² of the separate fit)."""
    a_g, a_r = g.slope(), r.slope()
    separate = float((g.sse(a_g) + r.sse(a_r))[0])
    a_s = shared_slope(g, r)
    shared = float((g.sse(a_s) + r.sse(a_s))[0])
    s2 = separate / dof
    scale = float((g.syy + r.syy)[0])
    if not separate > 1e-24 * max(scale, 1e-300):
        return None, s2  # both lines exact: no noise to test against
    f = max(shared - separate, 0.0) / s2
    return float(stats.f.sf(f, 1, dof)), s2


def _paired_t(g: GroupLine, r: GroupLine, level: float) -> dict[str, Any]:
    """The paired t-interval of b_g − b_r and its p (module docstring); {} without a degree of
    freedom or without noise."""
    beta, cov, dof = paired_covariance(g, r, shared=False)
    if dof < 1:
        return {}
    grad = np.array([0.0, -1.0, 0.0, 1.0])  # b_g − b_r = a_r − a_g in (c_g, a_g, c_r, a_r)
    diff, se = float(grad @ beta), float(np.sqrt(max(grad @ cov @ grad, 0.0)))
    if not se > 0:
        return {}
    half = t_quantile((1 + level) / 2, dof) * se
    p = float(2 * stats.t.sf(abs(diff) / se, dof))
    return {"p": p, "t_low": diff - half, "t_high": diff + half}


def exponent_test(
    g: GroupLine,
    r: GroupLine,
    *,
    n_boot: int,
    level: float,
    seed: int,
    paired: bool = False,
) -> dict[str, Any]:
    """The record of one group against the reference (TEST_KEYS; module docstring); `paired`:
    g and r are a paired design."""
    out: dict[str, Any] = dict.fromkeys(TEST_KEYS)
    out |= {"group": g.name, "reference": r.name, "sizes": g.sizes, "sizes_ref": r.sizes}
    mg, mr = g.moments(), r.moments()
    b_g, b_r = -float(mg.slope()[0]), -float(mr.slope()[0])
    out |= {"exponent": b_g, "exponent_ref": b_r, "difference": b_g - b_r}
    out["shared_exponent"] = -float(shared_slope(mg, mr)[0])
    dof = g.sizes + r.sizes - 4
    if dof >= 1:
        p, s2 = _f_test(mg, mr, dof)
        half = t_quantile((1 + level) / 2, dof) * np.sqrt(s2 * (1 / mg.sxx[0] + 1 / mr.sxx[0]))
        out |= {"p": p, "t_low": b_g - b_r - float(half), "t_high": b_g - b_r + float(half)}
    else:
        out["remark"] = "no residual degree of freedom (fewer than 5 sizes in both): no test"
    if paired:
        out |= {"p": None, "t_low": None, "t_high": None} | _paired_t(g, r, level)
    bg, ok_g = g.resamples(n_boot, seed)
    br, ok_r = r.resamples(n_boot, seed)
    diffs = np.where(ok_g & ok_r, br.slope() - bg.slope(), np.nan)  # b_g − b_r = a_r − a_g
    ci = percentile_ci(diffs, level)
    used = int(np.isfinite(diffs).sum())
    out |= {"boot_low": ci[0] if ci else None, "boot_high": ci[1] if ci else None}
    method = interval_method(g, r, paired)
    low, high = ("boot_low", "boot_high") if method == "bootstrap" else ("t_low", "t_high")
    out |= {"low": out[low], "high": out[high], "ci_method": method, "resamples": used}
    out["resampling"] = g.cells.how(n_boot, seed)
    if used < n_boot and method == "bootstrap":
        left = f"{n_boot - used} of {n_boot} resamples drew fewer than 3 sizes: left out"
        out["remark"] = "; ".join(filter(None, [out["remark"], left]))
    return out
