"""The ablation tables: one row per arm (loss, or any configuration column), one column per
held-out metric and value kind, cells = mean ± t-interval over seeds, the best of each column
marked (metrics without a better direction never are), and a paired t-test of each arm against
the baseline loss (mle) on the seeds both ran, its p-values corrected for multiple comparisons
(Holm by default) within a stated family.

Metrics are laid out in panels, one table each (an evaluation split with the generation benchmark
drawn from it, see analysis/headline.py); by default only the headline metrics are shown. Where
the trials measured their loss's auxiliary term against CE (`train/aux_grad_*`), the default view
and `--all` end on a table of that manipulation check per arm: what dose the arms received, beside
what it did. It is not tested.

The command's options are one frozen AblationSettings (checked when made); `ablation(store,
settings)` runs the steps in order (metrics, arms, columns, seed values, rows, paired tests,
per-panel tables, the optional tests' notes)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from analysis.ablation_options import PairedOptions
from analysis.arm_selection import ArmSelection, collect_seed_values
from analysis.arms import Arms, baseline_arm, plain_value
from analysis.command_start import started_result
from analysis.headline import headline, panel_title, panels, short_names
from analysis.option_choices import CORRECTION_FAMILIES, CORRECTIONS, Correction
from analysis.paired_tests import Tost, paired_ancova, tost_paired
from analysis.result import (
    DASH,
    Record,
    Result,
    Table,
    fmt,
    fmt_ci,
    fmt_p,
    fmt_pm,
    fmt_pvalue,
    fmt_signed,
    pivot_rows,
)
from analysis.seed_stats import (
    MeanCI,
    PairedTest,
    adjust_p,
    check_level,
    mean_ci,
    paired_t_tests,
)
from analysis.seed_values import SeedValues
from analysis.selection import (
    FINAL,
    ValueSpec,
    summary_direction,
)
from analysis.settings_flags import METRICS_FLAG, flag
from analysis.sweep_manifest import store_sampled
from analysis.trial_costs import cost_lines, trial_costs
from records.errors import ResultsError
from records.metric_names import AUX_GRAD_RATIO, AUX_GRAD_TURN_DEG, direction, resolve
from records.reader import (
    Store,
    load_trials,
    metric_names,
    read_latest,
    trial_summary,
)


def _tost_fields(tost: Tost | None, opts: PairedOptions) -> dict[str, object]:
    """TOST columns of a record (none at all without --equivalence: the records stay as they
    were)."""
    if opts.equivalence is None:
        return {}
    return {
        "sesoi": opts.equivalence,
        "tost_p": tost.p if tost else None,
        "tost_ci_low": tost.ci[0] if tost and tost.ci else None,
        "tost_ci_high": tost.ci[1] if tost and tost.ci else None,
        "equivalent": tost.equivalent if tost else None,
    }


def _tost_text(record: Record, reason: str | None) -> str:
    """The TOST part of a paired-test cell from its record's TOST fields (none without
    --equivalence); `reason`: why the TOST is undefined, which the record does not hold."""
    if "tost_p" not in record:
        return ""
    if record["tost_p"] is None:
        return f"; TOST {DASH} ({reason})"
    ci = fmt_ci(record["tost_ci_low"], record["tost_ci_high"])
    verdict = "equivalent" if record["equivalent"] else "not equivalent"
    return f"; TOST {fmt_p(record['tost_p'])} {ci}: {verdict}"


CORRECTION_NAMES = {"holm": "Holm", "bh": "Benjamini–Hochberg", "none": "no correction"}
_SHORT = {"holm": "Holm", "bh": "BH"}


def held_out_metrics(available: Sequence[str]) -> list[str]:
    """Every eval/ and gen/ metric in the store (`--all`), sorted as the store lists them."""
    return [m for m in available if m.startswith(("eval/", "gen/"))]


def _best_rows(cells: list[MeanCI | None], want: str | None) -> set[int]:
    means = [(i, c.mean) for i, c in enumerate(cells) if c is not None]
    if want is None or len(means) < 2:
        return set()
    target = max(m for _, m in means) if want == "max" else min(m for _, m in means)
    best = {i for i, m in means if m == target}
    # When every row ties (say exact match 0 everywhere early on) nothing stands out.
    return set() if len(best) == len(means) else best


Column = tuple[str, ValueSpec]


def _adjusted(
    tests: dict[tuple[str, str, ValueSpec], PairedTest],
    panel_of_column: dict[Column, str],
    correction: Correction,
    family: str,
) -> tuple[dict[tuple[str, str, ValueSpec], float], dict[str, int]]:
    """Corrected p-value of every test that has one, and the size of each family by name."""
    families: dict[str, list[tuple[str, str, ValueSpec]]] = defaultdict(list)
    for key, test in tests.items():
        if test.p is None:
            continue
        _, metric, spec = key
        name = {
            "table": panel_of_column[(metric, spec)],
            "metric": f"{metric} ({spec.label})",
            "all": "all",
        }[family]
        families[name].append(key)
    out: dict[tuple[str, str, ValueSpec], float] = {}
    for keys in families.values():
        for key, p in zip(keys, adjust_p([tests[k].p for k in keys], correction), strict=True):
            out[key] = p
    return out, {name: len(keys) for name, keys in families.items()}


@dataclass(frozen=True)
class AblationSettings(ArmSelection):
    """Options of the ablation command (`python -m analysis ablation --help` names each flag):
    the arm selection it shares with `power` (`analysis.arm_selection`) and its own, checked
    when made, in the order the command always checked them."""

    metrics: tuple[str, ...] | None = field(default=None, metadata=METRICS_FLAG)
    """Metric names or globs to tabulate (--metrics); None: the headline metrics (or every
    held-out metric with `all_metrics`)."""
    all_metrics: bool = field(default=False, metadata=flag("--all"))
    """Every eval/ and gen/ metric in the store (--all) when `metrics` is None."""
    level: float = 0.95
    """Confidence level of every interval; 1 − level is the tests' α (--level)."""
    correction: Correction = field(default="holm", metadata=flag(choices=CORRECTIONS))
    """Multiple-comparison correction of the paired p-values (--correction): holm, bh, none."""
    family: str = field(default="table", metadata=flag(choices=CORRECTION_FAMILIES))
    """What one correction family is (--family): table, metric or all."""
    options: PairedOptions = field(default_factory=PairedOptions)
    """The optional tests: one-sided, TOST, covariate adjustment, plateau check."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.all_metrics and self.metrics:
            raise ResultsError("--all and --metrics: give one of them")
        if not self.values:
            raise ValueError("ablation needs at least one value kind")
        check_level(self.level)
        self.options.checked()
        if self.correction not in CORRECTIONS:
            raise ResultsError(
                f"--correction must be one of {', '.join(CORRECTIONS)}, got {self.correction!r}"
            )
        if self.family not in CORRECTION_FAMILIES:
            raise ResultsError(
                f"--family must be one of {', '.join(CORRECTION_FAMILIES)}, got {self.family!r}"
            )

    def as_json(self) -> dict[str, Any]:
        """The settings every ablation result's JSON reports (the optional tests add theirs)."""
        return {
            "level": self.level,
            "values": [s.label for s in self.values],
            "baseline": self.baseline,
            "correction": self.correction,
            "family": self.family,
        }


