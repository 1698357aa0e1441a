"""The scaling command: for CE and its decomposition (error entropy EE, self-alignment SA,
log-confidence) or any metric, fitted against parameters N, tokens seen D or compute C ≈ 6·N·D,
per fit group (loss × dataset, plus experiment or --by columns where they vary):

- the plain power law log M = c + a·log N (CI for a: OLS t-interval below 10 points, studentized
  bootstrap from 10), R², the F-test of a = 0 and AICc against a constant model, so "does this
  metric follow a power law at all" is decided by the numbers;
- the saturating form M = E + A·N^a (irreducible part E), with Wald intervals, AICc and the
  F-test against the plain form;
- for each form the leave-one-size-out error and the extrapolation check (fit without the
  largest size, predict it);
- the verdict CE vs EE per split: R² of both, the R² difference with a bootstrap interval over
  seeds, and the prediction errors side by side;
- EE's share of CE per size, and its trend (slope per decade of N with a t-interval).

Points are per-size means over seeds by default (`aggregate="trial"`: every trial a point), and
the best learning rate per size is picked when the learning rate varies (see scaling_points.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl
from scipy import stats

from analysis.arms import format_value, plain_value
from analysis.choices import AGGREGATES, AXES, LR_MODES
from analysis.fit_checks import (
    aicc,
    canonical,
    extrapolation_error,
    loo_error,
    nested_f_test,
)
from analysis.metric_names import DECOMPOSITION_LEAVES, resolve, splits
from analysis.metric_registry import direction
from analysis.powerlaw import (
    MIN_BOOTSTRAP_POINTS,
    NotEnoughData,
    PowerLawFit,
    distinct_count,
    fit_power_law,
)
from analysis.saturating import NoSaturation, SaturatingFit, fit_saturating
from analysis.scaling_points import (
    PARAM_METRICS,
    SIZE_KEY,
    TOKENS_METRIC,
    aggregate_points,
    trial_values,
)
from analysis.seed_stats import check_level, mean_ci, t_quantile
from analysis.selection import FINAL, ValueSpec
from analysis.store import (
    DEFAULT_STATUSES,
    ResultsError,
    Store,
    current_trials,
    metric_names,
    trial_summary,
)
from analysis.table import DASH, Result, Table, fmt, fmt_ci, fmt_p, fmt_pct, fmt_pm
from analysis.verdict import r2_difference

CE, EE = "ce", "error_entropy"


@dataclass
class Fits:
    """Both forms and their checks for one (group, metric, axis)."""

    n: np.ndarray
    m: np.ndarray
    plain: PowerLawFit | None
    plain_reason: str | None
    saturating: SaturatingFit | None
    saturating_reason: str | None
    loo_plain: float | None
    loo_saturating: float | None
    extrap_plain: float | None
    extrap_saturating: float | None
    aicc_constant: float | None
    aicc_plain: float | None
    aicc_saturating: float | None
    f_p: float | None
    alpha: float
    """1 − level: the F-test's threshold."""
    no_saturation: bool = False
    """The saturating fit ran off (a → 0 or −∞): the points show no irreducible part."""

    @property
    def preferred(self) -> str | None:
        """ "saturating" when the F-test of its extra parameter E rejects the plain form at the
        level (the plain form is the saturating one with E = 0, so the models are nested and
        the F-test is exact for Gaussian errors), else "plain"; None without both fits.
        AICc is reported next to it; at 5–7 sizes its small-sample penalty (2k(k+1)/(n−k−1))
        outweighs any gain of a fourth parameter, so it is not the criterion here."""
        if self.plain is not None and self.no_saturation:
            return "plain"
        if self.plain is None or self.saturating is None or self.f_p is None:
            return None
        return "saturating" if self.f_p < self.alpha else "plain"


