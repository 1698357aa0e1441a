"""`python -m analysis plateau`: per arm, is the metric still learning when training stops?
A slope table per chosen metric by the plateau rule (`analysis.plateau_rule`: the slope over the
last K evaluations, its interval over seeds, the verdict), its options one frozen
PlateauSettings, checked when made; and the end-of-sweep warning of a grid
(`still_learning_warning`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from analysis.arms import assign_arms
from analysis.command_start import freeze_lists, started_result
from analysis.plateau_rule import (
    RULE_NOTE,
    STILL,
    arm_slopes,
    default_metric,
    per_seed_values,
    slope_table,
)
from analysis.result import Result
from analysis.seed_stats import check_level
from analysis.settings_flags import METRICS_FLAG, STATUS_FLAG, flag
from analysis.sweep_manifest import store_sampled
from records.errors import ResultsError
from records.metric_names import resolve
from records.reader import DEFAULT_STATUSES, Store, metric_names, trial_summary


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
    per_seed = per_seed_values(store, arms, chosen)
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
