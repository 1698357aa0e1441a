"""The plateau check: is an arm still learning when its training stops?

For each arm and metric, the slope of the metric over the last K evaluations (default 3), in
units per 1000 steps. The rule, fixed here: per seed, the OLS slope of the value on step/1000
over that seed's last K evaluations; the arm's slope is the mean of its seeds' slopes with a
t interval over seeds (df = seeds − 1: the seed is the unit, so the seed-to-seed spread of the
slopes is the uncertainty). With a single seed the interval is that seed's OLS interval
(df = K − 2; none when K = 2).

An arm is flagged **still learning** when the interval lies entirely on the improving side of
`min_slope` (default 0): its lower bound, in the improving direction (up for accuracy, down for a
loss), is above `min_slope`. An interval entirely on the worsening side is "declining"; else
"plateau" (the data cannot tell the slope from `min_slope`). Metrics without a better direction
are "still changing" when the interval excludes ±`min_slope` on either side.

Used by `python -m analysis plateau` (its options one frozen PlateauSettings, checked when made),
by `ablation --plateau` (a † on the arm and a table) and at the end of `numsweep sweep` on a grid
(a warning line).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl
from scipy import stats

from analysis.arms import Arms, assign_arms
from analysis.command_start import freeze_lists, started_result
from analysis.headline import headline
from analysis.result import DASH, Column, Result, Table, fmt, fmt_ci, records_table
from analysis.seed_stats import check_level, mean_ci
from analysis.seed_values import arm_seed_values
from analysis.settings_flags import METRICS_FLAG, STATUS_FLAG, flag
from analysis.sweep_manifest import store_sampled
from records.errors import ResultsError
from records.metric_names import direction, resolve
from records.reader import DEFAULT_STATUSES, Store, metric_names, read_latest, trial_summary

if TYPE_CHECKING:
    from analysis.ablation_options import PairedOptions

STILL = "still learning"
FLAG = "†"


@dataclass(frozen=True)
class ArmSlope:
    """One arm's slope of one metric over its last evaluations (per 1000 steps)."""

    arm: str
    metric: str
    seeds: int
    steps: tuple[int, int] | None
    """First and last step of the window (over all seeds)."""
    slope: float | None
    ci: tuple[float, float] | None
    verdict: str
    reason: str | None = None

    @property
    def still_learning(self) -> bool:
        return self.verdict in (STILL, "still changing")


def _seed_slope(steps: np.ndarray, values: np.ndarray) -> tuple[float, Any]:
    fit = stats.linregress(steps / 1000.0, values)
    return float(fit.slope), fit


def _verdict(ci: tuple[float, float] | None, want: str | None, min_slope: float) -> str:
    if ci is None:
        return "no interval"
    lo, hi = ci
    if want is None:
        return "still changing" if lo > min_slope or hi < -min_slope else "plateau"
    sign = 1.0 if want == "max" else -1.0
    better_lo, better_hi = sorted((sign * lo, sign * hi))
    if better_lo > min_slope:
        return STILL
    if better_hi < 0:
        return "declining"
    return "plateau"


def arm_slopes(
    per_seed: pl.DataFrame, metric: str, last: int, level: float, min_slope: float = 0.0
) -> list[ArmSlope]:
    """The slopes of `metric` per arm from (arm, seed_key, metric, step, value) rows."""
    out = []
    rows = per_seed.filter(pl.col("metric") == metric).sort("arm", "seed_key", "step")
    want = direction(metric)
    for (arm,), part in rows.group_by(["arm"], maintain_order=True):
        slopes, fits, lo_step, hi_step = [], [], math.inf, -math.inf
        for (_,), seed_rows in part.group_by(["seed_key"], maintain_order=True):
            tail = seed_rows.tail(last)
            if tail.height < last:
                continue
            steps = tail["step"].to_numpy().astype(np.float64)
            slope, fit = _seed_slope(steps, tail["value"].to_numpy())
            slopes.append(slope)
            fits.append(fit)
            lo_step, hi_step = min(lo_step, steps[0]), max(hi_step, steps[-1])
        window = (int(lo_step), int(hi_step)) if slopes else None
        if not slopes:
            why = f"no seed has {last} evaluations of {metric}"
            out.append(ArmSlope(str(arm), metric, 0, None, None, None, "no slope", why))
            continue
        if len(slopes) >= 2:
            ci_ = mean_ci(slopes, level)
            slope, ci = ci_.mean, (ci_.low, ci_.high)
        elif last >= 3:
            # one seed: its own OLS interval (df = K − 2)
            slope = slopes[0]
            half = float(stats.t.ppf((1 + level) / 2, last - 2) * fits[0].stderr)
            ci = (slope - half, slope + half)
        else:
            slope, ci = slopes[0], None
        reason = None if ci is not None else "one seed and 2 evaluations: no interval"
        out.append(
            ArmSlope(
                str(arm),
                metric,
                len(slopes),
                window,
                slope,
                ci,
                _verdict(ci, want, min_slope),
                reason,
            )
        )
    return out