def ablation(store: Store, settings: AblationSettings) -> Result:
    """Build the ablation result of `store` under `settings`: per panel a table of mean ± CI over
    seeds and, with several seeds, a table of paired tests against the baseline with corrected
    p-values; `settings.options` adds one-sided tests, TOST, the covariate-adjusted difference
    and the plateau check."""
    s = settings
    trials, result = started_result(store, s, "ablation", "Ablation")
    if trials.height == 0:
        return result
    available = metric_names(store)
    chosen = _chosen_metrics(s, available, result.notes)
    if not chosen:
        result.notes.append(
            "no held-out metrics (eval/<split>/... or gen/...) written yet: no table "
            "(pick others with --metrics)"
        )
        return result
    arms = s.assign(trials, store_sampled(store))
    result.notes += arms.notes
    known = load_trials(store).select("experiment", "trial_id")
    covariate = _covariate(s.options, available)
    read = chosen if covariate is None or covariate in chosen else [*chosen, covariate]
    latest, counts = read_latest(store, read)
    if counts.note():
        result.notes.append(counts.note())
    columns = _columns(chosen, s.values, result.notes)
    per = collect_seed_values(latest, arms, s.values, known, result.notes)
    rows_in_use = _rows_in_use(arms, per, columns, s, result.notes)
    if not rows_in_use:
        result.notes.append("the analysed trials have no values for these metrics yet: no table")
        return result
    laid_out = panels([m for m, _ in dict.fromkeys((m, None) for m, _ in columns)])
    inputs = _tested(arms, per, columns, laid_out, rows_in_use, s, result.notes)
    result.header += [
        trial_summary(trials),
        *_cost_lines(store, arms),
        f"value per trial: {', '.join(v.label for v in s.values)}",
    ]
    for panel, names in laid_out:
        panel_columns = [(m, v) for m, v in columns if m in names]
        result.tables += _panel_tables(panel, panel_columns, rows_in_use, inputs)
        if covariate:
            result.tables.append(
                ancova_table(
                    panel, panel_columns, per, covariate, inputs.base_of, rows_in_use, s.level
                )
            )
    if s.metrics is None:  # the default view and --all, not a chosen set
        check = manipulation_table(store, arms, rows_in_use, known, s.level, available)
        result.tables += [check] if check is not None else []
    _option_notes(result, s, covariate)
    if s.options.plateau is not None:
        from analysis.plateau_rule import flag_arms

        flag_arms(result, store, trials, arms, s.options, chosen, rows_in_use, s.level)
    if not inputs.adjusted:
        if inputs.tests:
            result.notes.append(
                f"no paired test vs {s.baseline}: it needs at least 2 seeds that both arms ran "
                "(and differences that are not all equal)"
            )
        elif not inputs.has_baseline:
            result.notes.append(f"no {s.baseline} arm: no paired tests")
    return result