def fit_both(n: np.ndarray, m: np.ndarray, *, n_boot: int, level: float, seed: int) -> Fits:
    """Plain and saturating fits of one set of points with every check."""
    n, m = canonical(n, m)
    plain = saturating = None
    plain_reason = saturating_reason = None
    try:
        plain = fit_power_law(n, m, n_boot=n_boot, level=level, seed=seed)
    except NotEnoughData as err:
        plain_reason = str(err)
    no_saturation = False
    try:
        saturating = fit_saturating(n, m, level=level)
    except NoSaturation as err:
        saturating_reason, no_saturation = str(err), True
    except NotEnoughData as err:
        saturating_reason = str(err)
    loo_p = ext_p = loo_s = ext_s = None
    a_const = a_plain = a_sat = f_p = None
    if plain is not None:

        def refit_plain(nn: np.ndarray, mm: np.ndarray) -> PowerLawFit:
            return fit_power_law(nn, mm, level=level, ci=False)

        loo_p = loo_error(n, m, refit_plain)
        ext_p = extrapolation_error(n, m, refit_plain)
        a_const = aicc(plain.sst, plain.n_points, 1)
        a_plain = aicc(plain.sse, plain.n_points, 2)
    if saturating is not None:
        start = (saturating.E, saturating.A, saturating.a)

        def refit_saturating(nn: np.ndarray, mm: np.ndarray) -> SaturatingFit:
            return fit_saturating(nn, mm, level=level, start=start)

        loo_s = loo_error(n, m, refit_saturating)
        ext_s = extrapolation_error(n, m, refit_saturating)
        a_sat = aicc(saturating.sse, saturating.n_points, 3)
        if plain is not None:
            f_p = nested_f_test(plain.sse, 2, saturating.sse, 3, saturating.n_points)
    return Fits(
        n=n,
        m=m,
        plain=plain,
        plain_reason=plain_reason,
        saturating=saturating,
        saturating_reason=saturating_reason,
        loo_plain=loo_p,
        loo_saturating=loo_s,
        extrap_plain=ext_p,
        extrap_saturating=ext_s,
        aicc_constant=a_const,
        aicc_plain=a_plain,
        aicc_saturating=a_sat,
        f_p=f_p,
        alpha=1.0 - level,
        no_saturation=no_saturation,
    )


def follows_power_law(fit: PowerLawFit | None, a_const: float | None, a_plain: float | None) -> str:
    """ "yes" when a's interval excludes 0 (the F-test against a constant rejects it) and the
    power law's AICc beats the constant model's where both are defined; else "no: why"."""
    if fit is None:
        return DASH
    if fit.ci_method == "exact":
        return "yes (exact)" if fit.a != 0 else "no: constant"
    if fit.a_ci is None:
        return DASH
    if fit.a_ci[0] <= 0.0 <= fit.a_ci[1]:
        return "no: a's CI covers 0"
    if a_const is not None and a_plain is not None and a_plain - a_const > -2.0:
        return "no: a constant fits as well (ΔAICc > −2)"
    return "yes"


def _diff(x: float | None, y: float | None) -> float | None:
    return None if x is None or y is None else x - y


