"""The scaling command: read the points, fit every (group, metric, axis, line), compare CE with
EE, and assemble the tables (see the package docstring for what each holds)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import polars as pl

from analysis.arms import format_value, plain_value
from analysis.command_start import started_result
from analysis.result import Result, Table
from analysis.scaling import tables
from analysis.scaling.bootstrap import r2_difference
from analysis.scaling.cells import Cells
from analysis.scaling.compare import verdict_record
from analysis.scaling.comparison_tables import comparison_tables
from analysis.scaling.fits import Fits, fit_both, plain_record, saturating_record
from analysis.scaling.flags import line_flags
from analysis.scaling.gate import gate, gate_lines
from analysis.scaling.holdout import holdout_cells, holdout_plain
from analysis.scaling.joint_fits import JointFound, JointOptions, joint_fits
from analysis.scaling.loss_comparison import (
    CompareSpec,
    check_reference,
    compare_groups,
    rest_columns,
)
from analysis.scaling.param_counts import count_records, fitted_exponents
from analysis.scaling.points import (
    PARAM_METRICS,
    SIZE_KEY,
    TOKENS_METRIC,
    TrialValues,
    aggregate_points,
    compute_frontier,
    default_axes,
    line_trials,
    lines,
    paired,
    trial_values,
)
from analysis.scaling.powerlaw import MIN_BOOTSTRAP_POINTS, MIN_SIZES, distinct_count
from analysis.scaling.robust import Units, huber_record, prediction_records
from analysis.scaling.settings import ScalingSettings, parse_where
from analysis.scaling.share import share_figure, share_records, trend_record
from analysis.scaling.table_points import apply_where
from analysis.seed_stats import t_quantile
from records.errors import ResultsError
from records.metric_names import DECOMPOSITION_LEAVES, direction, resolve, splits
from records.reader import Store, metric_names, trial_summary

CE, EE = "ce", "error_entropy"
STORE_FIT_BOOTSTRAP = 100
"""--fit-bootstrap's default for a store: every resample refits every form of every line."""
CE_METRIC = re.compile(r"^eval/[^/]+/ce$")
"""Held-out CE of a split: what the sanity gate checks."""


def scaling(store: Store, settings: ScalingSettings | None = None, **fields: Any) -> Result:
    """Fit tables (plain, saturating), the CE-vs-EE verdict, EE's share of CE and its trend, the
    learning rates chosen, and the points (numbers only) behind the figures. `fields` override
    fields of `settings` by name (ScalingSettings documents each)."""
    s = replace(settings or ScalingSettings(), **fields)
    if s.n_boot_fit is None:
        s = replace(s, n_boot_fit=STORE_FIT_BOOTSTRAP)
    trials, result = started_result(store, s, "scaling", "Scaling")
    trials, kept = apply_where(trials, parse_where(s.where), "the store's trials")
    if kept:
        result.notes.append(kept)
    if s.models is not None:
        trials = _only_models(trials, s.models, result)
    if trials.height == 0:
        return result
    available = metric_names(store)
    n_metric = PARAM_METRICS[s.params]
    if n_metric not in available:
        result.notes.append(
            f"no {n_metric} metric in the store: no parameter counts, no scaling fits"
            + (" (--params total uses model/params_total)" if s.params != "total" else "")
        )
        return result
    chosen = _chosen_metrics(s, available)
    if not chosen:
        result.notes.append("no eval/<split>/ce (or its decomposition) written yet: no fits")
        return result
    has_tokens = TOKENS_METRIC in available
    if [a for a in s.axes or () if a in ("D", "C")] and not has_tokens:
        raise ResultsError(
            f"--axis D and C need {TOKENS_METRIC} (tokens seen), which this store does not have"
        )
    select_by = s.select_by or next(
        (f"eval/{x}/ce" for x in splits(available) if f"eval/{x}/ce" in available), None
    )
    data = trial_values(
        store,
        trials,
        chosen,
        value=s.value,
        n_metric=n_metric,
        by=s.by,
        pool_experiments=s.pool_experiments,
        lr_mode=s.lr,
        select_by=select_by,
        with_tokens=has_tokens,
    )
    result.notes += data.notes
    pooled = [n for n in data.notes if n.startswith("sizes pooled over")]
    if s.strict and pooled:
        raise ResultsError(f"--strict: {pooled[0]}")
    if data.frame.height == 0:
        result.notes.append("no trial has both a size and a value of these metrics: no fits")
        return result
    spec = compare_spec(s, "loss", "loss", data)
    result.header.append(trial_summary(trials))
    if _add_gate(result, data, chosen, s.gate_only):
        return result
    _fit_store(result, store, data, chosen, s, has_tokens)
    if spec is not None:
        add_comparison(result, data, chosen, spec)
    return result