MANIPULATION_METRICS = (AUX_GRAD_RATIO, AUX_GRAD_TURN_DEG)
"""What the manipulation-check table shows of `train/aux_grad_*` (the cosine and the sign flips:
`--metrics 'train/aux_grad_*'`)."""
MANIPULATION_VALUES = (ValueSpec("step", step=0), ValueSpec("auc"), FINAL)
"""At the start, as the trapezoidal mean over the reports, and at the end: the ratio grows while
the model fits (study 5's DEL gradient: 0.6% of CE's at the start, 3.4% after 24 steps)."""


def manipulation_table(
    store: Store,
    arms: Arms,
    rows_in_use: list[str],
    known: pl.DataFrame,
    level: float,
    available: Sequence[str],
) -> Table | None:
    """The manipulation check per arm in use that measured it (mean ± CI over seeds of
    `MANIPULATION_METRICS` under `MANIPULATION_VALUES`), or None where no trial reported it.
    Display only: no test, no correction family."""
    if AUX_GRAD_RATIO not in available:
        return None
    latest, _ = read_latest(store, [m for m in MANIPULATION_METRICS if m in available])
    per = collect_seed_values(latest, arms, MANIPULATION_VALUES, known, [])
    checked = [a for a in rows_in_use if (a, AUX_GRAD_RATIO, FINAL) in per]
    columns = [(m, v) for m in MANIPULATION_METRICS for v in MANIPULATION_VALUES]
    stats = {
        (arm, *column): mean_ci(list(per[(arm, *column)].values()), level)
        for arm in checked
        for column in columns
        if per.get((arm, *column))
    }
    records = [
        {"arm": arm, "metric": metric, "value_kind": spec.label, "n": ci.n, "mean": ci.mean}
        | {"sd": ci.sd, "ci_low": ci.low, "ci_high": ci.high, "level": ci.level}
        for (arm, metric, spec), ci in stats.items()
    ]
    spec_of = {v.label: v for v in MANIPULATION_VALUES}
    rows, _ = pivot_rows(
        records,
        {arm: [arm] for arm in checked},
        columns,
        at=lambda r: (r["arm"], (r["metric"], spec_of[r["value_kind"]])),
        cell=lambda r: fmt_pm(r["mean"], stats[(r["arm"], *_column(r, spec_of))].half_width),
    )
    unchecked = [a for a in rows_in_use if a not in checked]
    labels = {AUX_GRAD_RATIO: "‖∇aux‖/‖∇CE‖", AUX_GRAD_TURN_DEG: "turn °"}
    return Table(
        name="ablation_manipulation",
        title="manipulation check (train/aux_grad_*): the gradient of the weighted auxiliary "
        "term against CE's, and the angle it turns the gradient by, on the next update's batch; "
        f"mean ± {level * 100:g}% CI over seeds at step 0, over the reports (auc) and at the "
        "end; not tested",
        columns=["arm", *(f"{labels[m]} ({v.label})" for m, v in columns)],
        rows=rows,
        data=pl.DataFrame(records, infer_schema_length=None),
        notes=[f"no auxiliary term, nothing to check: {', '.join(unchecked)}"] if unchecked else [],
    )


