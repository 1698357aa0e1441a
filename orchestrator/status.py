"""`numsweep status E`: an experiment's trials, their states and best values, and its files;
as text (`experiment_status`) or as one JSON-ready record (`status_record`, `--format json`).

Read through the store reader the analysis uses (`records.reader`: local paths and URIs), so
the two agree by construction: trial states by `load_trials` (the store's trial-state rule), one
value per (trial, step, metric) by `read_latest`, a trial's objective value by
`analysis.selection` (its final value), what the trials cost by `analysis.trial_costs`.
"""

from __future__ import annotations

import polars as pl

from analysis.selection import FINAL, select_values
from analysis.trial_costs import cost_lines, cost_totals, trial_costs
from orchestrator.sweep.plan import study_name, study_storage, tune_runs
from orchestrator.sweep.sweep_file import SweepConfig
from records.layout import STARTS, TABLES, ExperimentPaths
from records.reader import Store, load_trials, open_experiment, read_latest, scan_metrics
from trainables.losses import param_columns


def trial_table(store: Store | None, sweep: SweepConfig) -> pl.DataFrame | None:
    """One row per trial: its state (`load_trials`), loss and parameters, last step stored and
    the final value of each objective (as `analysis` counts them). None before any trial."""
    trials = None if store is None else load_trials(store)
    if store is None or trials is None or trials.height == 0:
        return None
    objectives = sweep.search.objectives if sweep.mode == "search" else []
    table = trials.drop("experiment")
    if store.metric_files[sweep.experiment]:
        last_step = (
            scan_metrics(store)
            .group_by("trial_id")
            .agg(pl.col("step").max().alias("last_step"))
            .collect()
        )
        table = table.join(last_step, on="trial_id", how="left")
        latest, _ = read_latest(store, [o.metric for o in objectives])
        final = select_values(latest, FINAL)
        for objective in objectives:
            values = final.filter(pl.col("metric") == objective.metric).select(
                "trial_id", pl.col("value").alias(objective.metric)
            )
            table = table.join(values, on="trial_id", how="left")
    columns = ["trial_id", "status", STARTS, "loss", "seed", "last_step"]
    columns += [c for c in (*param_columns(), "lr") if c in table.columns]
    columns += [o.metric for o in objectives]
    shown = table.select([c for c in columns if c in table.columns])
    # a parameter no trial of this experiment has is left out
    keep = [c for c in shown.columns if c in columns[:6] or shown[c].null_count() < shown.height]
    return shown.select(keep).sort("trial_id")


def _objectives(sweep: SweepConfig) -> list:
    return list(sweep.search.objectives) if sweep.mode == "search" else []


def _best(table: pl.DataFrame, metric: str, mode: str) -> dict | None:
    """The trial with the best final value of `metric` (`mode` max or min), if any has one."""
    if metric not in table.columns:
        return None
    ranked = table.drop_nulls(metric).sort(metric, descending=mode == "max")
    return ranked.row(0, named=True) if ranked.height else None


def _studies(sweep: SweepConfig, paths: ExperimentPaths) -> dict[str, int]:
    """A search's Optuna studies that exist, with their trial counts (empty for a grid)."""
    if sweep.mode != "search":
        return {}
    import optuna

    storage = study_storage(sweep, paths)
    names = {s.study_name: s for s in optuna.get_all_study_summaries(storage)}
    found = dict.fromkeys(study_name(sweep, run) for run in tune_runs(sweep))
    return {name: names[name].n_trials for name in found if name in names}


def _parts(store: Store | None, sweep: SweepConfig) -> dict[str, int]:
    """The Parquet parts of each table of the experiment."""
    files = {} if store is None else {"metrics": store.metric_files, "trials": store.trial_files}
    return {t: len(files.get(t, {}).get(sweep.experiment, ())) for t in TABLES}


def status_record(root: str, sweep: SweepConfig) -> dict:
    """What `numsweep status` shows, as plain data (`--format json`): the trials' rows, counts
    by state, the best trial per objective, the cost totals, the Optuna studies and the files."""
    store = open_experiment(root, sweep.experiment)
    paths = ExperimentPaths(root, sweep.experiment)
    table = trial_table(store, sweep)
    costs = None if store is None or table is None else trial_costs(store)
    best = []
    for objective in _objectives(sweep) if table is not None else []:
        row = _best(table, objective.metric, objective.mode)
        if row is not None:
            best.append(
                {"metric": objective.metric, "mode": objective.mode}
                | {k: row[k] for k in ("trial_id", "loss")}
                | {"value": row[objective.metric]}
            )
    return {
        "experiment": sweep.experiment,
        "mode": sweep.mode,
        "results": root,
        "counts": {}
        if table is None
        else dict(table.group_by("status").len().sort("status").rows()),
        "trials": [] if table is None else table.to_dicts(),
        "best": best,
        "cost": None if costs is None or costs.height == 0 else cost_totals(costs).to_dicts()[0],
        "optuna_studies": _studies(sweep, paths),
        "optuna_storage": (
            sweep.search.storage or paths.default_study_storage()
            if sweep.mode == "search"
            else None
        ),
        "parts": _parts(store, sweep),
        "files": {t: str(paths.table(t)) for t in TABLES}
        | {"manifest": str(paths.manifest), "ray_storage": str(paths.ray_storage)},
    }


def experiment_status(root: str, sweep: SweepConfig) -> str:
    store = open_experiment(root, sweep.experiment)
    paths = ExperimentPaths(root, sweep.experiment)
    lines = [f"experiment {sweep.experiment} ({sweep.mode}) under {root}"]
    table = trial_table(store, sweep)
    if table is None:
        lines.append("no trial has started yet")
    else:
        counts = table.group_by("status").len().sort("status")
        lines.append(
            f"{table.height} trial(s): " + ", ".join(f"{n} {s}" for s, n in counts.iter_rows())
        )
        with pl.Config(
            tbl_rows=200, tbl_cols=24, tbl_width_chars=180, tbl_hide_dataframe_shape=True
        ):
            lines.append(str(table))
        losses = dict(table.select("trial_id", "loss").iter_rows())
        costs = None if store is None else trial_costs(store)
        lines += cost_lines(costs, losses, sorted(set(losses.values())))
        for objective in _objectives(sweep):
            best = _best(table, objective.metric, objective.mode)
            if best is not None:
                lines.append(
                    f"best {objective.mode} {objective.metric}: {best[objective.metric]:.6g} "
                    f"(trial {best['trial_id']}, loss {best['loss']})"
                )
    for name, n_trials in _studies(sweep, paths).items():
        lines.append(f"Optuna study {name}: {n_trials} trial(s)")
    if sweep.mode == "search":
        lines.append(f"Optuna storage: {sweep.search.storage or paths.default_study_storage()}")
    for table_name, n in _parts(store, sweep).items():
        lines.append(f"{table_name} parts: {n} in {paths.table(table_name)}")
    lines += [
        f"manifest:      {paths.manifest}",
        f"Ray storage:   {paths.ray_storage}",
    ]
    return "\n".join(lines)
