"""The hyper-parameter search view, from the results store: the best trials by the objective (by
default the one the sweep optimised, from its manifest, as `numsweep status` ranks them), how
much of the objective's variance each parameter explains on its own (η², with a rank test:
Spearman's ρ for numeric parameters, Kruskal–Wallis for the others, their p by permutation at
small n), and, for several objectives, the Pareto front (trials no other trial beats on every
objective).

A loss's parameter is named by its loss (`del.alpha`, `ntl_was.alpha`: the trials table keeps
both in one `alpha` column) and judged over that loss's trials only: DEL's α is not NTL's."""

from __future__ import annotations

import math
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
from analysis.sweep_manifest import is_sampled, sampled_parameters, search_objectives, sweep_configs
from records.errors import ResultsError
from records.layout import TRIAL_COLUMNS
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
PERMUTATIONS = 9999
"""Orderings a rank test's permutation p is computed from: all of them where there are no more
(n ≤ 7 for Spearman's ρ), else this many drawn at random (seed PERMUTATION_SEED)."""
PERMUTATION_SEED = 0
ASYMPTOTIC_FROM = 500
"""From this many trials on, the rank tests' p come from scipy's large-sample approximations (t
for ρ, χ² for Kruskal–Wallis), which scipy calls reasonable above about 500; below, from
permutations. At n = 3, ρ = −1 has the exact p 1/3 where the t approximation says 0."""


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


@dataclass(frozen=True)
class RankTest:
    """Does the objective move with a parameter at all? Spearman's ρ (numeric parameters) or
    Kruskal–Wallis (the others), with its p and how the p was computed."""

    rho: float | None
    p: float | None
    test: str | None
    """spearman or kruskal; None where no test is defined."""
    method: str | None
    """exact permutation, permutation, or asymptotic."""


NO_TEST = RankTest(None, None, None, None)


def _spearman(x: np.ndarray, y: np.ndarray) -> RankTest:
    """ρ, and its two-sided p from the orderings of x against y (exact where n! ≤ PERMUTATIONS)."""
    rho = float(stats.spearmanr(x, y).statistic)
    n = x.size
    if n >= ASYMPTOTIC_FROM:
        return RankTest(rho, float(stats.spearmanr(x, y).pvalue), "spearman", "asymptotic")
    ry = stats.rankdata(y)
    ry = ry - ry.mean()

    def statistic(rx: np.ndarray, axis: int) -> np.ndarray:
        # Pearson's r of the ranks = Spearman's ρ (average ranks for ties, as scipy's).
        centred = rx - rx.mean(axis=axis, keepdims=True)
        return (centred * ry).sum(axis=axis) / np.sqrt((centred**2).sum(axis=axis) * (ry**2).sum())

    res = stats.permutation_test(
        (stats.rankdata(x),),
        statistic,
        permutation_type="pairings",
        vectorized=True,
        n_resamples=PERMUTATIONS,
        rng=np.random.default_rng(PERMUTATION_SEED),
    )
    exact = math.factorial(n) <= PERMUTATIONS
    return RankTest(rho, float(res.pvalue), "spearman", _method(exact))


def _kruskal(groups: list[np.ndarray]) -> RankTest:
    """Kruskal–Wallis across the groups, its p from reassigning the trials to the groups (their
    sizes kept): every ordering of the trials where n! ≤ PERMUTATIONS, else random ones."""
    n = sum(g.size for g in groups)
    if n >= ASYMPTOTIC_FROM:
        return RankTest(None, float(stats.kruskal(*groups).pvalue), "kruskal", "asymptotic")
    ranks = stats.rankdata(np.concatenate(groups))
    members = np.split(np.arange(n), np.cumsum([g.size for g in groups])[:-1])

    def statistic(r: np.ndarray, axis: int) -> np.ndarray:
        # H is 12/(N(N+1))·Σ R_i²/n_i − 3(N+1) over a tie correction that reassigning trials
        # keeps: Σ R_i²/n_i orders the reassignments as H does.
        r = np.moveaxis(r, axis, -1)
        return sum(r[..., m].sum(axis=-1) ** 2 / m.size for m in members)

    res = stats.permutation_test(
        (ranks,),
        statistic,
        permutation_type="pairings",
        vectorized=True,
        n_resamples=PERMUTATIONS,
        alternative="greater",
        rng=np.random.default_rng(PERMUTATION_SEED),
    )
    return RankTest(None, float(res.pvalue), "kruskal", _method(math.factorial(n) <= PERMUTATIONS))


def _method(exact: bool) -> str:
    return "exact permutation" if exact else "permutation"


