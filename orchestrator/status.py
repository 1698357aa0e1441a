"""`numsweep status E`: an experiment's trials, their states and best values, and its files.

Read through the store reader the analysis uses (`records.reader`: local paths and URIs), so
the two agree by construction: trial states by `load_trials` (the store's trial-state rule), one
value per (trial, step, metric) by `read_latest`, a trial's objective value by
`analysis.selection` (its final value), what the trials cost by `analysis.trial_costs`.
"""

from __future__ import annotations

import polars as pl

from analysis.selection import FINAL, select_values
from analysis.trial_costs import cost_lines, trial_costs
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
        objectives = sweep.search.objectives if sweep.mode == "search" else []
        for objective in objectives:
            if objective.metric in table.columns:
                ranked = table.drop_nulls(objective.metric).sort(
                    objective.metric, descending=objective.mode == "max"
                )
                if ranked.height:
                    best = ranked.row(0, named=True)
                    lines.append(
                        f"best {objective.mode} {objective.metric}: {best[objective.metric]:.6g} "
                        f"(trial {best['trial_id']}, loss {best['loss']})"
                    )
    if sweep.mode == "search":
        import optuna

        storage = study_storage(sweep, paths)
        names = {s.study_name: s for s in optuna.get_all_study_summaries(storage)}
        for name in dict.fromkeys(study_name(sweep, run) for run in tune_runs(sweep)):
            summary = names.get(name)
            if summary is not None:
                lines.append(f"Optuna study {name}: {summary.n_trials} trial(s)")
        lines.append(f"Optuna storage: {sweep.search.storage or paths.default_study_storage()}")
    parts = (
        {"metrics": {}, "trials": {}}
        if store is None
        else {"metrics": store.metric_files, "trials": store.trial_files}
    )
    for table_name in TABLES:
        n = len(parts[table_name].get(sweep.experiment, ()))
        lines.append(f"{table_name} parts: {n} in {paths.table(table_name)}")
    lines += [
        f"manifest:      {paths.manifest}",
        f"Ray storage:   {paths.ray_storage}",
    ]
    return "\n".join(lines)
