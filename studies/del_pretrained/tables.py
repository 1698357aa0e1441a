"""Study 5's tables and verdicts, from its results stores alone
(`make study-del-pretrained-report`):

    python studies/del_pretrained/tables.py PILOT_RESULTS RESULTS OUT

Every number in the study's README is in one of these tables, each an analysis command written to
OUT by analysis/study_report.py: the two pilots' (README, "Pilot A" and "Pilot B"), then, once
all the main run's trials finished, its tests and verdicts (README, "Hypotheses"), secondary
metrics, sanity gates, costs and report page.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from analysis.ablation import AblationSettings
from analysis.ablation_options import PairedOptions
from analysis.family_rules import compare_arms
from analysis.power import PowerSettings
from analysis.selection import parse_value
from analysis.study_report import StudyReport, cell, markdown_table, paired_record, run_script

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


def steps(*evaluated: int) -> tuple:
    """The values at these evaluation steps."""
    return tuple(parse_value(f"step:{s}") for s in evaluated)


PILOT_A_TABLES = {
    "pilot_a_curves": AblationSettings(metrics=CURVES, values=steps(*EVALUATED)),
    "pilot_a_costs": AblationSettings(metrics=COSTS),
    "pilot_a_del_term": DEL_TERM,
}
"""Pilot A: the curves per arm at every evaluation, the costs, the DEL term's share."""
PILOT_B_TABLES = {
    "pilot_b_final": AblationSettings(
        metrics=(PRIMARY, "gen/mathgen/log_error", "eval/test/digit_acc", "eval/test/ce"),
        options=PairedOptions(equivalence=SESOI),
    ),
    "pilot_b_curves": AblationSettings(
        metrics=("eval/test/digit_acc", "eval/test/ce"), values=steps(0, 100, 200)
    ),
    "pilot_b_costs": AblationSettings(metrics=COSTS),
    "pilot_b_power": PowerSettings(
        delta=SESOI, metrics=(PRIMARY,), one_sided=True, budget_hours=BUDGET_HOURS
    ),
}
"""Pilot B: the final metrics per arm with the (uncorrected, exploratory) paired differences,
the costs, and the seeds the primary metric needs for Δ = SESOI and TOST ±SESOI."""
_PRIMARY = AblationSettings(metrics=(PRIMARY,), only=(ARM,), family="all")
PRIMARY_TABLES = {
    "primary": replace(_PRIMARY, options=PairedOptions(alternative="greater", equivalence=SESOI)),
    "primary_less": replace(_PRIMARY, options=PairedOptions(alternative="less")),
}
"""The primary tests (README, "Hypotheses"): one-sided `greater` with its TOST, one-sided
`less`."""
SECONDARY_TABLES = {
    "secondary": AblationSettings(metrics=SECONDARY, family="all"),
    "parsed": PARSED,
    "costs": AblationSettings(metrics=COSTS),
    "del_term": DEL_TERM,
    "power_reached": PowerSettings(delta=SESOI, metrics=(PRIMARY,), one_sided=True),
}
"""The secondary table (two-sided, Holm over it), the parsed-answers gate, the costs, the DEL
term's share of the loss, and the power the main run reached at its own spread."""


def verdicts(greater: dict[str, Any], less: dict[str, Any]) -> dict[str, Any]:
    """The pre-registered verdicts (README, "Hypotheses") from the primary ablation JSONs: the
    one-sided `greater` test with its TOST, and the one-sided `less` test (one arm: no
    correction), by analysis/family_rules.py's `compare_arms`."""
    up = paired_record(greater, ARM, PRIMARY) or {}
    down = paired_record(less, ARM, PRIMARY) or {}
    c = compare_arms({ARM: up}, {ARM: down}, SESOI, ALPHA)
    return {
        "H1": c.superior,
        "H2": c.equivalence,
        "answer": answer(c.better(ARM), c.worse(ARM), c.within(ARM)),
        "mean_diff": up.get("mean_diff"),
        "n_pairs": up.get("n_pairs"),
        "p_greater": up.get("p"),
        "p_less": down.get("p"),
        "tost_p": up.get("tost_p"),
        "ci90": [up.get("tost_ci_low"), up.get("tost_ci_high")],
    }


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


def verdict_lines(v: dict[str, Any]) -> list[str]:
    """OUT/verdicts.md: the answer and the primary tests."""
    cells = [cell(v["mean_diff"], "+.4f"), cell(v["n_pairs"], "d"), cell(v["p_greater"], ".3g")]
    cells += [cell(v["p_less"], ".3g"), cell(v["tost_p"], ".3g")]
    cells.append("[" + ", ".join(cell(x, "+.4f") for x in v["ci90"]) + "]")
    columns = ["del − mle", "Δ mean", "pairs", "p (>)", "p (<)", "TOST p", "90% CI"]
    return [
        f"Answer: {v['answer']}",
        "",
        f"H1 (DEL's generated exact match above MLE's; one-sided paired t, α {ALPHA}): {v['H1']}",
        f"H2 (DEL equivalent to MLE within ±{SESOI}; TOST, α {ALPHA}): {v['H2']}",
        "",
        *markdown_table(columns, [[PRIMARY, *cells]], "lrrrrrl"),
    ]


def main(pilot_root: str, root: str, out_dir: str) -> None:
    with StudyReport(out_dir) as report:
        report.commands(pilot_root, [PILOT_A], PILOT_A_TABLES)
        report.commands(pilot_root, [PILOT_B], PILOT_B_TABLES)
        if report.all_finished(root, MAIN, TRIALS):
            report.commands(root, [MAIN], PRIMARY_TABLES)
            v = verdicts(report.saved("primary"), report.saved("primary_less"))
            report.verdicts(v, verdict_lines(v))
            report.commands(root, [MAIN], SECONDARY_TABLES)
            report.page(root, MAIN, "main")


if __name__ == "__main__":
    run_script(main, __doc__)