def default_metric(available: Sequence[str]) -> str | None:
    """The primary metric: the first headline metric with a better direction."""
    for m in [*headline(available), *available]:
        if direction(m) and m.startswith("eval/"):
            return m
    return None


SLOPE_COLUMNS = (
    Column("arm", lambda r: r["arm"]),
    Column("metric", lambda r: r["metric"]),
    Column("seeds", lambda r: str(r["seeds"])),
    Column(
        "steps",
        lambda r: DASH if r["step_from"] is None else f"{r['step_from']}–{r['step_to']}",
    ),
    Column("slope /1000 steps", lambda r: fmt(r["slope_per_1000"])),
    Column("CI", lambda r: fmt_ci(r["ci_low"], r["ci_high"])),
    Column(
        "verdict",
        lambda r: r["verdict"] + (f" ({r['no_slope_reason']})" if r["no_slope_reason"] else ""),
    ),
)


def slope_table(slopes: list[ArmSlope], last: int, level: float, min_slope: float) -> Table:
    records = [
        {
            "arm": s.arm,
            "metric": s.metric,
            "seeds": s.seeds,
            "last": last,
            "step_from": s.steps[0] if s.steps else None,
            "step_to": s.steps[1] if s.steps else None,
            "slope_per_1000": s.slope,
            "ci_low": s.ci[0] if s.ci else None,
            "ci_high": s.ci[1] if s.ci else None,
            "level": level,
            "min_slope": min_slope,
            "verdict": s.verdict,
            "still_learning": s.still_learning,
            "no_slope_reason": s.reason,
        }
        for s in slopes
    ]
    title = (
        f"plateau check: slope per 1000 steps over the last {last} evaluations (mean of the "
        f"seeds' OLS slopes, {level * 100:g}% t interval over seeds); still learning = interval "
        f"above {min_slope:g} in the improving direction"
    )
    return records_table("plateau", title, SLOPE_COLUMNS, records)


def _per_seed(store: Store, arms: Arms, metrics: Sequence[str]) -> pl.DataFrame:
    latest, _ = read_latest(store, metrics)
    per_seed, _ = arm_seed_values(latest, arms)
    return per_seed


@dataclass(frozen=True)
class PlateauSettings:
    """Options of the plateau command (`python -m analysis plateau --help` names each flag),
    checked when made, in the order the command always checked them."""

    metrics: tuple[str, ...] | None = field(default=None, metadata=METRICS_FLAG)
    """Metric names or globs to check (--metric); None: the primary metric (the first headline
    eval/ metric with a better direction)."""
    last: int = field(default=3, metadata=flag(metavar="K"))
    """Evaluations per seed the slope is fitted over (--last), at least 2."""
    by: tuple[str, ...] = ("loss",)
    """Configuration columns that key the arms (--by)."""
    pool: tuple[str, ...] = ()
    """Columns pooled inside an arm (--pool)."""
    block: tuple[str, ...] = ()
    """Columns whose values, with the seed, make an arm's units (--block)."""
    statuses: tuple[str, ...] = field(default=DEFAULT_STATUSES, metadata=STATUS_FLAG)
    """Trial statuses read (--status)."""
    level: float = 0.95
    """Confidence level of the slope intervals (--level)."""
    min_slope: float = 0.0
    """Slope per 1000 steps an interval must lie above, in the improving direction, for
    "still learning" (--min-slope), at least 0."""

    def __post_init__(self) -> None:
        freeze_lists(self, ("metrics", "by", "pool", "block", "statuses"))
        check_level(self.level)
        if self.last < 2:
            raise ResultsError(f"--last must be >= 2, got {self.last}")
        if not math.isfinite(self.min_slope) or self.min_slope < 0:
            raise ResultsError(f"--min-slope must be >= 0, got {self.min_slope}")

    def as_json(self) -> dict[str, Any]:
        """The settings a plateau result's JSON reports."""
        return {"level": self.level, "last": self.last, "min_slope": self.min_slope}


