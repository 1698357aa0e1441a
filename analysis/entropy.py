"""Digit entropy and digit accuracy over training, per arm and evaluation split: the DEL paper's
comparison of losses that over-sharpen the digit distribution (entropy below mle's) with losses
that over-flatten it (entropy above mle's). Entropy has no "better" direction, so nothing in these
tables is marked best for it; the final-value summary reports the paired difference to mle."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import polars as pl

from analysis.arms import Arms, assign_arms
from analysis.command_start import freeze_lists
from analysis.commands import run, settings_of
from analysis.option_choices import CORRECTION_FAMILIES, CORRECTIONS
from analysis.result import Record, Result, Table, fmt_pm, pivot_rows
from analysis.seed_stats import MeanCI, check_level, mean_ci
from analysis.seed_values import arm_seed_values
from analysis.selection import FINAL
from analysis.settings_flags import STATUS_FLAG, flag
from analysis.sweep_manifest import store_sampled
from records.errors import ResultsError
from records.metric_names import splits
from records.reader import (
    CURVE_STATUSES,
    DEFAULT_STATUSES,
    Store,
    current_trials,
    load_trials,
    metric_names,
    read_latest,
    trial_summary,
)

LEAVES = ("digit_entropy", "digit_acc")


@dataclass(frozen=True)
class EntropySettings:
    """Options of the entropy command (`python -m analysis entropy --help` names each flag)."""

    by: tuple[str, ...] = ("loss",)
    """Configuration columns that key an arm (--by)."""
    pool: tuple[str, ...] = ()
    """Columns that may vary inside an arm (--pool)."""
    block: tuple[str, ...] = ()
    """Columns whose values, with the seed, make an arm's units (--block)."""
    baseline: str = "mle"
    """The loss (or an arm's label) the final values are compared with (--baseline)."""
    split_names: tuple[str, ...] | None = field(default=None, metadata=flag("--split"))
    """Evaluation splits to show (--split); None: every split with digit entropy or accuracy."""
    statuses: tuple[str, ...] | None = field(default=None, metadata=STATUS_FLAG)
    """Trial statuses read (--status); None: running trials join the curves (their steps so far)
    but not the summary of final values (finished trials only)."""
    level: float = 0.95
    """Confidence level of every interval (--level)."""
    correction: str = field(default="holm", metadata=flag(choices=CORRECTIONS))
    """Multiple-comparison correction of the final values' paired tests (--correction)."""
    family: str = field(default="table", metadata=flag(choices=CORRECTION_FAMILIES))
    """What one correction covers (--family): every test of a table, of a metric column, or
    all."""

    def __post_init__(self) -> None:
        freeze_lists(self, ("by", "pool", "block", "split_names", "statuses"))
        check_level(self.level)


def _entropy_splits(available: Sequence[str], split_names: Sequence[str] | None) -> list[str]:
    """The splits to show: `split_names` (each must have digit entropy or accuracy), else every
    split that has one of them."""
    have = set(available)
    found = [s for s in splits(available) if any(f"eval/{s}/{leaf}" in have for leaf in LEAVES)]
    if split_names:
        missing = [s for s in split_names if s not in found]
        if missing:
            raise ResultsError(
                f"unknown split {', '.join(map(repr, missing))}: no eval/<split>/digit_entropy "
                f"or digit_acc for it; available: {', '.join(found) or '(none)'}"
            )
        found = list(split_names)
    return found