def scaling(
    store: Store,
    *,
    metrics: Sequence[str] | None = None,
    axes: Sequence[str] | None = None,
    params: str = "non_embedding",
    value: ValueSpec = FINAL,
    by: Sequence[str] = ("loss",),
    statuses: Sequence[str] = DEFAULT_STATUSES,
    aggregate: str = "size",
    lr: str = "best",
    select_by: str | None = None,
    n_boot: int = 2000,
    seed: int = 0,
    level: float = 0.95,
) -> Result:
    """Fit tables (plain, saturating), the CE-vs-EE verdict, EE's share of CE and its trend, the
    learning rates chosen, and the points (numbers only) behind the figures."""
    check_level(level)
    if params not in PARAM_METRICS:
        raise ResultsError(f"--params must be one of {', '.join(PARAM_METRICS)}, got {params!r}")
    if aggregate not in AGGREGATES:
        raise ResultsError(f"--aggregate must be one of {', '.join(AGGREGATES)}: {aggregate!r}")
    if lr not in LR_MODES:
        raise ResultsError(f"--lr must be one of {', '.join(LR_MODES)}, got {lr!r}")
    bad_axes = [a for a in axes or () if a not in AXES]
    if bad_axes:
        raise ResultsError(f"unknown axis {', '.join(bad_axes)}; axes: {', '.join(AXES)}")
    if n_boot < 1:
        raise ResultsError(f"--bootstrap must be >= 1, got {n_boot}")
    trials, notes = current_trials(store, statuses)
    result = Result("scaling", "Scaling", notes=[*store.notes, *notes])
    result.header.append(f"experiments: {', '.join(store.experiments)}")
    result.settings = {
        "level": level,
        "aggregate": aggregate,
        "params": params,
        "value": value.label,
        "lr": lr,
        "bootstrap": n_boot,
        "seed": seed,
    }
    if trials.height == 0:
        return result
    available = metric_names(store)
    n_metric = PARAM_METRICS[params]
    if n_metric not in available:
        result.notes.append(
            f"no {n_metric} metric in the store: no parameter counts, no scaling fits"
            + (" (--params total uses model/params_total)" if params != "total" else "")
        )
        return result
    if metrics:
        chosen = resolve(metrics, available)
    else:
        have = set(available)
        chosen = [
            f"eval/{s}/{leaf}"
            for s in splits(available)
            for leaf in DECOMPOSITION_LEAVES
            if f"eval/{s}/{leaf}" in have
        ]
    if not chosen:
        result.notes.append("no eval/<split>/ce (or its decomposition) written yet: no fits")
        return result
    if value.kind == "best":
        undirected = [m for m in chosen if direction(m) is None]
        if undirected:
            raise ResultsError(
                f"--value best: {', '.join(undirected)} has no better direction; use final "
                "or step:N"
            )
    has_tokens = TOKENS_METRIC in available
    missing_tokens = [a for a in axes or () if a in ("D", "C")] and not has_tokens
    if missing_tokens:
        raise ResultsError(
            f"--axis D and C need {TOKENS_METRIC} (tokens seen), which this store does not have"
        )
    if select_by is None:
        select_by = next(
            (f"eval/{s}/ce" for s in splits(available) if f"eval/{s}/ce" in available), None
        )
    data = trial_values(
        store,
        trials,
        chosen,
        value=value,
        n_metric=n_metric,
        by=by,
        lr_mode=lr,
        select_by=select_by,
        with_tokens=has_tokens,
    )
    result.notes += data.notes
    gcols = data.group_columns
    frame = data.frame
    if frame.height == 0:
        result.notes.append("no trial has both a size and a value of these metrics: no fits")
        return result
    axes = list(axes) if axes else _default_axes(frame, gcols, has_tokens, result.notes)
    result.settings["axes"] = axes
    per = "per-size means over seeds" if aggregate == "size" else "every trial a point"
    result.header += [
        trial_summary(trials),
        f"N = {n_metric}; D = {TOKENS_METRIC} at the value's step; C = 6·N·D; value per trial: "
        f"{value.label}; points: {per}",
        "plain: log M = c + a·log N by least squares (natural logs); saturating: M = E + A·N^a "
        "(a < 0) by nonlinear least squares on log M; both judged on log M",
        f"CIs at {level * 100:g}%: plain a by the OLS t-interval below {MIN_BOOTSTRAP_POINTS} "
        f"points, a studentized bootstrap ({n_boot} resamples, seed {seed}) from "
        f"{MIN_BOOTSTRAP_POINTS}; saturating E and a by Wald t-intervals (n − 3 df)",
        "LOO: leave-one-size-out prediction error (RMS of M̂/M − 1); extrap.: fit without the "
        "largest size, error at it; ΔAICc < −2 favours the first-named model; preferred form: "
        f"saturating when the F-test of E rejects E = 0 at p < {1 - level:g}",
    ]
    if axes != ["N"]:
        result.header.append(
            "lines hold the other axis fixed (column `at`): an N line per step budget, a D line "
            "per model; C is fitted on its frontier (the points no cheaper point beats)"
        )
    if data.lr_table is not None:
        result.tables.append(data.lr_table)
    _fit_tables(result, frame, gcols, chosen, axes, aggregate, n_boot, seed, level)
    return result


def _default_axes(
    frame: pl.DataFrame, gcols: list[str], has_tokens: bool, notes: list[str]
) -> list[str]:
    """N, plus D and C when tokens seen vary across sizes in some group (a data-scaling sweep);
    in a fixed-budget sweep D is one value and C = 6·N·D repeats the N fits."""
    if not has_tokens:
        notes.append(f"no {TOKENS_METRIC} in the store: fits against N only")
        return ["N"]
    per_size = (
        frame.filter(pl.col("D").is_not_null())
        .group_by([*gcols, *SIZE_KEY])
        .agg(pl.col("D").mean())
    )
    spread = (
        per_size.group_by(gcols).agg(pl.col("D").alias("d"))
        if gcols
        else per_size.select(pl.col("D").implode().alias("d"))
    )
    # Seeds feed slightly different token counts (padding, data order): budgets that differ by
    # design differ by far more than 5%.
    varies = any(distinct_count(np.array(d), rtol=0.05) >= 3 for d in spread["d"].to_list())
    if varies:
        return ["N", "D", "C"]
    notes.append(
        "tokens seen D are (nearly) the same at every size: no fit against D, and one against "
        "C = 6·N·D would repeat the N fit (ask with --axis D,C)"
    )
    return ["N"]