def _column(record: Record, spec_of: dict[str, ValueSpec]) -> Column:
    return record["metric"], spec_of[record["value_kind"]]


def _cost_lines(store: Store, arms: Arms) -> list[str]:
    """What the analysed trials cost, in all and per arm (none for a store without costs)."""
    costs = trial_costs(store)
    if costs is None:
        return []
    costs = costs.join(arms.members.select("experiment", "trial_id"), on=["experiment", "trial_id"])
    labels = dict(arms.members.select("trial_id", "arm").iter_rows())
    return cost_lines(costs, labels, arms.order)


def _chosen_metrics(s: AblationSettings, available: list[str], notes: list[str]) -> list[str]:
    """The metrics to tabulate: --metrics, --all, or the headline ones (saying so)."""
    if s.metrics:
        return resolve(s.metrics, available)
    if s.all_metrics:
        return held_out_metrics(available)
    chosen = headline(available)
    if chosen:
        notes.append(
            "headline metrics only: choose others with --metrics (names or globs), "
            "or show every held-out metric with --all"
        )
    return chosen


def _covariate(opts: PairedOptions, available: list[str]) -> str | None:
    """The one metric --adjust-for names, or None without it."""
    covariate = resolve([opts.adjust_for], available)[0] if opts.adjust_for else None
    if covariate and len(resolve([opts.adjust_for], available)) > 1:
        raise ResultsError(f"--adjust-for takes one metric, {opts.adjust_for!r} matches several")
    return covariate


def _columns(chosen: list[str], values: Sequence[ValueSpec], notes: list[str]) -> list[Column]:
    """Every chosen metric under every value kind, except `best` of metrics that have no better
    direction (digit entropy, log-confidence): those get the other kinds only (and a note)."""
    columns: list[Column] = []
    undirected = []
    for metric in chosen:
        for spec in values:
            if spec.needs_direction and direction(metric) is None:
                undirected.append((spec.kind, metric))
                continue
            columns.append((metric, spec))
    for kind in dict.fromkeys(k for k, _ in undirected):
        names = sorted({m for k, m in undirected if k == kind})
        notes.append(
            f"no '{kind}' for {', '.join(names)}: no direction is better "
            "(see records/metric_names.py)"
        )
    return columns


def _rows_in_use(
    arms: Arms,
    per: dict[tuple[str, str, ValueSpec], SeedValues],
    columns: list[Column],
    s: AblationSettings,
    notes: list[str],
) -> list[str]:
    """The arms with any value in these columns, in arm order (only --arms and their baselines
    when given)."""
    rows_in_use = [a for a in arms.order if any((a, m, v) in per for m, v in columns)]
    if s.only:
        # These arms and their baselines: a family of tests chosen in advance (a study's
        # hypothesis), corrected on its own.
        s.check_only(arms)
        bases = {baseline_arm(arms, a, value=s.baseline)[0] for a in s.only}
        rows_in_use = [a for a in rows_in_use if a in s.only or a in bases]
        notes.append(f"rows: {', '.join(s.only)} and their baseline (--arms)")
    return rows_in_use