def compare_spec(
    s: ScalingSettings, column: str, label: str, data: TrialValues
) -> CompareSpec | None:
    """What --reference compares (the values of `column`, named `label` in messages), checked
    against the data before any fit; None without --reference."""
    if s.reference is None:
        return None
    boot = {"n_boot": s.n_boot, "level": s.level, "seed": s.seed}
    saturating = s.n_boot_fit if s.robust else None
    spec = CompareSpec(
        column, label, s.reference, s.compare_at or (), **boot, saturating_boot=saturating
    )
    check_reference(data.frame, data.group_columns, spec)
    return spec


def add_comparison(result: Result, data: TrialValues, chosen: list[str], spec: CompareSpec) -> None:
    """The tables of losses compared across scale, before the points table, with their header
    line, notes and figure series."""
    found = compare_groups(data, chosen, spec)
    rest = rest_columns(data.group_columns, spec)
    new = comparison_tables(found, rest, spec.level)
    at = len(result.tables) - 1 if result.tables else 0  # before the points table
    result.tables[at:at] = new
    result.header.append(
        f"losses compared with {spec.label} {spec.reference} on N lines: plain laws L = A·N^−b "
        f"per {spec.label} and with b shared (cell means, log L); intervals: t below "
        f"{MIN_BOOTSTRAP_POINTS} cells (paired where a loss has the reference's seeds at the same "
        f"sizes), else {spec.n_boot} resamples of cells (and seeds within cells where declared), "
        f"seed {spec.seed}"
        + (
            f"; saturating multipliers from the Huber fits M = E + A·N^−α, intervals from "
            f"{spec.saturating_boot} resamples"
            if spec.saturating_boot
            else ""
        )
    )
    result.notes += found.notes
    if found.exponent and "seed" not in data.frame.columns:
        result.notes.append(
            "no seeds declared: no paired differences (a table declares them with --seed-column)"
        )
    if not new:
        result.notes.append(f"--reference {spec.reference}: no line to compare on")
    if found.figure:
        result.figure_data["loss_comparison"] = found.figure


def _fit_store(
    result: Result,
    store: Store,
    data: TrialValues,
    chosen: list[str],
    s: ScalingSettings,
    has_tokens: bool,
) -> None:
    """A store's fits on its axes, with the method lines, the learning rates chosen and, where
    the store knows both parameter counts, the exponents under each."""
    axes = list(s.axes or default_axes(data.frame, data.group_columns, has_tokens, result.notes))
    result.settings["axes"] = axes
    per = "per-size means over seeds" if s.aggregate == "size" else "every trial a point"
    result.header += method_lines(
        s,
        axes,
        f"N = {PARAM_METRICS[s.params]}; D = {TOKENS_METRIC} at the value's step; C = 6·N·D; "
        f"value per trial: {s.value.label}; points: {per}",
    )
    if data.lr_records is not None:
        result.tables.append(tables.lr_table(data.lr_records, data.group_columns))
    out = fit_all(result, data, chosen, axes, s)
    if "N" in axes and all(m in metric_names(store) for m in PARAM_METRICS.values()):
        fitted = fitted_exponents(out.plain, out.huber, data.group_columns)
        _add_counts(result, store, data, chosen, s, fitted)


def _add_counts(
    result: Result,
    store: Store,
    data: TrialValues,
    chosen: list[str],
    s: ScalingSettings,
    fitted: dict[tuple, dict[str, Any]],
) -> None:
    """The exponents under both parameter counts, before the points table, and a header line
    saying whether any conclusion changes with the count."""
    records = count_records(store, data, chosen, s, fitted)
    if not records:
        return
    pct = f"{s.level * 100:g}%"
    at = len(result.tables) - 1  # before the points table
    result.tables.insert(at, tables.counts_table(records, data.group_columns, pct))
    changed = sum(r["verdict"].startswith("changes") for r in records)
    result.header.append(
        f"N counted both ways (table scaling_param_counts): the exponent changes with the count "
        f"in {changed} of {len(records)} N line(s)"
    )


