"""Study 5's tables and verdicts, from its results stores alone (`make
study-del-pretrained-report`):

    python studies/del_pretrained/tables.py PILOT_RESULTS RESULTS OUT

Every number in the study's README comes from one of these `python -m analysis` commands, each
written to OUT as Markdown (`<name>.md`) and JSON (`<name>.json`, full precision); OUT/index.txt
lists them. The two pilots (README, "Pilot A" and "Pilot B"): pilot A's curves of generated and
teacher-forced metrics at each evaluation, what a trial costs here and the DEL term's size;
pilot B's seed-to-seed spread and the power analysis it feeds. The main run's tests and verdicts
(README, "Hypotheses"), its secondary metrics, sanity gates, costs and report page are read only
once all its trials finished.
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from analysis.ablation import AblationSettings
from analysis.ablation_options import PairedOptions
from analysis.power import PowerSettings
from analysis.selection import parse_value
from analysis.study_report import StudyReport, finished_trials, paired_record

PILOT_A = "del-pretrained-pilot-a"
PILOT_B = "del-pretrained-pilot-b"
SESOI = 0.02
"""The smallest effect of interest, in generated exact match (the TOSTs' equivalence margin)."""
PRIMARY = "gen/mathgen/exact_match"
"""The candidate primary metric: generated exact match on the held-out problems, final value."""
BUDGET_HOURS = 6.0
"""The main run's wall-time budget on this machine (issue 45): a plan over it is redesigned."""
DEL_TERM = AblationSettings(
    metrics=("train/aux", "train/ce", "train/loss"), values=(parse_value("auc"),)
)
"""The DEL term's size: `train/aux` is the term before alpha (a mean over digit positions) and
train/loss - train/ce = alpha * aux its weight in the loss, each averaged over training (auc: the
trapezoidal mean of the reports' window means)."""
MAIN = "del-pretrained-main"
TRIALS = 2 * 9
"""The registered main run: mle and del x 9 seeds (0-8). No test is read before all finished."""
ALPHA = 0.05
"""The pre-registered significance level of every test."""
ARM = "del"
"""The DEL arm's label (alpha 0.01, decay base 1.02, no distance term), against `mle`."""
SECONDARY = (
    "gen/mathgen/log_error",
    "eval/test/digit_acc",
    "eval/test/ce",
    "gen/svamp/exact_match",
    "gen/gsm8k/exact_match",
)
"""Secondary metrics (final values): reported with two-sided tests, Holm over the table."""
PARSED = AblationSettings(metrics=("gen/mathgen/parsed",))
"""The sanity gate that every generated answer holds a number: the share that does, final."""
EVALUATED = (0, 50, 100, 150, 200)
"""Pilot A's evaluation steps (every 50 of 200, generation at each)."""
CURVES = (
    "gen/mathgen/exact_match",
    "gen/mathgen/log_error",
    "gen/mathgen/parsed",
    "eval/test/digit_acc",
    "eval/test/ce",
)
"""Generated exact match (the candidate primary metric), the generated numbers' log error (the
robust distance: one runaway number cannot decide it, as it decides the raw MAE) and how many
answers held a number at all; teacher-forced digit accuracy and CE."""
COSTS = (
    "perf/step_time_s",
    "perf/eval_s",
    "perf/generate_s",
    "perf/peak_mem_mb",
    "perf/startup_s",
    "perf/wall_s",
    "train/tokens_seen",
)
"""A trial's cost: per step, per evaluation (and its generation), memory, start-up, in all."""


def pilot_a(report: StudyReport, root: str) -> None:
    """Pilot A: the curves per arm at every evaluation, the costs, the DEL term's share."""
    steps = tuple(parse_value(f"step:{s}") for s in EVALUATED)
    report.command(
        "pilot_a_curves", root, [PILOT_A], AblationSettings(metrics=CURVES, values=steps)
    )
    report.command("pilot_a_costs", root, [PILOT_A], AblationSettings(metrics=COSTS))
    report.command("pilot_a_del_term", root, [PILOT_A], DEL_TERM)


def pilot_b(report: StudyReport, root: str) -> None:
    """Pilot B: the final metrics per arm with the (uncorrected, exploratory) paired differences,
    the costs, and the seeds the primary metric needs for Δ = SESOI and TOST ±SESOI."""
    metrics = (PRIMARY, "gen/mathgen/log_error", "eval/test/digit_acc", "eval/test/ce")
    final = AblationSettings(metrics=metrics, options=PairedOptions(equivalence=SESOI))
    report.command("pilot_b_final", root, [PILOT_B], final)
    curve = AblationSettings(
        metrics=("eval/test/digit_acc", "eval/test/ce"),
        values=tuple(parse_value(f"step:{s}") for s in (0, 100, 200)),
    )
    report.command("pilot_b_curves", root, [PILOT_B], curve)
    report.command("pilot_b_costs", root, [PILOT_B], AblationSettings(metrics=COSTS))
    power = PowerSettings(
        delta=SESOI, metrics=(PRIMARY,), one_sided=True, budget_hours=BUDGET_HOURS
    )
    report.command("pilot_b_power", root, [PILOT_B], power)


def verdicts(greater: dict[str, Any], less: dict[str, Any]) -> dict[str, Any]:
    """The pre-registered verdicts (README, "Hypotheses") from the primary ablation JSONs: the
    one-sided `greater` test with its TOST, and the one-sided `less` test."""
    up = paired_record(greater, ARM, PRIMARY) or {}
    down = paired_record(less, ARM, PRIMARY) or {}
    better, worse, equivalent = (_below(x) for x in (up.get("p"), down.get("p"), up.get("tost_p")))
    return {
        "H1": "not supported" if worse else ("supported" if better else "inconclusive"),
        "H2": "supported" if equivalent else "inconclusive",
        "answer": answer(better, worse, equivalent),
        "mean_diff": up.get("mean_diff"),
        "n_pairs": up.get("n_pairs"),
        "p_greater": up.get("p"),
        "p_less": down.get("p"),
        "tost_p": up.get("tost_p"),
        "ci90": [up.get("tost_ci_low"), up.get("tost_ci_high")],
    }


def _below(p: float | None) -> bool:
    return p is not None and p < ALPHA


def answer(better: bool, worse: bool, equivalent: bool) -> str:
    """The study's one-line answer to "does DEL help a pretrained LLM fine-tuned on math here?"."""
    margin = f"within ±{SESOI} exact match"
    if worse:
        return "no: DEL's exact match is lower than MLE's" + (
            f", by less than {SESOI}" if equivalent else ""
        )
    if better:
        return "yes: DEL's exact match is higher than MLE's" + (
            f", but by less than {SESOI}" if equivalent else ""
        )
    if equivalent:
        return f"no: DEL is equivalent to MLE {margin}"
    return f"undecided: neither a significant difference nor an equivalence {margin}"


def write_verdicts(out: Path, v: dict[str, Any]) -> None:
    """OUT/verdicts.json (everything) and OUT/verdicts.md (the answer and the primary tests)."""
    (out / "verdicts.json").write_text(json.dumps(v, indent=1, default=str))
    cells = [_g(v["mean_diff"], "+.4f"), _g(v["n_pairs"], "d"), _g(v["p_greater"], ".3g")]
    cells += [_g(v["p_less"], ".3g"), _g(v["tost_p"], ".3g")]
    cells.append("[" + ", ".join(_g(x, "+.4f") for x in v["ci90"]) + "]")
    lines = [
        f"Answer: {v['answer']}",
        "",
        f"H1 (DEL's generated exact match above MLE's; one-sided paired t, α {ALPHA}): {v['H1']}",
        f"H2 (DEL equivalent to MLE within ±{SESOI}; TOST, α {ALPHA}): {v['H2']}",
        "",
        "| del − mle | Δ mean | pairs | p (>) | p (<) | TOST p | 90% CI |",
        "|---|---:|---:|---:|---:|---:|---|",
        "| " + " | ".join([PRIMARY, *cells]) + " |",
    ]
    (out / "verdicts.md").write_text("\n".join(lines) + "\n")


def _g(x: float | None, spec: str) -> str:
    return "—" if x is None else format(x, spec)


def primary(report: StudyReport, root: str) -> dict[str, Any]:
    """The primary tests (README, "Hypotheses") and their verdicts."""
    base = AblationSettings(metrics=(PRIMARY,), only=(ARM,), family="all")
    tost = PairedOptions(alternative="greater", equivalence=SESOI)
    greater = report.command_json("primary", root, [MAIN], replace(base, options=tost))
    less = PairedOptions(alternative="less")
    less = report.command_json("primary_less", root, [MAIN], replace(base, options=less))
    v = verdicts(greater, less)
    write_verdicts(report.out, v)
    return v


def secondary(report: StudyReport, root: str) -> None:
    """The secondary table (two-sided, Holm over it), the parsed-answers gate, the costs, the DEL
    term's share of the loss, and the power the main run reached at its own spread."""
    report.command("secondary", root, [MAIN], AblationSettings(metrics=SECONDARY, family="all"))
    report.command("parsed", root, [MAIN], PARSED)
    report.command("costs", root, [MAIN], AblationSettings(metrics=COSTS))
    report.command("del_term", root, [MAIN], DEL_TERM)
    power = PowerSettings(delta=SESOI, metrics=(PRIMARY,), one_sided=True)
    report.command("power_reached", root, [MAIN], power)


def main(pilot_root: str, root: str, out_dir: str) -> None:
    report = StudyReport(out_dir)
    pilot_a(report, pilot_root)
    pilot_b(report, pilot_root)
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