Key = tuple[str, str, ValueSpec]


@dataclass(frozen=True)
class _Tested:
    """What every panel's tables are built from: the settings, the arms, the per-cell intervals
    and the paired tests against the baseline with their corrected p-values."""

    settings: AblationSettings
    arms: Arms
    arm_seeds: dict[str, int]
    stats: dict[Key, MeanCI]
    tests: dict[Key, PairedTest]
    adjusted: dict[Key, float]
    base_of: dict[str, str]
    tosts: dict[Key, Tost]
    has_baseline: bool

    @property
    def alpha(self) -> float:
        return 1.0 - self.settings.level

    @property
    def level_pct(self) -> str:
        return f"{self.settings.level * 100:g}%"


def _paired_tests(
    arms: Arms,
    per: dict[Key, SeedValues],
    columns: list[Column],
    rows_in_use: list[str],
    s: AblationSettings,
) -> tuple[dict[str, str], dict[str, str], dict[Key, PairedTest], dict[Key, Tost]]:
    """Paired tests of every row against its baseline arm on the seeds both have (all at once:
    see paired_t_tests): the baseline of each tested arm, why the others have none, the tests
    and (with --equivalence) the TOSTs."""
    base_of: dict[str, str] = {}
    reasons: dict[str, str] = {}
    keys: list[Key] = []
    pairs: list[tuple[list[float], list[float]]] = []
    for arm in rows_in_use:
        base, why = baseline_arm(arms, arm, value=s.baseline)
        if base is None:
            if why:
                reasons[arm] = why
            continue
        base_of[arm] = base
        for metric, spec in columns:
            mine, theirs = per.get((arm, metric, spec), {}), per.get((base, metric, spec), {})
            common = sorted(set(mine) & set(theirs))
            keys.append((arm, metric, spec))
            pairs.append(([mine[k] for k in common], [theirs[k] for k in common]))
    opts = s.options
    tests = dict(zip(keys, paired_t_tests(pairs, opts.alternative), strict=True))
    tosts = (
        {
            k: tost_paired(x, y, opts.equivalence, 1.0 - s.level)
            for k, (x, y) in zip(keys, pairs, strict=True)
        }
        if opts.equivalence is not None
        else {}
    )
    return base_of, reasons, tests, tosts


def _tested(
    arms: Arms,
    per: dict[Key, SeedValues],
    columns: list[Column],
    laid_out: list[tuple[str, list[str]]],
    rows_in_use: list[str],
    s: AblationSettings,
    notes: list[str],
) -> _Tested:
    """Intervals, paired tests and corrected p-values (families by the panels of `laid_out`) of
    every cell in use, with their notes (single seeds, arms without a baseline, the
    correction)."""
    stats = {key: mean_ci(list(seeds.values()), s.level) for key, seeds in per.items()}
    no_interval = {arm for (arm, _, _), ci in stats.items() if ci.half_width is None}
    single = [a for a in rows_in_use if a in no_interval]
    if single:
        notes.append(f"one seed: no interval for {', '.join(single)}")
    base_of, reasons, tests, tosts = _paired_tests(arms, per, columns, rows_in_use, s)
    has_baseline = any(
        a == s.baseline or arms.key_values[a].get("loss") == s.baseline for a in rows_in_use
    )
    if has_baseline:
        by_reason: dict[str, list[str]] = defaultdict(list)
        for arm, why in reasons.items():
            by_reason[why].append(arm)
        notes += [f"{'; '.join(arms_)}: {why}" for why, arms_ in by_reason.items()]
    panel_of_column = {(m, v): panel for panel, names in laid_out for m, v in columns if m in names}
    adjusted, family_sizes = _adjusted(tests, panel_of_column, s.correction, s.family)
    if adjusted:
        notes.append(_correction_note(s, family_sizes))
    arm_seeds = dict(arms.members.group_by("arm").agg(pl.col("seed_key").n_unique()).iter_rows())
    return _Tested(
        s, arms, arm_seeds, stats, tests, adjusted, base_of, tosts, has_baseline=has_baseline
    )


