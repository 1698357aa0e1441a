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

κ's interval is the t-interval of the slope over the S sizes (S − 2 degrees of freedom) with the
E's held at their fitted values, and the reference's loss taken as exact (its noise would
attenuate κ towards 0; across sizes its range is wide, and the attenuation small).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import stats

from analysis.scaling.group_lines import GroupLine
from analysis.scaling.powerlaw import MIN_SIZES
from analysis.scaling.saturating_multipliers import Saturating
from analysis.seed_stats import t_quantile

L2L_KEYS = (
    *("group", "reference", "form", "sizes", "E", "E_ref", "K", "kappa", "low", "high"),
    *("rms", "remark"),
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
        "rms": float(np.sqrt(np.mean(resid * resid))),
    }
    if x.size < loss.size:
        out["remark"] = f"{loss.size - x.size} size(s) at or below a floor left out"
    return out


def loss_to_loss(
    g: GroupLine, r: GroupLine, fits: tuple[Saturating, Saturating] | None, level: float
) -> list[dict[str, Any]]:
    """The plain form's record, and the shifted form's where the saturating fits are made."""
    loss, ref = _common(g, r)
    lead = {"group": g.name, "reference": r.name}
    out = [{**fit_record(loss, ref, (0.0, 0.0), "plain", level), **lead}]
    if fits is not None:
        floors = (fits[0].fit.E, fits[1].fit.E)
        out.append({**fit_record(loss, ref, floors, "shifted", level), **lead})
    return out