def _split_table(split: str, per_step: pl.DataFrame, arms: Arms, level: float) -> Table | None:
    """One split's curves (arm × step: seeds, digit entropy, digit accuracy), None when no arm
    has a value there. A cell is mean ± half-width, with its seed count where fewer than the
    row's (the most of its cells)."""
    names = {leaf: f"eval/{split}/{leaf}" for leaf in LEAVES}
    stats = (
        per_step.filter(pl.col("metric").is_in(list(names.values())))
        .group_by(["arm", "metric", "step"])
        .agg(pl.col("value"))
    )
    ci_of: dict[tuple[str, str, int], MeanCI] = {}
    steps_of: dict[str, set[int]] = {}
    for arm, metric, step, values in stats.iter_rows():
        ci_of[(arm, metric, step)] = mean_ci(values, level)
        steps_of.setdefault(arm, set()).add(step)
    records = [
        {
            "arm": arm,
            "split": split,
            "step": step,
            "metric": name,
            "n": ci.n,
            "mean": ci.mean,
            "ci_low": ci.low,
            "ci_high": ci.high,
        }
        for arm in arms.order
        for step in sorted(steps_of.get(arm, ()))
        for name in names.values()
        if (ci := ci_of.get((arm, name, step))) is not None
    ]
    if not records:
        return None
    seeds: dict[tuple[str, int], int] = {}
    for r in records:
        seeds[(r["arm"], r["step"])] = max(seeds.get((r["arm"], r["step"]), 0), r["n"])

    def text(r: Record) -> str:
        # The record holds the interval's ends; its half width (as shown) is the interval's own.
        shown = fmt_pm(r["mean"], ci_of[(r["arm"], r["metric"], r["step"])].half_width)
        return shown + (f" (n={r['n']})" if r["n"] < seeds[(r["arm"], r["step"])] else "")

    rows, _ = pivot_rows(
        records,
        {(arm, step): [arm, str(step), str(n)] for (arm, step), n in seeds.items()},
        list(names.values()),
        at=lambda r: ((r["arm"], r["step"]), r["metric"]),
        cell=text,
    )
    return Table(
        name=f"entropy_{split}",
        title=f"split {split}: digit entropy and digit accuracy per evaluation step",
        columns=["arm", "step", "seeds", "digit_entropy", "digit_acc"],
        rows=rows,
        data=pl.DataFrame(records, infer_schema_length=None),
    )


def _add_final_values(
    result: Result, store: Store, chosen: Sequence[str], settings: EntropySettings
) -> None:
    """Final values with the paired difference to the baseline: the ablation on these columns."""
    s = settings
    summary = run(
        settings_of("ablation")(
            metrics=tuple(chosen),
            values=(FINAL,),
            by=s.by,
            pool=s.pool,
            block=s.block,
            baseline=s.baseline,
            statuses=s.statuses or DEFAULT_STATUSES,
            level=s.level,
            correction=s.correction,
            family=s.family,
        ),
        store,
    )
    for t in summary.tables:
        t.name = t.name.replace("ablation_", "entropy_final_", 1)
        t.title = "final values, " + t.title
        result.tables.append(t)
    result.notes += [f"final values: {n}" for n in summary.all_notes() if n not in result.notes]


def entropy(store: Store, settings: EntropySettings = EntropySettings()) -> Result:
    """Curves (one table per split: arm × step) and a final-value summary with paired tests
    (`settings.statuses`: see `EntropySettings`)."""
    s = settings
    trials, notes = current_trials(store, s.statuses or CURVE_STATUSES)
    result = Result("entropy", "Digit entropy and digit accuracy over training", notes=notes)
    result.settings = {"level": s.level, "correction": s.correction, "family": s.family}
    result.notes[:0] = store.notes
    result.header.append(f"experiments: {', '.join(store.experiments)}")
    if trials.height == 0:
        return result
    available = metric_names(store)
    found = _entropy_splits(available, s.split_names)
    if not found:
        result.notes.append(
            "no eval/<split>/digit_entropy or eval/<split>/digit_acc metrics written yet: no table"
        )
        return result
    have = set(available)
    chosen = [f"eval/{x}/{leaf}" for x in found for leaf in LEAVES if f"eval/{x}/{leaf}" in have]
    arms = assign_arms(
        trials, s.by, pool=s.pool, block=s.block, baseline=s.baseline, sampled=store_sampled(store)
    )
    result.notes += arms.notes
    latest, counts = read_latest(store, chosen)
    if counts.note():
        result.notes.append(counts.note())
    known = load_trials(store).select("experiment", "trial_id")
    per_step, more = arm_seed_values(latest, arms, known)
    result.notes += more
    result.header.append(trial_summary(trials))
    result.header.append(
        f"cells: mean ± {s.level * 100:g}% CI over seeds at each evaluation step; digit entropy "
        "lower = sharper, higher = flatter digit distribution (neither is marked best)"
    )
    for split in found:
        table = _split_table(split, per_step, arms, s.level)
        if table is not None:
            result.tables.append(table)
    _add_final_values(result, store, chosen, s)
    return result