def plateau(store: Store, settings: PlateauSettings) -> Result:
    """`python -m analysis plateau`: the slope table of every arm for each chosen metric."""
    # The three numbers every table and slope uses, by name.
    last, level, min_slope = settings.last, settings.level, settings.min_slope
    trials, result = started_result(store, settings, "plateau", "Plateau check")
    if trials.height == 0:
        return result
    available = metric_names(store)
    chosen = (
        resolve(settings.metrics, available) if settings.metrics else [default_metric(available)]
    )
    if chosen == [None]:
        result.notes.append("no eval/ metric with a better direction: give --metric")
        return result
    arms = assign_arms(
        trials,
        settings.by,
        pool=settings.pool,
        block=settings.block,
        baseline="mle",
        sampled=store_sampled(store),
    )
    result.notes += arms.notes
    per_seed = _per_seed(store, arms, chosen)
    slopes = [s for m in chosen for s in arm_slopes(per_seed, m, last, level, min_slope)]
    order = {a: i for i, a in enumerate(arms.order)}
    slopes.sort(key=lambda s: (chosen.index(s.metric), order.get(s.arm, len(order))))
    result.header.append(trial_summary(trials))
    result.tables.append(slope_table(slopes, last, level, min_slope))
    flagged = [f"{s.arm} ({s.metric})" for s in slopes if s.still_learning]
    if flagged:
        result.notes.append(f"{STILL} at the end of training: {', '.join(flagged)}")
    result.notes.append(RULE_NOTE)
    return result


RULE_NOTE = (
    "rule: per seed the OLS slope over its last K evaluations, the arm's slope their mean with "
    "a t interval over seeds; still learning iff the interval lies above --min-slope in the "
    "improving direction (a final-step comparison then depends on when training stopped: use "
    "a summary over the curve, --value last:K or auc, or train longer)"
)


def flag_arms(
    result: Result,
    store: Store,
    trials: pl.DataFrame,
    arms: Arms,
    opts: PairedOptions,
    chosen: Sequence[str],
    rows_in_use: Sequence[str],
    level: float,
) -> None:
    """`ablation --plateau`: the slope table after the others, a † on the arm cell of every
    table's row of an arm that is still learning, and a note."""
    available = metric_names(store)
    if opts.plateau:
        metric = resolve([opts.plateau], available)[0]
    else:
        metric = next((m for m in chosen if direction(m)), None) or default_metric(available)
    if metric is None:
        result.notes.append("plateau check: no metric with a better direction (--plateau M)")
        return
    per_seed = _per_seed(store, arms, [metric])
    slopes = [
        s
        for s in arm_slopes(per_seed, metric, opts.plateau_last, level, opts.min_slope)
        if s.arm in rows_in_use
    ]
    slopes.sort(key=lambda s: list(rows_in_use).index(s.arm))
    still = {s.arm for s in slopes if s.still_learning}
    for table in result.tables:
        for row in table.rows:
            if row and row[0] in still:
                row[0] = f"{row[0]} {FLAG}"
    result.tables.append(slope_table(slopes, opts.plateau_last, level, opts.min_slope))
    result.settings["plateau"] = {"metric": metric, "last": opts.plateau_last}
    if still:
        result.notes.append(
            f"{FLAG} {STILL}: the slope of {metric} over the last {opts.plateau_last} "
            f"evaluations is above {opts.min_slope:g} per 1000 steps (plateau table)"
        )
    result.notes.append(RULE_NOTE)


def still_learning_warning(root: str, experiment: str, last: int = 3) -> list[str]:
    """The end-of-sweep warning lines for a grid: one per arm still learning in the primary
    metric, or nothing (also nothing when the check cannot be made)."""
    from records.reader import open_store

    try:
        store = open_store(root, [experiment])
        res = plateau(store, PlateauSettings(last=last))
    except ResultsError:
        return []
    tables = [t for t in res.tables if t.name == "plateau"]
    if not tables or tables[0].data is None or tables[0].data.height == 0:
        return []
    flagged = tables[0].data.filter(pl.col("still_learning"))
    return [
        f"warning: {r['arm']} is still learning at step {r['step_to']}: {r['metric']} "
        f"{r['slope_per_1000']:+.3g} per 1000 steps over the last {last} evaluations "
        f"(CI [{r['ci_low']:+.3g}, {r['ci_high']:+.3g}]); final-step comparisons depend on "
        "when training stopped (python -m analysis plateau; --value last:K or auc)"
        for r in flagged.iter_rows(named=True)
    ]
