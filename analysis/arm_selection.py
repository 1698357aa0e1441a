"""What a paired command compares, and the values it compares: the arm-selection settings the
ablation and power commands share (`ArmSelection`: the metrics and per-trial values, how trials
group into arms, which arms and baseline, which trial statuses) and the values per arm, metric,
value kind and seed they both read (`collect_seed_values`). Each command's settings class
derives from `ArmSelection`, so a shared option is one field with one docstring."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

import polars as pl

from analysis.arms import Arms, assign_arms
from analysis.command_start import freeze_lists
from analysis.seed_values import SeedValues, arm_seed_values
from analysis.selection import (
    FINAL,
    VALUES_FLAG,
    ValueSpec,
    missing_values_note,
    select_values,
)
from analysis.settings_flags import ARMS_FLAG, METRICS_FLAG, STATUS_FLAG
from records.errors import ResultsError
from records.reader import DEFAULT_STATUSES

Key = tuple[str, str, ValueSpec]
"""(arm, metric, value kind): one cell of a paired command's table."""


@dataclass(frozen=True)
class ArmSelection:
    """The options a paired command shares: what is compared, over which arms and trials."""

    metrics: tuple[str, ...] | None = field(default=None, metadata=METRICS_FLAG)
    """Metric names or globs (--metrics); None: the headline metrics."""
    values: tuple[ValueSpec, ...] = field(default=(FINAL,), metadata=VALUES_FLAG)
    """Values of a trial, one column each per metric (--value): final, best, step:N, last:K,
    auc, ..."""
    by: tuple[str, ...] = ("loss",)
    """Configuration columns that key the arms (--by)."""
    pool: tuple[str, ...] = ()
    """Columns pooled inside an arm (--pool): one study run as several experiments."""
    block: tuple[str, ...] = ()
    """Columns an arm is compared within (--block): its baseline has the same values, and they
    make an arm's units with the seed."""
    only: tuple[str, ...] = field(default=(), metadata=ARMS_FLAG)
    """Only these arms and their baselines (--arms): a family of tests chosen in advance; empty:
    every arm."""
    baseline: str = "mle"
    """The arm each other arm is compared with: a loss, or an arm's label (--baseline)."""
    statuses: tuple[str, ...] = field(default=DEFAULT_STATUSES, metadata=STATUS_FLAG)
    """Trial statuses read (--status)."""

    def __post_init__(self) -> None:
        freeze_lists(self, ("metrics", "values", "by", "pool", "block", "only", "statuses"))

    def assign(
        self, trials: pl.DataFrame, sampled: frozenset[tuple[str | None, str]] = frozenset()
    ) -> Arms:
        """`trials` grouped into arms by `by`, `pool` and `block`, the baseline's first; a
        search's `sampled` parameters (analysis.sweep_manifest.store_sampled) named in labels."""
        return assign_arms(
            trials,
            self.by,
            pool=self.pool,
            block=self.block,
            baseline=self.baseline,
            sampled=sampled,
        )

    def check_only(self, arms: Arms) -> None:
        """ResultsError for --arms labels that name no arm."""
        unknown = [a for a in self.only if a not in arms.key_values]
        if unknown:
            raise ResultsError(
                f"unknown arm {', '.join(map(repr, unknown))} for --arms; arms: "
                f"{', '.join(arms.order)}"
            )


def collect_seed_values(
    latest: pl.DataFrame,
    arms: Arms,
    values: Sequence[ValueSpec],
    known: pl.DataFrame | None,
    notes: list[str],
) -> dict[Key, SeedValues]:
    """(arm, metric, value kind) -> {seed_key: value} from deduplicated rows; what was left out
    (steps not reported, summaries a trial cannot give, non-finite values) goes to `notes`."""
    per: dict[Key, SeedValues] = defaultdict(dict)
    for spec in values:
        picked = select_values(latest, spec)
        if spec.kind == "step":
            have = picked.select(pl.struct("experiment", "trial_id").n_unique()).item()
            total = latest.select(pl.struct("experiment", "trial_id").n_unique()).item()
            if have < total:
                notes.append(
                    f"{total - have} of {total} trial(s) report nothing at step {spec.step}"
                )
        missing = missing_values_note(latest, picked, spec)
        if missing:
            notes.append(missing)
        seed_values, more = arm_seed_values(
            picked.filter(pl.col("value").is_not_null()), arms, known
        )
        notes += [n for n in more if n not in notes]
        for arm, seed, metric, value in seed_values.select(
            "arm", "seed_key", "metric", "value"
        ).iter_rows():
            per[(arm, metric, spec)][seed] = value
    return per
