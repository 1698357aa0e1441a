"""CE against its error entropy EE on the same trials: the record of the verdict (R² of both
plain fits, their difference with the bootstrap interval of `bootstrap.r2_difference`, the
prediction errors side by side, CE's preferred form) and the rule's winner."""

from __future__ import annotations

from typing import Any

from analysis.scaling.bootstrap import R2Difference
from analysis.scaling.fits import Fits
from analysis.scaling.rules import ce_ee_verdict


def verdict_record(
    f_ce: Fits, f_ee: Fits, diff: R2Difference | None, level: float
) -> dict[str, Any]:
    """The numbers of one CE-vs-EE verdict and the verdict by `rules.ce_ee_verdict`."""
    r2_ce = f_ce.plain.r2 if f_ce.plain else None
    r2_ee = f_ee.plain.r2 if f_ee.plain else None
    ci = diff.ci if diff is not None else None
    delta = diff.delta if diff is not None else None
    winner, verdict = ce_ee_verdict(r2_ce, r2_ee, delta, ci, diff.how if diff else None)
    s = f_ce.saturating
    return {
        "r2_ce": r2_ce,
        "r2_ee": r2_ee,
        "delta_r2": delta,
        "delta_r2_ci_low": ci[0] if ci else None,
        "delta_r2_ci_high": ci[1] if ci else None,
        "delta_r2_ci_how": diff.how if diff is not None else None,
        "level": level,
        "loo_ce": f_ce.loo_plain,
        "loo_ee": f_ee.loo_plain,
        "extrapolation_ce": f_ce.extrap_plain,
        "extrapolation_ee": f_ee.extrap_plain,
        "extrapolation_ce_saturating": f_ce.extrap_saturating,
        "extrapolation_ee_saturating": f_ee.extrap_saturating,
        "ce_preferred_form": f_ce.preferred,
        "ce_E": s.E if s else None,
        "winner": winner,
        "verdict": verdict,
    }
