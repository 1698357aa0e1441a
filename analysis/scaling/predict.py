"""`analysis predict`: what will planned runs give? The loss at each planned (N, D) — or at N
alone where the points have no D axis — from the joint L(N, D) (or M = E + A·N^−α by the Huber
loss) of a points table or a store, with a prediction interval from the bootstrap (holdout.py),
and beside it the held-out check that says whether to trust it: the same fit without the
largest compute budget (size), predicting it, error against interval. Several planned runs
(`--n 1e9,7e9 --d 2e10,1.4e11`) share one fit and one bootstrap per group; the form is chosen
as `scaling`'s (--tie-exponents, --fix, --huber-delta).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from analysis.arms import plain_value
from analysis.result import Result
from analysis.scaling import tables
from analysis.scaling.cells import Cells
from analysis.scaling.forms import HUBER_DELTA, JointForm, parse_fix
from analysis.scaling.holdout import holdout_cells, prediction
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

    n: tuple[float, ...]
    """Planned parameters N (--n, comma-separated for several runs)."""
    d: tuple[float, ...] | None = None
    """Planned tokens D (--d), one per N or one for all; needed when the points have a D axis,
    refused when not."""
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
    tie_exponents: bool = False
    """Fit the joint form with α = β (--tie-exponents), as `scaling` does."""
    fix: tuple[str, ...] = field(default=(), metadata=flag(metavar="NAME=VALUE"))
    """Hold parameters of the fit at given values (--fix E=1.69), as `scaling` does."""
    huber_delta: float = field(default=HUBER_DELTA, metadata=flag(metavar="DELTA"))
    """δ of the Huber loss on log residuals (--huber-delta)."""

    def __post_init__(self) -> None:
        check_level(self.level)
        object.__setattr__(self, "n", _numbers(self.n))
        if self.d is not None:
            object.__setattr__(self, "d", _numbers(self.d))
        object.__setattr__(self, "fix", tuple(self.fix))
        if not self.n:
            raise ResultsError("--n: give the planned N (comma-separated for several runs)")
        bad = [v for v in (*self.n, *(self.d or ())) if not v > 0]
        if bad:
            raise ResultsError(f"--n and --d must be positive, got {bad}")
        if self.d is not None and len(self.d) not in (1, len(self.n)):
            raise ResultsError(
                f"--d: {len(self.d)} values for {len(self.n)} values of --n (give one D for "
                "all, or one per N)"
            )
        if self.n_boot < 1:
            raise ResultsError(f"--fit-bootstrap must be >= 1, got {self.n_boot}")
        if self.params not in PARAM_METRICS:
            raise ResultsError(f"--params must be one of {', '.join(PARAM_METRICS)}")
        try:
            fixed = parse_fix(self.fix)
        except ValueError as err:
            raise ResultsError(str(err)) from None
        JointForm(self.tie_exponents, fixed, self.huber_delta)  # refuses a bad form here

    def form(self, joint: bool) -> JointForm:
        """The form fitted: the joint form's, or the line's in N alone (forms.JointForm)."""
        form = JointForm(self.tie_exponents, parse_fix(self.fix), self.huber_delta)
        return form if joint else form.line_form()


def _numbers(values: float | tuple[float, ...]) -> tuple[float, ...]:
    """A scalar or a sequence of numbers as a tuple of floats."""
    if isinstance(values, int | float):
        return (float(values),)
    return tuple(float(v) for v in values)


def planned_points(s: PredictSettings) -> tuple[np.ndarray, np.ndarray | None]:
    """The planned (N, D) as arrays, D None where none was given (one D serves every N)."""
    n = np.array(s.n, dtype=np.float64)
    d = None if s.d is None else np.broadcast_to(np.array(s.d), n.shape).astype(np.float64)
    return n, d


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
            f"--d {','.join(f'{v:g}' for v in s.d)}: the points have no D axis{at}; a "
            "prediction at another D needs points that vary in D (leave --d out to predict at N)"
        )
    return has_d


def _title(n: np.ndarray, d: np.ndarray | None) -> str:
    if n.size > 1:
        return f"Prediction at {n.size} planned runs"
    return f"Prediction at N = {n[0]:.3g}" + (f", D = {d[0]:.3g}" if d is not None else "")


def predict(source: str | Path, settings: PredictSettings) -> Result:
    """The predictions and their held-out check per fit group of `source` (a table or a
    store): one fit and bootstrap per group, every planned run predicted from it."""
    s = settings
    result = Result("predict", "Prediction")
    if is_table(source):
        data = table_values(source, s.columns)
        result.header.append(data.notes[0])
        result.notes += data.notes[1:]
    else:
        data = _store_values(str(source), s, result)
    joint = _joint_or_n(data, s)
    n_at, d_at = planned_points(s)
    result.title = _title(n_at, d_at)
    form = s.form(joint)
    result.settings = {
        "n": n_at.tolist(),
        "d": None if d_at is None else d_at.tolist(),
        "form": form.label(),
        "level": s.level,
        "bootstrap": s.n_boot,
        "seed": s.seed,
        "source": str(source),
    }
    result.header.append(_method(joint, s, data.flops_per_param_token, form))
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
        rows += [{**key, **r} for r in _predicted(cells, form, n_at, d_at, s)]
        held = holdout_cells(
            cells,
            form="joint" if joint else "huber",
            axis="N",
            n_boot=s.n_boot,
            level=s.level,
            seed=s.seed,
            k=data.flops_per_param_token,
            joint_form=form,
        )
        checks.append({**key, "axis": "N, D" if joint else "N", "at": None, **held})
    pct = f"{s.level * 100:g}%"
    result.tables.append(tables.planned_table(rows, data.group_columns, pct))
    result.tables.append(tables.holdout_table(checks, data.group_columns, pct))
    return result


def _method(joint: bool, s: PredictSettings, k: float, form: JointForm) -> str:
    return (
        f"{form.label()} by Huber loss on log M; prediction interval: {s.n_boot} bootstrap "
        f"curves (seed {s.seed}) × a resampled log residual, {s.level * 100:g}%; held-out "
        "check: "
        + ("without the largest compute budget" if joint else "without the largest N")
        + (f"; C = {k:g}·N·D" if joint else "")
    )


def _predicted(
    cells: Cells, form: JointForm, n: np.ndarray, d: np.ndarray | None, s: PredictSettings
) -> list[dict]:
    """The prediction at every planned (N, D) from one fit of a group's cells, or why there is
    none."""
    try:
        boot = bootstrap_joint(cells, n_boot=s.n_boot, seed=s.seed, form=form)
    except NotEnoughData as err:
        blank = dict.fromkeys(("predicted", "pi_low", "pi_high", "beyond"))
        return [
            {"N": float(x), "D": None if d is None else float(d[i]), "points": cells.size}
            | blank
            | {"remark": str(err)}
            for i, x in enumerate(n)
        ]
    dd = np.ones_like(n) if d is None else d
    point, lo, hi = prediction(boot, n, dd, s.level, s.seed)
    out = []
    for i, x in enumerate(n):
        beyond = f"{x / float(cells.n.max()):.3g}× N"
        if d is not None:
            beyond += f", {x * float(dd[i]) / float(np.max(cells.n * cells.d)):.3g}× N·D"
        out.append(
            {
                "N": float(x),
                "D": None if d is None else float(dd[i]),
                "points": cells.size,
                "predicted": float(point[i]),
                "pi_low": None if lo is None else float(lo[i]),
                "pi_high": None if hi is None else float(hi[i]),
                "beyond": beyond,
                "remark": None if lo is not None else "no resample could be refitted: no interval",
            }
        )
    return out