def _only_models(trials: pl.DataFrame, models: tuple[str, ...], result: Result) -> pl.DataFrame:
    """The trials of the model presets named by --models; a name no trial has is an error (a
    typo would otherwise fit a smaller family without a word)."""
    have = sorted(set(trials["model"].drop_nulls().to_list())) if "model" in trials.columns else []
    unknown = [m for m in models if m not in have]
    if unknown:
        raise ResultsError(
            f"--models: no trial of {', '.join(unknown)} in the store (its models: "
            f"{', '.join(have) or 'none'})"
        )
    left_out = [m for m in have if m not in models]
    if left_out:
        result.notes.append(f"--models: trials of {', '.join(left_out)} left out")
    return trials.filter(pl.col("model").is_in(list(models)))


def _add_gate(result: Result, data: TrialValues, chosen: list[str], only: bool) -> bool:
    """The sanity gate's lines and tables, when held-out CE is among the metrics; True when the
    run is the gate alone (--gate)."""
    if not any(CE_METRIC.match(m) for m in chosen):
        result.notes.append("no sanity gate: no held-out CE (eval/<split>/ce) among the metrics")
        return only
    found = gate(data.frame, data.group_columns, data.lr_records)
    result.header += gate_lines(found, data.group_columns)
    result.tables += tables.gate_tables(found, data.group_columns)
    result.settings["gate_passed"] = found["passed"]
    return only


def _chosen_metrics(s: ScalingSettings, available: list[str]) -> list[str]:
    """The metrics asked for, or CE and its decomposition of every split (CE alone for the
    gate); checks that --value best has a direction for each."""
    if s.gate_only:
        chosen = [f"eval/{x}/ce" for x in splits(available) if f"eval/{x}/ce" in available]
    elif s.metrics:
        chosen = resolve(list(s.metrics), available)
    else:
        have = set(available)
        chosen = [
            f"eval/{x}/{leaf}"
            for x in splits(available)
            for leaf in DECOMPOSITION_LEAVES
            if f"eval/{x}/{leaf}" in have
        ]
    if chosen and s.value.kind == "best":
        undirected = [m for m in chosen if direction(m) is None]
        if undirected:
            raise ResultsError(
                f"--value best: {', '.join(undirected)} has no better direction; use final "
                "or step:N"
            )
    return chosen


def method_lines(s: ScalingSettings, axes: list[str], points: str) -> list[str]:
    """The header lines that say how the fits were made, after the line on the `points`."""
    out = [
        points,
        "plain: log M = c + a·log N by least squares (natural logs); saturating: M = E + A·N^a "
        "(a < 0) by nonlinear least squares on log M; both judged on log M",
        f"CIs at {s.level * 100:g}%: plain a by the OLS t-interval below {MIN_BOOTSTRAP_POINTS} "
        f"points, a studentized bootstrap ({s.n_boot} resamples, seed {s.seed}) from "
        f"{MIN_BOOTSTRAP_POINTS}; saturating E and a by Wald t-intervals (n − 3 df)",
        "LOO: leave-one-size-out prediction error (RMS of M̂/M − 1); extrap.: fit without the "
        "largest size, error at it; ΔAICc < −2 favours the first-named model; preferred form: "
        f"saturating when the F-test of E rejects E = 0 at p < {1 - s.level:g}",
    ]
    if axes != ["N"]:
        out.append(
            "lines hold the other axis fixed (column `at`): an N line per step budget, a D line "
            "per model; C is fitted on its frontier (the points no cheaper point beats)"
        )
    return out


@dataclass
class _Collected:
    """The records of every scaling table and the figures' series, filled line by line."""

    plain: list[dict[str, Any]] = field(default_factory=list)
    saturating: list[dict[str, Any]] = field(default_factory=list)
    points: list[dict[str, Any]] = field(default_factory=list)
    verdict: list[dict[str, Any]] = field(default_factory=list)
    share: list[dict[str, Any]] = field(default_factory=list)
    trend: list[dict[str, Any]] = field(default_factory=list)
    huber: list[dict[str, Any]] = field(default_factory=list)
    prediction: list[dict[str, Any]] = field(default_factory=list)
    holdout: list[dict[str, Any]] = field(default_factory=list)
    frontier: list[dict[str, Any]] = field(default_factory=list)
    residuals: list[dict[str, Any]] = field(default_factory=list)
    joint_fits: JointFound | None = None
    figure: list[dict[str, Any]] = field(default_factory=list)
    share_figure: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class _Line:
    """One line to fit: its group (record and label), the value held fixed, the axis."""

    group: dict[str, Any]
    label: str
    at: str
    axis: str

    @property
    def name(self) -> str:
        return self.label + (f" ({self.at})" if self.at else "")