@dataclass
class _Tables:
    """Rows (display cells) and records (numbers) of every scaling table, filled fit by fit."""

    plain: list[list[str]] = field(default_factory=list)
    plain_data: list[dict[str, Any]] = field(default_factory=list)
    saturating: list[list[str]] = field(default_factory=list)
    saturating_data: list[dict[str, Any]] = field(default_factory=list)
    points_data: list[dict[str, Any]] = field(default_factory=list)
    verdict: list[list[str]] = field(default_factory=list)
    verdict_data: list[dict[str, Any]] = field(default_factory=list)
    share: list[list[str]] = field(default_factory=list)
    share_data: list[dict[str, Any]] = field(default_factory=list)
    trend: list[list[str]] = field(default_factory=list)
    trend_data: list[dict[str, Any]] = field(default_factory=list)
    figure: list[dict[str, Any]] = field(default_factory=list)
    share_figure: list[dict[str, Any]] = field(default_factory=list)


def _lines(points: pl.DataFrame, axis: str) -> list[tuple[str, pl.DataFrame]]:
    """The points of one group split into lines, each holding the other axis fixed: an N line
    per step budget, a D line per model; C has one line (its frontier is taken per metric)."""
    if axis == "N" and points["step"].n_unique() > 1:
        return [
            (f"step {s}", points.filter(pl.col("step") == s))
            for s in points["step"].unique().sort()
        ]
    if axis == "D" and points["N"].n_unique() > 1:
        out = []
        for n in points["N"].unique().sort():
            part = points.filter(pl.col("N") == n)
            out.append((f"model {format_value(part['model'][0])}", part))
        return out
    return [("frontier" if axis == "C" else "", points)]


def compute_frontier(points: pl.DataFrame, want: str | None) -> pl.DataFrame:
    """The points no cheaper point beats (sorted by x; for a metric to minimise, those below
    every point left of them). Metrics without a direction keep every point."""
    if want is None or points.height == 0:
        return points
    y = points["y"].to_numpy()
    score = y if want == "min" else -y
    best = np.minimum.accumulate(score)
    keep = np.r_[True, score[1:] < best[:-1]]
    return points.filter(pl.Series(keep))


def _fit_tables(
    result: Result,
    frame: pl.DataFrame,
    gcols: list[str],
    chosen: list[str],
    axes: list[str],
    aggregate: str,
    n_boot: int,
    seed: int,
    level: float,
) -> None:
    out = _Tables()
    points_by_axis = {axis: aggregate_points(frame, gcols, axis, aggregate) for axis in axes}
    groups = frame.select(gcols).unique(maintain_order=True).rows(named=True) if gcols else [{}]

    def split_by(df: pl.DataFrame, cols: list[str]) -> dict[tuple, pl.DataFrame]:
        """The frame's parts by the values of `cols` (one pass, not a filter per part)."""
        if not cols:
            return {(): df}
        return df.partition_by(cols, as_dict=True, maintain_order=True)

    trials_of = split_by(frame, gcols)
    points_of = {axis: split_by(points_by_axis[axis], gcols) for axis in axes}
    empty = {axis: points_by_axis[axis].clear() for axis in axes}
    for group in groups:
        key = tuple(group[c] for c in gcols)
        label = ", ".join(f"{k}={format_value(v)}" for k, v in group.items() if v is not None)
        head = ([format_value(group[c]) for c in gcols], {c: plain_value(group[c]) for c in gcols})
        gtrials = trials_of[key]
        for axis in axes:
            for at, line in _lines(points_of[axis].get(key, empty[axis]), axis):
                fitted: dict[str, tuple[Fits, pl.DataFrame]] = {}
                by_metric = split_by(line, ["metric"])
                for metric in chosen:
                    pts = by_metric.get((metric,))
                    if pts is None:
                        continue
                    if axis == "C":
                        pts = compute_frontier(pts, direction(metric))
                    if pts.height == 0:
                        continue
                    n, m = pts["x"].to_numpy(), pts["y"].to_numpy()
                    fits = fit_both(n, m, n_boot=n_boot, level=level, seed=seed)
                    fitted[metric] = (fits, pts)
                    _add_fit(out, head, at, metric, axis, pts, fits, level, label)
                for split in dict.fromkeys(
                    m.split("/")[1] for m in fitted if m.startswith("eval/")
                ):
                    ce_m, ee_m = f"eval/{split}/{CE}", f"eval/{split}/{EE}"
                    if ce_m in fitted and ee_m in fitted:
                        _add_verdict(
                            out,
                            head,
                            at,
                            split,
                            axis,
                            gtrials,
                            fitted[ce_m],
                            fitted[ee_m],
                            share=axis == axes[0],
                            aggregate=aggregate,
                            n_boot=n_boot,
                            seed=seed,
                            level=level,
                            label=label,
                        )
    _append_tables(result, out, gcols, level)


