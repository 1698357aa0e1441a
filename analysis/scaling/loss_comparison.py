"""Losses compared across scale (`--reference VALUE`): every group of the compared column (a
store's `loss`, a table's --group) against the reference group, on each N line both have, per
metric — the exponent test (exponent_test.py), the compute multipliers of the plain laws
(multipliers.py) and, where the command fits the saturating form, of that form
(saturating_multipliers.py), the paired differences and their trend where seeds are paired
(paired_trend.py), the loss-to-loss fits (loss_to_loss.py) — and the series of the report's
figures (the curves with bands, the multiplier against N).

Groups are compared within the rest of the fit group's columns (a store's dataset, experiment):
a loss run as an experiment of its own is compared with the reference only when the experiments
are pooled (--pool-experiments).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from analysis.arms import format_value, plain_value
from analysis.scaling.cells import Cells
from analysis.scaling.exponent_test import exponent_test
from analysis.scaling.group_lines import GroupLine
from analysis.scaling.loss_to_loss import loss_to_loss
from analysis.scaling.multipliers import PER_GROUP, multiplier_records
from analysis.scaling.paired_trend import paired_design, paired_sizes, trend_of
from analysis.scaling.points import TrialValues, aggregate_points, line_trials, lines
from analysis.scaling.powerlaw import MIN_SIZES, distinct_count
from analysis.scaling.saturating_multipliers import Saturating, fit_group, saturating_records
from records.errors import ResultsError

FIGURE_POINTS = 60
"""Sizes on each drawn curve."""
SHOWN = "_compared"
"""A frame's column holding each row's compared group as text."""
CONTEXT = ("experiment", "dataset", "group")
"""A store's fit group columns that are context, not part of a loss: losses are compared within
each (a points table's --group is its compared column, not context)."""


@dataclass(frozen=True)
class CompareSpec:
    """What is compared: the column whose values are the groups (`column`; `label` names it in
    messages), the reference value, the planned sizes, the bootstrap."""

    column: str
    label: str
    reference: str
    planned: tuple[float, ...] = ()
    n_boot: int = 2000
    level: float = 0.95
    seed: int = 0
    saturating_boot: int | None = None
    """Resamples of the saturating form's multipliers (saturating_multipliers.py), None: no
    saturating rows (a store without --robust fits no Huber lines)."""


@dataclass
class Compared:
    """The records of the comparison's tables, its figure series and notes."""

    exponent: list[dict[str, Any]] = field(default_factory=list)
    multipliers: list[dict[str, Any]] = field(default_factory=list)
    paired: list[dict[str, Any]] = field(default_factory=list)
    trend: list[dict[str, Any]] = field(default_factory=list)
    loss_to_loss: list[dict[str, Any]] = field(default_factory=list)
    figure: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def compared_columns(gcols: Sequence[str], spec: CompareSpec) -> list[str]:
    """The fit group's columns whose values make a compared group: `spec.column` and the loss's
    own parameters where --by splits by them (a store's `--by loss,alpha`: "del, alpha=0.2"),
    not the context (CONTEXT) the groups are compared within."""
    return [spec.column, *(c for c in gcols if c != spec.column and c not in CONTEXT)]


def rest_columns(gcols: Sequence[str], spec: CompareSpec) -> list[str]:
    """The fit group's columns the groups are compared within (dataset, experiment, ...)."""
    compared = compared_columns(gcols, spec)
    return [c for c in gcols if c not in compared]


def check_reference(frame: pl.DataFrame, gcols: Sequence[str], spec: CompareSpec) -> None:
    """Bad input before any fit: the compared column must split the fits, and the reference
    must be one of its groups (ResultsError naming it and the groups there are)."""
    if spec.column not in gcols:
        raise ResultsError(
            f"--reference {spec.reference}: the fits are not split by {spec.label} "
            f"({'--group COL names it on a points table' if spec.column == 'group' else '--by'})"
        )
    shown = _shown(frame.drop_nulls(spec.column), compared_columns(gcols, spec))
    values = sorted(set(shown[SHOWN].to_list()))
    if spec.reference not in values:
        raise ResultsError(
            f"--reference {spec.reference}: not a value of {spec.label} (its values: "
            f"{', '.join(values)})"
        )


def _group_line(name: str, trials: pl.DataFrame, seeded: bool) -> GroupLine:
    """One group's cells on a line from its trials (x = N, value; seed and weight where there
    are): the units of a cell in seed order, so that a resample draws the same seeds of every
    group where their seeds are the same (Cells.of orders them by value)."""
    order = ["x", "seed"] if "seed" in trials.columns else ["x"]
    parts = trials.sort(order).partition_by("x", maintain_order=True)
    weighted = "weight" in trials.columns
    return GroupLine(
        name,
        Cells(
            n=np.array([float(p["x"][0]) for p in parts]),
            d=np.ones(len(parts)),
            units=tuple(p["value"].to_numpy().astype(np.float64) for p in parts),
            seeded=seeded,
            unit_weights=tuple(p["weight"].to_numpy() for p in parts) if weighted else None,
        ),
    )


def _lines_of(
    trials: pl.DataFrame, points: pl.DataFrame, metric: str, d_steps: bool
) -> dict[str, pl.DataFrame]:
    """A group's N lines of one metric: {line label: its trials (x, value, seed ...)}."""
    mpts = points.filter(pl.col("metric") == metric)
    if mpts.height == 0:
        return {}
    return {at: line_trials(trials, metric, "N", pts) for at, pts in lines(mpts, "N", d_steps)}


def _label(row: dict[str, Any]) -> str:
    """A compared group's name: its first column's value, then `col=value` of the others set."""
    first, *others = row.items()
    extra = [f", {c}={format_value(v)}" for c, v in others if v is not None]
    return format_value(first[1]) + "".join(extra)


def _shown(frame: pl.DataFrame, columns: list[str]) -> pl.DataFrame:
    """The frame with SHOWN: each row's compared group as --reference names it (`_label`)."""
    if len(columns) == 1 and frame[columns[0]].dtype == pl.String:
        return frame.with_columns(pl.col(columns[0]).alias(SHOWN))
    text = pl.struct(columns).map_elements(_label, return_dtype=pl.String)
    return frame.with_columns(text.alias(SHOWN))


def _parts(frame: pl.DataFrame, rest: list[str]) -> dict[tuple, pl.DataFrame]:
    if not rest:
        return {(): frame}
    return frame.partition_by(rest, as_dict=True, maintain_order=True)


def compare_groups(data: TrialValues, metrics: Sequence[str], spec: CompareSpec) -> Compared:
    """Every group against the reference, per (rest of the group, metric, N line)."""
    out = Compared()
    gcols = data.group_columns
    rest = rest_columns(gcols, spec)
    compared = compared_columns(gcols, spec)
    trials = _parts(_shown(data.frame, compared), rest)
    points = _parts(_shown(aggregate_points(data.frame, gcols, "N", "size"), compared), rest)
    for key, part in trials.items():
        names = list(dict.fromkeys(part[SHOWN].to_list()))
        label = ", ".join(f"{c}={format_value(v)}" for c, v in zip(rest, key, strict=True))
        if spec.reference not in names:
            out.notes.append(f"{label}: no {spec.label} {spec.reference} to compare against")
            continue
        record = {c: plain_value(v) for c, v in zip(rest, key, strict=True)}
        pts = points.get(key, points[next(iter(points))].clear())
        for metric in metrics:
            by_name = {
                n: _lines_of(
                    part.filter(pl.col(SHOWN) == n),
                    pts.filter(pl.col(SHOWN) == n),
                    metric,
                    data.d_steps,
                )
                for n in names
            }
            for at, ref_trials in by_name[spec.reference].items():
                where = {**record, "metric": metric, "at": at or None}
                others = {
                    n: ls[at] for n, ls in by_name.items() if n != spec.reference and at in ls
                }
                _compare_line(out, where, ref_trials, others, spec, data.seeded)
    return out


def _compare_line(
    out: Compared,
    where: dict[str, Any],
    ref_trials: pl.DataFrame,
    others: dict[str, pl.DataFrame],
    spec: CompareSpec,
    seeded: bool,
) -> None:
    """Every comparison of one line, each group against the reference."""
    place = ", ".join(f"{k}={format_value(v)}" for k, v in where.items() if v is not None)
    if any((t["value"] <= 0).any() for t in [ref_trials, *others.values()]):
        out.notes.append(f"{place}: values not all positive: no comparison of log-log laws")
        return
    if distinct_count(ref_trials["x"].to_numpy()) < MIN_SIZES or not others:
        if others:
            out.notes.append(f"{place}: the reference has fewer than {MIN_SIZES} sizes")
        return
    ref = _group_line(spec.reference, ref_trials, seeded)
    ref_fit = fit_group(ref, spec.saturating_boot, spec.seed) if spec.saturating_boot else None
    boot = {"n_boot": spec.n_boot, "level": spec.level, "seed": spec.seed}
    series = {spec.reference: ref}
    mults = []
    for name, trials in others.items():
        if distinct_count(trials["x"].to_numpy()) < MIN_SIZES:
            out.notes.append(f"{place}: {spec.label} {name} has fewer than {MIN_SIZES} sizes")
            continue
        g = _group_line(name, trials, seeded)
        series[name] = g
        paired = paired_design(trials, ref_trials)
        test = exponent_test(g, ref, **boot, paired=paired)
        out.exponent.append({**where, **test})
        found = multiplier_records(g, ref, spec.planned, **boot, paired=paired)
        found = _with_verdict(found, test, spec.level)
        fits = _saturating(g, ref_fit, spec)
        if fits is not None:
            found += saturating_records(g, ref, fits, spec.planned, spec.level)
        out.loss_to_loss += [{**where, **r} for r in loss_to_loss(g, ref, fits, spec.level)]
        out.multipliers += [{**where, **r} for r in found]
        mults += [r for r in found if r["exponents"] == PER_GROUP]
        _add_paired(out, where, name, trials, ref_trials, spec)
    if len(series) > 1:
        out.figure.append(_figure(place, where["metric"], series, mults, spec))


def _saturating(
    g: GroupLine, ref_fit: Saturating | None, spec: CompareSpec
) -> tuple[Saturating, Saturating] | None:
    """The saturating fits of the loss and the reference, where the command fits the form and
    both can be fitted."""
    if ref_fit is None or not spec.saturating_boot:
        return None
    fit = fit_group(g, spec.saturating_boot, spec.seed)
    return None if fit is None else (fit, ref_fit)


def _with_verdict(
    records: list[dict[str, Any]], test: dict[str, Any], level: float
) -> list[dict[str, Any]]:
    """The multipliers, the shared one remarked where the exponent test rejects a shared b."""
    if test["p"] is None or test["p"] >= 1 - level:
        return records
    said = f"the exponents differ (p={test['p']:.2g}): the per-group multipliers apply"
    return [
        r | {"remark": "; ".join(filter(None, [said, r["remark"]]))}
        if r["exponents"] != PER_GROUP
        else r
        for r in records
    ]


def _add_paired(
    out: Compared,
    where: dict[str, Any],
    name: str,
    trials: pl.DataFrame,
    ref_trials: pl.DataFrame,
    spec: CompareSpec,
) -> None:
    """The paired differences per size and their trend, where both have a seed column."""
    if "seed" not in trials.columns or "seed" not in ref_trials.columns:
        return
    sizes = paired_sizes(trials, ref_trials, spec.level)
    if not sizes:
        return
    lead = {**where, "group": name, "reference": spec.reference}
    out.paired += [{**lead, **s} for s in sizes]
    out.trend.append({**lead, **trend_of(sizes, spec.level)})


def _figure(
    place: str,
    metric: str,
    series: dict[str, GroupLine],
    mults: list[dict[str, Any]],
    spec: CompareSpec,
) -> dict[str, Any]:
    """The figure series of one line: each group's cell means, its fitted plain law on a grid
    with its band (GroupLine.band), and the multipliers against N with their intervals."""
    lo = min(g.cells.n.min() for g in series.values())
    hi = max([*(g.cells.n.max() for g in series.values()), *spec.planned])
    grid = np.geomspace(lo, hi, FIGURE_POINTS)
    curves = []
    for name, g in series.items():
        band = g.band(np.log(grid), spec.n_boot, spec.seed, spec.level)
        curves.append(
            {
                "name": name,
                "n": g.cells.n,
                "m": g.cells.means(),
                "grid": grid,
                "fit": g.fitted(np.log(grid)),
                "low": band[0] if band else None,
                "high": band[1] if band else None,
            }
        )
    return {
        "title": place,
        "metric": metric,
        "reference": spec.reference,
        "curves": curves,
        "multipliers": mults,
    }