def _split_by(df: pl.DataFrame, cols: list[str]) -> dict[tuple, pl.DataFrame]:
    """The frame's parts by the values of `cols` (one pass, not a filter per part)."""
    if not cols:
        return {(): df}
    return df.partition_by(cols, as_dict=True, maintain_order=True)


def fit_all(
    result: Result, data: TrialValues, chosen: list[str], axes: list[str], s: ScalingSettings
) -> _Collected:
    """Every line of every group and axis: fits, then CE against EE per split; returns the
    records collected (the run's own exponents, say, which the counts table reuses)."""
    frame, gcols = data.frame, data.group_columns
    out = _Collected()
    points_by_axis = {axis: aggregate_points(frame, gcols, axis, s.aggregate) for axis in axes}
    groups = frame.select(gcols).unique(maintain_order=True).rows(named=True) if gcols else [{}]
    trials_of = _split_by(frame, gcols)
    points_of = {axis: _split_by(points_by_axis[axis], gcols) for axis in axes}
    empty = {axis: points_by_axis[axis].clear() for axis in axes}
    short = 0  # a table's lines with too few sizes (scattered (N, D) points have many)
    for group in groups:
        key = tuple(group[c] for c in gcols)
        label = ", ".join(f"{k}={format_value(v)}" for k, v in group.items() if v is not None)
        record = {c: plain_value(group[c]) for c in gcols}
        for axis in axes:
            for at, pts in lines(points_of[axis].get(key, empty[axis]), axis, data.d_steps):
                if data.d_steps and distinct_count(pts["x"].to_numpy()) < MIN_SIZES:
                    short += 1
                    continue
                line = _Line(record, label, at, axis)
                fitted = _fit_line(out, line, pts, trials_of[key], chosen, s, data)
                for split in dict.fromkeys(
                    m.split("/")[1] for m in fitted if m.startswith("eval/")
                ):
                    ce_m, ee_m = f"eval/{split}/{CE}", f"eval/{split}/{EE}"
                    if ce_m in fitted and ee_m in fitted:
                        both = (fitted[ce_m], fitted[ee_m])
                        _add_verdict(out, line, split, trials_of[key], both, axes[0], s)
    if short:
        result.notes.append(
            f"{short} line(s) of the table with fewer than {MIN_SIZES} distinct values on their "
            "axis left out (points scattered over (N, D) fit as a whole: joint form, C frontier)"
        )
    joint = _joint_tables(out, data, chosen, s) if s.robust and "D" in axes else []
    if out.joint_fits is not None:
        schemes = dict.fromkeys(r["resampling"] for r in out.joint_fits.joint if r["resampling"])
        result.notes += [f"joint fit's intervals: {how}" for how in schemes]
        flagged = [r for r in out.joint_fits.joint if r.get("flags")]
        if flagged:
            result.notes.append(
                f"{len(flagged)} joint fit(s) flagged as doubtful (column flags; the residual "
                "figure shows where the form misses)"
            )
    _append_tables(result, out, gcols, s.level)
    at = len(result.tables) - 1  # before the points table
    result.tables[at:at] = joint
    return out


def _joint_tables(
    out: _Collected, data: TrialValues, chosen: list[str], s: ScalingSettings
) -> list[Table]:
    """The joint L(N, D) tables: the fit with intervals, its compute-optimal allocation, its
    covariance; its held-out checks and frontier series go into `out`."""
    k = data.flops_per_param_token
    opts = JointOptions(s.n_boot_fit, s.level, s.seed, s.budgets, k, s.form, data.seeded)
    found = joint_fits(data.frame, data.group_columns, chosen, opts)
    out.holdout += found.holdout
    out.frontier += found.figure
    out.residuals += found.residuals
    out.joint_fits = found
    pct = f"{s.level * 100:g}%"
    gcols = data.group_columns
    new = [tables.joint_table(found.joint, gcols, pct, s.form.label())]
    if found.optimal:
        new.append(tables.optimal_table(found.optimal, gcols, pct, k))
    if found.covariance:
        new.append(tables.covariance_table(found.covariance))
    return new


