"""`numsweep study report` and `study replay`: a study's answer as an analysis Result (Markdown
or JSON through analysis.result.render).

The report exists once the study has stopped (before, its values stay hidden). It gives the
decision and the look that took it; each treatment's estimate (mean paired difference) with its
repeated confidence interval at 1 − 2α (Jennison and Turnbull's RCI: valid at any look whatever
the stopping rule, so also at the look a study stopped at; docs/sequential.md); every look's
numbers; the secondary metrics as paired t-tests (two-sided) on the pairs the study used, their
p-values Holm-adjusted over every (metric, treatment); the trial-hours spent against the fixed
design's; and the registration record.

The replay applies the study file's design to a store already run (the pairs in the order they
ran): where it would have stopped and at what cost (analysis.sequential.command)."""

from __future__ import annotations

import math
from typing import Any

from scipy import stats
from statsmodels.stats.multitest import multipletests

from analysis.result import Column, Result, fmt, fmt_pvalue, fmt_signed, records_table
from analysis.sequential import DesignChoice, Replay, replay
from analysis.sequential.command import ReplaySettings, sequential_replay
from analysis.sequential.trend import UNIT
from orchestrator.study.errors import StudyError
from orchestrator.study.looks import judge
from orchestrator.study.pilot import question
from orchestrator.study.registration import read_registration
from orchestrator.study.sizing import MainDesign
from orchestrator.study.study_file import Study
from records.errors import ResultsError
from records.reader import Store, open_store


def _secondaries(store: Store, study: Study, seeds: int) -> list[dict[str, Any]]:
    """Each secondary metric's paired t-test per treatment on the first `seeds` pairs (run
    order), with Holm-adjusted p-values over all of them."""
    records: list[dict[str, Any]] = []
    one = DesignChoice(seeds=(seeds,), looks=1, spending="none", futility=False)
    for metric in study.spec.secondaries:
        r = replay(store, question(study, metric), one)
        for a in r.arms:
            look = a.looks[-1]
            p = None if not look.sd > 0 else float(2 * stats.t.sf(abs(look.t), look.seeds - 1))
            records.append(
                {"metric": metric.metric, "summary": metric.summary, "arm": a.arm,
                 "reference": a.reference, "seeds": look.seeds, "mean_diff": a.estimate,
                 "sd_diff": look.sd, "p": p, "p_holm": None}
            )  # fmt: skip
    tested = [r for r in records if r["p"] is not None]
    if tested:
        adjusted = multipletests([r["p"] for r in tested], method="holm")[1]
        for r, q in zip(tested, adjusted, strict=True):
            r["p_holm"] = float(q)
    return records


def _arm_records(r: Replay) -> list[dict[str, Any]]:
    return [
        {"arm": a.arm, "reference": a.reference, "decision": a.decision, "look": a.look,
         "seeds": a.seeds, "estimate": a.estimate, "ci_low": a.ci[0], "ci_high": a.ci[1],
         "equivalent": a.equivalent}
        for a in r.arms
    ]  # fmt: skip


def _tables(
    result: Result, r: Replay, secondaries: list[dict[str, Any]], alpha: float, trend: bool
) -> None:
    level = f"{100 * (1 - 2 * alpha):g}%"
    primary = [
        Column("arm", lambda x: x["arm"]),
        Column("decision", lambda x: x["decision"]),
        Column("look", lambda x: str(x["look"])),
        Column("seeds", lambda x: str(x["seeds"])),
        Column("Δ slope/decade" if trend else "Δ mean", lambda x: fmt_signed(x["estimate"])),
        Column(
            f"{level} repeated CI",
            lambda x: f"[{fmt_signed(x['ci_low'])}, {fmt_signed(x['ci_high'])}]",
        ),
    ]
    what = f"treatment − reference, {UNIT}" if trend else "treatment − reference"
    title = f"primary: {what} at the look each stopped"
    result.tables.insert(0, records_table("primary", title, primary, _arm_records(r)))
    if secondaries:
        cols = [
            Column("metric", lambda x: f"{x['metric']} ({x['summary']})"),
            Column("arm", lambda x: x["arm"]),
            Column("seeds", lambda x: str(x["seeds"])),
            Column("Δ mean", lambda x: fmt_signed(x["mean_diff"])),
            Column("sd Δ", lambda x: fmt(x["sd_diff"])),
            Column("p", lambda x: fmt_pvalue(x["p"])),
            Column("p Holm", lambda x: fmt_pvalue(x["p_holm"])),
        ]
        title = "secondary: paired t-tests (two-sided) on the pairs used, Holm over all rows"
        result.tables.append(records_table("secondary", title, cols, secondaries))