def rank_test(y: np.ndarray, values: Sequence[object]) -> RankTest:
    """Spearman's ρ and its p for a numeric parameter, Kruskal–Wallis' p for a categorical one.
    Trials without the parameter (null) are left out; no test below 3 trials, with one level
    or a constant objective."""
    keep = [i for i, v in enumerate(values) if v is not None]
    if len(keep) < 3:
        return NO_TEST
    yk = np.asarray(y, dtype=np.float64)[keep]
    vk = [values[i] for i in keep]
    if np.ptp(yk) == 0 or len(set(vk)) < 2:
        return NO_TEST
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in vk):
        return _spearman(np.asarray(vk, dtype=np.float64), yk)
    groups = [yk[[j for j, v in enumerate(vk) if v == level]] for level in dict.fromkeys(vk)]
    return _kruskal(groups)


@dataclass(frozen=True)
class SearchSettings:
    """Options of the search command (`python -m analysis search --help` names each flag)."""

    objectives: tuple[str, ...] = field(default=(), metadata=flag("--objective"))
    """METRIC[:max|min], one or several (--objective): several give a Pareto front; empty: the
    objectives the sweep optimised (its manifest's search.objectives, as `numsweep status`
    ranks trials), else gen/macc where the store has it, else CE on the first split."""
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
    configs = sweep_configs(store)
    chosen = _choose_objectives(objectives, metric_names(store), result, configs)
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
    result.figure_data["objectives"] = {
        "labels": [o.label for o in objs],
        "source": chosen_by.split(",")[0].split(";")[0],
    }
    complete, cols = _search_columns(trials, complete, objs, sampled_parameters(configs))
    if len(objs) == 1:
        result.tables.append(_best_table(complete, cols, top))
    else:
        _add_pareto(result, complete, cols)
    _add_importance(result, complete, cols)
    result.figure_data["trials"] = _trial_history(complete, cols)
    return result


def _choose_objectives(
    objectives: Sequence[str],
    available: Sequence[str],
    result: Result,
    configs: dict[str, dict] | None = None,
) -> tuple[list[Objective], str] | None:
    """The objectives given (parsed), else the sweep's (its manifest's), else the default one,
    with how they were chosen; None (and a note on `result`) when there is none to use."""
    if objectives:
        objs = [parse_objective(o, available) for o in objectives]
        if len({o.metric for o in objs}) != len(objs):
            raise ResultsError("--objective: each metric at most once")
        return objs, "given"
    swept = search_objectives(configs or {})
    if swept is not None:
        missing = [m for m, _ in swept.objectives if m not in available]
        if not missing:
            objs = [Objective(m, d) for m, d in swept.objectives]  # type: ignore[arg-type]
            return objs, (
                f"the sweep's, from the manifest of {', '.join(swept.experiments)}, as numsweep "
                "status ranks trials; choose with --objective METRIC[:max|min]"
            )
        result.notes.append(
            f"the sweep's objective {', '.join(missing)} has no value in the store yet: "
            "ranked by the default instead"
        )
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
    parameters that vary (a loss's parameter as `loss.name`); which of those the importance
    table judges, and over which loss's trials."""

    objs: list[Objective]
    id_cols: list[str]
    params: list[str]
    loss_of: dict[str, str]
    """A loss parameter's column (`del.alpha`) -> its loss: judged over that loss's trials."""
    judged: list[str]
    """The columns the importance table judges: those that vary (within their loss)."""

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


def loss_parameter_columns(trials: pl.DataFrame) -> list[str]:
    """The trials table's loss-parameter columns (`alpha`, `decay_base`, …): every column the
    layout does not name itself."""
    fixed = {*TRIAL_COLUMNS.names, "experiment"}
    return [c for c in config_columns(trials) if c not in fixed]


def _search_columns(
    trials: pl.DataFrame,
    complete: pl.DataFrame,
    objs: list[Objective],
    sampled: frozenset[tuple[str | None, str]] = frozenset(),
) -> tuple[pl.DataFrame, _Columns]:
    """`complete` with a column per loss parameter by its loss (`del.alpha`: alpha where the
    loss is del, null elsewhere), and what the tables show: the columns that vary (the
    experiment first when there are several, which also joins the trial id), a loss's
    parameter where it varies within that loss or was sampled."""
    shared = [c for c in config_columns(trials) if c not in loss_parameter_columns(trials)]
    params = [c for c in shared if c != "experiment" and complete[c].n_unique() > 1]
    judged = list(params)
    loss_of: dict[str, str] = {}
    losses = complete["loss"].unique(maintain_order=True).to_list()
    for column in loss_parameter_columns(trials):
        for loss in losses:
            values = complete.filter(pl.col("loss") == loss)[column].drop_nulls()
            if values.len() == 0:
                continue
            name = f"{loss}.{column}"
            varies = values.n_unique() > 1
            if not (varies or is_sampled(sampled, loss, column)):
                continue
            complete = complete.with_columns(
                pl.when(pl.col("loss") == loss).then(pl.col(column)).alias(name)
            )
            params.append(name)
            loss_of[name] = loss
            if varies:
                judged.append(name)
    if complete["experiment"].n_unique() > 1:
        params.insert(0, "experiment")
        judged.insert(0, "experiment")
    id_cols = ["experiment", "trial_id"] if complete["experiment"].n_unique() > 1 else ["trial_id"]
    return complete, _Columns(objs, id_cols, params, loss_of, judged)


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
        "trial_id": complete["trial_id"].to_list(),
    }


