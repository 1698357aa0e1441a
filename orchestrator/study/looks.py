"""The main stage, look by look: each look adds its paired seeds (a Tune run of its own under
the main experiment, as `numsweep extend` adds trials), then the sequential replay judges the
store's pairs against the registered boundaries (analysis.sequential.replay, which applies
`evaluate_look` look by look, Holm over several treatments). A look that decides stops the
study; otherwise the next look runs. What each look found is appended to
`<results>/study/<experiment>/looks.json`; `numsweep study status` reads it without the values."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from analysis.sequential import DesignChoice, Replay, replay
from orchestrator.study.launch import Launch, run_trials, runs_left
from orchestrator.study.pilot import question
from orchestrator.study.records_dir import read_json, study_dir, write_json
from orchestrator.study.sizing import MainDesign
from orchestrator.study.stages import look_sweep, main_sweep
from orchestrator.study.study_file import Study
from records.errors import ResultsError
from records.reader import open_store

FILE = "looks.json"


@dataclass(frozen=True)
class LookOutcome:
    """Where the main stage stands after running what it could."""

    replay: Replay | None
    failed: int
    """Trials that failed in the last look run (the study waits for them: rerun to retry)."""


def read_looks(root: str, study: Study) -> list[dict[str, Any]]:
    return read_json(study_dir(root, study.experiment) / FILE) or []


def judge(root: str, study: Study, design: MainDesign) -> Replay:
    """The registered design applied to the main stage's pairs in the store."""
    choice = DesignChoice(
        seeds=design.seeds, looks=len(design.seeds), alpha=design.alpha,
        spending=design.spending, power=design.power, futility=design.futility,
    )  # fmt: skip
    return replay(open_store(root, [study.experiment]), question(study), choice)


def _record(root: str, study: Study, r: Replay) -> None:
    """Append (or replace) the entry of the look `r` reached."""
    looks = [e for e in read_looks(root, study) if e["look"] != r.look]
    looks.append(
        {
            "look": r.look,
            "seeds": r.seeds,
            "hours": r.fixed_hours,
            "stopped": r.stopped,
            "decision": r.decision if r.stopped else None,
            "at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        }
    )
    write_json(study_dir(root, study.experiment) / FILE, sorted(looks, key=lambda e: e["look"]))


def run_main(root: str, study: Study, design: MainDesign, how: Launch) -> LookOutcome:
    """Run and judge looks until one decides or the last is taken; resumes where it stopped."""
    manifest = main_sweep(study, design.seeds[-1])
    r: Replay | None = None
    for k, n in enumerate(design.seeds, start=1):
        runs = runs_left(look_sweep(study, design.seeds, k), root, f"{study.experiment}-look{k}")
        if runs:
            print(
                f"numsweep: study {study.experiment}: look {k} of {len(design.seeds)}: "
                f"running seeds up to {n} paired ({design.look_hours(k):.3g} trial-hours)"
            )
            failed = run_trials(manifest, root, runs, how)
            if failed:
                return LookOutcome(r, failed)
        try:
            r = judge(root, study, design)
        except ResultsError as err:  # not even the first look's pairs: a trial did not finish
            print(f"numsweep: study {study.experiment}: look {k} cannot be judged: {err}")
            return LookOutcome(None, 0)
        # r judges every look the store's pairs reach: k's, or a later one when a resumed study
        # finds more pairs stored; fewer than look k needs: a trial did not finish
        if r.look < k:
            return LookOutcome(r, 0)
        _record(root, study, r)
        print(
            f"numsweep: study {study.experiment}: look {r.look} taken ({r.seeds} paired seeds): "
            + ("stopped" if r.stopped else "no decision, going on")
        )
        if r.stopped:
            break
    return LookOutcome(r, 0)
