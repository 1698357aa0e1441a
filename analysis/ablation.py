"""The ablation table: one row per arm (loss, or any configuration column), one column per
held-out metric and value kind, cells = mean ± 95% t-interval over seeds, the best of each column
marked, and a paired t-test of each arm against the baseline loss (mle) on the seeds both ran."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import polars as pl

from analysis.arms import Arms, assign_arms, baseline_arm, plain_value
from analysis.metric_names import default_held_out, resolve
from analysis.metric_registry import direction
from analysis.selection import BEST, FINAL, ValueSpec, select_values
from analysis.store import (
    DEFAULT_STATUSES,
    Store,
    current_trials,
    load_trials,
    metric_names,
    read_latest,
    trial_summary,
)
from analysis.table import DASH, Result, Table, fmt_p, fmt_pm, fmt_signed
from analysis.tstats import MeanCI, PairedTest, mean_ci, paired_t_test

SeedValues = dict[str, float]
"""seed_key -> value (the mean over trials of that arm and seed, normally exactly one)."""


def arm_seed_values(
    values: pl.DataFrame, arms: Arms, known: pl.DataFrame | None = None
) -> tuple[pl.DataFrame, list[str]]:
    """Per (arm, seed, metric [, step]) the value, averaged over repeated trials of one seed.

    `values` has experiment, trial_id, metric, value and optionally step; values of trials that
    are not in `arms` are dropped. `known` (experiment, trial_id of every trial in trials/, any
    status) lets the notes mention metrics of trials the trials table does not list yet.
    Non-finite values are left out (and counted in the notes).
    """
    notes = []
    joined = values.join(arms.members, on=["experiment", "trial_id"], how="inner")
    if known is not None:
        orphans = values.join(known, on=["experiment", "trial_id"], how="anti")
        if orphans.height:
            n = orphans.select(pl.struct("experiment", "trial_id").n_unique()).item()
            notes.append(f"{n} trial(s) have metrics but no row in trials/ yet: left out")
    bad = joined.filter(~pl.col("value").is_finite())
    if bad.height:
        notes.append(
            f"{bad.height} non-finite value(s) (diverged trials?) left out of: "
            + ", ".join(sorted(set(bad["metric"].to_list())))
        )
    keys = ["arm", "seed_key", "metric"] + (["step"] if "step" in values.columns else [])
    grouped = (
        joined.filter(pl.col("value").is_finite())
        .group_by(keys)
        .agg(pl.col("value").mean(), pl.len().alias("n_trials"))
    )
    repeated = grouped.filter(pl.col("n_trials") > 1)
    if repeated.height:
        notes.append(
            "some seeds were run by more than one trial of the same arm: their values are averaged "
            "per seed before the interval is formed"
        )
    return grouped.drop("n_trials"), notes


def _column_label(metric: str, spec: ValueSpec, n_specs: int) -> str:
    return f"{metric} ({spec.label})" if n_specs > 1 else metric


def _best_rows(cells: list[MeanCI | None], metric: str) -> set[int]:
    want = direction(metric)
    means = [(i, c.mean) for i, c in enumerate(cells) if c is not None]
    if want is None or len(means) < 2:
        return set()
    target = max(m for _, m in means) if want == "max" else min(m for _, m in means)
    best = {i for i, m in means if m == target}
    # When every row ties (say exact match 0 everywhere early on) nothing stands out.
    return set() if len(best) == len(means) else best


def ablation(
    store: Store,
    *,
    metrics: Sequence[str] | None = None,
    values: Sequence[ValueSpec] = (FINAL, BEST),
    by: Sequence[str] = ("loss",),
    baseline: str = "mle",
    statuses: Sequence[str] = DEFAULT_STATUSES,
    level: float = 0.95,
) -> Result:
    """Build the ablation result (a main table and, with several seeds, a paired-test table)."""
    if not values:
        raise ValueError("ablation needs at least one value kind")
    title = "Ablation"
    trials, notes = current_trials(store, statuses)
    result = Result("ablation", title, notes=[*store.notes, *notes])
    result.header.append(f"experiments: {', '.join(store.experiments)}")
    if trials.height == 0:
        return result
    available = metric_names(store)
    chosen = resolve(metrics, available) if metrics else default_held_out(available)
    if not chosen:
        result.notes.append(
            "no held-out metrics (eval/<split>/... or gen/...) written yet: no table "
            "(pick others with --metric)"
        )
        return result
    arms = assign_arms(trials, by, baseline=baseline)
    result.notes += arms.notes
    known = load_trials(store).select("experiment", "trial_id")
    latest, counts = read_latest(store, chosen)
    if counts.note():
        result.notes.append(counts.note())

    # Columns: every chosen metric under every value kind, except `best` of metrics that have no
    # better direction (digit entropy): those are shown for the other kinds only.
    columns: list[tuple[str, ValueSpec]] = []
    undirected = []
    for metric in chosen:
        for spec in values:
            if spec.kind == "best" and direction(metric) is None:
                undirected.append(metric)
                continue
            columns.append((metric, spec))
    if undirected:
        result.notes.append(
            f"no 'best' for {', '.join(sorted(set(undirected)))}: no direction is better "
            "(see analysis/metric_registry.py)"
        )

    per: dict[tuple[str, str, ValueSpec], SeedValues] = defaultdict(dict)
    for spec in values:
        picked = select_values(latest, spec)
        if spec.kind == "step":
            have = picked.select(pl.struct("experiment", "trial_id").n_unique()).item()
            total = latest.select(pl.struct("experiment", "trial_id").n_unique()).item()
            if have < total:
                result.notes.append(
                    f"{total - have} of {total} trial(s) report nothing at step {spec.step}"
                )
        seed_values, more = arm_seed_values(picked, arms, known)
        result.notes += [n for n in more if n not in result.notes]
        for arm, seed, metric, value in seed_values.select(
            "arm", "seed_key", "metric", "value"
        ).iter_rows():
            per[(arm, metric, spec)][seed] = value

    arm_seeds = dict(arms.members.group_by("arm").agg(pl.col("seed_key").n_unique()).iter_rows())
    rows_in_use = [a for a in arms.order if any((a, m, s) in per for m, s in columns)]
    if not rows_in_use:
        result.notes.append("the analysed trials have no values for these metrics yet: no table")
        return result
    header_cols = ["arm", "seeds"] + [_column_label(m, s, len(values)) for m, s in columns]
    stats: dict[tuple[str, str, ValueSpec], MeanCI] = {}
    for key, seeds in per.items():
        stats[key] = mean_ci(list(seeds.values()), level)
    table_rows = []
    marked: set[tuple[int, int]] = set()
    for arm in rows_in_use:
        row = [arm, str(arm_seeds.get(arm, 0))]
        for metric, spec in columns:
            ci = stats.get((arm, metric, spec))
            if ci is None:
                row.append(DASH)
                continue
            text = fmt_pm(ci.mean, ci.half_width)
            if ci.n < arm_seeds.get(arm, 0):
                text += f" (n={ci.n})"
            row.append(text)
        table_rows.append(row)
    for j, (metric, spec) in enumerate(columns):
        cells = [stats.get((arm, metric, spec)) for arm in rows_in_use]
        marked |= {(i, j + 2) for i in _best_rows(cells, metric)}
    no_interval = {arm for (arm, _, _), ci in stats.items() if ci.half_width is None}
    single = [a for a in rows_in_use if a in no_interval]
    if single:
        result.notes.append(f"one seed: no interval for {', '.join(single)}")

    # Paired tests against the baseline arm on the seeds both have.
    tests: dict[tuple[str, str, ValueSpec], PairedTest] = {}
    base_of: dict[str, str] = {}
    reasons: dict[str, str] = {}
    for arm in rows_in_use:
        base, why = baseline_arm(arms, arm, value=baseline)
        if base is None:
            if why:
                reasons[arm] = why
            continue
        base_of[arm] = base
        for metric, spec in columns:
            mine, theirs = per.get((arm, metric, spec), {}), per.get((base, metric, spec), {})
            common = sorted(set(mine) & set(theirs))
            tests[(arm, metric, spec)] = paired_t_test(
                [mine[s] for s in common], [theirs[s] for s in common]
            )
    has_baseline = any(arms.key_values[a].get("loss") == baseline for a in rows_in_use)
    if has_baseline:
        by_reason: dict[str, list[str]] = defaultdict(list)
        for arm, why in reasons.items():
            by_reason[why].append(arm)
        result.notes += [f"{'; '.join(arms_)}: {why}" for why, arms_ in by_reason.items()]

    records = []
    for i, arm in enumerate(rows_in_use):
        for j, (metric, spec) in enumerate(columns):
            ci = stats.get((arm, metric, spec))
            if ci is None:
                continue
            test = tests.get((arm, metric, spec))
            base = base_of.get(arm) if test else None
            records.append(
                {
                    "arm": arm,
                    **{k: plain_value(arms.key_values[arm][k]) for k in arms.keys},
                    "metric": metric,
                    "value_kind": spec.label,
                    "n": ci.n,
                    "mean": ci.mean,
                    "ci_low": ci.low,
                    "ci_high": ci.high,
                    "best": (i, j + 2) in marked,
                    "baseline_arm": base,
                    "n_pairs": test.n if test else None,
                    "mean_diff": test.mean_diff if test else None,
                    "t": test.t if test else None,
                    "p": test.p if test else None,
                }
            )
    level_pct = f"{level * 100:g}%"
    main = Table(
        name="ablation",
        title=f"mean ± {level_pct} CI over seeds (t distribution); bold: best in column",
        columns=header_cols,
        rows=table_rows,
        marked=marked,
        data=pl.DataFrame(records, infer_schema_length=None),
    )
    result.tables.append(main)
    result.header += [
        trial_summary(trials),
        f"value per trial: {', '.join(s.label for s in values)}",
    ]
    sig_rows = []
    for arm in rows_in_use:
        if arm not in base_of:
            continue
        row = [arm, base_of[arm]]
        for metric, spec in columns:
            test = tests.get((arm, metric, spec))
            if test is None:
                row.append(DASH)
                continue
            if test.p is None:
                row.append(f"{DASH} ({test.reason})")
            else:
                row.append(f"Δ={fmt_signed(test.mean_diff)} {fmt_p(test.p)} (n={test.n})")
        sig_rows.append(row)
    if any(t.p is not None for t in tests.values()):
        result.tables.append(
            Table(
                name="ablation_vs_baseline",
                title=f"paired t-test vs {baseline} on common seeds: Δ = arm − {baseline}",
                columns=["arm", "baseline", *header_cols[2:]],
                rows=sig_rows,
            )
        )
    elif tests:
        result.notes.append(
            f"no paired test vs {baseline}: it needs at least 2 seeds that both arms ran "
            "(and differences that are not all equal)"
        )
    elif not has_baseline:
        result.notes.append(f"no {baseline} arm: no paired tests")
    return result
