"""Study 4's tables, figures and verdicts, from its results store alone
(`make study-scaling-code-report`):

    python studies/scaling_code/tables.py RESULTS OUT

Every number in the study's README is in one of these tables, each an analysis command written to
OUT by analysis/study_report.py. `gate` is the sanity gate on the grid's and the gate stage's
trials; S1 and S2 read `scaling` (the main run, with the field's robust fits), S3 and S4 their
own tables; OUT/verdicts.md and .json apply the registered rules (README, Hypotheses).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lr_choice import FAMILY

from analysis.ablation import AblationSettings
from analysis.ablation_options import PairedOptions
from analysis.family_rules import interval_rule
from analysis.figures import plot_scaling
from analysis.scaling.settings import ScalingSettings
from analysis.study_report import StudyReport, json_records, judged_table, run_script

EXPERIMENT = "scaling-code-main"
SPLIT = "eval/test"
DECOMPOSITION = ("ce", "error_entropy", "self_alignment", "log_confidence")
ALPHA = 0.05
"""S4's significance level (each component at α: an intersection–union claim needs no
correction)."""
EE_MARGIN = 0.03
"""S4's equivalence margin on EE (nats): "without hurting EE" is |Δ EE| < 0.03, shown by TOST
(README, "Power": a quarter of the family's smallest step in CE between adjacent sizes)."""
EXPONENT_BOUND = 0.01
"""S3's bound ε on the plain exponent a of SA and of log-confidence (M = c·N^a), as registered
(README, "Power": a fifth of the pilot's CE exponent, −0.056)."""
S1_FORM = "huber"
"""S1 is judged on the saturating form fitted by the Huber loss (the field's); plain reported."""


def judged(hypothesis: str, loss: str, verdict: str, numbers: str, primary: bool) -> dict:
    """One verdict row of OUT/verdicts.json."""
    return {
        "hypothesis": hypothesis,
        "loss": loss,
        "verdict": verdict,
        "numbers": numbers,
        "primary": primary,
    }


def s1(prediction: dict[str, Any]) -> str:
    """S1 on one `scaling_prediction` record: supported when the paired interval of the
    leave-one-size-out error difference EE − CE lies below 0 and the extrapolation
    difference's does not lie above 0; not supported when either lies above 0; else
    inconclusive."""
    r = prediction
    loo, ext = (
        (r["loo_diff_ci_low"], r["loo_diff_ci_high"]),
        (
            r["extrap_diff_ci_low"],
            r["extrap_diff_ci_high"],
        ),
    )
    if None in loo or None in ext:
        return "inconclusive"
    if loo[0] > 0 or ext[0] > 0:
        return "not supported"
    if loo[1] < 0 and ext[0] <= 0:
        return "supported"
    return "inconclusive"


def s2(trend: dict[str, Any]) -> str:
    """S2 on one `scaling_ee_share_trend` record: the slope of EE/CE per decade of N; supported
    if its interval lies below 0, not supported if above, inconclusive if it covers 0."""
    return interval_rule(trend["ci_low"], trend["ci_high"], predicted=-1)


def s3(power: list[dict[str, Any]]) -> str:
    """S3 on the `scaling_power` records of SA and log-confidence (90% intervals): supported
    when both exponents' intervals lie within ±EXPONENT_BOUND; not supported when either lies
    wholly outside it (|a| > ε shown); inconclusive otherwise (or without both fits)."""
    found = {r["metric"].rsplit("/", 1)[1]: r for r in power}
    if set(found) != {"self_alignment", "log_confidence"}:
        return "inconclusive"
    bands = [(r["a_ci_low"], r["a_ci_high"]) for r in found.values()]
    if any(low is None or high is None for low, high in bands):
        return "inconclusive"
    e = EXPONENT_BOUND
    if any(low > e or high < -e for low, high in bands):
        return "not supported"
    if all(-e < low and high < e for low, high in bands):
        return "supported"
    return "inconclusive"


def s4(ablation: list[dict[str, Any]]) -> str:
    """S4 on `ablation` records (compensated − mle): supported when log-confidence is lower
    (paired t, p < α) and EE is equivalent to mle's (TOST at ±EE_MARGIN, p < α); not supported
    when EE or log-confidence is higher (p < α); inconclusive otherwise."""
    rows = {
        r["metric"].rsplit("/", 1)[1]: r
        for r in ablation
        if r["arm"] == "compensated" and r.get("p") is not None
    }
    lc, ee = rows.get("log_confidence"), rows.get("error_entropy")
    if lc is None or ee is None:
        return "inconclusive"

    def higher(r: dict[str, Any]) -> bool:
        return r["p"] < ALPHA and r["mean_diff"] > 0

    if higher(ee) or higher(lc):
        return "not supported"
    lc_lower = lc["p"] < ALPHA and lc["mean_diff"] < 0
    ee_same = ee.get("tost_p") is not None and ee["tost_p"] < ALPHA
    return "supported" if lc_lower and ee_same else "inconclusive"


def verdicts(out: Path) -> list[dict[str, Any]]:
    """S1–S4 per loss (primary: mle; S4 compares the two) from the tables in OUT."""
    scaling = out / "scaling.json"
    found = []
    for r in json_records(scaling, "scaling_prediction"):
        numbers = (
            f"{r['form']}: ΔLOO EE − CE {_ci(r, 'loo_diff')}; "
            f"Δ|extrap.| EE − CE {_ci(r, 'extrap_diff')}"
        )
        primary = r["loss"] == "mle" and r["form"] == S1_FORM
        found.append(judged("S1", f"{r['loss']} ({r['form']})", s1(r), numbers, primary))
    for r in json_records(scaling, "scaling_ee_share_trend"):
        if r.get("axis", "N") == "N":
            numbers = f"slope {r['slope_per_decade']:+.4f} per decade [{_ci(r, None)}]"
            found.append(judged("S2", r["loss"], s2(r), numbers, r["loss"] == "mle"))
    power = json_records(out / "S3.json", "scaling_power")
    for loss in sorted({r["loss"] for r in power}):
        mine = [r for r in power if r["loss"] == loss and r["metric"].startswith(SPLIT)]
        numbers = "; ".join(
            f"{r['metric'].rsplit('/', 1)[1]}: a {r['a']:+.4f} 90% [{_ci(r, 'a')}]" for r in mine
        )
        found.append(judged("S3", loss, s3(mine), numbers, loss == "mle"))
    ablation = json_records(out / "S4.json", "ablation_test")
    numbers = "; ".join(
        f"{r['metric'].rsplit('/', 1)[1]}: Δ {r['mean_diff']:+.4g} (p {r['p']:.3g}"
        + (f", TOST ±{EE_MARGIN} p {r['tost_p']:.3g}" if r.get("tost_p") is not None else "")
        + f", {r['n_pairs']} pairs)"
        for r in ablation
        if r["arm"] == "compensated" and r.get("p") is not None
    )
    found.append(judged("S4", "compensated − mle", s4(ablation), numbers, True))
    return sorted(found, key=lambda v: (v["hypothesis"], not v["primary"], v["loss"]))


def _ci(r: dict[str, Any], key: str | None) -> str:
    """'low, high' of a record's interval (`key`_ci_low/high, or ci_low/high for None)."""
    low = r["ci_low" if key is None else f"{key}_ci_low"]
    high = r["ci_high" if key is None else f"{key}_ci_high"]
    if low is None or high is None:
        return "no interval"
    return f"{low:+.4f}, {high:+.4f}"


def draw_fits(report: StudyReport, result: Any) -> None:
    """OUT/fits_<loss>.png: log-log panels of CE, EE, SA and log-confidence against N with the
    plain power law, the saturating form by least squares and by Huber loss (the main run)."""
    metrics = [f"{SPLIT}/{m}" for m in DECOMPOSITION]
    entries = [e for e in result.figure_data["scaling"] if e["axis"] == "N"]
    for loss in sorted({e["group"] for e in entries}):
        mine = [e for e in entries if e["group"] == loss]
        path = report.out / f"fits_{loss.replace('=', '_').replace(' ', '_')}.png"
        plot_scaling(mine, metrics, path, f"study 4, {loss}, held-out ({SPLIT})")
        report.note(f"{path.name}: the scaling run's fits, {loss}")


def grid_experiments(root: str) -> str:
    """The grid's and the gate stage's experiments in the store (every one but the main run)."""
    found = sorted(p.name for p in Path(root, "experiments").iterdir() if p.is_dir())
    return ",".join(e for e in found if e != EXPERIMENT)


METRICS = tuple(f"{SPLIT}/{m}" for m in DECOMPOSITION)
TABLES = {
    "S3": ScalingSettings(
        metrics=(f"{SPLIT}/self_alignment", f"{SPLIT}/log_confidence"), level=0.90, seed=0
    ),
    "S4": AblationSettings(
        metrics=(f"{SPLIT}/log_confidence", f"{SPLIT}/error_entropy"),
        block=("model",),
        options=PairedOptions(equivalence=EE_MARGIN),
    ),
    "per_size": AblationSettings(metrics=METRICS),
}
"""After the main run's robust fits (`scaling`, with its figures): S3's plain fits of SA and
log-confidence at the 90% level of its equivalence bound, S4's paired tests with a TOST, and
each size's values."""


def main(root: str, out_dir: str) -> None:
    with StudyReport(out_dir) as report:
        gate = ScalingSettings(
            metrics=(f"{SPLIT}/ce",), pool_experiments=True, models=FAMILY, gate_only=True
        )
        report.command("gate", root, [grid_experiments(root)], gate)
        robust = ScalingSettings(metrics=METRICS, robust=True, n_boot_fit=200, n_boot=2000, seed=0)
        draw_fits(report, report.command("scaling", root, [EXPERIMENT], robust))
        report.commands(root, [EXPERIMENT], TABLES)
        report.page(root, EXPERIMENT, "report")
        found = verdicts(report.out)
        made_by = "studies/scaling_code/tables.py (S1-S4 by the registered rules)"
        report.verdicts(found, judged_table(found, ("hypothesis", "loss")), made_by)


if __name__ == "__main__":
    run_script(main, __doc__)