def _add_fit(
    out: _Tables,
    head: tuple[list[str], dict[str, Any]],
    at: str,
    metric: str,
    axis: str,
    pts: pl.DataFrame,
    fits: Fits,
    level: float,
    label: str,
) -> None:
    """The rows of one (group, line, metric, axis) in the plain, saturating and points tables."""
    gcells, grecord = head
    n, m = fits.n, fits.m
    sizes = distinct_count(n)
    lead = [*gcells, metric, axis, at, f"{sizes} ({n.size})"]
    key = {
        **grecord,
        "metric": metric,
        "axis": axis,
        "at": at or None,
        "sizes": sizes,
        "points": int(n.size),
    }
    p = fits.plain
    verdict = follows_power_law(p, fits.aicc_constant, fits.aicc_plain) if p else None
    out.plain.append(
        [
            *lead,
            DASH if p is None else f"{fmt(p.a)} {fmt_ci(*(p.a_ci or (None, None)))}",
            DASH if p is None else fmt(p.r2),
            fmt_p(p.p_slope) if p is not None and p.p_slope is not None else DASH,
            fmt(_diff(fits.aicc_plain, fits.aicc_constant), 3),
            fmt_pct(fits.loo_plain),
            fmt_pct(fits.extrap_plain, signed=True),
            verdict or fits.plain_reason or DASH,
        ]
    )
    out.plain_data.append(
        {
            **key,
            "a": p.a if p else None,
            "a_ci_low": p.a_ci[0] if p and p.a_ci else None,
            "a_ci_high": p.a_ci[1] if p and p.a_ci else None,
            "a_ci_method": p.ci_method if p else None,
            "a_se": p.a_se if p else None,
            "bootstrap_resamples": p.n_boot if p else None,
            "c": p.c if p else None,
            "r2": p.r2 if p else None,
            "sign": p.sign if p else None,
            "p_slope": p.p_slope if p else None,
            "aicc": fits.aicc_plain,
            "aicc_constant": fits.aicc_constant,
            "loo_error": fits.loo_plain,
            "extrapolation_error": fits.extrap_plain,
            "follows_power_law": verdict.startswith("yes") if verdict else None,
            "no_fit_reason": fits.plain_reason,
        }
    )
    s = fits.saturating
    d_aicc = _diff(fits.aicc_saturating, fits.aicc_plain)
    out.saturating.append(
        [
            *lead,
            DASH if s is None else f"{fmt(s.E)} {fmt_ci(*(s.E_ci or (None, None)))}",
            DASH if s is None else f"{fmt(s.a)} {fmt_ci(*(s.a_ci or (None, None)))}",
            DASH if s is None else fmt(s.r2),
            fmt_pct(fits.loo_saturating),
            fmt_pct(fits.extrap_saturating, signed=True),
            fmt(d_aicc, 3),
            fmt_p(fits.f_p) if fits.f_p is not None else DASH,
            fits.preferred or DASH,
            (s.remark if s is not None else fits.saturating_reason) or "",
        ]
    )
    out.saturating_data.append(
        {
            **key,
            "E": s.E if s else None,
            "E_ci_low": s.E_ci[0] if s and s.E_ci else None,
            "E_ci_high": s.E_ci[1] if s and s.E_ci else None,
            "A": s.A if s else None,
            "a": s.a if s else None,
            "a_ci_low": s.a_ci[0] if s and s.a_ci else None,
            "a_ci_high": s.a_ci[1] if s and s.a_ci else None,
            "r2": s.r2 if s else None,
            "aicc": fits.aicc_saturating,
            "delta_aicc_vs_plain": d_aicc,
            "f_test_p": fits.f_p,
            "loo_error": fits.loo_saturating,
            "extrapolation_error": fits.extrap_saturating,
            "preferred": fits.preferred,
            "remark": s.remark if s else fits.saturating_reason,
        }
    )
    q = {k: t_quantile((1 + level) / 2, k - 1) for k in set(pts["trials"].to_list()) if k >= 2}
    half = [
        None if sd is None or k not in q else q[k] * sd / k**0.5
        for k, sd in zip(pts["trials"].to_list(), pts["sd"].to_list(), strict=True)
    ]
    for r, h in zip(pts.iter_rows(named=True), half, strict=True):
        out.points_data.append(
            {
                **grecord,
                "metric": metric,
                "axis": axis,
                "at": at or None,
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
            "group": label + (f" ({at})" if at else ""),
            "metric": metric,
            "axis": axis,
            "n": n,
            "m": m,
            "half": np.array([np.nan if h is None else h for h in half]),
            "plain": p,
            "saturating": s,
        }
    )


