"""`analysis predict`: what will a planned run give? The loss at a planned (N, D) — or at N alone
where the points have no D axis — from the joint L(N, D) (or M = E + A·N^−α by the Huber
loss) of a points table or a store, with a prediction interval from the bootstrap (holdout.py),
and beside it the held-out check that says whether to trust it: the same fit without the
largest compute budget (size), predicting it, error against interval.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from analysis.arms import plain_value
from analysis.result import Result
from analysis.scaling import tables
from analysis.scaling.cells import Cells
from analysis.scaling.holdout import bootstrap_n, holdout_cells, prediction
from analysis.scaling.joint import bootstrap_joint
from analysis.scaling.joint_fits import group_cells
from analysis.scaling.points import PARAM_METRICS, TOKENS_METRIC, TrialValues, trial_values
from analysis.scaling.powerlaw import NotEnoughData, distinct_count
from analysis.scaling.table_points import TABLE_SUFFIXES, TableColumns, table_values
from analysis.seed_stats import check_level
from analysis.selection import FINAL
from analysis.settings_flags import STATUS_FLAG, flag
from records.errors import ResultsError
from records.metric_names import splits
from records.reader import DEFAULT_STATUSES, current_trials, metric_names, open_store


@dataclass(frozen=True)
class PredictSettings:
    """Options of `python -m analysis predict` (its --help names each flag)."""

    n: float
    """Planned parameters N (--n)."""
    d: float | None = None
    """Planned tokens D (--d); needed when the points have a D axis, refused when not."""
    columns: TableColumns = field(
        default_factory=TableColumns, metadata=flag(renames={"n": ("--n-col",), "d": ("--d-col",)})
    )
    """A table's columns (--n-col, --d-col, --metric, --seed-column, --group, --flops)."""
    metric: str | None = field(default=None, metadata=flag(metavar="M"))
    """A store's metric (--metric); None: eval/<first split>/ce."""
    params: str = field(default="non_embedding", metadata=flag(choices=tuple(PARAM_METRICS)))
    """A store's parameter count (--params): non_embedding or total."""
    statuses: tuple[str, ...] = field(default=DEFAULT_STATUSES, metadata=STATUS_FLAG)
    """A store's trial statuses read (--status)."""
    experiments: tuple[str, ...] | None = field(default=None, metadata=flag(command_line=False))
    """A store's experiments read (--experiment); None: all."""
    n_boot: int = field(default=1000, metadata=flag("--fit-bootstrap"))
    """Bootstrap resamples of the fit and of the held-out check (--fit-bootstrap)."""
    seed: int = 0
    """Seed of the bootstraps (--seed)."""
    level: float = 0.95
    """Level of the prediction intervals (--level)."""

    def __post_init__(self) -> None:
        check_level(self.level)
        if not self.n > 0 or (self.d is not None and not self.d > 0):
            raise ResultsError(f"--n and --d must be positive, got {self.n}, {self.d}")
        if self.n_boot < 1:
            raise ResultsError(f"--fit-bootstrap must be >= 1, got {self.n_boot}")
        if self.params not in PARAM_METRICS:
            raise ResultsError(f"--params must be one of {', '.join(PARAM_METRICS)}")


def is_table(source: str | Path) -> bool:
    """Whether `source` names a points table (by its suffix) rather than a results store."""
    return Path(str(source)).suffix.lower() in TABLE_SUFFIXES


def _store_values(source: str, s: PredictSettings, result: Result) -> TrialValues:
    store = open_store(source, s.experiments)
    trials, notes = current_trials(store, s.statuses)
    result.notes += [*store.notes, *notes]
    result.header.append(f"experiments: {', '.join(store.experiments)}")
    available = metric_names(store)
    metric = s.metric or next(
        (f"eval/{x}/ce" for x in splits(available) if f"eval/{x}/ce" in available), None
    )
    if metric is None or metric not in available:
        raise ResultsError(f"--metric {metric}: not in the store (give --metric)")
    data = trial_values(
        store,
        trials,
        [metric],
        value=FINAL,
        n_metric=PARAM_METRICS[s.params],
        by=("loss",),
        lr_mode="best",
        select_by=metric,
        with_tokens=TOKENS_METRIC in available,
    )
    result.notes += data.notes
    if data.frame.height == 0:
        raise ResultsError(f"no trial in {source} has both a size and a value of {metric}")
    return data


