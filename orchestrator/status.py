"""`numsweep status E`: an experiment's trials, their states and best values, and its files.

Read through the results module (`analysis.results`: local paths and pyarrow URIs) with the
same rules the analysis applies, so the two agree by construction: trial states by
`trial_states`, one value per (trial, step, metric) by `analysis.store.latest_rows`, a trial's
objective value by `analysis.selection` (its final value).
"""

from __future__ import annotations

import polars as pl

from analysis.results import STARTS, TABLES, ExperimentPaths, ResultsStore, trial_states
from analysis.selection import FINAL, select_values
from analysis.store import latest_rows
from orchestrator.driver import study_storage, tune_runs
from orchestrator.sweep_file import SweepConfig
from trainables.losses import param_columns


def current_trials(store: ResultsStore) -> pl.DataFrame | None:
    """One row per trial of the experiment by the store's trial-state rule (None: none yet)."""
    rows = store.read_table("trials")
    return None if rows is None else trial_states(pl.from_arrow(rows))


def latest_metrics(store: ResultsStore) -> pl.DataFrame | None:
    """The experiment's metric rows, one per (trial, step, metric) as analysis counts them."""
    rows = store.read_table("metrics")
    if rows is None:
        return None
    raw = pl.from_arrow(rows).lazy().with_columns(experiment=pl.lit(store.experiment))
    return latest_rows(raw).collect()


def trial_table(store: ResultsStore, sweep: SweepConfig) -> pl.DataFrame | None:
    """One row per trial: its state (`trial_states`), loss and parameters, last step stored and
    the final value of each objective (as `analysis` counts them). None before any trial."""
    trials = current_trials(store)
    if trials is None:
        return None
    metrics = latest_metrics(store)
    objectives = sweep.search.objectives if sweep.mode == "search" else []
    table = trials
    if metrics is not None:
        last_step = metrics.group_by("trial_id").agg(pl.col("step").max().alias("last_step"))
        table = table.join(last_step, on="trial_id", how="left")
        wanted = pl.col("metric").is_in([o.metric for o in objectives])
        final = select_values(metrics.filter(wanted), FINAL)
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
    store = ResultsStore(root, sweep.experiment)
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
        for run in tune_runs(sweep):
            name = run.name if sweep.search.per_loss else sweep.experiment
            summary = names.get(name)
            if summary is not None:
                lines.append(f"Optuna study {name}: {summary.n_trials} trial(s)")
        lines.append(f"Optuna storage: {sweep.search.storage or paths.default_study_storage()}")
    for table_name in TABLES:
        where = paths.table(table_name)
        lines.append(f"{table_name} parts: {len(store.list_parts(table_name))} in {where}")
    lines += [
        f"manifest:      {paths.manifest}",
        f"Ray storage:   {paths.ray_storage}",
    ]
    return "\n".join(lines)
