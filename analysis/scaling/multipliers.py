"""How many parameters is a loss worth? The multiplier of a group g against the reference r: the
size N* at which the reference's fitted law reaches the loss g's fit has at its own size n, over
n. Above 1, the reference needs that many times the parameters for the same loss.

Derivation, for the plain laws L_r(N) = A_r·N^−b_r and L_g(N) = A_g·N^−b_g (group_lines.py;
c = ln A): the reference reaches L_g(n) where A_r·N*^−b_r = A_g·n^−b_g, so

    ln N* = (ln A_r − ln A_g + b_g·ln n) / b_r,
    ln m(n) = ln N* − ln n = (c_r − c_g + (b_g − b_r)·ln n) / b_r.

With the exponent shared (b_g = b_r = b) the ln n terms cancel:

    m = e^{(c_r − c_g)/b} = (A_g / A_r)^{−1/b},

one number at every size; with exponents per group m(n) grows with n where b_g > b_r (the loss's
advantage widens with scale) and falls where b_g < b_r.

Intervals (which one a record reports: group_lines.interval_method): the bootstrap's
percentiles, every resample's fits (the same draws as exponent_test.py) giving m at the same n;
and the t-interval of ln m by the delta method from the least-squares covariance of the pair's
fit (group_lines.ols_covariance), with the gradient of ln m in (c_g, a_g, c_r, a_r):
(1/a_r, ln n/a_r, −1/a_r, −h/a_r²), h = c_g + a_g·ln n − c_r; shared, in (c_g, c_r, a):
(1/a, −1/a, −(c_g − c_r)/a²). For a paired design (the same seeds at the same sizes) the
covariance is the paired one (group_lines.paired_covariance, ci_method "t, paired"): per group,
ln m = (ŷ_g(n) − ŷ_r(n))/a_r, and the noise the pairs share cancels in ŷ_g − ŷ_r.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import stats

from analysis.scaling.bootstrap import percentile_ci
from analysis.scaling.group_lines import (
    GroupLine,
    Moments,
    interval_method,
    pair_covariance,
    shared_slope,
)
from analysis.seed_stats import t_quantile

MULTIPLIER_KEYS = (
    *("group", "reference", "exponents", "n", "where", "loss", "n_ref", "multiplier"),
    *("low", "high", "ci_method", "t_low", "t_high", "boot_low", "boot_high", "resamples"),
    "remark",
)
"""The fields of a `scaling_multipliers` record, each in every record."""
PER_GROUP, SHARED = "per group", "shared"
"""The two forms (record field `exponents`)."""


def log_multiplier(
    c_g: np.ndarray, a_g: np.ndarray, c_r: np.ndarray, a_r: np.ndarray, ln_n: np.ndarray
) -> np.ndarray:
    """ln m at ln N `ln_n` (K,) for fits (c, a) of shape (B,) each (a = −b): (B, K); nan where
    the reference's line is flat (it reaches no other loss)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ln_star = (c_g[:, None] + a_g[:, None] * ln_n[None, :] - c_r[:, None]) / a_r[:, None]
    out = ln_star - ln_n[None, :]
    return np.where(np.isfinite(out), out, np.nan)


def _fits(g: Moments, r: Moments, exponents: str) -> tuple[np.ndarray, ...]:
    """(c_g, a_g, c_r, a_r) of each row, the slope per group or shared."""
    if exponents == SHARED:
        a_g = a_r = shared_slope(g, r)
    else:
        a_g, a_r = g.slope(), r.slope()
    return g.intercept(a_g), a_g, r.intercept(a_r), a_r


def delta_t(
    g: GroupLine,
    r: GroupLine,
    exponents: str,
    ln_n: np.ndarray,
    level: float,
    paired: bool = False,
) -> tuple[np.ndarray, np.ndarray] | None:
    """The t-interval of ln m at each ln N (K,) by the delta method (module docstring), the
    pair's covariance paired for a paired design; None without a residual degree of freedom."""
    beta, cov, dof = pair_covariance(g, r, exponents == SHARED, paired)
    if dof < 1:
        return None
    if exponents == SHARED:
        c_g, c_r, a = beta
        f = np.full(ln_n.shape, (c_g - c_r) / a)
        grad = np.tile([1 / a, -1 / a, -(c_g - c_r) / a**2], (ln_n.size, 1))  # (K, 3)
    else:
        c_g, a_g, c_r, a_r = beta
        h = c_g + a_g * ln_n - c_r  # (K,)
        f = h / a_r - ln_n
        one = np.ones_like(ln_n)
        grad = np.stack([one / a_r, ln_n / a_r, -one / a_r, -h / a_r**2], axis=1)  # (K, 4)
    se = np.sqrt(np.maximum(np.einsum("kf,fg,kg->k", grad, cov, grad), 0.0))
    half = t_quantile((1 + level) / 2, dof) * se
    return f - half, f + half


