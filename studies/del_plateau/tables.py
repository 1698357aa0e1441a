"""Study 3's tables, verdicts and figures, from its results store alone
(`make study-del-plateau-report`):

    python studies/del_plateau/tables.py RESULTS OUT

Every number in the study's README comes from one of these `python -m analysis` commands; each is
written to OUT as Markdown (`<name>.md`) and JSON (`<name>.json`, full precision), and
OUT/index.txt lists the commands. The verdict rules are the pre-registered ones (README,
"Hypotheses"), applied in `verdicts` through analysis/family_rules.py, which names its rule.
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from analysis.ablation import AblationSettings
from analysis.ablation_options import PairedOptions
from analysis.family_rules import Component, FamilyVerdict, all_of, any_of
from analysis.plateau import PlateauSettings
from analysis.power import PowerSettings
from analysis.selection import parse_value, parse_values
from analysis.study_report import StudyReport, finished_trials, paired_record

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


def component(record: dict[str, Any] | None, name: str, p_key: str = "p") -> Component:
    """A family component from an ablation record (no record or no test: p None)."""
    if record is None:
        return Component(name, +1, None, None)
    return Component(name, +1, record.get("mean_diff"), record.get(p_key))


def tost_component(record: dict[str, Any] | None, name: str) -> Component:
    """A TOST as a family component: its claim (|Δ| < SESOI) has no sign, so the estimate is the
    margin left, SESOI − |Δ|, predicted positive; a TOST p < α implies it is."""
    if record is None or record.get("mean_diff") is None:
        return Component(name, +1, None, None)
    return Component(name, +1, SESOI - abs(record["mean_diff"]), record.get("tost_p"))


def verdicts(
    greater: dict[str, Any], less: dict[str, Any], control: dict[str, Any]
) -> dict[str, Any]:
    """The pre-registered verdicts from the three primary ablation JSONs (one-sided `greater`
    with TOST, one-sided `less`, and the control's TOST): README, "Hypotheses"."""
    helps = any_of([component(paired_record(greater, arm, PRIMARY), arm) for arm in DOSES], ALPHA)
    # "against": DEL significantly below MLE (one-sided `less`, Holm over the two doses); the
    # component's prediction is "lower", so a significant `less` test reads "as predicted" there.
    hurts = any_of([_lower(paired_record(less, arm, PRIMARY), arm) for arm in DOSES], ALPHA)
    tost = all_of(
        [tost_component(paired_record(greater, arm, PRIMARY), arm) for arm in DOSES], ALPHA
    )
    per_dose = {arm: _dose(arm, greater, less, helps, hurts, tost) for arm in DOSES}
    if hurts.verdict == "supported":
        h1 = "not supported"
    else:
        h1 = "supported" if helps.verdict == "supported" else "inconclusive"
    h2 = "supported" if tost.verdict == "supported" else "inconclusive"
    ctrl = paired_record(control, CONTROL, PRIMARY)
    h3 = (
        "no test"
        if ctrl is None or ctrl.get("tost_p") is None
        else ("equivalent" if ctrl["tost_p"] < ALPHA else "not shown equivalent")
    )
    return {
        "H1": {"verdict": h1, "helps": _family(helps), "hurts": _family(hurts)},
        "H2": {"verdict": h2, "tost": _family(tost)},
        "H3": {"verdict": h3, "record": ctrl},
        "doses": per_dose,
        "answer": answer(h1, h2, per_dose),
    }


def _lower(record: dict[str, Any] | None, name: str) -> Component:
    """A `less` test as a component predicting "DEL lower" (significant = DEL worse)."""
    return replace(component(record, name), predicted=-1)


def _family(v: FamilyVerdict) -> dict[str, Any]:
    return {"rule": v.rule, "verdict": v.verdict, "results": v.results, "p_used": v.p_used}


def _dose(
    arm: str,
    greater: dict[str, Any],
    less: dict[str, Any],
    helps: FamilyVerdict,
    hurts: FamilyVerdict,
    tost: FamilyVerdict,
) -> dict[str, Any]:
    """One dose's status: better / worse (Holm over the doses, one-sided) / equivalent (TOST)."""
    r = paired_record(greater, arm, PRIMARY) or {}
    better = helps.results.get(arm) == "as predicted"
    worse = hurts.results.get(arm) == "as predicted"
    equivalent = tost.results.get(arm) == "as predicted"
    if worse:
        status = "worse"
    elif better and equivalent:
        status = "better, by less than the SESOI"
    elif better:
        status = "better"
    elif equivalent:
        status = "equivalent"
    else:
        status = "inconclusive"
    return {
        "status": status,
        "mean_diff": r.get("mean_diff"),
        "n_pairs": r.get("n_pairs"),
        "p_greater": r.get("p"),
        "p_greater_holm": helps.p_used.get(arm),
        "p_less_holm": hurts.p_used.get(arm),
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


def write_verdicts(out: Path, v: dict[str, Any]) -> None:
    """OUT/verdicts.json (everything) and OUT/verdicts.md (a line per dose and hypothesis)."""
    (out / "verdicts.json").write_text(json.dumps(v, indent=1, default=str))
    lines = [
        f"Answer: {v['answer']}",
        "",
        f"H1 (DEL beats MLE at some dose; {v['H1']['helps']['rule']}): {v['H1']['verdict']}",
        f"H2 (DEL equivalent to MLE within ±{SESOI} at both doses; {v['H2']['tost']['rule']}): "
        f"{v['H2']['verdict']}",
        f"H3 (the reorder control equivalent to MLE within ±{SESOI}): {v['H3']['verdict']}",
        "",
        "| arm − mle | status | Δ mean | pairs | p (>, raw) | p (>, Holm) | p (<, Holm) | "
        "TOST p | 90% CI |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for arm, d in v["doses"].items():
        cells = [_g(d["mean_diff"], "+.4f"), str(d["n_pairs"]), _g(d["p_greater"], ".3g")]
        cells += [_g(d["p_greater_holm"], ".3g"), _g(d["p_less_holm"], ".3g")]
        cells += [_g(d["tost_p"], ".3g"), "[" + ", ".join(_g(x, "+.4f") for x in d["ci90"]) + "]"]
        lines.append("| " + " | ".join([arm, d["status"], *cells]) + " |")
    (out / "verdicts.md").write_text("\n".join(lines) + "\n")


def _g(x: float | None, spec: str) -> str:
    return "—" if x is None else format(x, spec)


def primary(report: StudyReport, root: str) -> dict[str, Any]:
    """The primary tests (README, "Hypotheses") and their verdicts."""
    base = AblationSettings(metrics=(PRIMARY,), values=(parse_value(SUMMARY),))
    doses = replace(base, only=tuple(DOSES), family="all")
    tost = PairedOptions(alternative="greater", equivalence=SESOI)
    greater = report.command_json("primary", root, [MAIN], replace(doses, options=tost))
    one_sided = PairedOptions(alternative="less")
    less = report.command_json("primary_less", root, [MAIN], replace(doses, options=one_sided))
    control = replace(base, only=(CONTROL,), options=PairedOptions(equivalence=SESOI))
    control = report.command_json("control", root, [MAIN], control)
    v = verdicts(greater, less, control)
    write_verdicts(report.out, v)
    return v


def secondary(report: StudyReport, root: str) -> None:
    """The secondary table (two-sided, Holm over each command's table), the accuracy-adjusted
    digit entropy, the power reached, the plateau check and the DEL term's share of the loss."""
    summary = (parse_value(SUMMARY),)
    curve = AblationSettings(metrics=SECONDARY_CURVE, values=summary, family="all")
    report.command("secondary_curve", root, [MAIN], curve)
    final = AblationSettings(metrics=SECONDARY_FINAL, family="all")
    report.command("secondary_final", root, [MAIN], final)
    adjusted = PairedOptions(adjust_for=PRIMARY)
    entropy = AblationSettings(metrics=("eval/test/digit_entropy",), values=summary)
    report.command("entropy_adjusted", root, [MAIN], replace(entropy, options=adjusted))
    power = PowerSettings(delta=SESOI, metrics=(PRIMARY,), values=summary, one_sided=True)
    report.command("power_reached", root, [MAIN], power)
    report.command("plateau", root, [MAIN], PlateauSettings(metrics=(PRIMARY,), last=3))
    report.command("del_term", root, [MAIN], del_term_share())


def pilot(report: StudyReport, root: str) -> None:
    """The pilot's plateau check and power analysis, as the registration used them."""
    for last in (3, 5):
        plateau = PlateauSettings(metrics=(PRIMARY,), last=last)
        report.command(f"pilot_plateau_last{last}", root, [PILOT], plateau)
    metrics = (PRIMARY, "eval/extra/digit_acc", "gen/mathgen/exact_match")
    values = tuple(parse_values(["final,last:3,last:5,auc,auc:4000-6000"]))
    power = PowerSettings(delta=SESOI, metrics=metrics, values=values, one_sided=True)
    report.command("pilot_power", root, [PILOT], power)
    report.command("pilot_power_holm", root, [PILOT], replace(power, alpha=ALPHA / 2))
    report.command("pilot_del_term", root, [PILOT], del_term_share())


def del_term_share() -> AblationSettings:
    """The DEL term's share of the loss: train/aux, train/loss and train/ce over steps 5000-6000."""
    metrics = ("train/aux", "train/loss", "train/ce")
    return AblationSettings(metrics=metrics, values=(parse_value("auc:5000-6000"),))


def main(pilot_root: str, root: str, out_dir: str) -> None:
    report = StudyReport(out_dir)
    pilot(report, pilot_root)
    done = finished_trials(root, MAIN)
    if done == TRIALS:
        primary(report, root)
        secondary(report, root)
        report.page(root, MAIN, "main")
    else:
        report.note(f"{MAIN}: {done} of {TRIALS} trials finished: no test is read before all are")
    report.close()


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(*sys.argv[1:])
