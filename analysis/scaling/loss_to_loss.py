"""Loss-to-loss fits (Brandfonbrener et al. 2024, "Loss-to-loss prediction"): a group's loss as a
shifted power law of the reference's across sizes,

    L_g − E_g = K·(L_r − E_r)^κ,

fitted by least squares on the logs, ln(L_g − E_g) = ln K + κ·ln(L_r − E_r), over the sizes both
have (each the mean over its seeds, at the same N). Two forms:

- "plain": E_g = E_r = 0. For plain laws L = A·N^−b it is exact, with κ = b_g/b_r and
  K = A_g·A_r^−κ: κ > 1 says the loss falls faster than the reference, in the reference's terms;
- "shifted": E_g, E_r the floors of each group's saturating fit (saturating_multipliers.py, the
  Huber fits the command makes where it fits that form), as the paper shifts by each loss's
  irreducible part.

κ's interval (`ci_method`): for the plain form the t-interval of the slope over the S sizes
(S − 2 degrees of freedom), the reference's loss taken as exact (its noise would attenuate κ
towards 0; across sizes its range is wide, and the attenuation small); for the shifted form,
where both groups have the same sizes, the bootstrap's percentiles: each resample of the
saturating fits (the same cells drawn for both, so a drawn size pairs the two losses) refits
the line with that resample's floors, so the interval carries the floors' uncertainty, which
the t-interval (given where the sizes differ) does not.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import stats

from analysis.scaling.bootstrap import percentile_ci
from analysis.scaling.group_lines import GroupLine
from analysis.scaling.powerlaw import MIN_SIZES, distinct_per_row
from analysis.scaling.saturating_multipliers import Saturating
from analysis.seed_stats import t_quantile

L2L_KEYS = (
    *("group", "reference", "form", "sizes", "E", "E_ref", "K", "kappa", "low", "high"),
    *("ci_method", "resamples", "rms", "remark"),
)
"""The fields of a `scaling_loss_to_loss` record, each in every record."""


def _common(g: GroupLine, r: GroupLine) -> tuple[np.ndarray, np.ndarray]:
    """The cell means of g and r at the sizes both have, (S,) each."""
    common = np.intersect1d(g.cells.n, r.cells.n)
    at_g = np.isin(g.cells.n, common)
    at_r = np.isin(r.cells.n, common)
    return g.cells.means()[at_g], r.cells.means()[at_r]


def fit_record(
    loss: np.ndarray, ref: np.ndarray, floors: tuple[float, float], form: str, level: float
) -> dict[str, Any]:
    """One form's fit of ln(loss − E) on ln(ref − E_ref) (L2L_KEYS but the names)."""
    e_g, e_r = floors
    out: dict[str, Any] = dict.fromkeys(L2L_KEYS)
    out |= {"form": form, "sizes": int(loss.size), "E": e_g, "E_ref": e_r}
    above = (loss > e_g) & (ref > e_r)
    if above.sum() < MIN_SIZES:
        out["remark"] = f"fewer than {MIN_SIZES} sizes above both floors: no fit"
        return out
    x, y = np.log(ref[above] - e_r), np.log(loss[above] - e_g)
    reg = stats.linregress(x, y)
    half = t_quantile((1 + level) / 2, x.size - 2) * reg.stderr
    resid = y - (reg.intercept + reg.slope * x)
    out |= {
        "sizes": int(x.size),
        "K": float(np.exp(reg.intercept)),
        "kappa": float(reg.slope),
        "low": float(reg.slope - half),
        "high": float(reg.slope + half),
        "ci_method": "t",
        "rms": float(np.sqrt(np.mean(resid * resid))),
    }
    if x.size < loss.size:
        out["remark"] = f"{loss.size - x.size} size(s) at or below a floor left out"
    return out


def boot_kappa(fits: tuple[Saturating, Saturating]) -> np.ndarray:
    """κ of every resample of the two saturating fits, (B,), nan where fewer than MIN_SIZES
    distinct drawn sizes lie above both of the resample's floors: least squares of
    ln(L − E^b) on ln(L_ref − E_ref^b) over the drawn cells, row by row."""
    sg, sr = fits
    e_g, e_r = sg.boot[:, :1], sr.boot[:, :1]  # (B, 1)
    with np.errstate(invalid="ignore"):
        keep = (sg.values > e_g) & (sr.values > e_r)  # (B, P); nan floors: False
        y = np.log(np.where(keep, sg.values - e_g, 1.0))
        x = np.log(np.where(keep, sr.values - e_r, 1.0))
    w = keep.astype(np.float64)
    count = w.sum(axis=1)  # (B,)
    sizes = distinct_per_row(np.where(keep, sg.x, np.nan))
    with np.errstate(divide="ignore", invalid="ignore"):
        xm = (w * x).sum(axis=1) / count
        ym = (w * y).sum(axis=1) / count
        xc = x - xm[:, None]
        kappa = (w * xc * (y - ym[:, None])).sum(axis=1) / (w * xc * xc).sum(axis=1)
    return np.where(sizes >= MIN_SIZES, kappa, np.nan)


def loss_to_loss(
    g: GroupLine, r: GroupLine, fits: tuple[Saturating, Saturating] | None, level: float
) -> list[dict[str, Any]]:
    """The plain form's record, and the shifted form's where the saturating fits are made."""
    loss, ref = _common(g, r)
    lead = {"group": g.name, "reference": r.name}
    out = [{**fit_record(loss, ref, (0.0, 0.0), "plain", level), **lead}]
    if fits is None:
        return out
    floors = (fits[0].fit.E, fits[1].fit.E)
    shifted = {**fit_record(loss, ref, floors, "shifted", level), **lead}
    if shifted["kappa"] is not None and np.array_equal(g.cells.n, r.cells.n):
        kappa = boot_kappa(fits)
        ci = percentile_ci(kappa, level)
        shifted |= {"resamples": int(np.isfinite(kappa).sum())}
        if ci is not None:
            shifted |= {"low": ci[0], "high": ci[1], "ci_method": "bootstrap"}
    return [*out, shifted]