def _correction_note(s: AblationSettings, family_sizes: dict[str, int]) -> str:
    """How the paired tests were run and corrected, and how large the families are."""
    sizes = sorted(set(family_sizes.values()))
    span = str(sizes[0]) if len(sizes) == 1 else f"{sizes[0]}–{sizes[-1]}"
    what = {
        "table": "all paired tests of one table",
        "metric": "the tests of one metric column (every arm against the baseline)",
        "all": "every paired test of this command",
    }[s.family]
    return (
        f"paired tests: {s.options.sided} paired t over common seeds; p-values corrected with "
        f"{CORRECTION_NAMES[s.correction]}, family = {what} ({span} tests per family; "
        f"--correction, --family); bold: corrected p < {1.0 - s.level:g}"
    )


def _option_notes(result: Result, s: AblationSettings, covariate: str | None) -> None:
    """The settings and notes of the optional tests that were asked for (TOST, one-sided, the
    covariate adjustment)."""
    opts, level = s.options, s.level
    if opts.equivalence is not None:
        result.settings["equivalence"] = opts.equivalence
        result.notes.append(
            f"TOST: equivalence within ±{opts.equivalence:g} (--equivalence), two one-sided paired "
            f"t-tests at α = {1 - level:g} each; p = the larger one-sided p, shown with the "
            f"{100 * (1 - 2 * (1 - level)):g}% interval (equivalent iff it lies inside "
            "±SESOI); not corrected for multiplicity (a claim of equivalence on every component "
            "is an intersection-union test: analysis/family_rules.py)"
        )
    if opts.alternative != "two-sided":
        result.settings["alternative"] = opts.alternative
    if covariate:
        result.settings["adjust_for"] = covariate
        result.notes.append(
            f"adjusted for {covariate} (--adjust-for): per seed, d_y = arm − baseline in the "
            f"metric and d_x = arm − baseline in {covariate} (same value kind); OLS d_y = a + "
            "b·d_x over seeds, a = the difference at matched covariate, b the slope; t "
            "intervals with n − 2 df"
        )


def _labels(columns: list[Column], n_values: int) -> tuple[list[str], list[str]]:
    """The panel's metrics and its column labels (short names; the value kind when several)."""
    metrics = list(dict.fromkeys(m for m, _ in columns))
    short = dict(zip(metrics, short_names(metrics), strict=True))
    return metrics, [short[m] + (f" ({s.label})" if n_values > 1 else "") for m, s in columns]


def _panel_tables(
    panel: str, columns: list[Column], rows_in_use: list[str], t: _Tested
) -> list[Table]:
    """The mean ± CI table of one panel and, when it has any test, its paired-test table: both
    laid out from the panel's records (one per cell with a value, its test included)."""
    metrics, labels = _labels(columns, len(t.settings.values))
    records = _records(panel, columns, rows_in_use, t)
    rows, marked = _mean_rows(records, columns, rows_in_use, t)
    name = f"ablation_{panel}"
    out = [
        Table(
            name=name,
            title=f"{panel_title(panel, metrics)} — mean ± {t.level_pct} CI over seeds "
            "(t distribution); bold: best in column",
            columns=["arm", "seeds", *labels],
            rows=rows,
            marked=marked,
            data=pl.DataFrame(records, infer_schema_length=None),
        )
    ]
    if any(k in t.adjusted for k in ((a, m, s) for a in t.base_of for m, s in columns)):
        baseline, alpha = t.settings.baseline, t.alpha
        sig_rows, sig_marked = _test_rows(records, columns, rows_in_use, t)
        out.append(
            Table(
                name=f"{name}_vs_baseline",
                title=f"{panel_title(panel, metrics)} — paired t-test vs {baseline} on common "
                f"seeds: Δ = arm − {baseline}, p {t.settings.options.sided}, corrected p in "
                "brackets (n: pairs, where fewer than the arm's seeds); bold: corrected p < "
                f"{alpha:g}" + ("; TOST: equivalence test" if t.tosts else ""),
                columns=["arm", "baseline", *labels],
                rows=sig_rows,
                marked=sig_marked,
            )
        )
    return out


