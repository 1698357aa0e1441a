"""The decision rules of the scaling command, each a function of the numbers it judges (so a
table rebuilt from its records alone says the same): does a metric follow a power law, which
fitted form is preferred, which of CE and EE follows a power law better, and does EE's share of
CE rise or fall with size."""

from __future__ import annotations

from analysis.result import DASH


def follows_power_law(
    a: float,
    ci_method: str | None,
    a_ci: tuple[float, float] | None,
    aicc_constant: float | None,
    aicc_plain: float | None,
) -> str:
    """ "yes" when a's interval excludes 0 (the F-test against a constant rejects it) and the
    power law's AICc beats the constant model's where both are defined; else "no: why"."""
    if ci_method == "exact":
        return "yes (exact)" if a != 0 else "no: constant"
    if a_ci is None:
        return DASH
    if a_ci[0] <= 0.0 <= a_ci[1]:
        return "no: a's CI covers 0"
    if aicc_constant is not None and aicc_plain is not None and aicc_plain - aicc_constant > -2.0:
        return "no: a constant fits as well (ΔAICc > −2)"
    return "yes"


def preferred_form(
    has_plain: bool, has_saturating: bool, no_saturation: bool, f_p: float | None, alpha: float
) -> str | None:
    """ "saturating" when the F-test of its extra parameter E rejects the plain form at the
    level (the plain form is the saturating one with E = 0, so the models are nested and the
    F-test is exact for Gaussian errors), else "plain"; None without both fits. AICc is reported
    next to it; at 5–7 sizes its small-sample penalty (2k(k+1)/(n−k−1)) outweighs any gain of a
    fourth parameter, so it is not the criterion here."""
    if has_plain and no_saturation:
        return "plain"
    if not has_plain or not has_saturating or f_p is None:
        return None
    return "saturating" if f_p < alpha else "plain"


def ce_ee_verdict(
    r2_ce: float | None,
    r2_ee: float | None,
    delta: float | None,
    ci: tuple[float, float] | None,
    how: str | None,
) -> tuple[str | None, str]:
    """(winner, verdict) of CE against EE on the R² difference EE − CE and its interval: the
    metric whose R² is higher with an interval that excludes 0, or by R² alone (saying so) when
    there is no interval."""
    if r2_ce is None or r2_ee is None or delta is None:
        return None, "no verdict: a fit is missing"
    if ci is not None:
        if ci[0] > 0:
            return "EE", "EE (ΔR² CI > 0)"
        if ci[1] < 0:
            return "CE", "CE (ΔR² CI < 0)"
        return None, "no clear difference (ΔR² CI covers 0)"
    winner = "EE" if delta > 0 else "CE" if delta < 0 else None
    return winner, f"{winner or 'neither'} by R² only ({how})"


def trend(low: float, high: float) -> str:
    """A slope's direction from its interval: falls, rises, or no clear trend."""
    return "falls" if high < 0 else "rises" if low > 0 else "no clear trend (CI covers 0)"


def lr_position(best: float | None, tried: list[float]) -> str:
    """Where a size's chosen learning rate lies in the grid it tried: "inside" (a smaller and a
    larger rate were tried and did worse), "lowest" or "highest" (at an edge of the grid: the
    best may lie beyond it), "only one tried" (no grid), or "unknown" (no lr recorded)."""
    grid = sorted(v for v in tried if v is not None)
    if best is None or not grid:
        return "unknown"
    if len(grid) == 1:
        return "only one tried"
    if best <= grid[0]:
        return "lowest"
    if best >= grid[-1]:
        return "highest"
    return "inside"


GATE_SDS = 2.0
"""The sanity gate's separation: adjacent sizes' mean CEs must differ by more than this many
pooled seed standard deviations."""


def step_separated(drop: float, pooled_sd: float | None) -> bool:
    """A step to the next larger size passes the gate when CE falls by more than GATE_SDS pooled
    seed sds: mean_CE(N_i) − mean_CE(N_{i+1}) > GATE_SDS · s_pooled. Without a seed sd (one
    seed per size) no step passes: the separation cannot be shown."""
    return pooled_sd is not None and drop > GATE_SDS * pooled_sd


def smaller_error(low: float | None, high: float | None) -> str:
    """Which metric predicts better from the interval of its error difference EE − CE: "EE"
    when the interval lies below 0, "CE" above, else "no clear difference"."""
    if low is None or high is None:
        return "no interval"
    return "EE" if high < 0 else "CE" if low > 0 else "no clear difference"


def count_matters(r: dict) -> str:
    """Whether an N line's exponent depends on how N is counted: "changes with the count" when,
    for the plain a or the Huber α, the intervals under the non-embedding and the total count
    are disjoint (both fits are of the same trials, so disjoint intervals are a conservative
    sign of a difference); "same within intervals" when they overlap for every form fitted."""
    judged = []
    for k, name in (("a", "plain a"), ("alpha", "Huber α")):
        ends = [
            r.get(f"{k}_{c}_ci_{e}") for c in ("non_embedding", "total") for e in ("low", "high")
        ]
        if None in ends:
            continue
        lo1, hi1, lo2, hi2 = ends
        tol = 1e-9 * max(abs(v) for v in ends)  # exact fits' point intervals, rounded apart
        judged.append((name, hi1 < lo2 - tol or hi2 < lo1 - tol))
    if not judged:
        return "no interval"
    changed = [name for name, apart in judged if apart]
    if changed:
        return f"changes with the count ({', '.join(changed)}: intervals apart)"
    return "same within intervals"
