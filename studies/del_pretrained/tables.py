"""Study 5's tables, from its results stores alone (`make study-del-pretrained-report`):

    python studies/del_pretrained/tables.py PILOT_RESULTS OUT

Every number in the study's README comes from one of these `python -m analysis` commands, each
written to OUT as Markdown (`<name>.md`) and JSON (`<name>.json`, full precision); OUT/index.txt
lists them. So far the study has pilot A (README, "Pilot A"): its curves of generated and
teacher-forced metrics at each evaluation, what a trial costs here, and the DEL term's size.
"""

from __future__ import annotations

import sys

from analysis.ablation import AblationSettings
from analysis.selection import parse_value
from analysis.study_report import StudyReport

PILOT_A = "del-pretrained-pilot-a"
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
    # The DEL term's size: train/aux is the term before alpha (a mean over digit positions), and
    # train/loss - train/ce = alpha * aux its weight in the loss; each averaged over training
    # (auc: the trapezoidal mean of the reports' window means).
    share = AblationSettings(
        metrics=("train/aux", "train/ce", "train/loss"), values=(parse_value("auc"),)
    )
    report.command("pilot_a_del_term", root, [PILOT_A], share)


def main(pilot_root: str, out_dir: str) -> None:
    report = StudyReport(out_dir)
    pilot_a(report, pilot_root)
    report.close()


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(*sys.argv[1:])