def _fit_line(
    out: _Collected,
    line: _Line,
    pts: pl.DataFrame,
    gtrials: pl.DataFrame,
    chosen: list[str],
    s: ScalingSettings,
    data: TrialValues,
) -> dict[str, tuple[Fits, pl.DataFrame]]:
    """Both forms for each metric of one line; their records and figure series. A table's
    metrics are losses: lower is better on the C frontier."""
    table = data.d_steps
    fitted: dict[str, tuple[Fits, pl.DataFrame]] = {}
    by_metric = _split_by(pts, ["metric"])
    for metric in chosen:
        mpts = by_metric.get((metric,))
        if mpts is None:
            continue
        if line.axis == "C":
            mpts = compute_frontier(mpts, "min" if table else direction(metric))
        if mpts.height == 0:
            continue
        n, m = mpts["x"].to_numpy(), mpts["y"].to_numpy()
        fits = fit_both(n, m, n_boot=s.n_boot, level=s.level, seed=s.seed)
        fitted[metric] = (fits, mpts)
        key = _add_fit(out, line, metric, mpts, fits, s.level)
        held = {**line.group, "metric": metric, "axis": line.axis, "at": line.at or None}
        out.holdout.append({**held, **holdout_plain(n, m, line.axis, s.level)})
        if not s.robust:
            continue
        units = Units.of(line_trials(gtrials, metric, line.axis, mpts), "value")
        if not data.seeded:  # rows repeating a size are not known seeds: one point each
            x, v = units.points(True)
            units = Units(x, v, [1] * x.size)
        line_form = s.form.line_form()
        robust = huber_record(
            units,
            means=s.aggregate == "size",
            n_boot=s.n_boot_fit,
            level=s.level,
            seed=s.seed,
            form=line_form,
        )
        flags = line_flags(robust, n, m)
        if flags:
            robust["remark"] = "; ".join(filter(None, [robust["remark"], *flags]))
        cells = Cells.of(units.x, None, units.value, seeded=data.seeded)
        check = holdout_cells(
            cells,
            form="huber",
            axis=line.axis,
            n_boot=s.n_boot_fit,
            level=s.level,
            seed=s.seed,
            joint_form=line_form,
        )
        out.holdout.append({**held, **check})
        plain = {f"plain_{k}": out.plain[-1][k] for k in ("a", "a_ci_low", "a_ci_high")}
        out.huber.append({**key, **robust, **plain})
        if robust["E"] is not None:  # the figure draws the field's fit beside the other two
            out.figure[-1]["huber"] = (robust["E"], robust["A"], robust["alpha"])
    return fitted


def _add_fit(
    out: _Collected, line: _Line, metric: str, pts: pl.DataFrame, fits: Fits, level: float
) -> dict[str, Any]:
    """The records of one (group, line, metric) in the plain, saturating and points tables;
    returns their common key."""
    key = {
        **line.group,
        "metric": metric,
        "axis": line.axis,
        "at": line.at or None,
        "sizes": distinct_count(fits.n),
        "points": int(fits.n.size),
    }
    out.plain.append({**key, **plain_record(fits)})
    out.saturating.append({**key, **saturating_record(fits)})
    half = _half_widths(pts, level)
    for r, h in zip(pts.iter_rows(named=True), half, strict=True):
        out.points.append(
            {
                **line.group,
                "metric": metric,
                "axis": line.axis,
                "at": line.at or None,
                "model": r["model"],
                "N": r["N"],
                "step": r["step"],
                "x": r["x"],
                "trials": r["trials"],
                "mean": r["y"],
                "ci_low": None if h is None else r["y"] - h,
                "ci_high": None if h is None else r["y"] + h,
            }
        )
    out.figure.append(
        {
            "group": line.name,
            "metric": metric,
            "axis": line.axis,
            "n": fits.n,
            "m": fits.m,
            "half": np.array([np.nan if h is None else h for h in half]),
            "plain": fits.plain,
            "saturating": fits.saturating,
            "huber": None,  # (E, A, α) of the Huber fit, with --robust
        }
    )
    return key


