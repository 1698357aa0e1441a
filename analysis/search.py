"""The hyper-parameter search view, from the Parquet results alone: the best trials by the
objective, how much of the objective's variance each parameter explains on its own (η², with a
rank test from scipy.stats: Spearman's ρ for numeric parameters, Kruskal–Wallis for the others),
and, for several objectives, the Pareto front (trials no other trial beats on every objective)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import polars as pl
from scipy import stats

from analysis.arms import format_value, plain_value
from analysis.command_start import freeze_lists
from analysis.result import DASH, Result, Table, fmt, fmt_p
from analysis.selection import FINAL, VALUE_FLAG, ValueSpec, select_values
from analysis.settings_flags import STATUS_FLAG, flag
from records.errors import ResultsError
from records.metric_names import Direction, direction, splits
from records.reader import (
    DEFAULT_STATUSES,
    Store,
    config_columns,
    current_trials,
    metric_names,
    read_latest,
    trial_summary,
)

MAX_BINS = 5
"""Numeric parameters with more distinct values than this are cut into this many quantile bins
before their η² is computed."""
MIN_TRIALS_FOR_IMPORTANCE = 4


@dataclass(frozen=True)
class Objective:
    metric: str
    direction: Direction

    @property
    def label(self) -> str:
        return f"{self.metric} ({self.direction})"


def parse_objective(text: str, available: Sequence[str]) -> Objective:
    """`METRIC`, `METRIC:max` or `METRIC:min`; without a suffix the metric's known direction.
    The metric must be one of `available`."""
    metric, _, want = text.rpartition(":") if text.endswith((":max", ":min")) else (text, "", "")
    if metric not in available:
        raise ResultsError(
            f"unknown metric {metric!r} for --objective; available: {', '.join(available)}"
        )
    if want:
        return Objective(metric, want)  # type: ignore[arg-type]
    known = direction(metric)
    if known is None:
        raise ResultsError(
            f"objective {metric!r} has no known direction; write {metric}:max or {metric}:min"
        )
    return Objective(metric, known)


def default_objective(available: Sequence[str]) -> Objective | None:
    """gen/macc when the store has it, else CE on the first evaluation split (test first)."""
    if "gen/macc" in available:
        return Objective("gen/macc", "max")
    for split in splits(available):
        if f"eval/{split}/ce" in available:
            return Objective(f"eval/{split}/ce", "min")
    return None


def pareto_mask(points: np.ndarray, directions: Sequence[Direction]) -> np.ndarray:
    """True for the points no other point dominates. points: (n, k); returns (n,) bool.

    j dominates i when j is at least as good on every objective and better on one.
    """
    costs = points * np.array([-1.0 if d == "max" else 1.0 for d in directions])  # (n, k)
    n = costs.shape[0]
    keep = np.ones(n, dtype=bool)
    for start in range(0, n, 512):  # chunks bound the (chunk, n, k) comparison in memory
        block = costs[start : start + 512]  # (c, k)
        no_worse = np.all(costs[None, :, :] <= block[:, None, :], axis=2)  # (c, n)
        better = np.any(costs[None, :, :] < block[:, None, :], axis=2)  # (c, n)
        keep[start : start + 512] = ~np.any(no_worse & better, axis=1)
    return keep


def _levels(values: list[object]) -> tuple[list[str], int]:
    """Group labels for η²: numeric parameters with many values in quantile bins, nulls apart."""
    present = [v for v in values if v is not None]
    numeric = present and all(isinstance(v, int | float) for v in present)
    if numeric and len(set(present)) > MAX_BINS:
        arr = np.array(present, dtype=np.float64)
        edges = np.quantile(arr, np.linspace(0, 1, MAX_BINS + 1)[1:-1])
        labels = [
            "null" if v is None else f"bin{int(np.searchsorted(edges, v, side='right'))}"
            for v in values
        ]
    else:
        labels = ["null" if v is None else repr(v) for v in values]
    return labels, len(set(labels))


def eta_squared(y: np.ndarray, labels: Sequence[str]) -> float | None:
    """Share of the variance of y between the groups given by labels; None if y is constant."""
    y = np.asarray(y, dtype=np.float64)
    total = float(np.sum((y - y.mean()) ** 2))
    if total == 0.0:
        return None
    lab = np.asarray(labels)
    between = sum(
        int(np.sum(lab == g)) * (float(y[lab == g].mean()) - float(y.mean())) ** 2
        # a fixed order: a float sum over a set's order varied in the last digit between runs
        for g in sorted(set(labels), key=str)
    )
    return between / total


def rank_test(y: np.ndarray, values: Sequence[object]) -> tuple[float | None, float | None]:
    """(Spearman's ρ, its p) for a numeric parameter, (None, Kruskal–Wallis p) for a categorical
    one: does the objective move with the parameter at all? Trials without the parameter (null)
    are left out; (None, None) when the test is undefined (one level, constant objective)."""
    keep = [i for i, v in enumerate(values) if v is not None]
    if len(keep) < 3:
        return None, None
    yk = np.asarray(y, dtype=np.float64)[keep]
    vk = [values[i] for i in keep]
    if np.ptp(yk) == 0 or len(set(vk)) < 2:
        return None, None
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in vk):
        res = stats.spearmanr(np.asarray(vk, dtype=np.float64), yk)
        return float(res.statistic), float(res.pvalue)
    groups = [yk[[j for j, v in enumerate(vk) if v == level]] for level in dict.fromkeys(vk)]
    return None, float(stats.kruskal(*groups).pvalue)


@dataclass(frozen=True)
class SearchSettings:
    """Options of the search command (`python -m analysis search --help` names each flag)."""

    objectives: tuple[str, ...] = field(default=(), metadata=flag("--objective"))
    """METRIC[:max|min], one or several (--objective): several give a Pareto front; empty:
    gen/macc where the store has it, else CE on the first evaluation split."""
    value: ValueSpec = field(default=FINAL, metadata=VALUE_FLAG)
    """Which value of a trial is its objective (--value): final, best, step:N, ..."""
    top: int = 10
    """How many best trials to list (--top)."""
    statuses: tuple[str, ...] = field(default=DEFAULT_STATUSES, metadata=STATUS_FLAG)
    """Trial statuses read (--status)."""

    def __post_init__(self) -> None:
        freeze_lists(self, ("objectives", "statuses"))
        if self.top < 1:
            raise ResultsError(f"--top must be >= 1, got {self.top}")


def search(store: Store, settings: SearchSettings | None = None) -> Result:
    """Best trials (one objective) or Pareto front (several), and parameter importance."""
    s = settings or SearchSettings()
    objectives, value, top = s.objectives, s.value, s.top
    trials, notes = current_trials(store, s.statuses)
    result = Result("search", "Search", notes=[*store.notes, *notes])
    result.header.append(f"experiments: {', '.join(store.experiments)}")
    if trials.height == 0:
        return result
    chosen = _choose_objectives(objectives, metric_names(store), result)
    if chosen is None:
        return result
    objs, chosen_by = chosen
    frame = _with_objective_values(store, trials, objs, value, result)
    complete = frame.filter(pl.all_horizontal(pl.col(c).is_finite() for c in _obj_cols(objs)))
    if complete.height < frame.height:
        result.notes.append(
            f"{frame.height - complete.height} trial(s) lack a finite value for every objective: "
            "left out"
        )
    result.header += [
        trial_summary(trials),
        "objective"
        + ("s" if len(objs) > 1 else "")
        + f": {', '.join(o.label for o in objs)} ({chosen_by}); value per trial: {value.label}",
    ]
    if complete.height == 0:
        result.notes.append("no trial has the objective value(s) yet: no search view")
        return result
    cols = _search_columns(trials, complete, objs)
    if len(objs) == 1:
        result.tables.append(_best_table(complete, cols, top))
    else:
        _add_pareto(result, complete, cols)
    _add_importance(result, complete, cols)
    return result


def _choose_objectives(
    objectives: Sequence[str], available: Sequence[str], result: Result
) -> tuple[list[Objective], str] | None:
    """The objectives given (parsed), else the default one, with how they were chosen; None (and
    a note on `result`) when none is given and the store has none to default to."""
    if objectives:
        objs = [parse_objective(o, available) for o in objectives]
        if len({o.metric for o in objs}) != len(objs):
            raise ResultsError("--objective: each metric at most once")
        return objs, "given"
    found = default_objective(available)
    if found is None:
        result.notes.append(
            "no gen/macc or eval/<split>/ce in the store to default to: "
            "pass --objective METRIC[:max|min]"
        )
        return None
    return [found], "default; choose with --objective METRIC[:max|min], repeatable"


def _obj_cols(objs: Sequence[Objective]) -> list[str]:
    """The frame's column of each objective's value, in order."""
    return [f"_obj{k}" for k in range(len(objs))]


def _with_objective_values(
    store: Store, trials: pl.DataFrame, objs: Sequence[Objective], value: ValueSpec, result: Result
) -> pl.DataFrame:
    """`trials` with each objective's value per trial joined on (null where a trial has none)."""
    latest, counts = read_latest(store, [o.metric for o in objs])
    if counts.note():
        result.notes.append(counts.note())
    picked = select_values(latest, value)
    frame = trials
    for o, c in zip(objs, _obj_cols(objs), strict=True):
        col = picked.filter(pl.col("metric") == o.metric).select(
            "experiment", "trial_id", pl.col("value").alias(c)
        )
        frame = frame.join(col, on=["experiment", "trial_id"], how="left")
    return frame


@dataclass(frozen=True)
class _Columns:
    """What the best and Pareto tables show per trial: its id, status, objective values and the
    parameters that vary."""

    objs: list[Objective]
    id_cols: list[str]
    params: list[str]

    @property
    def obj_cols(self) -> list[str]:
        return _obj_cols(self.objs)

    @property
    def names(self) -> list[str]:
        return [*self.id_cols, "status", *(o.label for o in self.objs), *self.params]

    def cells(self, rec: dict) -> list[str]:
        return (
            [str(rec[c]) for c in self.id_cols]
            + [rec["status"]]
            + [fmt(rec[c]) for c in self.obj_cols]
            + [DASH if rec[p] is None else format_value(rec[p]) for p in self.params]
        )

    def records(self, df: pl.DataFrame) -> list[dict]:
        return [
            {
                **{c: r[c] for c in self.id_cols},
                "status": r["status"],
                **{o.metric: r[c] for o, c in zip(self.objs, self.obj_cols, strict=True)},
                **{p: plain_value(r[p]) for p in self.params},
            }
            for r in df.iter_rows(named=True)
        ]


def _search_columns(
    trials: pl.DataFrame, complete: pl.DataFrame, objs: list[Objective]
) -> _Columns:
    """The parameters that vary across the complete trials (the experiment first when there are
    several, which also joins the trial id)."""
    params = [c for c in config_columns(trials) if c != "experiment" and complete[c].n_unique() > 1]
    if complete["experiment"].n_unique() > 1:
        params.insert(0, "experiment")
    id_cols = ["experiment", "trial_id"] if complete["experiment"].n_unique() > 1 else ["trial_id"]
    return _Columns(objs, id_cols, params)


def _best_table(complete: pl.DataFrame, cols: _Columns, top: int) -> Table:
    """One objective: the `top` trials by it."""
    obj = cols.objs[0]
    ranked = complete.sort(cols.obj_cols[0], descending=obj.direction == "max").head(top)
    return Table(
        name="search_best",
        title=f"best {ranked.height} of {complete.height} trials by {obj.label}",
        columns=["rank", *cols.names],
        rows=[[str(i + 1), *cols.cells(r)] for i, r in enumerate(ranked.iter_rows(named=True))],
        data=pl.DataFrame(cols.records(ranked), infer_schema_length=None),
    )


def _add_pareto(result: Result, complete: pl.DataFrame, cols: _Columns) -> None:
    """Several objectives: the table of the trials no other beats on all, and the figure data."""
    points = complete.select(cols.obj_cols).to_numpy()  # (n, k)
    mask = pareto_mask(points, [o.direction for o in cols.objs])
    front = complete.filter(pl.Series(mask)).sort(
        cols.obj_cols[0], descending=cols.objs[0].direction == "max"
    )
    result.tables.append(
        Table(
            name="search_pareto",
            title=f"Pareto front: {front.height} of {complete.height} trials not dominated",
            columns=cols.names,
            rows=[cols.cells(r) for r in front.iter_rows(named=True)],
            data=pl.DataFrame(cols.records(front), infer_schema_length=None),
        )
    )
    result.figure_data["pareto"] = {
        "objectives": [o.label for o in cols.objs],
        "points": points,
        "front": mask,
    }


def _add_importance(result: Result, complete: pl.DataFrame, cols: _Columns) -> None:
    """η² of each varying parameter, per objective: the table, or a note why there is none."""
    if not cols.params:
        result.notes.append("no parameter varies across these trials: no importance table")
        return
    if complete.height < MIN_TRIALS_FOR_IMPORTANCE:
        result.notes.append(
            f"fewer than {MIN_TRIALS_FOR_IMPORTANCE} trials with objective values: "
            "no importance table"
        )
        return
    rows, records = _importance_rows(complete, cols)
    result.tables.append(
        Table(
            name="search_importance",
            title="parameter importance: η² = share of the objective's variance explained "
            "by the parameter alone",
            columns=[
                "objective",
                "parameter",
                "η²",
                "levels",
                "chance (k−1)/(n−1)",
                "Spearman ρ",
                "p (ρ or Kruskal–Wallis)",
            ],
            rows=rows,
            data=pl.DataFrame(records, infer_schema_length=None),
        )
    )
    result.notes.append(
        f"η² is one parameter at a time (correlated parameters are not separated); numeric "
        f"parameters with more than {MAX_BINS} values are cut into {MAX_BINS} quantile bins; "
        "with k levels over n trials a parameter without effect scores about (k−1)/(n−1); "
        "p: Spearman's rank correlation for numeric parameters, Kruskal–Wallis across levels "
        "for the others (trials without the parameter left out), uncorrected"
    )


def _importance_rows(complete: pl.DataFrame, cols: _Columns) -> tuple[list[list[str]], list[dict]]:
    """The importance table's cells and records: per objective, the parameters by η², highest
    first (undefined η² last)."""
    rows, records = [], []
    n = complete.height
    for o, c in zip(cols.objs, cols.obj_cols, strict=True):
        y = complete[c].to_numpy()
        scored = []
        for p in cols.params:
            raw = complete[p].to_list()
            labels, k = _levels(raw)
            scored.append((p, eta_squared(y, labels), k, *rank_test(y, raw)))
        scored.sort(key=lambda t: -1.0 if t[1] is None else t[1], reverse=True)
        for p, eta, k, rho, p_value in scored:
            chance = (k - 1) / (n - 1)
            test = DASH if p_value is None else fmt_p(p_value)
            rows.append([o.label, p, fmt(eta), str(k), fmt(chance), fmt(rho, 3), test])
            records.append(
                {
                    "objective": o.metric,
                    "parameter": p,
                    "eta_squared": eta,
                    "levels": k,
                    "chance": chance,
                    "spearman_rho": rho,
                    "p": p_value,
                    "test": None
                    if p_value is None
                    else "spearman"
                    if rho is not None
                    else "kruskal",
                    "trials": n,
                }
            )
    return rows, records
