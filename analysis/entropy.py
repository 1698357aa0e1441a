"""Digit entropy and digit accuracy over training, per arm and evaluation split: the DEL paper's
comparison of losses that over-sharpen the digit distribution (entropy below mle's) with losses
that over-flatten it (entropy above mle's). Entropy has no "better" direction, so nothing in these
tables is marked best for it; the final-value summary reports the paired difference to mle."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from analysis.ablation import ablation
from analysis.arm_values import arm_seed_values
from analysis.arms import assign_arms
from analysis.metric_registry import splits
from analysis.seed_stats import check_level, mean_ci
from analysis.selection import FINAL
from analysis.store import (
    CURVE_STATUSES,
    DEFAULT_STATUSES,
    ResultsError,
    Store,
    current_trials,
    load_trials,
    metric_names,
    read_latest,
    trial_summary,
)
from analysis.table import DASH, Result, Table, fmt_pm

LEAVES = ("digit_entropy", "digit_acc")


def entropy(
    store: Store,
    *,
    by: Sequence[str] = ("loss",),
    pool: Sequence[str] = (),
    block: Sequence[str] = (),
    baseline: str = "mle",
    split_names: Sequence[str] | None = None,
    statuses: Sequence[str] | None = None,
    level: float = 0.95,
    correction: str = "holm",
    family: str = "table",
) -> Result:
    """Curves (one table per split: arm × step) and a final-value summary with paired tests.

    `statuses` default: running trials join the curves (their steps so far) but not the summary
    of final values (finished trials only).
    """
    check_level(level)
    trials, notes = current_trials(store, statuses or CURVE_STATUSES)
    result = Result("entropy", "Digit entropy and digit accuracy over training", notes=notes)
    result.settings = {"level": level, "correction": correction, "family": family}
    result.notes[:0] = store.notes
    result.header.append(f"experiments: {', '.join(store.experiments)}")
    if trials.height == 0:
        return result
    available = metric_names(store)
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
    if not found:
        result.notes.append(
            "no eval/<split>/digit_entropy or eval/<split>/digit_acc metrics written yet: no table"
        )
        return result
    chosen = [f"eval/{s}/{leaf}" for s in found for leaf in LEAVES if f"eval/{s}/{leaf}" in have]
    arms = assign_arms(trials, by, pool=pool, block=block, baseline=baseline)
    result.notes += arms.notes
    latest, counts = read_latest(store, chosen)
    if counts.note():
        result.notes.append(counts.note())
    known = load_trials(store).select("experiment", "trial_id")
    per_step, more = arm_seed_values(latest, arms, known)
    result.notes += more
    result.header.append(trial_summary(trials))
    result.header.append(
        f"cells: mean ± {level * 100:g}% CI over seeds at each evaluation step; digit entropy "
        "lower = sharper, higher = flatter digit distribution (neither is marked best)"
    )

    for split in found:
        names = {leaf: f"eval/{split}/{leaf}" for leaf in LEAVES}
        stats = (
            per_step.filter(pl.col("metric").is_in(list(names.values())))
            .group_by(["arm", "metric", "step"])
            .agg(pl.col("value"))
        )
        cell = {}
        steps_of: dict[str, set[int]] = {}
        for arm, metric, step, values in stats.iter_rows():
            cell[(arm, metric, step)] = mean_ci(values, level)
            steps_of.setdefault(arm, set()).add(step)
        rows, records = [], []
        for arm in arms.order:
            for step in sorted(steps_of.get(arm, ())):
                ent = cell.get((arm, names["digit_entropy"], step))
                acc = cell.get((arm, names["digit_acc"], step))
                n = max(c.n for c in (ent, acc) if c is not None)
                row = [arm, str(step), str(n)]
                for ci in (ent, acc):
                    if ci is None:
                        row.append(DASH)
                    else:
                        row.append(
                            fmt_pm(ci.mean, ci.half_width) + (f" (n={ci.n})" if ci.n < n else "")
                        )
                rows.append(row)
                for leaf, ci in (("digit_entropy", ent), ("digit_acc", acc)):
                    if ci is None:
                        continue
                    records.append(
                        {
                            "arm": arm,
                            "split": split,
                            "step": step,
                            "metric": names[leaf],
                            "n": ci.n,
                            "mean": ci.mean,
                            "ci_low": ci.low,
                            "ci_high": ci.high,
                        }
                    )
        if rows:
            result.tables.append(
                Table(
                    name=f"entropy_{split}",
                    title=f"split {split}: digit entropy and digit accuracy per evaluation step",
                    columns=["arm", "step", "seeds", "digit_entropy", "digit_acc"],
                    rows=rows,
                    data=pl.DataFrame(records, infer_schema_length=None),
                )
            )

    # Final values with the paired difference to the baseline: the ablation on these columns.
    summary = ablation(
        store,
        metrics=chosen,
        values=[FINAL],
        by=by,
        pool=pool,
        block=block,
        baseline=baseline,
        statuses=statuses or DEFAULT_STATUSES,
        level=level,
        correction=correction,  # type: ignore[arg-type]
        family=family,
    )
    for t in summary.tables:
        t.name = t.name.replace("ablation_", "entropy_final_", 1)
        t.title = "final values, " + t.title
        result.tables.append(t)
    result.notes += [f"final values: {n}" for n in summary.all_notes() if n not in result.notes]
    return result