def _cost_line(r: Replay, design: MainDesign, pilot_h: float) -> str:
    """Trial-hours of the pairs the decision used, against the design's maximum and the fixed
    design's (both priced at the pilot's cost per seed)."""
    used = "—" if r.hours is None else f"{r.hours:.3g}"
    same = r.fixed_hours is None or r.hours is None or math.isclose(r.fixed_hours, r.hours)
    stored = "" if same else f" ({r.fixed_hours:.3g} h stored)"
    fixed = (
        "—"
        if design.fixed_hours is None
        else f"{design.fixed_seeds} seeds, {design.fixed_hours:.3g} h"
    )
    return (
        f"cost: {used} trial-hours for the {r.seeds} pairs used{stored}, +{pilot_h:.3g} h of "
        f"pilot; the design's maximum {design.max_hours:.3g} h; the fixed design {fixed}"
    )


def study_report(root: str, study: Study) -> Result:
    """The stopped study's report; StudyError while it has not stopped (blind)."""
    record = read_registration(root, study)
    if record is None:
        raise StudyError(
            f"study {study.experiment}: not registered under {root}: nothing to report"
        )
    design = MainDesign.from_json(record["design"])
    try:
        r = judge(root, study, design)
    except ResultsError as err:  # no look's pairs yet
        raise StudyError(f"study {study.experiment}: it has not stopped ({err})") from err
    if not r.stopped:
        raise StudyError(
            f"study {study.experiment}: it has not stopped (look {r.look} of {len(design.seeds)}); "
            "its values stay hidden until it does: `numsweep study status` says where it stands"
        )
    store = open_store(root, [study.experiment])
    base = sequential_replay(store, _settings(study, design.seeds))
    result = Result("study-report", f"Study {study.experiment}: {study.spec.question}")
    result.tables = base.tables
    secondaries = _secondaries(store, study, r.seeds)
    _tables(result, r, secondaries, design.alpha, study.spec.primary.trend is not None)
    pilot_h = float(record["pilot"]["trial_hours"])
    result.header += [
        f"decision: {r.decision} at look {r.look} of {len(design.seeds)} ({r.seeds} paired "
        f"seeds; looks at {', '.join(map(str, design.seeds))}, {design.spending})",
        _cost_line(r, design, pilot_h),
        f"registered {record['registered_at']}, revision {record['code']['git_revision']}"
        + (" (with uncommitted changes)" if record["code"]["dirty"] else "")
        + f", study file hash {record['content_hash'][:12]}",
    ]
    result.notes = base.notes
    result.summary = {
        **r.as_summary(), "stored_hours": r.fixed_hours, "pilot_hours": pilot_h,
        "fixed_seeds": design.fixed_seeds, "fixed_hours": design.fixed_hours,
        "max_hours": design.max_hours, "arms": _arm_records(r), "secondaries": secondaries,
        "registration": record,
    }  # fmt: skip
    return result


def _settings(study: Study, seeds: tuple[int, ...] = ()) -> ReplaySettings:
    spec, d = study.spec, study.spec.design
    return ReplaySettings(
        metric=spec.primary.metric, sesoi=spec.sesoi, value=spec.primary.value,
        reference=spec.reference, seeds=seeds, looks=1 if d.spending == "none" else d.looks,
        alpha=spec.alpha, spending=d.spending, target_power=spec.power,
        no_futility=not d.futility or d.spending == "none", hypotheses=spec.hypotheses,
        direction=spec.primary.direction, trend=spec.primary.trend,
    )  # fmt: skip


def study_replay(store_root: str, study: Study) -> Result:
    """The study file's design applied to a store already run (its main experiment)."""
    d = study.spec.design
    seeds = d.look_seeds or ()
    if not seeds and d.seeds_per_look is not None:
        raise StudyError(
            f"{study.path}: design.max_seeds: `pilot` with design.seeds_per_look: the maximum "
            "comes from a pilot a replay does not have; give design.max_seeds (a multiple of "
            "design.seeds_per_look) to replay"
        )
    result = sequential_replay(open_store(store_root, [study.experiment]), _settings(study, seeds))
    result.title = f"Study {study.experiment} replayed: {study.spec.question}"
    return result