def _add_verdict(
    out: _Tables,
    head: tuple[list[str], dict[str, Any]],
    at: str,
    split: str,
    axis: str,
    gtrials: pl.DataFrame,
    ce: tuple[Fits, pl.DataFrame],
    ee: tuple[Fits, pl.DataFrame],
    *,
    share: bool,
    aggregate: str,
    n_boot: int,
    seed: int,
    level: float,
    label: str,
) -> None:
    """The CE-vs-EE verdict of one line and, on the first axis, EE's share of CE and its trend,
    from the trials behind CE's points (paired with their EE)."""
    gcells, grecord = head
    paired = _paired(gtrials, f"eval/{split}/{CE}", f"eval/{split}/{EE}", axis)
    paired = paired.join(ce[1].select(SIZE_KEY), on=list(SIZE_KEY), how="semi", nulls_equal=True)
    if paired.height == 0:
        return
    strata = paired.partition_by(list(SIZE_KEY), maintain_order=True)
    diff = r2_difference(
        [t["x"].to_numpy() for t in strata],
        [t["ce"].to_numpy() for t in strata],
        [t["ee"].to_numpy() for t in strata],
        per_size_means=aggregate == "size",
        n_boot=n_boot,
        level=level,
        seed=seed,
    )
    cells, record = _verdict_row(ce[0], ee[0], diff, level)
    out.verdict.append([*gcells, split, axis, at, str(len(strata)), *cells])
    key = {**grecord, "split": split, "axis": axis, "at": at or None}
    out.verdict_data.append({**key, "sizes": len(strata), **record})
    if not share:
        return
    rows, records, trow, trec, fig = _share(paired, strata, aggregate, level)
    out.share += [[*gcells, split, at, *r] for r in rows]
    out.share_data += [{**key, **r} for r in records]
    if trow is not None:
        out.trend.append([*gcells, split, at, *trow])
        out.trend_data.append({**key, **trec})
    out.share_figure.append(
        {"group": label + (f" ({at})" if at else ""), "split": split, "axis": axis, **fig}
    )


def _table(
    name: str,
    title: str,
    columns: list[str],
    rows: list[list[str]],
    records: list[dict[str, Any]],
    show: bool = True,
) -> Table:
    """A table without its `at` column when no row holds anything fixed (one line per group)."""
    if "at" in columns and all(not r[columns.index("at")] for r in rows):
        j = columns.index("at")
        columns = columns[:j] + columns[j + 1 :]
        rows = [r[:j] + r[j + 1 :] for r in rows]
    return Table(
        name=name,
        title=title,
        columns=columns,
        rows=rows,
        show=show,
        data=pl.DataFrame(records, infer_schema_length=None),
    )


