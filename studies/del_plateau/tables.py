"""Study 3's tables, verdicts and figures, from its results stores alone
(`make study-del-plateau-report`):

    python studies/del_plateau/tables.py PILOT_RESULTS RESULTS OUT

Every number in the study's README is in one of these tables, each an analysis command written to
OUT by analysis/study_report.py. The verdict rules are the pre-registered ones (README,
"Hypotheses"), applied in `verdicts` through analysis/family_rules.py, which names its rule.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from analysis.ablation import AblationSettings
from analysis.ablation_options import PairedOptions
from analysis.family_rules import Comparison, FamilyVerdict, compare_arms
from analysis.plateau import PlateauSettings
from analysis.power import PowerSettings
from analysis.selection import parse_value, parse_values
from analysis.study_report import StudyReport, cell, markdown_table, paired_record, run_script

TRIALS = 24
"""The registered main run: 4 arms x 6 seeds. No test is read before all of them finished."""
PILOT = "del-plateau-pilot"
MAIN = "del-plateau-main"
ALPHA = 0.05
"""The pre-registered significance level of every test."""
SESOI = 0.02
"""The smallest effect of interest, in digit accuracy (the equivalence margin of the TOSTs)."""
PRIMARY = "eval/test/digit_acc"
SUMMARY = "last:3"
"""The registered per-trial summary: the mean of the last three evaluations (steps 5600-6000)."""
DOSES = {"del (alpha=0.01)": 0.01, "del (alpha=0.2)": 0.2}
"""The DEL arms (arm label -> alpha)."""
CONTROL = "mle (control=reorder)"
"""The null-perturbation control: MLE with the same initialisation and problems, another order."""
SECONDARY_CURVE = ["eval/extra/digit_acc", "eval/test/ce", "eval/test/digit_entropy"]
"""Secondary teacher-forced metrics, summarised as the primary (last:3)."""
SECONDARY_FINAL = [
    "gen/mathgen/exact_match",
    "gen/mathgen/log_error",
    "gen/mathgen_extra/exact_match",
    "gen/mathgen_extra/log_error",
]
"""Secondary generation metrics (generated once, at the last step: the final value)."""


def verdicts(
    greater: dict[str, Any], less: dict[str, Any], control: dict[str, Any]
) -> dict[str, Any]:
    """The pre-registered verdicts from the three primary ablation JSONs (one-sided `greater`
    with TOST, one-sided `less`, and the control's TOST): README, "Hypotheses". H1 and H2 are
    analysis/family_rules.py's `compare_arms` over the doses (Holm over the two one-sided tests;
    the TOSTs' intersection-union needs no correction)."""
    up = {arm: paired_record(greater, arm, PRIMARY) for arm in DOSES}
    down = {arm: paired_record(less, arm, PRIMARY) for arm in DOSES}
    c = compare_arms(up, down, SESOI, ALPHA)
    per_dose = {arm: _dose(arm, up[arm] or {}, c) for arm in DOSES}
    ctrl = paired_record(control, CONTROL, PRIMARY)
    h3 = (
        "no test"
        if ctrl is None or ctrl.get("tost_p") is None
        else ("equivalent" if ctrl["tost_p"] < ALPHA else "not shown equivalent")
    )
    return {
        "H1": {"verdict": c.superior, "helps": _family(c.helps), "hurts": _family(c.hurts)},
        "H2": {"verdict": c.equivalence, "tost": _family(c.equivalent)},
        "H3": {"verdict": h3, "record": ctrl},
        "doses": per_dose,
        "answer": answer(c.superior, c.equivalence, per_dose),
    }


def _family(v: FamilyVerdict) -> dict[str, Any]:
    return {"rule": v.rule, "verdict": v.verdict, "results": v.results, "p_used": v.p_used}


def _dose(arm: str, r: dict[str, Any], c: Comparison) -> dict[str, Any]:
    """One dose's status (better / worse / equivalent) and the numbers behind it."""
    return {
        "status": c.status(arm),
        "mean_diff": r.get("mean_diff"),
        "n_pairs": r.get("n_pairs"),
        "p_greater": r.get("p"),
        "p_greater_holm": c.helps.p_used.get(arm),
        "p_less_holm": c.hurts.p_used.get(arm),
        "tost_p": r.get("tost_p"),
        "ci90": [r.get("tost_ci_low"), r.get("tost_ci_high")],
    }


def answer(h1: str, h2: str, doses: dict[str, Any]) -> str:
    """The study's one-line answer to "does DEL beat MLE at this scale?"."""
    better = [a for a, d in doses.items() if d["status"].startswith("better")]
    if h1 == "supported":
        return "yes: DEL beats MLE at " + ", ".join(better)
    if h1 == "not supported":
        worse = [a for a, d in doses.items() if d["status"] == "worse"]
        return "no: DEL is worse than MLE at " + ", ".join(worse)
    if h2 == "supported":
        return f"no: DEL is equivalent to MLE within ±{SESOI} at both doses"
    return "undecided: neither a significant difference nor an equivalence at both doses"


def verdict_lines(v: dict[str, Any]) -> list[str]:
    """OUT/verdicts.md: the answer, a line per hypothesis, a row per dose."""
    columns = ["arm − mle", "status", "Δ mean", "pairs", "p (>, raw)", "p (>, Holm)"]
    columns += ["p (<, Holm)", "TOST p", "90% CI"]
    rows = []
    for arm, d in v["doses"].items():
        cells = [cell(d["mean_diff"], "+.4f"), str(d["n_pairs"]), cell(d["p_greater"], ".3g")]
        cells += [cell(d["p_greater_holm"], ".3g"), cell(d["p_less_holm"], ".3g")]
        cells += [cell(d["tost_p"], ".3g")]
        cells += ["[" + ", ".join(cell(x, "+.4f") for x in d["ci90"]) + "]"]
        rows.append([arm, d["status"], *cells])
    return [
        f"Answer: {v['answer']}",
        "",
        f"H1 (DEL beats MLE at some dose; {v['H1']['helps']['rule']}): {v['H1']['verdict']}",
        f"H2 (DEL equivalent to MLE within ±{SESOI} at both doses; {v['H2']['tost']['rule']}): "
        f"{v['H2']['verdict']}",
        f"H3 (the reorder control equivalent to MLE within ±{SESOI}): {v['H3']['verdict']}",
        "",
        *markdown_table(columns, rows, "llrrrrrrl"),
    ]


def del_term_share() -> AblationSettings:
    """The DEL term's share of the loss: train/aux, train/loss and train/ce over steps 5000-6000."""
    metrics = ("train/aux", "train/loss", "train/ce")
    return AblationSettings(metrics=metrics, values=(parse_value("auc:5000-6000"),))


_LAST3 = (parse_value(SUMMARY),)
_PILOT_POWER = PowerSettings(
    delta=SESOI,
    metrics=(PRIMARY, "eval/extra/digit_acc", "gen/mathgen/exact_match"),
    values=tuple(parse_values(["final,last:3,last:5,auc,auc:4000-6000"])),
    one_sided=True,
)
PILOT_TABLES = {
    "pilot_plateau_last3": PlateauSettings(metrics=(PRIMARY,), last=3),
    "pilot_plateau_last5": PlateauSettings(metrics=(PRIMARY,), last=5),
    "pilot_power": _PILOT_POWER,
    "pilot_power_holm": replace(_PILOT_POWER, alpha=ALPHA / 2),
    "pilot_del_term": del_term_share(),
}
"""The pilot's plateau check and power analysis, as the registration used them."""
_DOSES = AblationSettings(metrics=(PRIMARY,), values=_LAST3, only=tuple(DOSES), family="all")
PRIMARY_TABLES = {
    "primary": replace(_DOSES, options=PairedOptions(alternative="greater", equivalence=SESOI)),
    "primary_less": replace(_DOSES, options=PairedOptions(alternative="less")),
    "control": AblationSettings(
        metrics=(PRIMARY,), values=_LAST3, only=(CONTROL,), options=PairedOptions(equivalence=SESOI)
    ),
}
"""The primary tests (README, "Hypotheses"): one-sided `greater` with TOST, one-sided `less`
(Holm over the two doses), and the control's TOST."""
SECONDARY_TABLES = {
    "secondary_curve": AblationSettings(metrics=SECONDARY_CURVE, values=_LAST3, family="all"),
    "secondary_final": AblationSettings(metrics=SECONDARY_FINAL, family="all"),
    "entropy_adjusted": AblationSettings(
        metrics=("eval/test/digit_entropy",),
        values=_LAST3,
        options=PairedOptions(adjust_for=PRIMARY),
    ),
    "power_reached": PowerSettings(delta=SESOI, metrics=(PRIMARY,), values=_LAST3, one_sided=True),
    "plateau": PlateauSettings(metrics=(PRIMARY,), last=3),
    "del_term": del_term_share(),
}
"""The secondary table (two-sided, Holm over each command's table), the accuracy-adjusted digit
entropy, the power reached, the plateau check and the DEL term's share of the loss."""


def main(pilot_root: str, root: str, out_dir: str) -> None:
    with StudyReport(out_dir) as report:
        report.commands(pilot_root, [PILOT], PILOT_TABLES)
        if report.all_finished(root, MAIN, TRIALS):
            report.commands(root, [MAIN], PRIMARY_TABLES)
            v = verdicts(*(report.saved(name) for name in PRIMARY_TABLES))
            report.verdicts(v, verdict_lines(v))
            report.commands(root, [MAIN], SECONDARY_TABLES)
            report.page(root, MAIN, "main")


if __name__ == "__main__":
    run_script(main, __doc__)