def _add_importance(result: Result, complete: pl.DataFrame, cols: _Columns) -> None:
    """η² of each varying parameter, per objective: the table, or a note why there is none."""
    if not cols.judged:
        result.notes.append("no parameter varies across these trials: no importance table")
        return
    rows, records, skipped = _importance_rows(complete, cols)
    if skipped:
        result.notes.append(
            f"fewer than {MIN_TRIALS_FOR_IMPORTANCE} trials with objective values: no importance "
            f"for {', '.join(skipped)}"
        )
    if not rows:
        return
    result.tables.append(
        Table(
            name="search_importance",
            title="parameter importance: η² = share of the objective's variance explained "
            "by the parameter alone",
            columns=[
                "objective",
                "parameter",
                "trials",
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
        "a loss's parameter (del.alpha) over that loss's trials only; p: Spearman's rank "
        "correlation for numeric parameters, Kruskal–Wallis across levels for the others "
        f"(trials without the parameter left out), uncorrected, from permutations below "
        f"{ASYMPTOTIC_FROM} trials (all orderings where there are at most {PERMUTATIONS:,}, "
        f"else {PERMUTATIONS:,} random ones, seed {PERMUTATION_SEED}), else scipy's "
        "large-sample approximation; the test column says which"
    )


def _importance_rows(
    complete: pl.DataFrame, cols: _Columns
) -> tuple[list[list[str]], list[dict], list[str]]:
    """The importance table's cells and records: per objective, the parameters by η², highest
    first (undefined η² last); and the parameters left out for too few trials."""
    rows, records, skipped = [], [], []
    for o, c in zip(cols.objs, cols.obj_cols, strict=True):
        scored = []
        for p in cols.judged:
            loss = cols.loss_of.get(p)
            mine = complete if loss is None else complete.filter(pl.col("loss") == loss)
            if mine.height < MIN_TRIALS_FOR_IMPORTANCE:
                if p not in skipped:
                    skipped.append(p)
                continue
            y, raw = mine[c].to_numpy(), mine[p].to_list()
            labels, k = _levels(raw)
            scored.append((p, mine.height, eta_squared(y, labels), k, rank_test(y, raw)))
        scored.sort(key=lambda t: -1.0 if t[2] is None else t[2], reverse=True)
        for p, n, eta, k, test in scored:
            chance = (k - 1) / (n - 1)
            p_cell = DASH if test.p is None else f"{fmt_p(test.p)} ({test.method})"
            rows.append(
                [o.label, p, str(n), fmt(eta), str(k), fmt(chance), fmt(test.rho, 3), p_cell]
            )
            records.append(
                {
                    "objective": o.metric,
                    "parameter": p,
                    "eta_squared": eta,
                    "levels": k,
                    "chance": chance,
                    "spearman_rho": test.rho,
                    "p": test.p,
                    "test": test.test,
                    "p_method": test.method,
                    "trials": n,
                }
            )
    return rows, records, skipped


def _trial_history(complete: pl.DataFrame, cols: _Columns) -> dict:
    """What an optimisation-history, slice or parallel-coordinates plot needs: the trials in the
    order they started, their objective values (n, k), loss and shown parameters."""
    ordered = complete.sort(["start", "trial_id"], nulls_last=True)
    return {
        "objectives": [o.label for o in cols.objs],
        "directions": [o.direction for o in cols.objs],
        "trial_id": ordered["trial_id"].to_list(),
        "loss": ordered["loss"].to_list(),
        "values": ordered.select(cols.obj_cols).to_numpy(),
        "params": {p: [plain_value(v) for v in ordered[p].to_list()] for p in cols.params},
        "loss_of": dict(cols.loss_of),
    }