def flat_reference(r: GroupLine, level: float) -> str | None:
    """A remark where the reference's own slope is not told from 0 at `level` (t-test of its
    line): then no N* is determined, whatever the numbers say."""
    if r.sizes < 3:
        return None
    m = r.moments()
    a = float(m.slope()[0])
    se = float(np.sqrt(m.sse(m.slope())[0] / (r.sizes - 2) / m.sxx[0]))
    if se == 0.0 or not np.isfinite(se):
        return None
    p = float(2 * stats.t.sf(abs(a) / se, r.sizes - 2))
    if p < 1 - level:
        return None
    return f"the reference does not change with N (its slope p={p:.2g}): N* is not determined"


def range_remark(
    where: str, n: float, n_star: float | None, g: GroupLine, r: GroupLine
) -> str | None:
    """What to know of a multiplier's place: a planned N beyond the loss's sizes, an N* outside
    the reference's (its fit extrapolated), no N* at all."""
    said = []
    if where == "planned" and not g.cells.n.min() <= n <= g.cells.n.max():
        said.append("beyond the loss's sizes")
    if n_star is None:
        said.append("the reference's fit is flat: no N*")
    elif not r.cells.n.min() <= n_star <= r.cells.n.max():
        said.append("the reference's fit extrapolated to N*")
    return "; ".join(said) or None


def _exp(x: float | None) -> float | None:
    """e^x; None for no number, inf past the float range (an interval without an end)."""
    if x is None or np.isnan(x):
        return None
    with np.errstate(over="ignore"):
        return float(np.exp(x))


def _intervals(
    boot: np.ndarray, t: tuple[np.ndarray, np.ndarray] | None, k: int, method: str, level: float
) -> dict[str, Any]:
    """The bootstrap and t intervals of the multiplier at the k-th size, and the one reported."""
    ci = percentile_ci(boot[:, k], level)
    out = {
        "boot_low": _exp(ci[0]) if ci else None,
        "boot_high": _exp(ci[1]) if ci else None,
        "t_low": _exp(t[0][k]) if t else None,
        "t_high": _exp(t[1][k]) if t else None,
        "resamples": int(np.isfinite(boot[:, k]).sum()),
    }
    low, high = ("boot_low", "boot_high") if method == "bootstrap" else ("t_low", "t_high")
    return out | {"low": out[low], "high": out[high], "ci_method": method}


def multiplier_records(
    g: GroupLine,
    r: GroupLine,
    planned: Sequence[float],
    *,
    n_boot: int,
    level: float,
    seed: int,
    paired: bool = False,
) -> list[dict[str, Any]]:
    """The multiplier at each of g's sizes and at the `planned` sizes with exponents per group,
    and the one multiplier with the exponent shared (`n` None: the same at every N); `paired`:
    g and r are a paired design (its t-intervals take the pairs' shared noise out)."""
    ns = np.concatenate([g.cells.n, np.asarray(planned, dtype=np.float64)])
    where = ["observed"] * g.sizes + ["planned"] * len(planned)
    ln_n = np.log(ns)
    bg, ok_g = g.resamples(n_boot, seed)
    br, ok_r = r.resamples(n_boot, seed)
    ok = ok_g & ok_r
    method = interval_method(g, r, paired)
    flat = flat_reference(r, level)
    out = []
    for exponents in (PER_GROUP, SHARED):
        full = _fits(g.moments(), r.moments(), exponents)
        point = log_multiplier(*full, ln_n)[0]  # (K,)
        boot = np.where(ok[:, None], log_multiplier(*_fits(bg, br, exponents), ln_n), np.nan)
        t = delta_t(g, r, exponents, ln_n, level, paired)
        for k in range(len(ns)) if exponents == PER_GROUP else range(1):
            each = exponents == PER_GROUP
            n_star = _exp(point[k] + ln_n[k])
            record = {
                "group": g.name,
                "reference": r.name,
                "exponents": exponents,
                "n": float(ns[k]) if each else None,
                "where": where[k] if each else "any N",
                "loss": float(np.exp(full[0][0] + full[1][0] * ln_n[k])) if each else None,
                "n_ref": n_star if each else None,
                "multiplier": _exp(point[k]),
                "remark": "; ".join(
                    filter(
                        None,
                        [
                            flat,
                            range_remark(where[k], float(ns[k]), n_star, g, r) if each else None,
                        ],
                    )
                )
                or None,
            }
            out.append(record | _intervals(boot, t, k, method, level))
    return out