def _best_cells(columns: list[Column], rows_in_use: list[str], t: _Tested) -> set[tuple[str, int]]:
    """The (arm, column index) cells of one panel whose mean is the best of their column."""
    best: set[tuple[str, int]] = set()
    for j, (metric, spec) in enumerate(columns):
        cells = [t.stats.get((arm, metric, spec)) for arm in rows_in_use]
        best |= {(rows_in_use[i], j) for i in _best_rows(cells, summary_direction(spec, metric))}
    return best


def _records(panel: str, columns: list[Column], rows_in_use: list[str], t: _Tested) -> list[Record]:
    """One record per cell with a value: its interval and its paired test, for the JSON/CSV
    (and the panel's display rows: `_mean_rows`, `_test_rows`)."""
    correction, family, arms = t.settings.correction, t.settings.family, t.arms
    best = _best_cells(columns, rows_in_use, t)
    records = []
    for arm in rows_in_use:
        for j, (metric, spec) in enumerate(columns):
            ci = t.stats.get((arm, metric, spec))
            if ci is None:
                continue
            test = t.tests.get((arm, metric, spec))
            records.append(
                {
                    "panel": panel,
                    "arm": arm,
                    **{k: plain_value(arms.key_values[arm][k]) for k in arms.keys},
                    "metric": metric,
                    "value_kind": spec.label,
                    "n": ci.n,
                    "mean": ci.mean,
                    "sd": ci.sd,
                    "ci_low": ci.low,
                    "ci_high": ci.high,
                    "level": ci.level,
                    "best": (arm, j) in best,
                    "baseline_arm": t.base_of.get(arm) if test else None,
                    "n_pairs": test.n if test else None,
                    "mean_diff": test.mean_diff if test else None,
                    "t": test.t if test else None,
                    "p": test.p if test else None,
                    "p_adjusted": t.adjusted.get((arm, metric, spec)),
                    "correction": correction if test and test.p is not None else None,
                    "family": family if test and test.p is not None else None,
                    "no_test_reason": test.reason if test else None,
                    **_tost_fields(t.tosts.get((arm, metric, spec)), t.settings.options),
                }
            )
    return records


def _cell_key(columns: list[Column]) -> Callable[[Record], Key]:
    """The cell of a panel's record: its (arm, metric, value kind), the key of its interval and
    test (the record names the value kind by its label)."""
    spec_of = {spec.label: spec for _, spec in columns}
    return lambda r: (r["arm"], r["metric"], spec_of[r["value_kind"]])


def _mean_rows(
    records: list[Record], columns: list[Column], rows_in_use: list[str], t: _Tested
) -> tuple[list[list[str]], set[tuple[int, int]]]:
    """The mean ± CI rows of one panel (every arm in use) from its records, and the cells marked
    best."""
    key = _cell_key(columns)

    def cell(r: Record) -> str:
        # The record holds the interval's ends; its half width (as shown) is the interval's own.
        text = fmt_pm(r["mean"], t.stats[key(r)].half_width)
        return text + (f" (n={r['n']})" if r["n"] < t.arm_seeds.get(r["arm"], 0) else "")

    return pivot_rows(
        records,
        {arm: [arm, str(t.arm_seeds.get(arm, 0))] for arm in rows_in_use},
        columns,
        at=lambda r: (r["arm"], key(r)[1:]),
        cell=cell,
        mark=lambda r: r["best"],
    )