def _append_tables(result: Result, out: _Tables, gcols: list[str], level: float) -> None:
    pct = f"{level * 100:g}%"
    lead = [*gcols, "metric", "axis", "at", "sizes (points)"]
    result.tables.append(
        _table(
            "scaling_power",
            "plain power law log M = c + a·log N",
            [
                *lead,
                f"a ({pct} CI)",
                "R²",
                "a = 0?",
                "ΔAICc vs constant",
                "LOO err",
                "extrap. err",
                "power law?",
            ],
            out.plain,
            out.plain_data,
        )
    )
    reasons = {r["remark"] for r in out.saturating_data}
    if (
        out.saturating_data
        and all(r["E"] is None for r in out.saturating_data)
        and len(reasons) == 1
    ):
        # Every row would say the same thing: say it once.
        result.notes.append(f"saturating form E + A·N^a, every group: {reasons.pop()}")
        out.saturating = []
    result.tables.append(
        _table(
            "scaling_saturating",
            "saturating power law M = E + A·N^a (E: irreducible part)",
            [
                *lead,
                f"E ({pct} CI)",
                f"a ({pct} CI)",
                "R²",
                "LOO err",
                "extrap. err",
                "ΔAICc vs plain",
                "F-test p",
                "preferred",
                "remark",
            ],
            out.saturating,
            out.saturating_data,
            show=bool(out.saturating),
        )
    )
    if out.verdict:
        result.tables.append(
            _table(
                "scaling_verdict",
                "verdict: which follows a power law better, CE or its error entropy EE",
                [
                    *gcols,
                    "split",
                    "axis",
                    "at",
                    "sizes",
                    "R² CE / EE",
                    f"ΔR² EE − CE ({pct} CI)",
                    "LOO CE / EE",
                    "extrap. CE / EE",
                    "CE saturating (E)",
                    "verdict",
                ],
                out.verdict,
                out.verdict_data,
            )
        )
    if out.share:
        result.tables.append(
            _table(
                "scaling_ee_share",
                f"error entropy's share of CE per size (mean ± {pct} CI over trials)",
                [*gcols, "split", "at", "size", "x", "trials", "EE/CE"],
                out.share,
                out.share_data,
            )
        )
    if out.trend:
        result.tables.append(
            _table(
                "scaling_ee_share_trend",
                "trend of EE/CE with size: least-squares slope per decade of the axis",
                [*gcols, "split", "at", "sizes", f"slope per decade ({pct} CI)", "p", "trend"],
                out.trend,
                out.trend_data,
            )
        )
    result.tables.append(
        Table(
            name="scaling_points",
            title="the points fitted (per-size means ± CI over trials, or trials)",
            columns=[],
            rows=[],
            data=pl.DataFrame(out.points_data, infer_schema_length=None),
            show=False,
        )
    )
    if out.plain_data and all(r["a"] is None for r in out.plain_data):
        result.notes.append("no group has enough sizes for a fit (3 or more distinct sizes needed)")
    result.figure_data["scaling"] = out.figure
    result.figure_data["ee_share"] = out.share_figure


def _paired(gtrials: pl.DataFrame, ce_m: str, ee_m: str, axis: str) -> pl.DataFrame:
    """Per trial its CE and EE (same trial, same step) and its axis value, sorted by size."""
    from analysis.scaling_points import axis_values

    both = gtrials.filter(pl.col("metric").is_in([ce_m, ee_m])).with_columns(
        axis_values(gtrials, axis).alias("x")
    )
    wide = both.pivot(
        on="metric", index=["experiment", "trial_id", *SIZE_KEY, "x"], values="value"
    ).rename({ce_m: "ce", ee_m: "ee"}, strict=False)
    if not {"ce", "ee"} <= set(wide.columns):
        return wide.clear()
    wide = wide.drop_nulls(["ce", "ee", "x"]).filter((pl.col("x") > 0) & (pl.col("ce") != 0))
    return wide.sort(["x", *SIZE_KEY, "experiment", "trial_id"], nulls_last=True)


