"""Does a loss scale with the same exponent as the reference? The plain laws L = A·N^−b of a group
g and the reference r (group_lines.py), fitted separately and with b shared, and the test of the
nested pair:

- the difference b_g − b_r with its bootstrap percentile interval (cells, and seeds within
  cells where declared, redrawn within each group, the same draws for both: Cells.draws), and
  the t-interval of the separate fit, b_g − b_r ± t_{P−4}·s·√(1/Sxx_g + 1/Sxx_r),
  s² = (SSE_g + SSE_r) / (P − 4) over the P = P_g + P_r cell means; `low`, `high` are the
  bootstrap's from 10 cells in each group, else the t-interval's (group_lines.interval_method).
  The t-interval takes the groups as independent: for paired seeds it is wider than it need be,
  and the bootstrap, whose draws keep the pairs, narrower (paired_trend.py is the paired test);
- p: the F-test of the shared exponent against separate ones, F = (SSE_shared − SSE_separate)
  / (SSE_separate / (P − 4)) on (1, P − 4) degrees of freedom, on log L: exact for Gaussian
  noise in log L of equal variance in both groups; it is the square of the t-statistic of the
  interaction term of ln L ~ group + ln N + group·ln N (statsmodels' OLS gives the same p, which
  the tests check).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import stats

from analysis.scaling.bootstrap import percentile_ci
from analysis.scaling.group_lines import GroupLine, Moments, interval_method, shared_slope
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


def exponent_test(
    g: GroupLine, r: GroupLine, *, n_boot: int, level: float, seed: int
) -> dict[str, Any]:
    """The record of one group against the reference (TEST_KEYS; module docstring)."""
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
    bg, ok_g = g.resamples(n_boot, seed)
    br, ok_r = r.resamples(n_boot, seed)
    diffs = np.where(ok_g & ok_r, br.slope() - bg.slope(), np.nan)  # b_g − b_r = a_r − a_g
    ci = percentile_ci(diffs, level)
    used = int(np.isfinite(diffs).sum())
    out |= {"boot_low": ci[0] if ci else None, "boot_high": ci[1] if ci else None}
    method = interval_method(g, r)
    low, high = ("boot_low", "boot_high") if method == "bootstrap" else ("t_low", "t_high")
    out |= {"low": out[low], "high": out[high], "ci_method": method, "resamples": used}
    out["resampling"] = g.cells.how(n_boot, seed)
    if used < n_boot and method == "bootstrap":
        left = f"{n_boot - used} of {n_boot} resamples drew fewer than 3 sizes: left out"
        out["remark"] = "; ".join(filter(None, [out["remark"], left]))
    return out