def _test_rows(
    records: list[Record], columns: list[Column], rows_in_use: list[str], t: _Tested
) -> tuple[list[list[str]], set[tuple[int, int]]]:
    """The paired-test rows of one panel (arms with a baseline) from its records, and the cells
    significant after correction."""
    key = _cell_key(columns)
    correction = t.settings.correction

    def cell(r: Record) -> str:
        if r["p"] is None:
            return f"{DASH} ({r['no_test_reason']})"
        text = f"Δ={fmt_signed(r['mean_diff'])} {fmt_p(r['p'])}"
        if correction != "none":
            text += f" ({_SHORT[correction]} {fmt_pvalue(r['p_adjusted'])})"
        # The pairs count only when fewer seeds pair up than the arm has.
        text += f" n={r['n_pairs']}" if r["n_pairs"] < t.arm_seeds.get(r["arm"], 0) else ""
        tost = t.tosts.get(key(r))
        return text + _tost_text(r, tost.reason if tost else None)

    def no_record(arm: str, column: Column) -> str:
        # The arm has no value in this column: its test (every tested arm has one per column)
        # has no pairs, and says so.
        return f"{DASH} ({t.tests[(arm, *column)].reason})"

    return pivot_rows(
        records,
        {arm: [arm, t.base_of[arm]] for arm in rows_in_use if arm in t.base_of},
        columns,
        at=lambda r: (r["arm"], key(r)[1:]),
        cell=cell,
        mark=lambda r: r["p_adjusted"] is not None and r["p_adjusted"] < t.alpha,
        missing=no_record,
    )


def ancova_table(
    panel: str,
    columns: list[Column],
    per: dict[tuple[str, str, ValueSpec], SeedValues],
    covariate: str,
    base_of: dict[str, str],
    rows_in_use: list[str],
    level: float,
) -> Table:
    """The paired ANCOVA of every arm against its baseline in every column of one panel: the
    difference at matched `covariate` (same value kind), the slope, their intervals."""
    metrics, labels = _labels(columns, len({s for _, s in columns}))
    rows, records = [], []
    for arm in rows_in_use:
        base = base_of.get(arm)
        if base is None:
            continue
        row = [arm, base]
        for metric, spec in columns:
            if metric == covariate:
                row.append(DASH)
                continue
            text, record = _ancova_cell(per, arm, base, metric, spec, covariate, level)
            row.append(text)
            records.append(record)
        rows.append(row)
    return Table(
        name=f"ablation_{panel}_adjusted",
        title=f"{panel_title(panel, metrics)} — paired ANCOVA vs baseline: Δadj = arm − "
        f"baseline at matched {covariate} (intercept of d_y on d_x over seeds), slope of d_y on "
        f"d_x; {level * 100:g}% t intervals, p two-sided (uncorrected)",
        columns=["arm", "baseline", *labels],
        rows=rows,
        data=pl.DataFrame(records, infer_schema_length=None),
    )


def _ancova_cell(
    per: dict[Key, SeedValues],
    arm: str,
    base: str,
    metric: str,
    spec: ValueSpec,
    covariate: str,
    level: float,
) -> tuple[str, dict[str, object]]:
    """One ANCOVA cell (arm against base in `metric`, adjusted for `covariate`) and its record."""
    y1, y0 = per.get((arm, metric, spec), {}), per.get((base, metric, spec), {})
    x1, x0 = per.get((arm, covariate, spec), {}), per.get((base, covariate, spec), {})
    common = sorted(set(y1) & set(y0) & set(x1) & set(x0))
    fit = paired_ancova(
        [y1[s] for s in common],
        [y0[s] for s in common],
        [x1[s] for s in common],
        [x0[s] for s in common],
        level,
    )
    if fit.intercept is None:
        text = f"{DASH} ({fit.reason})"
    else:
        text = (
            f"Δadj={fmt_signed(fit.intercept)} {fmt_ci(*fit.intercept_ci)} "
            f"{fmt_p(fit.p)}; slope {fmt(fit.slope, 3)} {fmt_ci(*fit.slope_ci)}"
        )
    return text, {
        "arm": arm,
        "baseline_arm": base,
        "metric": metric,
        "value_kind": spec.label,
        "covariate": covariate,
        "n_pairs": fit.n,
        "adjusted_diff": fit.intercept,
        "ci_low": fit.intercept_ci[0] if fit.intercept_ci else None,
        "ci_high": fit.intercept_ci[1] if fit.intercept_ci else None,
        "p": fit.p,
        "slope": fit.slope,
        "slope_ci_low": fit.slope_ci[0] if fit.slope_ci else None,
        "slope_ci_high": fit.slope_ci[1] if fit.slope_ci else None,
        "level": level,
        "no_test_reason": fit.reason,
    }