def _verdict_row(
    f_ce: Fits, f_ee: Fits, diff: Any, level: float
) -> tuple[list[str], dict[str, Any]]:
    """Display cells and the record of one CE-vs-EE verdict."""
    r2_ce = f_ce.plain.r2 if f_ce.plain else None
    r2_ee = f_ee.plain.r2 if f_ee.plain else None
    ci = diff.ci if diff is not None else None
    delta = diff.delta if diff is not None else None
    if r2_ce is None or r2_ee is None or delta is None:
        verdict = "no verdict: a fit is missing"
        winner = None
    elif ci is not None:
        if ci[0] > 0:
            winner, verdict = "EE", "EE (ΔR² CI > 0)"
        elif ci[1] < 0:
            winner, verdict = "CE", "CE (ΔR² CI < 0)"
        else:
            winner, verdict = None, "no clear difference (ΔR² CI covers 0)"
    else:
        winner = "EE" if delta > 0 else "CE" if delta < 0 else None
        verdict = f"{winner or 'neither'} by R² only ({diff.how})"
    s = f_ce.saturating
    sat = DASH
    if s is not None and f_ce.preferred == "saturating":
        sat = f"yes: E={fmt(s.E, 3)} {fmt_ci(*(s.E_ci or (None, None)))}"
    elif f_ce.preferred == "plain":
        sat = "no"
    cells = [
        f"{fmt(r2_ce)} / {fmt(r2_ee)}",
        DASH if delta is None else f"{fmt(delta, 3)} {fmt_ci(*(ci or (None, None)))}",
        f"{fmt_pct(f_ce.loo_plain)} / {fmt_pct(f_ee.loo_plain)}",
        f"{fmt_pct(f_ce.extrap_plain, True)} / {fmt_pct(f_ee.extrap_plain, True)}",
        sat,
        verdict,
    ]
    record = {
        "r2_ce": r2_ce,
        "r2_ee": r2_ee,
        "delta_r2": delta,
        "delta_r2_ci_low": ci[0] if ci else None,
        "delta_r2_ci_high": ci[1] if ci else None,
        "delta_r2_ci_how": diff.how if diff is not None else None,
        "level": level,
        "loo_ce": f_ce.loo_plain,
        "loo_ee": f_ee.loo_plain,
        "extrapolation_ce": f_ce.extrap_plain,
        "extrapolation_ee": f_ee.extrap_plain,
        "extrapolation_ce_saturating": f_ce.extrap_saturating,
        "extrapolation_ee_saturating": f_ee.extrap_saturating,
        "ce_preferred_form": f_ce.preferred,
        "ce_E": s.E if s else None,
        "winner": winner,
        "verdict": verdict,
    }
    return cells, record


def _share(
    paired: pl.DataFrame, strata: list[pl.DataFrame], aggregate: str, level: float
) -> tuple[list[list[str]], list[dict[str, Any]], list[str] | None, dict[str, Any], dict]:
    """EE/CE per size (mean ± CI over its trials) and the slope of the share against
    log10(axis): per-size means (or trials) by least squares, t-interval with n − 2 df."""
    rows, records = [], []
    xs, means = [], []
    for s_ in strata:
        ratios = (s_["ee"] / s_["ce"]).to_list()
        ci = mean_ci(ratios, level)
        x = float(s_["x"].mean())
        rows.append(
            [format_value(s_["model"][0]), f"{x:.4g}", str(ci.n), fmt_pm(ci.mean, ci.half_width)]
        )
        records.append(
            {
                "model": s_["model"][0],
                "x": x,
                "trials": ci.n,
                "ee_over_ce": ci.mean,
                "ci_low": ci.low,
                "ci_high": ci.high,
            }
        )
        xs.append(x)
        means.append(ci.mean)
    if aggregate == "size":
        tx, ty = np.log10(np.array(xs)), np.array(means)
    else:
        tx = np.log10(paired["x"].to_numpy())
        ty = (paired["ee"] / paired["ce"]).to_numpy()
    fig = {
        "x": np.array(xs),
        "share": np.array(means),
        "half": np.array(
            [np.nan if r["ci_low"] is None else r["ee_over_ce"] - r["ci_low"] for r in records]
        ),
    }
    if distinct_count(tx) < 3:
        return rows, records, None, {}, fig
    reg = stats.linregress(tx, ty)
    half = t_quantile((1 + level) / 2, tx.size - 2) * reg.stderr
    lo, hi = reg.slope - half, reg.slope + half
    trend = "falls" if hi < 0 else "rises" if lo > 0 else "no clear trend (CI covers 0)"
    row = [str(len(strata)), f"{fmt(reg.slope, 3)} {fmt_ci(lo, hi)}", fmt_p(reg.pvalue), trend]
    rec = {
        "sizes": len(strata),
        "slope_per_decade": float(reg.slope),
        "ci_low": float(lo),
        "ci_high": float(hi),
        "p": float(reg.pvalue),
        "trend": trend,
    }
    return rows, records, row, rec, fig