def _joint_or_n(data: TrialValues, s: PredictSettings) -> bool:
    """True for the joint fit: the points have three or more distinct D. Refuses a planned D
    the points cannot speak to, and a missing one they need."""
    d = data.frame["D"].drop_nulls().to_numpy()
    has_d = d.size > 0 and distinct_count(d, rtol=0.05) >= 3
    if has_d and s.d is None:
        raise ResultsError("--d: the points vary in D, so the fit is L(N, D): give the planned D")
    if not has_d and s.d is not None:
        at = f" (≈ {np.median(d):.3g})" if d.size else ""
        raise ResultsError(
            f"--d {s.d:g}: the points have no D axis{at}; a prediction at another D needs "
            "points that vary in D (leave --d out to predict at N)"
        )
    return has_d


def predict(source: str | Path, settings: PredictSettings) -> Result:
    """The prediction and its held-out check per fit group of `source` (a table or a store)."""
    s = settings
    result = Result(
        "predict", f"Prediction at N = {s.n:.3g}" + (f", D = {s.d:.3g}" if s.d is not None else "")
    )
    result.settings = {
        "n": s.n,
        "d": s.d,
        "level": s.level,
        "bootstrap": s.n_boot,
        "seed": s.seed,
        "source": str(source),
    }
    if is_table(source):
        data = table_values(source, s.columns)
        result.header.append(data.notes[0])
        result.notes += data.notes[1:]
    else:
        data = _store_values(str(source), s, result)
    joint = _joint_or_n(data, s)
    result.header.append(_method(joint, s, data.flops_per_param_token))
    rows, checks = [], []
    keys = [*data.group_columns, "metric"]
    parts = data.frame.partition_by(keys, as_dict=True, maintain_order=True)
    for values, part in parts.items():
        key = {c: plain_value(v) for c, v in zip(keys, values, strict=True)}
        cells = (
            group_cells(part)
            if joint
            else Cells.of(part["N"].to_numpy(), None, part["value"].to_numpy())
        )
        rows.append({**key, **_predicted(cells, joint, s)})
        held = holdout_cells(
            cells,
            form="joint" if joint else "huber",
            axis="N",
            n_boot=s.n_boot,
            level=s.level,
            seed=s.seed,
            k=data.flops_per_param_token,
        )
        checks.append({**key, "axis": "N, D" if joint else "N", "at": None, **held})
    pct = f"{s.level * 100:g}%"
    result.tables.append(tables.planned_table(rows, data.group_columns, pct))
    result.tables.append(tables.holdout_table(checks, data.group_columns, pct))
    return result


def _method(joint: bool, s: PredictSettings, k: float) -> str:
    form = "joint L(N, D) = E + A·N^−α + B·D^−β" if joint else "M = E + A·N^−α"
    return (
        f"{form} by Huber loss on log M; prediction interval: {s.n_boot} bootstrap curves "
        f"(seed {s.seed}) × a resampled log residual, {s.level * 100:g}%; held-out check: "
        + ("without the largest compute budget" if joint else "without the largest N")
        + (f"; C = {k:g}·N·D" if joint else "")
    )


def _predicted(cells: Cells, joint: bool, s: PredictSettings) -> dict:
    """The prediction at (N, D) of one group's cells, or why there is none."""
    fit = bootstrap_joint if joint else bootstrap_n
    try:
        boot = fit(cells, n_boot=s.n_boot, seed=s.seed)
    except NotEnoughData as err:
        return {
            "points": cells.size,
            "predicted": None,
            "pi_low": None,
            "pi_high": None,
            "beyond": None,
            "remark": str(err),
        }
    d = np.array([s.d if joint else 1.0])
    point, lo, hi = prediction(boot, np.array([s.n]), d, s.level, s.seed)
    beyond = f"{s.n / float(cells.n.max()):.3g}× N"
    if joint:
        beyond += f", {s.n * float(d[0]) / float(np.max(cells.n * cells.d)):.3g}× N·D"
    return {
        "points": cells.size,
        "predicted": float(point[0]),
        "pi_low": None if lo is None else float(lo[0]),
        "pi_high": None if hi is None else float(hi[0]),
        "beyond": beyond,
        "remark": None if lo is not None else "no resample could be refitted: no interval",
    }
