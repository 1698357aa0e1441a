"""Both fitted forms of one set of points with every check — the plain power law, the
saturating form, leave-one-size-out and extrapolation errors, AICc and the nested F-test — and
the records (one dict of numbers per fit) the tables are built from."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from analysis.scaling.checks import (
    aicc,
    canonical,
    extrapolation_error,
    loo_error,
    nested_f_test,
)
from analysis.scaling.powerlaw import NotEnoughData, PowerLawFit, fit_power_law
from analysis.scaling.rules import follows_power_law, preferred_form
from analysis.scaling.saturating import NoSaturation, SaturatingFit, fit_saturating


@dataclass
class Fits:
    """Both forms and their checks for one (group, metric, axis)."""

    n: np.ndarray
    m: np.ndarray
    plain: PowerLawFit | None
    plain_reason: str | None
    saturating: SaturatingFit | None
    saturating_reason: str | None
    loo_plain: float | None
    loo_saturating: float | None
    extrap_plain: float | None
    extrap_saturating: float | None
    aicc_constant: float | None
    aicc_plain: float | None
    aicc_saturating: float | None
    f_p: float | None
    alpha: float
    """1 − level: the F-test's threshold."""
    no_saturation: bool = False
    """The saturating fit ran off (a → 0 or −∞): the points show no irreducible part."""

    @property
    def preferred(self) -> str | None:
        """The preferred form by `rules.preferred_form`."""
        return preferred_form(
            self.plain is not None,
            self.saturating is not None,
            self.no_saturation,
            self.f_p,
            self.alpha,
        )


def _plain_checks(n: np.ndarray, m: np.ndarray, plain: PowerLawFit, level: float) -> dict:
    def refit(nn: np.ndarray, mm: np.ndarray) -> PowerLawFit:
        return fit_power_law(nn, mm, level=level, ci=False)

    return {
        "loo_plain": loo_error(n, m, refit),
        "extrap_plain": extrapolation_error(n, m, refit),
        "aicc_constant": aicc(plain.sst, plain.n_points, 1),
        "aicc_plain": aicc(plain.sse, plain.n_points, 2),
    }


def _saturating_checks(n: np.ndarray, m: np.ndarray, sat: SaturatingFit, level: float) -> dict:
    start = (sat.E, sat.A, sat.a)

    def refit(nn: np.ndarray, mm: np.ndarray) -> SaturatingFit:
        return fit_saturating(nn, mm, level=level, start=start)

    return {
        "loo_saturating": loo_error(n, m, refit),
        "extrap_saturating": extrapolation_error(n, m, refit),
        "aicc_saturating": aicc(sat.sse, sat.n_points, 3),
    }


def fit_both(n: np.ndarray, m: np.ndarray, *, n_boot: int, level: float, seed: int) -> Fits:
    """Plain and saturating fits of one set of points with every check."""
    n, m = canonical(n, m)
    plain = saturating = None
    plain_reason = saturating_reason = None
    try:
        plain = fit_power_law(n, m, n_boot=n_boot, level=level, seed=seed)
    except NotEnoughData as err:
        plain_reason = str(err)
    no_saturation = False
    try:
        saturating = fit_saturating(n, m, level=level)
    except NoSaturation as err:
        saturating_reason, no_saturation = str(err), True
    except NotEnoughData as err:
        saturating_reason = str(err)
    checks: dict[str, float | None] = dict.fromkeys(
        ("loo_plain", "extrap_plain", "aicc_constant", "aicc_plain", "loo_saturating"), None
    )
    checks |= {"extrap_saturating": None, "aicc_saturating": None, "f_p": None}
    if plain is not None:
        checks |= _plain_checks(n, m, plain, level)
    if saturating is not None:
        checks |= _saturating_checks(n, m, saturating, level)
        if plain is not None:
            checks["f_p"] = nested_f_test(plain.sse, 2, saturating.sse, 3, saturating.n_points)
    return Fits(
        n=n,
        m=m,
        plain=plain,
        plain_reason=plain_reason,
        saturating=saturating,
        saturating_reason=saturating_reason,
        alpha=1.0 - level,
        no_saturation=no_saturation,
        **checks,
    )


def _diff(x: float | None, y: float | None) -> float | None:
    return None if x is None or y is None else x - y


def plain_record(fits: Fits) -> dict[str, Any]:
    """The plain power law's numbers and its "power law?" verdict (a bool; the text is
    `rules.follows_power_law` of these numbers)."""
    p = fits.plain
    verdict = (
        follows_power_law(p.a, p.ci_method, p.a_ci, fits.aicc_constant, fits.aicc_plain)
        if p
        else None
    )
    return {
        "a": p.a if p else None,
        "a_ci_low": p.a_ci[0] if p and p.a_ci else None,
        "a_ci_high": p.a_ci[1] if p and p.a_ci else None,
        "a_ci_method": p.ci_method if p else None,
        "a_se": p.a_se if p else None,
        "bootstrap_resamples": p.n_boot if p else None,
        "c": p.c if p else None,
        "r2": p.r2 if p else None,
        "sign": p.sign if p else None,
        "p_slope": p.p_slope if p else None,
        "aicc": fits.aicc_plain,
        "aicc_constant": fits.aicc_constant,
        "loo_error": fits.loo_plain,
        "extrapolation_error": fits.extrap_plain,
        "follows_power_law": verdict.startswith("yes") if verdict else None,
        "no_fit_reason": fits.plain_reason,
    }


def saturating_record(fits: Fits) -> dict[str, Any]:
    """The saturating form's numbers, its checks and the preferred form."""
    s = fits.saturating
    return {
        "E": s.E if s else None,
        "E_ci_low": s.E_ci[0] if s and s.E_ci else None,
        "E_ci_high": s.E_ci[1] if s and s.E_ci else None,
        "A": s.A if s else None,
        "a": s.a if s else None,
        "a_ci_low": s.a_ci[0] if s and s.a_ci else None,
        "a_ci_high": s.a_ci[1] if s and s.a_ci else None,
        "r2": s.r2 if s else None,
        "aicc": fits.aicc_saturating,
        "delta_aicc_vs_plain": _diff(fits.aicc_saturating, fits.aicc_plain),
        "f_test_p": fits.f_p,
        "loo_error": fits.loo_saturating,
        "extrapolation_error": fits.extrap_saturating,
        "preferred": fits.preferred,
        "remark": s.remark if s else fits.saturating_reason,
    }