def _half_widths(pts: pl.DataFrame, level: float) -> list[float | None]:
    """The t-interval half width of each point's mean over its trials (None for one trial)."""
    q = {k: t_quantile((1 + level) / 2, k - 1) for k in set(pts["trials"].to_list()) if k >= 2}
    return [
        None if sd is None or k not in q else q[k] * sd / k**0.5
        for k, sd in zip(pts["trials"].to_list(), pts["sd"].to_list(), strict=True)
    ]


def _add_verdict(
    out: _Collected,
    line: _Line,
    split: str,
    gtrials: pl.DataFrame,
    both: tuple[tuple[Fits, pl.DataFrame], tuple[Fits, pl.DataFrame]],
    first_axis: str,
    s: ScalingSettings,
) -> None:
    """The CE-vs-EE verdict of one line and, on the first axis, EE's share of CE and its trend,
    from the trials behind CE's points (paired with their EE)."""
    ce, ee = both
    pairs = paired(gtrials, f"eval/{split}/{CE}", f"eval/{split}/{EE}", line.axis)
    pairs = pairs.join(ce[1].select(SIZE_KEY), on=list(SIZE_KEY), how="semi", nulls_equal=True)
    if pairs.height == 0:
        return
    strata = pairs.partition_by(list(SIZE_KEY), maintain_order=True)
    diff = r2_difference(
        [t["x"].to_numpy() for t in strata],
        [t["ce"].to_numpy() for t in strata],
        [t["ee"].to_numpy() for t in strata],
        per_size_means=s.aggregate == "size",
        n_boot=s.n_boot,
        level=s.level,
        seed=s.seed,
    )
    key = {**line.group, "split": split, "axis": line.axis, "at": line.at or None}
    out.verdict.append({**key, "sizes": len(strata), **verdict_record(ce[0], ee[0], diff, s.level)})
    if s.robust:
        units = Units.of(pairs, "ce", "ee")
        means = s.aggregate == "size"
        found = prediction_records(
            units, means=means, n_boot=s.n_boot_fit, level=s.level, seed=s.seed
        )
        out.prediction += [{**key, "sizes": len(strata), **r} for r in found]
    if line.axis != first_axis:
        return
    shares = share_records(strata, s.level)
    out.share += [{**key, **r} for r in shares]
    trend = trend_record(pairs, shares, s.aggregate, s.level)
    if trend is not None:
        out.trend.append({**key, **trend})
    out.share_figure.append(
        {"group": line.name, "split": split, "axis": line.axis, **share_figure(shares)}
    )


def _append_tables(result: Result, out: _Collected, gcols: list[str], level: float) -> None:
    """The tables of the collected records, in the command's order, and the figures' series."""
    pct = f"{level * 100:g}%"
    result.tables.append(tables.power_table(out.plain, gcols, pct))
    reasons = {r["remark"] for r in out.saturating}
    one_reason = bool(out.saturating) and all(r["E"] is None for r in out.saturating)
    show_saturating = bool(out.saturating) and not (one_reason and len(reasons) == 1)
    if out.saturating and not show_saturating:
        # Every row would say the same thing: say it once.
        result.notes.append(f"saturating form E + A·N^a, every group: {reasons.pop()}")
    result.tables.append(tables.saturating_table(out.saturating, gcols, pct, show_saturating))
    if out.verdict:
        result.tables.append(tables.verdict_table(out.verdict, out.saturating, gcols, pct))
    if out.share:
        result.tables.append(tables.share_table(out.share, gcols, pct))
    if out.trend:
        result.tables.append(tables.trend_table(out.trend, gcols, pct))
    if out.huber:
        result.tables.append(tables.huber_table(out.huber, gcols, pct))
    if out.prediction:
        result.tables.append(tables.prediction_table(out.prediction, gcols, pct))
    if out.holdout:
        result.tables.append(tables.holdout_table(out.holdout, gcols, pct))
    result.tables.append(tables.points_table(out.points))
    if out.plain and all(r["a"] is None for r in out.plain):
        result.notes.append("no group has enough sizes for a fit (3 or more distinct sizes needed)")
    result.figure_data["scaling"] = out.figure
    result.figure_data["ee_share"] = out.share_figure
    if out.frontier:
        result.figure_data["frontier"] = out.frontier
    if out.residuals:
        result.figure_data["joint_residuals"] = out.residuals
